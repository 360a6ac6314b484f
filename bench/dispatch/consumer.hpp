// bench/dispatch/consumer.hpp — the in-bench AQL packet consumer every host-publish benchmark
// shares (aqueduct's queues and the peers alike), so ratios between them are meaningful.
//
// It is a minimal packet processor: acquire-load the header of the slot at the read index; if it
// is not INVALID, read the body, set the header back to INVALID, and advance the read index with
// a release store (once per run of up to 64 consecutive valid packets). It ignores the doorbell
// (it polls headers, as a CP may) and runs no kernel. When idle it spins briefly, then yields:
// on a 2-core machine a producer pair plus this thread oversubscribe the CPU.
// Thread safety: one consumer thread per ring; start/stop from one controlling thread.
#pragma once

#include <aqueduct/config.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <thread>

#include <sched.h>

namespace bench {

inline constexpr std::uint32_t invalid_type = 1;  // HSA_PACKET_TYPE_INVALID (hsa.h)

inline void cpu_relax() noexcept { AQUEDUCT_CPU_RELAX(); }

// The ONE way every producer variant waits for the consumer when its ring is full, so that the
// full-ring path costs the same for aqueduct and the peers and ratios compare the publish
// protocols only: 64 pauses, then yield the CPU (on an oversubscribed machine a producer that
// only spins would keep the consumer off the CPU for a whole time slice).
template <class Pred>
void wait_until(Pred has_room) noexcept {
  for (unsigned i = 0; !has_room(); ++i) {
    if (i < 64) cpu_relax();
    else sched_yield();
  }
}

// 64-byte-aligned zeroed storage for a ring of `slots` packets, independent of any library.
struct slot_storage {
  explicit slot_storage(std::size_t slots)
      : bytes(static_cast<unsigned char*>(::operator new(slots * 64, std::align_val_t{64}))), count(slots) {
    std::memset(bytes, 0, slots * 64);
    for (std::size_t i = 0; i < slots; ++i) header(i) = invalid_type;  // every slot starts INVALID
  }
  ~slot_storage() { ::operator delete(bytes, std::align_val_t{64}); }
  slot_storage(const slot_storage&) = delete;
  slot_storage& operator=(const slot_storage&) = delete;
  std::uint32_t& header(std::size_t i) noexcept { return *reinterpret_cast<std::uint32_t*>(bytes + i * 64); }
  unsigned char* bytes;
  std::size_t count;
};

// Retire every packet in [*read_index, end) at once, on the calling thread (the benchmarks
// without a consumer thread do this with the timer paused when the ring is about to fill).
inline void retire_inline(unsigned char* ring, std::uint32_t slots, std::uint64_t* read_index, std::uint64_t end) noexcept {
  std::atomic_ref<std::uint64_t> read(*read_index);
  for (std::uint64_t i = read.load(std::memory_order_relaxed); i < end; ++i) {
    std::atomic_ref<std::uint32_t> header(*reinterpret_cast<std::uint32_t*>(ring + (i & (slots - 1)) * 64));
    header.store(invalid_type | (header.load(std::memory_order_acquire) & 0xffff0000u), std::memory_order_relaxed);
  }
  read.store(end, std::memory_order_release);
}

// Retires packets from a ring whose read index is `*read_index` (64-bit, monotonic).
class consumer {
 public:
  consumer(unsigned char* ring, std::uint32_t slots, std::uint64_t* read_index) noexcept
      : ring_(ring), mask_(slots - 1), read_(read_index) {}
  consumer(const consumer&) = delete;
  consumer& operator=(const consumer&) = delete;
  ~consumer() { stop(); }

  void start() {
    stop_.store(false, std::memory_order_relaxed);
    thread_ = std::thread([this] { run(); });
  }
  // Stop once every packet published so far (up to `end`) has been retired.
  void stop(std::uint64_t end = 0) noexcept {
    if (!thread_.joinable()) return;
    drain_to_.store(end, std::memory_order_relaxed);
    stop_.store(true, std::memory_order_release);
    thread_.join();
  }
  [[nodiscard]] std::uint64_t retired() const noexcept { return std::atomic_ref<std::uint64_t>(*read_).load(std::memory_order_acquire); }
  [[nodiscard]] std::uint64_t checksum() const noexcept { return sink_; }

 private:
  void run() noexcept {
    std::atomic_ref<std::uint64_t> read(*read_);
    std::uint64_t rd = read.load(std::memory_order_relaxed);
    std::uint64_t sink = 0;
    unsigned idle = 0;
    for (;;) {
      std::uint32_t n = 0;
      for (; n < 64; ++n) {
        unsigned char* slot = ring_ + ((rd + n) & mask_) * 64;
        std::atomic_ref<std::uint32_t> header(*reinterpret_cast<std::uint32_t*>(slot));
        const std::uint32_t h = header.load(std::memory_order_acquire);
        if ((h & 0xff) == invalid_type) break;
        std::uint64_t kernel_object;  // offset 32 of a kernel dispatch packet (hsa.h)
        std::memcpy(&kernel_object, slot + 32, 8);
        sink += kernel_object ^ h;
        header.store(invalid_type | (h & 0xffff0000u), std::memory_order_relaxed);
      }
      if (n != 0) {
        rd += n;
        read.store(rd, std::memory_order_release);  // the slots may now be rewritten
        idle = 0;
        continue;
      }
      if (stop_.load(std::memory_order_acquire) && rd >= drain_to_.load(std::memory_order_relaxed)) break;
      if (++idle < 256) cpu_relax();
      else sched_yield();
    }
    sink_ = sink;
  }

  unsigned char* ring_;
  std::uint64_t mask_;
  std::uint64_t* read_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> drain_to_{0};
  std::uint64_t sink_ = 0;
};

}  // namespace bench

// aqueduct/emu/host_kernel.hpp — emulated kernels: host functions named by emulated code.
//
// Layer: emu. A dispatch on the emulated device follows the real path: the AQL packet's
// kernel_object is the GPU address of a real 64-byte kernel descriptor; its
// kernel_code_entry_byte_offset leads (256-byte aligned) to the "code", which on the emulator
// is a 64-byte `emulated_code_blob` (abi/emulated_code.hpp) naming a host function in the
// device's `host_kernel_registry`. The
// processor builds each wave's initial registers from the descriptor (emu/wave_state.hpp) and
// calls the function once per workgroup; the function finds its kernarg pointer, workgroup
// ids and work-item ids in those registers, at the SGPR indices its "compiled code" assumes.
// Memory is reached only through `workgroup_context::ptr/load/store`, which check the VM
// mappings and raise `memory_fault` (the processor turns it into a queue error). `load` and
// `store` are relaxed atomic accesses, as a GPU's loads and stores of coherent memory are: a
// kernel may read a word the host (or another queue) writes while it runs — a flag it spins on —
// without a data race, provided the writer stores atomically too (sync::atomic_store). Each
// access is made of the widest naturally aligned words (8, 4, 2 or 1 bytes) its address and size
// allow, so an aligned scalar is one access and never tears; a wider value (a struct) may tear
// between words, as a GPU's multi-dword load may. `ptr` gives a plain pointer for bulk work on
// memory nothing else writes meanwhile.
// Thread safety: host_kernel_registry is internally synchronized (add/find from any thread);
// a workgroup_context is used by one worker thread at a time.
#pragma once

#include <aqueduct/abi/emulated_code.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/core/assert.hpp>
#include <aqueduct/emu/engine_ports.hpp>
#include <aqueduct/emu/wave_state.hpp>

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace aqueduct::emu {

// Raised by checked accesses of a host kernel; ends the dispatch with a queue error.
struct memory_fault {
  std::uint64_t address;
  std::uint64_t length;
  bool write;
};

// The wire format lives in abi/emulated_code.hpp (the loader writes it, the engines read it).
using abi::emulated_code_blob;
using abi::emulated_code_magic;
using abi::emulated_code_version;
using abi::max_host_kernel_name;
using abi::emulated_code_offset;
using abi::emulated_kernel_object_size;
using abi::write_emulated_kernel_object;
using abi::emulated_code_name;

// Builds a workgroup's initial waves when its host kernel first reads them (the workgroup
// executor passes one): a kernel that never looks at its registers costs no wave build. `build`
// returns the waves, or throws what building them threw.
struct wave_source {
  std::span<const wave_state> (*build)(void* self) = nullptr;
  void* self = nullptr;
};

// Everything a host kernel sees of its workgroup: the waves' initial registers, its LDS, and
// checked access to GPU memory.
class workgroup_context {
 public:
  workgroup_context(const vm_access& vm, std::span<const wave_state> waves, std::span<std::byte> lds,
                    const workgroup_geometry& g) noexcept
      : vm_(&vm), waves_(waves), lds_(lds), geometry_(g) {}
  // The waves built on first use, by `source`.
  workgroup_context(const vm_access& vm, wave_source source, std::span<std::byte> lds, const workgroup_geometry& g) noexcept
      : vm_(&vm), source_(source), lds_(lds), geometry_(g) {}

  [[nodiscard]] std::span<const wave_state> waves() const {
    if (source_.build != nullptr) {
      waves_ = source_.build(source_.self);
      source_.build = nullptr;
    }
    return waves_;
  }
  [[nodiscard]] const wave_state& wave(std::size_t i) const { return waves()[i]; }
  [[nodiscard]] std::span<std::byte> lds() const noexcept { return lds_; }
  // Geometry as the CP computed it. A faithful kernel reads ids from SGPRs/VGPRs instead; this
  // is for checks and diagnostics.
  [[nodiscard]] const workgroup_geometry& geometry() const noexcept { return geometry_; }

  // Host pointer to `count` T at `va`, after checking the mapping (memory_fault if not mapped).
  template <class T>
  [[nodiscard]] T* ptr(std::uint64_t va, std::size_t count = 1, bool write = false) const {
    const std::uint64_t len = std::uint64_t(sizeof(T)) * count;
    if (va == 0 || !vm_->data_access_ok(va, len)) throw memory_fault{va, len, write};
    return static_cast<T*>(vm_->host_address(va));
  }
  // Checked relaxed atomic load / store of a T (see the header comment).
  template <class T>
  [[nodiscard]] T load(std::uint64_t va) const {
    static_assert(std::is_trivially_copyable_v<T>);
    std::byte* p = ptr<std::byte>(va, sizeof(T));
    if constexpr (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8) {
      using W = word_of<sizeof(T)>;  // an aligned scalar: one access, in a register
      if (reinterpret_cast<std::uintptr_t>(p) % sizeof(T) == 0)
        return std::bit_cast<T>(std::atomic_ref<W>(*reinterpret_cast<W*>(p)).load(std::memory_order_relaxed));
    }
    T v;
    relaxed_copy<sizeof(T), false>(p, reinterpret_cast<std::byte*>(&v));
    return v;
  }
  template <class T>
  void store(std::uint64_t va, const T& v) const {
    static_assert(std::is_trivially_copyable_v<T>);
    std::byte* p = ptr<std::byte>(va, sizeof(T), true);
    if constexpr (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8) {
      using W = word_of<sizeof(T)>;
      if (reinterpret_cast<std::uintptr_t>(p) % sizeof(T) == 0)
        return std::atomic_ref<W>(*reinterpret_cast<W*>(p)).store(std::bit_cast<W>(v), std::memory_order_relaxed);
    }
    relaxed_copy<sizeof(T), true>(p, reinterpret_cast<std::byte*>(const_cast<T*>(&v)));
  }

 private:
  template <std::size_t N>
  using word_of = std::conditional_t<N == 1, std::uint8_t,
                                     std::conditional_t<N == 2, std::uint16_t, std::conditional_t<N == 4, std::uint32_t, std::uint64_t>>>;
  // N bytes between device memory `dev` and the local object `obj` (store: obj -> dev), in words
  // of W bytes, each a relaxed atomic access of device memory.
  template <class W, std::size_t N, bool Store>
  static void relaxed_words(std::byte* dev, std::byte* obj) noexcept {
    for (std::size_t i = 0; i < N; i += sizeof(W)) {
      std::atomic_ref<W> word(*reinterpret_cast<W*>(dev + i));
      if constexpr (Store) {
        W w;
        std::memcpy(&w, obj + i, sizeof(W));
        word.store(w, std::memory_order_relaxed);
      } else {
        const W w = word.load(std::memory_order_relaxed);
        std::memcpy(obj + i, &w, sizeof(W));
      }
    }
  }
  // The widest words `dev`'s alignment and N allow (N is known at compile time: one branch on
  // the address for a scalar; relaxed atomics are plain moves on x86-64 and AArch64).
  template <std::size_t N, bool Store>
  static void relaxed_copy(std::byte* dev, std::byte* obj) noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(dev);
    if constexpr (N % 8 == 0)
      if (a % 8 == 0) return relaxed_words<std::uint64_t, N, Store>(dev, obj);
    if constexpr (N % 4 == 0)
      if (a % 4 == 0) return relaxed_words<std::uint32_t, N, Store>(dev, obj);
    if constexpr (N % 2 == 0)
      if (a % 2 == 0) return relaxed_words<std::uint16_t, N, Store>(dev, obj);
    relaxed_words<std::uint8_t, N, Store>(dev, obj);
  }

  const vm_access* vm_;
  mutable std::span<const wave_state> waves_;
  mutable wave_source source_;  // build pending (waves() asked nothing yet)
  std::span<std::byte> lds_;
  workgroup_geometry geometry_;
};

using host_kernel_fn = std::function<void(workgroup_context&)>;

// Name → host function. Each emu::device owns one (emu::device::registry()); engines made by
// hand (tests) take their own. There is no process-wide instance.
class host_kernel_registry {
 public:
  // Precondition: name is 1..max_host_kernel_name bytes. Replaces an existing entry.
  void add(std::string_view name, host_kernel_fn fn) {
    AQUEDUCT_ASSERT(!name.empty() && name.size() <= max_host_kernel_name, "host kernel name length");
    std::unique_lock lock(mu_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    map_[std::string(name)] = std::make_shared<const host_kernel_fn>(std::move(fn));
  }
  // Registers `fn` under a name no other entry has: `name`, or `name` (shortened to fit) with a
  // "#<n>" suffix when `name` is taken, so two code objects with a kernel of the same name each
  // keep their own function. Returns the name used.
  [[nodiscard]] std::string add_unique(std::string_view name, host_kernel_fn fn) {
    AQUEDUCT_ASSERT(!name.empty() && name.size() <= max_host_kernel_name, "host kernel name length");
    std::unique_lock lock(mu_);
    std::string key(name);
    while (map_.contains(key)) {
      const std::string suffix = "#" + std::to_string(++serial_);
      key = std::string(name.substr(0, max_host_kernel_name - suffix.size())) + suffix;
    }
    generation_.fetch_add(1, std::memory_order_acq_rel);
    map_[key] = std::make_shared<const host_kernel_fn>(std::move(fn));
    return key;
  }
  void remove(std::string_view name) {
    std::unique_lock lock(mu_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    map_.erase(std::string(name));
  }
  [[nodiscard]] std::size_t size() const {
    std::shared_lock lock(mu_);
    return map_.size();
  }
  // The function, or null. The shared_ptr keeps it alive while a dispatch runs. No allocation
  // (the map's comparator is transparent): a packet processor calls this per dispatch.
  [[nodiscard]] std::shared_ptr<const host_kernel_fn> find(std::string_view name) const {
    std::shared_lock lock(mu_);
    auto it = map_.find(name);
    return it == map_.end() ? nullptr : it->second;
  }
  // Moves on before every add or remove (read without the lock: host_kernel_cache).
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<const host_kernel_fn>, std::less<>> map_;
  std::uint64_t serial_ = 0;
  std::atomic<std::uint64_t> generation_{1};
};

// A packet processor's memo of its last host-kernel lookup: the registry is asked again only when
// the name differs or the registry changed since (add, add_unique and remove move its generation
// on), so a kernel removed or replaced is seen at the next dispatch, as without the memo.
// Thread safety: one thread (the processor's).
class host_kernel_cache {
 public:
  [[nodiscard]] const std::shared_ptr<const host_kernel_fn>& find(const host_kernel_registry& r, std::string_view name) {
    const std::uint64_t g = r.generation();  // before the lookup: a change during it is seen next time
    if (g != generation_ || &r != registry_ || name != name_) {
      fn_ = r.find(name);
      name_.assign(name);
      generation_ = g;
      registry_ = &r;
    }
    return fn_;
  }

 private:
  const host_kernel_registry* registry_ = nullptr;
  std::uint64_t generation_ = 0;
  std::string name_;
  std::shared_ptr<const host_kernel_fn> fn_;
};

}  // namespace aqueduct::emu

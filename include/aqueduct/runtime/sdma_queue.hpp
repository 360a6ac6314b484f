// aqueduct/runtime/sdma_queue.hpp — `sdma_queue`: a KFD SDMA queue of one agent, typed by its
// SDMA engine version, with completion waits.
//
// Layer: runtime. Made by `gpu.make_queue(aq::sdma, options)`, which creates, exactly as on
// /dev/kfd: the ring and the pointer page (kfd::queue_resources, queue_kind::sdma or
// sdma_by_engine; read pointer at byte 0, write pointer at byte 64 of the page, both 64-bit byte
// counts, spec/kfd.md §2.7) and one KFD signal event. The engine version is fixed once, from the
// agent's target (arch::visit_family → ring::sdma::encoder_for<Target>). Every submission ends
// with a FENCE of a 64-bit sequence number into the pointer page (two 32-bit FENCEs, low dword
// first, as Linux fences 64-bit sequences) and asks for no interrupt; waits spin briefly on it,
// and a waiter that must then block first appends FENCE(mailbox, event id) + TRAP(event id) —
// the KFD timeline tinygrad uses (spec/packets.md §3.4) — so that the engine raises one
// interrupt per blocking wait once the work before it is done (issue 11), then blocks in
// AMDKFD_IOC_WAIT_EVENTS (or, with no room in the ring for those packets, polls with back-off).
// On the emulated device the device runs the SDMA engine itself (started by CREATE_QUEUE,
// stopped inside DESTROY_QUEUE); the doorbell store reaches it through the queue's port
// (core/queue_port.hpp). A fault of the engine
// (an address not mapped for this GPU) makes every wait fail with errc::device_fault and the
// faulting address; a malformed packet with errc::queue_error.
// CREATE_QUEUE failing with ENOMEM (no free SDMA queue, spec/kfd.md §2.6), ENOSPC or EPERM is
// reported as errc::out_of_resources, so callers can fall back (runtime/copy.hpp).
// Thread safety: submissions are serialised by an internal mutex; waits need none (any thread);
// destroy with no concurrent use. Destroy before the system.
#pragma once

#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/abi/sdma.hpp>
#include <aqueduct/arch/target.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/queue_port.hpp>
#include <aqueduct/kfd/events.hpp>
#include <aqueduct/kfd/queue_resources.hpp>
#include <aqueduct/queue/sdma_queue.hpp>
#include <aqueduct/runtime/agent.hpp>
#include <aqueduct/runtime/commands.hpp>
#include <aqueduct/runtime/detail/queue_waits.hpp>
#include <aqueduct/runtime/detail/state.hpp>
#include <aqueduct/runtime/queue_kind.hpp>
#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/signal.hpp>
#include <aqueduct/sync/wait.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

namespace aqueduct::runtime {

// An indirect buffer for sdma_queue::try_submit_indirect: its GPU address and size in dwords.
struct indirect_buffer_ref {
  gpu_va base{};
  std::uint32_t dwords = 0;
};

struct sdma_queue_options {
  std::uint64_t ring_bytes = 64 * 1024;  // power of two >= 1024
  // An SDMA queue on this engine (KFD 1.17+ SDMA_BY_ENG_ID); empty: any PCIe SDMA engine.
  std::optional<std::uint32_t> engine_id{};
  std::uint32_t priority = 7;
  sync::wait_policy wait{};
  sync::nanoseconds drain_timeout = std::chrono::seconds(5);
};

// The doorbell of an SDMA queue: 64-bit, the write pointer in bytes (spec/kfd.md §3.3); an
// in-process device is also told through the queue's port (it cannot observe the store).
struct sdma_doorbell {
  std::uint64_t* word = nullptr;
  aqueduct::queue_port* port = nullptr;  // null on /dev/kfd
  void ring(std::uint64_t wptr_bytes) noexcept {
    sync::atomic_store(*word, wptr_bytes, std::memory_order_release);
    if (port) port->ring_doorbell(wptr_bytes);
  }
};
static_assert(aqueduct::ring::doorbell<sdma_doorbell>);

namespace detail {
template <abi::sdma::engine E>
using sdma_q = aqueduct::ring::sdma_queue<E, sdma_doorbell>;

// The SDMA ring of the agent's engine version, chosen once when the queue is made (DESIGN.md
// §3): its functions are a table filled at creation, so no submission branches on the engine.
class sdma_ring {
 public:
  virtual ~sdma_ring() = default;
  virtual result<void> try_copy(gpu_va dst, gpu_va src, std::uint64_t bytes, sync::nanoseconds timeout, bool publish) = 0;
  virtual result<void> try_fill(gpu_va dst, std::uint32_t value, std::uint64_t bytes, sync::nanoseconds timeout, bool publish) = 0;
  virtual result<void> try_wait(gpu_va addr, std::uint32_t reference, std::uint32_t mask, abi::sdma::poll_regmem::function f,
                                sync::nanoseconds timeout, bool publish) = 0;
  virtual result<void> try_timestamp(gpu_va addr, sync::nanoseconds timeout, bool publish) = 0;
  virtual result<void> try_fence64(gpu_va addr, std::uint64_t value, sync::nanoseconds timeout, bool publish) = 0;
  virtual result<void> try_signal_event(gpu_va mailbox, std::uint32_t event_id, sync::nanoseconds timeout, bool publish) = 0;
  virtual result<void> try_indirect(gpu_va ib, std::uint32_t dwords, sync::nanoseconds timeout, bool publish) = 0;
  virtual void describe(std::string& out) const = 0;
  [[nodiscard]] virtual sdma_doorbell& doorbell() noexcept = 0;
  // Prebuilt commands (graph replay): the same packets, into a buffer; submitted as they are.
  virtual void encode_copy(command_buffer& out, gpu_va dst, gpu_va src, std::uint64_t bytes) const = 0;
  virtual void encode_fill(command_buffer& out, gpu_va dst, std::uint32_t value, std::uint64_t bytes) const = 0;
  virtual void encode_fence(command_buffer& out, gpu_va addr, std::uint32_t value) const = 0;
  virtual void encode_trap(command_buffer& out, std::uint32_t int_context) const = 0;
  virtual void encode_wait(command_buffer& out, gpu_va addr, std::uint32_t reference, std::uint32_t mask,
                           abi::sdma::poll_regmem::function f) const = 0;
  virtual void encode_timestamp(command_buffer& out, gpu_va addr) const = 0;
  virtual void encode_cond_exe(command_buffer& out, gpu_va addr, std::uint32_t reference, std::uint32_t exec_count) const = 0;
  // Each packet of `cmds` in its own reservation (kept whole at the ring's end), unpublished.
  virtual result<void> try_packets(const command_buffer& cmds, sync::nanoseconds timeout) = 0;
  [[nodiscard]] virtual std::uint64_t claimed_offset() const noexcept = 0;
  [[nodiscard]] virtual std::uint64_t read_offset() const noexcept = 0;
};
template <abi::sdma::engine E>
class sdma_ring_of final : public sdma_ring {
 public:
  // Not re-initialised: queue_resources zeroed the ring and pointers before CREATE_QUEUE, and the
  // device's engine may already be reading them.
  sdma_ring_of(const aqueduct::ring::sdma_queue_memory& mem, const sdma_doorbell& db) noexcept : q_(mem, db, false) {}
  result<void> try_copy(gpu_va dst, gpu_va src, std::uint64_t bytes, sync::nanoseconds timeout, bool publish) override {
    return q_.try_copy(dst, src, bytes, timeout, publish);
  }
  result<void> try_fill(gpu_va dst, std::uint32_t value, std::uint64_t bytes, sync::nanoseconds timeout, bool publish) override {
    return q_.try_fill(dst, value, bytes, timeout, publish);
  }
  result<void> try_wait(gpu_va addr, std::uint32_t reference, std::uint32_t mask, abi::sdma::poll_regmem::function f,
                        sync::nanoseconds timeout, bool publish) override {
    return q_.try_wait(addr, reference, mask, f, timeout, publish);
  }
  result<void> try_timestamp(gpu_va addr, sync::nanoseconds timeout, bool publish) override {
    return q_.try_timestamp(addr, timeout, publish);
  }
  result<void> try_fence64(gpu_va addr, std::uint64_t value, sync::nanoseconds timeout, bool publish) override {
    return q_.try_fence64(addr, value, timeout, publish);
  }
  result<void> try_signal_event(gpu_va mailbox, std::uint32_t event_id, sync::nanoseconds timeout, bool publish) override {
    return q_.try_signal_event(mailbox, event_id, timeout, publish);
  }
  void describe(std::string& out) const override { q_.describe(out); }
  [[nodiscard]] sdma_doorbell& doorbell() noexcept override { return q_.get_doorbell(); }

  using enc = typename sdma_q<E>::encoder;
  void encode_copy(command_buffer& out, gpu_va dst, gpu_va src, std::uint64_t bytes) const override {
    for (const aqueduct::ring::sdma::copy_chunk c : aqueduct::ring::sdma::copy_plan(dst, src, bytes, enc::max_copy_bytes))
      enc::copy_linear(out.append(enc::copy_linear_dwords), c.dst, c.src, c.bytes);
  }
  void encode_fill(command_buffer& out, gpu_va dst, std::uint32_t value, std::uint64_t bytes) const override {
    for (const aqueduct::ring::sdma::copy_chunk c : aqueduct::ring::sdma::copy_chunks(dst, dst, bytes, enc::max_fill_bytes))
      enc::constant_fill(out.append(enc::constant_fill_dwords), c.dst, value, c.bytes);
  }
  void encode_fence(command_buffer& out, gpu_va addr, std::uint32_t value) const override {
    enc::fence(out.append(enc::fence_dwords), addr, value);
  }
  void encode_trap(command_buffer& out, std::uint32_t int_context) const override {
    enc::trap(out.append(enc::trap_dwords), int_context);
  }
  void encode_wait(command_buffer& out, gpu_va addr, std::uint32_t reference, std::uint32_t mask,
                   abi::sdma::poll_regmem::function f) const override {
    enc::poll_regmem(out.append(enc::poll_regmem_dwords), addr, reference, mask, f);
  }
  void encode_timestamp(command_buffer& out, gpu_va addr) const override {
    enc::timestamp(out.append(enc::timestamp_dwords), addr);
  }
  void encode_cond_exe(command_buffer& out, gpu_va addr, std::uint32_t reference, std::uint32_t exec_count) const override {
    enc::cond_exe(out.append(enc::cond_exe_dwords), addr, reference, exec_count);
  }
  result<void> try_indirect(gpu_va ib, std::uint32_t dwords, sync::nanoseconds timeout, bool publish) override {
    return q_.try_indirect(ib, dwords, timeout, publish);
  }
  result<void> try_packets(const command_buffer& cmds, sync::nanoseconds timeout) override {
    const auto all = cmds.dwords();
    for (std::size_t i = 0; i < cmds.packets(); ++i) {
      const std::size_t b = cmds.packet_begin(i), e = cmds.packet_end(i);
      AQUEDUCT_TRY(auto r, q_.try_reserve(static_cast<std::uint32_t>(e - b), timeout));
      const auto out = r.dwords();
      for (std::size_t k = 0; k < e - b; ++k) out[k] = all[b + k];
      r.commit(false);
    }
    return ok();
  }
  [[nodiscard]] std::uint64_t claimed_offset() const noexcept override { return q_.claimed_offset(); }
  [[nodiscard]] std::uint64_t read_offset() const noexcept override { return q_.read_offset(); }

 private:
  sdma_q<E> q_;
};

struct sdma_queue_state {
  keep_alive keep;  // the system (declared first: released after everything below)
  agent_state* agent = nullptr;
  sdma_queue_options opt{};
  abi::sdma::engine engine = abi::sdma::engine::v6_0;
  kfd::queue_resources<file_type> res;
  kfd::event<file_type> event;
  std::uint64_t* progress = nullptr;  // in the pointer page
  gpu_va progress_va{};
  std::atomic<std::uint64_t> submitted{0};  // last sequence number submitted (written under mu, read by waiters)
  std::unique_ptr<sdma_ring> q;
  aqueduct::queue_port* port = nullptr;  // the device's port for this queue (null on /dev/kfd)
  std::mutex mu;
  held_memory held;  // owners' memory kept until done or DESTROY_QUEUE (hold_until_done)

  // Why the device stopped the queue, or none (detail::queue_stop).
  [[nodiscard]] std::optional<failure> stopped() const { return queue_stop(port, *agent); }
};

// A waiter about to block: FENCE(mailbox) + TRAP after everything submitted so far. false: the
// ring has no room now, a submission holds the ring, or the engine stopped. (sdma_queue's waits
// and graph/'s reactor, which holds only the state a ticket names.)
[[nodiscard]] inline bool arm_wake(sdma_queue_state& s) {
  std::unique_lock lock(s.mu, std::try_to_lock);  // a submitter waiting for room holds it: poll then
  if (!lock.owns_lock() || (s.port && s.port->faulted())) return false;
  return s.q->try_signal_event(s.event.mailbox_va(), s.event.id(), sync::nanoseconds::zero(), true).has_value();
}

// CREATE_QUEUE found no free SDMA queue (kfd::ioctl_errc: ENOMEM, ENOSPC, EPERM).
[[nodiscard]] inline bool no_queue_left(const failure& f) noexcept { return f == errc::out_of_resources; }
}  // namespace detail

[[nodiscard]] constexpr const char* to_string(abi::sdma::engine e) noexcept { return abi::sdma::engine_name(e); }

class sdma_queue : public detail::queue_waits<sdma_queue, sdma_t> {
 public:
  static constexpr std::size_t rptr_offset = 0, wptr_offset = 64, progress_offset = 512;

  sdma_queue() = default;
  explicit sdma_queue(std::unique_ptr<detail::sdma_queue_state> s) noexcept : s_(std::move(s)) {}
  sdma_queue(sdma_queue&&) noexcept = default;
  sdma_queue& operator=(sdma_queue&& o) noexcept {
    if (this != &o) {
      destroy();
      s_ = std::move(o.s_);
    }
    return *this;
  }
  ~sdma_queue() { destroy(); }

  // ---- work (each returns the sequence number to wait for) -----------------------------------
  // dst and src must be mapped to this queue's GPU (for a peer, map its buffer here too).
  result<sdma_ticket> try_copy(gpu_va dst, gpu_va src, std::uint64_t bytes, sync::nanoseconds timeout = sync::infinite) {
    return submit(timeout, [&](auto& q) { return q.try_copy(dst, src, bytes, timeout, false); });
  }
  // A dword fill (dst, bytes multiples of 4).
  result<sdma_ticket> try_fill(gpu_va dst, std::uint32_t value, std::uint64_t bytes, sync::nanoseconds timeout = sync::infinite) {
    if (!dst.aligned(4) || bytes % 4) return failure(errc::invalid_argument, "SDMA fill: address and length must be dword multiples");
    return submit(timeout, [&](auto& q) { return q.try_fill(dst, value, bytes, timeout, false); });
  }
  // Later work waits until the 32-bit word at `addr` is >= `value` (POLL_REGMEM).
  result<sdma_ticket> try_wait_memory(gpu_va addr, std::uint32_t value, sync::nanoseconds timeout = sync::infinite) {
    return submit(timeout, [&](auto& q) {
      return q.try_wait(addr, value, 0xFFFFFFFFu, abi::sdma::poll_regmem::function::greater_equal, timeout, false);
    });
  }
  // The GPU timestamp (8-byte aligned address).
  result<sdma_ticket> try_timestamp(gpu_va addr, sync::nanoseconds timeout = sync::infinite) {
    return submit(timeout, [&](auto& q) { return q.try_timestamp(addr, timeout, false); });
  }
  // After the work before it: set an amd_signal's 64-bit value (two FENCEs, low dword first), then,
  // if the signal names a KFD event, FENCE its mailbox and TRAP so host waiters wake (§3.4).
  // A host that sees the value may have seen only the first FENCE: the engine still writes the high
  // dword and the mailbox. Wait for the returned ticket, not only the value, before freeing the
  // signal's memory (graph replays do: exec_graph frees its signals after its queues' tickets).
  result<sdma_ticket> try_signal(sync::signal_ref sig, std::int64_t value, sync::nanoseconds timeout = sync::infinite) {
    const abi::amd_signal& s = *sig.get();
    const gpu_va value_va(sig.handle() + offsetof(abi::amd_signal, value));
    const std::uint64_t mailbox = s.event_mailbox_ptr;
    const std::uint32_t event_id = s.event_id;
    return submit(timeout, [&](auto& q) -> result<void> {
      AQUEDUCT_TRY_VOID(q.try_fence64(value_va, static_cast<std::uint64_t>(value), timeout, false));
      if (mailbox) return q.try_signal_event(gpu_va(mailbox), event_id, timeout, false);
      return ok();
    });
  }
  // Later work waits until the signal's value compares `func` against `value` (POLL_REGMEM on the
  // value's low dword: meaningful for values below 2^32, e.g. completion counts reaching 0).
  result<sdma_ticket> try_wait_signal(sync::signal_ref sig, std::uint32_t value,
                                        abi::sdma::poll_regmem::function func = abi::sdma::poll_regmem::function::equal,
                                        sync::nanoseconds timeout = sync::infinite) {
    const gpu_va value_va(sig.handle() + offsetof(abi::amd_signal, value));
    return submit(timeout, [&](auto& q) { return q.try_wait(value_va, value, 0xFFFFFFFFu, func, timeout, false); });
  }

  // ---- prebuilt commands (graph replay) -----------------------------------------------------------
  // The packets the operations above write, appended to `out` (copy and fill split within the
  // engine's packet limits); submitted later, as they are, by try_submit.
  void encode_copy(command_buffer& out, gpu_va dst, gpu_va src, std::uint64_t bytes) const { s_->q->encode_copy(out, dst, src, bytes); }
  void encode_fill(command_buffer& out, gpu_va dst, std::uint32_t value, std::uint64_t bytes) const {
    s_->q->encode_fill(out, dst, value, bytes);
  }
  // FENCE: the 32-bit `value` to `addr` (dword aligned) once the work before it is done.
  void encode_fence(command_buffer& out, gpu_va addr, std::uint32_t value) const { s_->q->encode_fence(out, addr, value); }
  // COND_EXE: the next `exec_count` dwords (< 2^14) run only if the 32-bit word at `addr` equals
  // `reference` (abi/sdma.hpp cond_exe). The caller keeps those dwords in the same packet of
  // `out` (command_buffer::append), so that no ring-end padding falls among them.
  static constexpr std::uint32_t max_cond_exe_dwords = abi::sdma::cond_exe::exec_count::max;
  void encode_cond_exe(command_buffer& out, gpu_va addr, std::uint32_t reference, std::uint32_t exec_count) const {
    s_->q->encode_cond_exe(out, addr, reference, exec_count);
  }
  // A 64-bit value as two FENCEs, low dword first.
  void encode_fence64(command_buffer& out, gpu_va addr, std::uint64_t value) const {
    s_->q->encode_fence(out, addr, static_cast<std::uint32_t>(value));
    s_->q->encode_fence(out, addr + byte_count(4), static_cast<std::uint32_t>(value >> 32));
  }
  // FENCE of the event id into its mailbox slot, then TRAP: the KFD event fires.
  void encode_signal_event(command_buffer& out, gpu_va mailbox, std::uint32_t event_id) const {
    s_->q->encode_fence(out, mailbox, event_id);
    s_->q->encode_trap(out, event_id);
  }
  void encode_wait(command_buffer& out, gpu_va addr, std::uint32_t reference, std::uint32_t mask = 0xFFFFFFFFu,
                   abi::sdma::poll_regmem::function f = abi::sdma::poll_regmem::function::greater_equal) const {
    s_->q->encode_wait(out, addr, reference, mask, f);
  }
  void encode_timestamp(command_buffer& out, gpu_va addr) const { s_->q->encode_timestamp(out, addr); }
  // Submits `cmds` as they are, then the queue's own completion (sequence number, event), with
  // one doorbell. `start_byte` (optional) receives the ring offset (bytes, monotonic) before the
  // first packet (read_offset() minus it locates a fault in `cmds`, NOP padding aside).
  result<sdma_ticket> try_submit(const command_buffer& cmds, sync::nanoseconds timeout = sync::infinite,
                                 std::uint64_t* start_byte = nullptr) {
    if (start_byte && s_) *start_byte = s_->q->claimed_offset();
    return submit(timeout, [&](auto& q) { return q.try_packets(cmds, timeout); });
  }
  // Indirect buffers (graph replay's indirect mode): one INDIRECT packet per buffer — NOPs before
  // it so that it ends on an 8-dword ring boundary —, then the queue's completion, one doorbell.
  // Each buffer: 32-byte aligned, 1 to 2^20 - 1 dwords (IB_SIZE is 20 bits), a multiple of 8 dwords
  // (the IB is fetched in 8-dword units: Linux and tinygrad pad every SDMA IB with NOPs to a
  // multiple of 8, spec/packets.md §3.4), holding whole packets and no INDIRECT (the engine runs
  // one level). `start_byte` as for try_submit (a fault inside a buffer stops the engine at the
  // INDIRECT that ran it).
  static constexpr std::uint32_t max_indirect_dwords = abi::sdma::indirect::ib_size::max / 8 * 8;
  result<sdma_ticket> try_submit_indirect(std::span<const indirect_buffer_ref> ibs, sync::nanoseconds timeout = sync::infinite,
                                          std::uint64_t* start_byte = nullptr) {
    for (const indirect_buffer_ref& b : ibs)
      if (!b.base.aligned(32) || b.dwords == 0 || b.dwords % 8 || b.dwords > max_indirect_dwords)
        return failure(errc::invalid_argument, "SDMA indirect buffer at GPU address " + std::to_string(b.base.value) + " of " +
                                                   std::to_string(b.dwords) + " dwords: the base must be 32-byte aligned and the size a multiple of 8 dwords, 8 to " +
                                                   std::to_string(max_indirect_dwords));
    if (start_byte && s_) *start_byte = s_->q->claimed_offset();
    return submit(timeout, [&](auto& q) -> result<void> {
      for (const indirect_buffer_ref& b : ibs) AQUEDUCT_TRY_VOID(q.try_indirect(b.base, b.dwords, timeout, false));
      return ok();
    });
  }
  // Bytes the engine has consumed (monotonic).
  [[nodiscard]] std::uint64_t read_offset() const noexcept { return s_->q->read_offset(); }
  [[nodiscard]] std::uint32_t event_id() const noexcept { return s_->event.id(); }
  [[nodiscard]] detail::agent_state& agent_state() const noexcept { return *s_->agent; }

  // ---- waits (detail/queue_waits.hpp) ------------------------------------------------------------
  // try_wait(ticket) / wait until its work completed (errc::device_fault / queue_error when the
  // engine stopped, timeout; a ticket of another SDMA queue is errc::invalid_argument, naming
  // both queues), try_finish / finish, completed(ticket), completed() / submitted() (sequence
  // numbers).

  // ---- state --------------------------------------------------------------------------------------
  [[nodiscard]] abi::sdma::engine engine() const noexcept { return s_->engine; }
  [[nodiscard]] std::uint64_t ring_bytes() const noexcept { return s_->opt.ring_bytes; }
  [[nodiscard]] std::uint32_t queue_id() const noexcept { return s_->res.queue_id(); }
  [[nodiscard]] std::uint32_t gpu_id() const noexcept { return s_->res.gpu_id(); }
  [[nodiscard]] bool emulated() const noexcept { return s_->port != nullptr; }
  [[nodiscard]] explicit operator bool() const noexcept { return s_ != nullptr; }
  void describe(std::string& out) const {
    describe_queue(out);
    if (auto f = fault()) out += "; engine: " + std::string(f->detail());
  }

  // Drain (bounded), stop an emulated engine, DESTROY_QUEUE, free everything.
  void destroy() noexcept {
    if (!s_) return;
    if (!s_->stopped()) (void)try_finish(s_->opt.drain_timeout);
    s_->port = nullptr;  // the engine stops inside DESTROY_QUEUE
    s_->q.reset();
    s_->res.reset();  // DESTROY_QUEUE
    s_->held.release_all();
    s_->event.reset();
    s_.reset();
  }

 private:
  friend class detail::queue_waits<sdma_queue, sdma_t>;
  void describe_queue(std::string& out) const {
    out += "SDMA queue " + std::to_string(queue_id()) + " on gpu_id " + std::to_string(gpu_id()) + ": ";
    if (s_->q) s_->q->describe(out);
    out += "; completed " + std::to_string(completed()) + " of " + std::to_string(submitted());
  }

  static failure empty_queue() {
    return failure(errc::invalid_argument, "this SDMA queue is empty (default-constructed or moved-from): make one with make_queue(aq::sdma)");
  }
  template <class F>
  result<sdma_ticket> submit(sync::nanoseconds timeout, F&& body) {
    if (!s_) return empty_queue();
    std::lock_guard lock(s_->mu);
    if (auto f = s_->stopped()) return *f;  // no system call: a submission's check
    const std::uint64_t seq = s_->submitted.load(std::memory_order_relaxed) + 1;
    detail::sdma_ring& q = *s_->q;
    AQUEDUCT_TRY_VOID(body(q));
    AQUEDUCT_TRY_VOID(q.try_fence64(s_->progress_va, seq, timeout, true));
    s_->submitted.store(seq, std::memory_order_release);
    return sdma_ticket(detail::ticket_key{}, s_.get(), queue_id(), seq);
  }
  std::unique_ptr<detail::sdma_queue_state> s_;
};

// Creates an SDMA queue on `gpu` (see the header comment).
// (agent::make_queue(aq::sdma, o) calls this.)
[[nodiscard]] inline result<sdma_queue> try_create_queue(const agent& gpu, sdma_t, const sdma_queue_options& o) {
  // CREATE_QUEUE's ring_size is a __u32 (uapi kfd_ioctl_create_queue_args), so 2^31 is the largest
  // power of two it can carry; checked before anything is allocated.
  if (o.ring_bytes < 1024 || o.ring_bytes > (std::uint64_t{1} << 31) || (o.ring_bytes & (o.ring_bytes - 1)) != 0)
    return failure(errc::invalid_argument, "sdma_queue_options::ring_bytes is " + std::to_string(o.ring_bytes) +
                                               "; it must be a power of two in [1024, 2^31] (CREATE_QUEUE's ring_size is 32 bits)");
  detail::agent_state& a = gpu.state();
  auto st = std::make_unique<detail::sdma_queue_state>();
  st->keep = detail::keep_system(a);
  st->agent = &a;
  st->opt = o;
  // The one run-time branch on the architecture for this queue's lifetime (DESIGN.md §3).
  AQUEDUCT_TRY(st->engine, arch::visit_family(gpu.gfx_target_version(),
                                              static_cast<std::uint32_t>(a.node->properties.simd_arrays_per_engine),
                                              [](auto target) {
                                                return aqueduct::ring::sdma::encoder_for<decltype(target)>::engine;
                                              }));
  AQUEDUCT_TRY(auto* doorbells, detail::try_doorbells(a));
  kfd::queue_options ko;
  ko.kind = o.engine_id ? kfd::queue_kind::sdma_by_engine : kfd::queue_kind::sdma;
  ko.sdma_engine_id = o.engine_id.value_or(0);
  ko.ring_size = byte_count(o.ring_bytes);
  ko.priority = o.priority;
  ko.rptr_offset = sdma_queue::rptr_offset;
  ko.wptr_offset = sdma_queue::wptr_offset;
  auto res = kfd::queue_resources<detail::file_type>::try_create(a.sys->ref(), *a.node, *doorbells, ko);
  if (!res) {
    if (detail::no_queue_left(res.get_failure()))
      return failure(errc::out_of_resources,
                     "no SDMA queue left on gpu_id " + std::to_string(a.node->gpu_id) + ": " + std::string(res.detail()),
                     res.get_failure().os_errno());
    return std::move(res).get_failure();
  }
  st->res = std::move(*res);
  AQUEDUCT_TRY(st->event, a.sys->try_make_event(*a.node));  // also maps the event page to this GPU
  auto* page = static_cast<std::byte*>(st->res.pointers().host);
  st->progress = reinterpret_cast<std::uint64_t*>(page + sdma_queue::progress_offset);
  st->progress_va = st->res.pointers().va + byte_count(sdma_queue::progress_offset);
  sync::atomic_store(*st->progress, 0, std::memory_order_release);
  const aqueduct::ring::sdma_queue_memory mem{st->res.ring().as<std::uint32_t>(), st->res.ring_size(),
                                               reinterpret_cast<std::uint64_t*>(page + sdma_queue::rptr_offset),
                                               reinterpret_cast<std::uint64_t*>(page + sdma_queue::wptr_offset),
                                               sync::stop_check(*st)};
  const sdma_doorbell db{static_cast<std::uint64_t*>(st->res.doorbell()), nullptr};
  switch (st->engine) {
    case abi::sdma::engine::v4_0: st->q = std::make_unique<detail::sdma_ring_of<abi::sdma::engine::v4_0>>(mem, db); break;
    case abi::sdma::engine::v5_0: st->q = std::make_unique<detail::sdma_ring_of<abi::sdma::engine::v5_0>>(mem, db); break;
    case abi::sdma::engine::v5_2: st->q = std::make_unique<detail::sdma_ring_of<abi::sdma::engine::v5_2>>(mem, db); break;
    case abi::sdma::engine::v6_0: st->q = std::make_unique<detail::sdma_ring_of<abi::sdma::engine::v6_0>>(mem, db); break;
    case abi::sdma::engine::v7_0: st->q = std::make_unique<detail::sdma_ring_of<abi::sdma::engine::v7_0>>(mem, db); break;
  }
  if (!st->q) return failure(errc::not_supported, "unknown SDMA engine version");
  st->port = kfd::queue_port_of(a.sys->driver.file(), st->res.queue_id());
  if (st->port && st->port->faulted())
    if (auto f = st->port->fault()) return *f;
  st->q->doorbell().port = st->port;
  return sdma_queue(std::move(st));
}
}  // namespace aqueduct::runtime

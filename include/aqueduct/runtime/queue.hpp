// aqueduct/runtime/queue.hpp — `queue`: an AQL user-mode queue of one agent, created through the
// kfd/ path on either device, with kernargs, waits and barriers.
//
// Layer: runtime. Made by agent::try_make_queue, which visits the agent's family once
// (arch::visit_family) and then creates, exactly as on /dev/kfd: the ring, the pointer page that
// holds the abi::amd_queue (CREATE_QUEUE's read/write pointers are its read_dispatch_id /
// write_dispatch_id), EOP and CWSR areas (kfd::queue_resources), per ring slot a kernarg area
// and a completion signal, and one KFD signal event.
// Completion is the completion signal, never the read index (hardware may advance
// read_dispatch_id as soon as it launched a packet; packets without the barrier bit complete in
// any order): packet t carries its slot's signal, which says whether packet t completed
// (runtime/detail/aql_slots.hpp). Those signals ask for no interrupt: waits spin for
// wait_policy::spin_for on the ticket's signal; a waiter that must then block first publishes
// one barrier-AND packet (barrier bit set) whose completion signal, "wake", has the event's
// mailbox — so the device raises one interrupt per blocking wait, after everything before it
// has completed, and none for a wait that ended spinning (issue 11). It then blocks in
// AMDKFD_IOC_WAIT_EVENTS. When the ring is too full for that packet, it polls with back-off
// (sleeps of up to 1 ms) instead. A wait on a packet that does not carry its slot's signal (a
// raw packet written through aql()) publishes one barrier-bit "marker" packet behind it and
// waits for that.
// Dispatch path (ring::aql_queue, multi-producer): claim a slot (CAS bounded by the completion
// frontier: slot i — ring slot, kernarg area, signal — is reused for packet i + size only after
// packet i COMPLETED; a full ring waits up to the caller's timeout, then errc::queue_full with
// the queue decoded) → kernargs into the slot's kernarg area → the slot's signal set pending
// (one plain store) → packet body → header release-store → doorbell. No allocation, no system
// call, no lock, no virtual call on the real device; on an in-process device the doorbell store
// is also handed to the device's queue port (core/queue_port.hpp), the one thing it cannot
// observe.
// The runtime knows no engine: a queue whose device reports it stopped (queue_port::fault) makes
// waits and a dispatch into its full ring return that failure instead of blocking.
// Scratch: the first dispatch of a kernel with more private memory than the queue's scratch
// covers allocates it (runtime/detail/queue_scratch.hpp; the one allocation a dispatch can make).
// Destruction drains (bounded by queue_options::drain_timeout), then DESTROY_QUEUE, then frees.
// Thread safety: dispatch/barrier/wait from any number of threads; destroy with no concurrent use.
#pragma once

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/abi/aql.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/queue_port.hpp>
#include <aqueduct/kfd/events.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/kfd/queue_resources.hpp>
#include <aqueduct/queue/aql_dispatch_template.hpp>
#include <aqueduct/queue/aql_packets.hpp>
#include <aqueduct/queue/aql_queue.hpp>
#include <aqueduct/runtime/detail/aql_slots.hpp>
#include <aqueduct/runtime/detail/queue_scratch.hpp>
#include <aqueduct/runtime/detail/queue_waits.hpp>
#include <aqueduct/runtime/detail/state.hpp>
#include <aqueduct/runtime/kernel.hpp>
#include <aqueduct/runtime/kernel_args.hpp>
#include <aqueduct/runtime/memory.hpp>
#include <aqueduct/runtime/queue_kind.hpp>
#include <aqueduct/runtime/signal.hpp>
#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/wait.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

namespace aqueduct::runtime {

struct queue_options {
  std::uint32_t slots = 1024;          // ring size in packets: a power of two, >= 16
  std::uint32_t kernarg_bytes = 256;   // kernarg space per slot (multiple of 64)
  std::uint32_t priority = 7;          // 0..15
  sync::wait_policy wait{};            // how waits on this queue wait
  sync::nanoseconds drain_timeout = std::chrono::seconds(5);  // destructor's bounded drain
};

struct dispatch_options {
  sync::nanoseconds timeout = sync::infinite;  // how long to wait for a free slot
  bool barrier = false;                        // wait for every earlier packet to complete
  aqueduct::ring::fences scopes = aqueduct::ring::fences::system();
  std::uint32_t dynamic_lds_bytes = 0;
  // A signal of the caller's, decremented once the dispatch has completed (none: only the
  // queue's own per-slot signal). A packet carries one completion signal, and the dispatch keeps
  // its slot's (so its ticket and kernargs stay tracked): this one is decremented by a second
  // packet, a barrier-AND with the barrier bit behind it — which also holds later packets of
  // this queue until every earlier one has completed.
  sync::signal_ref completion_signal{};
};

// The doorbell of a runtime queue: the 64-bit word kfd/ located in the doorbell page; an
// in-process device is also told through the queue's port (it cannot observe the store).
struct queue_doorbell {
  std::uint64_t* word = nullptr;
  aqueduct::queue_port* port = nullptr;  // null on /dev/kfd
  AQUEDUCT_ALWAYS_INLINE void ring(std::uint64_t last_index) noexcept {
    sync::atomic_store(*word, last_index, std::memory_order_release);
    if (port) port->ring_doorbell(last_index);
  }
};
static_assert(aqueduct::ring::doorbell<queue_doorbell>);

namespace detail {

// A number no other queue of this process has had: what a prepared launch checks it is used on
// (a queue's address may be reused by a later queue, with other kernarg slots and scratch).
[[nodiscard]] inline std::uint64_t next_queue_serial() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

struct queue_state {
  keep_alive keep;  // the system (declared first: released after everything below)
  std::uint64_t serial = next_queue_serial();
  agent_state* agent = nullptr;
  queue_options opt{};
  arch::family fam = arch::family::gfx9;
  std::string target_name;
  kfd::queue_resources<file_type> res;
  kfd::buffer<file_type> kernargs;
  kfd::buffer<file_type> signal_memory;  // one abi::amd_signal per ring slot
  kfd::event<file_type> event;
  abi::amd_queue* desc = nullptr;
  std::uint64_t desc_va = 0;        // its GPU address (hidden_queue_ptr)
  abi::amd_signal* wake = nullptr;  // with the event's mailbox: only on the packets arm_wake() posts
  aql_slot_signals slots;           // which packets completed (detail/aql_slots.hpp)
  std::optional<aqueduct::ring::aql_queue_mp<queue_doorbell>> aql;
  aqueduct::queue_port* port = nullptr;  // the device's port for this queue (null on /dev/kfd)
  queue_scratch scratch;                 // private segment memory, grown on demand
  held_memory held;                      // owners' memory kept until done or DESTROY_QUEUE (hold_until_done)

  // ring::aql_queue_memory::refresh: the claims' bound (slots.free) brought up to date.
  static void refresh_slots(void* self) noexcept {
    auto& st = *static_cast<queue_state*>(self);
    st.slots.refresh(sync::atomic_load(st.desc->read_dispatch_id, std::memory_order_acquire));
  }
  // Why the device stopped the queue, or none (detail::queue_stop).
  [[nodiscard]] std::optional<failure> stopped() const { return queue_stop(port, *agent); }
};

// A waiter about to block: one barrier-AND (barrier bit: it completes after every earlier
// packet) with the wake signal, so its completion raises the event. Its slot is marked
// complete at once: once launched it has nothing left to do but signal. false: no free slot.
// (queue's own waits, and graph/'s reactor, which holds only the state a ticket names.)
[[nodiscard]] inline bool arm_wake(queue_state& s) {
  auto r = s.aql->try_reserve(1);
  if (!r) return false;
  s.slots.mark_complete(r->index(0));
  aqueduct::ring::barrier_and p;
  p.barrier = true;
  p.completion_signal = reinterpret_cast<std::uintptr_t>(s.wake);
  r->write(0, aqueduct::ring::make_packet(p));
  r->publish();
  return true;
}

}  // namespace detail

// A dispatch of one kernel in one workgroup shape on one queue, prepared once
// (queue::try_prepare): what is fixed by the kernel, the block and the queue was checked then —
// the block's sizes, the kernarg size against the queue's kernarg slots, the scratch the kernel
// needs (grown then) — and the packet's fixed words are built (queue/aql_dispatch_template.hpp). A dispatch
// of it (queue::try_dispatch(launch, grid, args...)) checks only what can change from call to
// call — the queue it is given to, the grid, whether the kernel's executable was destroyed — then
// writes the kernargs, the packet and the doorbell (issue 11: the AQL counterpart of the PM4
// dispatch template). Default options (no barrier bit, system-scope fences, no dynamic LDS, no
// caller's completion signal); use try_dispatch_with for others. A value: copy it freely; it
// holds no reference to the queue (a launch used on another queue, or after its queue was
// destroyed, is refused with errc::invalid_argument).
template <class... P>
class prepared_launch {
 public:
  prepared_launch() = default;
  [[nodiscard]] explicit operator bool() const noexcept { return serial_ != 0; }
  [[nodiscard]] const std::string& kernel_name() const noexcept { return name_; }
  [[nodiscard]] block shape() const noexcept { return b_; }

 private:
  friend class queue;
  std::uint64_t serial_ = 0;  // the queue's (detail::queue_state::serial); 0: empty
  aqueduct::ring::aql_dispatch_template words_{};
  hidden_arg_offsets hidden_{};
  std::uint32_t kernarg_size_ = 0;
  block b_{};
  std::shared_ptr<const std::atomic<bool>> loaded_{};  // the kernel's executable (freed check)
  std::string name_;
};

class queue : public detail::queue_waits<queue, aql_t> {
 public:
  using aql_type = aqueduct::ring::aql_queue_mp<queue_doorbell>;
  // Where the wake signal lives in the pointer page (after the 256-byte amd_queue).
  static constexpr std::size_t wake_signal_offset = 576;
  static constexpr std::int64_t wake_start = std::int64_t{1} << 62;

  queue() = default;
  explicit queue(std::unique_ptr<detail::queue_state> s) noexcept : s_(std::move(s)) {}
  queue(queue&&) noexcept = default;
  queue& operator=(queue&& o) noexcept {
    if (this != &o) {
      destroy();
      s_ = std::move(o.s_);
    }
    return *this;
  }
  ~queue() { destroy(); }

  // ---- dispatch ---------------------------------------------------------------------------------
  // Kernel `k` over `g` work-items in workgroups of `b`, with `args` as its parameters P...
  // (runtime/kernel_args.hpp: the types were checked against the kernel's metadata when it was
  // looked up; each argument goes to its compile-time offset). Returns the packet's ticket.
  // (Inlined into the caller, so default options fold to constants: issue 11.)
  template <class... P>
  AQUEDUCT_ALWAYS_INLINE result<aql_ticket> try_dispatch(const kernel<P...>& k, grid g, block b,
                                                         const typename detail::kernel_param<P>::arg_type&... args) {
    return try_dispatch_with(dispatch_options{}, k, g, b, args...);
  }
  template <class... P>
  AQUEDUCT_ALWAYS_INLINE aql_ticket dispatch(const kernel<P...>& k, grid g, block b,
                                             const typename detail::kernel_param<P>::arg_type&... args) {
    return try_dispatch_with(dispatch_options{}, k, g, b, args...).value();
  }
  template <class... P>
  AQUEDUCT_ALWAYS_INLINE result<aql_ticket> try_dispatch_with(const dispatch_options& o, const kernel<P...>& k, grid g, block b,
                                                              const typename detail::kernel_param<P>::arg_type&... args) {
    if (AQUEDUCT_UNLIKELY(!s_)) return empty_queue();
    const untyped_kernel& info = k.info();
    if (AQUEDUCT_UNLIKELY(info.kernarg_size > s_->opt.kernarg_bytes)) return kernarg_too_large(info, info.kernarg_size);
    return submit(o, info, g, b, [&](std::byte* slot) {
      detail::put_typed_kernargs<P...>(slot, std::index_sequence_for<P...>{}, args...);
    });
  }
  // A launch of `k` in workgroups of `b` on this queue, prepared once (see prepared_launch):
  // errc::invalid_argument for an empty kernel, a zero block dimension, a freed kernel, kernargs
  // larger than this queue's kernarg slots; the scratch the kernel needs is allocated now.
  template <class... P>
  [[nodiscard]] result<prepared_launch<P...>> try_prepare(const kernel<P...>& k, block b) {
    if (AQUEDUCT_UNLIKELY(!s_)) return empty_queue();
    const untyped_kernel& info = k.info();
    if (!k) return failure(errc::invalid_argument, "try_prepare: the kernel is empty (default-constructed): get one with executable::get_kernel");
    if (info.kernarg_size > s_->opt.kernarg_bytes) return kernarg_too_large(info, info.kernarg_size);
    AQUEDUCT_TRY_VOID(check_input(dispatch_options{}, info, grid{}, b));
    if (info.private_segment_size > s_->scratch.lane_bytes.load(std::memory_order_acquire))
      AQUEDUCT_TRY_VOID(detail::try_grow_scratch(s_->scratch, *s_->agent, info.private_segment_size, s_->desc));
    prepared_launch<P...> l;
    const dispatch_options o{};
    l.words_ = aqueduct::ring::aql_dispatch_template::of(info.object.value, info.group_segment_size, info.private_segment_size, b.x, b.y, b.z,
                                      o.barrier, o.scopes);
    l.hidden_ = info.hidden;
    l.kernarg_size_ = info.kernarg_size;
    l.b_ = b;
    l.loaded_ = info.loaded;
    l.name_ = info.name;
    l.serial_ = s_->serial;
    return l;
  }
  template <class... P>
  [[nodiscard]] prepared_launch<P...> prepare(const kernel<P...>& k, block b) {
    return try_prepare(k, b).value();
  }
  // A prepared launch over `g` work-items with `args`: kernargs, packet, doorbell. Checked per
  // call: the launch was prepared on this queue, every grid dimension is >= 1, the kernel's
  // executable is alive. A full ring waits (no timeout), as dispatch(k, g, b, args...).
  template <class... P>
  AQUEDUCT_ALWAYS_INLINE result<aql_ticket> try_dispatch(const prepared_launch<P...>& l, grid g,
                                                         const typename detail::kernel_param<P>::arg_type&... args) {
    if (AQUEDUCT_UNLIKELY(!s_ || l.serial_ != s_->serial || ((g.x == 0) | (g.y == 0) | (g.z == 0)) ||
                          (l.loaded_ && !l.loaded_->load(std::memory_order_acquire))))
      return launch_error(l.serial_, l.name_, l.loaded_ != nullptr, g, l.b_);
    return submit_launch(l.words_, l.hidden_, l.kernarg_size_, g, l.b_, 0, sync::infinite, [&](std::byte* slot) {
      detail::put_typed_kernargs<P...>(slot, std::index_sequence_for<P...>{}, args...);
    });
  }
  template <class... P>
  AQUEDUCT_ALWAYS_INLINE aql_ticket dispatch(const prepared_launch<P...>& l, grid g,
                                             const typename detail::kernel_param<P>::arg_type&... args) {
    return try_dispatch(l, g, args...).value();
  }

  // An untyped kernel: the arguments' count, sizes and offsets are checked against its metadata
  // (detail::untyped_args_match) on every dispatch.
  template <class... Args>
  result<aql_ticket> try_dispatch(const untyped_kernel& k, grid g, block b, const Args&... args) {
    return try_dispatch_with(dispatch_options{}, k, g, b, args...);
  }
  template <class... Args>
  aql_ticket dispatch(const untyped_kernel& k, grid g, block b, const Args&... args) {
    return try_dispatch(k, g, b, args...).value();
  }
  template <class... Args>
  result<aql_ticket> try_dispatch_with(const dispatch_options& o, const untyped_kernel& k, grid g, block b,
                                       const Args&... args) {
    constexpr std::size_t bytes = detail::kernarg_layout_size<Args...>();
    if (AQUEDUCT_UNLIKELY(!s_)) return empty_queue();
    if (AQUEDUCT_UNLIKELY(bytes > s_->opt.kernarg_bytes || k.kernarg_size > s_->opt.kernarg_bytes))
      return kernarg_too_large(k, bytes);
    if (AQUEDUCT_UNLIKELY(!detail::untyped_args_match<Args...>(k.args, k.kernarg_size)))
      return detail::untyped_args_mismatch<Args...>(k.name, k.args, k.kernarg_size);
    return submit(o, k, g, b, [&](std::byte* slot) { detail::put_kernargs(slot, args...); });
  }

  // Barrier-AND: completes when every dependency (up to 5 signals of this system) is 0. With
  // `barrier` it also waits for every earlier packet of this queue. An empty (default-constructed
  // or moved-from) signal is errc::invalid_argument: its null handle in the packet would silently
  // mean "no dependency". E.g. `q.try_barrier_and({a, b})`.
  result<aql_ticket> try_barrier_and(std::initializer_list<std::reference_wrapper<const signal>> deps, bool barrier = true,
                                     sync::nanoseconds timeout = sync::infinite) {
    return try_barrier_and(std::span<const std::reference_wrapper<const signal>>(deps.begin(), deps.size()), barrier, timeout);
  }
  result<aql_ticket> try_barrier_and(std::span<const std::reference_wrapper<const signal>> deps, bool barrier = true,
                                     sync::nanoseconds timeout = sync::infinite) {
    if (AQUEDUCT_UNLIKELY(!s_)) return empty_queue();
    if (AQUEDUCT_UNLIKELY(deps.size() > 5)) return too_many_deps(deps.size());
    std::array<sync::signal_ref, 5> refs{};
    for (std::size_t i = 0; i < deps.size(); ++i) {
      const signal& d = deps[i].get();
      if (AQUEDUCT_UNLIKELY(!d || d.agent_state()->sys != s_->agent->sys)) return bad_dependency(i, !d);
      refs[i] = d.ref();
    }
    return try_barrier_and(std::span<const sync::signal_ref>(refs.data(), deps.size()), barrier, timeout);
  }
  // The same on raw signal references (e.g. amd_signals of the caller's own memory, or graph/'s);
  // a null reference is errc::invalid_argument too.
  result<aql_ticket> try_barrier_and(std::span<const sync::signal_ref> deps, bool barrier = true,
                                     sync::nanoseconds timeout = sync::infinite) {
    if (AQUEDUCT_UNLIKELY(!s_)) return empty_queue();
    if (AQUEDUCT_UNLIKELY(deps.size() > 5)) return too_many_deps(deps.size());
    aqueduct::ring::barrier_and p;
    for (std::size_t i = 0; i < deps.size(); ++i) {
      if (AQUEDUCT_UNLIKELY(!deps[i])) return bad_dependency(i, true);
      p.deps[i] = deps[i].handle();
    }
    p.barrier = barrier;
    auto rr = s_->aql->try_reserve(1);
    if (AQUEDUCT_UNLIKELY(!rr)) rr = reserve_slow(1, timeout);
    if (AQUEDUCT_UNLIKELY(!rr)) return std::move(rr).get_failure();
    const std::uint64_t index = rr->index(0);
    s_->slots.arm(index);
    p.completion_signal = s_->slots.handle(index);
    rr->write(0, aqueduct::ring::make_packet(p));
    rr->publish();
    return ticket_for(index);
  }

  // ---- waits (detail/queue_waits.hpp) ------------------------------------------------------------
  // try_wait(ticket) / wait until the ticket's packet has completed (its completion signal was
  // decremented: its results are visible to the host); a ticket of another queue, or of a packet
  // not reserved yet, is errc::invalid_argument (naming both queues, or the write index);
  // errc::timeout with the queue decoded; errc::queue_error / device_fault when the device
  // stopped the queue. completed(ticket) without waiting (false also for a packet whose
  // completion this queue cannot see — a raw packet through aql() — until a later wait proves
  // it). try_finish / finish: every packet reserved so far. completed() / submitted(): every
  // packet below completed() has completed; submitted() is the write index.
  // The ticket of packet `index` of this queue (e.g. of a packet written through aql()).
  [[nodiscard]] aql_ticket ticket_for(std::uint64_t index) const noexcept {
    return aql_ticket(detail::ticket_key{}, s_.get(), queue_id(), index);
  }

  // ---- state ----------------------------------------------------------------------------------------
  [[nodiscard]] std::uint32_t size() const noexcept { return s_->aql->size(); }
  // read_dispatch_id: packets below it were LAUNCHED (not necessarily completed).
  [[nodiscard]] std::uint64_t read_index() const noexcept { return s_->aql->read_index(); }
  [[nodiscard]] std::uint64_t write_index() const noexcept { return s_->aql->write_index(); }
  [[nodiscard]] std::uint32_t queue_id() const noexcept { return s_->res.queue_id(); }
  // The GPU address of the queue's amd_queue (an hsa_queue_t first): what a kernel's
  // hidden_queue_ptr (__builtin_amdgcn_queue_ptr) holds.
  [[nodiscard]] gpu_va amd_queue_address() const noexcept { return gpu_va{s_->desc_va}; }
  [[nodiscard]] arch::family family() const noexcept { return s_->fam; }
  [[nodiscard]] const std::string& target_name() const noexcept { return s_->target_name; }
  // Run by an in-process device (it gave the queue a port), i.e. the emulator.
  [[nodiscard]] bool emulated() const noexcept { return s_->port != nullptr; }
  [[nodiscard]] explicit operator bool() const noexcept { return s_ != nullptr; }
  // The AQL producer itself (raw packets: reserve/write/publish).
  [[nodiscard]] aql_type& aql() noexcept { return *s_->aql; }
  // The completion signal packet `index` carries when the runtime wrote it.
  [[nodiscard]] std::uint64_t slot_signal_handle(std::uint64_t index) const noexcept { return s_->slots.handle(index); }
  // The signal whose completion raises the queue's event (interrupt), for waiters about to block.
  [[nodiscard]] std::uint64_t wake_handle() const noexcept { return reinterpret_cast<std::uintptr_t>(s_->wake); }
  // The KFD event every retirement raises (the progress signal's mailbox), and the agent.
  [[nodiscard]] std::uint32_t event_id() const noexcept { return s_->event.id(); }
  [[nodiscard]] detail::agent_state& agent_state() const noexcept { return *s_->agent; }
  [[nodiscard]] const kfd::queue_resources<detail::file_type>& resources() const noexcept { return s_->res; }

  // "queue 3 (gfx942): read_dispatch_id .. write_dispatch_id ..; packet ...; every packet below
  // .. completed; device: <fault>"
  void describe(std::string& out) const {
    describe_queue(out);
    if (auto f = fault()) out += "; device: " + std::string(f->detail());
  }

  // Drain (bounded), DESTROY_QUEUE (which stops an emulated processor), free everything.
  void destroy() noexcept {
    if (!s_) return;
    if (s_->aql && !s_->stopped()) (void)try_finish(s_->opt.drain_timeout);
    s_->aql.reset();
    s_->res.reset();  // DESTROY_QUEUE: the device no longer reads kernargs or writes signals
    s_->held.release_all();
    s_->kernargs.reset();
    s_->signal_memory.reset();
    s_->event.reset();
    s_.reset();
  }

 private:
  friend class detail::queue_waits<queue, aql_t>;
  void describe_queue(std::string& out) const {
    out += "queue " + std::to_string(queue_id()) + " (" + s_->target_name + "): ";
    s_->aql->describe(out);
    out += "; every packet below " + std::to_string(s_->slots.done()) + " completed";
  }
  // What the waits read (detail/queue_waits.hpp).
  // Packet t: a ticket for a packet not reserved yet (made with ticket_for) would never
  // complete, and its slot's complete value 2t + 1 wraps for t = 2^64 - 1 (issue 13 bug 12), so
  // that is refused BEFORE the fast path.
  [[nodiscard]] result<void> wait_ticket(std::uint64_t t, sync::nanoseconds timeout) const {
    if (AQUEDUCT_UNLIKELY(t >= s_->aql->write_index())) return not_reserved(t);
    if (AQUEDUCT_LIKELY(s_->slots.of(t) == detail::aql_slot_signals::state::complete)) return ok();
    std::optional<std::uint64_t> marker;
    return wait_progress([&] { return packet_complete(t, marker); }, false, t, timeout);
  }
  [[nodiscard]] result<void> wait_all(sync::nanoseconds timeout) const {
    const std::uint64_t end = s_->aql->write_index();
    std::optional<std::uint64_t> marker;
    return wait_progress([&] { return all_complete(end, marker); }, true, end, timeout);
  }
  [[nodiscard]] bool ticket_complete(std::uint64_t t) const noexcept { return s_->slots.complete(t); }
  [[nodiscard]] std::uint64_t progress() const noexcept { return s_->slots.refresh(s_->aql->read_index()); }
  [[nodiscard]] std::uint64_t issued() const noexcept { return s_->aql->write_index(); }

  [[nodiscard]] std::byte* kernarg_slot(std::uint64_t index) const noexcept {
    return static_cast<std::byte*>(s_->kernargs.host()) + (index & (s_->aql->size() - 1)) * s_->opt.kernarg_bytes;
  }
  [[nodiscard]] std::uint64_t kernarg_va(std::uint64_t index) const noexcept {
    return s_->kernargs.va().value + (index & (s_->aql->size() - 1)) * s_->opt.kernarg_bytes;
  }
  // The hot path: one claim, kernargs into the slot's kernarg area, the slot's signal pending,
  // the packet in place, header, doorbell (ring::aql_queue::try_submit_indexed) — no reservation
  // object, nothing else. A full ring takes the reservation path below, which waits (bounded) and
  // reports a stopped queue; a caller's completion signal takes the two-packet path.
  template <class Write>
  AQUEDUCT_ALWAYS_INLINE result<aql_ticket> submit(const dispatch_options& o, const untyped_kernel& k, grid g, block b,
                                                   Write&& write_kernargs) {
    // Caller input a try_ function must refuse, not assert on or run wrongly (issue 13 bugs 6, 11,
    // the freed-kernel message): one rarely taken branch for all of it.
    if (AQUEDUCT_UNLIKELY(((g.x == 0) | (g.y == 0) | (g.z == 0) | (b.x == 0) | (b.y == 0) | (b.z == 0)) ||
                          o.dynamic_lds_bytes != 0 || k.freed()))
      AQUEDUCT_TRY_VOID(check_input(o, k, g, b));
    if (AQUEDUCT_UNLIKELY(k.private_segment_size > s_->scratch.lane_bytes.load(std::memory_order_acquire)))
      AQUEDUCT_TRY_VOID(detail::try_grow_scratch(s_->scratch, *s_->agent, k.private_segment_size, s_->desc));
    if (AQUEDUCT_UNLIKELY(static_cast<bool>(o.completion_signal))) return submit_signalled(o, k, g, b, write_kernargs);
    return submit_launch(launch_of(o, k, b), k.hidden, k.kernarg_size, g, b, o.dynamic_lds_bytes, o.timeout, write_kernargs);
  }
  // What submit_launch writes into the claimed slot (a named functor with an always-inlined call,
  // not a lambda: GCC -O2 left the lambda out of line, its closure then lived in memory and every
  // argument was reloaded — issue 11).
  template <class Write>
  struct in_place_dispatch {
    const aqueduct::ring::aql_dispatch_template& l;
    const hidden_arg_offsets& h;
    detail::queue_state& st;
    Write& write_kernargs;
    std::uint32_t kernarg_size;
    grid g;
    block b;
    std::uint32_t dynamic_lds;
    AQUEDUCT_ALWAYS_INLINE std::uint32_t operator()(std::uint64_t index, abi::aql_slot& slot) const {
      // Everything read before the first store through a byte pointer, which may alias it (the
      // compiler would reload each value after it).
      const aqueduct::ring::aql_dispatch_template w = l;
      const std::uint64_t at = (index & (st.aql->size() - 1)) * st.opt.kernarg_bytes;
      std::byte* const ka = static_cast<std::byte*>(st.kernargs.host()) + at;
      const std::uint64_t ka_va = st.kernargs.va().value + at;
      const std::uint64_t signal = st.slots.handle(index);
      const bool hidden = h.any;
      write_kernargs(ka);
      // (The grid and block rebuilt from their fields: passed whole, GCC kept them in memory and
      // stored them on every dispatch, hidden arguments or not — issue 11.)
      if (hidden) h.put_listed(ka, kernarg_size, grid{g.x, g.y, g.z}, block{b.x, b.y, b.z}, hidden_values{st.desc_va, dynamic_lds});
      detail::aql_slot_signals::arm_handle(signal, index);
      return w.write(slot, g.x, g.y, g.z, ka_va, signal);
    }
  };
  // The one AQL dispatch path once the inputs are checked: claim, kernargs, hidden arguments, the
  // slot's signal armed, the packet written in place from the template's words, header,
  // doorbell. A ring full by the completion bound: wait for room (bounded by `timeout`, a
  // stopped queue reported), then retry. (`fill` is never passed to a function that is not
  // inlined, so it need not live in memory: issue 11.)
  template <class Write>
  AQUEDUCT_ALWAYS_INLINE result<aql_ticket> submit_launch(const aqueduct::ring::aql_dispatch_template& l,
                                                          const hidden_arg_offsets& h, std::uint32_t kernarg_size, grid g,
                                                          block b, std::uint32_t dynamic_lds, sync::nanoseconds timeout,
                                                          Write&& write_kernargs) {
    detail::queue_state& st = *s_;
    const in_place_dispatch<std::remove_reference_t<Write>> fill{l, h, st, write_kernargs, kernarg_size, g, b, dynamic_lds};
    std::uint64_t index = 0;
    if (AQUEDUCT_LIKELY(st.aql->try_submit_in_place(fill, index))) return ticket_for(index);
    const auto deadline = sync::deadline_after(timeout);
    for (;;) {
      AQUEDUCT_TRY_VOID(wait_slot(deadline, timeout));
      if (st.aql->try_submit_in_place(fill, index)) return ticket_for(index);
    }
  }
  // What a producer waiting for room for n waits for: an eighth of the ring free (or n, if more),
  // not the first slot. Resumed at the first free slot, it would publish one packet and wait
  // again, polling packet after packet the slot signal the device is about to decrement, and the
  // signal's line would move between them on every packet (docs/benchmarks.md, session 28).
  // After 1 ms, or sooner when less time is left, n is enough: a packet stuck at the ring's head
  // with a few free slots behind it (it waits for something this producer submits next) must not
  // hold the producer until its timeout, and a short timeout still gets the room there is.
  [[nodiscard]] auto room_for(std::uint32_t n, sync::nanoseconds left) const {
    const std::uint32_t batch = std::max(n, s_->aql->size() / 8);
    const auto patient_until = sync::clock::now() + std::min<sync::nanoseconds>(left, std::chrono::milliseconds(1));
    return [this, n, batch, patient_until] {
      return has_room(batch) || (sync::clock::now() >= patient_until && has_room(n));
    };
  }
  // No free slot by the completion bound: wait (the one wait loop: spin at most
  // wait_policy::spin_for, then back off) until one may be, up to `deadline`; a queue the device
  // stopped is reported (its fault, the queue described) instead of waited on forever (issue 13
  // bug 3); past the deadline, errc::queue_full with the queue decoded.
  AQUEDUCT_NOINLINE result<void> wait_slot(sync::clock::time_point deadline, sync::nanoseconds timeout) const {
    const auto now = sync::clock::now();
    const auto left = deadline > now ? deadline - now : sync::nanoseconds::zero();
    auto room = wait_room(room_for(1, left), left, [](sync::nanoseconds) { return failure(errc::queue_full); });
    if (room) return ok();
    if (room.get_failure() != errc::queue_full) return std::move(room).get_failure();  // stopped
    return s_->aql->full_failure(1, timeout);
  }
  // The dispatch (tracked by its slot's signal, as always), then a barrier-AND with the barrier
  // bit whose completion signal is the caller's: it completes once every earlier packet did.
  template <class Write>
  AQUEDUCT_NOINLINE result<aql_ticket> submit_signalled(const dispatch_options& o, const untyped_kernel& k, grid g, block b,
                                                        Write& write_kernargs) {
    auto rr = s_->aql->try_reserve(2);
    if (AQUEDUCT_UNLIKELY(!rr)) rr = reserve_slow(2, o.timeout);
    if (AQUEDUCT_UNLIKELY(!rr)) return std::move(rr).get_failure();
    auto& r = *rr;
    const std::uint64_t index = r.index(0);
    write_kernargs(kernarg_slot(index));
    k.hidden.put(kernarg_slot(index), k.kernarg_size, g, b, hidden_values{s_->desc_va, o.dynamic_lds_bytes});
    s_->slots.arm(index);
    r.write(0, launch_of(o, k, b).packet(g.x, g.y, g.z, gpu_va(kernarg_va(index)).value, s_->slots.handle(index)));
    aqueduct::ring::barrier_and signal;
    signal.barrier = true;
    signal.completion_signal = o.completion_signal.handle();
    r.write(1, aqueduct::ring::make_packet(signal));
    r.publish();
    return ticket_for(index);
  }
  [[nodiscard]] static AQUEDUCT_ALWAYS_INLINE aqueduct::ring::aql_dispatch_template launch_of(const dispatch_options& o, const untyped_kernel& k,
                                                                          block b) noexcept {
    return aqueduct::ring::aql_dispatch_template::of(k.object.value, k.group_segment_size + o.dynamic_lds_bytes, k.private_segment_size, b.x,
                                  b.y, b.z, o.barrier, o.scopes);
  }

  using reservation_type = typename aql_type::reservation;
  // The ring was full: wait for room (the one wait loop: spin at most wait_policy::spin_for,
  // then back off), bounded by `timeout`, and retry; a queue the device stopped is reported (its
  // fault, the queue described) instead of waited on forever (issue 13 bug 3).
  AQUEDUCT_NOINLINE result<reservation_type> reserve_slow(std::uint32_t n, sync::nanoseconds timeout) const {
    const auto deadline = sync::deadline_after(timeout);
    for (;;) {
      const auto now = sync::clock::now();
      const auto left = deadline > now ? deadline - now : sync::nanoseconds::zero();
      auto room = wait_room(room_for(n, left), left, [](sync::nanoseconds) { return failure(errc::queue_full); });
      if (!room && room.get_failure() != errc::queue_full) return std::move(room).get_failure();  // stopped
      auto r = s_->aql->try_reserve(n);  // queue_full (with the queue decoded) after the deadline
      if (r || r.get_failure() != errc::queue_full || !room) return r;
    }
  }

  // Slots are reusable below slots.free (brought up to date here): n more fit?
  [[nodiscard]] bool has_room(std::uint32_t n) const noexcept {
    detail::queue_state::refresh_slots(s_.get());
    return s_->aql->write_index() + n - s_->slots.free() <= s_->aql->size();
  }
  // A barrier-bit barrier-AND that carries its own slot's signal: once it completed, every
  // packet before it did. none: no free slot now.
  [[nodiscard]] std::optional<std::uint64_t> try_publish_marker() const {
    auto r = s_->aql->try_reserve(1);
    if (!r) return std::nullopt;
    const std::uint64_t m = r->index(0);
    s_->slots.arm(m);
    aqueduct::ring::barrier_and p;
    p.barrier = true;
    p.completion_signal = s_->slots.handle(m);
    r->write(0, aqueduct::ring::make_packet(p));
    r->publish();
    return m;
  }

  // Packet t completed? A packet that does not carry its slot's signal (a raw packet) is proven
  // complete by the completion of a marker published behind it.
  [[nodiscard]] bool packet_complete(std::uint64_t t, std::optional<std::uint64_t>& marker) const {
    const auto& sl = s_->slots;
    if (marker) return sl.complete(*marker);
    switch (sl.of(t)) {
      case detail::aql_slot_signals::state::complete: return true;
      case detail::aql_slot_signals::state::pending: return false;
      case detail::aql_slot_signals::state::untracked: break;
    }
    if (t < sl.done()) return true;
    if (t < s_->aql->write_index()) marker = try_publish_marker();
    return false;
  }
  // Every packet below `end` completed? The frontier stops at a launched packet whose completion
  // it cannot see: a marker behind it then answers.
  [[nodiscard]] bool all_complete(std::uint64_t end, std::optional<std::uint64_t>& marker) const {
    auto& sl = s_->slots;
    if (marker) return sl.complete(*marker);
    const std::uint64_t launched = s_->aql->read_index();
    const std::uint64_t d = sl.refresh(launched);
    if (d >= end) return true;
    if (d < launched && sl.of(d) == detail::aql_slot_signals::state::untracked) marker = try_publish_marker();
    return false;
  }

  // A default-constructed or moved-from queue: a clear error, never a null dereference.
  AQUEDUCT_NOINLINE static failure empty_queue() {
    return failure(errc::invalid_argument, "this queue is empty (default-constructed or moved-from): make one with agent::make_queue");
  }
  AQUEDUCT_NOINLINE failure kernarg_too_large(const untyped_kernel& k, std::size_t bytes) const {
    return failure(errc::invalid_argument, "kernel '" + k.name + "': " + std::to_string(std::max<std::size_t>(bytes, k.kernarg_size)) +
                                               " kernarg bytes do not fit the queue's " +
                                               std::to_string(s_->opt.kernarg_bytes) + "-byte kernarg slots (queue_options::kernarg_bytes)");
  }
  AQUEDUCT_NOINLINE static failure freed_kernel(const untyped_kernel& k) {
    return failure(errc::invalid_argument, "kernel '" + k.name + "': its executable was destroyed, so its code is freed; "
                                           "keep the executable alive while its kernels are dispatched");
  }
  AQUEDUCT_NOINLINE result<void> check_input(const dispatch_options& o, const untyped_kernel& k, grid g, block b) const {
    if ((g.x == 0) | (g.y == 0) | (g.z == 0) | (b.x == 0) | (b.y == 0) | (b.z == 0)) return zero_size(g, b);
    if (k.freed()) return freed_kernel(k);
    if (o.dynamic_lds_bytes != 0) return check_lds(k, o.dynamic_lds_bytes);
    return ok();
  }
  // Why a prepared launch was refused (try_dispatch(prepared_launch, ...)).
  AQUEDUCT_NOINLINE failure launch_error(std::uint64_t serial, const std::string& name, bool tracked, grid g, block b) const {
    if (!s_) return empty_queue();
    if (serial == 0) return failure(errc::invalid_argument, "this prepared launch is empty (default-constructed): make one with queue::prepare");
    if (serial != s_->serial)
      return failure(errc::invalid_argument, "the launch of kernel '" + name + "' was prepared on another queue (queue " +
                                                 std::to_string(queue_id()) + " did not check its kernarg size and scratch): "
                                                 "prepare it on the queue it is dispatched to");
    if ((g.x == 0) | (g.y == 0) | (g.z == 0)) return zero_size(g, b);
    if (tracked)
      return failure(errc::invalid_argument, "kernel '" + name + "': its executable was destroyed, so its code is freed; "
                                             "keep the executable alive while its kernels are dispatched");
    return failure(errc::invalid_argument, "prepared launch of kernel '" + name + "' refused");
  }
  AQUEDUCT_NOINLINE static failure zero_size(grid g, block b) {
    return failure(errc::invalid_argument, "grid " + std::to_string(g.x) + "x" + std::to_string(g.y) + "x" +
                                               std::to_string(g.z) + " / block " + std::to_string(b.x) + "x" +
                                               std::to_string(b.y) + "x" + std::to_string(b.z) +
                                               ": every grid and block dimension must be at least 1");
  }
  AQUEDUCT_NOINLINE result<void> check_lds(const untyped_kernel& k, std::uint32_t dynamic) const {
    const std::uint64_t total = std::uint64_t(k.group_segment_size) + dynamic;
    const std::uint64_t limit = s_->agent->node->properties.lds_size_in_kb != 0
                                    ? s_->agent->node->properties.lds_size_in_kb * 1024ull
                                    : 64 * 1024ull;  // every GFX9-GFX12 CU (spec/kfd.md §6.2 lds_size_in_kb)
    if (total <= limit) return ok();
    return failure(errc::invalid_argument, "kernel '" + k.name + "': " + std::to_string(k.group_segment_size) +
                                               " bytes of static LDS + dispatch_options::dynamic_lds_bytes " +
                                               std::to_string(dynamic) + " = " + std::to_string(total) +
                                               " bytes, more than the agent's " + std::to_string(limit) + " bytes of LDS");
  }
  AQUEDUCT_NOINLINE static failure too_many_deps(std::size_t n) {
    return failure(errc::invalid_argument, "try_barrier_and: " + std::to_string(n) +
                                               " dependencies given; an AQL barrier-AND packet holds at most 5 "
                                               "(chain several barriers for more)");
  }
  AQUEDUCT_NOINLINE static failure bad_dependency(std::size_t i, bool empty) {
    return failure(errc::invalid_argument,
                   "try_barrier_and: dependency " + std::to_string(i) +
                       (empty ? " is an empty signal (default-constructed or moved-from); its null handle would mean "
                                "no dependency at all: pass a live signal, or leave it out"
                              : " is a signal of another system: its memory is not this queue's device's"));
  }
  AQUEDUCT_NOINLINE failure not_reserved(std::uint64_t index) const {
    return failure(errc::invalid_argument, "try_wait(" + std::to_string(index) + "): no such packet on queue " +
                                               std::to_string(queue_id()) + " (write_index is " +
                                               std::to_string(s_->aql->write_index()) +
                                               "); wait on an index a dispatch or barrier returned");
  }

  std::unique_ptr<detail::queue_state> s_;
};

}  // namespace aqueduct::runtime

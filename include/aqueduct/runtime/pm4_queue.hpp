// aqueduct/runtime/pm4_queue.hpp — `pm4_queue`: a PM4 compute queue (KFD queue_type 0) of one
// agent, made with `gpu.make_queue(aq::pm4, options)`, with kernel dispatch, waits and, on the emulator,
// preemption controls.
//
// Layer: runtime. Creation visits the agent's target once (arch::visit_family): a gfx1100/1101/
// 1102 (and gfx1103 with two shader arrays) agent gets a ring::pm4_queue<arch::gfx11_priv_target>,
// which sets COMPUTE_PGM_RSRC1.PRIV on every dispatch (spec/kfd.md §4, DESIGN.md requirement 7);
// every other agent a queue whose type cannot set it. Resources are made exactly as on /dev/kfd
// (kfd::queue_resources: ring, pointer page — rptr @0, wptr @64 — EOP and the CWSR area with its
// headers, CREATE_QUEUE, doorbell), plus a slot area (per command: kernargs and the 64-byte
// dispatch packet that host_kernel_abi's dispatch pointer names) and one KFD signal event.
// A dispatch = ACQUIRE_MEM + registers + DISPATCH_DIRECT (DISPATCH_INDIRECT for
// dispatch_indirect) + CS_PARTIAL_FLUSH + RELEASE_MEM of the
// command's sequence number (64-bit) into the queue's progress word, with no interrupt; waits
// spin on the progress word, and a waiter that must then block first appends one RELEASE_MEM
// interrupt to the queue's event (after everything submitted so far: one interrupt per blocking
// wait, issue 11) and blocks on the event (with no room in the ring, it polls with back-off
// instead). A submission and that append are serialised by an internal mutex. PM4 dispatches
// whole workgroups (grid rounded up, as tinygrad does): kernels bound-check against the grid
// size in their dispatch packet or kernargs.
// On the emulated device the device runs the MEC itself (started by CREATE_QUEUE, stopped inside
// DESTROY_QUEUE); the doorbell store also reaches it through the queue's port
// (core/queue_port.hpp). A queue the device stopped is reported by the waits and by a submission
// into its full ring (device_hang for the GFX11 PRIV hang or an undersized CWSR area,
// queue_error, device_fault).
// Thread safety: one thread submits; waits and queries from any thread.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/arch/target.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/queue_port.hpp>
#include <aqueduct/kfd/queue_resources.hpp>
#include <aqueduct/queue/pm4_queue.hpp>
#include <aqueduct/runtime/agent.hpp>
#include <aqueduct/runtime/commands.hpp>
#include <aqueduct/runtime/detail/progress_wait.hpp>
#include <aqueduct/runtime/detail/queue_scratch.hpp>
#include <aqueduct/runtime/detail/queue_waits.hpp>
#include <aqueduct/runtime/detail/state.hpp>
#include <aqueduct/runtime/kernel.hpp>
#include <aqueduct/runtime/queue.hpp>
#include <aqueduct/runtime/queue_kind.hpp>
#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/wait.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace aqueduct::runtime {

struct pm4_queue_options {
  std::uint32_t ring_bytes = 64 * 1024;  // power of two >= 1 KiB
  std::uint32_t slots = 256;             // commands in flight (kernarg + dispatch-packet slots), power of two
  std::uint32_t kernarg_bytes = 256;     // per slot, multiple of 64
  std::uint32_t priority = 7;
  sync::wait_policy wait{};
  sync::nanoseconds drain_timeout = std::chrono::seconds(5);
};

// The doorbell of a PM4 queue: 64-bit, write pointer in dwords; an in-process device is also
// told through the queue's port.
struct pm4_doorbell {
  std::uint64_t* word = nullptr;
  aqueduct::queue_port* port = nullptr;  // null on /dev/kfd
  void ring(std::uint64_t wptr_dwords) noexcept {
    sync::atomic_store(*word, wptr_dwords, std::memory_order_release);
    if (port) port->ring_doorbell(wptr_dwords);
  }
};

namespace detail {
template <class T>
using pm4_q = aqueduct::ring::pm4_queue<T, pm4_doorbell>;

// The PM4 ring of the agent's target, chosen once when the queue is made (DESIGN.md §3): its
// functions are a table filled at creation, so no submission branches on the architecture.
class pm4_ring {
 public:
  virtual ~pm4_ring() = default;
  virtual result<std::uint64_t> try_dispatch(const aqueduct::ring::pm4::dispatch_params& p,
                                             const aqueduct::ring::pm4_completion& c, sync::nanoseconds timeout) = 0;
  virtual result<std::uint64_t> try_signal(const aqueduct::ring::pm4_completion& c, sync::nanoseconds timeout) = 0;
  virtual void describe(std::string& out) const = 0;
  [[nodiscard]] virtual pm4_doorbell& doorbell() noexcept = 0;
  [[nodiscard]] virtual bool sets_pm4_priv() const noexcept = 0;
  // Prebuilt commands (graph replay): the same packets, into a buffer; submitted as they are.
  virtual void encode_dispatch(command_buffer& out, const aqueduct::ring::pm4::dispatch_params& p) const = 0;
  virtual void encode_complete(command_buffer& out, const aqueduct::ring::pm4_completion& c) const = 0;
  virtual void encode_wait(command_buffer& out, gpu_va addr, std::uint32_t reference, std::uint32_t mask,
                           abi::pm4::wait_reg_mem::compare_function f) const = 0;
  virtual void encode_timestamp(command_buffer& out, gpu_va addr) const = 0;
  virtual result<std::uint64_t> try_submit(std::span<const std::uint32_t> body, const aqueduct::ring::pm4_completion& c,
                                           sync::nanoseconds timeout, std::uint64_t* start) = 0;
  [[nodiscard]] virtual std::uint64_t read_pointer() const noexcept = 0;
};
template <class Target>
class pm4_ring_of final : public pm4_ring {
 public:
  // Not re-initialised: queue_resources zeroed the ring and pointers before CREATE_QUEUE, and the
  // device's engine may already be reading them.
  pm4_ring_of(const aqueduct::ring::pm4_queue_memory& mem, const pm4_doorbell& db) noexcept : q_(mem, db, false) {}
  result<std::uint64_t> try_dispatch(const aqueduct::ring::pm4::dispatch_params& p, const aqueduct::ring::pm4_completion& c,
                                     sync::nanoseconds timeout) override {
    return q_.try_dispatch(p, c, timeout);
  }
  result<std::uint64_t> try_signal(const aqueduct::ring::pm4_completion& c, sync::nanoseconds timeout) override {
    return q_.try_signal(c, timeout);
  }
  void describe(std::string& out) const override { q_.describe(out); }
  [[nodiscard]] pm4_doorbell& doorbell() noexcept override { return q_.get_doorbell(); }
  [[nodiscard]] bool sets_pm4_priv() const noexcept override { return std::is_same_v<Target, arch::gfx11_priv_target>; }

  using enc = typename pm4_q<Target>::encoder;
  void encode_dispatch(command_buffer& out, const aqueduct::ring::pm4::dispatch_params& p) const override {
    if (p.indirect_counts) [[unlikely]]  // the counts into the hidden block counts, before the caches are invalidated
      for (std::uint32_t d = 0; d < 3; ++d)
        if (const std::int32_t at = p.indirect_block_count_at[d]; at >= 0)
          enc::copy_dword(out.append(enc::copy_data_dwords), gpu_va(p.indirect_counts.value + 4 * d),
                          gpu_va(p.kernarg.value + static_cast<std::uint32_t>(at)));
    enc::acquire_mem(out.append(enc::acquire_mem_dwords), enc::pre_dispatch_cntl, 0xAu);
    const auto n = enc::dispatch(out.append(enc::dispatch_dwords(*p.kd)), p);
    out.shrink_last(n);
    enc::event_write(out.append(enc::event_write_dwords));
  }
  void encode_complete(command_buffer& out, const aqueduct::ring::pm4_completion& c) const override {
    if (c.address) {
      if (c.b64)
        enc::release_mem(out.append(enc::release_mem_dwords), {.cache_action = enc::signal_cache_action,
                                                               .data_sel = abi::pm4::release_mem::data_sel_value::data64,
                                                               .address = c.address,
                                                               .data = c.value});
      else
        enc::signal(out.append(enc::release_mem_dwords), c.address, static_cast<std::uint32_t>(c.value));
    }
    if (c.event_mailbox) enc::signal_event(out.append(enc::release_mem_dwords), c.event_mailbox, c.event_id);
  }
  void encode_wait(command_buffer& out, gpu_va addr, std::uint32_t reference, std::uint32_t mask,
                   abi::pm4::wait_reg_mem::compare_function f) const override {
    enc::wait_reg_mem(out.append(enc::wait_reg_mem_dwords), addr, reference, mask, f);
  }
  void encode_timestamp(command_buffer& out, gpu_va addr) const override {
    enc::timestamp(out.append(enc::release_mem_dwords), addr);
  }
  result<std::uint64_t> try_submit(std::span<const std::uint32_t> body, const aqueduct::ring::pm4_completion& c,
                                   sync::nanoseconds timeout, std::uint64_t* start) override {
    std::array<std::uint32_t, 2 * enc::release_mem_dwords> tail{};
    std::size_t n = 0;
    if (c.b64)
      n += enc::release_mem(std::span<std::uint32_t>(tail).subspan(n), {.cache_action = enc::signal_cache_action,
                                                                         .data_sel = abi::pm4::release_mem::data_sel_value::data64,
                                                                         .address = c.address,
                                                                         .data = c.value});
    else
      n += enc::signal(std::span<std::uint32_t>(tail).subspan(n), c.address, static_cast<std::uint32_t>(c.value));
    if (c.event_mailbox) n += enc::signal_event(std::span<std::uint32_t>(tail).subspan(n), c.event_mailbox, c.event_id);
    return q_.try_submit_dwords(body, std::span<const std::uint32_t>(tail.data(), n), timeout, start);
  }
  [[nodiscard]] std::uint64_t read_pointer() const noexcept override { return q_.read_pointer(); }

 private:
  pm4_q<Target> q_;
};

struct pm4_queue_state {
  keep_alive keep;  // the system (declared first: released after everything below)
  agent_state* agent = nullptr;
  pm4_queue_options opt{};
  std::string target_name;
  kfd::queue_resources<file_type> res;
  kfd::buffer<file_type> slots;
  kfd::event<file_type> event;
  std::uint64_t* progress = nullptr;  // in the pointer page: sequence number of the last completed command
  std::atomic<std::uint64_t> submitted{0};  // last submitted command's sequence number (submitter writes, waiters read)
  std::mutex mu;  // the ring: the submitting thread and waiters about to block (detail::arm_wake)
  std::unique_ptr<pm4_ring> q;
  aqueduct::queue_port* port = nullptr;  // the device's port for this queue (null on /dev/kfd)
  queue_scratch scratch;                 // private segment memory, grown on demand
  held_memory held;                      // owners' memory kept until done or DESTROY_QUEUE (hold_until_done)

  // Why the device stopped the queue, or none (detail::queue_stop).
  [[nodiscard]] std::optional<failure> stopped() const { return queue_stop(port, *agent); }
};

// A waiter about to block: one RELEASE_MEM interrupt to the queue's event after everything
// submitted so far. false: no room in the ring now, a submission holds the ring, or the MEC
// stopped. (pm4_queue's waits and graph/'s reactor, which holds only the state a ticket names.)
[[nodiscard]] inline bool arm_wake(pm4_queue_state& s) {
  std::unique_lock lock(s.mu, std::try_to_lock);  // a submitter waiting for room holds it: poll then
  if (!lock.owns_lock() || (s.port && s.port->faulted())) return false;
  aqueduct::ring::pm4_completion c;
  c.event_mailbox = s.event.mailbox_va();
  c.event_id = s.event.id();
  return s.q->try_signal(c, sync::nanoseconds::zero()).has_value();
}
}  // namespace detail

class pm4_queue : public detail::queue_waits<pm4_queue, pm4_t> {
 public:
  static constexpr std::size_t progress_offset = 512;  // in the pointer page (rptr @0, wptr @64)
  static constexpr std::uint32_t packet_bytes = 64;     // the dispatch packet after each slot's kernargs

  pm4_queue() = default;
  explicit pm4_queue(std::unique_ptr<detail::pm4_queue_state> s) noexcept : s_(std::move(s)) {}
  pm4_queue(pm4_queue&&) noexcept = default;
  pm4_queue& operator=(pm4_queue&& o) noexcept {
    if (this != &o) {
      destroy();
      s_ = std::move(o.s_);
    }
    return *this;
  }
  ~pm4_queue() { destroy(); }

  // Kernel `k` over `g` work-items in workgroups of `b` with `args` as its parameters P...
  // (checked against its metadata when it was looked up). Returns the command's ticket.
  template <class... P>
  result<pm4_ticket> try_dispatch(const kernel<P...>& k, grid g, block b,
                                  const typename detail::kernel_param<P>::arg_type&... args) {
    return submit(k.info(), g, b, [&](std::byte* slot) {
      detail::put_typed_kernargs<P...>(slot, std::index_sequence_for<P...>{}, args...);
    });
  }
  template <class... P>
  pm4_ticket dispatch(const kernel<P...>& k, grid g, block b, const typename detail::kernel_param<P>::arg_type&... args) {
    return try_dispatch(k, g, b, args...).value();
  }
  // An untyped kernel: the arguments' count, sizes and offsets are checked against its metadata.
  template <class... Args>
  result<pm4_ticket> try_dispatch(const untyped_kernel& k, grid g, block b, const Args&... args) {
    if (!s_) return empty_queue();
    if (detail::kernarg_layout_size<Args...>() > s_->opt.kernarg_bytes)
      return failure(errc::invalid_argument, "kernel '" + k.name + "': kernargs do not fit pm4_queue_options::kernarg_bytes");
    if (!detail::untyped_args_match<Args...>(k.args, k.kernarg_size))
      return detail::untyped_args_mismatch<Args...>(k.name, k.args, k.kernarg_size);
    return submit(k, g, b, [&](std::byte* slot) { detail::put_kernargs(slot, args...); });
  }
  template <class... Args>
  pm4_ticket dispatch(const untyped_kernel& k, grid g, block b, const Args&... args) {
    return try_dispatch(k, g, b, args...).value();
  }

  // Kernel `k` in workgroups of `b`, its workgroup COUNTS read by the GPU when it reaches the
  // dispatch: three u32 {x, y, z} at `counts` (4-byte aligned; e.g. written by a kernel before it
  // on this queue). A zero count makes the dispatch do nothing (PM4 DISPATCH_INDIRECT, abi/pm4.hpp).
  // The grid is not known when the kernargs are written: the queue has the GPU copy the counts
  // into the kernel's hidden_block_count_x/y/z (COPY_DATA, before the dispatch), hidden_grid_dims
  // is 3 and hidden_remainder_* 0 (whole workgroups), and the grid_size fields of the 64-byte
  // dispatch packet are 0 (a kernel that reads its grid size from the dispatch packet, rather
  // than from the code object v5 hidden arguments, must take the counts as an argument).
  template <class... P>
  result<pm4_ticket> try_dispatch_indirect(const kernel<P...>& k, gpu_va counts, block b,
                                           const typename detail::kernel_param<P>::arg_type&... args) {
    return submit(k.info(), grid{b.x, b.y, b.z}, b,
                  [&](std::byte* slot) { detail::put_typed_kernargs<P...>(slot, std::index_sequence_for<P...>{}, args...); },
                  counts);
  }
  template <class... P>
  pm4_ticket dispatch_indirect(const kernel<P...>& k, gpu_va counts, block b,
                               const typename detail::kernel_param<P>::arg_type&... args) {
    return try_dispatch_indirect(k, counts, b, args...).value();
  }

  // ---- waits (detail/queue_waits.hpp) ------------------------------------------------------------
  // try_wait(ticket) / wait until its command completed (its RELEASE_MEM landed; a ticket of
  // another PM4 queue is errc::invalid_argument, naming both queues), try_finish / finish,
  // completed(ticket), completed() / submitted() (sequence numbers).

  // ---- prebuilt commands (graph replay) -----------------------------------------------------------
  // The packets of a dispatch of `k` (ACQUIRE_MEM + registers + DISPATCH_DIRECT +
  // CS_PARTIAL_FLUSH), with its kernargs at `kernarg` and its 64-byte dispatch packet at
  // `dispatch_packet` (both written by the caller), appended to `out`.
  // Scratch as an eager dispatch gets it (the queue's, grown to what `k` needs; on gfx9 the V# and
  // flat scratch init a kernel asks for even with no private memory of its own): a queue's
  // scratch buffers live as long as the queue, so a prebuilt command keeps a valid V#.
  // Throws aqueduct::error (errc::out_of_memory, ...) when the scratch cannot grow; `out` is then
  // unchanged.
  void encode_dispatch(command_buffer& out, const untyped_kernel& k, grid g, block b, gpu_va kernarg, gpu_va dispatch_packet) const {
    const scratch_need need = scratch_need_of(k);
    try_grow_scratch(need).value();
    aqueduct::ring::pm4::dispatch_params p = params_for(k, g, b, kernarg, dispatch_packet);
    set_scratch(p, need);
    s_->q->encode_dispatch(out, p);
  }
  // The same as an indirect dispatch reading its workgroup counts at `counts` (COPY_DATAs into the
  // hidden block counts, then DISPATCH_INDIRECT; see dispatch_indirect).
  void encode_dispatch_indirect(command_buffer& out, const untyped_kernel& k, gpu_va counts, block b, gpu_va kernarg,
                                gpu_va dispatch_packet) const {
    const scratch_need need = scratch_need_of(k);
    try_grow_scratch(need).value();
    aqueduct::ring::pm4::dispatch_params p = params_for(k, grid{b.x, b.y, b.z}, b, kernarg, dispatch_packet);
    set_indirect(p, k, counts);
    set_scratch(p, need);
    s_->q->encode_dispatch(out, p);
  }
  // RELEASE_MEM at end of pipe of the 64-bit `value` to `addr`, then (with a mailbox) the
  // interrupt of KFD event `event_id`.
  void encode_release(command_buffer& out, gpu_va addr, std::uint64_t value, gpu_va event_mailbox = {},
                      std::uint32_t event_id = 0) const {
    s_->q->encode_complete(out, aqueduct::ring::pm4_completion{addr, value, true, event_mailbox, event_id});
  }
  // WAIT_REG_MEM: later packets wait until `(*addr & mask) f reference` (32-bit).
  void encode_wait(command_buffer& out, gpu_va addr, std::uint32_t reference, std::uint32_t mask = 0xFFFFFFFFu,
                   abi::pm4::wait_reg_mem::compare_function f = abi::pm4::wait_reg_mem::compare_function::greater_equal) const {
    s_->q->encode_wait(out, addr, reference, mask, f);
  }
  void encode_timestamp(command_buffer& out, gpu_va addr) const { s_->q->encode_timestamp(out, addr); }
  // Submits `cmds` as they are, then the queue's own completion (sequence number and event): one
  // doorbell when they fit in half the ring. `start_dword` (optional) receives the write pointer
  // of the first dword (read_pointer() minus it locates a fault in `cmds`).
  result<pm4_ticket> try_submit(const command_buffer& cmds, sync::nanoseconds timeout = sync::infinite,
                                std::uint64_t* start_dword = nullptr) {
    if (!s_) return empty_queue();
    const std::uint64_t seq = s_->submitted.load(std::memory_order_relaxed) + 1;
    aqueduct::ring::pm4_completion c;
    c.address = gpu_va(s_->res.pointers().va.value + progress_offset);
    c.value = seq;
    c.b64 = true;
    c.event_mailbox = s_->event.mailbox_va();
    c.event_id = s_->event.id();
    // Serialised with a blocking waiter's wake-up packet (detail::arm_wake). A full ring backs off
    // in the ring's own wait (sync::wait_until), which reports a stopped MEC (the ring's
    // stop_check) or queue_full after `timeout`.
    std::lock_guard lock(s_->mu);
    auto r = s_->q->try_submit(cmds.dwords(), c, timeout, start_dword);
    if (!r) return std::move(r).get_failure();
    s_->submitted.store(seq, std::memory_order_release);
    return pm4_ticket(detail::ticket_key{}, s_.get(), queue_id(), seq);
  }
  // Dwords the CP has consumed (monotonic).
  [[nodiscard]] std::uint64_t read_pointer() const noexcept { return s_->q->read_pointer(); }

  // ---- state --------------------------------------------------------------------------------------
  [[nodiscard]] std::uint32_t event_id() const noexcept { return s_->event.id(); }
  [[nodiscard]] detail::agent_state& agent_state() const noexcept { return *s_->agent; }
  [[nodiscard]] std::uint32_t queue_id() const noexcept { return s_->res.queue_id(); }
  [[nodiscard]] const std::string& target_name() const noexcept { return s_->target_name; }
  [[nodiscard]] bool sets_pm4_priv() const noexcept { return s_->q->sets_pm4_priv(); }
  [[nodiscard]] bool emulated() const noexcept { return s_->port != nullptr; }
  [[nodiscard]] const kfd::queue_resources<detail::file_type>& resources() const noexcept { return s_->res; }
  [[nodiscard]] explicit operator bool() const noexcept { return s_ != nullptr; }

  // "PM4 queue 3 (gfx11+pm4-priv): PM4 queue (...): rptr .., wptr ..; packet at rptr: ..."
  void describe(std::string& out) const {
    describe_ring(out);
    if (auto f = fault()) out += "; device: " + std::string(f->detail());
  }
  void describe_ring(std::string& out) const {
    out += "queue " + std::to_string(queue_id()) + " (" + s_->target_name + "), completed " + std::to_string(completed()) +
           " of " + std::to_string(submitted()) + ": ";
    if (s_->q) s_->q->describe(out);
  }

  // Drain (bounded), DESTROY_QUEUE (which stops an emulated engine), free everything.
  void destroy() noexcept {
    if (!s_) return;
    if (!s_->stopped()) (void)try_finish(s_->opt.drain_timeout);
    s_->q.reset();
    s_->res.reset();  // DESTROY_QUEUE: the MEC no longer reads the ring or anything it points to
    s_->held.release_all();
    s_->slots.reset();
    s_->event.reset();
    s_.reset();
  }

 private:
  friend class detail::queue_waits<pm4_queue, pm4_t>;
  void describe_queue(std::string& out) const { describe_ring(out); }
  static failure empty_queue() {
    return failure(errc::invalid_argument, "this PM4 queue is empty (default-constructed or moved-from): make one with make_queue(aq::pm4)");
  }
  template <class WriteKernargs>
  result<pm4_ticket> submit(const untyped_kernel& k, grid g, block b, WriteKernargs&& write_kernargs, gpu_va counts = {}) {
    if (counts) [[unlikely]] {
      if (!s_) return empty_queue();
      if (counts.value % 4 != 0)
        return failure(errc::invalid_argument, "kernel '" + k.name + "': the workgroup counts of an indirect dispatch must be "
                                               "4-byte aligned (DISPATCH_INDIRECT)");
    }
    if (k.kernarg_size > s_->opt.kernarg_bytes)
      return failure(errc::invalid_argument, "kernel '" + k.name + "': kernargs do not fit pm4_queue_options::kernarg_bytes");
    const scratch_need need = scratch_need_of(k);
    AQUEDUCT_TRY_VOID(try_grow_scratch(need));
    if (g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0)
      return failure(errc::invalid_argument, "grid and block sizes must be positive");
    if (k.freed())
      return failure(errc::invalid_argument, "kernel '" + k.name + "': its executable was destroyed, so its code is "
                                             "freed; keep the executable alive while its kernels are dispatched");
    const std::uint64_t seq = s_->submitted.load(std::memory_order_relaxed) + 1;
    // The slot's previous command must have completed before its kernargs are overwritten.
    if (seq > s_->opt.slots) {
      const std::uint64_t reused = seq - s_->opt.slots;
      if (completed() < reused)
        AQUEDUCT_TRY_VOID(wait_progress([&] { return completed() >= reused; }, false, reused, sync::infinite));
    }
    const std::uint64_t slot = seq & (s_->opt.slots - 1);
    auto* base = static_cast<std::byte*>(s_->slots.host()) + slot * slot_bytes();
    const std::uint64_t va = s_->slots.va().value + slot * slot_bytes();
    write_kernargs(base);
    if (counts) [[unlikely]]
      k.hidden.put_indirect(base, k.kernarg_size, b);
    else
      k.hidden.put(base, k.kernarg_size, g, b, hidden_values{});  // no amd_queue (hidden_queue_ptr null), no dynamic LDS
    write_dispatch_packet(base + s_->opt.kernarg_bytes, k, counts ? grid{0, 0, 0} : g, b, gpu_va(va));
    aqueduct::ring::pm4::dispatch_params p = params_for(k, g, b, gpu_va(va), gpu_va(va + s_->opt.kernarg_bytes));
    if (counts) [[unlikely]]
      set_indirect(p, k, counts);
    set_scratch(p, need);
    aqueduct::ring::pm4_completion c;
    c.address = gpu_va(s_->res.pointers().va.value + progress_offset);
    c.value = seq;
    c.b64 = true;
    // A full ring backs off in the ring's own wait (sync::wait_until) until the CP made room,
    // and reports a stopped MEC (the ring's stop_check) instead of waiting on it forever.
    std::lock_guard lock(s_->mu);
    auto r = counts ? submit_indirect(p, c) : s_->q->try_dispatch(p, c, sync::infinite);
    if (!r) return std::move(r).get_failure();
    s_->submitted.store(seq, std::memory_order_release);
    return pm4_ticket(detail::ticket_key{}, s_.get(), queue_id(), seq);
  }
  // An indirect dispatch's packets: encoded each time, not a dispatch template (those patch
  // DISPATCH_DIRECT's dimensions); through a reused per-thread buffer. Called under s_->mu.
  AQUEDUCT_NOINLINE result<std::uint64_t> submit_indirect(const aqueduct::ring::pm4::dispatch_params& p,
                                                          const aqueduct::ring::pm4_completion& c) {
    thread_local command_buffer cmds;
    cmds.clear();
    s_->q->encode_dispatch(cmds, p);
    return s_->q->try_submit(cmds.dwords(), c, sync::infinite, nullptr);
  }
  [[nodiscard]] std::uint64_t slot_bytes() const noexcept { return std::uint64_t{s_->opt.kernarg_bytes} + packet_bytes; }

 public:
  // The 64-byte dispatch packet a PM4 dispatch points the kernel at (host_kernel_abi's s[0:1]):
  // what an AQL dispatch of the same kernel, grid and block would hold.
  static void write_dispatch_packet(std::byte* at, const untyped_kernel& k, grid g, block b, gpu_va kernarg) noexcept {
    abi::kernel_dispatch_packet pkt{};
    pkt.setup = 3;
    pkt.workgroup_size_x = b.x;
    pkt.workgroup_size_y = b.y;
    pkt.workgroup_size_z = b.z;
    pkt.grid_size_x = g.x;
    pkt.grid_size_y = g.y;
    pkt.grid_size_z = g.z;
    pkt.group_segment_size = k.group_segment_size;
    pkt.private_segment_size = k.private_segment_size;
    pkt.kernel_object = k.object.value;
    pkt.kernarg_address = kernarg.value;
    std::memcpy(at, &pkt, sizeof pkt);
  }

 private:
  // What DISPATCH_DIRECT and the registers before it need (PM4 dispatches whole workgroups).
  [[nodiscard]] static aqueduct::ring::pm4::dispatch_params params_for(const untyped_kernel& k, grid g, block b, gpu_va kernarg,
                                                                       gpu_va dispatch_packet) noexcept {
    aqueduct::ring::pm4::dispatch_params p;
    p.kd = &k.descriptor;
    p.kd_va = k.object;
    // Rounded up in 64 bits: grid 0xFFFFFFFF with block 1024 is 4,194,304 workgroups, not 0 (issue 13 bug 7).
    const auto groups = [](std::uint32_t n, std::uint32_t per) {
      return static_cast<std::uint32_t>((std::uint64_t(n) + per - 1) / per);
    };
    p.grid = {groups(g.x, b.x), groups(g.y, b.y), groups(g.z, b.z)};
    p.block = {b.x, b.y, b.z};
    p.dispatch_ptr = dispatch_packet;
    p.kernarg = kernarg;
    return p;
  }
  // What a dispatch of `k` asks of the queue's scratch: its private memory per lane, or (gfx9)
  // the private segment buffer / flat scratch init SGPRs a kernel asks for even with none of its
  // own (every gfx90a kernel asks for the V#), which get at least 4 bytes a lane.
  struct scratch_need {
    std::uint32_t lane_bytes = 0;
    bool segment_buffer = false, flat_init = false;
  };
  [[nodiscard]] static scratch_need scratch_need_of(const untyped_kernel& k) noexcept {
    namespace kcp = abi::kernel_code_properties;
    const std::uint16_t props = k.descriptor.kernel_code_properties;
    const bool psb = kcp::enable_sgpr_private_segment_buffer::get(props), fsi = kcp::enable_sgpr_flat_scratch_init::get(props);
    return {std::max<std::uint32_t>(k.private_segment_size, psb || fsi ? 4u : 0u), psb, fsi};
  }
  // The queue's scratch grown to `need` (nothing to do when it is already that large).
  [[nodiscard]] result<void> try_grow_scratch(const scratch_need& need) const {
    if (need.lane_bytes > s_->scratch.lane_bytes.load(std::memory_order_acquire))
      return detail::try_grow_scratch(s_->scratch, *s_->agent, need.lane_bytes);
    return {};
  }
  // The scratch fields of `p` for `need`, after try_grow_scratch(need): architected flat scratch's
  // base and per-wave size; gfx9's V# and flat scratch init. None for a kernel that needs none.
  void set_scratch(aqueduct::ring::pm4::dispatch_params& p, const scratch_need& need) const {
    if (need.lane_bytes == 0) return;
    p.scratch_base = gpu_va(s_->scratch.va);
    p.scratch_waves = s_->scratch.waves;
    p.scratch_bytes_per_wave = 64 * s_->scratch.lane_bytes.load(std::memory_order_relaxed);
    if (need.segment_buffer) p.private_segment_buffer = detail::gfx9_scratch_srd(s_->scratch.va, s_->scratch.bytes);
    if (need.flat_init) p.flat_scratch_init = {lo32(s_->scratch.va), hi32(s_->scratch.va)};
  }
  // Makes `p` an indirect dispatch: COPY_DATAs of the workgroup counts at `counts` into `k`'s
  // hidden block counts, then DISPATCH_INDIRECT.
  static void set_indirect(aqueduct::ring::pm4::dispatch_params& p, const untyped_kernel& k, gpu_va counts) noexcept {
    p.indirect_counts = counts;
    for (int d = 0; d < 3; ++d) p.indirect_block_count_at[d] = k.hidden.block_count[d];
  }

  std::unique_ptr<detail::pm4_queue_state> s_;
};

// Creates a PM4 queue on `gpu` (see the header comment).
// (agent::make_queue(aq::pm4, o) calls this.)
[[nodiscard]] inline result<pm4_queue> try_create_queue(const agent& gpu, pm4_t, const pm4_queue_options& o) {
  if (o.ring_bytes < 1024 || (o.ring_bytes & (o.ring_bytes - 1)) != 0)
    return failure(errc::invalid_argument, "pm4_queue_options::ring_bytes must be a power of two >= 1024");
  if (o.slots < 2 || (o.slots & (o.slots - 1)) != 0)
    return failure(errc::invalid_argument, "pm4_queue_options::slots must be a power of two >= 2");
  if (o.kernarg_bytes == 0 || o.kernarg_bytes % 64 != 0)
    return failure(errc::invalid_argument, "pm4_queue_options::kernarg_bytes must be a positive multiple of 64");
  detail::agent_state& a = gpu.state();
  auto st = std::make_unique<detail::pm4_queue_state>();
  st->keep = detail::keep_system(a);
  st->agent = &a;
  st->opt = o;
  AQUEDUCT_TRY(auto* doorbells, detail::try_doorbells(a));
  kfd::queue_options ko;
  ko.kind = kfd::queue_kind::pm4;
  ko.ring_size = byte_count(o.ring_bytes);
  ko.priority = o.priority;
  AQUEDUCT_TRY(st->res, kfd::queue_resources<detail::file_type>::try_create(a.sys->ref(), *a.node, *doorbells, ko));
  AQUEDUCT_TRY(st->slots, kfd::buffer<detail::file_type>::try_allocate(
                              a.sys->ref(), *a.node, byte_count(std::uint64_t{o.slots} * (o.kernarg_bytes + pm4_queue::packet_bytes)),
                              kfd::memory_use::host));
  AQUEDUCT_TRY(st->event, a.sys->try_make_event(*a.node));
  auto* page = static_cast<std::byte*>(st->res.pointers().host);
  st->progress = reinterpret_cast<std::uint64_t*>(page + pm4_queue::progress_offset);
  sync::atomic_store(*st->progress, 0, std::memory_order_release);
  const aqueduct::ring::pm4_queue_memory mem{st->res.ring().as<std::uint32_t>(), st->res.ring_size() / 4,
                                              reinterpret_cast<std::uint64_t*>(page + ko.wptr_offset),
                                              reinterpret_cast<const std::uint64_t*>(page + ko.rptr_offset),
                                              sync::stop_check(*st)};
  const pm4_doorbell db{static_cast<std::uint64_t*>(st->res.doorbell()), nullptr};
  // The one run-time branch on the architecture for this queue's lifetime (DESIGN.md §3).
  AQUEDUCT_TRY(st->target_name,
               arch::visit_family(gpu.gfx_target_version(), static_cast<std::uint32_t>(a.node->properties.simd_arrays_per_engine),
                                  [&](auto target) -> std::string {
                                    using T = decltype(target);
                                    st->q = std::make_unique<detail::pm4_ring_of<T>>(mem, db);
                                    return T::name();
                                  }));
  st->port = kfd::queue_port_of(a.sys->driver.file(), st->res.queue_id());
  if (st->port && st->port->faulted())
    if (auto f = st->port->fault()) return *f;
  st->q->doorbell().port = st->port;
  return pm4_queue(std::move(st));
}
}  // namespace aqueduct::runtime

// The facade's short names (runtime.hpp style).
namespace aqueduct {
using runtime::pm4;
using runtime::pm4_queue;
using runtime::pm4_queue_options;
using runtime::pm4_ticket;
}  // namespace aqueduct

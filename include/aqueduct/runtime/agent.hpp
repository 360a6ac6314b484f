// aqueduct/runtime/agent.hpp — `agent`: one GPU of a system, with its properties, typed memory,
// code loading, queues and signals.
//
// Layer: runtime. An agent is a cheap handle (a pointer into the system's state). Properties
// come from the KFD topology node (sysfs, real or written by the emulator). Queues are created
// typed by the agent's family: `try_make_queue` visits it once (arch::visit_family) and
// everything after is fixed for the queue's lifetime. Code: `try_load` of a gfx code object
// (code::code_object, placed by code::try_load into code memory) or of an emulated code object;
// host functions are loaded with aqueduct::emu::try_load (runtime/emulator.hpp).
// Thread safety: every member may be called from any thread. Resources it makes must be
// destroyed before the system.
#pragma once

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/arch/target.hpp>
#include <aqueduct/abi/bundle.hpp>
#include <aqueduct/code/elf.hpp>
#include <aqueduct/code/isa.hpp>
#include <aqueduct/code/loader.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/kfd/queue_resources.hpp>
#include <aqueduct/kfd/topology.hpp>
#include <aqueduct/runtime/detail/state.hpp>
#include <aqueduct/runtime/kernel.hpp>
#include <aqueduct/runtime/memory.hpp>
#include <aqueduct/runtime/queue.hpp>
#include <aqueduct/runtime/queue_kind.hpp>
#include <aqueduct/runtime/signal.hpp>
#include <aqueduct/sync/signal.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>

namespace aqueduct::runtime {

class agent {
 public:
  agent() = default;
  explicit agent(detail::agent_state& s) noexcept : keep_(detail::keep_system(s)), s_(&s) {}

  // ---- properties ----------------------------------------------------------------------------
  [[nodiscard]] const kfd::node& node() const noexcept { return *s_->node; }
  [[nodiscard]] std::uint32_t gpu_id() const noexcept { return s_->node->gpu_id; }
  [[nodiscard]] const std::string& name() const noexcept { return s_->node->name; }  // ASIC name
  [[nodiscard]] std::string gfx_name() const { return s_->node->gfx_name(); }          // "gfx942"
  [[nodiscard]] std::uint32_t gfx_target_version() const noexcept { return s_->node->gfx_target_version(); }
  [[nodiscard]] arch::family family() const noexcept { return s_->fam; }
  [[nodiscard]] const std::string& target_name() const noexcept { return s_->target_name; }
  [[nodiscard]] std::uint32_t compute_units() const noexcept { return s_->node->compute_units(); }

  // ---- clock (runtime/device_clock.hpp) ----------------------------------------------------------
  // One reading of this GPU's clock counter with the host's steady_clock (GET_CLOCK_COUNTERS).
  [[nodiscard]] result<clock_sample> try_sample_clock() const { return detail::try_sample_clock(s_->sys->driver.ref(), gpu_id()); }
  // The first calibration sample, if none was taken yet (a trace takes it when it starts, so its
  // stamps are translated between two samples well apart).
  [[nodiscard]] result<void> try_mark_clock() const { return detail::try_mark_clock(s_->clock, s_->sys->driver.ref(), gpu_id()); }
  // A GPU timestamp (clock counter ticks: AQL start_ts/end_ts, PM4 RELEASE_MEM, SDMA TIMESTAMP) in
  // host steady_clock ns. Translate a span's end before its start (a stamp past the latest
  // sample takes a new one, as ROCr's TranslateTime: the end first keeps one rate for both).
  [[nodiscard]] result<std::uint64_t> try_device_to_host_ns(std::uint64_t ticks) const {
    return detail::try_device_to_host_ns(s_->clock, s_->sys->driver.ref(), gpu_id(), ticks);
  }
  [[nodiscard]] std::uint32_t wave_size() const noexcept {
    return static_cast<std::uint32_t>(s_->node->properties.wave_front_size);
  }
  [[nodiscard]] std::uint32_t num_xcc() const noexcept { return s_->node->num_xcc(); }
  [[nodiscard]] std::uint64_t local_memory_bytes() const noexcept { return s_->node->local_memory_bytes(); }
  [[nodiscard]] std::uint32_t max_engine_clock_mhz() const noexcept {
    return static_cast<std::uint32_t>(s_->node->properties.max_engine_clk_fcompute);
  }
  [[nodiscard]] bool emulated() const noexcept { return s_->sys->emulator != nullptr; }

  // ---- memory ----------------------------------------------------------------------------------
  template <class T>
  // Device memory (VRAM) unless asked otherwise, as hipMalloc: host-visible memory is asked for
  // explicitly (memory_kind::host or device_host_visible).
  [[nodiscard]] result<buffer<T>> try_alloc(std::size_t count, memory_kind kind = memory_kind::device) const {
    if (count == 0 || count > std::numeric_limits<std::uint64_t>::max() / sizeof(T))
      return failure(errc::invalid_argument, "alloc: element count must be in [1, 2^64 / sizeof(T))");
    AQUEDUCT_TRY(auto bo, kfd::buffer<detail::file_type>::try_allocate(s_->sys->ref(), *s_->node,
                                                                        byte_count(count * sizeof(T)), to_memory_use(kind)));
    return buffer<T>(std::move(bo), count, kind, keep_);
  }
  template <class T>
  [[nodiscard]] buffer<T> alloc(std::size_t count, memory_kind kind = memory_kind::device) const {
    return try_alloc<T>(count, kind).value();
  }

  // ---- code --------------------------------------------------------------------------------------
  // A gfx code object (already selected for this agent, e.g. with code::fat_binary::try_select).
  // Loading works on both devices; its kernels are runnable only on a real GPU (executable::try_get_kernel).
  // A code object for another processor is errc::no_compatible_isa (code::try_match's rules:
  // exact, generic, the extended families), naming both processors.
  [[nodiscard]] result<executable> try_load(const code::code_object& co) const {
    if (auto m = code::try_match(co.e_flags(), code::target_id{gfx_name()}); !m)
      return failure(errc::no_compatible_isa, "code object for " + code_processor_name(co.e_flags()) +
                                                  " cannot run on this agent, " + gfx_name() + ": " +
                                                  std::string(m.detail()) +
                                                  "; build for " + gfx_name() + " or load a bundle entry chosen with "
                                                  "code::fat_binary::try_select");
    auto alloc = std::make_unique<detail::code_allocator>(s_->sys->ref(), *s_->node);
    AQUEDUCT_TRY(auto exe, code::try_load(co, *alloc));
    // The kernels' hidden arguments as the dispatch path reads them: does any list hidden_heap_v1?
    const bool wants_heap =
        std::ranges::any_of(exe.kernels(), [](const code::loaded_kernel& k) { return hidden_arg_offsets::of(k.args).heap >= 0; });
    std::uint64_t heap = 0;
    if (wants_heap) {
      AQUEDUCT_TRY(heap, try_device_heap());
    }
    return executable(std::move(alloc), std::move(exe), emulated(), keep_, heap);
  }
  // The bytes of the device heap hidden_heap_v1 points at: CLR's HeapBufferSize, 128 KiB
  // (ROCm/clr rocclr/device/rocm/rocdevice.cpp Device::HiddenHeapAlloc). It holds the device
  // library's allocator state (ockl's heap_t, ROCm-Device-Libs ockl/src/dm.cl: 108,552 bytes in
  // ROCm 5.2, 108,688 from 5.7), which __ockl_dm_init_v1 zeroes before first use.
  static constexpr std::uint64_t device_heap_bytes = 128 * 1024;
  // The bytes of one ELF code object.
  [[nodiscard]] result<executable> try_load(std::span<const std::byte> code_object_bytes) const {
    if (auto kind = bundle_kind(code_object_bytes); !kind.empty())
      return failure(errc::invalid_argument, "these " + std::to_string(code_object_bytes.size()) + " bytes are " + kind +
                                                 ", not one ELF code object: open them with code::fat_binary::try_open, "
                                                 "pick the entry for " + gfx_name() +
                                                 " with try_select(code::target_id{\"" + gfx_name() +
                                                 "\"}), and load that entry's code object");
    AQUEDUCT_TRY(auto co, code::code_object::try_parse(code_object_bytes));
    return try_load(co);
  }
  // An emulated code object as code/ describes it (descriptors you built, host kernels
  // registered by name in the emulated device's registry: see aqueduct::emu::try_load).
  [[nodiscard]] result<executable> try_load(const code::emulated_code_object& eco) const {
    if (!emulated())
      return failure(errc::not_supported, "emulated code objects (host kernels) run only on the emulated device; " +
                                              gfx_name() + " here is a real GPU: load a gfx code object");
    auto alloc = std::make_unique<detail::code_allocator>(s_->sys->ref(), *s_->node);
    AQUEDUCT_TRY(auto exe, code::try_load(eco, *alloc));
    return executable(std::move(alloc), std::move(exe), true, keep_);
  }
  template <class Code>
  [[nodiscard]] executable load(const Code& c) const {
    return try_load(c).value();
  }

  // ---- queues ------------------------------------------------------------------------------------
  // One spelling for every kind: gpu.make_queue(aq::aql | aq::pm4 | aq::sdma, options). The tag
  // picks the queue type (runtime::queue, pm4_queue, sdma_queue) and its options type; the
  // agent's architecture is visited once, here, and fixed for the queue's lifetime.
  template <queue_kind Kind>
  [[nodiscard]] result<typename Kind::queue_type> try_make_queue(Kind kind, const typename Kind::options_type& o = {}) const {
    return try_create_queue(*this, kind, o);
  }
  template <queue_kind Kind>
  [[nodiscard]] typename Kind::queue_type make_queue(Kind kind, const typename Kind::options_type& o = {}) const {
    return try_make_queue(kind, o).value();
  }

  // ---- signals -----------------------------------------------------------------------------------
  [[nodiscard]] result<signal> try_make_signal(std::int64_t initial) const {
    AQUEDUCT_TRY(auto s, detail::try_acquire_signal(*s_, initial));
    return signal(*s_, std::move(s), keep_);
  }
  [[nodiscard]] signal make_signal(std::int64_t initial) const { return try_make_signal(initial).value(); }

  // "gfx942 (gfx94x) gpu_id 12345, 304 CUs, wave64, 8 XCCs, 192 GiB"
  [[nodiscard]] std::string describe() const {
    std::string s = gfx_name() + " (" + target_name() + ")";
    if (!name().empty()) s += " '" + name() + "'";
    s += " gpu_id " + std::to_string(gpu_id()) + ", " + std::to_string(compute_units()) + " CUs, wave" +
         std::to_string(wave_size()) + ", " + std::to_string(num_xcc()) + " XCC, " +
         std::to_string(local_memory_bytes() >> 20) + " MiB local memory";
    return s;
  }

  // The memory destroyed executable graphs left on this GPU for the next instantiation here
  // (kernargs, signals, trace stamps: at most 64 MiB, kept so that instantiating again reuses
  // pages already touched instead of faulting fresh ones in; docs/graph.md): how many bytes are
  // kept, and their release, for a program done instantiating graphs (as CUDA's
  // cudaDeviceGraphMemTrim releases graph memory). The system's closing releases it too.
  [[nodiscard]] std::uint64_t kept_graph_memory() const { return s_->kept.held_bytes(); }
  std::uint64_t trim_graph_memory() const noexcept { return s_->kept.trim(); }

  [[nodiscard]] detail::agent_state& state() const noexcept { return *s_; }

 private:
  [[nodiscard]] static std::string code_processor_name(std::uint32_t e_flags) {
    const auto* p = arch::find_processor_by_mach(static_cast<std::uint8_t>(e_flags & abi::ef_amdgpu_mach));
    return p ? std::string(p->name) : "EF_AMDGPU_MACH " + std::to_string(e_flags & abi::ef_amdgpu_mach);
  }
  // "an offload bundle" / "a compressed offload bundle (CCOB)" by their magic, else empty.
  [[nodiscard]] static std::string bundle_kind(std::span<const std::byte> b) {
    auto starts = [&](std::string_view m) {
      return b.size() >= m.size() && std::memcmp(b.data(), m.data(), m.size()) == 0;
    };
    if (starts(std::string_view(abi::offload_bundle_magic, sizeof abi::offload_bundle_magic - 1))) return "an offload bundle";
    if (starts("CCOB")) return "a compressed offload bundle (CCOB)";
    return {};
  }

  // The agent's device heap (made once, under the agent's lock): VRAM the CPU can map, so it is
  // zeroed here rather than by a kernel (CLR zeroes it with __amd_rocclr_initHeap's
  // __ockl_dm_init_v1). No initial slabs: their fields' offsets differ between device-library
  // versions (Debian's 5.2.3 has none), and an all-zero heap is valid for every version.
  [[nodiscard]] result<std::uint64_t> try_device_heap() const {
    std::lock_guard lock(s_->mu);
    if (!s_->device_heap) {
      AQUEDUCT_TRY(auto bo, kfd::buffer<detail::file_type>::try_allocate(s_->sys->ref(), *s_->node, byte_count(device_heap_bytes),
                                                                          kfd::memory_use::device_host_visible));
      if (!bo.host()) return failure(errc::not_supported, "the device heap (hidden_heap_v1) has no CPU mapping to zero it through");
      std::memset(bo.host(), 0, device_heap_bytes);
      s_->device_heap.emplace(std::move(bo));
    }
    return s_->device_heap->va().value;
  }

  detail::keep_alive keep_;  // the system state, shared (an agent stays usable after its system)
  detail::agent_state* s_ = nullptr;
};

// An AQL queue of `gpu` (agent::make_queue(aq::aql, o); runtime/queue.hpp).
[[nodiscard]] inline result<queue> try_create_queue(const agent& gpu, aql_t, const queue_options& o) {
  detail::agent_state& a = gpu.state();
  if (o.slots < 16 || (o.slots & (o.slots - 1)) != 0 || o.slots > (1u << 20))
    return failure(errc::invalid_argument, "queue_options::slots must be a power of two in [16, 2^20] (KFD's 1 KiB minimum ring)");
  if (o.kernarg_bytes == 0 || o.kernarg_bytes % 64 != 0)
    return failure(errc::invalid_argument, "queue_options::kernarg_bytes must be a positive multiple of 64");
  struct traits {
    arch::family fam;
    std::string name;
  };
  // The one run-time branch on the architecture for this queue's lifetime (DESIGN.md §3).
  AQUEDUCT_TRY(auto t, arch::visit_family(gpu.gfx_target_version(),
                                          static_cast<std::uint32_t>(a.node->properties.simd_arrays_per_engine),
                                          [](auto target) -> traits {
                                            using T = decltype(target);
                                            static_assert(T::doorbell_bytes == 8,
                                                          "AQL queues ring a 64-bit doorbell (SOC15, spec/kfd.md §3)");
                                            return traits{T::fam, T::name()};
                                          }));
  namespace k = kfd;
  auto st = std::make_unique<detail::queue_state>();
  st->keep = detail::keep_system(a);
  st->agent = &a;
  st->opt = o;
  st->fam = t.fam;
  st->target_name = t.name;
  AQUEDUCT_TRY(auto* doorbells, detail::try_doorbells(a));
  k::queue_options ko;
  ko.kind = k::queue_kind::aql;
  ko.ring_size = byte_count(std::uint64_t{o.slots} * abi::aql_packet_size);
  ko.priority = o.priority;
  ko.rptr_offset = offsetof(abi::amd_queue, read_dispatch_id);
  ko.wptr_offset = offsetof(abi::amd_queue, write_dispatch_id);
  // As ROCr: the ring INVALID-filled and the amd_queue initialised BEFORE CREATE_QUEUE — the
  // device may start fetching as soon as the queue is mapped.
  const std::uint32_t ring_slots = static_cast<std::uint32_t>(ko.ring_size.value / abi::aql_packet_size);
  // One completion signal per slot (runtime/detail/aql_slots.hpp), in memory the device writes.
  AQUEDUCT_TRY(st->signal_memory, k::buffer<detail::file_type>::try_allocate(
                                      a.sys->ref(), *a.node, byte_count(std::uint64_t{ring_slots} * sizeof(abi::amd_signal)),
                                      k::memory_use::host));
  st->slots.attach(static_cast<abi::amd_signal*>(st->signal_memory.host()), ring_slots);
  AQUEDUCT_TRY(st->res, k::queue_resources<detail::file_type>::try_create(
                            a.sys->ref(), *a.node, *doorbells, ko, [&](k::buffer_ref ring, k::buffer_ref ptrs) {
                              st->desc = ptrs.as<abi::amd_queue>();
                              st->desc_va = ptrs.va.value;
                              // Claims are bounded by completion, not by the read index: a slot's
                              // kernargs and signal are reused only after its packet completed.
                              aqueduct::ring::aql_queue_memory m{st->desc, ring.as<abi::aql_slot>(), ring_slots};
                              m.reuse_bound = st->slots.free_word();
                              m.refresh = &detail::queue_state::refresh_slots;
                              m.refresh_context = st.get();
                              m.stopped = sync::stop_check(*st);  // a ring wait for room reports a stop
                              st->aql.emplace(m, queue_doorbell{}, true);
                            }));
  const std::uint32_t slots = st->res.ring_size() / static_cast<std::uint32_t>(abi::aql_packet_size);
  if (slots != ring_slots) return failure(errc::invalid_argument, "CREATE_QUEUE resized the AQL ring");
  AQUEDUCT_TRY(st->kernargs, k::buffer<detail::file_type>::try_allocate(
                                 a.sys->ref(), *a.node, byte_count(std::uint64_t{slots} * o.kernarg_bytes),
                                 k::memory_use::host));
  AQUEDUCT_TRY(st->event, a.sys->try_make_event(*a.node));
  auto* page = static_cast<std::byte*>(st->res.pointers().host);
  // The slots' signals ask for no interrupt; the wake signal does, and only a waiter about to
  // block puts it on a packet (queue::arm_wake).
  st->wake = reinterpret_cast<abi::amd_signal*>(page + queue::wake_signal_offset);
  sync::signal_ref::initialize(*st->wake, queue::wake_start, st->event.mailbox_va().value, st->event.id());
  st->port = kfd::queue_port_of(a.sys->driver.file(), st->res.queue_id());
  st->aql->get_doorbell() = queue_doorbell{static_cast<std::uint64_t*>(st->res.doorbell()), st->port};
  if (st->port && st->port->faulted())
    if (auto f = st->port->fault()) return *f;
  return queue(std::move(st));
}

}  // namespace aqueduct::runtime

// aqueduct/kfd/queue_resources.hpp — everything a KFD user-mode queue needs, and CREATE_QUEUE.
//
// Layer: kfd. `doorbell_pages<F>` maps the process doorbell slice of one GPU (both pages on
// SOC15: 8 KiB) once: a DOORBELL BO of exactly the slice size, CPU-mapped on the kfd fd, mapped
// to the GPU VM (spec/kfd.md §3). `queue_resources<F>` allocates, for an AQL compute, PM4 compute
// or SDMA queue: the ring, one page holding the read and write pointers, for compute queues the
// EOP buffer (the node's eop_buffer_size) and the CWSR area of exactly
// ALIGN((cwsr_size + debug_memory_size) * num_xcc, PAGE) with each XCC's 40-byte header filled
// (spec/kfd.md §1.3 item 9, §1.4), then calls CREATE_QUEUE with ctl_stack_size = the node's value
// and locates the doorbell from the returned doorbell_offset (mask = slice - 1, §3.2).
// Destruction: DESTROY_QUEUE first, then the buffers are unmapped and freed.
//
// Thread safety: values owned by one thread. The doorbell_pages must outlive its queues.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/kfd/driver.hpp>
#include <aqueduct/kfd/memory.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

namespace aqueduct::kfd {

// sdma_by_engine (KFD 1.17+): an SDMA queue on engine queue_options::sdma_engine_id, e.g. the
// source GPU's engine for a peer copy (DESIGN.md requirement 8).
enum class queue_kind { aql, pm4, sdma, sdma_xgmi, sdma_by_engine };

constexpr std::uint32_t kfd_queue_type(queue_kind k) noexcept {
  switch (k) {
    case queue_kind::aql: return abi::kfd::queue_type_compute_aql;
    case queue_kind::pm4: return abi::kfd::queue_type_compute;
    case queue_kind::sdma: return abi::kfd::queue_type_sdma;
    case queue_kind::sdma_xgmi: return abi::kfd::queue_type_sdma_xgmi;
    case queue_kind::sdma_by_engine: return abi::kfd::queue_type_sdma_by_eng_id;
  }
  return abi::kfd::queue_type_compute_aql;
}
constexpr bool is_compute(queue_kind k) noexcept { return k == queue_kind::aql || k == queue_kind::pm4; }
constexpr const char* to_string(queue_kind k) noexcept {
  switch (k) {
    case queue_kind::aql: return "AQL";
    case queue_kind::pm4: return "PM4";
    case queue_kind::sdma: return "SDMA";
    case queue_kind::sdma_xgmi: return "SDMA_XGMI";
    case queue_kind::sdma_by_engine: return "SDMA_BY_ENG_ID";
  }
  return "?";
}

// The doorbell slice of one GPU, mapped once per GPU and shared by all its queues.
template <device_file F>
class doorbell_pages {
 public:
  [[nodiscard]] static result<doorbell_pages> try_map(driver_ref<F> d, const node& gpu) {
    doorbell_pages p;
    p.doorbell_bytes_ = abi::kfd::doorbell_bytes_for(gpu.gfx_target_version());
    p.slice_ = abi::kfd::doorbell_slice_size(p.doorbell_bytes_);
    AQUEDUCT_TRY(p.bo_, buffer<F>::try_allocate(d, gpu, byte_count(p.slice_), memory_use::doorbell));
    return p;
  }
  [[nodiscard]] std::uint32_t doorbell_bytes() const noexcept { return doorbell_bytes_; }
  [[nodiscard]] std::uint64_t slice_size() const noexcept { return slice_; }
  [[nodiscard]] std::uint64_t pages() const noexcept { return slice_ / page_size; }
  [[nodiscard]] std::uint64_t mask() const noexcept { return slice_ - 1; }
  [[nodiscard]] void* host() const noexcept { return bo_.host(); }
  [[nodiscard]] gpu_va va() const noexcept { return bo_.va(); }
  [[nodiscard]] std::uint32_t gpu_id() const noexcept { return bo_.gpu_id(); }
  [[nodiscard]] std::uint64_t mmap_offset() const noexcept { return bo_.mmap_offset(); }
  [[nodiscard]] const buffer<F>& bo() const noexcept { return bo_; }

  // The doorbell of a queue: SOC15 base + (doorbell_offset & mask); pre-SOC15 base + queue_id*4.
  // errc::not_supported when the offset names another mapping than this slice.
  [[nodiscard]] result<void*> try_locate(std::uint64_t doorbell_offset, std::uint32_t queue_id) const {
    if ((doorbell_offset & ~mask()) != mmap_offset())
      return failure(errc::not_supported, "CREATE_QUEUE returned doorbell_offset 0x" + hex(doorbell_offset) +
                                              " outside this GPU's doorbell slice (mmap offset 0x" +
                                              hex(mmap_offset()) + ", mask 0x" + hex(mask()) + ")");
    const std::uint64_t in_slice = doorbell_bytes_ == 8 ? (doorbell_offset & mask()) : std::uint64_t{queue_id} * 4;
    if (in_slice + doorbell_bytes_ > slice_)
      return failure(errc::not_supported, "doorbell at byte " + std::to_string(in_slice) + " outside the slice");
    return static_cast<void*>(static_cast<char*>(host()) + in_slice);
  }

 private:
  static std::string hex(std::uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
    return b;
  }
  buffer<F> bo_;
  std::uint32_t doorbell_bytes_ = 8;
  std::uint64_t slice_ = 0;
};

struct queue_options {
  queue_kind kind = queue_kind::aql;
  byte_count ring_size{64 * 1024};  // power of two, >= 1024 (KFD clamps smaller rings up)
  std::uint32_t percentage = 100;   // low byte; bits 15:8 = pm4_target_xcc (spec §2.3)
  std::uint32_t priority = 7;       // 0..15 (libhsakmt's NORMAL = 7)
  std::uint32_t sdma_engine_id = 0; // queue_kind::sdma_by_engine only: < num_sdma_engines + xgmi engines
  // Where, in the pointer page, the read and write pointers live (the AQL layer puts amd_queue_t
  // there and passes its read/write_dispatch_id offsets).
  std::uint32_t rptr_offset = 0, wptr_offset = 64;
  // CWSR header fields for ROCr-style exception reporting (spec §1.4); 0 = none.
  std::uint64_t error_reason_address = 0;
  std::uint32_t error_event_id = 0;
  // Overrides, for tests and for kernels whose sizes differ from the node's: what to pass as
  // ctx_save_restore_size / ctl_stack_size, and a change to the CWSR allocation size in bytes.
  std::optional<std::uint32_t> ctx_save_restore_size, ctl_stack_size;
  std::int64_t cwsr_allocation_delta = 0;
};

// The resources and the KFD queue; move-only. Destroying it destroys the queue first.
template <device_file F>
class queue_resources {
 public:
  queue_resources() = default;
  queue_resources(queue_resources&& o) noexcept { swap(o); }
  queue_resources& operator=(queue_resources&& o) noexcept {
    if (this != &o) {
      reset();
      swap(o);
    }
    return *this;
  }
  queue_resources(const queue_resources&) = delete;
  queue_resources& operator=(const queue_resources&) = delete;
  ~queue_resources() { reset(); }

  // The queue priorities KFD accepts (KFD_MAX_QUEUE_PRIORITY in kfd_priv.h).
  static constexpr std::uint32_t max_queue_priority = 15;

  // CREATE_QUEUE's errnos that mean "no more queues" become errc::out_of_resources with what to
  // change (kfd_process_queue_manager.c pqm_create_queue: ENOSPC at the per-process limit of a
  // device; the emulator also gives EPERM at the device-wide limit and ENOMEM when no HQD / SDMA
  // queue is free). The errno stays in the text.
  [[nodiscard]] static failure explain_create_failure(const failure& f, const node& gpu) {
    std::string why;
    switch (f.os_errno()) {
      case ENOSPC:
        why = "this process has as many queues on gpu_id " + std::to_string(gpu.gpu_id) +
              " as KFD allows per process (the queue limit); destroy a queue before creating another";
        break;
      case EPERM:
        why = "gpu_id " + std::to_string(gpu.gpu_id) + " has as many queues as it allows (all processes); "
              "destroy a queue before creating another";
        break;
      case EBUSY:
        why = "no free doorbell for this process on gpu_id " + std::to_string(gpu.gpu_id) +
              " (allocate_doorbell); destroy a queue before creating another";
        break;
      case ENOMEM:
        why = "no free hardware queue slot (HQD or SDMA queue) on gpu_id " + std::to_string(gpu.gpu_id) +
              "; destroy a queue of this kind, or use another kind (an SDMA copy can fall back to a shader copy)";
        break;
      default:
        return f;
    }
    return failure(errc::out_of_resources, std::string(f.detail()) + ": " + why, f.os_errno());
  }

  [[nodiscard]] static result<queue_resources> try_create(driver_ref<F> d, const node& gpu,
                                                          const doorbell_pages<F>& doorbells,
                                                          const queue_options& opt) {
    return try_create(d, gpu, doorbells, opt, [](buffer_ref, buffer_ref) {});
  }
  // As above; `prepare(ring, pointers)` runs on the zeroed ring and pointer page before
  // CREATE_QUEUE — where userspace puts the queue in its initial state (an AQL ring INVALID-filled
  // and its amd_queue initialised, as ROCr does), since the device may start fetching at once.
  template <class Prepare>
  [[nodiscard]] static result<queue_resources> try_create(driver_ref<F> d, const node& gpu,
                                                          const doorbell_pages<F>& doorbells,
                                                          const queue_options& opt, Prepare&& prepare) {
    namespace k = abi::kfd;
    AQUEDUCT_ASSERT(doorbells.gpu_id() == gpu.gpu_id, "doorbell pages of another GPU");
    AQUEDUCT_ASSERT(opt.rptr_offset + 8 <= page_size && opt.wptr_offset + 8 <= page_size, "pointers in the page");
    if (opt.kind == queue_kind::sdma_by_engine && d.version() < create_queue_96_bytes_version)
      return failure(errc::not_supported, "SDMA queues by engine id need KFD ioctl 1.17; this kernel has " +
                                              std::to_string(d.version().major) + "." +
                                              std::to_string(d.version().minor));
    // What CREATE_QUEUE would refuse with a bare EINVAL, refused here with the field named
    // (kfd_chardev.c set_queue_properties_from_user: queue_priority > KFD_MAX_QUEUE_PRIORITY (15);
    // SDMA_BY_ENG_ID: an engine id past the node's PCIe + XGMI SDMA engines).
    if (opt.priority > max_queue_priority)
      return failure(errc::invalid_argument, "queue priority " + std::to_string(opt.priority) +
                                                 " is out of range: KFD takes 0.." + std::to_string(max_queue_priority) +
                                                 " (7 is normal)");
    if (opt.kind == queue_kind::sdma_by_engine) {
      const std::uint64_t engines = gpu.properties.num_sdma_engines + gpu.properties.num_sdma_xgmi_engines;
      if (opt.sdma_engine_id >= engines)
        return failure(errc::invalid_argument,
                       "SDMA engine_id " + std::to_string(opt.sdma_engine_id) + " does not exist on gpu_id " +
                           std::to_string(gpu.gpu_id) + ": it has " + std::to_string(gpu.properties.num_sdma_engines) +
                           " PCIe + " + std::to_string(gpu.properties.num_sdma_xgmi_engines) +
                           " XGMI SDMA engines (ids 0.." + std::to_string(engines == 0 ? 0 : engines - 1) + ")");
    }
    queue_resources q;
    q.d_ = d;
    q.kind_ = opt.kind;
    q.gpu_id_ = gpu.gpu_id;
    AQUEDUCT_TRY(q.ring_, buffer<F>::try_allocate(d, gpu, opt.ring_size, memory_use::queue));
    AQUEDUCT_TRY(q.pointers_, buffer<F>::try_allocate(d, gpu, byte_count(page_size), memory_use::queue));
    std::memset(q.ring_.host(), 0, q.ring_.size().value);
    std::memset(q.pointers_.host(), 0, page_size);

    k::create_queue_args a{};
    a.ring_base_address = q.ring_.va().value;
    a.ring_size = static_cast<std::uint32_t>(opt.ring_size.value);
    a.read_pointer_address = q.pointers_.va().value + opt.rptr_offset;
    a.write_pointer_address = q.pointers_.va().value + opt.wptr_offset;
    a.gpu_id = gpu.gpu_id;
    a.queue_type = kfd_queue_type(opt.kind);
    a.queue_percentage = opt.percentage;
    a.queue_priority = opt.priority;
    a.sdma_engine_id = opt.kind == queue_kind::sdma_by_engine ? opt.sdma_engine_id : 0;

    if (is_compute(opt.kind)) {
      const node_cwsr c = gpu.cwsr();
      q.cwsr_info_ = c;
      if (c.eop_buffer_size) {
        AQUEDUCT_TRY(q.eop_, buffer<F>::try_allocate(d, gpu, byte_count(c.eop_buffer_size), memory_use::eop));
        a.eop_buffer_address = q.eop_.va().value;
        a.eop_buffer_size = c.eop_buffer_size;
      }
      const std::uint32_t ctx = opt.ctx_save_restore_size.value_or(c.cwsr_size);
      const std::uint32_t ctl = opt.ctl_stack_size.value_or(c.ctl_stack_size);
      if (ctx != 0) {
        const auto total = static_cast<std::int64_t>(arch::cwsr_total_allocation(ctx, c.debug_memory_size, c.num_xcc)) +
                           opt.cwsr_allocation_delta;
        AQUEDUCT_ASSERT(total > 0, "CWSR allocation size");
        AQUEDUCT_TRY(q.cwsr_, buffer<F>::try_allocate(d, gpu, byte_count(static_cast<std::uint64_t>(total)),
                                                      memory_use::cwsr));
        fill_cwsr_headers(q.cwsr_.host(), ctx, c.debug_memory_size, c.num_xcc, opt);
        a.ctx_save_restore_address = q.cwsr_.va().value;
      }
      a.ctx_save_restore_size = ctx;
      a.ctl_stack_size = ctl;
    }

    prepare(q.ring_.ref(), q.pointers_.ref());
    const std::string ctx_text = std::string(to_string(opt.kind)) + " queue on gpu_id " + std::to_string(gpu.gpu_id) +
                                 ", ring " + std::to_string(opt.ring_size.value) + " bytes";
    if (auto r = d.try_ioctl(create_queue_request(d), &a, ctx_text); !r) return explain_create_failure(r.get_failure(), gpu);
    q.queue_id_ = a.queue_id;
    q.created_ = true;
    q.doorbell_offset_ = a.doorbell_offset;
    q.ring_size_ = a.ring_size;
    AQUEDUCT_TRY(q.doorbell_, doorbells.try_locate(a.doorbell_offset, a.queue_id));
    return q;
  }

  // Fills each XCC's user context-save header as libhsakmt does (spec/kfd.md §1.4): the debug
  // area follows the num_xcc save areas, so XCC i's DebugOffset is (num_xcc - i) * ctx_size.
  static void fill_cwsr_headers(void* base, std::uint32_t ctx_size, std::uint32_t debug_memory_size,
                                std::uint32_t num_xcc, const queue_options& opt) noexcept {
    for (std::uint32_t i = 0; i < num_xcc; ++i) {
      abi::kfd::user_context_save_area_header h{};
      h.debug_offset = (num_xcc - i) * ctx_size;
      h.debug_size = debug_memory_size * num_xcc;
      h.err_payload_addr = opt.error_reason_address;
      h.err_event_id = opt.error_event_id;
      std::memcpy(static_cast<char*>(base) + std::uint64_t{i} * ctx_size, &h, sizeof h);
    }
  }

  [[nodiscard]] std::uint32_t queue_id() const noexcept { return queue_id_; }
  [[nodiscard]] queue_kind kind() const noexcept { return kind_; }
  [[nodiscard]] std::uint32_t gpu_id() const noexcept { return gpu_id_; }
  [[nodiscard]] std::uint64_t doorbell_offset() const noexcept { return doorbell_offset_; }
  [[nodiscard]] void* doorbell() const noexcept { return doorbell_; }
  [[nodiscard]] std::uint32_t ring_size() const noexcept { return ring_size_; }  // after the kernel's clamp
  [[nodiscard]] buffer_ref ring() const noexcept { return ring_.ref(); }
  [[nodiscard]] buffer_ref pointers() const noexcept { return pointers_.ref(); }
  [[nodiscard]] buffer_ref eop() const noexcept { return eop_.ref(); }
  [[nodiscard]] buffer_ref cwsr() const noexcept { return cwsr_.ref(); }
  [[nodiscard]] const node_cwsr& cwsr_sizes() const noexcept { return cwsr_info_; }
  [[nodiscard]] explicit operator bool() const noexcept { return created_; }

  // DESTROY_QUEUE, then the buffers (CWSR, EOP, pointers, ring). try_destroy reports errors.
  [[nodiscard]] result<void> try_destroy() noexcept {
    result<void> r = ok();
    if (created_) {
      abi::kfd::destroy_queue_args a{queue_id_, 0};
      r = d_.try_ioctl(abi::kfd::amdkfd_ioc_destroy_queue, &a, "queue_id " + std::to_string(queue_id_));
      created_ = false;
    }
    for (buffer<F>* b : {&cwsr_, &eop_, &pointers_, &ring_}) {
      auto rb = b->try_release();
      if (!rb && r) r = std::move(rb);
    }
    doorbell_ = nullptr;
    return r;
  }
  void reset() noexcept { (void)try_destroy(); }

 private:
  void swap(queue_resources& o) noexcept {
    std::swap(d_, o.d_);
    std::swap(kind_, o.kind_);
    std::swap(gpu_id_, o.gpu_id_);
    std::swap(queue_id_, o.queue_id_);
    std::swap(created_, o.created_);
    std::swap(doorbell_offset_, o.doorbell_offset_);
    std::swap(doorbell_, o.doorbell_);
    std::swap(ring_size_, o.ring_size_);
    std::swap(ring_, o.ring_);
    std::swap(pointers_, o.pointers_);
    std::swap(eop_, o.eop_);
    std::swap(cwsr_, o.cwsr_);
    std::swap(cwsr_info_, o.cwsr_info_);
  }

  driver_ref<F> d_{};
  queue_kind kind_ = queue_kind::aql;
  std::uint32_t gpu_id_ = 0, queue_id_ = 0;
  bool created_ = false;
  std::uint64_t doorbell_offset_ = 0;
  void* doorbell_ = nullptr;
  std::uint32_t ring_size_ = 0;
  buffer<F> ring_, pointers_, eop_, cwsr_;
  node_cwsr cwsr_info_{};
};

}  // namespace aqueduct::kfd

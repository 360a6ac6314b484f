// aqueduct/runtime/copy.hpp — copies: which engine moves the bytes (SDMA, else a shader copy),
// and peer mappings for copies between GPUs (DESIGN.md requirement 8).
//
// Layer: runtime. `copy_engine::try_create(agent)` takes an SDMA queue of that agent when one can
// be had (runtime/sdma_queue.hpp). When CREATE_QUEUE finds no free SDMA queue (ENOMEM, spec/kfd.md
// §2.6; the emulator's machine_config::sdma_queues_per_engine knob makes that happen early) or the
// process queue limit is hit, it falls back to a shader copy: a copy kernel dispatched on an AQL
// compute queue of the same agent (runtime/shader_copy.hpp: the agent's copy and fill kernels,
// loaded once). On the emulator those are host kernels (each workgroup moves one
// `shader_chunk_bytes` chunk through checked accesses, so an unmapped address faults the dispatch
// with errc::device_fault); on a real GPU no copy kernel ships yet and the fallback reports
// errc::not_supported.
// Copies between GPUs run on the SOURCE GPU's engine after the destination is mapped to the
// source GPU too: `peer_mapping::try_map(buffer, {source agent})` issues MAP_MEMORY_TO_GPU with
// the buffer's own GPU and the peer (the owner's mapping is already there; the kernel and the
// emulator skip it) and unmaps the peer again when destroyed. A queue that touches memory mapped
// only to another GPU faults (emulator: errc::device_fault with the address).
// `copier` does all of it for any two buffers of a system (source GPU's engine, peer mapping).
// Copies here are synchronous (submit, then wait); the SDMA queue itself also takes asynchronous
// work (sdma_queue::try_copy returns a sequence number).
// Thread safety: a copy_engine is used by one thread at a time; peer_mapping is a value.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/runtime/agent.hpp>
#include <aqueduct/runtime/kernel.hpp>
#include <aqueduct/runtime/memory.hpp>
#include <aqueduct/runtime/queue.hpp>
#include <aqueduct/runtime/queue_kind.hpp>
#include <aqueduct/runtime/sdma_queue.hpp>
#include <aqueduct/runtime/shader_copy.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace aqueduct::runtime {

enum class copy_method : std::uint8_t { sdma, shader };
[[nodiscard]] constexpr const char* to_string(copy_method m) noexcept { return m == copy_method::sdma ? "SDMA" : "shader"; }

struct copy_options {
  bool use_sdma = true;  // false: always the shader copy
  sdma_queue_options sdma{};
  std::uint32_t shader_queue_slots = 64;
  std::uint64_t shader_chunk_bytes = 1u << 20;  // bytes per workgroup of the copy kernel
  sync::nanoseconds timeout = std::chrono::seconds(60);
};

class copy_engine {
 public:
  copy_engine() = default;
  copy_engine(copy_engine&&) noexcept = default;
  copy_engine& operator=(copy_engine&&) noexcept = default;

  [[nodiscard]] static result<copy_engine> try_create(const agent& gpu, const copy_options& o = {}) {
    if (o.shader_chunk_bytes == 0)
      return failure(errc::invalid_argument, "copy_options::shader_chunk_bytes must be at least 1 (bytes per workgroup of the shader copy)");
    copy_engine e;
    e.gpu_ = gpu;
    e.opt_ = o;
    if (o.use_sdma) {
      auto q = gpu.try_make_queue(runtime::sdma, o.sdma);
      if (q) {
        e.sdma_ = std::move(*q);
        return e;
      }
      if (!(q.get_failure() == errc::out_of_resources)) return std::move(q).get_failure();
      e.why_shader_ = std::string(q.detail());
    } else {
      e.why_shader_ = "SDMA not requested (copy_options::use_sdma = false)";
    }
    AQUEDUCT_TRY_VOID(e.try_make_shader_path());
    return e;
  }
  [[nodiscard]] static copy_engine create(const agent& gpu, const copy_options& o = {}) { return try_create(gpu, o).value(); }

  [[nodiscard]] copy_method method() const noexcept { return sdma_ ? copy_method::sdma : copy_method::shader; }
  // Why the shader copy is used (CREATE_QUEUE's answer), empty with SDMA.
  [[nodiscard]] const std::string& fallback_reason() const noexcept { return why_shader_; }
  [[nodiscard]] const agent& gpu() const noexcept { return gpu_; }
  [[nodiscard]] sdma_queue* sdma() noexcept { return sdma_ ? &*sdma_ : nullptr; }
  [[nodiscard]] runtime::queue* shader_queue() noexcept { return shader_ ? &*shader_ : nullptr; }

  // Copies `bytes` from src to dst, both mapped to this engine's GPU, and waits for it.
  // Overlapping ranges are errc::invalid_argument: neither path behaves like memmove (docs/copies.md).
  [[nodiscard]] result<void> try_copy(gpu_va dst, gpu_va src, std::uint64_t bytes) {
    if (bytes == 0) return ok();
    AQUEDUCT_TRY_VOID(try_check_disjoint(dst, src, bytes));
    if (sdma_) {
      AQUEDUCT_TRY(auto seq, sdma_->try_copy(dst, src, bytes, opt_.timeout));
      return sdma_->try_wait(seq, opt_.timeout);
    }
    AQUEDUCT_TRY(const grid g, try_shader_grid(bytes, opt_.shader_chunk_bytes));
    dispatch_options d;
    d.timeout = opt_.timeout;
    AQUEDUCT_TRY(auto idx, shader_->try_dispatch_with(d, kernels_->copy, g, block{shader_copy_block}, device_ptr<void>::at(dst),
                                                      device_ptr<const void>::at(src), bytes, opt_.shader_chunk_bytes));
    return shader_->try_wait(idx, opt_.timeout);
  }
  template <class T>
  [[nodiscard]] result<void> try_copy(const buffer<T>& dst, const buffer<T>& src) {
    if (dst.size() < src.size())
      return failure(errc::invalid_argument, "copy: destination holds " + std::to_string(dst.size()) + " elements, source " +
                                                 std::to_string(src.size()));
    return try_copy(dst.va(), src.va(), src.size_bytes());
  }
  // A dword fill (`dst` and `bytes` dword multiples): CONSTANT_FILL on SDMA, else the fill kernel.
  [[nodiscard]] result<void> try_fill(gpu_va dst, std::uint32_t value, std::uint64_t bytes) {
    if (sdma_) {
      AQUEDUCT_TRY(auto seq, sdma_->try_fill(dst, value, bytes, opt_.timeout));
      return sdma_->try_wait(seq, opt_.timeout);
    }
    if (!dst.aligned(4) || bytes % 4) return failure(errc::invalid_argument, "fill: address and length must be dword multiples");
    if (bytes == 0) return ok();
    const std::uint64_t chunk = std::max<std::uint64_t>(opt_.shader_chunk_bytes / 4 * 4, 4);  // whole dwords per workgroup
    AQUEDUCT_TRY(const grid g, try_shader_grid(bytes, chunk));
    dispatch_options d;
    d.timeout = opt_.timeout;
    AQUEDUCT_TRY(auto idx, shader_->try_dispatch_with(d, kernels_->fill, g, block{shader_copy_block}, device_ptr<void>::at(dst), bytes,
                                                      chunk, value));
    return shader_->try_wait(idx, opt_.timeout);
  }

 private:
  result<void> try_make_shader_path() {
    auto k = try_shader_kernels(gpu_);
    if (!k)
      return failure(k.get_failure().code(),
                     "no SDMA queue on " + gpu_.gfx_name() + " (" + why_shader_ + ") and no shader copy to fall back to: " + std::string(k.detail()));
    kernels_ = *k;
    queue_options qo;
    qo.slots = opt_.shader_queue_slots;
    AQUEDUCT_TRY(auto q, gpu_.try_make_queue(aql, qo));
    shader_.emplace(std::move(q));
    return ok();
  }

  agent gpu_{};
  copy_options opt_{};
  std::optional<sdma_queue> sdma_;
  std::string why_shader_;
  const shader_kernels* kernels_ = nullptr;  // the agent's (runtime/shader_copy.hpp)
  std::optional<runtime::queue> shader_;  // declared last: destroyed (drained) first
};

// A buffer mapped to more GPUs than its own; the extra mappings end with this value.
class peer_mapping {
 public:
  peer_mapping() = default;
  peer_mapping(peer_mapping&& o) noexcept
      : keep_(std::move(o.keep_)), d_(o.d_), handle_(o.handle_), peers_(std::move(o.peers_)) { o.peers_.clear(); }
  peer_mapping& operator=(peer_mapping&& o) noexcept {
    if (this != &o) {
      reset();
      keep_ = std::move(o.keep_);
      d_ = o.d_;
      handle_ = o.handle_;
      peers_ = std::move(o.peers_);
      o.peers_.clear();
    }
    return *this;
  }
  ~peer_mapping() { reset(); }

  // MAP_MEMORY_TO_GPU of `bo` with device ids {its own GPU, each peer}.
  [[nodiscard]] static result<peer_mapping> try_map(const kfd::buffer<any_device_file>& bo, std::span<const agent> peers) {
    if (peers.empty()) return failure(errc::invalid_argument, "peer_mapping: no peer named");
    peer_mapping m;
    m.keep_ = detail::keep_system(peers.front().state());  // the driver stays while mapped
    m.d_ = peers.front().state().sys->ref();
    m.handle_ = bo.handle();
    std::vector<std::uint32_t> ids{bo.gpu_id()};
    for (const agent& a : peers)
      if (a.gpu_id() != bo.gpu_id()) ids.push_back(a.gpu_id());
    abi::kfd::map_memory_to_gpu_args a{};
    a.handle = bo.handle();
    a.device_ids_array_ptr = reinterpret_cast<std::uint64_t>(ids.data());
    a.n_devices = static_cast<std::uint32_t>(ids.size());
    AQUEDUCT_TRY_VOID(m.d_.try_ioctl(abi::kfd::amdkfd_ioc_map_memory_to_gpu, &a,
                                     "peer mapping of a buffer of gpu_id " + std::to_string(bo.gpu_id())));
    if (a.n_success != a.n_devices)
      return failure(errc::ioctl_failed, "AMDKFD_IOC_MAP_MEMORY_TO_GPU mapped " + std::to_string(a.n_success) + " of " +
                                             std::to_string(a.n_devices) + " devices");
    m.peers_.assign(ids.begin() + 1, ids.end());
    return m;
  }
  template <class T>
  [[nodiscard]] static result<peer_mapping> try_map(const buffer<T>& b, std::span<const agent> peers) {
    return try_map(b.bo(), peers);
  }
  template <class T>
  [[nodiscard]] static result<peer_mapping> try_map(const buffer<T>& b, const agent& peer) {
    return try_map(b.bo(), std::span<const agent>(&peer, 1));
  }

  [[nodiscard]] const std::vector<std::uint32_t>& peers() const noexcept { return peers_; }
  // UNMAP_MEMORY_FROM_GPU for the peers only (the owner's mapping belongs to the buffer).
  [[nodiscard]] result<void> try_unmap() noexcept {
    if (peers_.empty()) return ok();
    abi::kfd::unmap_memory_from_gpu_args u{};
    u.handle = handle_;
    u.device_ids_array_ptr = reinterpret_cast<std::uint64_t>(peers_.data());
    u.n_devices = static_cast<std::uint32_t>(peers_.size());
    auto r = d_.try_ioctl(abi::kfd::amdkfd_ioc_unmap_memory_from_gpu, &u, "peer unmapping");
    peers_.clear();
    return r;
  }
  void reset() noexcept { (void)try_unmap(); }

 private:
  detail::keep_alive keep_;  // the system (declared first: released after the unmap)
  kfd::driver_ref<any_device_file> d_{};
  std::uint64_t handle_ = 0;
  std::vector<std::uint32_t> peers_;
};

// Copies `src` (on the engine's GPU, or mapped to it) into `dst` on another GPU: maps `dst` to the
// source GPU for the copy and runs it on the source GPU's engine (DESIGN.md requirement 8).
template <class T>
[[nodiscard]] result<void> try_copy_to_peer(copy_engine& source_engine, const buffer<T>& dst, const buffer<T>& src) {
  AQUEDUCT_TRY(auto m, peer_mapping::try_map(dst, source_engine.gpu()));
  return source_engine.try_copy(dst, src);
}

// Copies between any two buffers of a system: picks the SOURCE buffer's GPU, makes that agent's
// copy_engine on first use, and maps the destination to it for the copy when it lives on another
// GPU (host memory counts as the GPU it was allocated on). One thread at a time.
class copier {
 public:
  explicit copier(std::span<const agent> agents, copy_options o = {}) : agents_(agents.begin(), agents.end()), opt_(std::move(o)) {
    engines_.resize(agents_.size());
  }

  template <class T>
  [[nodiscard]] result<void> try_copy(const buffer<T>& dst, const buffer<T>& src) {
    AQUEDUCT_TRY(copy_engine * e, try_engine_for(src.bo().gpu_id()));
    if (dst.bo().gpu_id() == e->gpu().gpu_id()) return e->try_copy(dst, src);
    return try_copy_to_peer(*e, dst, src);
  }
  // The engine of the agent with this gpu_id (made on first use).
  [[nodiscard]] result<copy_engine*> try_engine_for(std::uint32_t gpu_id) {
    for (std::size_t i = 0; i < agents_.size(); ++i) {
      if (agents_[i].gpu_id() != gpu_id) continue;
      if (!engines_[i]) {
        AQUEDUCT_TRY(auto e, copy_engine::try_create(agents_[i], opt_));
        engines_[i].emplace(std::move(e));
      }
      return &*engines_[i];
    }
    return failure(errc::not_found, "no agent with gpu_id " + std::to_string(gpu_id) + " in this copier");
  }

 private:
  std::vector<agent> agents_;
  copy_options opt_;
  std::vector<std::optional<copy_engine>> engines_;
};

}  // namespace aqueduct::runtime

// aqueduct/graph/saved_graph.hpp — what a saved graph (graph/save.hpp) refers to outside itself:
// `saved_graph_info`, the file's tables (GPUs, queues, kernels, named buffers, host labels), and
// `load_context`, what a load is given for them; the format's magic and version.
//
// Layer: graph. Values only; the writer and reader are graph/detail/graph_saver.hpp and
// graph/detail/graph_loader.hpp, the API graph/save.hpp.
// Thread safety: values.
#pragma once

#include <aqueduct/graph/ops.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/runtime/kernel.hpp>
#include <aqueduct/runtime/memory.hpp>
#include <aqueduct/runtime/pm4_queue.hpp>
#include <aqueduct/runtime/queue.hpp>
#include <aqueduct/runtime/sdma_queue.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace aqueduct::graph {

inline constexpr char saved_graph_magic[8] = {'A', 'Q', 'D', 'G', 'R', 'A', 'P', 'H'};
inline constexpr std::uint32_t saved_graph_version = 1;

// What a saved graph refers to outside itself, as the file lists it: what a load must be given.
struct saved_graph_info {
  struct gpu {
    std::string processor;    // the agent's gfx name at save ("gfx1100")
    std::uint32_t gpu_id = 0;  // at save (informative)
  };
  struct queue {
    queue_type type = queue_type::none;
    std::uint32_t gpu = 0;  // index in gpus
  };
  struct kernel {
    std::string name, processor;  // processor: the code object's ("gfx1100"), or "emulated"
    std::uint64_t digest = 0;      // code::loaded_kernel::code_digest
    std::uint32_t kernarg_size = 0;
  };
  struct buffer {
    std::string name;
    std::uint64_t bytes = 0;
    std::uint32_t gpu = 0;  // index in gpus
  };
  std::uint32_t version = 0;
  std::vector<gpu> gpus;
  std::vector<queue> queues;
  std::vector<kernel> kernels;
  std::vector<buffer> buffers;
  std::vector<std::string> host_labels;
  std::uint64_t nodes = 0;  // in all scopes (child graphs and bodies counted)
  // A few lines a person reads: what to give a load_context, in order.
  [[nodiscard]] std::string describe() const;
};

// What a load is given (see the header comment). Queues in the file's order.
class load_context {
 public:
  template <class Q>
    requires std::same_as<Q, runtime::queue> || std::same_as<Q, runtime::pm4_queue> || std::same_as<Q, runtime::sdma_queue>
  load_context& queue(Q& q) {
    queues_.push_back(detail::binding_of(q));
    return *this;
  }
  load_context& code(const runtime::executable& e) {
    code_.push_back(&e);
    return *this;
  }
  template <class T>
  load_context& buffer(std::string name, const runtime::buffer<T>& b) {
    return buffer_range(std::move(name), b.va(), b.size_bytes(), b ? b.bo().gpu_id() : 0);
  }
  load_context& buffer_range(std::string name, gpu_va va, std::uint64_t bytes, std::uint32_t gpu_id) {
    buffers_.push_back(named{std::move(name), va, bytes, gpu_id});
    return *this;
  }
  load_context& host(std::string label, std::function<void()> fn) {
    host_.emplace_back(std::move(label), std::move(fn));
    return *this;
  }

  struct named {
    std::string name;
    gpu_va va{};
    std::uint64_t bytes = 0;
    std::uint32_t gpu_id = 0;
  };
  [[nodiscard]] const std::vector<queue_binding>& queues() const noexcept { return queues_; }
  [[nodiscard]] const std::vector<const runtime::executable*>& executables() const noexcept { return code_; }
  [[nodiscard]] const std::vector<named>& buffers() const noexcept { return buffers_; }
  [[nodiscard]] const std::vector<std::pair<std::string, std::function<void()>>>& hosts() const noexcept { return host_; }

 private:
  std::vector<queue_binding> queues_;
  std::vector<const runtime::executable*> code_;
  std::vector<named> buffers_;
  std::vector<std::pair<std::string, std::function<void()>>> host_;
};

using executables = std::vector<const runtime::executable*>;

inline std::string saved_graph_info::describe() const {
  std::string s = "a saved graph (format " + std::to_string(version) + ") of " + std::to_string(nodes) + " nodes; it needs:\n";
  for (std::size_t i = 0; i < queues.size(); ++i)
    s += "  queue " + std::to_string(i) + ": " + to_string(queues[i].type) + " on a " + gpus[queues[i].gpu].processor + " GPU (saved GPU " +
         std::to_string(queues[i].gpu) + ")\n";
  for (const kernel& k : kernels) s += "  kernel '" + k.name + "' (" + k.processor + ")\n";
  for (const buffer& b : buffers) s += "  buffer '" + b.name + "' of at least " + std::to_string(b.bytes) + " bytes\n";
  for (const std::string& h : host_labels) s += "  host function \"" + h + "\"\n";
  return s;
}

namespace detail {
enum class saved_address : std::uint8_t { literal = 0, buffer = 1, allocation = 2 };
inline constexpr std::uint32_t saved_max_depth = 64;  // child graphs and bodies, nested
}  // namespace detail

}  // namespace aqueduct::graph

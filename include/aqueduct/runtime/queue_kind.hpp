// aqueduct/runtime/queue_kind.hpp — the three kinds of runtime queue as tag types (`aq::aql`,
// `aq::pm4`, `aq::sdma`) and the completion ticket each kind hands out.
//
// Layer: runtime. One factory spelling makes every kind: `gpu.make_queue(aq::pm4, options)`; the
// tag's type picks the queue type and its options type, so the returned queue's type differs per
// kind (agent.hpp). A `ticket<Kind>` is what a submission returns and a wait takes: an AQL
// ticket (packet index) is a different type from a PM4 or SDMA one (sequence number), so a
// ticket cannot be waited on a queue of another kind (compile error), and it names the queue
// that issued it, so a ticket of another queue of the same kind is refused at the wait (run-time
// error naming both queues) instead of waiting for an unrelated packet.
// Thread safety: tags and tickets are values.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>

namespace aqueduct::runtime {

struct queue_options;
struct pm4_queue_options;
struct sdma_queue_options;
class queue;
class pm4_queue;
class sdma_queue;

// AQL compute queue (KFD queue_type 2): runtime::queue, options queue_options.
struct aql_t {
  explicit constexpr aql_t() = default;
  using queue_type = queue;
  using options_type = queue_options;
  static constexpr const char* name = "AQL";
};
// PM4 compute queue (KFD queue_type 0): runtime::pm4_queue, options pm4_queue_options.
struct pm4_t {
  explicit constexpr pm4_t() = default;
  using queue_type = pm4_queue;
  using options_type = pm4_queue_options;
  static constexpr const char* name = "PM4";
};
// SDMA queue (KFD queue_type 1 or 3): runtime::sdma_queue, options sdma_queue_options.
struct sdma_t {
  explicit constexpr sdma_t() = default;
  using queue_type = sdma_queue;
  using options_type = sdma_queue_options;
  static constexpr const char* name = "SDMA";
};
inline constexpr aql_t aql{};
inline constexpr pm4_t pm4{};
inline constexpr sdma_t sdma{};

template <class K>
concept queue_kind = std::same_as<K, aql_t> || std::same_as<K, pm4_t> || std::same_as<K, sdma_t>;

namespace detail {
// Only queues mint tickets.
struct ticket_key {
  explicit constexpr ticket_key() = default;
};
}  // namespace detail

// The completion of one submission to one queue of kind `Kind`. value(): the AQL packet index,
// or the PM4 / SDMA sequence number. A default ticket belongs to no queue (waiting on it is an
// error).
template <queue_kind Kind>
class ticket {
 public:
  constexpr ticket() noexcept = default;
  constexpr ticket(detail::ticket_key, const void* owner, std::uint32_t queue_id, std::uint64_t value) noexcept
      : owner_(owner), queue_id_(queue_id), value_(value) {}

  [[nodiscard]] constexpr std::uint64_t value() const noexcept { return value_; }
  [[nodiscard]] constexpr std::uint32_t queue_id() const noexcept { return queue_id_; }
  // The issuing queue's identity (its state's address; compared, never dereferenced).
  [[nodiscard]] constexpr const void* owner() const noexcept { return owner_; }
  [[nodiscard]] constexpr bool issued_by(const void* queue_state) const noexcept {
    return owner_ != nullptr && owner_ == queue_state;
  }
  [[nodiscard]] explicit constexpr operator bool() const noexcept { return owner_ != nullptr; }
  friend constexpr bool operator==(const ticket&, const ticket&) noexcept = default;

  // Why a queue refuses this ticket: "a ticket of PM4 queue 3 (sequence 17) waited on PM4 queue 4".
  [[nodiscard]] std::string mismatch(std::uint32_t waiting_queue_id) const {
    if (!owner_) return std::string("an empty ") + Kind::name + " ticket (issued by no queue) waited on " + Kind::name +
                        " queue " + std::to_string(waiting_queue_id);
    return std::string("a ticket of ") + Kind::name + " queue " + std::to_string(queue_id_) + " (" +
           (std::same_as<Kind, aql_t> ? "packet " : "sequence ") + std::to_string(value_) + ") waited on " + Kind::name +
           " queue " + std::to_string(waiting_queue_id) + ": wait on the queue that issued it";
  }

 private:
  const void* owner_ = nullptr;
  std::uint32_t queue_id_ = 0;
  std::uint64_t value_ = 0;
};

using aql_ticket = ticket<aql_t>;
using pm4_ticket = ticket<pm4_t>;
using sdma_ticket = ticket<sdma_t>;

}  // namespace aqueduct::runtime

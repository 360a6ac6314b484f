// aqueduct/emu/detail/decoded.hpp — what an engine's decoder returns: a packet's fields, or why the
// engine refuses the packet.
//
// Layer: emu (detail, not API). A `reject` is the engine fault, a reason a person can act on, and
// the address at fault when there is one; the engine stops its queue with it (engine_error). The
// PM4 decoder (pm4_decoder.hpp), the PM4 dispatch planner (pm4_dispatch.hpp) and the AQL dispatch
// planner (aql_dispatch.hpp) return `decoded<T>`.
// Thread safety: plain values.
#pragma once

#include <aqueduct/emu/engine_error.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

namespace aqueduct::emu::detail {

struct reject {
  engine_fault fault = engine_fault::none;
  std::string why;
  std::uint64_t address = 0;
};

template <class T>
class decoded {
 public:
  decoded(T v) noexcept : v_(std::move(v)) {}             // NOLINT: implicit by design
  decoded(reject r) noexcept : r_(std::move(r)) {}        // NOLINT
  [[nodiscard]] explicit operator bool() const noexcept { return r_.fault == engine_fault::none; }
  [[nodiscard]] const T& operator*() const noexcept { return v_; }
  [[nodiscard]] T& operator*() noexcept { return v_; }
  [[nodiscard]] const T* operator->() const noexcept { return &v_; }
  [[nodiscard]] const reject& why() const noexcept { return r_; }

 private:
  T v_{};
  reject r_{};
};

[[nodiscard]] inline reject refuse(engine_fault f, std::string why, std::uint64_t address = 0) {
  return reject{f, std::move(why), address};
}
[[nodiscard]] inline std::string hex_string(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%llX", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace aqueduct::emu::detail

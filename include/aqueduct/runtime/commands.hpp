// aqueduct/runtime/commands.hpp — `command_buffer`: PM4 or SDMA packets built ahead of time (by
// pm4_queue::encode_* / sdma_queue::encode_*) and submitted later, as they are, with one
// submission (pm4_queue::try_submit / sdma_queue::try_submit).
//
// Layer: runtime. Graph replay (graph/) prebuilds each queue's part of a graph once and copies it
// at every replay. The buffer remembers where each packet ends, so an SDMA submission can keep
// packets whole across the end of the ring (an SDMA packet must not straddle it) and a fault can
// be mapped back to the packet the engine stopped in.
// Thread safety: a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace aqueduct::runtime {

class command_buffer {
 public:
  // Room for one packet of `dwords` dwords at the end (to be filled by an encoder).
  [[nodiscard]] std::span<std::uint32_t> append(std::size_t dwords) {
    const std::size_t at = dwords_.size();
    dwords_.resize(at + dwords);
    ends_.push_back(static_cast<std::uint32_t>(dwords_.size()));
    return {dwords_.data() + at, dwords};
  }
  // Gives back the unused tail of the last packet (an encoder wrote fewer dwords than reserved).
  void shrink_last(std::size_t used) {
    const std::size_t begin = ends_.size() > 1 ? ends_[ends_.size() - 2] : 0;
    dwords_.resize(begin + used);
    ends_.back() = static_cast<std::uint32_t>(dwords_.size());
  }
  void clear() noexcept {
    dwords_.clear();
    ends_.clear();
  }
  [[nodiscard]] std::span<const std::uint32_t> dwords() const noexcept { return dwords_; }
  [[nodiscard]] std::size_t size() const noexcept { return dwords_.size(); }
  [[nodiscard]] std::size_t packets() const noexcept { return ends_.size(); }
  [[nodiscard]] bool empty() const noexcept { return dwords_.empty(); }
  // Packet i is [packet_begin(i), packet_end(i)).
  [[nodiscard]] std::size_t packet_begin(std::size_t i) const noexcept { return i ? ends_[i - 1] : 0; }
  [[nodiscard]] std::size_t packet_end(std::size_t i) const noexcept { return ends_[i]; }
  // The packet that holds dword `at` (packets() if none).
  [[nodiscard]] std::size_t packet_at(std::size_t at) const noexcept {
    std::size_t i = 0;
    while (i < ends_.size() && ends_[i] <= at) ++i;
    return i;
  }

 private:
  std::vector<std::uint32_t> dwords_;
  std::vector<std::uint32_t> ends_;
};

}  // namespace aqueduct::runtime

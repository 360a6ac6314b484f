// aqueduct/core/queue_port.hpp — `queue_port`: what an in-process device offers for one user-mode
// queue it runs — the doorbell store it cannot observe, and why the queue stopped.
//
// Layer: core. Lives here (not in kfd/ or emu/) because the emulated device implements it and the
// runtime uses it through kfd::device_file's optional `queue_port(queue_id)` hook, and kfd/ and
// emu/ never include each other (as core/mapping.hpp). On /dev/kfd there is no port: the hook is
// absent or returns nullptr, and a doorbell is only the store to the mapped doorbell page, which
// the hardware observes itself.
// Lifetime: a port is valid from CREATE_QUEUE's return until DESTROY_QUEUE of that queue (the
// device owns it; the queue's engine stops inside DESTROY_QUEUE).
// Thread safety: every member may be called from any thread.
#pragma once

#include <aqueduct/core/result.hpp>

#include <cstdint>
#include <optional>

namespace aqueduct {

class queue_port {
 public:
  // The producer stored `value` to the queue's doorbell (AQL: last packet index; PM4: write
  // pointer in dwords; SDMA: write pointer in bytes). Called after the store.
  virtual void ring_doorbell(std::uint64_t value) noexcept = 0;
  // The queue's engine stopped with an error (nothing more will complete). Cheap: waits poll it.
  [[nodiscard]] virtual bool faulted() const noexcept = 0;
  // Why it stopped (device_fault, queue_error, device_hang ... with the packet decoded), or none.
  [[nodiscard]] virtual std::optional<failure> fault() const = 0;

 protected:
  queue_port() = default;
  ~queue_port() = default;
  queue_port(const queue_port&) = default;
  queue_port& operator=(const queue_port&) = default;
};

}  // namespace aqueduct

// aqueduct/core/mapping.hpp — the outcome of a device file's mmap: an address or an errno.
//
// Layer: core. Lives here (not in kfd/) because both models of kfd::device_file return it and
// emu/ may not include kfd/: the concept requires this exact type (kfd::mapping is an alias).
// Thread safety: a value.
#pragma once

namespace aqueduct {

struct mapping {
  void* addr = nullptr;
  int error = 0;  // 0 on success, else a positive errno
  [[nodiscard]] explicit operator bool() const noexcept { return error == 0; }
};

}  // namespace aqueduct

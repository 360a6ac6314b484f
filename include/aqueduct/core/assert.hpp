// aqueduct/core/assert.hpp — contract checks.
//
// Layer: core. A failed AQUEDUCT_ASSERT is a programming error (a reservation overrun, a
// misaligned atomic): it prints where and why, then aborts. Environmental failures are never
// asserted; they are `result<T>` errors (core/result.hpp). Thread-safe.
#pragma once

#include <aqueduct/config.hpp>

#include <cstdio>
#include <cstdlib>
#include <source_location>

namespace aqueduct::detail {

[[noreturn]] inline void assert_fail(const char* expr, const char* msg,
                                     std::source_location loc = std::source_location::current()) noexcept {
  std::fprintf(stderr, "aqueduct: assertion failed: %s\n  %s\n  at %s:%u (%s)\n", expr,
               msg ? msg : "", loc.file_name(), static_cast<unsigned>(loc.line()), loc.function_name());
  std::fflush(stderr);
  std::abort();
}

}  // namespace aqueduct::detail

#if AQUEDUCT_ENABLE_ASSERTS
#  define AQUEDUCT_ASSERT(cond, msg) \
    (AQUEDUCT_LIKELY(cond) ? static_cast<void>(0) : ::aqueduct::detail::assert_fail(#cond, msg))
#else
#  define AQUEDUCT_ASSERT(cond, msg) static_cast<void>(0)
#endif

// Checked even in release builds: for invariants whose violation would corrupt a ring or memory.
#define AQUEDUCT_VERIFY(cond, msg) \
  (AQUEDUCT_LIKELY(cond) ? static_cast<void>(0) : ::aqueduct::detail::assert_fail(#cond, msg))

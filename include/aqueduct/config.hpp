// aqueduct/config.hpp — every compile-time switch of aqueduct, in one place.
//
// Layer: top (included by everything). Each switch follows "the user may predefine it, else it
// is detected, else it has a default", and is always defined to 0 or 1 afterwards, so code tests
// it with `#if AQUEDUCT_X`, never `#ifdef`. No other aqueduct header reads compiler or OS macros.
#pragma once

#if __cplusplus < 202002L
#  error "aqueduct needs C++20 (-std=c++20)"
#endif

// ---- platform ------------------------------------------------------------------------------
// The real KFD model (/dev/kfd, mmap, ioctl) needs Linux. Elsewhere only the emulator exists.
#ifndef AQUEDUCT_LINUX
#  if defined(__linux__)
#    define AQUEDUCT_LINUX 1
#  else
#    define AQUEDUCT_LINUX 0
#  endif
#endif

// x86-64 or AArch64: the two host ISAs whose memory model the atomics policy is written for.
#ifndef AQUEDUCT_X86_64
#  if defined(__x86_64__) || defined(_M_X64)
#    define AQUEDUCT_X86_64 1
#  else
#    define AQUEDUCT_X86_64 0
#  endif
#endif

// mmap(MAP_FIXED_NOREPLACE): Linux 4.17+ (mmap(2)), declared by <sys/mman.h> of glibc 2.28+ and
// current musl. Defaults to AQUEDUCT_LINUX; predefine 0 for an older C library. Callers must still
// check the address they got back: older kernels take the flag as a mere hint.
#ifndef AQUEDUCT_HAS_MAP_FIXED_NOREPLACE
#  define AQUEDUCT_HAS_MAP_FIXED_NOREPLACE AQUEDUCT_LINUX
#endif

// ---- optional dependencies -------------------------------------------------------------------
// libdrm/libdrm_amdgpu: render-node enumeration and device info on the Linux model. The CMake
// target defines it to 1 when pkg-config finds libdrm.
#ifndef AQUEDUCT_HAS_LIBDRM
#  define AQUEDUCT_HAS_LIBDRM 0
#endif

// ---- checks --------------------------------------------------------------------------------
// Contract checks (AQUEDUCT_ASSERT). On by default except in NDEBUG builds; a user may force either.
#ifndef AQUEDUCT_ENABLE_ASSERTS
#  if defined(NDEBUG)
#    define AQUEDUCT_ENABLE_ASSERTS 0
#  else
#    define AQUEDUCT_ENABLE_ASSERTS 1
#  endif
#endif

// ThreadSanitizer: the emulator's adversarial header polling is most useful under it.
#ifndef AQUEDUCT_TSAN
#  if defined(__SANITIZE_THREAD__)
#    define AQUEDUCT_TSAN 1
#  elif defined(__has_feature)
#    if __has_feature(thread_sanitizer)
#      define AQUEDUCT_TSAN 1
#    endif
#  endif
#  ifndef AQUEDUCT_TSAN
#    define AQUEDUCT_TSAN 0
#  endif
#endif

// AddressSanitizer (the emulator poisons nothing by itself, but leak checks read this).
#ifndef AQUEDUCT_ASAN
#  if defined(__SANITIZE_ADDRESS__)
#    define AQUEDUCT_ASAN 1
#  elif defined(__has_feature)
#    if __has_feature(address_sanitizer)
#      define AQUEDUCT_ASAN 1
#    endif
#  endif
#  ifndef AQUEDUCT_ASAN
#    define AQUEDUCT_ASAN 0
#  endif
#endif

// ---- compiler helpers --------------------------------------------------------------------------
#if defined(__GNUC__) || defined(__clang__)
#  define AQUEDUCT_LIKELY(x) __builtin_expect(!!(x), 1)
#  define AQUEDUCT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#  define AQUEDUCT_ALWAYS_INLINE inline __attribute__((always_inline))
#  define AQUEDUCT_NOINLINE __attribute__((noinline))
#  define AQUEDUCT_TRAP() __builtin_trap()
#else
#  define AQUEDUCT_LIKELY(x) (x)
#  define AQUEDUCT_UNLIKELY(x) (x)
#  define AQUEDUCT_ALWAYS_INLINE inline
#  define AQUEDUCT_NOINLINE
#  define AQUEDUCT_TRAP() std::abort()
#endif

// GCC 12 reports -Wmaybe-uninitialized through the inactive member of a union (result<T>'s
// storage) after inlining; these bracket the code where that false positive arises.
#if defined(__GNUC__) && !defined(__clang__)
#  define AQUEDUCT_DIAG_PUSH_NO_MAYBE_UNINIT \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#  define AQUEDUCT_DIAG_POP _Pragma("GCC diagnostic pop")
#else
#  define AQUEDUCT_DIAG_PUSH_NO_MAYBE_UNINIT
#  define AQUEDUCT_DIAG_POP
#endif

// CPU pause for spin loops (x86 PAUSE / AArch64 YIELD).
#if AQUEDUCT_X86_64
#  define AQUEDUCT_CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#  define AQUEDUCT_CPU_RELAX() __asm__ __volatile__("yield")
#else
#  define AQUEDUCT_CPU_RELAX() ((void)0)
#endif

namespace aqueduct {
inline constexpr int version_major = 0;
inline constexpr int version_minor = 1;
inline constexpr int version_patch = 0;
}  // namespace aqueduct

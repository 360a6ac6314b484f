// aqueduct/core/result.hpp — errors: `errc`, its `error_category`, `aqueduct::error`, `result<T>`.
//
// Layer: core. Environmental failures (an ioctl fails, a queue stays full, a code object is
// malformed, the device faults) are `std::error_code`s of category `aqueduct::category()`,
// returned as `result<T>` by every `try_*` function; the plain-named twin throws
// `aqueduct::error`. A failure may carry a human-readable detail (the ioctl's name and errno, a
// decoded stalled packet ...): it is allocated only on the error path, so `result<T>` stays cheap
// on success.
//
// `result<T>` is a subset of `std::expected<T, std::error_code>` (C++23), plus `detail()`.
// Thread safety: values, no shared state beyond the immutable detail string.
#pragma once

#include <aqueduct/core/assert.hpp>

#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

namespace aqueduct {

// Append new values at the end of a group; never renumber (values may be logged).
enum class errc : int {
  // generic
  invalid_argument = 1,  // a caller-supplied value is out of range or inconsistent
  not_supported = 2,     // valid request the device / kernel / build cannot do
  not_found = 3,         // no such agent, kernel, symbol, entry
  out_of_memory = 4,     // host or device allocation failed
  out_of_resources = 5,  // queues, doorbells, events, SDMA engines exhausted
  busy = 6,              // resource still in use (e.g. a BO referenced by a queue)
  io_error = 7,          // a file could not be read or written
  timeout = 8,           // a wait passed its deadline (diagnostics in detail())
  cancelled = 9,         // work abandoned (shutdown, queue destroyed)
  // driver layer
  kfd_unavailable = 20,          // /dev/kfd cannot be opened (no GPU, no permission, not Linux)
  kfd_version_unsupported = 21,  // KFD ioctl interface too old for what aqueduct uses
  ioctl_failed = 22,             // an ioctl returned an error (request name and errno in detail())
  mmap_failed = 23,              // mmap of a doorbell / event page / BO failed
  topology_error = 24,           // sysfs topology missing or malformed
  // queues and devices
  queue_full = 40,     // no free slot before the caller's timeout
  queue_error = 41,    // the packet processor stopped on a malformed packet
  device_fault = 42,   // a memory fault (faulting address in detail())
  device_hang = 43,    // the device stopped making progress (e.g. CWSR without PRIV on GFX11)
  signal_error = 44,   // a signal was reused or waited on wrongly
  device_reset = 45,   // the GPU was reset: every queue of the process stopped (make new ones)
  // code objects
  malformed_code_object = 60,  // ELF / note / descriptor inconsistent or truncated
  malformed_bundle = 61,       // offload bundle or CCOB header inconsistent or truncated
  hash_mismatch = 62,          // CCOB hash does not match the decompressed data
  unsupported_format = 63,     // unknown version, compression method, code-object version
  no_compatible_isa = 64,      // no entry of a bundle fits the agent (reason in detail())
  decompression_failed = 65,   // zstd / zlib reported an error or the size was wrong
};

class error_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "aqueduct"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::invalid_argument: return "invalid argument";
      case errc::not_supported: return "not supported";
      case errc::not_found: return "not found";
      case errc::out_of_memory: return "out of memory";
      case errc::out_of_resources: return "out of resources";
      case errc::busy: return "resource busy";
      case errc::io_error: return "I/O error";
      case errc::timeout: return "timed out";
      case errc::cancelled: return "cancelled";
      case errc::kfd_unavailable: return "KFD device unavailable";
      case errc::kfd_version_unsupported: return "KFD interface version unsupported";
      case errc::ioctl_failed: return "KFD ioctl failed";
      case errc::mmap_failed: return "mmap failed";
      case errc::topology_error: return "topology malformed or missing";
      case errc::queue_full: return "queue full";
      case errc::queue_error: return "queue error";
      case errc::device_fault: return "device memory fault";
      case errc::device_hang: return "device hang";
      case errc::device_reset: return "device reset";
      case errc::signal_error: return "signal misuse";
      case errc::malformed_code_object: return "malformed code object";
      case errc::malformed_bundle: return "malformed offload bundle";
      case errc::hash_mismatch: return "hash mismatch";
      case errc::unsupported_format: return "unsupported format";
      case errc::no_compatible_isa: return "no compatible ISA";
      case errc::decompression_failed: return "decompression failed";
    }
    return "unknown aqueduct error";
  }
};

inline const std::error_category& category() noexcept {
  static const error_category_impl instance;
  return instance;
}

inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), category()}; }

}  // namespace aqueduct

template <>
struct std::is_error_code_enum<aqueduct::errc> : std::true_type {};

namespace aqueduct {

AQUEDUCT_DIAG_PUSH_NO_MAYBE_UNINIT

// The error alternative of result<T>: a code and an optional detail string.
class failure {
 public:
  failure() = default;
  failure(std::error_code code) noexcept : code_(code) {}  // NOLINT: implicit by design
  failure(errc e) noexcept : code_(make_error_code(e)) {}  // NOLINT
  failure(std::error_code code, std::string detail)
      : code_(code), detail_(detail.empty() ? nullptr : std::make_shared<const std::string>(std::move(detail))) {}
  failure(errc e, std::string detail) : failure(make_error_code(e), std::move(detail)) {}
  // With the OS error behind it (a positive errno, e.g. ENOMEM from an ioctl), as data.
  failure(std::error_code code, std::string detail, int os_errno) : failure(code, std::move(detail)) {
    os_errno_ = os_errno;
  }
  failure(errc e, std::string detail, int os_errno) : failure(make_error_code(e), std::move(detail), os_errno) {}

  [[nodiscard]] std::error_code code() const noexcept { return code_; }
  // The errno of the system call that failed (0: none, or not an OS failure). Classify by this,
  // never by searching detail()'s text.
  [[nodiscard]] int os_errno() const noexcept { return os_errno_; }
  [[nodiscard]] std::string_view detail() const noexcept { return detail_ ? std::string_view(*detail_) : std::string_view{}; }
  // "message: detail" — what a person reads.
  [[nodiscard]] std::string describe() const {
    std::string s = code_.message();
    if (detail_) {
      s += ": ";
      s += *detail_;
    }
    return s;
  }
  friend bool operator==(const failure& f, errc e) noexcept { return f.code_ == make_error_code(e); }

 private:
  std::error_code code_{};
  std::shared_ptr<const std::string> detail_{};
  int os_errno_ = 0;
};

// Thrown only by the plain-named twins of try_* functions and by sync_wait.
class error : public std::system_error {
 public:
  explicit error(const failure& f) : std::system_error(f.code(), std::string(f.detail())), failure_(f) {}
  [[nodiscard]] const failure& get_failure() const noexcept { return failure_; }

 private:
  failure failure_;
};

[[noreturn]] inline void throw_failure(const failure& f) { throw error(f); }
// By value, for result<T>::value() &&: the caller moves the failure into the parameter, so only
// that temporary's address leaves the caller, never the result's (issue 11: passing `err_` by
// reference made the whole result, a reservation included, live in memory on the success path
// too: 88 -> 80 instructions for `q.try_reserve(n).value()` in a user's own function). Moved, not
// copied: a copy (a shared_ptr increment and its landing pad at every call site) tipped GCC's
// inlining of submit_batch(n, fill) in aqueduct-bench's counting loop from 15 to 75 instructions a
// packet. A result whose value() && threw keeps its error code; its detail text went with the exception.
[[noreturn]] AQUEDUCT_NOINLINE inline void throw_failure_value(failure f) { throw error(f); }

template <class T>
class [[nodiscard]] result {
  static_assert(!std::is_reference_v<T>, "result<T&> is not supported; use result<T*> or a _ref type");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, failure>);

 public:
  using value_type = T;

  template <class U = T>
    requires std::is_constructible_v<T, U&&> && (!std::is_same_v<std::remove_cvref_t<U>, result>) &&
             (!std::is_same_v<std::remove_cvref_t<U>, failure>) && (!std::is_same_v<std::remove_cvref_t<U>, errc>) &&
             (!std::is_same_v<std::remove_cvref_t<U>, std::error_code>)
  AQUEDUCT_ALWAYS_INLINE result(U&& v) noexcept(std::is_nothrow_constructible_v<T, U&&>)  // NOLINT: implicit like expected
      : ok_(true) {
    ::new (static_cast<void*>(&val_)) T(std::forward<U>(v));
  }
  result(failure f) noexcept : ok_(false) { ::new (static_cast<void*>(&err_)) failure(std::move(f)); }  // NOLINT
  result(errc e) noexcept : result(failure(e)) {}                                                     // NOLINT
  result(std::error_code e) noexcept : result(failure(e)) {}                                          // NOLINT

  template <class... A>
  explicit result(std::in_place_t, A&&... a) : ok_(true) {
    ::new (static_cast<void*>(&val_)) T(std::forward<A>(a)...);
  }

  result(const result& o) requires std::is_copy_constructible_v<T> : ok_(o.ok_) { construct_from(o); }
  AQUEDUCT_ALWAYS_INLINE result(result&& o) noexcept(std::is_nothrow_move_constructible_v<T>) : ok_(o.ok_) {
    construct_from(std::move(o));
  }
  result& operator=(const result& o) requires std::is_copy_constructible_v<T> {
    if (this != &o) {
      destroy();
      ok_ = o.ok_;
      construct_from(o);
    }
    return *this;
  }
  result& operator=(result&& o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &o) {
      destroy();
      ok_ = o.ok_;
      construct_from(std::move(o));
    }
    return *this;
  }
  AQUEDUCT_ALWAYS_INLINE ~result() { destroy(); }

  [[nodiscard]] bool has_value() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }

  T& value() & {
    if (!ok_) throw_failure(err_);
    return val_;
  }
  const T& value() const& {
    if (!ok_) throw_failure(err_);
    return val_;
  }
  AQUEDUCT_ALWAYS_INLINE T&& value() && {
    if (!ok_) [[unlikely]] throw_failure_value(std::move(err_));
    return std::move(val_);
  }
  T& operator*() & noexcept { AQUEDUCT_ASSERT(ok_, "result has no value"); return val_; }
  const T& operator*() const& noexcept { AQUEDUCT_ASSERT(ok_, "result has no value"); return val_; }
  T&& operator*() && noexcept { AQUEDUCT_ASSERT(ok_, "result has no value"); return std::move(val_); }
  T* operator->() noexcept { AQUEDUCT_ASSERT(ok_, "result has no value"); return &val_; }
  const T* operator->() const noexcept { AQUEDUCT_ASSERT(ok_, "result has no value"); return &val_; }

  template <class U>
  T value_or(U&& alt) const& { return ok_ ? val_ : static_cast<T>(std::forward<U>(alt)); }

  // The error code (expected-compatible). Precondition: !has_value().
  [[nodiscard]] std::error_code error() const noexcept { AQUEDUCT_ASSERT(!ok_, "result has a value"); return err_.code(); }
  [[nodiscard]] const failure& get_failure() const& noexcept { AQUEDUCT_ASSERT(!ok_, "result has a value"); return err_; }
  [[nodiscard]] failure&& get_failure() && noexcept { AQUEDUCT_ASSERT(!ok_, "result has a value"); return std::move(err_); }
  [[nodiscard]] std::string_view detail() const noexcept { return ok_ ? std::string_view{} : err_.detail(); }

 private:
  // Precondition: ok_ == o.ok_ and nothing is constructed in *this.
  // Always inlined, the failure's half too (an out-of-line helper taking `this` or `&err_` would
  // make the whole result escape, and a reservation inside it would then live in memory): a
  // result moved out of a try_ call on a hot path (`q.try_reserve(n).value()`) must cost what
  // moving T costs. GCC left these out of line for some T (issue 11: 78 instead of 39
  // instructions per multi-producer publish), which also kept the moved-from T's destructor test.
  template <class R>
  AQUEDUCT_ALWAYS_INLINE void construct_from(R&& o) {
    if (ok_) [[likely]] ::new (static_cast<void*>(&val_)) T(std::forward<R>(o).val_);
    else ::new (static_cast<void*>(&err_)) failure(std::forward<R>(o).err_);
  }
  AQUEDUCT_ALWAYS_INLINE void destroy() noexcept {
    if (ok_) [[likely]] val_.~T();
    else err_.~failure();
  }
  union {
    T val_;
    failure err_;
  };
  bool ok_;
};

template <>
class [[nodiscard]] result<void> {
 public:
  using value_type = void;
  result() noexcept = default;
  result(failure f) noexcept : err_(std::move(f)), ok_(false) {}  // NOLINT
  result(errc e) noexcept : result(failure(e)) {}                  // NOLINT
  result(std::error_code e) noexcept : result(failure(e)) {}       // NOLINT

  [[nodiscard]] bool has_value() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  void value() const {
    if (!ok_) throw_failure(err_);
  }
  [[nodiscard]] std::error_code error() const noexcept { AQUEDUCT_ASSERT(!ok_, "result has a value"); return err_.code(); }
  [[nodiscard]] const failure& get_failure() const& noexcept { return err_; }
  [[nodiscard]] failure&& get_failure() && noexcept { return std::move(err_); }
  [[nodiscard]] std::string_view detail() const noexcept { return ok_ ? std::string_view{} : err_.detail(); }

 private:
  failure err_{};
  bool ok_ = true;
};

// Success value for result<void>-returning functions: `return ok();`
inline result<void> ok() noexcept { return {}; }

AQUEDUCT_DIAG_POP

}  // namespace aqueduct

// Propagate a failure: `AQUEDUCT_TRY(auto fd, open_thing());` declares `fd` from the value,
// or returns the failure from the enclosing function (which must return some result<U>).
#define AQUEDUCT_DETAIL_CAT2(a, b) a##b
#define AQUEDUCT_DETAIL_CAT(a, b) AQUEDUCT_DETAIL_CAT2(a, b)
#define AQUEDUCT_TRY(decl, expr) AQUEDUCT_DETAIL_TRY(AQUEDUCT_DETAIL_CAT(aq_try_, __LINE__), decl, expr)
#define AQUEDUCT_DETAIL_TRY(tmp, decl, expr)           \
  auto tmp = (expr);                                   \
  if (!tmp) return std::move(tmp).get_failure();       \
  decl = std::move(*tmp)
// For result<void>: `AQUEDUCT_TRY_VOID(do_thing());`
#define AQUEDUCT_TRY_VOID(expr)                                                     \
  do {                                                                              \
    auto aq_try_v_ = (expr);                                                        \
    if (!aq_try_v_) return std::move(aq_try_v_).get_failure();                      \
  } while (0)

// aqueduct/runtime/kernel_args.hpp — kernel argument lists as types: what a typed kernel's
// dispatch accepts for each declared parameter, the kernarg layout of a parameter list, and the
// one-time check of a declared list against a kernel's metadata (.args).
//
// Layer: runtime. A kernel is declared with its C++ parameter types, `kernel<float*, const
// float*, float*, std::uint32_t>`, as its source declares them. A pointer parameter `T*` takes a
// `device_ptr<T>`: a buffer<U> or buffer_ref<U> whose U* converts to T* (so a buffer<int> cannot
// be passed for a float*, nor a buffer<const float> for a float*), or an explicit
// `device_ptr<T>::at(va)`. A value parameter `T` takes a `by_value<T>`: any U that
// brace-initialises a T (no narrowing: an int for a float, a std::size_t for a std::uint32_t
// or a buffer for a scalar is a compile error, so swapped arguments of different types do not
// compile). The layout is the AMDGPU one for explicit arguments: in order, each at its natural
// alignment (a pointer is 8 bytes); offsets are compile-time constants, so a typed dispatch
// stores each argument at a fixed offset and checks nothing at run time.
// `check_signature<P...>` compares the declared list with the metadata's explicit arguments
// (hidden_* excluded) once, when the kernel is looked up: count, value kind (global_buffer for a
// pointer, by_value otherwise), size and offset, naming the first difference.
// `signature_args<P...>()` is the metadata a host kernel declares for itself (runtime/kernel.hpp).
// Untyped dispatches (`untyped_kernel`) lay out whatever they get with the same rule and check
// count, sizes and offsets against the metadata at run time (check_untyped).
// Thread safety: values and pure functions.
#pragma once

#include <aqueduct/code/metadata.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/runtime/memory.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <tuple>
#include <utility>
#include <vector>

namespace aqueduct::runtime {

// The argument of a `T*` kernel parameter: a GPU address of T elements.
template <class T>
class device_ptr {
 public:
  constexpr device_ptr() noexcept = default;
  constexpr device_ptr(std::nullptr_t) noexcept {}
  template <class U>
    requires std::is_convertible_v<U*, T*>
  device_ptr(const buffer<U>& b) noexcept : address_(b.address()) {}
  template <class U>
    requires std::is_convertible_v<U*, T*>
  constexpr device_ptr(const buffer_ref<U>& b) noexcept : address_(b.address()) {}
  template <class U>
    requires(std::is_convertible_v<U*, T*> && !std::is_same_v<U, T>)
  constexpr device_ptr(device_ptr<U> p) noexcept : address_(p.address()) {}
  // An address you vouch holds T elements (e.g. an offset into a buffer).
  [[nodiscard]] static constexpr device_ptr at(gpu_va va) noexcept {
    device_ptr p;
    p.address_ = va.value;
    return p;
  }
  [[nodiscard]] constexpr std::uint64_t address() const noexcept { return address_; }

 private:
  std::uint64_t address_ = 0;
};

// The argument of a by-value kernel parameter T: anything that brace-initialises a T.
template <class T>
class by_value {
  static_assert(std::is_trivially_copyable_v<T>, "a by-value kernel parameter must be trivially copyable");
  static_assert(!std::is_reference_v<T> && !std::is_array_v<T>, "declare kernel parameters as values or pointers");

 public:
  template <class U>
    requires requires(const U& u) { T{u}; }
  constexpr by_value(const U& u) noexcept(std::is_nothrow_copy_constructible_v<T>) : v_{u} {}
  [[nodiscard]] constexpr const T& get() const noexcept { return v_; }

 private:
  T v_;
};

namespace detail {

enum class param_class : std::uint8_t { pointer, value };

template <class P>
struct kernel_param {
  using arg_type = by_value<P>;
  using stored_type = P;
  static constexpr param_class cls = param_class::value;
  static constexpr const P& bits(const arg_type& a) noexcept { return a.get(); }
};
template <class T>
struct kernel_param<T*> {
  using arg_type = device_ptr<T>;
  using stored_type = std::uint64_t;
  static constexpr param_class cls = param_class::pointer;
  static constexpr std::uint64_t bits(const arg_type& a) noexcept { return a.address(); }
};

[[nodiscard]] constexpr std::size_t align_to(std::size_t off, std::size_t a) noexcept { return (off + a - 1) / a * a; }

// Offsets of the parameters laid out in order at natural alignment, and the total size.
template <class... P>
struct kernel_layout {
  static constexpr std::size_t count = sizeof...(P);
  static constexpr std::array<std::size_t, count> sizes{sizeof(typename kernel_param<P>::stored_type)...};
  static constexpr std::array<param_class, count> classes{kernel_param<P>::cls...};
  static constexpr std::array<std::size_t, count> offsets = [] {
    std::array<std::size_t, count> o{};
    const std::array<std::size_t, count> al{alignof(typename kernel_param<P>::stored_type)...};
    std::size_t off = 0;
    for (std::size_t i = 0; i < count; ++i) {
      off = align_to(off, al[i]);
      o[i] = off;
      off += sizes[i];
    }
    return o;
  }();
  static constexpr std::size_t bytes = count == 0 ? 0 : offsets[count - 1] + sizes[count - 1];
};

template <class P>
void put_typed_arg(std::byte* dst, std::size_t offset, const typename kernel_param<P>::arg_type& a) noexcept {
  const typename kernel_param<P>::stored_type v = kernel_param<P>::bits(a);
  std::memcpy(dst + offset, &v, sizeof v);
}
// A typed dispatch's kernargs: each argument at its compile-time offset.
// (Every value is read before the first store: a store through std::byte* may alias the
// arguments, and the compiler would reload each one after it — issue 11.)
template <class... P, std::size_t... I>
AQUEDUCT_ALWAYS_INLINE void put_typed_kernargs(std::byte* dst, std::index_sequence<I...>,
                                               const typename kernel_param<P>::arg_type&... a) noexcept {
  const std::tuple<typename kernel_param<P>::stored_type...> v{kernel_param<P>::bits(a)...};
  (std::memcpy(dst + kernel_layout<P...>::offsets[I], &std::get<I>(v), sizeof(std::get<I>(v))), ...);
  (void)dst;
  (void)v;
}

[[nodiscard]] constexpr std::string_view value_kind_of(param_class c) noexcept {
  return c == param_class::pointer ? "global_buffer" : "by_value";
}

inline void describe_arg(std::string& out, std::string_view kind, std::uint64_t offset, std::uint64_t size) {
  out += std::string(kind) + " @" + std::to_string(offset) + " (" + std::to_string(size) + " bytes)";
}
inline std::string describe_metadata_args(std::span<const code::kernel_arg> args) {
  std::string s = "(";
  bool first = true;
  for (const auto& a : args) {
    if (a.hidden()) continue;
    if (!first) s += ", ";
    first = false;
    describe_arg(s, a.value_kind, a.offset, a.size);
    if (!a.name.empty()) s += " '" + a.name + "'";
  }
  return s + ")";
}
template <class... P>
std::string describe_declared() {
  using L = kernel_layout<P...>;
  std::string s = "(";
  for (std::size_t i = 0; i < L::count; ++i) {
    if (i) s += ", ";
    describe_arg(s, value_kind_of(L::classes[i]), L::offsets[i], L::sizes[i]);
  }
  return s + ")";
}

}  // namespace detail

// The explicit arguments a kernel with parameters P... declares in its metadata.
template <class... P>
[[nodiscard]] std::vector<code::kernel_arg> signature_args() {
  using L = detail::kernel_layout<P...>;
  std::vector<code::kernel_arg> v;
  for (std::size_t i = 0; i < L::count; ++i) {
    code::kernel_arg a;
    a.value_kind = std::string(detail::value_kind_of(L::classes[i]));
    if (L::classes[i] == detail::param_class::pointer) a.address_space = "global";
    a.offset = L::offsets[i];
    a.size = L::sizes[i];
    v.push_back(std::move(a));
  }
  return v;
}

// Compares the declared parameters P... with a kernel's metadata arguments (see the header
// comment). errc::invalid_argument names the kernel, the first difference and both lists.
template <class... P>
[[nodiscard]] result<void> check_signature(std::string_view kernel_name, std::span<const code::kernel_arg> args,
                                           std::uint64_t kernarg_segment_size) {
  using L = detail::kernel_layout<P...>;
  std::size_t explicit_count = 0;
  for (const auto& a : args) explicit_count += a.hidden() ? 0 : 1;
  auto mismatch = [&](const std::string& what) {
    return failure(errc::invalid_argument, "kernel '" + std::string(kernel_name) + "': " + what + "; its metadata has " +
                                               detail::describe_metadata_args(args) + ", get_kernel declared " +
                                               detail::describe_declared<P...>());
  };
  if (args.empty() && kernarg_segment_size != 0)
    return failure(errc::invalid_argument,
                   "kernel '" + std::string(kernel_name) + "' declares no argument list (.args) but takes " +
                       std::to_string(kernarg_segment_size) +
                       " kernarg bytes: its arguments cannot be checked (declare a host kernel with "
                       "host_kernel::with_args<...>, or dispatch it untyped with get_untyped_kernel)");
  if (explicit_count != L::count)
    return mismatch("it takes " + std::to_string(explicit_count) + " arguments, " + std::to_string(L::count) + " declared");
  std::size_t i = 0;
  for (const auto& a : args) {
    if (a.hidden()) continue;
    const std::string_view want = detail::value_kind_of(L::classes[i]);
    const std::string which = "argument " + std::to_string(i) + (a.name.empty() ? "" : " '" + a.name + "'");
    if (a.value_kind != want)
      return mismatch(which + " is " + a.value_kind + ", declared as " + std::string(want) +
                      (want == "global_buffer" ? " (a pointer)" : " (a value)"));
    if (a.size != L::sizes[i])
      return mismatch(which + " has " + std::to_string(a.size) + " bytes, declared " + std::to_string(L::sizes[i]));
    if (a.offset != L::offsets[i])
      return mismatch(which + " is at offset " + std::to_string(a.offset) + ", declared " + std::to_string(L::offsets[i]));
    ++i;
  }
  if (L::bytes > kernarg_segment_size)
    return mismatch("the declared arguments need " + std::to_string(L::bytes) + " kernarg bytes, the kernel has " +
                    std::to_string(kernarg_segment_size));
  return ok();
}

// ---- untyped dispatches -----------------------------------------------------------------------
namespace detail {

// A kernel argument's bytes: buffers become their GPU address, everything else is copied.
template <class T>
struct kernarg_value {
  static_assert(std::is_trivially_copyable_v<T>, "kernel arguments must be trivially copyable");
  using type = T;
  static const T& get(const T& v) noexcept { return v; }
};
template <class T>
struct kernarg_value<buffer<T>> {
  using type = std::uint64_t;
  static std::uint64_t get(const buffer<T>& b) noexcept { return b.address(); }
};
template <class T>
struct kernarg_value<buffer_ref<T>> {
  using type = std::uint64_t;
  static std::uint64_t get(const buffer_ref<T>& b) noexcept { return b.address(); }
};
template <class T>
struct kernarg_value<device_ptr<T>> {
  using type = std::uint64_t;
  static std::uint64_t get(const device_ptr<T>& p) noexcept { return p.address(); }
};

template <class... A>
using untyped_layout = kernel_layout<typename kernarg_value<A>::type...>;

// The size of the arguments as a C struct, tail padding included (its alignment is its largest
// member's): what a kernel without an argument list declares as its kernarg size.
template <class... A>
constexpr std::size_t kernarg_struct_size() noexcept {
  std::size_t align = 1;
  ((align = alignof(typename kernarg_value<A>::type) > align ? alignof(typename kernarg_value<A>::type) : align), ...);
  return align_to(untyped_layout<A...>::bytes, align);
}

// Size of the arguments laid out like a C struct (each at its natural alignment, in order).
template <class... A>
constexpr std::size_t kernarg_layout_size() noexcept {
  return untyped_layout<A...>::bytes;
}
template <class T>
void put_kernarg(std::byte* dst, std::size_t& off, const T& v) noexcept {
  using V = typename kernarg_value<T>::type;
  off = align_to(off, alignof(V));
  const V& value = kernarg_value<T>::get(v);
  std::memcpy(dst + off, &value, sizeof(V));
  off += sizeof(V);
}
// All of a dispatch's arguments, in order, from the start of its kernarg slot (none: nothing).
template <class... A>
void put_kernargs(std::byte* dst, const A&... args) noexcept {
  if constexpr (sizeof...(A) > 0) {
    std::size_t off = 0;
    (put_kernarg(dst, off, args), ...);
  } else {
    (void)dst;
  }
}

// An untyped dispatch's arguments against the kernel's metadata: the count of explicit
// arguments, and each one's size and offset. A kernel without an argument list: the arguments,
// laid out as a C struct, must fill its kernarg segment — neither more (they would not fit) nor
// fewer (issue 13 bug 8: the kernel would read whatever the slot held before); a kernel that
// takes no kernarg bytes ignores whatever it is given.
template <class... A>
[[nodiscard]] bool untyped_args_match(std::span<const code::kernel_arg> args, std::uint64_t kernarg_segment_size) noexcept {
  using L = untyped_layout<A...>;
  if (args.empty())
    return kernarg_segment_size == 0 || (L::bytes <= kernarg_segment_size && kernarg_struct_size<A...>() >= kernarg_segment_size);
  std::size_t i = 0;
  for (const auto& a : args) {
    if (a.hidden()) continue;
    if (i >= L::count || a.size != L::sizes[i] || a.offset != L::offsets[i]) return false;
    ++i;
  }
  return i == L::count;
}
template <class... A>
[[nodiscard]] failure untyped_args_mismatch(std::string_view kernel_name, std::span<const code::kernel_arg> args,
                                            std::uint64_t kernarg_segment_size) {
  using L = untyped_layout<A...>;
  if (args.empty())
    return failure(errc::invalid_argument, "kernel '" + std::string(kernel_name) + "' takes " +
                                               std::to_string(kernarg_segment_size) + " kernarg bytes, the " +
                                               std::to_string(L::count) + " arguments given lay out as " +
                                               std::to_string(L::bytes) + " (" + std::to_string(kernarg_struct_size<A...>()) +
                                               " as a struct): pass every argument of the kernel's signature");
  std::string given = "(";
  for (std::size_t i = 0; i < L::count; ++i) {
    if (i) given += ", ";
    given += std::to_string(L::sizes[i]) + " bytes @" + std::to_string(L::offsets[i]);
  }
  return failure(errc::invalid_argument, "kernel '" + std::string(kernel_name) + "': its metadata has " +
                                             describe_metadata_args(args) + ", the " + std::to_string(L::count) +
                                             " arguments given lay out as " + given + ")");
}

}  // namespace detail
}  // namespace aqueduct::runtime

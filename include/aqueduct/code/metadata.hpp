// aqueduct/code/metadata.hpp — the code-object metadata note (NT_AMDGPU_METADATA, msgpack).
//
// Layer: code. Extracts what a dispatch needs per kernel (spec/code-objects.md §4.2–4.3): name,
// descriptor symbol, kernarg segment size and alignment, static LDS and scratch, wavefront size,
// register counts, and every argument's offset, size and value kind, including the v5 hidden
// arguments (§4.4: fill each hidden argument listed, never assume a fixed block). Missing required
// keys, wrong types and arguments outside the kernarg segment are errc::malformed_code_object.
// Thread safety: values.
#pragma once

#include <aqueduct/code/msgpack.hpp>
#include <aqueduct/core/result.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace aqueduct::code {

struct kernel_arg {
  std::string name;           // optional in the metadata
  std::string type_name;      // optional
  std::string value_kind;     // "by_value", "global_buffer", "hidden_block_count_x", ...
  std::string address_space;  // optional: "global", "local", ...
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  [[nodiscard]] bool hidden() const noexcept { return value_kind.starts_with("hidden_"); }
};

struct kernel_metadata {
  std::string name;
  std::string symbol;  // "<name>.kd"
  std::uint64_t kernarg_segment_size = 0;
  std::uint64_t kernarg_segment_align = 0;
  std::uint64_t group_segment_fixed_size = 0;
  std::uint64_t private_segment_fixed_size = 0;
  std::uint32_t wavefront_size = 0;
  std::uint32_t sgpr_count = 0;
  std::uint32_t vgpr_count = 0;
  std::uint32_t agpr_count = 0;  // optional (LLVM 19 omits it when no AGPRs are used)
  std::uint32_t max_flat_workgroup_size = 0;
  std::array<std::uint32_t, 3> reqd_workgroup_size{};  // all 0 when absent
  bool uses_dynamic_stack = false;
  std::vector<kernel_arg> args;

  [[nodiscard]] const kernel_arg* hidden_arg(std::string_view kind) const noexcept {
    for (const auto& a : args)
      if (a.value_kind == kind) return &a;
    return nullptr;
  }
};

struct code_object_metadata {
  unsigned version_major = 0, version_minor = 0;  // amdhsa.version
  std::string target;                             // amdhsa.target
  std::vector<kernel_metadata> kernels;
  [[nodiscard]] const kernel_metadata* kernel(std::string_view name) const noexcept {
    for (const auto& k : kernels)
      if (k.name == name || k.symbol == name) return &k;
    return nullptr;
  }
};

namespace detail {
inline failure md_bad(std::string d) { return failure(errc::malformed_code_object, "metadata: " + std::move(d)); }
inline result<std::uint64_t> md_uint(const msgpack::value& m, std::string_view key, const std::string& where, bool required,
                                     std::uint64_t dflt = 0) {
  const auto* v = m.get(key);
  if (!v) {
    if (required) return md_bad(where + ": missing " + std::string(key));
    return dflt;
  }
  if (!v->is_int()) return md_bad(where + ": " + std::string(key) + " is not a non-negative integer");
  return v->as_uint();
}
inline result<std::string> md_str(const msgpack::value& m, std::string_view key, const std::string& where, bool required) {
  const auto* v = m.get(key);
  if (!v) {
    if (required) return md_bad(where + ": missing " + std::string(key));
    return std::string{};
  }
  if (v->kind != msgpack::type::str) return md_bad(where + ": " + std::string(key) + " is not a string");
  return std::string(v->s);
}
}  // namespace detail

// Parses the descriptor of an NT_AMDGPU_METADATA note (code_object::metadata_note()).
inline result<code_object_metadata> try_parse_metadata(byte_span note_desc) {
  using detail::md_bad;
  AQUEDUCT_TRY(auto root, msgpack::try_parse(note_desc));
  if (root.kind != msgpack::type::map) return md_bad("top level is not a map");
  code_object_metadata md;
  if (const auto* ver = root.get("amdhsa.version")) {
    if (ver->kind != msgpack::type::array || ver->items.size() != 2 || !ver->items[0].is_int() || !ver->items[1].is_int())
      return md_bad("amdhsa.version is not [major, minor]");
    md.version_major = static_cast<unsigned>(ver->items[0].as_uint());
    md.version_minor = static_cast<unsigned>(ver->items[1].as_uint());
  } else {
    return md_bad("missing amdhsa.version");
  }
  AQUEDUCT_TRY(md.target, detail::md_str(root, "amdhsa.target", "top level", false));
  const auto* ks = root.get("amdhsa.kernels");
  if (!ks) return md;  // a code object without kernels is valid
  if (ks->kind != msgpack::type::array) return md_bad("amdhsa.kernels is not an array");
  for (std::size_t i = 0; i < ks->items.size(); ++i) {
    const auto& km = ks->items[i];
    std::string where = "kernel " + std::to_string(i);
    if (km.kind != msgpack::type::map) return md_bad(where + " is not a map");
    kernel_metadata k;
    AQUEDUCT_TRY(k.name, detail::md_str(km, ".name", where, true));
    where = "kernel " + k.name;
    AQUEDUCT_TRY(k.symbol, detail::md_str(km, ".symbol", where, true));
    AQUEDUCT_TRY(k.kernarg_segment_size, detail::md_uint(km, ".kernarg_segment_size", where, true));
    AQUEDUCT_TRY(k.kernarg_segment_align, detail::md_uint(km, ".kernarg_segment_align", where, true));
    AQUEDUCT_TRY(k.group_segment_fixed_size, detail::md_uint(km, ".group_segment_fixed_size", where, true));
    AQUEDUCT_TRY(k.private_segment_fixed_size, detail::md_uint(km, ".private_segment_fixed_size", where, true));
    AQUEDUCT_TRY(auto wave, detail::md_uint(km, ".wavefront_size", where, true));
    AQUEDUCT_TRY(auto sg, detail::md_uint(km, ".sgpr_count", where, true));
    AQUEDUCT_TRY(auto vg, detail::md_uint(km, ".vgpr_count", where, true));
    AQUEDUCT_TRY(auto ag, detail::md_uint(km, ".agpr_count", where, false));
    AQUEDUCT_TRY(auto mf, detail::md_uint(km, ".max_flat_workgroup_size", where, true));
    if (wave != 32 && wave != 64) return md_bad(where + ": .wavefront_size " + std::to_string(wave) + " is not 32 or 64");
    if (k.kernarg_segment_align == 0 || (k.kernarg_segment_align & (k.kernarg_segment_align - 1)) != 0)
      return md_bad(where + ": .kernarg_segment_align " + std::to_string(k.kernarg_segment_align) + " is not a power of two");
    if (sg > 0xffffffffu || vg > 0xffffffffu || ag > 0xffffffffu || mf > 0xffffffffu) return md_bad(where + ": register or size count overflows 32 bits");
    k.wavefront_size = static_cast<std::uint32_t>(wave);
    k.sgpr_count = static_cast<std::uint32_t>(sg);
    k.vgpr_count = static_cast<std::uint32_t>(vg);
    k.agpr_count = static_cast<std::uint32_t>(ag);
    k.max_flat_workgroup_size = static_cast<std::uint32_t>(mf);
    if (const auto* r = km.get(".reqd_workgroup_size")) {
      if (r->kind != msgpack::type::array || r->items.size() != 3) return md_bad(where + ": .reqd_workgroup_size is not [x, y, z]");
      for (std::size_t d = 0; d < 3; ++d) {
        if (!r->items[d].is_int() || r->items[d].as_uint() > 0xffffffffu) return md_bad(where + ": .reqd_workgroup_size element is not a u32");
        k.reqd_workgroup_size[d] = static_cast<std::uint32_t>(r->items[d].as_uint());
      }
    }
    if (const auto* s = km.get(".uses_dynamic_stack")) k.uses_dynamic_stack = (s->kind == msgpack::type::boolean && s->b) || (s->is_int() && s->as_uint() != 0);
    if (const auto* as = km.get(".args")) {
      if (as->kind != msgpack::type::array) return md_bad(where + ": .args is not an array");
      for (std::size_t j = 0; j < as->items.size(); ++j) {
        const auto& am = as->items[j];
        const std::string aw = where + " arg " + std::to_string(j);
        if (am.kind != msgpack::type::map) return md_bad(aw + " is not a map");
        kernel_arg a;
        AQUEDUCT_TRY(a.offset, detail::md_uint(am, ".offset", aw, true));
        AQUEDUCT_TRY(a.size, detail::md_uint(am, ".size", aw, true));
        AQUEDUCT_TRY(a.value_kind, detail::md_str(am, ".value_kind", aw, true));
        AQUEDUCT_TRY(a.name, detail::md_str(am, ".name", aw, false));
        AQUEDUCT_TRY(a.type_name, detail::md_str(am, ".type_name", aw, false));
        AQUEDUCT_TRY(a.address_space, detail::md_str(am, ".address_space", aw, false));
        if (a.offset > k.kernarg_segment_size || a.size > k.kernarg_segment_size - a.offset)
          return md_bad(aw + ": [" + std::to_string(a.offset) + ", +" + std::to_string(a.size) + ") lies outside the kernarg segment of " +
                        std::to_string(k.kernarg_segment_size) + " bytes");
        k.args.push_back(std::move(a));
      }
    }
    md.kernels.push_back(std::move(k));
  }
  return md;
}

}  // namespace aqueduct::code

// aqueduct/code/fat_binary.hpp — one entry point for whatever a user hands us: a code object, an
// offload bundle, a CCOB, or a host object whose .hip_fatbin section holds one of those.
//
// Layer: code. `fat_binary::try_open` detects the format, decompresses a CCOB (through
// code/decompress.hpp: link -lzstd -lz), parses the bundle and lists its entries — listing the
// entries of a compressed bundle is the same call. It owns the decompressed payload; otherwise
// it borrows the caller's bytes, which must outlive it. `try_select` then picks an entry for an
// agent (code/isa.hpp). Thread safety: immutable after opening.
#pragma once

#include <aqueduct/code/bundle.hpp>
#include <aqueduct/code/decompress.hpp>
#include <aqueduct/code/elf.hpp>
#include <aqueduct/code/isa.hpp>
#include <aqueduct/core/result.hpp>

#include <memory>
#include <string>
#include <vector>

namespace aqueduct::code {

enum class binary_format : std::uint8_t { code_object, offload_bundle, ccob, unknown };
inline constexpr std::string_view to_string(binary_format f) noexcept {
  switch (f) {
    case binary_format::code_object: return "code object";
    case binary_format::offload_bundle: return "offload bundle";
    case binary_format::ccob: return "compressed offload bundle (CCOB)";
    case binary_format::unknown: return "unknown";
  }
  return "?";
}

[[nodiscard]] inline binary_format detect_format(byte_span b) noexcept {
  if (is_ccob(b)) return binary_format::ccob;
  if (offload_bundle::is_bundle(b)) return binary_format::offload_bundle;
  if (byte_reader(b).starts_with({reinterpret_cast<const char*>(abi::elf_magic), 4})) return binary_format::code_object;
  return binary_format::unknown;
}

// The .hip_fatbin section of a host ELF object, or not_found (spec §1.6 item 14).
inline result<byte_span> try_find_hip_fatbin(byte_span host_elf) {
  AQUEDUCT_TRY(auto elf, elf64_file::try_parse(host_elf));
  const auto* s = elf.section(abi::hip_fatbin_section);
  if (!s) return failure(errc::not_found, "host object has no .hip_fatbin section");
  if (s->type == abi::sht_nobits) return failure(errc::malformed_code_object, ".hip_fatbin is SHT_NOBITS (no file contents)");
  return elf.data(*s);
}

class fat_binary {
 public:
  // Opens a code object, bundle or CCOB; a host ELF (e_machine != EM_AMDGPU) is searched for
  // .hip_fatbin. A plain code object becomes a single entry with an empty ID.
  static result<fat_binary> try_open(byte_span bytes, const decompress_limits& lim = {}) {
    fat_binary fb;
    fb.outer_ = bytes;
    auto fmt = detect_format(bytes);
    if (fmt == binary_format::code_object) {
      auto mach = byte_reader(bytes).get<std::uint16_t>(18);
      if (mach && *mach != abi::em_amdgpu) {
        AQUEDUCT_TRY(auto inner, try_find_hip_fatbin(bytes));
        fb.from_host_object_ = true;
        bytes = inner;
        fmt = detect_format(bytes);
        if (fmt != binary_format::ccob && fmt != binary_format::offload_bundle)
          return failure(errc::malformed_bundle, ".hip_fatbin holds neither an offload bundle nor a CCOB");
      }
    }
    fb.format_ = fmt;
    switch (fmt) {
      case binary_format::unknown:
        return failure(errc::unsupported_format, "not an ELF code object, offload bundle (__CLANG_OFFLOAD_BUNDLE__) or CCOB");
      case binary_format::code_object:
        AQUEDUCT_TRY_VOID(code_object::try_parse(bytes));
        fb.entries_.push_back({std::string_view{}, 0, bytes.size(), bytes});
        return fb;
      case binary_format::ccob: {
        AQUEDUCT_TRY(fb.ccob_, try_parse_ccob_header(bytes));
        AQUEDUCT_TRY(auto payload, try_decompress_ccob(*fb.ccob_, lim));
        fb.payload_ = std::make_shared<std::vector<std::byte>>(std::move(payload));
        bytes = byte_span(*fb.payload_);
        [[fallthrough]];
      }
      case binary_format::offload_bundle: {
        AQUEDUCT_TRY(auto b, offload_bundle::try_parse(bytes));
        fb.entries_ = b.entries();
        return fb;
      }
    }
    return failure(errc::unsupported_format, "unreachable");
  }
  static fat_binary open(byte_span bytes, const decompress_limits& lim = {}) { return try_open(bytes, lim).value(); }

  [[nodiscard]] binary_format format() const noexcept { return format_; }
  [[nodiscard]] bool from_host_object() const noexcept { return from_host_object_; }
  [[nodiscard]] const std::optional<ccob_header>& ccob() const noexcept { return ccob_; }
  // Entries in file order (IDs and data point into the input or the owned payload).
  [[nodiscard]] const std::vector<bundle_entry>& entries() const noexcept { return entries_; }

  // A plain code object fits or not; a bundle's best entry is chosen (code/isa.hpp).
  [[nodiscard]] result<selection> try_select(const target_id& agent, const selection_policy& pol = {},
                                             std::span<const offload_kind> kinds = {}) const {
    if (format_ == binary_format::code_object) {
      AQUEDUCT_TRY(auto co, code_object::try_parse(entries_[0].data));
      auto m = try_match(co.e_flags(), agent, pol);
      if (!m) return failure(errc::no_compatible_isa, "the code object does not fit " + agent.to_string() + ": " + std::string(m.detail()));
      return selection{0, std::string(target_of(co).to_string()), std::move(*m)};
    }
    return code::try_select(entries_, agent, pol, kinds);
  }
  [[nodiscard]] selection select(const target_id& agent, const selection_policy& pol = {}, std::span<const offload_kind> kinds = {}) const {
    return try_select(agent, pol, kinds).value();
  }

 private:
  byte_span outer_{};
  binary_format format_ = binary_format::unknown;
  bool from_host_object_ = false;
  std::optional<ccob_header> ccob_;
  std::shared_ptr<std::vector<std::byte>> payload_;  // shared: copies of fat_binary stay valid
  std::vector<bundle_entry> entries_;
};

// The entry IDs of a bundle, CCOB (decompressed first) or host object's .hip_fatbin, in file
// order; a plain code object lists its target ID. The first-class "what is in this file" call.
inline result<std::vector<std::string>> try_list_bundle_ids(byte_span bytes, const decompress_limits& lim = {}) {
  AQUEDUCT_TRY(auto fb, fat_binary::try_open(bytes, lim));
  std::vector<std::string> ids;
  for (const auto& e : fb.entries()) {
    if (fb.format() == binary_format::code_object) ids.push_back(target_of(code_object::parse(e.data)).to_string());
    else ids.emplace_back(e.id);
  }
  return ids;
}

}  // namespace aqueduct::code

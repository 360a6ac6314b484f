// aqueduct/code/elf.hpp — ELF64 reader for AMDGPU code objects v4, v5 and v6 (and host objects).
//
// Layer: code. `elf64_file` reads any little-endian ELF64 (the host object that carries a
// .hip_fatbin is x86-64); `code_object` adds the AMDGPU checks of spec/code-objects.md §2: OSABI
// AMDGPU_HSA, ABI version → code-object version, EM_AMDGPU, ET_DYN or ET_REL, and decodes e_flags
// (processor, xnack/sramecc, generic version). Every offset and size read from the file is
// bounds-checked; a malformed file gives errc::malformed_code_object (unknown versions:
// errc::unsupported_format) with a detail naming the field and the numbers. Both are non-owning
// views: the bytes must outlive them (names are string_views into the bytes).
// Thread safety: immutable after parsing; concurrent reads are fine.
#pragma once

#include <aqueduct/abi/elf.hpp>
#include <aqueduct/code/bytes.hpp>
#include <aqueduct/core/result.hpp>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aqueduct::code {

// The v4+ two-bit feature fields of e_flags (spec §2.2), or a target ID's feature.
enum class feature_setting : std::uint8_t { unsupported = 0, any = 1, off = 2, on = 3 };

inline constexpr std::string_view to_string(feature_setting f) noexcept {
  switch (f) {
    case feature_setting::unsupported: return "unsupported";
    case feature_setting::any: return "any";
    case feature_setting::off: return "off";
    case feature_setting::on: return "on";
  }
  return "?";
}

struct elf_section {
  std::uint32_t index = 0;
  std::string_view name;
  std::uint32_t type = 0;
  std::uint64_t flags = 0, addr = 0, offset = 0, size = 0;
  std::uint32_t link = 0, info = 0;
  std::uint64_t addralign = 0, entsize = 0;
};

struct elf_symbol {
  std::string_view name;
  std::uint64_t value = 0, size = 0;
  std::uint8_t type = 0, bind = 0, visibility = 0;
  std::uint16_t shndx = 0;
  bool dynamic = false;  // from .dynsym (else .symtab)
};

struct elf_note {
  std::string_view owner;
  std::uint32_t type = 0;
  byte_span desc;
};

namespace detail {
inline failure elf_bad(std::string what) { return failure(errc::malformed_code_object, std::move(what)); }
}  // namespace detail

// Any little-endian ELF64: header, section and program header tables, symbols, notes.
class elf64_file {
 public:
  static result<elf64_file> try_parse(byte_span bytes) {
    elf64_file f;
    f.r_ = byte_reader(bytes);
    auto eh = f.r_.record<abi::elf64_ehdr>(0);
    if (!eh) return detail::elf_bad("file of " + std::to_string(bytes.size()) + " bytes is shorter than the 64-byte ELF header");
    f.eh_ = *eh;
    if (std::memcmp(f.eh_.e_ident, abi::elf_magic, 4) != 0) return detail::elf_bad("no ELF magic (7f 45 4c 46)");
    if (f.eh_.e_ident[abi::ei_class] != abi::elfclass64)
      return detail::elf_bad("EI_CLASS " + std::to_string(f.eh_.e_ident[abi::ei_class]) + ", expected 2 (ELFCLASS64)");
    if (f.eh_.e_ident[abi::ei_data] != abi::elfdata2lsb)
      return detail::elf_bad("EI_DATA " + std::to_string(f.eh_.e_ident[abi::ei_data]) + ", expected 1 (little-endian)");
    if (f.eh_.e_ehsize < sizeof(abi::elf64_ehdr)) return detail::elf_bad("e_ehsize " + std::to_string(f.eh_.e_ehsize) + " < 64");
    const std::uint64_t n = bytes.size();
    if (f.eh_.e_phnum != 0) {
      if (f.eh_.e_phentsize != sizeof(abi::elf64_phdr))
        return detail::elf_bad("e_phentsize " + std::to_string(f.eh_.e_phentsize) + ", expected 56");
      if (!range_ok(f.eh_.e_phoff, std::uint64_t(f.eh_.e_phnum) * 56, n))
        return detail::elf_bad("program header table at " + hex(f.eh_.e_phoff) + " (" + std::to_string(f.eh_.e_phnum) +
                               " x 56 bytes) exceeds the file size " + std::to_string(n));
      for (std::uint32_t i = 0; i < f.eh_.e_phnum; ++i) {
        auto ph = *f.r_.record<abi::elf64_phdr>(f.eh_.e_phoff + std::uint64_t(i) * 56);
        if (ph.p_type != abi::pt_null && ph.p_filesz != 0 && !range_ok(ph.p_offset, ph.p_filesz, n))
          return detail::elf_bad("program header " + std::to_string(i) + ": file range " + hex(ph.p_offset) + "+" +
                                 hex(ph.p_filesz) + " exceeds the file size " + std::to_string(n));
        if (ph.p_type == abi::pt_load && ph.p_filesz > ph.p_memsz)
          return detail::elf_bad("program header " + std::to_string(i) + ": p_filesz " + hex(ph.p_filesz) + " > p_memsz " + hex(ph.p_memsz));
        f.phdrs_.push_back(ph);
      }
    }
    if (f.eh_.e_shoff != 0 || f.eh_.e_shnum != 0) {
      if (f.eh_.e_shnum == 0 || f.eh_.e_shstrndx == abi::shn_xindex)
        return failure(errc::unsupported_format, "extended section numbering (e_shnum 0 or e_shstrndx SHN_XINDEX) is not supported");
      if (f.eh_.e_shentsize != sizeof(abi::elf64_shdr))
        return detail::elf_bad("e_shentsize " + std::to_string(f.eh_.e_shentsize) + ", expected 64");
      if (!range_ok(f.eh_.e_shoff, std::uint64_t(f.eh_.e_shnum) * 64, n))
        return detail::elf_bad("section header table at " + hex(f.eh_.e_shoff) + " (" + std::to_string(f.eh_.e_shnum) +
                               " x 64 bytes) exceeds the file size " + std::to_string(n));
      if (f.eh_.e_shstrndx >= f.eh_.e_shnum)
        return detail::elf_bad("e_shstrndx " + std::to_string(f.eh_.e_shstrndx) + " >= e_shnum " + std::to_string(f.eh_.e_shnum));
      std::vector<abi::elf64_shdr> raw;
      for (std::uint32_t i = 0; i < f.eh_.e_shnum; ++i) {
        auto sh = *f.r_.record<abi::elf64_shdr>(f.eh_.e_shoff + std::uint64_t(i) * 64);
        if (sh.sh_type != abi::sht_nobits && sh.sh_type != abi::sht_null && !range_ok(sh.sh_offset, sh.sh_size, n))
          return detail::elf_bad("section " + std::to_string(i) + ": file range " + hex(sh.sh_offset) + "+" + hex(sh.sh_size) +
                                 " exceeds the file size " + std::to_string(n));
        raw.push_back(sh);
      }
      const auto& strsh = raw[f.eh_.e_shstrndx];
      if (strsh.sh_type != abi::sht_strtab)
        return detail::elf_bad("section name table (section " + std::to_string(f.eh_.e_shstrndx) + ") has type " +
                               std::to_string(strsh.sh_type) + ", expected SHT_STRTAB");
      byte_reader names(*f.r_.sub(strsh.sh_offset, strsh.sh_size));
      for (std::uint32_t i = 0; i < raw.size(); ++i) {
        const auto& sh = raw[i];
        auto nm = names.c_string(sh.sh_name);
        if (!nm && !(i == 0 && sh.sh_name == 0 && strsh.sh_size == 0))
          return detail::elf_bad("section " + std::to_string(i) + ": name offset " + std::to_string(sh.sh_name) +
                                 " outside the section name table of " + std::to_string(strsh.sh_size) + " bytes");
        f.sections_.push_back({i, nm.value_or(""), sh.sh_type, sh.sh_flags, sh.sh_addr, sh.sh_offset, sh.sh_size,
                               sh.sh_link, sh.sh_info, sh.sh_addralign, sh.sh_entsize});
      }
    }
    return f;
  }

  [[nodiscard]] const abi::elf64_ehdr& header() const noexcept { return eh_; }
  [[nodiscard]] byte_span bytes() const noexcept { return r_.bytes(); }
  [[nodiscard]] const std::vector<elf_section>& sections() const noexcept { return sections_; }
  [[nodiscard]] const std::vector<abi::elf64_phdr>& segments() const noexcept { return phdrs_; }

  [[nodiscard]] const elf_section* section(std::string_view name) const noexcept {
    for (const auto& s : sections_)
      if (s.name == name) return &s;
    return nullptr;
  }
  // File bytes of a section (empty for SHT_NOBITS); bounds were checked at parse time.
  [[nodiscard]] byte_span data(const elf_section& s) const noexcept {
    if (s.type == abi::sht_nobits || s.type == abi::sht_null) return {};
    return *r_.sub(s.offset, s.size);
  }

  // Symbols of .symtab and .dynsym (dynamic first), names resolved through sh_link.
  [[nodiscard]] result<std::vector<elf_symbol>> try_symbols() const {
    std::vector<elf_symbol> out;
    for (std::uint32_t pass = 0; pass < 2; ++pass) {
      for (const auto& s : sections_) {
        if (s.type != (pass == 0 ? abi::sht_dynsym : abi::sht_symtab)) continue;
        if (s.entsize != sizeof(abi::elf64_sym))
          return detail::elf_bad("symbol table " + std::string(s.name) + ": sh_entsize " + std::to_string(s.entsize) + ", expected 24");
        if (s.link >= sections_.size() || sections_[s.link].type != abi::sht_strtab)
          return detail::elf_bad("symbol table " + std::string(s.name) + ": sh_link " + std::to_string(s.link) + " is not a string table");
        byte_reader strs(data(sections_[s.link]));
        byte_reader syms(data(s));
        for (std::uint64_t off = 0; off + 24 <= s.size; off += 24) {
          auto sym = *syms.record<abi::elf64_sym>(off);
          auto nm = strs.c_string(sym.st_name);
          if (!nm)
            return detail::elf_bad("symbol table " + std::string(s.name) + ": name offset " + std::to_string(sym.st_name) +
                                   " outside its string table");
          out.push_back({*nm, sym.st_value, sym.st_size, static_cast<std::uint8_t>(sym.st_info & 0xf),
                         static_cast<std::uint8_t>(sym.st_info >> 4), static_cast<std::uint8_t>(sym.st_other & 3),
                         sym.st_shndx, pass == 0});
        }
      }
    }
    return out;
  }

  // Notes from SHT_NOTE sections, or from PT_NOTE segments when there are no sections.
  [[nodiscard]] result<std::vector<elf_note>> try_notes() const {
    std::vector<elf_note> out;
    bool any_section = false;
    for (const auto& s : sections_) {
      if (s.type != abi::sht_note) continue;
      any_section = true;
      AQUEDUCT_TRY_VOID(parse_notes(data(s), s.addralign == 8 ? 8 : 4, out));
    }
    if (!any_section)
      for (const auto& p : phdrs_)
        // An empty PT_NOTE may name any offset (try_parse bounds only non-empty ranges): it holds no notes.
        if (p.p_type == abi::pt_note && p.p_filesz != 0)
          AQUEDUCT_TRY_VOID(parse_notes(*r_.sub(p.p_offset, p.p_filesz), p.p_align == 8 ? 8 : 4, out));
    return out;
  }

 private:
  static result<void> parse_notes(byte_span b, std::uint64_t align, std::vector<elf_note>& out) {
    byte_reader r(b);
    std::uint64_t off = 0;
    while (off < r.size()) {
      auto nh = r.record<abi::elf64_nhdr>(off);
      if (!nh) return detail::elf_bad("note at offset " + std::to_string(off) + ": header truncated");
      std::uint64_t name_off = off + 12;
      std::uint64_t desc_off = name_off + ((std::uint64_t(nh->n_namesz) + align - 1) & ~(align - 1));
      if (!r.has(name_off, nh->n_namesz) || !r.has(desc_off, nh->n_descsz))
        return detail::elf_bad("note at offset " + std::to_string(off) + ": namesz " + std::to_string(nh->n_namesz) + " / descsz " +
                               std::to_string(nh->n_descsz) + " exceed the note area of " + std::to_string(r.size()) + " bytes");
      auto name = r.sub(name_off, nh->n_namesz);
      std::string_view owner(reinterpret_cast<const char*>(name->data()), name->size());
      if (!owner.empty() && owner.back() == '\0') owner.remove_suffix(1);
      out.push_back({owner, nh->n_type, *r.sub(desc_off, nh->n_descsz)});
      off = desc_off + ((std::uint64_t(nh->n_descsz) + align - 1) & ~(align - 1));
    }
    return ok();
  }

  byte_reader r_{};
  abi::elf64_ehdr eh_{};
  std::vector<elf_section> sections_;
  std::vector<abi::elf64_phdr> phdrs_;
};

// A kernel found through its `<name>.kd` symbol (spec §3): the descriptor's address and bytes.
struct kernel_symbol {
  std::string_view name;        // without ".kd"
  std::string_view kd_symbol;   // "<name>.kd"
  std::uint64_t kd_address = 0; // st_value (ET_DYN: virtual address; ET_REL: section offset)
  byte_span descriptor;         // the 64 bytes
  bool dynamic = false;         // exported through .dynsym
};

// An AMDGPU HSA code object, v4–v6 (spec §2).
class code_object {
 public:
  static result<code_object> try_parse(byte_span bytes) {
    AQUEDUCT_TRY(auto elf, elf64_file::try_parse(bytes));
    const auto& h = elf.header();
    if (h.e_machine != abi::em_amdgpu)
      return detail::elf_bad("e_machine " + std::to_string(h.e_machine) + ", expected 224 (EM_AMDGPU): not an AMDGPU code object");
    if (h.e_ident[abi::ei_osabi] != abi::elfosabi_amdgpu_hsa)
      return failure(errc::unsupported_format, "EI_OSABI " + std::to_string(h.e_ident[abi::ei_osabi]) +
                                                   ", expected 64 (AMDGPU_HSA); PAL/Mesa objects are not loadable");
    const unsigned abiv = h.e_ident[abi::ei_abiversion];
    if (abiv < abi::elfabiversion_amdgpu_hsa_v4 || abiv > abi::elfabiversion_amdgpu_hsa_v6)
      return failure(errc::unsupported_format, "EI_ABIVERSION " + std::to_string(abiv) + " = code object v" + std::to_string(abiv + 2) +
                                                   "; only v4, v5, v6 (ABI version 2-4) are supported");
    if (h.e_type != abi::et_dyn && h.e_type != abi::et_rel)
      return detail::elf_bad("e_type " + std::to_string(h.e_type) + ", expected ET_DYN (3) or ET_REL (1)");
    const int cov = static_cast<int>(abiv) + 2;
    if (cov < 6 && (h.e_flags & abi::ef_amdgpu_generic_version) != 0)
      return detail::elf_bad("e_flags " + hex(h.e_flags) + " sets a generic version, which needs code object v6");
    if ((h.e_flags & ~abi::ef_amdgpu_known_bits_v6) != 0)
      return detail::elf_bad("e_flags " + hex(h.e_flags) + " has bits outside MACH/XNACK/SRAMECC/GENERIC_VERSION");
    code_object co;
    co.elf_ = std::move(elf);
    co.version_ = cov;
    AQUEDUCT_TRY(co.symbols_, co.elf_.try_symbols());
    AQUEDUCT_TRY(co.notes_, co.elf_.try_notes());
    AQUEDUCT_TRY_VOID(co.find_kernels());
    return co;
  }
  static code_object parse(byte_span bytes) { return try_parse(bytes).value(); }

  [[nodiscard]] const elf64_file& elf() const noexcept { return elf_; }
  [[nodiscard]] int version() const noexcept { return version_; }  // 4, 5 or 6
  [[nodiscard]] std::uint32_t e_flags() const noexcept { return elf_.header().e_flags; }
  [[nodiscard]] std::uint8_t mach() const noexcept { return static_cast<std::uint8_t>(e_flags() & abi::ef_amdgpu_mach); }
  [[nodiscard]] feature_setting xnack() const noexcept { return static_cast<feature_setting>((e_flags() >> 8) & 3); }
  [[nodiscard]] feature_setting sramecc() const noexcept { return static_cast<feature_setting>((e_flags() >> 10) & 3); }
  [[nodiscard]] std::uint8_t generic_version() const noexcept { return static_cast<std::uint8_t>(e_flags() >> 24); }
  [[nodiscard]] bool relocatable() const noexcept { return elf_.header().e_type == abi::et_rel; }
  [[nodiscard]] const std::vector<elf_symbol>& symbols() const noexcept { return symbols_; }
  [[nodiscard]] const std::vector<elf_note>& notes() const noexcept { return notes_; }
  [[nodiscard]] const std::vector<kernel_symbol>& kernels() const noexcept { return kernels_; }
  [[nodiscard]] const kernel_symbol* kernel(std::string_view name) const noexcept {
    for (const auto& k : kernels_)
      if (k.name == name || k.kd_symbol == name) return &k;
    return nullptr;
  }
  // The NT_AMDGPU_METADATA descriptor (msgpack), if present.
  [[nodiscard]] std::optional<byte_span> metadata_note() const noexcept {
    for (const auto& n : notes_)
      if (n.owner == abi::amdgpu_note_owner && n.type == abi::nt_amdgpu_metadata) return n.desc;
    return std::nullopt;
  }

 private:
  result<void> find_kernels() {
    for (const auto& s : symbols_) {
      if (s.type != abi::stt_object || s.name.size() <= 3 || !s.name.ends_with(".kd")) continue;
      bool seen = false;
      for (const auto& k : kernels_) seen = seen || k.kd_symbol == s.name;
      if (seen) continue;  // .dynsym and .symtab both list exported kernels
      const std::string who = "kernel descriptor symbol " + std::string(s.name);
      if (s.size != 64) return detail::elf_bad(who + ": st_size " + std::to_string(s.size) + ", expected 64");
      if (s.shndx == abi::shn_undef || s.shndx >= elf_.sections().size())
        return detail::elf_bad(who + ": section index " + std::to_string(s.shndx) + " is not a section of this file");
      const auto& sec = elf_.sections()[s.shndx];
      std::uint64_t in_sec = relocatable() ? s.value : s.value - sec.addr;
      const byte_span contents = elf_.data(sec);  // empty for SHT_NOBITS / SHT_NULL whatever sh_size says
      if ((!relocatable() && s.value < sec.addr) || !range_ok(in_sec, 64, contents.size()))
        return detail::elf_bad(who + ": value " + hex(s.value) + " + 64 lies outside its section " + std::string(sec.name) + " [" +
                               hex(sec.addr) + ", +" + hex(sec.size) + ")");
      kernel_symbol k;
      k.kd_symbol = s.name;
      k.name = s.name.substr(0, s.name.size() - 3);
      k.kd_address = s.value;
      k.descriptor = contents.subspan(static_cast<std::size_t>(in_sec), 64);
      k.dynamic = s.dynamic;
      kernels_.push_back(k);
    }
    return ok();
  }

  elf64_file elf_;
  int version_ = 0;
  std::vector<elf_symbol> symbols_;
  std::vector<elf_note> notes_;
  std::vector<kernel_symbol> kernels_;
};

}  // namespace aqueduct::code

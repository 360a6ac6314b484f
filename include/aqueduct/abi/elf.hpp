// aqueduct/abi/elf.hpp — ELF64 records and the AMDGPU constants of code objects v4–v6.
//
// Layer: abi (bit-exact wire formats only). The ELF64 records are the System V gABI layout;
// the AMDGPU values come from LLVM 19's AMDGPUUsage and BinaryFormat/ELF.h
// (spec/code-objects.md §2). Everything little-endian: AMDGPU code objects are ELFDATA2LSB, and
// the readers in code/ copy fields out with memcpy, never through a cast pointer, so these
// structs describe layout and are never overlaid on unaligned input.
// Thread safety: constants and trivially copyable types.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aqueduct::abi {

// ---- identification (spec/code-objects.md §2.1) -------------------------------------------
inline constexpr std::uint8_t elf_magic[4] = {0x7f, 'E', 'L', 'F'};
inline constexpr std::size_t ei_class = 4, ei_data = 5, ei_version = 6, ei_osabi = 7, ei_abiversion = 8;
inline constexpr std::uint8_t elfclass64 = 2;
inline constexpr std::uint8_t elfdata2lsb = 1;
inline constexpr std::uint8_t ev_current = 1;
inline constexpr std::uint8_t elfosabi_none = 0;
inline constexpr std::uint8_t elfosabi_amdgpu_hsa = 64;
inline constexpr std::uint8_t elfosabi_amdgpu_pal = 65;
inline constexpr std::uint8_t elfosabi_amdgpu_mesa3d = 66;
// EI_ABIVERSION for ELFOSABI_AMDGPU_HSA: code object version = abiversion + 2 (§2.1).
inline constexpr std::uint8_t elfabiversion_amdgpu_hsa_v2 = 0;
inline constexpr std::uint8_t elfabiversion_amdgpu_hsa_v3 = 1;
inline constexpr std::uint8_t elfabiversion_amdgpu_hsa_v4 = 2;
inline constexpr std::uint8_t elfabiversion_amdgpu_hsa_v5 = 3;
inline constexpr std::uint8_t elfabiversion_amdgpu_hsa_v6 = 4;

inline constexpr std::uint16_t et_rel = 1, et_exec = 2, et_dyn = 3;
inline constexpr std::uint16_t em_x86_64 = 62;
inline constexpr std::uint16_t em_amdgpu = 224;  // 0xe0

// ---- e_flags (spec §2.2) --------------------------------------------------------------------
inline constexpr std::uint32_t ef_amdgpu_mach = 0x000000ffu;
inline constexpr std::uint32_t ef_amdgpu_feature_xnack_v4 = 0x00000300u;  // 2-bit field
inline constexpr std::uint32_t ef_amdgpu_feature_xnack_unsupported_v4 = 0x000u;
inline constexpr std::uint32_t ef_amdgpu_feature_xnack_any_v4 = 0x100u;
inline constexpr std::uint32_t ef_amdgpu_feature_xnack_off_v4 = 0x200u;
inline constexpr std::uint32_t ef_amdgpu_feature_xnack_on_v4 = 0x300u;
inline constexpr std::uint32_t ef_amdgpu_feature_sramecc_v4 = 0x00000c00u;
inline constexpr std::uint32_t ef_amdgpu_feature_sramecc_unsupported_v4 = 0x000u;
inline constexpr std::uint32_t ef_amdgpu_feature_sramecc_any_v4 = 0x400u;
inline constexpr std::uint32_t ef_amdgpu_feature_sramecc_off_v4 = 0x800u;
inline constexpr std::uint32_t ef_amdgpu_feature_sramecc_on_v4 = 0xc00u;
inline constexpr std::uint32_t ef_amdgpu_generic_version = 0xff000000u;  // v6+
inline constexpr unsigned ef_amdgpu_generic_version_offset = 24;
// Bits 12..23 are unused in v4–v6; a reader reports them rather than guessing.
inline constexpr std::uint32_t ef_amdgpu_known_bits_v6 = 0xff000fffu;

// EF_AMDGPU_MACH values (spec §2.3, LLVM 19 ELF.h; later-LLVM values marked).
enum class ef_amdgpu_mach_value : std::uint8_t {
  none = 0x00,
  gfx600 = 0x20, gfx601 = 0x21, gfx700 = 0x22, gfx701 = 0x23, gfx702 = 0x24, gfx703 = 0x25,
  gfx704 = 0x26, gfx801 = 0x28, gfx802 = 0x29, gfx803 = 0x2a, gfx810 = 0x2b,
  gfx900 = 0x2c, gfx902 = 0x2d, gfx904 = 0x2e, gfx906 = 0x2f, gfx908 = 0x30, gfx909 = 0x31,
  gfx90c = 0x32, gfx1010 = 0x33, gfx1011 = 0x34, gfx1012 = 0x35, gfx1030 = 0x36, gfx1031 = 0x37,
  gfx1032 = 0x38, gfx1033 = 0x39, gfx602 = 0x3a, gfx705 = 0x3b, gfx805 = 0x3c, gfx1035 = 0x3d,
  gfx1034 = 0x3e, gfx90a = 0x3f, gfx940 = 0x40, gfx1100 = 0x41, gfx1013 = 0x42, gfx1150 = 0x43,
  gfx1103 = 0x44, gfx1036 = 0x45, gfx1101 = 0x46, gfx1102 = 0x47, gfx1200 = 0x48,
  gfx1250 = 0x49,  // later LLVM (reserved in 19)
  gfx1151 = 0x4a, gfx941 = 0x4b, gfx942 = 0x4c, gfx1201 = 0x4e,
  gfx950 = 0x4f,   // later LLVM
  gfx9_generic = 0x51, gfx10_1_generic = 0x52, gfx10_3_generic = 0x53, gfx11_generic = 0x54,
  gfx1152 = 0x55,
  gfx1153 = 0x58,  // later LLVM
  gfx12_generic = 0x59,
  gfx1251 = 0x5a, gfx12_5_generic = 0x5b,  // later LLVM
  gfx9_4_generic = 0x5f,                   // later LLVM
};

// ---- notes (spec §2.4) ----------------------------------------------------------------------
inline constexpr std::uint32_t nt_amdgpu_metadata = 32;  // owner "AMDGPU", msgpack descriptor
inline constexpr char amdgpu_note_owner[] = "AMDGPU";

// ---- sections, segments, symbols, dynamic tags (System V gABI) -------------------------------
inline constexpr std::uint32_t sht_null = 0, sht_progbits = 1, sht_symtab = 2, sht_strtab = 3, sht_rela = 4,
                               sht_hash = 5, sht_dynamic = 6, sht_note = 7, sht_nobits = 8, sht_rel = 9,
                               sht_dynsym = 11;
inline constexpr std::uint64_t shf_write = 0x1, shf_alloc = 0x2, shf_execinstr = 0x4;
inline constexpr std::uint16_t shn_undef = 0, shn_loreserve = 0xff00, shn_abs = 0xfff1, shn_xindex = 0xffff;
inline constexpr std::uint32_t pt_null = 0, pt_load = 1, pt_dynamic = 2, pt_note = 4, pt_phdr = 6;
inline constexpr std::uint32_t pf_x = 1, pf_w = 2, pf_r = 4;
inline constexpr std::uint8_t stt_notype = 0, stt_object = 1, stt_func = 2, stt_section = 3,
                              stt_amdgpu_hsa_kernel = 10;
inline constexpr std::uint8_t stb_local = 0, stb_global = 1, stb_weak = 2;
inline constexpr std::int64_t dt_null = 0, dt_hash = 4, dt_strtab = 5, dt_symtab = 6, dt_rela = 7,
                              dt_relasz = 8, dt_relaent = 9, dt_strsz = 10, dt_syment = 11, dt_rel = 17,
                              dt_relsz = 18, dt_relent = 19, dt_relacount = 0x6ffffff9;

// AMDGPU relocation types (LLVM 19 ELFRelocs/AMDGPU.def; AMDGPUUsage "Relocation Records").
inline constexpr std::uint32_t r_amdgpu_none = 0, r_amdgpu_abs32_lo = 1, r_amdgpu_abs32_hi = 2,
                               r_amdgpu_abs64 = 3, r_amdgpu_rel32 = 4, r_amdgpu_rel64 = 5, r_amdgpu_abs32 = 6,
                               r_amdgpu_gotpcrel = 7, r_amdgpu_gotpcrel32_lo = 8, r_amdgpu_gotpcrel32_hi = 9,
                               r_amdgpu_rel32_lo = 10, r_amdgpu_rel32_hi = 11, r_amdgpu_relative64 = 13,
                               r_amdgpu_rel16 = 14;

// ---- records ------------------------------------------------------------------------------
struct elf64_ehdr {  // System V gABI "ELF Header"
  std::uint8_t e_ident[16];
  std::uint16_t e_type;
  std::uint16_t e_machine;
  std::uint32_t e_version;
  std::uint64_t e_entry;
  std::uint64_t e_phoff;
  std::uint64_t e_shoff;
  std::uint32_t e_flags;
  std::uint16_t e_ehsize;
  std::uint16_t e_phentsize;
  std::uint16_t e_phnum;
  std::uint16_t e_shentsize;
  std::uint16_t e_shnum;
  std::uint16_t e_shstrndx;
};
static_assert(sizeof(elf64_ehdr) == 64 && alignof(elf64_ehdr) == 8);
static_assert(offsetof(elf64_ehdr, e_type) == 16 && offsetof(elf64_ehdr, e_machine) == 18);
static_assert(offsetof(elf64_ehdr, e_version) == 20 && offsetof(elf64_ehdr, e_entry) == 24);
static_assert(offsetof(elf64_ehdr, e_phoff) == 32 && offsetof(elf64_ehdr, e_shoff) == 40);
static_assert(offsetof(elf64_ehdr, e_flags) == 48 && offsetof(elf64_ehdr, e_ehsize) == 52);
static_assert(offsetof(elf64_ehdr, e_phentsize) == 54 && offsetof(elf64_ehdr, e_phnum) == 56);
static_assert(offsetof(elf64_ehdr, e_shentsize) == 58 && offsetof(elf64_ehdr, e_shnum) == 60);
static_assert(offsetof(elf64_ehdr, e_shstrndx) == 62);

struct elf64_shdr {  // gABI "Section Header"
  std::uint32_t sh_name;
  std::uint32_t sh_type;
  std::uint64_t sh_flags;
  std::uint64_t sh_addr;
  std::uint64_t sh_offset;
  std::uint64_t sh_size;
  std::uint32_t sh_link;
  std::uint32_t sh_info;
  std::uint64_t sh_addralign;
  std::uint64_t sh_entsize;
};
static_assert(sizeof(elf64_shdr) == 64);
static_assert(offsetof(elf64_shdr, sh_type) == 4 && offsetof(elf64_shdr, sh_flags) == 8);
static_assert(offsetof(elf64_shdr, sh_addr) == 16 && offsetof(elf64_shdr, sh_offset) == 24);
static_assert(offsetof(elf64_shdr, sh_size) == 32 && offsetof(elf64_shdr, sh_link) == 40);
static_assert(offsetof(elf64_shdr, sh_info) == 44 && offsetof(elf64_shdr, sh_addralign) == 48);
static_assert(offsetof(elf64_shdr, sh_entsize) == 56);

struct elf64_phdr {  // gABI "Program Header"
  std::uint32_t p_type;
  std::uint32_t p_flags;
  std::uint64_t p_offset;
  std::uint64_t p_vaddr;
  std::uint64_t p_paddr;
  std::uint64_t p_filesz;
  std::uint64_t p_memsz;
  std::uint64_t p_align;
};
static_assert(sizeof(elf64_phdr) == 56);
static_assert(offsetof(elf64_phdr, p_flags) == 4 && offsetof(elf64_phdr, p_offset) == 8);
static_assert(offsetof(elf64_phdr, p_vaddr) == 16 && offsetof(elf64_phdr, p_paddr) == 24);
static_assert(offsetof(elf64_phdr, p_filesz) == 32 && offsetof(elf64_phdr, p_memsz) == 40);
static_assert(offsetof(elf64_phdr, p_align) == 48);

struct elf64_sym {  // gABI "Symbol Table Entry"
  std::uint32_t st_name;
  std::uint8_t st_info;   // bind << 4 | type
  std::uint8_t st_other;  // visibility in bits 1:0
  std::uint16_t st_shndx;
  std::uint64_t st_value;
  std::uint64_t st_size;
};
static_assert(sizeof(elf64_sym) == 24);
static_assert(offsetof(elf64_sym, st_info) == 4 && offsetof(elf64_sym, st_other) == 5);
static_assert(offsetof(elf64_sym, st_shndx) == 6 && offsetof(elf64_sym, st_value) == 8);
static_assert(offsetof(elf64_sym, st_size) == 16);

struct elf64_rela {  // gABI "Relocation Entries"
  std::uint64_t r_offset;
  std::uint64_t r_info;  // sym << 32 | type
  std::int64_t r_addend;
};
static_assert(sizeof(elf64_rela) == 24 && offsetof(elf64_rela, r_info) == 8 && offsetof(elf64_rela, r_addend) == 16);

struct elf64_dyn {  // gABI "Dynamic Section"
  std::int64_t d_tag;
  std::uint64_t d_val;
};
static_assert(sizeof(elf64_dyn) == 16 && offsetof(elf64_dyn, d_val) == 8);

struct elf64_nhdr {  // gABI "Note Section"; name and descriptor follow, each padded to 4
  std::uint32_t n_namesz;
  std::uint32_t n_descsz;
  std::uint32_t n_type;
};
static_assert(sizeof(elf64_nhdr) == 12 && offsetof(elf64_nhdr, n_descsz) == 4 && offsetof(elf64_nhdr, n_type) == 8);

}  // namespace aqueduct::abi

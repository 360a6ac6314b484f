// aqueduct/code/loader.hpp — loading a code object into GPU memory and making its kernels
// ready for dispatch.
//
// Layer: code. `try_load(code_object, allocator)` places every PT_LOAD segment of an ET_DYN code
// object into one block from a `code_memory_allocator` (the runtime passes kfd/ or emulator
// memory: the loader only needs a GPU VA and a host mapping of it), zero-fills the bss tails,
// applies the dynamic relocations clang-19/lld-19 emit (R_AMDGPU_RELATIVE64, ABS64, ABS32*,
// REL32*, REL64; AMDGPUUsage "Relocation Records"), and returns a `loaded_executable` whose
// `loaded_kernel`s carry the kernel_object address (the descriptor, for the AQL packet), a copy
// of the descriptor and the kernarg layout from the metadata note.
//
// Emulated device seam: real gfx machine code cannot run on the emulator. An
// `emulated_code_object` (host kernels; wire format in abi/emulated_code.hpp) goes through the same `try_load`
// and yields the same `loaded_kernel`s, whose code is an `emulated_code_blob` naming a host
// function. Every loaded_kernel says which it is (`code_kind`), and `check_runnable(kernel,
// device_is_emulated)` is the gate the dispatch path calls: gfx code on the emulator (or a host
// kernel on a real GPU) is errc::not_supported with the kernel and processor named. If the gate
// were skipped, the emulator's AQL processor would find no emulated-code magic at the entry and
// stop the queue with a queue error.
// Thread safety: a loaded_executable is immutable after loading; it owns its memory (move-only)
// and frees it through the allocator, which must outlive it.
#pragma once

#include <aqueduct/abi/elf.hpp>
#include <aqueduct/abi/emulated_code.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/code/elf.hpp>
#include <aqueduct/code/metadata.hpp>
#include <aqueduct/code/target_id.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>

#include <concepts>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aqueduct::code {

// A block of GPU memory with a host mapping the loader writes through.
struct device_memory {
  gpu_va va{};
  std::byte* host = nullptr;
  std::uint64_t size = 0;
};

// What the loader needs from the runtime's memory manager.
template <class A>
concept code_memory_allocator = requires(A& a, std::uint64_t n, std::uint64_t align, device_memory m) {
  { a.try_allocate_code(n, align) } -> std::same_as<result<device_memory>>;
  { a.free_code(m) } noexcept;
};

enum class kernel_code_kind : std::uint8_t { gfx_isa, emulated_host };

struct loaded_kernel {
  std::string name;
  std::string symbol;                 // "<name>.kd"
  gpu_va kernel_object{};             // descriptor address: the AQL packet's kernel_object
  abi::kernel_descriptor descriptor{};  // copy of what was loaded there
  std::uint64_t kernarg_segment_size = 0;
  std::uint64_t kernarg_segment_align = 0;
  std::uint32_t group_segment_fixed_size = 0;
  std::uint32_t private_segment_fixed_size = 0;
  bool uses_dynamic_stack = false;  // metadata .uses_dynamic_stack (recursion, indirect calls, dynamic allocas)
  std::uint32_t wavefront_size = 0;
  std::vector<kernel_arg> args;  // explicit and hidden, offsets from the metadata
  kernel_code_kind code_kind = kernel_code_kind::gfx_isa;
  std::string processor;    // gfx ISA: the code object's processor; emulated: "emulated"
  std::string host_kernel;  // emulated: the host_kernel_registry name
  // What the code is (code::fnv1a64): gfx ISA, of the whole code object's bytes; emulated, of the
  // kernel's name, descriptor and argument layout (a host function has no bytes to compare).
  // graph/save.hpp compares it at load.
  std::uint64_t code_digest = 0;
  [[nodiscard]] bool runs_on_emulator() const noexcept { return code_kind == kernel_code_kind::emulated_host; }
};

// Processors whose machine code the emulator's ISA interpreter runs (emu/isa/, docs/isa.md): a
// processor name starting with one of these passes the gate on the emulated device.
inline constexpr std::string_view emulator_isa_processors[] = {"gfx11", "gfx12", "gfx90a", "gfx942"};

// The dispatch gate (see the header comment).
inline result<void> check_runnable(const loaded_kernel& k, bool device_is_emulated) {
  bool interpreted = false;
  for (std::string_view p : emulator_isa_processors) interpreted |= k.processor.starts_with(p);
  if (device_is_emulated && !k.runs_on_emulator() && !interpreted) {
    std::string known;
    for (std::string_view p : emulator_isa_processors) known += (known.empty() ? "" : ", ") + std::string(p);
    return failure(errc::not_supported, "kernel " + k.name + " is " + k.processor +
                                            " machine code; the emulated device runs emulated code objects (host kernels) and machine code for " +
                                            known + " only");
  }
  if (!device_is_emulated && k.runs_on_emulator())
    return failure(errc::not_supported, "kernel " + k.name + " is an emulated host kernel (" + k.host_kernel + "); a real GPU cannot run it");
  return ok();
}

template <code_memory_allocator A>
class loaded_executable {
 public:
  loaded_executable(A& alloc, device_memory mem, std::vector<loaded_kernel> ks, std::uint64_t vaddr_base) noexcept
      : alloc_(&alloc), mem_(mem), kernels_(std::move(ks)), vaddr_base_(vaddr_base) {}
  loaded_executable(loaded_executable&& o) noexcept
      : alloc_(std::exchange(o.alloc_, nullptr)), mem_(std::exchange(o.mem_, {})), kernels_(std::move(o.kernels_)), vaddr_base_(o.vaddr_base_) {}
  loaded_executable& operator=(loaded_executable&& o) noexcept {
    if (this != &o) {
      release();
      alloc_ = std::exchange(o.alloc_, nullptr);
      mem_ = std::exchange(o.mem_, {});
      kernels_ = std::move(o.kernels_);
      vaddr_base_ = o.vaddr_base_;
    }
    return *this;
  }
  loaded_executable(const loaded_executable&) = delete;
  loaded_executable& operator=(const loaded_executable&) = delete;
  ~loaded_executable() { release(); }

  [[nodiscard]] const std::vector<loaded_kernel>& kernels() const noexcept { return kernels_; }
  [[nodiscard]] result<const loaded_kernel*> try_kernel(std::string_view name) const {
    for (const auto& k : kernels_)
      if (k.name == name || k.symbol == name) return &k;
    return failure(errc::not_found, "no kernel named " + std::string(name) + " in this executable");
  }
  [[nodiscard]] const loaded_kernel& kernel(std::string_view name) const { return *try_kernel(name).value(); }
  [[nodiscard]] const device_memory& memory() const noexcept { return mem_; }
  // GPU address of the code object's virtual address `vaddr` (ELF p_vaddr space).
  [[nodiscard]] gpu_va address_of(std::uint64_t vaddr) const noexcept { return mem_.va + byte_count(vaddr - vaddr_base_); }

 private:
  void release() noexcept {
    if (alloc_ && mem_.host) alloc_->free_code(mem_);
    alloc_ = nullptr;
    mem_ = {};
  }
  A* alloc_;
  device_memory mem_;
  std::vector<loaded_kernel> kernels_;
  std::uint64_t vaddr_base_ = 0;
};

namespace detail {
inline failure load_bad(std::string d) { return failure(errc::malformed_code_object, "load: " + std::move(d)); }

// Applies the SHT_RELA sections that are part of the image (SHF_ALLOC) to the placed image.
inline result<void> apply_relocations(const code_object& co, std::byte* host, std::uint64_t image_va, std::uint64_t lo, std::uint64_t span) {
  const auto& elf = co.elf();
  for (const auto& s : elf.sections()) {
    if (s.type == abi::sht_rel && (s.flags & abi::shf_alloc))
      return failure(errc::unsupported_format, "load: SHT_REL section " + std::string(s.name) + " (AMDGPU uses RELA only)");
    if (s.type != abi::sht_rela || !(s.flags & abi::shf_alloc)) continue;
    if (s.entsize != sizeof(abi::elf64_rela)) return load_bad(std::string(s.name) + ": sh_entsize " + std::to_string(s.entsize) + ", expected 24");
    if (s.link >= elf.sections().size()) return load_bad(std::string(s.name) + ": sh_link " + std::to_string(s.link) + " is no section");
    byte_reader syms(elf.data(elf.sections()[s.link]));
    byte_reader strs(elf.sections()[s.link].link < elf.sections().size() ? elf.data(elf.sections()[elf.sections()[s.link].link]) : byte_span{});
    byte_reader rel(elf.data(s));
    for (std::uint64_t off = 0; off + 24 <= s.size; off += 24) {
      const auto r = *rel.record<abi::elf64_rela>(off);
      const auto type = static_cast<std::uint32_t>(r.r_info & 0xffffffffu);
      const auto symi = static_cast<std::uint32_t>(r.r_info >> 32);
      const std::string where = std::string(s.name) + " entry " + std::to_string(off / 24) + " (type " + std::to_string(type) + ")";
      if (type == abi::r_amdgpu_none) continue;
      std::uint64_t S = 0;
      if (symi != 0) {
        auto sym = syms.record<abi::elf64_sym>(std::uint64_t(symi) * 24);
        if (!sym) return load_bad(where + ": symbol index " + std::to_string(symi) + " outside the symbol table");
        if (sym->st_shndx == abi::shn_undef) {
          auto nm = strs.c_string(sym->st_name);
          return failure(errc::not_found, "load: " + where + ": undefined symbol " + std::string(nm.value_or("?")) +
                                              " (external symbols are not resolved)");
        }
        S = sym->st_shndx == abi::shn_abs ? sym->st_value : image_va + (sym->st_value - lo);
      }
      const std::uint64_t A = static_cast<std::uint64_t>(r.r_addend);
      const std::uint64_t P = image_va + (r.r_offset - lo);
      std::uint64_t value = 0;
      unsigned width = 8;
      switch (type) {
        case abi::r_amdgpu_relative64: value = image_va - lo + A; break;  // B + A (vaddrs start at lo)
        case abi::r_amdgpu_abs64: value = S + A; break;
        case abi::r_amdgpu_abs32: value = S + A; width = 4; break;
        case abi::r_amdgpu_abs32_lo: value = lo32(S + A); width = 4; break;
        case abi::r_amdgpu_abs32_hi: value = hi32(S + A); width = 4; break;
        case abi::r_amdgpu_rel64: value = S + A - P; break;
        case abi::r_amdgpu_rel32: value = S + A - P; width = 4; break;
        case abi::r_amdgpu_rel32_lo: value = lo32(S + A - P); width = 4; break;
        case abi::r_amdgpu_rel32_hi: value = hi32(S + A - P); width = 4; break;
        case abi::r_amdgpu_rel16: value = ((S + A - P) - 4) / 4; width = 2; break;  // AMDGPUUsage: ((S + A - P) - 4) / 4
        default: return failure(errc::unsupported_format, "load: " + where + ": relocation type not supported by the loader");
      }
      if (r.r_offset < lo || !range_ok(r.r_offset - lo, width, span))
        return load_bad(where + ": target " + hex(r.r_offset) + " outside the loaded image [" + hex(lo) + ", +" + hex(span) + ")");
      std::byte le[8];
      for (unsigned k = 0; k < width; ++k) le[k] = static_cast<std::byte>(value >> (8 * k));
      std::memcpy(host + (r.r_offset - lo), le, width);
    }
  }
  return ok();
}
}  // namespace detail

// Loads an ET_DYN AMDGPU code object (already selected for the agent: see code/isa.hpp).
template <code_memory_allocator A>
result<loaded_executable<A>> try_load(const code_object& co, A& alloc) {
  using detail::load_bad;
  if (co.relocatable()) return failure(errc::unsupported_format, "load: ET_REL object; link it first (ld.lld -shared)");
  std::uint64_t lo = ~std::uint64_t(0), hi = 0, align = page_size;
  bool any = false;
  for (const auto& p : co.elf().segments()) {
    if (p.p_type != abi::pt_load || p.p_memsz == 0) continue;
    if (p.p_align > 1 && !is_pow2(p.p_align)) return load_bad("PT_LOAD p_align " + hex(p.p_align) + " is not a power of two");
    if (p.p_vaddr > (std::uint64_t(1) << 47) || p.p_memsz > (std::uint64_t(1) << 32))
      return load_bad("PT_LOAD at " + hex(p.p_vaddr) + " size " + hex(p.p_memsz) + " is implausibly large");
    if (p.p_align > align) align = p.p_align;
    lo = std::min(lo, align_down(p.p_vaddr, page_size));
    hi = std::max(hi, p.p_vaddr + p.p_memsz);
    any = true;
  }
  if (!any) return load_bad("no PT_LOAD segment");
  if (align > huge_page_size) return load_bad("segment alignment " + hex(align) + " above 2 MiB");
  const std::uint64_t span = align_up(hi - lo, page_size);
  AQUEDUCT_TRY(auto meta_bytes, co.metadata_note() ? result<byte_span>(*co.metadata_note())
                                                    : result<byte_span>(failure(errc::malformed_code_object, "load: no NT_AMDGPU_METADATA note")));
  AQUEDUCT_TRY(auto md, try_parse_metadata(meta_bytes));
  AQUEDUCT_TRY(auto mem, alloc.try_allocate_code(span, align));
  struct guard {  // frees the block on every error path
    A* a; device_memory m;
    ~guard() { if (a) a->free_code(m); }
  } g{&alloc, mem};
  if (mem.size < span || !mem.host || !mem.va.aligned(align)) return failure(errc::out_of_memory, "load: allocator returned a block that is too small or misaligned");
  std::memset(mem.host, 0, static_cast<std::size_t>(span));
  for (const auto& p : co.elf().segments()) {
    if (p.p_type != abi::pt_load || p.p_filesz == 0) continue;
    std::memcpy(mem.host + (p.p_vaddr - lo), co.elf().bytes().data() + p.p_offset, static_cast<std::size_t>(p.p_filesz));
  }
  AQUEDUCT_TRY_VOID(detail::apply_relocations(co, mem.host, mem.va.value, lo, span));
  const std::string proc = target_of(co).to_string();
  const std::uint64_t digest = fnv1a64(co.elf().bytes());
  std::vector<loaded_kernel> ks;
  for (const auto& k : co.kernels()) {
    const std::string who = "kernel " + std::string(k.name);
    if (k.kd_address < lo || !range_ok(k.kd_address - lo, 64, hi - lo) || (k.kd_address & 63) != 0)
      return load_bad(who + ": descriptor at " + hex(k.kd_address) + " is not a 64-byte aligned part of a loaded segment");
    loaded_kernel lk;
    lk.name = std::string(k.name);
    lk.symbol = std::string(k.kd_symbol);
    lk.kernel_object = mem.va + byte_count(k.kd_address - lo);
    std::memcpy(&lk.descriptor, mem.host + (k.kd_address - lo), 64);
    const std::int64_t entry_off = lk.descriptor.kernel_code_entry_byte_offset;
    const std::uint64_t entry = k.kd_address + static_cast<std::uint64_t>(entry_off);
    bool in_text = false;
    for (const auto& p : co.elf().segments())
      in_text = in_text || (p.p_type == abi::pt_load && (p.p_flags & abi::pf_x) && entry >= p.p_vaddr && entry < p.p_vaddr + p.p_filesz);
    if (!in_text || (entry % abi::kernel_code_entry_align) != 0)
      return load_bad(who + ": code entry " + hex(entry) + " (descriptor + " + std::to_string(entry_off) +
                      ") is not a 256-byte aligned address in an executable segment");
    const auto* km = md.kernel(lk.symbol);
    if (!km) return load_bad(who + ": no metadata entry for " + lk.symbol);
    lk.kernarg_segment_size = km->kernarg_segment_size;
    lk.kernarg_segment_align = km->kernarg_segment_align;
    lk.group_segment_fixed_size = lk.descriptor.group_segment_fixed_size;
    lk.private_segment_fixed_size = lk.descriptor.private_segment_fixed_size;
    lk.uses_dynamic_stack = km->uses_dynamic_stack;
    lk.wavefront_size = km->wavefront_size;
    lk.args = km->args;
    lk.code_kind = kernel_code_kind::gfx_isa;
    lk.processor = proc;
    lk.code_digest = digest;
    if (lk.descriptor.kernarg_size != 0 && lk.descriptor.kernarg_size > lk.kernarg_segment_size)
      return load_bad(who + ": descriptor kernarg_size " + std::to_string(lk.descriptor.kernarg_size) + " > metadata .kernarg_segment_size " +
                      std::to_string(lk.kernarg_segment_size));
    ks.push_back(std::move(lk));
  }
  g.a = nullptr;
  return loaded_executable<A>(alloc, mem, std::move(ks), lo);
}

// ---- emulated code objects ---------------------------------------------------------------------
struct emulated_kernel {
  std::string name;
  std::string host_kernel;           // name in the emulated device's host-kernel registry (<= 47 bytes)
  abi::kernel_descriptor descriptor{};  // rsrc words, enable bits, kernarg_size, segment sizes
  std::uint64_t kernarg_segment_align = 8;
  std::uint32_t wavefront_size = 64;
  std::vector<kernel_arg> args;
};
struct emulated_code_object {
  std::vector<emulated_kernel> kernels;
};

// Places one emulated kernel object (descriptor + code blob, abi/emulated_code.hpp) per kernel.
template <code_memory_allocator A>
result<loaded_executable<A>> try_load(const emulated_code_object& eco, A& alloc) {
  const std::uint64_t stride = align_up(abi::emulated_kernel_object_size, abi::kernel_code_entry_align);
  for (const auto& k : eco.kernels)
    if (k.host_kernel.empty() || k.host_kernel.size() > abi::max_host_kernel_name)
      return failure(errc::invalid_argument, "emulated kernel " + k.name + ": host kernel name must be 1.." +
                                                 std::to_string(abi::max_host_kernel_name) + " bytes");
  const std::uint64_t span = align_up(std::max<std::uint64_t>(stride * eco.kernels.size(), 1), page_size);
  AQUEDUCT_TRY(auto mem, alloc.try_allocate_code(span, page_size));
  if (mem.size < span || !mem.host) {
    alloc.free_code(mem);
    return failure(errc::out_of_memory, "load: allocator returned a block that is too small");
  }
  std::memset(mem.host, 0, static_cast<std::size_t>(span));
  std::vector<loaded_kernel> ks;
  for (std::size_t i = 0; i < eco.kernels.size(); ++i) {
    const auto& k = eco.kernels[i];
    std::span<std::byte> dst(mem.host + i * stride, static_cast<std::size_t>(stride));
    abi::write_emulated_kernel_object(dst, k.descriptor, k.host_kernel);
    loaded_kernel lk;
    lk.name = k.name;
    lk.symbol = k.name + ".kd";
    lk.kernel_object = mem.va + byte_count(i * stride);
    std::memcpy(&lk.descriptor, dst.data(), 64);
    lk.kernarg_segment_size = k.descriptor.kernarg_size;
    lk.kernarg_segment_align = k.kernarg_segment_align;
    lk.group_segment_fixed_size = k.descriptor.group_segment_fixed_size;
    lk.private_segment_fixed_size = k.descriptor.private_segment_fixed_size;
    lk.wavefront_size = k.wavefront_size;
    lk.args = k.args;
    lk.code_kind = kernel_code_kind::emulated_host;
    lk.processor = "emulated";
    lk.host_kernel = k.host_kernel;
    // (not the registry name: each load registers its functions under a name of its own)
    std::uint64_t h = fnv1a64(k.name);
    h = fnv1a64(byte_span(reinterpret_cast<const std::byte*>(&k.descriptor), sizeof k.descriptor), h);
    for (const kernel_arg& a : k.args) {
      const std::uint64_t layout[2] = {a.offset, a.size};
      h = fnv1a64(byte_span(reinterpret_cast<const std::byte*>(layout), sizeof layout), fnv1a64(a.value_kind, h));
    }
    lk.code_digest = h;
    ks.push_back(std::move(lk));
  }
  return loaded_executable<A>(alloc, mem, std::move(ks), 0);
}

}  // namespace aqueduct::code

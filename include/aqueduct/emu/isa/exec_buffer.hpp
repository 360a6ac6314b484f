// aqueduct/emu/isa/exec_buffer.hpp — memory through a buffer resource (V#): MUBUF (gfx9, gfx11),
// VBUFFER (gfx12) loads, stores and atomics, and the scalar s_buffer_load_* (SMEM).
//
// Layer: emu. Definitions of interpreter members (emu/isa/interpreter.hpp).
// The V# (4 SGPRs; layout from ROCR-Runtime src/image/resource_gfx11.h SQ_BUF_RSRC_WORD0..3 and
// the GCN/CDNA and RDNA3/RDNA4 ISA guides, "Buffer Resource"): base [47:0], stride [61:48],
// num_records [95:64], index stride [118:117] (8 << n lanes), add_tid [119]; gfx9: swizzle
// enable [63], element size [116:115] (2 << n bytes); gfx10+ (target::vsharp_gfx10):
// SWIZZLE_ENABLE [63:62] (0 off, else elements of 2 << n bytes), OOB_SELECT [125:124].
// Per lane: index = vaddr (idxen) + lane (add_tid); offset = vaddr (offen; the second VGPR when
// both) + the instruction offset. Address (ISA guides, "Buffer Addressing"):
//   unswizzled: base + soffset + index * stride + offset
//   swizzled:   base + soffset + ((index / index_stride) * stride + (offset / elem) * elem) * index_stride
//               + (index % index_stride) * elem + offset % elem
// (the scratch V# ROCr writes into amd_queue on gfx9 is swizzled with elem 4, index stride 64:
// the same private-memory layout as architected flat scratch, emu/isa/exec_memory.hpp).
// Range checking — an out-of-range load component reads 0, a store component is dropped, an
// out-of-range atomic does nothing and returns 0 (ISA guides: "reads that go out-of-range return
// zero, writes that are out-of-range do not write anything"; loads/stores are checked per dword
// component, atomics all or nothing); soffset takes no part in the check:
//   gfx10+, by OOB_SELECT (the table in Mesa's radv buffer-view code, for GFX11; payload = the
//   component's bytes):  0: index >= num_records || offset + payload > stride;
//   1: index >= num_records;  2: num_records == 0;  3: swizzled with a stride: as 0, otherwise
//   index * stride + offset + payload > num_records (a raw buffer: num_records in bytes).
//   gfx9 (as before): a swizzled buffer is not checked; otherwise index >= num_records when the
//   stride is not 0, else offset >= num_records.
// Every address that is accessed is checked against the VM (a bad one faults with the address).
// A null V# on gfx9 is reported as a missing private segment buffer (scratch); on gfx10+ its
// num_records 0 makes every access out of range, as on hardware.
// s_buffer_load_*: address base + instruction offset + soffset; a dword whose byte offset + 4
// passes num_records reads 0 (sub-dword loads: offset + size). A V# with a stride is refused as
// unsupported (how the scalar unit checks a strided V# is not documented in the guides).
// Not modelled: formatted loads/stores (buffer_load_format_*, MTBUF), tfe, LDS loads, GDS.
// Thread safety: see interpreter.hpp.
#pragma once

#include <aqueduct/emu/isa/interpreter.hpp>

namespace aqueduct::emu::isa {

namespace detail {
struct vsharp {
  std::uint64_t base;
  std::uint32_t stride, num_records, index_stride, elem;
  bool swizzle, add_tid;
  unsigned oob;  // gfx10+ OOB_SELECT
};
inline vsharp read_vsharp(const std::uint32_t* v, bool gfx10) noexcept {
  vsharp r{};
  r.base = std::uint64_t(v[1] & 0xFFFFu) << 32 | v[0];
  r.stride = (v[1] >> 16) & 0x3FFFu;
  r.num_records = v[2];
  r.index_stride = 8u << ((v[3] >> 21) & 3);
  r.add_tid = (v[3] >> 23) & 1;
  if (gfx10) {
    const unsigned swz = (v[1] >> 30) & 3;
    r.swizzle = swz != 0, r.elem = 2u << swz, r.oob = (v[3] >> 28) & 3;
  } else {
    r.swizzle = (v[1] >> 31) & 1, r.elem = 2u << ((v[3] >> 19) & 3), r.oob = 0;
  }
  return r;
}
}  // namespace detail

inline void interpreter::exec_mubuf(wave& w, const insn& d) {
  using namespace detail;
  if (d.o == op::buffer_gl0_inv || d.o == op::buffer_gl1_inv) return;  // caches are not modelled
  const std::uint64_t ex = w.exec();
  const unsigned r = d.src[1];
  if (!(r + 3 < op_vcc_lo || (r >= op_ttmp0 && r + 3 < op_null))) unsupported(w, d, "buffer resource outside the SGPRs");
  const bool gfx10 = t_->vsharp_gfx10;
  if (!gfx10 && (w.s[r] | w.s[r + 1] | w.s[r + 2] | w.s[r + 3]) == 0) {
    // A null resource reads 0 and drops writes on hardware; on gfx9 it is almost certainly a
    // missing private segment buffer (a queue without scratch memory): say so.
    char b[200];
    std::snprintf(b, sizeof b, "%s through a null buffer resource s[%u:%u] at pc 0x%llx (for scratch: the queue's "
                  "private segment buffer is not set up)", d.name, r, r + 3, static_cast<unsigned long long>(w.pc));
    throw isa_fault{w.pc, b};
  }
  const vsharp V = read_vsharp(w.s + r, gfx10);
  const std::uint32_t soffset = sget(w, d, d.src[2]);
  const op_info& in = info(d.o);
  const bool atomic = d.o >= op::global_atomic_swap_b32 && d.o <= op::global_atomic_add_f32;
  const unsigned bytes = atomic ? 4 * dwords_of(in.dst) : vmem_bytes(d.o);
  if (bytes == 0) unsupported(w, d);
  const bool store = vmem_is_store(d.o);
  const std::uint32_t* A = (d.mubuf_offen || d.mubuf_idxen) ? vcol(w, d.src[0], d.mubuf_offen && d.mubuf_idxen ? 2 : 1) : nullptr;
  const unsigned n = atomic ? dwords_of(in.src[1]) : (bytes + 3) / 4;
  std::uint32_t* D = vcol(w, d.data0, n);  // vdata: loaded into / stored from / atomic data (and result)
  // Is [o, o + payload) of element `index` out of range?
  auto out_of_range = [&](std::uint32_t index, std::uint32_t o, unsigned payload) -> bool {
    if (!gfx10) return V.swizzle ? false : V.stride != 0 ? index >= V.num_records : o >= V.num_records;
    const bool by_stride = std::uint64_t(o) + payload > V.stride;
    switch (V.oob) {
      case 0: return index >= V.num_records || by_stride;
      case 1: return index >= V.num_records;
      case 2: return V.num_records == 0;
      default:
        if (V.swizzle && V.stride != 0) return index >= V.num_records || by_stride;
        return std::uint64_t(index) * V.stride + o + payload > V.num_records;
    }
  };
  auto address = [&](std::uint32_t index, std::uint32_t o) -> std::uint64_t {
    std::uint64_t va;
    if (V.swizzle)
      va = V.base + soffset + (std::uint64_t(index / V.index_stride) * V.stride + std::uint64_t(o / V.elem) * V.elem) * V.index_stride +
           std::uint64_t(index % V.index_stride) * V.elem + o % V.elem;
    else
      va = V.base + soffset + std::uint64_t(index) * V.stride + o;
    return va & 0xFFFFFFFFFFFFull;
  };
  each_lane(ex, [&](unsigned l) {
    const std::uint32_t index = (d.mubuf_idxen ? A[l] : 0u) + (V.add_tid ? l : 0u);
    const std::uint32_t offset = (d.mubuf_offen ? A[(d.mubuf_idxen ? 64u : 0u) + l] : 0u) + static_cast<std::uint32_t>(d.imm);
    if (atomic) {
      std::uint32_t data[4];
      for (unsigned i = 0; i < n; ++i) data[i] = D[i * 64 + l];
      const std::uint64_t old = out_of_range(index, offset, bytes) ? 0 : atomic_at(w, d, address(index, offset), data);
      if (d.glc) {
        D[l] = static_cast<std::uint32_t>(old);
        if (bytes == 8) D[64 + l] = static_cast<std::uint32_t>(old >> 32);
      }
      return;
    }
    std::uint32_t buf[4] = {};
    if (store)
      for (unsigned i = 0; i < n; ++i) buf[i] = D[i * 64 + l];
    auto* bytes_of = reinterpret_cast<std::byte*>(buf);
    for (unsigned c = 0; c < bytes; c += 4) {  // dword components, each range-checked
      const unsigned payload = std::min(bytes - c, 4u);
      if (gfx10 && out_of_range(index, offset + c, payload)) continue;  // reads 0 / write dropped
      for (unsigned i = c; i < c + payload;) {  // pieces within one dword of the buffer
        const std::uint32_t o = offset + i;
        const unsigned len = std::min(c + payload - i, 4u - o % 4);
        if (gfx10 || !out_of_range(index, o, len)) {
          std::byte* m = mem<std::byte>(address(index, o), len, store);
          store ? std::memcpy(m, bytes_of + i, len) : std::memcpy(bytes_of + i, m, len);
        }
        i += len;
      }
    }
    if (!store) {
      if (d.o == op::global_load_i8) buf[0] = static_cast<std::uint32_t>(std::int32_t(std::int8_t(buf[0])));
      if (d.o == op::global_load_i16) buf[0] = static_cast<std::uint32_t>(std::int32_t(std::int16_t(buf[0])));
      for (unsigned i = 0; i < n; ++i) D[i * 64 + l] = buf[i];
    }
  });
}

inline void interpreter::exec_s_buffer_load(wave& w, const insn& d) {
  unsigned dwords = 0, sub = 0;
  bool sext = false;
  switch (d.o) {
    case op::s_buffer_load_b32: dwords = 1; break;
    case op::s_buffer_load_b64: dwords = 2; break;
    case op::s_buffer_load_b96: dwords = 3; break;
    case op::s_buffer_load_b128: dwords = 4; break;
    case op::s_buffer_load_b256: dwords = 8; break;
    case op::s_buffer_load_b512: dwords = 16; break;
    case op::s_buffer_load_i8: sub = 1, sext = true; break;
    case op::s_buffer_load_u8: sub = 1; break;
    case op::s_buffer_load_i16: sub = 2, sext = true; break;
    case op::s_buffer_load_u16: sub = 2; break;
    default: unsupported(w, d);
  }
  const unsigned r = d.src[0];
  if (!(r + 3 < op_vcc_lo || (r >= op_ttmp0 && r + 3 < op_null))) unsupported(w, d, "buffer resource outside the SGPRs");
  const detail::vsharp V = detail::read_vsharp(w.s + r, t_->vsharp_gfx10);
  if (V.stride != 0) unsupported(w, d, "s_buffer_load through a V# with a stride (not modelled)");
  const std::uint32_t off = static_cast<std::uint32_t>(d.imm) + (d.soff != op_null ? sget(w, d, d.soff) : 0u);
  auto in_range = [&](std::uint32_t o, unsigned len) { return std::uint64_t(o) + len <= V.num_records; };
  if (sub != 0) {
    std::uint32_t x = 0;
    if (in_range(off, sub)) std::memcpy(&x, mem<std::byte>((V.base + off) & 0xFFFFFFFFFFFFull, sub, false), sub);
    if (sext) x = sub == 1 ? static_cast<std::uint32_t>(std::int32_t(std::int8_t(x))) : static_cast<std::uint32_t>(std::int32_t(std::int16_t(x)));
    sset(w, d.dst, x);
    return;
  }
  if (d.dst + dwords > op_null && d.dst < op_null) unsupported(w, d, "destination beyond the SGPRs");
  for (unsigned i = 0; i < dwords; ++i) {
    const std::uint32_t o = (off & ~3u) + 4 * i;  // dword loads ignore the low two offset bits (as s_load)
    std::uint32_t x = 0;
    if (in_range(o, 4)) std::memcpy(&x, mem<std::byte>((V.base + o) & 0xFFFFFFFFFFFFull, 4, false), 4);
    sset(w, d.dst + i, x);
  }
}

}  // namespace aqueduct::emu::isa

// aqueduct/emu/isa/exec_memory.hpp — vector memory: FLAT (with apertures), GLOBAL, SCRATCH, and
// LDS (DS), for every generation.
//
// Layer: emu. Definitions of interpreter members (emu/isa/interpreter.hpp).
//   GLOBAL  : address = SGPR pair (saddr) + 32-bit VGPR offset, or a 64-bit VGPR pair; + offset.
//   FLAT    : a 64-bit address; inside the shared aperture it is LDS (address - shared base),
//             inside the private aperture it is the lane's private memory, else global memory
//             (apertures of emu/isa/interpreter.hpp `target`, as KFD reports them).
//   SCRATCH : the lane's private memory at offset = saddr (32-bit SGPR, optional) + vaddr
//             (optional) + offset (architected flat scratch: gfx11, gfx12, gfx942).
// Private memory is the wave's slice of the queue's scratch (emu/wave_state.hpp gives each wave
// its offset), dword-interleaved by lane as the hardware swizzles it: byte `o` of lane `l` is at
// wave base + (o / 4) * lanes * 4 + l * 4 + o % 4. An offset beyond the kernel's private segment
// size, scratch use on a queue without scratch memory, and any unmapped address fault.
// Atomics run as host atomics: every access is sequentially consistent here. LDS atomics (DS):
// the ISA guides' DS_* pseudocode, 32- and 64-bit, returning the old value in the _rtn_ forms;
// a workgroup's waves run on one thread, so a lane's read-modify-write needs no host atomic.
#pragma once

#include <aqueduct/emu/isa/interpreter.hpp>

namespace aqueduct::emu::isa {


inline void interpreter::exec_flat(wave& w, const insn& d) {
  const std::uint64_t ex = w.exec();
  const bool saddr = d.soff != op_null && d.soff < 128;
  const std::uint64_t off = static_cast<std::uint64_t>(static_cast<std::int64_t>(d.imm));
  // Where each lane's access goes.
  enum class where : std::uint8_t { global, lds, priv };
  struct target_addr {
    where kind;
    std::uint64_t a;  // global VA, LDS offset, or private offset
  };
  auto lane_addr = [&](unsigned l) -> target_addr {
    if (d.e == enc::scratch) {
      std::uint64_t o = off;
      if (saddr) o += w.s[d.soff];
      if (d.sve) o += w.v[std::size_t(d.src[0]) * 64 + l];
      return {where::priv, o & 0xFFFFFFFFull};
    }
    std::uint64_t va;
    if (d.e == enc::global && saddr)
      va = (std::uint64_t(w.s[d.soff + 1]) << 32 | w.s[d.soff]) + w.v[std::size_t(d.src[0]) * 64 + l] + off;
    else
      va = (std::uint64_t(w.v[std::size_t(d.src[0] + 1) * 64 + l]) << 32 | w.v[std::size_t(d.src[0]) * 64 + l]) + off;
    if (d.e == enc::flat) {
      if ((va >> 32) == (t_->shared_base >> 32)) return {where::lds, va & 0xFFFFFFFFull};
      if ((va >> 32) == (t_->private_base >> 32)) return {where::priv, va & 0xFFFFFFFFull};
    }
    return {where::global, va};
  };
  // Byte `o` of lane `l`'s private memory: its GPU address (dword-interleaved by lane).
  auto priv_va = [&](unsigned l, std::uint64_t o, unsigned len) -> std::uint64_t {
    if (w.scratch == 0) {
      char b[160];
      std::snprintf(b, sizeof b, "private (scratch) access at pc 0x%llx, but the dispatch has no scratch memory "
                    "(private_segment_size %u, queue scratch base 0x%llx)", static_cast<unsigned long long>(w.pc),
                    params_.private_bytes, static_cast<unsigned long long>(params_.scratch_base));
      throw isa_fault{w.pc, b};
    }
    if (o + len > params_.private_bytes) {
      char b[160];
      std::snprintf(b, sizeof b, "private (scratch) access of %u bytes at offset 0x%llx beyond the kernel's %u-byte "
                    "private segment at pc 0x%llx", len, static_cast<unsigned long long>(o), params_.private_bytes,
                    static_cast<unsigned long long>(w.pc));
      throw isa_fault{w.pc, b};
    }
    const std::uint64_t va = w.scratch + (o / 4) * w.lanes * 4ull + l * 4ull + o % 4;
    if (params_.scratch_bytes != 0 && va + len > params_.scratch_base + params_.scratch_bytes) {
      char b[200];
      std::snprintf(b, sizeof b, "private (scratch) access at pc 0x%llx: wave %u's slice ends beyond the queue's %llu-byte "
                    "scratch (too small for the waves in flight)", static_cast<unsigned long long>(w.pc), w.index,
                    static_cast<unsigned long long>(params_.scratch_bytes));
      throw isa_fault{w.pc, b};
    }
    return va;
  };
  // Copies `len` bytes between lane memory and `buf` (read: into buf).
  auto access = [&](unsigned l, const target_addr& t, void* buf, unsigned len, bool write) {
    auto* p = static_cast<std::byte*>(buf);
    if (t.kind == where::global) {
      std::byte* m = mem<std::byte>(t.a, len, write);
      write ? std::memcpy(m, p, len) : std::memcpy(p, m, len);
    } else if (t.kind == where::lds) {
      std::byte* m = lds_at(w, t.a, len, write);
      write ? std::memcpy(m, p, len) : std::memcpy(p, m, len);
    } else {
      for (unsigned i = 0; i < len;) {  // dword pieces (bytes if unaligned)
        const std::uint64_t o = t.a + i;
        const unsigned n = (o % 4 == 0 && len - i >= 4) ? 4u : 1u;
        std::byte* m = mem<std::byte>(priv_va(l, o, n), n, write);
        write ? std::memcpy(m, p + i, n) : std::memcpy(p + i, m, n);
        i += n;
      }
    }
  };
  const unsigned bytes = detail::vmem_bytes(d.o);
  if (bytes != 0 && !detail::vmem_is_store(d.o)) {
    std::uint32_t* D = vcol(w, d.dst, (bytes + 3) / 4);
    detail::each_lane(ex, [&](unsigned l) {
      std::uint32_t buf[4] = {};
      access(l, lane_addr(l), buf, bytes, false);
      switch (d.o) {
        case op::global_load_i8: buf[0] = static_cast<std::uint32_t>(std::int32_t(std::int8_t(buf[0]))); break;
        case op::global_load_i16: buf[0] = static_cast<std::uint32_t>(std::int32_t(std::int16_t(buf[0]))); break;
        default: break;
      }
      for (unsigned i = 0; i < (bytes + 3) / 4; ++i) D[i * 64 + l] = buf[i];
    });
    return;
  }
  if (bytes != 0) {
    const std::uint32_t* S = vcol(w, d.data0, (bytes + 3) / 4);
    detail::each_lane(ex, [&](unsigned l) {
      std::uint32_t buf[4];
      for (unsigned i = 0; i < (bytes + 3) / 4; ++i) buf[i] = S[i * 64 + l];
      access(l, lane_addr(l), buf, bytes, true);
    });
    return;
  }
  // Atomics: global memory only (LDS/private through FLAT atomics are not modelled).
  const op_info& in = info(d.o);
  if (in.dst == kind::none || d.o < op::global_atomic_swap_b32) unsupported(w, d);
  const unsigned ndata = dwords_of(in.src[1]);
  const std::uint32_t* S = vcol(w, d.data0, ndata);
  std::uint32_t* D = d.glc ? vcol(w, d.dst, dwords_of(in.dst)) : nullptr;
  detail::each_lane(ex, [&](unsigned l) {
    const target_addr t = lane_addr(l);
    if (t.kind != where::global) unsupported(w, d, "FLAT atomic on LDS or private memory not modelled");
    std::uint32_t data[4];
    for (unsigned i = 0; i < ndata; ++i) data[i] = S[i * 64 + l];
    const std::uint64_t old = atomic_at(w, d, t.a, data);
    if (D) {
      D[l] = static_cast<std::uint32_t>(old);
      if (dwords_of(in.dst) == 2) D[64 + l] = static_cast<std::uint32_t>(old >> 32);
    }
  });
}

// One lane's atomic read-modify-write of global memory at `va` (FLAT/GLOBAL and buffer atomics):
// `v` holds the data dwords (cmpswap: the new value, then the compare value). Returns the old
// value. A misaligned address faults (the hardware requires natural alignment).
inline std::uint64_t interpreter::atomic_at(const wave& w, const insn& d, std::uint64_t va, const std::uint32_t* v) {
  const bool wide = dwords_of(info(d.o).dst) == 2;
  std::uint64_t old = 0;
  if (!wide) {
    if (va % 4 != 0) throw memory_fault{va, 4, true};
    std::atomic_ref<std::uint32_t> ref(*mem<std::uint32_t>(va, 4, true));
    const std::uint32_t x = v[0];
    auto rmw = [&](auto f) {
      std::uint32_t cur = ref.load();
      while (!ref.compare_exchange_weak(cur, f(cur))) {}
      return cur;
    };
    switch (d.o) {
      case op::global_atomic_swap_b32: old = ref.exchange(x); break;
      case op::global_atomic_cmpswap_b32: { std::uint32_t cmp = v[1]; ref.compare_exchange_strong(cmp, x); old = cmp; break; }
      case op::global_atomic_add_u32: old = ref.fetch_add(x); break;
      case op::global_atomic_sub_u32: old = ref.fetch_sub(x); break;
      case op::global_atomic_and_b32: old = ref.fetch_and(x); break;
      case op::global_atomic_or_b32: old = ref.fetch_or(x); break;
      case op::global_atomic_xor_b32: old = ref.fetch_xor(x); break;
      case op::global_atomic_min_i32: old = rmw([&](std::uint32_t c) { return std::int32_t(x) < std::int32_t(c) ? x : c; }); break;
      case op::global_atomic_max_i32: old = rmw([&](std::uint32_t c) { return std::int32_t(x) > std::int32_t(c) ? x : c; }); break;
      case op::global_atomic_min_u32: old = rmw([&](std::uint32_t c) { return std::min(x, c); }); break;
      case op::global_atomic_max_u32: old = rmw([&](std::uint32_t c) { return std::max(x, c); }); break;
      case op::global_atomic_inc_u32: old = rmw([&](std::uint32_t c) { return c >= x ? 0u : c + 1; }); break;
      case op::global_atomic_dec_u32: old = rmw([&](std::uint32_t c) { return (c == 0 || c > x) ? x : c - 1; }); break;
      case op::global_atomic_add_f32:
        old = rmw([&](std::uint32_t c) { return std::bit_cast<std::uint32_t>(std::bit_cast<float>(c) + std::bit_cast<float>(x)); });
        break;
      default: unsupported(w, d);
    }
    return old;
  }
  if (va % 8 != 0) throw memory_fault{va, 8, true};
  std::atomic_ref<std::uint64_t> ref(*mem<std::uint64_t>(va, 8, true));
  const std::uint64_t x = std::uint64_t(v[1]) << 32 | v[0];
  auto rmw = [&](auto f) {
    std::uint64_t cur = ref.load();
    while (!ref.compare_exchange_weak(cur, f(cur))) {}
    return cur;
  };
  switch (d.o) {
    case op::global_atomic_swap_b64: old = ref.exchange(x); break;
    case op::global_atomic_cmpswap_b64: { std::uint64_t cmp = std::uint64_t(v[3]) << 32 | v[2]; ref.compare_exchange_strong(cmp, x); old = cmp; break; }
    case op::global_atomic_add_u64: old = ref.fetch_add(x); break;
    case op::global_atomic_sub_u64: old = ref.fetch_sub(x); break;
    case op::global_atomic_and_b64: old = ref.fetch_and(x); break;
    case op::global_atomic_or_b64: old = ref.fetch_or(x); break;
    case op::global_atomic_xor_b64: old = ref.fetch_xor(x); break;
    case op::global_atomic_min_i64: old = rmw([&](std::uint64_t c) { return std::int64_t(x) < std::int64_t(c) ? x : c; }); break;
    case op::global_atomic_max_i64: old = rmw([&](std::uint64_t c) { return std::int64_t(x) > std::int64_t(c) ? x : c; }); break;
    case op::global_atomic_min_u64: old = rmw([&](std::uint64_t c) { return std::min(x, c); }); break;
    case op::global_atomic_max_u64: old = rmw([&](std::uint64_t c) { return std::max(x, c); }); break;
    default: unsupported(w, d);
  }
  return old;
}

inline void interpreter::exec_ds(wave& w, const insn& d) {
  const std::uint64_t ex = w.exec();
  const std::uint32_t off = static_cast<std::uint32_t>(d.imm) | (std::uint32_t(d.off1) << 8);
  const op_info& in = info(d.o);
  const std::uint32_t* addr = vcol(w, d.src[0]);
  if (d.o == op::ds_bpermute_b32 || d.o == op::ds_permute_b32) {
    // Lane permutes through the LDS crossbar, no LDS access (RDNA3/RDNA4/CDNA3 ISA guides,
    // DS_PERMUTE_B32 / DS_BPERMUTE_B32): the other lane is bits [.. : 2] of addr + offset, modulo
    // the wave's lanes (gfx11: modulo 32 within the lane's half, target::permute_lanes32).
    // bpermute: each active lane reads the other lane's data0, 0 if that lane is inactive;
    // permute: each active lane sends its data0 to the other lane (the highest sender wins).
    // Only active lanes are written.
    const unsigned n = t_->permute_lanes32 ? 32u : w.lanes;
    auto other = [&](unsigned l) { return (l & ~(n - 1)) | (((addr[l] + off) >> 2) & (n - 1)); };
    const std::uint32_t* D0 = vcol(w, d.data0);
    std::uint32_t* R = vcol(w, d.dst);
    std::uint32_t tmp[64] = {};
    if (d.o == op::ds_bpermute_b32) {
      detail::each_lane(ex, [&](unsigned l) {
        const unsigned s = other(l);
        tmp[l] = (ex >> s) & 1 ? D0[s] : 0u;
      });
    } else {
      detail::each_lane(ex, [&](unsigned l) { tmp[other(l)] = D0[l]; });  // ascending: the highest sender wins
    }
    detail::each_lane(ex, [&](unsigned l) { R[l] = tmp[l]; });
    return;
  }
  const unsigned ddw = dwords_of(in.src[1]);
  const std::uint32_t* D0 = in.src[1] != kind::none ? vcol(w, d.data0, ddw) : nullptr;
  const std::uint32_t* D1 = in.src[2] != kind::none ? vcol(w, d.data1, ddw) : nullptr;
  std::uint32_t* R = in.dst != kind::none ? vcol(w, d.dst, dwords_of(in.dst)) : nullptr;
  auto rd = [&](std::uint64_t a, void* p, unsigned n) { std::memcpy(p, lds_at(w, a, n, false), n); };
  auto wr = [&](std::uint64_t a, const void* p, unsigned n) { std::memcpy(lds_at(w, a, n, true), p, n); };
  detail::each_lane(ex, [&](unsigned l) {
    const std::uint64_t a = addr[l];
    auto data = [&](const std::uint32_t* col, unsigned i) { return col[i * 64 + l]; };
    auto store_n = [&](std::uint64_t at, const std::uint32_t* col, unsigned n) {
      std::uint32_t buf[4];
      for (unsigned i = 0; i < (n + 3) / 4; ++i) buf[i] = data(col, i);
      wr(at, buf, n);
    };
    auto load_n = [&](std::uint64_t at, unsigned first_dword, unsigned n) {
      std::uint32_t buf[4] = {};
      rd(at, buf, n);
      for (unsigned i = 0; i < (n + 3) / 4; ++i) R[(first_dword + i) * 64 + l] = buf[i];
    };
    auto rmw = [&](auto f) {
      std::uint32_t x;
      rd(a + off, &x, 4);
      const std::uint32_t old = x;
      x = f(x, data(D0, 0));
      wr(a + off, &x, 4);
      if (R) R[l] = old;
    };
    // 64-bit read-modify-write: data0 (and data1) are VGPR pairs, the old value returns into a pair.
    auto rmw64 = [&](auto f) {
      std::uint64_t x;
      rd(a + off, &x, 8);
      const std::uint64_t old = x;
      const std::uint64_t v0 = std::uint64_t(data(D0, 1)) << 32 | data(D0, 0);
      const std::uint64_t v1 = D1 ? std::uint64_t(data(D1, 1)) << 32 | data(D1, 0) : 0;
      x = f(x, v0, v1);
      wr(a + off, &x, 8);
      if (R) R[l] = static_cast<std::uint32_t>(old), R[64 + l] = static_cast<std::uint32_t>(old >> 32);
    };
    using u32 = std::uint32_t;
    using u64 = std::uint64_t;
    using i64 = std::int64_t;
    switch (d.o) {
      case op::ds_add_u32: case op::ds_add_rtn_u32: rmw([](u32 m, u32 v) { return m + v; }); break;
      case op::ds_sub_u32: case op::ds_sub_rtn_u32: rmw([](u32 m, u32 v) { return m - v; }); break;
      case op::ds_rsub_u32: case op::ds_rsub_rtn_u32: rmw([](u32 m, u32 v) { return v - m; }); break;
      case op::ds_inc_u32: case op::ds_inc_rtn_u32: rmw([](u32 m, u32 v) { return m >= v ? 0u : m + 1; }); break;
      case op::ds_dec_u32: case op::ds_dec_rtn_u32: rmw([](u32 m, u32 v) { return m == 0 || m > v ? v : m - 1; }); break;
      case op::ds_min_i32: case op::ds_min_rtn_i32: rmw([](u32 m, u32 v) { return std::int32_t(v) < std::int32_t(m) ? v : m; }); break;
      case op::ds_max_i32: case op::ds_max_rtn_i32: rmw([](u32 m, u32 v) { return std::int32_t(v) >= std::int32_t(m) ? v : m; }); break;
      case op::ds_min_u32: case op::ds_min_rtn_u32: rmw([](u32 m, u32 v) { return std::min(m, v); }); break;
      case op::ds_max_u32: case op::ds_max_rtn_u32: rmw([](u32 m, u32 v) { return std::max(m, v); }); break;
      case op::ds_and_b32: case op::ds_and_rtn_b32: rmw([](u32 m, u32 v) { return m & v; }); break;
      case op::ds_or_b32: case op::ds_or_rtn_b32: rmw([](u32 m, u32 v) { return m | v; }); break;
      case op::ds_xor_b32: case op::ds_xor_rtn_b32: rmw([](u32 m, u32 v) { return m ^ v; }); break;
      case op::ds_storexchg_rtn_b32: rmw([](u32, u32 v) { return v; }); break;
      // data0 is the value stored when memory equals data1 (gfx9's ds_cmpst: decoded swapped).
      case op::ds_cmpstore_b32: case op::ds_cmpstore_rtn_b32: {
        const u32 cmp = data(D1, 0);
        rmw([cmp](u32 m, u32 v) { return m == cmp ? v : m; });
        break;
      }
      // LDS float atomics honour the denormal mode and round to nearest even (LLVM
      // SIISelLowering::shouldExpandAtomicRMWInIR: "DS FP atomics do respect the denormal mode,
      // but the rounding mode is fixed to round-to-nearest-even"); denormals are kept here.
      case op::ds_add_f32: case op::ds_add_rtn_f32:
        rmw([](u32 m, u32 v) { return std::bit_cast<u32>(std::bit_cast<float>(m) + std::bit_cast<float>(v)); });
        break;
      case op::ds_add_u64: case op::ds_add_rtn_u64: rmw64([](u64 m, u64 v, u64) { return m + v; }); break;
      case op::ds_sub_u64: case op::ds_sub_rtn_u64: rmw64([](u64 m, u64 v, u64) { return m - v; }); break;
      case op::ds_rsub_u64: case op::ds_rsub_rtn_u64: rmw64([](u64 m, u64 v, u64) { return v - m; }); break;
      case op::ds_inc_u64: case op::ds_inc_rtn_u64: rmw64([](u64 m, u64 v, u64) { return m >= v ? 0u : m + 1; }); break;
      case op::ds_dec_u64: case op::ds_dec_rtn_u64: rmw64([](u64 m, u64 v, u64) { return m == 0 || m > v ? v : m - 1; }); break;
      case op::ds_min_i64: case op::ds_min_rtn_i64: rmw64([](u64 m, u64 v, u64) { return i64(v) < i64(m) ? v : m; }); break;
      case op::ds_max_i64: case op::ds_max_rtn_i64: rmw64([](u64 m, u64 v, u64) { return i64(v) > i64(m) ? v : m; }); break;
      case op::ds_min_u64: case op::ds_min_rtn_u64: rmw64([](u64 m, u64 v, u64) { return std::min(m, v); }); break;
      case op::ds_max_u64: case op::ds_max_rtn_u64: rmw64([](u64 m, u64 v, u64) { return std::max(m, v); }); break;
      case op::ds_and_b64: case op::ds_and_rtn_b64: rmw64([](u64 m, u64 v, u64) { return m & v; }); break;
      case op::ds_or_b64: case op::ds_or_rtn_b64: rmw64([](u64 m, u64 v, u64) { return m | v; }); break;
      case op::ds_xor_b64: case op::ds_xor_rtn_b64: rmw64([](u64 m, u64 v, u64) { return m ^ v; }); break;
      case op::ds_storexchg_rtn_b64: rmw64([](u64, u64 v, u64) { return v; }); break;
      case op::ds_cmpstore_b64: case op::ds_cmpstore_rtn_b64: rmw64([](u64 m, u64 v, u64 cmp) { return m == cmp ? v : m; }); break;
      case op::ds_store_b8: store_n(a + off, D0, 1); break;
      case op::ds_store_b16: store_n(a + off, D0, 2); break;
      case op::ds_store_b32: store_n(a + off, D0, 4); break;
      case op::ds_store_b64: store_n(a + off, D0, 8); break;
      case op::ds_store_b96: store_n(a + off, D0, 12); break;
      case op::ds_store_b128: store_n(a + off, D0, 16); break;
      case op::ds_store_2addr_b32: case op::ds_store_2addr_stride64_b32: {
        const std::uint32_t s = d.o == op::ds_store_2addr_b32 ? 4u : 256u;
        store_n(a + s * static_cast<std::uint32_t>(d.imm), D0, 4);
        store_n(a + s * d.off1, D1, 4);
        break;
      }
      case op::ds_store_2addr_b64: case op::ds_store_2addr_stride64_b64: {
        const std::uint32_t s = d.o == op::ds_store_2addr_b64 ? 8u : 512u;
        store_n(a + s * static_cast<std::uint32_t>(d.imm), D0, 8);
        store_n(a + s * d.off1, D1, 8);
        break;
      }
      case op::ds_load_u8: { std::uint8_t x; rd(a + off, &x, 1); R[l] = x; break; }
      case op::ds_load_i8: { std::int8_t x; rd(a + off, &x, 1); R[l] = static_cast<std::uint32_t>(std::int32_t(x)); break; }
      case op::ds_load_u16: { std::uint16_t x; rd(a + off, &x, 2); R[l] = x; break; }
      case op::ds_load_i16: { std::int16_t x; rd(a + off, &x, 2); R[l] = static_cast<std::uint32_t>(std::int32_t(x)); break; }
      case op::ds_load_b32: load_n(a + off, 0, 4); break;
      case op::ds_load_b64: load_n(a + off, 0, 8); break;
      case op::ds_load_b96: load_n(a + off, 0, 12); break;
      case op::ds_load_b128: load_n(a + off, 0, 16); break;
      case op::ds_load_2addr_b32: case op::ds_load_2addr_stride64_b32: {
        const std::uint32_t s = d.o == op::ds_load_2addr_b32 ? 4u : 256u;
        load_n(a + s * static_cast<std::uint32_t>(d.imm), 0, 4);
        load_n(a + s * d.off1, 1, 4);
        break;
      }
      case op::ds_load_2addr_b64: case op::ds_load_2addr_stride64_b64: {
        const std::uint32_t s = d.o == op::ds_load_2addr_b64 ? 8u : 512u;
        load_n(a + s * static_cast<std::uint32_t>(d.imm), 0, 8);
        load_n(a + s * d.off1, 2, 8);
        break;
      }
      default: unsupported(w, d);
    }
  });
}

}  // namespace aqueduct::emu::isa

#!/usr/bin/env python3
"""Writes include/aqueduct/emu/isa/gfx9_opcodes.hpp: every opcode LLVM 19 accepts for gfx90a
and gfx942 in the encodings the gfx9 decoder knows, with the operand template LLVM prints.

How: for each (encoding, opcode) a few probe instructions with distinct operand registers are
assembled as data by llvm-mc-19 and disassembled by llvm-objdump-19; the first probe LLVM
accepts gives the mnemonic and, with the probe registers replaced by placeholders, the operand
template (see the generated header). Modifiers are not in templates: the printer
(emu/isa/gfx9_disasm.hpp) adds them from the fields. The output is a fact table (opcode
numbers, LLVM's spelling, operand widths and kinds); tests/emu/isa_gfx9_decode.cpp re-checks
it against LLVM on every run, with random operands.
Run: python3 tests/emu/isa/tools/gfx9_opcodes.py > include/aqueduct/emu/isa/gfx9_opcodes.hpp
"""
import re, subprocess, sys, tempfile

FILL = 0xBF800000  # s_nop 0: pads every probe so a long or invalid one cannot swallow the next

def disasm(mcpu, probes, fill=3):
    """The first instruction of each probe as LLVM prints it, or None if LLVM rejects it. The
    probes are assembled as .long data by llvm-mc-19 and disassembled by llvm-objdump-19 (which
    reports each instruction's offset: -show-encoding re-encodes, so its lengths can differ)."""
    src, starts, off = [".text"], [], 0
    for p in probes:
        words = list(p) + [FILL] * fill
        src.append(".long " + ",".join("0x%08x" % w for w in words)); starts.append(off); off += 4 * len(words)
    with tempfile.TemporaryDirectory() as d:
        open(d + "/p.s", "w").write("\n".join(src) + "\n")
        subprocess.run(["llvm-mc-19", "-arch=amdgcn", "-mcpu=" + mcpu, "-filetype=obj", d + "/p.s", "-o", d + "/p.o"], check=True)
        r = subprocess.run(["llvm-objdump-19", "-d", "--mcpu=" + mcpu, d + "/p.o"], capture_output=True, text=True)
        if r.returncode != 0:  # LLVM 19 crashes on a few invalid operand combinations: split
            if len(probes) == 1: return [None]
            h = len(probes) // 2
            return disasm(mcpu, probes[:h], fill) + disasm(mcpu, probes[h:], fill)
    at = {}
    for ln in r.stdout.splitlines():
        m = re.match(r"^\t(.*?)\s*// ([0-9A-F]+): [0-9A-F ]+( <.*>)?$", ln)
        if m and not m.group(1).startswith(".long"): at[int(m.group(2), 16)] = m.group(1)
    return [(at[s], 0) if s in at else None for s in starts]

def V(n): return 256 + n
S0, S1, S2 = 20, 22, 24  # SGPR sources of the fallback probes

def vop3_srcs():
    return [(V(4), V(6), V(8)), (V(4), V(6), S2), (V(4), S1, S2), (V(4), V(6), 0), (V(4), S1, 0), (S0, S1, 0),
            (V(4), 0, 0), (S0, 0, 0), (0, 0, 0)]

def fl(op, seg, a, d, sa, vd, sve=0):
    return [0xDC000000 | op << 18 | seg << 14 | sve << 13, a | d << 8 | sa << 16 | vd << 24]

ENCODINGS = [
    ("SOP2", 0x60, lambda op: [[0x80000000 | op << 23 | 4 << 16 | 2 << 8 | 6]]),
    ("SOPK", 0x17, lambda op: [[0xB0000000 | op << 23 | 4 << 16 | 0x10]]),
    ("SOP1", 256, lambda op: [[0xBE800000 | 4 << 16 | op << 8 | 6]]),
    ("SOPC", 128, lambda op: [[0xBF000000 | op << 16 | 2 << 8 | 6]]),
    ("SOPP", 128, lambda op: [[0xBF800000 | op << 16 | 1], [0xBF800000 | op << 16]]),
    ("SMEM", 256, lambda op: [[0xC0000000 | op << 18 | 1 << 17 | sd << 6 | 2, 0x10] for sd in (8, 0)] +
                             [[0xC0000000 | op << 18 | 8 << 6, 0], [0xC0000000 | op << 18, 0]]),
    ("VOP1", 256, lambda op: [[0x7E000000 | 2 << 17 | op << 9 | V(4)], [0x7E000000 | 2 << 17 | op << 9 | S0],
                              [0x7E000000 | op << 9]]),
    ("VOP2", 62, lambda op: [[op << 25 | 2 << 17 | 6 << 9 | V(4)]]),
    ("VOPC", 256, lambda op: [[0x7C000000 | op << 17 | 6 << 9 | V(4)]]),
    ("VOP3", 1024, lambda op: [[0xD0000000 | op << 16 | 2, a | b << 9 | c << 18] for a, b, c in vop3_srcs()]),
    ("VOP3P", 128, lambda op: [[0xD3800000 | op << 16 | 1 << 14 | 2, a | b << 9 | c << 18 | 3 << 27] for a, b, c in vop3_srcs()]),
    ("SDWA1", 256, lambda op: [[0x7E000000 | 2 << 17 | op << 9 | 0xF9, 4 | 6 << 8 | 6 << 16], [0x7E000000 | op << 9 | 0xF9, 4 | 6 << 8 | 6 << 16],
                               [0x7E000000 | op << 9 | 0xF9, 6 << 8]]),
    ("SDWA2", 62, lambda op: [[op << 25 | 2 << 17 | 6 << 9 | 0xF9, 4 | 6 << 8 | 6 << 16 | 6 << 24]]),
    ("SDWAC", 256, lambda op: [[0x7C000000 | op << 17 | 6 << 9 | 0xF9, 4 | 6 << 16 | 6 << 24]]),
    ("DS", 256, lambda op: [[0xD8000000 | op << 17, a | d0 << 8 | d1 << 16 | vd << 24] for a, d0, d1, vd in
                            ((4, 6, 8, 2), (4, 6, 0, 2), (4, 6, 8, 0), (4, 6, 0, 0), (4, 0, 0, 2), (4, 0, 0, 0), (0, 0, 0, 2), (0, 0, 0, 0))]),
    ("FLAT", 128, lambda op: [fl(op, 0, 4, d, 0, vd) for d, vd in ((6, 2), (6, 0), (0, 2), (0, 0))]),
    ("GLOBAL", 128, lambda op: [fl(op, 2, 4, d, 0x7F, vd) for d, vd in ((6, 2), (6, 0), (0, 2), (0, 0))]),
    ("SCRATCH", 128, lambda op: [fl(op, 1, 4, d, 0x7F, vd, 1) for d, vd in ((6, 2), (6, 0), (0, 2), (0, 0))] +
                                [fl(op, 1, 4, d, 0x7F, vd, 0) for d, vd in ((6, 2), (6, 0), (0, 2), (0, 0))]),
    ("MUBUF", 128, lambda op: [[0xE0000000 | op << 18 | 1 << 12, 4 | d << 8 | 0x80 << 24] for d in (6, 0)] +
                              [[0xE0000000 | op << 18, 0]]),
]

def rng(tok):
    m = re.fullmatch(r"([vsa])(\d+)", tok)
    if m: return m.group(1), int(m.group(2)), 1
    m = re.fullmatch(r"([vsa])\[(\d+):(\d+)\]", tok)
    if m: return m.group(1), int(m.group(2)), int(m.group(3)) - int(m.group(2)) + 1
    return None

W = "0123456789abcdefghijklmnopqrstuvw"

def template(enc, text):
    mn, _, ops = text.partition(" ")
    if mn == "s_waitcnt": return mn, "%W1"  # the counters, printed from simm16 by the printer
    if enc.startswith("SDWA"):
        ops = re.sub(r"\s*(dst_sel|dst_unused|src0_sel|src1_sel):\S+", "", ops)
    ops = re.sub(r"\s+(offen|idxen|glc|slc|lds|sc0|sc1|nt|gds|offset:\S+|offset0:\S+|offset1:\S+|op_sel_hi:\S+)", "", ops)
    out = []
    for tok in [t for t in ops.split(", ")] if ops else []:
        r = rng(tok)
        f = None
        if enc in ("SOP1", "SOP2", "SOPC", "SOPK"):
            if r and r[0] == "s": f = {4: "D", 6: "0", 2: "1"}.get(r[1])
            if enc == "SOPK" and tok == "0x10": f, r = "K", ("", 0, 1)
        elif enc == "SMEM":
            if r and r[0] == "s": f = {8: "D", 0: "D", 4: "B"}.get(r[1])
            if tok == "0x10": continue
        elif enc.startswith("VOP") or enc.startswith("SDWA"):
            if r:
                f = {("v", 2): "D", ("s", 2): "D", ("v", 4): "0", ("v", 6): "1", ("v", 8): "2", ("s", 0): "S",
                     ("s", S0): "0", ("s", S1): "1", ("s", S2): "2", ("v", 0): "0"}.get(("v" if r[0] == "a" else r[0], r[1]))
        elif enc == "DS":
            if r: f = {2: "D", 4: "A", 6: "B", 8: "C", 0: "A"}.get(r[1])
        elif enc in ("FLAT", "GLOBAL", "SCRATCH"):
            if r: f = {2: "D", 4: "A", 6: "B"}.get(r[1])
            elif tok == "off": f, r = ("A" if not out else "X"), ("", 0, 1)
        elif enc == "MUBUF":
            if r and r[0] == "v": f = {4: "A", 6: "B"}.get(r[1])
            elif r and r[0] == "s": f = "R"
            elif tok == "0": f, r = "O", ("", 0, 1)
        if tok == "0xbf800000": f, r = "L", ("", 0, 1)  # the probe's s_nop filler read as a literal
        if enc in ("SOPK", "SOPP") and tok in ("1", "16"): f, r = "J", ("", 0, 1)
        if r and r[0] == "a" and f: f = "a" + f
        out.append("%" + f + W[r[2]] if f else tok)
    return mn, ", ".join(out)

def main():
    tables = {}
    for mcpu, bit in (("gfx90a", 1), ("gfx942", 2)):
        for enc, n, probes in ENCODINGS:
            variants = [probes(op) for op in range(n)]
            best = [None] * n
            for j in range(max(len(v) for v in variants)):
                idx = [op for op in range(n) if best[op] is None and j < len(variants[op])]
                if not idx: break
                for op, r in zip(idx, disasm(mcpu, [variants[op][j] for op in idx])):
                    if r and "Invalid" not in r[0] and not re.search(r"\bs0\b", r[0].split(" ", 1)[-1] if enc != "MUBUF" else ""):
                        best[op] = (r[0], variants[op][j])
            found = [(op,) + template(enc, best[op][0]) + (best[op][1],) for op in range(n) if best[op]]
            found = source_types(mcpu, enc, found)
            for op, mn, tpl in found:
                tables.setdefault(enc, {}).setdefault((op, mn, tpl), 0)
                tables[enc][(op, mn, tpl)] |= bit
    derive(tables)
    print(HEADER)
    for enc, _, _ in ENCODINGS:
        if enc.startswith("SDWA"): continue
        rows = sorted(tables.get(enc, {}).items())
        print("inline constexpr op_entry %s_ops[] = {" % enc.lower())
        line = "   "
        for (op, mn, tpl), mask in rows:
            item = ' {%d, %d, "%s", "%s"},' % (op, mask, mn, tpl)
            if len(line) + len(item) > 110:
                print(line); line = "   "
            line += item
        print(line)
        print("};")
    print(FOOTER)

# Source kinds, one letter after the width (none: a 32/64-bit source with float modifiers,
# printed -x, |x|, neg(c)): n 32/64-bit without modifiers, s 32/64-bit integer whose neg bit is
# LLVM's sext(x), h 16-bit float, i 16-bit integer without modifiers, t 16-bit integer with sext.
# 16-bit integer: -2.0 (operand 245) prints as its f16 bits 0xc000; 16-bit float: a literal
# prints as its low half (32-bit encodings only); modifiers: the VOP3 neg bit of that source.
KIND = {(False, False, "F"): "", (False, False, "N"): "n", (False, False, "S"): "s", (True, False, "F"): "h",
        (True, False, "N"): "i", (True, False, "S"): "t", (True, True, "F"): "h", (True, True, "N"): "i", (True, True, "S"): "t"}

def source_types(mcpu, enc, rows):
    """Appends each VOP source's kind letter (see KIND) to the template, found by disassembling
    the row with -2.0 in that source, with its VOP3 neg bit set, and (32-bit encodings, src0)
    with a literal."""
    if enc not in ("VOP1", "VOP2", "VOPC", "VOP3"):
        return [(op, mn, tpl) for op, mn, tpl, _ in rows]
    probes, keys = [], []
    for k, (op, mn, tpl, base) in enumerate(rows):
        toks = tpl.split(", ")
        for i in range(3):
            at = [j for j, t in enumerate(toks) if re.fullmatch(r"%%a?%d[0-9a-w]" % i, t)]
            if not at: continue
            if enc == "VOP3":
                probes.append([base[0], (base[1] & ~(0x1FF << (9 * i))) | 245 << (9 * i)]); keys.append((k, i, at[0], "c"))
                probes.append([base[0], base[1] | 1 << (29 + i)]); keys.append((k, i, at[0], "m"))
            elif i == 0:
                probes.append([(base[0] & ~0x1FF) | 245] + base[1:]); keys.append((k, i, at[0], "c"))
                lit = [(base[0] & ~0x1FF) | 255]
                if mn.startswith(("v_madmk", "v_madak", "v_fmamk", "v_fmaak")): lit.append(0x12345678)
                else: lit += [0x12345678] + base[1:]
                probes.append(lit); keys.append((k, i, at[0], "l"))
    res = disasm(mcpu, probes)
    int16, half, mods = set(), set(), {}
    for (k, i, at, what), r in zip(keys, res):
        if not r:
            if what == "m": mods[(k, i)] = "N"  # LLVM rejects a neg bit there: no modifiers
            continue
        ops = r[0].split(" ", 1)[1].split(", ") if " " in r[0] else []
        if at >= len(ops): continue
        tok = ops[at].split(" ")[0]
        if what == "c" and tok == "0xc000": int16.add((k, i))
        elif what == "l" and tok == "0x5678": half.add((k, i))
        elif what == "m": mods[(k, i)] = "S" if tok.startswith("sext(") else "F" if tok.startswith(("-", "neg(")) else "N"
    out = []
    for k, (op, mn, tpl, base) in enumerate(rows):
        toks = tpl.split(", ")
        for j, t in enumerate(toks):
            m = re.fullmatch(r"(%a?)([0-2])([0-9a-w])", t)
            if not m: continue
            key = (k, int(m.group(2)))
            toks[j] = t + KIND[(key in int16 or key in half, key in int16, mods.get(key, "F"))]
        out.append((op, mn, ", ".join(toks)))
    return out

# VOP3 opcode ranges that promote VOPC / VOP2 / VOP1 (gfx9: VOP3 op = VOPC op, 0x100 + VOP2 op,
# 0x140 + VOP1 op); VOP3 0x380+ is VOP3P.
PROMOTED = (("VOPC", 0, 0x100), ("VOP2", 0x100, 0x140), ("VOP1", 0x140, 0x1C0))

def e64_template(enc, tpl):
    if enc == "VOPC": return tpl.replace("vcc, ", "%D2, ", 1)
    t = tpl
    if t.startswith("%D1, vcc, "): t = "%D1, %S2, " + t[len("%D1, vcc, "):]
    if t.endswith(", vcc"): t = t[: -len(", vcc")] + ", %22"
    return t

def derive(tables):
    """Folds the VOP3 forms of VOP1/VOP2/VOPC and the SDWA forms into flags of the VOP1/2/C rows
    (bits 2-3: has an _e64 form on gfx90a/gfx942, bits 4-5: has an _sdwa form), after checking
    that the derived name and template are what LLVM printed."""
    vop3 = tables.pop("VOP3")
    sdwa = {"VOP1": tables.pop("SDWA1"), "VOP2": tables.pop("SDWA2"), "VOPC": tables.pop("SDWAC")}
    native = {}
    for (op, mn, tpl), mask in vop3.items():
        if op >= 0x380: continue
        src = next((e for e, lo, hi in PROMOTED if lo <= op < hi), None)
        if src is None:
            native[(op, mn, tpl)] = mask; continue
        lo = next(l for e, l, h in PROMOTED if e == src)
        hit = [k for k in tables[src] if k[0] == op - lo and k[1].replace("_e32", "_e64") == mn and (tables[src][k] & mask)]
        assert hit, ("no e32 row for", op, mn)
        k = hit[0]
        strip = lambda t: re.sub(r"(%a?[0-2][0-9a-w])[a-z]", r"\1", t)
        assert strip(e64_template(src, k[2])) == strip(tpl), ("template", mn, k[2], tpl)
        # The e32 row takes the source kinds its VOP3 form showed, except a 16-bit float src0
        # (only the 32-bit encoding can show that, through a literal).
        kinds = {m[0]: m[1] for m in re.findall(r"%a?([0-2])[0-9a-w]([a-z]?)", tpl)}
        toks = k[2].split(", ")
        for j, t in enumerate(toks):
            m = re.fullmatch(r"(%a?)([0-2])([0-9a-w])([a-z]?)", t)
            if not m: continue
            kd = kinds.get(m.group(2), "")
            if m.group(4) == "h" and kd == "": kd = "h"
            toks[j] = m.group(1) + m.group(2) + m.group(3) + kd
        nk = (k[0], k[1], ", ".join(toks))
        if nk != k:
            tables[src][nk] = tables[src].get(nk, 0) | tables[src].pop(k)
            k = nk
        tables[src][k] |= mask << 2
    for src, rows in sdwa.items():
        for (op, mn, tpl), mask in rows.items():
            hit = [k for k in tables[src] if k[0] == op and k[1].replace("_e32", "_sdwa") == mn and (tables[src][k] & mask)]
            assert hit, ("no e32 row for sdwa", op, mn)
            tables[src][hit[0]] |= mask << 4
    tables["VOP3"] = native

HEADER = """// aqueduct/emu/isa/gfx9_opcodes.hpp — every gfx90a/gfx942 opcode of the encodings the gfx9
// decoder reads, with LLVM's mnemonic and operand template. GENERATED by
// tests/emu/isa/tools/gfx9_opcodes.py from LLVM 19's disassembly (facts: opcode numbers, LLVM's
// spelling, operand widths); tests/emu/isa_gfx9_decode.cpp re-checks every row against LLVM.
//
// Layer: emu. `targets`: bit 0 gfx90a, bit 1 gfx942; VOP1/VOP2/VOPC rows also bits 2/3 (the
// opcode has a VOP3 _e64 form) and 4/5 (an _sdwa form). Template placeholders
// %[a]<field><width>[kind]: `a` an AGPR; field D vdst/sdst/sdata, S VOP3 carry-out, 0/1/2
// sources, A address, B data0 or sbase, C data1, R srsrc, O soffset, X saddr, K simm16 in hex,
// J simm16 in decimal, L literal, W s_waitcnt's counters; width in registers (1-9, a = 10, g = 16, w = 32); source kind:
// none 32/64-bit with float modifiers, n without modifiers, s integer whose neg bit is sext,
// h 16-bit float, i 16-bit integer, t 16-bit integer with sext.
// Thread safety: constant data.
#pragma once

#include <cstdint>

namespace aqueduct::emu::isa::gfx9 {

struct op_entry {
  std::uint16_t op;
  std::uint8_t targets;
  const char* name;
  const char* operands;
};
"""
FOOTER = """
}  // namespace aqueduct::emu::isa::gfx9"""

main()

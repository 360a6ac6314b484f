#!/usr/bin/env python3
"""The ISA decoder's oracle: llvm-mc-19.

For each target (gfx1100, gfx1201; gfx942 and gfx90a plug in the same way), every opcode of every
encoding the interpreter decodes is built into an instruction word with fixed operands and
disassembled by `llvm-mc-19 -disassemble -show-encoding`. Then:

  --write   regenerates include/aqueduct/emu/isa/<gen>_opcodes.hpp: the table of every
            (encoding, opcode) LLVM accepts, with the generation-neutral operation when the
            interpreter implements it (a name in emu/isa/ops.hpp, or an alias below) and op::none
            otherwise — the unsupported table.
  --check   (the ctest `emu.isa_oracle`) fails unless
            1. the committed table equals the regenerated one (no opcode LLVM accepts is missing,
               none LLVM rejects is listed, no name differs), and
            2. for every word, the decoder (tests/emu/isa/isa_disasm, the interpreter's own
               decoder + a printer in LLVM syntax) gives LLVM's mnemonic and operands for
               implemented opcodes, LLVM's mnemonic for unsupported ones, and "illegal" where LLVM
               finds no instruction.
  --report  prints the coverage report (implemented / unsupported per encoding) for docs/isa.md.

Adding a target: add an entry to TARGETS (its mcpu, generation name, encodings with a
word-builder per opcode, and name aliases onto ops.hpp names), a decoder in emu/isa/<gen>.hpp,
run --write, and add `--target <name>` to the ctest in tests/emu/CMakeLists.txt.
"""
import argparse, os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
OPS_HPP = os.path.join(ROOT, "include/aqueduct/emu/isa/ops.hpp")
COVERAGE_MD = os.path.join(ROOT, "docs/isa-coverage.md")
NOP = 0xBF800000  # s_nop 0 on gfx10+: padding so a misdecoded candidate cannot eat the next one
PAD = 3
LLVM_MC = "llvm-mc-19"

FCOND = ["f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq", "nlt", "t"]
ICOND = ["f", "lt", "eq", "le", "gt", "ne", "ge", "t"]
SCOND = ["eq", "lg", "gt", "ge", "lt", "le"]

# ------------------------------------------------------------------------------------ gfx11
def gfx11_encodings():
    """(encoding, opcode count, [word builders]): LLVM rejects unused operand fields that are not
    zero, so each opcode is tried with these operand variants in order and the first one LLVM
    accepts is the opcode's test word."""
    V = lambda r: 256 + r
    def subsets(fields):  # every combination of the given (shift, value) fields, all set first
        out = []
        for mask in range(1 << len(fields) - 1, -1, -1) if False else range((1 << len(fields)) - 1, -1, -1):
            out.append(sum(v << sh for i, (sh, v) in enumerate(fields) if (mask >> i) & 1))
        return out
    ds_var = subsets([(8, 4), (16, 6), (24, 8)])
    flat_var = subsets([(8, 4), (24, 6)])
    def flat(seg, op):
        return [[(0x37 << 26) | (op << 18) | (seg << 16) | 16, a | f] for f in flat_var
                for a in ([2 | (124 << 16)] if seg == 0 else [2 | (124 << 16), 2 | (2 << 16), (124 << 16)] if seg == 2
                          else [2 | (124 << 16) | (1 << 23), (2 << 16), (124 << 16)])]
    return [
        ("sop1", 256, lambda op: [[(0x17D << 23) | (4 << 16) | (op << 8) | 2], [(0x17D << 23) | (op << 8)]]),
        ("sop2", 0x60, lambda op: [[(2 << 30) | (op << 23) | (4 << 16) | (6 << 8) | 2]]),
        ("sopk", 29, lambda op: [[(0xB << 28) | (op << 23) | (4 << 16) | 0x10], [(0xB << 28) | (op << 23) | 0x10]]),
        ("sopc", 128, lambda op: [[(0x17E << 23) | (op << 16) | (6 << 8) | 2]]),
        ("sopp", 128, lambda op: [[(0x17F << 23) | (op << 16) | 0x3], [(0x17F << 23) | (op << 16)]]),
        ("smem", 256, lambda op: [[(0x3D << 26) | (op << 18) | (8 << 6) | 1, (124 << 25) | 0x10],
                                  [(0x3D << 26) | (op << 18) | 1, (124 << 25) | 0x10], [(0x3D << 26) | (op << 18), 0]]),
        ("vop1", 256, lambda op: [[(0x3F << 25) | (4 << 17) | (op << 9) | V(2)], [(0x3F << 25) | (op << 9)]]),
        ("vop2", 62, lambda op: [[(op << 25) | (4 << 17) | (6 << 9) | V(2)]]),
        ("vopc", 256, lambda op: [[(0x3E << 25) | (op << 17) | (6 << 9) | V(2)]]),
        ("vop3", 1024, lambda op: [[(0x35 << 26) | (op << 16) | 4, V(2) | (V(6) << 9) | (8 << 18)],
                                   [(0x35 << 26) | (op << 16) | 4, V(2) | (V(6) << 9)],
                                   [(0x35 << 26) | (op << 16) | 4, V(2)],
                                   [(0x35 << 26) | (op << 16) | 4, V(2) | (6 << 9)],
                                   [(0x35 << 26) | (op << 16) | 4, 2 | (6 << 9)],
                                   [(0x35 << 26) | (op << 16) | 4, V(2) | (V(6) << 9) | (V(8) << 18)]]),
        ("vop3p", 128, lambda op: [[(0xCC << 24) | (op << 16) | (1 << 14) | 4, V(2) | (V(6) << 9) | (V(8) << 18) | (3 << 27)],
                                   [(0xCC << 24) | (op << 16) | 4, V(2) | (V(6) << 9) | (3 << 27)]]),
        ("vopd", 16, lambda op: [[(0x32 << 26) | (op << 22) | (8 << 17) | (b << 9) | V(2), (4 << 24) | (3 << 17) | V(11)] for b in (6, 0)]),
        ("vopd_y", 32, lambda op: [[(0x32 << 26) | (8 << 22) | (op << 17) | V(2), (4 << 24) | (3 << 17) | (b << 9) | V(11)] for b in (13, 0)]),
        ("ds", 256, lambda op: [[(0x36 << 26) | (op << 18) | (8 << 8) | 4, 2 | v] for v in ds_var]),
        ("flat", 128, lambda op: flat(0, op)),
        ("global", 128, lambda op: flat(2, op)),
        ("scratch", 128, lambda op: flat(1, op)),
        # offen for even opcodes, idxen for odd ones: each bit is seen alone
        ("mubuf", 256, lambda op: [[(0x38 << 26) | (op << 18) | 16, 2 | (4 << 8) | (2 << 16) | (1 << (22 + op % 2)) | (3 << 24)],
                                   [(0x38 << 26) | (op << 18) | 16, (4 << 8) | (2 << 16) | (3 << 24)],
                                   [(0x38 << 26) | (op << 18), 0]]),
    ]

def dpp_encodings():
    """The DPP16 and DPP8 forms of VOP1/VOP2/VOPC/VOP3 (gfx11 and gfx12 alike): checked against LLVM,
    not tabled (they decode through their base encoding's entry). The DPP word varies with the
    opcode so every control family, the masks, bound_ctrl and fi are seen."""
    V = lambda r: 256 + r
    def dpp16(op, mods=0):
        ctrl = [(op * 37) & 0xFF, 0x101 + op % 15, 0x111 + op % 15, 0x121 + op % 15, 0x140, 0x141,
                0x150 + op % 16, 0x160 + op % 16][op % 8]
        return (2 | (ctrl << 8) | ((op % 2) << 19) | (((op // 2) % 2) << 18) | ((0xF if op % 5 else 0x5) << 24)
                | ((0xF if op % 3 else 0xA) << 28) | mods)
    def dpp8(op):
        sel = [(op + 3 * i) % 8 for i in range(8)]
        return 2 | sum(v << (8 + 3 * i) for i, v in enumerate(sel))
    src0 = lambda op: 0xE9 + op % 2  # DPP8 without / with fi
    vop3 = [V(6) << 9 | V(8) << 18, V(6) << 9, 0, 6 << 9]
    return [
        ("vop1_dpp16", 256, lambda op: [[(0x3F << 25) | (4 << 17) | (op << 9) | 0xFA, dpp16(op, m)] for m in (1 << 20 | 1 << 21, 0)]),
        ("vop2_dpp16", 62, lambda op: [[(op << 25) | (4 << 17) | (6 << 9) | 0xFA, dpp16(op, m)] for m in (1 << 20 | 1 << 22, 0)]),
        ("vopc_dpp16", 256, lambda op: [[(0x3E << 25) | (op << 17) | (6 << 9) | 0xFA, dpp16(op, m)] for m in (1 << 21 | 1 << 22, 0)]),
        ("vop3_dpp16", 1024, lambda op: [[(0x35 << 26) | (op << 16) | 4, 0xFA | b, dpp16(op)] for b in vop3]),
        ("vop1_dpp8", 256, lambda op: [[(0x3F << 25) | (4 << 17) | (op << 9) | src0(op), dpp8(op)]]),
        ("vop2_dpp8", 62, lambda op: [[(op << 25) | (4 << 17) | (6 << 9) | src0(op), dpp8(op)]]),
        ("vop3_dpp8", 1024, lambda op: [[(0x35 << 26) | (op << 16) | 4, src0(op) | b, dpp8(op)] for b in vop3]),
    ]

def gfx12_encodings():
    """gfx11's encodings with gfx12's SMEM and VFLAT/VGLOBAL/VSCRATCH layouts."""
    keep = [e for e in gfx11_encodings() if e[0] not in ("smem", "flat", "global", "scratch", "mubuf")]
    def vbuffer(op):
        return [[(0x31 << 26) | (op << 14) | 3, 4 | (8 << 9) | (fmt << 23) | mode, 2 | (16 << 8)]
                for mode in ((1 << (30 + op % 2)), 0) for fmt in (1, 0)]  # offen (even opcodes) / idxen (odd)
    def vmem(seg, op):
        out = []
        for f in (4 << 23, 0):          # data (vsrc) or none
            for v in (6, 0):            # vdst or none
                for a in ([(124, 2, 0), (2, 2, 0)] if seg == 2 else [(124, 2, 0)] if seg == 0
                          else [(124, 2, 1), (2, 0, 0), (124, 0, 0)]):
                    saddr, vaddr, sve = a
                    out.append([(0x3B << 26) | (seg << 24) | (op << 14) | saddr, v | f | (sve << 17), vaddr | (16 << 8)])
        return out
    return keep + [
        ("smem", 64, lambda op: [[(0x3D << 26) | (op << 13) | (8 << 6) | 1, (124 << 25) | 0x10],
                                  [(0x3D << 26) | (op << 13) | 1, (124 << 25) | 0x10], [(0x3D << 26) | (op << 13), 0]]),
        ("flat", 256, lambda op: vmem(0, op)),
        ("global", 256, lambda op: vmem(2, op)),
        ("scratch", 256, lambda op: vmem(1, op)),
        ("vbuffer", 256, vbuffer),
    ]

# LLVM's gfx12 spelling → the ops.hpp name of the same operation.
GFX12_ALIASES = {
    "v_mad_co_u64_u32": "v_mad_u64_u32", "v_mad_co_i64_i32": "v_mad_i64_i32",
    "s_add_co_u32": "s_add_u32", "s_add_co_ci_u32": "s_addc_u32", "s_add_co_i32": "s_add_i32",
    "s_sub_co_u32": "s_sub_u32", "s_sub_co_ci_u32": "s_subb_u32", "s_sub_co_i32": "s_sub_i32",
    "s_addk_co_i32": "s_addk_i32",
}


TARGETS = {
    "gfx1100": dict(gen="gfx11", mcpu="gfx1100", mattr="+wavefrontsize32", encodings=lambda: gfx11_encodings() + dpp_encodings(), aliases={}),
    "gfx1201": dict(gen="gfx12", mcpu="gfx1201", mattr="+wavefrontsize32", encodings=lambda: gfx12_encodings() + dpp_encodings(), aliases=GFX12_ALIASES),
}

# ------------------------------------------------------------------------------------ llvm-mc
def llvm_mc(mcpu, mattr, candidates):
    """Disassembles each candidate (a list of dwords); returns per candidate (text, nbytes) or None."""
    stream = []
    starts = []
    for ws in candidates:
        starts.append(len(stream) * 4)
        stream += ws + [NOP] * PAD
    data = b"".join(w.to_bytes(4, "little") for w in stream)
    # One input line per dword: llvm-mc echoes the line with each warning, so keep lines short.
    text = "\n".join(" ".join("0x%02x" % b for b in data[i:i + 4]) for i in range(0, len(data), 4))
    args = [LLVM_MC, "-disassemble", "-triple=amdgcn-amd-amdhsa", "-mcpu=" + mcpu, "-show-encoding"]
    if mattr:
        args.append("-mattr=" + mattr)
    r = subprocess.run(args, input=text + "\n", capture_output=True, text=True)
    lines = []
    for ln in r.stdout.splitlines():
        m = re.match(r"\s*(.*?)\s*; encoding: \[([^\]]*)\]", ln)
        if m:
            enc = bytes(int(x, 16) for x in m.group(2).split(","))
            lines.append((m.group(1).strip(), enc))
    # Walk the byte stream: llvm-mc reports where it skipped 4 invalid bytes (line and column);
    # every other position starts the next printed instruction, whose
    # (re-encoded) length is what it consumed.
    invalid = set()
    for m in re.finditer(r"<stdin>:(\d+):(\d+): warning: invalid instruction encoding", r.stderr):
        invalid.add((int(m.group(1)) - 1) * 4 + (int(m.group(2)) - 1) // 5)
    at = {}
    pos, i = 0, 0
    while pos < len(data):
        if pos in invalid:
            pos += 4
        elif i < len(lines):
            at[pos] = lines[i]
            pos += len(lines[i][1])
            i += 1
        else:
            sys.exit("oracle: llvm-mc printed fewer instructions than the stream holds")
    if i != len(lines):
        sys.exit("oracle: could not align llvm-mc's output with the input stream")
    return [at.get(s) for s in starts]

def mnemonic(text):
    m = text.split()[0] if text else ""
    if m.endswith("_dpp"):
        m = m[: -len("_dpp")]
    for suf in ("_e32", "_e64"):
        if m.endswith(suf):
            m = m[: -len(suf)]
    return m

# ------------------------------------------------------------------------------------ op mapping
def load_ops():
    src = open(OPS_HPP).read()
    body = src[src.index("#define AQUEDUCT_ISA_OPS"): src.index("// clang-format on")]
    return set(re.findall(r"X\((\w+),", body))

def map_name(name, ops, aliases):
    """(op name or None, aux) for an LLVM mnemonic."""
    name = aliases.get(name, name)
    if name in ops:
        return name, 0
    m = re.fullmatch(r"(flat|scratch|buffer)_(\w+)", name)  # one op for the segments and buffers
    if m and "global_" + m.group(2) in ops:
        return "global_" + m.group(2), 0
    m = re.fullmatch(r"s_cmpk?_(eq|lg|gt|ge|lt|le)_(i32|u32|u64)", name)
    if m:
        base = ("s_cmpk_" if name.startswith("s_cmpk") else "s_cmp_") + m.group(2)
        return (base if base in ops else None), SCOND.index(m.group(1))
    m = re.fullmatch(r"s_cmp_(\w+?)_(f32|f16)", name)  # gfx12 SALU float compares: VOPC's conditions
    if m and m.group(1) in FCOND:
        base = "s_cmp_" + m.group(2)
        return (base if base in ops else None), FCOND.index(m.group(1))
    m = re.fullmatch(r"v_cmp(x?)_class_(\w+)", name)
    if m:
        base = "v_cmp_class_" + m.group(2)
        return (base if base in ops else None), (0x10 if m.group(1) else 0)
    m = re.fullmatch(r"v_cmp(x?)_(\w+?)_([fiu](?:16|32|64))", name)
    if m:
        conds = FCOND if m.group(3)[0] == "f" else ICOND
        if m.group(2) in conds:
            base = "v_cmp_" + m.group(3)
            return (base if base in ops else None), conds.index(m.group(2)) | (0x10 if m.group(1) else 0)
    return None, 0

# ------------------------------------------------------------------------------------ table
def enumerate_target(t):
    """{enc: {code: (llvm text, mnemonic, words)}} for every valid opcode of every encoding."""
    result = {}
    for enc, n, build in t["encodings"]():
        variants = [build(op) for op in range(n)]
        flat_list = [(op, ws) for op in range(n) for ws in variants[op]]
        out = llvm_mc(t["mcpu"], t["mattr"], [ws for _, ws in flat_list])
        result[enc] = {}
        for (op, ws), o in zip(flat_list, out):
            if o is None or op in result[enc] or "Invalid register" in o[0]:
                continue  # invalid, an earlier variant was valid, or LLVM flags an operand
            text = o[0]
            if enc in ("vopd", "vopd_y"):
                x, y = [p.strip() for p in text.split("::")]
                text = x if enc == "vopd" else y
                result[enc][op] = (text, mnemonic(text).replace("v_dual_", "v_", 1), ws)
            else:
                result[enc][op] = (text, mnemonic(text), ws)
    return result

def table_rows(t, found, ops):
    rows = []
    for enc, codes in found.items():
        if "_dpp" in enc:
            continue  # DPP forms: checked, decoded through their base encoding's entry
        for code, (text, name, _) in sorted(codes.items()):
            if enc == "vop3" and code < 512:
                base_enc, base = ("vopc", code) if code < 256 else ("vop2", code - 256) if code < 384 else ("vop1", code - 384)
                b = found.get(base_enc, {}).get(base)
                if b is not None and b[1] == name:
                    continue  # the VOP3 form of a 32-bit opcode: decoded through that entry
            o, aux = map_name(name, ops, t["aliases"])
            rows.append((enc, code, o, aux, mnemonic(text)))
    # VOP3 forms LLVM rejects although the 32-bit form exists.
    for code in range(512):
        base_enc, base = ("vopc", code) if code < 256 else ("vop2", code - 256) if code < 384 else ("vop1", code - 384)
        if base in found.get(base_enc, {}) and code not in found.get("vop3", {}):
            rows.append(("vop3", code, None, 0xFF, ""))
    return rows

def render_header(t, rows):
    gen = t["gen"]
    out = [
        "// aqueduct/emu/isa/%s_opcodes.hpp — every (encoding, opcode) llvm-mc-19 disassembles for %s." % (gen, t["mcpu"]),
        "//",
        "// Layer: emu. GENERATED by tests/emu/isa/oracle.py --write --target %s; do not edit: add the" % t["mcpu"],
        "// operation to emu/isa/ops.hpp and regenerate. An entry with op::none is valid for LLVM and not",
        "// implemented (the unsupported table: such an instruction faults naming itself); aux 0xFF marks",
        "// a VOP3 form LLVM rejects although the 32-bit form exists. The ctest emu.isa_oracle checks",
        "// this table and the decoder against llvm-mc-19.",
        "// Thread safety: constants.",
        "#pragma once",
        "",
        "#include <aqueduct/emu/isa/insn.hpp>",
        "",
        "#include <array>",
        "",
        "namespace aqueduct::emu::isa {",
        "",
        "inline constexpr std::array<opcode_entry, %d> %s_opcode_list{{" % (len(rows), gen),
    ]
    line = []
    for enc, code, o, aux, name in rows:
        line.append('{enc::%s, %d, op::%s, %d, "%s"}' % (enc, code, o or "none", aux, name))
        if len(line) == 3:
            out.append("    " + ", ".join(line) + ",")
            line = []
    if line:
        out.append("    " + ", ".join(line) + ",")
    out += [
        "}};",
        "inline constexpr opcode_table<%d> %s_opcodes{%s_opcode_list};" % (len(rows), gen, gen),
        "",
        "}  // namespace aqueduct::emu::isa",
        "",
    ]
    return "\n".join(out)

# ------------------------------------------------------------------------------------ check
def norm_operands(text):
    ops = text.split(None, 1)[1] if " " in text.strip() else ""
    return re.sub(r"\s+", " ", ops.strip())

def check(t, found, tool):
    words = []
    keys = []
    for enc, codes in found.items():
        for code, (text, name, ws) in sorted(codes.items()):
            keys.append((enc, code, text, name))
            words.append(ws)
    inp = "\n".join(" ".join("%08x" % w for w in ws + [NOP] * PAD) for ws in words) + "\n"
    r = subprocess.run([tool, t["mcpu"]], input=inp, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("oracle: %s failed: %s" % (tool, r.stderr))
    ours = r.stdout.splitlines()
    if len(ours) != len(keys):
        sys.exit("oracle: %s printed %d lines for %d words" % (tool, len(ours), len(keys)))
    bad = 0
    implemented = 0
    for (enc, code, text, name), mine in zip(keys, ours):
        kind, _, rest = mine.partition(" ")
        llvm_mn = mnemonic(text)
        if kind == "illegal":
            print("MISMATCH %s %d: llvm '%s', decoder: illegal" % (enc, code, text)); bad += 1
            continue
        if enc in ("vopd", "vopd_y"):  # the decoder prints both halves; compare the one under test
            halves = rest.split(" :: ")
            rest = halves[0 if enc == "vopd" else 1] if len(halves) == 2 else rest
        our_mn, _, our_ops = rest.partition(" ")
        if our_mn != llvm_mn:
            print("MISMATCH %s %d: llvm mnemonic '%s', decoder '%s'" % (enc, code, llvm_mn, our_mn)); bad += 1
            continue
        if kind == "ok":
            implemented += 1
            if our_ops.strip() != "*" and norm_operands(text) != re.sub(r"\s+", " ", our_ops.strip()):
                print("MISMATCH %s %d %s: llvm operands '%s', decoder '%s'" % (enc, code, llvm_mn, norm_operands(text), our_ops.strip()))
                bad += 1
    return bad, implemented, len(keys)

COVERAGE_HEAD = """# ISA coverage per target (generated)

GENERATED by tests/emu/isa/oracle.py --write (the ctest emu.isa_oracle_<target> fails when it is
stale). For each encoding the interpreter decodes: how many of the opcodes llvm-mc-19
disassembles for the target are implemented, and the ones that are not (such an instruction
ends the dispatch with a queue error naming it). VOP3 counts only VOP3-only opcodes; the VOP3
forms of VOP1/VOP2/VOPC opcodes follow their 32-bit entries. Encodings not decoded at all
(MTBUF, MIMG, EXP, VINTERP, LDSDIR; VOP3P DPP forms) fault as illegal/unsupported. The DPP16/DPP8 forms of
VOP1/VOP2/VOPC/VOP3 opcodes follow their base entries (64-bit operations and the 32-bit forms of
16-bit ones excepted: unsupported).
"""

def coverage_section(target, rows):
    by = {}
    for enc, code, o, aux, name in rows:
        if aux == 0xFF:
            continue
        by.setdefault(enc, ([], []))[0 if o else 1].append(name)
    out = ["## %s" % target, "", "| encoding | implemented | not implemented | not implemented (names) |", "|---|---|---|---|"]
    ti = tu = 0
    for enc, (impl, unsup) in by.items():
        ti += len(impl)
        tu += len(unsup)
        out.append("| %s | %d | %d | %s |" % (enc.upper().replace("_", "."), len(impl), len(unsup), ", ".join(sorted(set(unsup)))))
    out.append("| all | %d | %d | |" % (ti, tu))
    return "\n".join(out) + "\n"

def replace_section(md, target, section):
    begin, end = "<!-- %s -->\n" % target, "<!-- /%s -->\n" % target
    block = begin + section + end
    if begin in md and end in md:
        return md[: md.index(begin)] + block + md[md.index(end) + len(end):]
    return md.rstrip("\n") + "\n\n" + block

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True, choices=sorted(TARGETS))
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", metavar="ISA_DISASM")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--llvm-mc", default="llvm-mc-19")
    a = ap.parse_args()
    global LLVM_MC
    LLVM_MC = a.llvm_mc
    t = TARGETS[a.target]
    ops = load_ops()
    found = enumerate_target(t)
    rows = table_rows(t, found, ops)
    header_path = os.path.join(ROOT, "include/aqueduct/emu/isa/%s_opcodes.hpp" % t["gen"])
    text = render_header(t, rows)
    if a.write:
        open(header_path, "w").write(text)
        print("wrote %s: %d entries" % (header_path, len(rows)))
    section = coverage_section(a.target, rows)
    md = open(COVERAGE_MD).read() if os.path.exists(COVERAGE_MD) else COVERAGE_HEAD
    md_new = replace_section(md, a.target, section)
    if a.write:
        open(COVERAGE_MD, "w").write(md_new)
        print("wrote the %s section of %s" % (a.target, COVERAGE_MD))
    if a.report:
        print(section)
    if a.check:
        failures = 0
        committed = open(header_path).read() if os.path.exists(header_path) else ""
        if committed != text:
            print("FAIL: %s differs from what llvm-mc-19 gives (rerun oracle.py --write --target %s and review the diff)"
                  % (header_path, a.target))
            failures += 1
        if md_new != md:
            print("FAIL: the %s section of %s is stale (rerun oracle.py --write --target %s)" % (a.target, COVERAGE_MD, a.target))
            failures += 1
        bad, impl, total = check(t, found, a.check)
        print("%s: %d LLVM-valid opcodes, %d implemented, %d mismatches" % (a.target, total, impl, bad))
        sys.exit(1 if failures or bad else 0)

if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The order in which the compiled CUDA twins issue their loads (issue 8, probe).

The visitor and the simulator issue a thread's loads in the emitted order: fold point after fold
point, each fold point's loads in instruction order. ptxas schedules them otherwise: it spreads a
fold point's loads over about twice their number and interleaves neighbouring fold points (and
permutes the loads within a fold point). This script recovers that order from the SASS.

usage:
  bench/compiled-order.py emit BIN REPORTS OUT [ROOT]
      the CUDA twin (`BIN emit --target cuda`) of every configuration of the sweep reports
      REPORTS (a folder of counters JSON reports: the OUTDIR of `GPU=h100
      bench/recheck-counters.sh` holds every sweep), one OUT/NAME.cu each, from the definition
      files of the checkout ROOT (default this one; a checkout of an earlier commit with its own
      BIN gives the code of that commit's emitters); then, on the GPU machine,
      `bench/twin-sass.py OUT` compiles them as the twins were (NVRTC, the driver's JIT) and
      writes NAME.sass and NAME.res beside them. (`stencilscope counters` does all of this
      itself for the configurations it profiles: raw/NAME-compiled-order.txt.)
  bench/compiled-order.py orders DIR
      per configuration of DIR (NAME.cu and NAME.sass), the compiled order as `(fold point,
      instruction)` pairs, each with its place among the function's SASS instructions, in the
      format `stencilscope counters --compiled-order` reads (lines `KERNEL DTYPE BX,BY,BZ
      FX,FY,FZ NX,NY,NZ: f,n@p f,n@p ...`); the configurations whose loads and
      stores could not all be matched to the emitted ones go to stderr (a load's address is a
      base register plus an immediate offset; where the compiler keeps several bases, each is
      matched by the shift that maps its offsets onto emitted ones not taken yet, which fails
      where bases are few loads each; of the 495 twins of the committed sweeps, one was left,
      and seven twins of later sweeps were, before pure operations on the same values gave one
      root: compiled-order/rematched/ in the H200's results)
  bench/compiled-order.py fit DIR
      per folded star3d_r4 f64 configuration at 256^3, the least-squares fit of a load's place
      in the compiled order against the loads of the fold points before its own (a) and its
      rank among its fold point's loads (b), with the rms residual
"""
import glob
import json
import os
import re
import subprocess
import sys

FILES = {"star3d_r4": "stencils/star3d_r4.toml", "star3d_r1": "stencils/star3d_r1.toml",
         "box3d_r1": "stencils/box3d_r1.toml", "d3q19_srt_pull": "lbm/d3q19_srt_pull.toml",
         "d3q19_srt_pull_aos": "bench/counters/d3q19_srt_pull_aos.toml"}
NAME = re.compile(r"(\w+)-(f32|f64)-(\d+)x(\d+)x(\d+)-f(\d+)x(\d+)x(\d+)-(\d+)x(\d+)x(\d+)$")
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def emit(bin_, reports, out, root=HERE):
    os.makedirs(out, exist_ok=True)
    seen = set()
    for f in sorted(glob.glob(os.path.join(reports, "*.json"))):
        d = json.load(open(f))
        if "records" not in d:
            continue
        k, t, dom = d["kernel"], d["dtype"], d["domain"]["size"]
        for r in d["records"]:
            b, fo = r["config"]["block"], r["config"]["fold"]
            x = lambda v: "x".join(map(str, v))
            name = f"{k}-{t}-{x(b)}-f{x(fo)}-{x(dom)}"
            if name in seen:
                continue
            seen.add(name)
            args = [bin_, "emit", os.path.join(root, FILES[k]), "--target", "cuda",
                    "--block", ",".join(map(str, b)), "--fold", ",".join(map(str, fo)),
                    "--domain", ",".join(map(str, dom))]
            if not k.startswith("d3q19"):
                args += ["--dtype", t]
            src = subprocess.run(args, check=True, capture_output=True, text=True).stdout
            open(os.path.join(out, name + ".cu"), "w").write(src)
    print(f"{len(seen)} kernels in {out}")


def sass_memory(path):
    """The kernel's global loads and stores `(L|S, base, byte offset, place)` in SASS order, and
    its stack accesses (register spills) `(l|s, None, (stack offset, bytes), place)` among them,
    the place an instruction's index in the function (from 0; src/counters/sass.rs counts the
    same).

    Address registers are followed as values `(root, constant)`: `IADD3 Rd, Ra, imm` and
    `MOV Rd, Ra` keep Ra's root and add to its constant; any other write starts a new root. A
    base is a root, and the offset adds the register's constant to the immediate, so that loads
    through registers the compiler derived from one pointer (64-bit adds of several MiB, the
    SoA arrays' strides) share one base and one shift. The 64-bit adds' high words (`.X`) are
    left alone: the low word carries the offset. Values are also followed through the stack
    (`STL` of a register, `LDL` back) and through `LOP3.LUT ... 0x3c` (XOR), with which the
    compiler swaps an address pair's words; a value is then the XOR of its terms; `IMAD.MOV.U32
    Rd, RZ, RZ, Ra` is a move; and a pure operation on values seen before gives the root it gave
    then (value numbering: ptxas computes an output pointer anew from the kernel parameter before
    a fold point's stores) (src/counters/sass.rs does the same)."""
    out, value, stack, fresh, numbered = [], {}, {}, [0], {}

    def new_root():
        fresh[0] += 1
        return ((f"v{fresh[0]}", 0),)

    def val(r):
        if r not in value:
            value[r] = ((f"in:{r}", 0),)
        return value[r]

    def plus(r, k):
        return f"R{int(r[1:]) + k}" if re.fullmatch(r"R\d+", r) else None

    at = -1
    for line in open(path):
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if not m:
            continue
        ins = m.group(1).strip()
        if not ins:
            continue
        at += 1
        guarded = ins.startswith("@")
        if guarded:
            ins = ins.split(None, 1)[1]
        op, _, rest = ins.partition(" ")
        args = [a.strip().replace(".reuse", "") for a in rest.split(",")]
        loc = re.search(r"\[R1(?:\+(-?0x[0-9a-f]+))?\]", rest)
        if op.startswith(("LDL", "STL")) and loc:
            slot = int(loc.group(1) or "0", 16)
            width = 4 if ".128" in op else 2 if ".64" in op else 1
            if slot >= 0:
                out.append(("s" if op.startswith("STL") else "l", None, (slot, 4 * width), at))
            for k in range(width):
                if op.startswith("STL"):
                    r = plus(args[1], k)
                    if r:
                        stack[slot + 4 * k] = val(r)
                else:
                    r = plus(args[0], k)
                    if r:
                        value[r] = stack.get(slot + 4 * k) or new_root()
            continue
        if op.startswith(("LDG", "STG")):
            a = re.search(r"\[(R\d+)\.64(?:\+(-?0x[0-9a-f]+))?\]", ins)
            v = val(a.group(1))
            if len(v) != 1:
                v = new_root()
            root, c = v[0]
            out.append((op[0], root, c + int(a.group(2) or "0", 16), at))
        dest = args[0] if args and re.fullmatch(r"R\d+", args[0]) else None
        if dest is None or op.startswith("STG"):
            continue
        srcs = [x for x in args[1:] if not re.fullmatch(r"!?P(\d+|T)", x) and x != "RZ"]
        regs = [x for x in srcs if re.fullmatch(r"R\d+", x)]
        imms = [x for x in srcs if re.fullmatch(r"-?0x[0-9a-f]+", x)]
        if op == "IADD3" and len(regs) == 1 and len(imms) <= 1 and len(srcs) == len(regs) + len(imms):
            v = val(regs[0])
            value[dest] = (((v[0][0], v[0][1] + (int(imms[0], 16) if imms else 0)),)
                           if len(v) == 1 else new_root())
        elif op == "MOV" and len(regs) == 1 and len(srcs) == 1:
            value[dest] = val(regs[0])
        elif op == "IMAD.MOV.U32" and len(regs) == 1 and args[1:3] == ["RZ", "RZ"]:
            # A move by multiply-add: RZ * RZ + Ra.
            value[dest] = val(regs[0])
        elif op == "LOP3.LUT" and len(regs) == 2 and len(srcs) == 3 and srcs[2] == "0x3c":
            x = tuple(sorted(set(val(regs[0])) ^ set(val(regs[1]))))
            value[dest] = x or new_root()
        elif key := numbered_key(op, args[1:], val, guarded):
            # The same pure operation on the same values again (ptxas recomputes an output
            # pointer from the kernel parameter before each fold point's stores): the same root.
            value[dest] = numbered.setdefault(key, new_root())
        else:
            value[dest] = new_root()
    return out


# Operations whose result follows from their operands alone (src/counters/sass.rs: `PURE`).
PURE = ("IMAD", "IMAD.WIDE", "IMAD.WIDE.U32", "IMAD.SHL.U32", "IMAD.IADD", "IMAD.MOV.U32",
        "IMAD.HI.U32", "IADD3", "LEA", "LEA.HI", "SHF.L.U32", "SHF.R.U32.HI", "SHF.R.S32.HI",
        "LOP3.LUT", "LDC", "LDC.64", "S2R", "VIADD", "IMNMX", "SEL")
STEADY = ("SR_TID.X", "SR_TID.Y", "SR_TID.Z", "SR_CTAID.X", "SR_CTAID.Y", "SR_CTAID.Z")


def numbered_key(op, srcs, val, guarded):
    """The key of a pure operation's result (its opcode and its operands' values), or None where
    an operand is not a value the matcher knows at this point (a predicate, a uniform register,
    a special register that changes) or the instruction is guarded."""
    if guarded or op not in PURE:
        return None
    parts = [op]
    for a in srcs:
        if re.fullmatch(r"R\d+", a):
            parts.append(repr(val(a)))
        elif a == "RZ" or re.fullmatch(r"-?0x[0-9a-f]+", a) or re.fullmatch(r"c\[0x[0-9a-f]+\]\[0x[0-9a-f]+\]", a):
            parts.append(a)
        elif a in STEADY:
            parts.append(a)
        else:
            return None
    return "|".join(parts)


def base_deltas(items, table, es):
    """Per base, the byte shift that maps its accesses onto the emitted element offsets `table`,
    or None where that is ambiguous. Bases with most accesses first, each onto offsets no
    earlier base took, and only where one shift fits (the fold points are translates of each
    other, so a base of few accesses may fit several); a base of one access by the one shift of
    an earlier base that fits (the same address computed again), else where one offset is left."""
    by_base = {}
    for b, o in items:
        # The same address again: a load the compiler issues twice (see `order`).
        if o not in by_base.setdefault(b, []):
            by_base[b].append(o)
    delta, used = {}, set()

    def mapped(offs, cand):
        keys = [(o + cand) // es for o in offs if (o + cand) % es == 0]
        keys = [k for k in keys if k in table]
        ok = len(keys) == len(offs) and len(set(keys)) == len(keys) and not set(keys) & used
        return keys if ok else None

    for b, offs in sorted(by_base.items(), key=lambda kv: -len(kv[1])):
        every = {t * es - offs[0] for t in table}
        fits = []
        for cands in ([every] if len(offs) > 1 else [set(delta.values()), every]):
            fits = [(c, k) for c in sorted(cands) if (k := mapped(offs, c)) is not None]
            if len(fits) == 1:
                break
        if len(fits) != 1:
            return None
        delta[b] = fits[0][0]
        used |= set(fits[0][1])
    return delta


def order(cu_path, sass_path, es, stack=None, places=None):
    """The compiled order of `(fold point, instruction)`, or None where not every emitted load and
    store is matched exactly once; with a list `stack`, the stack accesses are appended to it as
    `(global accesses before it, token)`, the token `s@OFFSET:BYTES` or `l@OFFSET:BYTES`; with a
    list `places`, each access's place among the function's SASS instructions (from 0)."""
    cu = open(cu_path).read()
    blocks = cu.split("// fold point")[1:] or [cu]
    loads, stores = {}, {}
    first = len(re.findall(r"ld_0_\d+ = fld_", blocks[0]))
    named = first > 0
    if not named:
        # The earlier emitters (before each element a thread's fold points share was loaded
        # once) read every fold point's elements inline and left the merging to the compiler:
        # instruction n is a fold point's n-th distinct element read, issued at the first fold
        # point that reads the element.
        first = len(set(re.findall(r"fld_\w+\[base_\w+ \+ (\d+)\](?!\s*=[^=])", blocks[0])))
    for f, bl in enumerate(blocks):
        if named:
            for m in re.finditer(r"ld_(\d+)_(\d+) = fld_\w+\[base_\w+ \+ (\d+)\]", bl):
                loads[int(m.group(3))] = (int(m.group(1)), int(m.group(2)))
        else:
            seen = []
            for m in re.finditer(r"fld_\w+\[base_\w+ \+ (\d+)\](?!\s*=[^=])", bl):
                if int(m.group(1)) not in seen:
                    seen.append(int(m.group(1)))
            for n, off in enumerate(seen):
                loads.setdefault(off, (f, n))
        # Stores follow the loads in the instruction list, in order of first appearance.
        for q, m in enumerate(re.finditer(r"fld_\w+\[base_\w+ \+ (\d+)\] =[^=]", bl)):
            stores[int(m.group(1))] = (f, first + q)
    mem = sass_memory(sass_path)
    dl = base_deltas([(r, o) for k, r, o, _ in mem if k == "L"], loads, es)
    ds = base_deltas([(r, o) for k, r, o, _ in mem if k == "S"], stores, es)
    if dl is None or ds is None:
        return None
    # Where registers are short, ptxas may load a read-only element again instead of spilling
    # it: the order keeps its first load (src/counters/sass.rs does the same).
    out, seen = [], set()
    for k, r, o, at in mem:
        if k in "ls":
            if stack is not None:
                stack.append((len(out), f"{k}@{o[0]}:{o[1]}"))
            continue
        table, d = (loads, dl) if k == "L" else (stores, ds)
        e = o + d[r]
        if e % es or e // es not in table:
            return None
        if table[e // es] not in seen:
            seen.add(table[e // es])
            out.append(table[e // es])
            if places is not None:
                places.append(at)
    if len(out) != len(loads) + len(stores):
        return None
    return out


def configs(d):
    for f in sorted(glob.glob(os.path.join(d, "*.sass"))):
        name = os.path.basename(f)[:-5]
        m = NAME.match(name)
        if m:
            yield name, m


def orders(d):
    """Prints the compiled orders in the format of `stencilscope counters --compiled-order`."""
    bad = 0
    print("# KERNEL DTYPE BX,BY,BZ FX,FY,FZ NX,NY,NZ: the issued (fold point, instruction) pairs"
          " in the compiled order, each @ its place among the SASS instructions"
          " (bench/compiled-order.py orders)")
    for name, m in configs(d):
        k, t = m.group(1), m.group(2)
        v = [m.group(i) for i in range(3, 12)]
        es = 4 if t == "f32" else 8
        stack, places = [], []
        o = order(os.path.join(d, name + ".cu"), os.path.join(d, name + ".sass"), es, stack, places)
        if o is None:
            print(f"unmatched: {name}", file=sys.stderr)
            bad += 1
            continue
        tokens = []
        for i, ((f, n), at) in enumerate(zip(o, places)):
            tokens += [t for p, t in stack if p == i] + [f"{f},{n}@{at}"]
        tokens += [t for p, t in stack if p == len(o)]
        print(f"{k} {t} {','.join(v[0:3])} {','.join(v[3:6])} {','.join(v[6:9])}: "
              + " ".join(tokens))
    print(f"{bad} configurations unmatched", file=sys.stderr)


def fit(d):
    import numpy as np
    print("| block | fold | registers | fold points | a | b | rms |")
    print("|---|---|---|---|---|---|---|")
    for name, m in configs(d):
        if not name.startswith("star3d_r4-f64-") or not name.endswith("-256x256x256"):
            continue
        o = order(os.path.join(d, name + ".cu"), os.path.join(d, name + ".sass"), 8)
        if o is None:
            continue
        stores = max(n for _, n in o)
        o = [p for p in o if p[1] != stores]
        nf = max(f for f, _ in o) + 1
        if nf == 1:
            continue
        start, c = {}, 0
        for f in range(nf):
            start[f] = c
            c += sum(1 for ff, _ in o if ff == f)
        seen, xs, ys = {}, [], []
        for p, (f, _) in enumerate(o):
            j = seen.get(f, 0)
            seen[f] = j + 1
            xs.append([1.0, start[f], j])
            ys.append(p)
        x, y = np.array(xs), np.array(ys, float)
        coef = np.linalg.lstsq(x, y, rcond=None)[0]
        rms = float(np.sqrt(np.mean((x @ coef - y) ** 2)))
        res_path = os.path.join(d, name + ".res")
        res = open(res_path).read() if os.path.exists(res_path) else ""
        reg = re.search(r"REG:(\d+)", res)
        print(f"| {m.group(3)}×{m.group(4)}×{m.group(5)} | {m.group(6)}×{m.group(7)}×{m.group(8)} "
              f"| {reg.group(1) if reg else '?'} | {nf} | {coef[1]:.2f} | {coef[2]:.2f} | {rms:.1f} |")


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["emit"] and len(a) in (4, 5):
        emit(*a[1:])
    elif a[:1] == ["orders"] and len(a) == 2:
        orders(a[1])
    elif a[:1] == ["fit"] and len(a) == 2:
        fit(a[1])
    else:
        sys.exit(__doc__)

#!/usr/bin/env python3
"""How many warps store at once: the D3Q19 AoS twins against the record copy (issue 8).

L2 writes back early a share of the partly written record sectors, and the share grows with the
warps that store at the same time: the record copy loses 0.05 of them at 4 warps per block and
0.50 at 32, and 0.04 at 32 once its warps store apart (`bench/l2-traffic.py`, sets `storegap`
and `warpskew`). The D3Q19 AoS twins compiled with the float options store back to back as the
copy does, yet lose a third to a half of the copy's share at the same warps per block. This
stamps, per warp, the SM's `clock64` when the warp's first output value is ready (it needs every
load) and after its last store, for the twins as emitted (compiled without and with the float
options of `run --backend cuda`) and for the copy (`copy_spin` of `l2-traffic.py` at no wait).

From the stamps: per SM, the warps in their store phase at once (the warps' store phases summed
over the time any of them is open); per block, the same among its own warps, and the spread of
its warps' ready stamps (largest less smallest). Every twin's output is checked against the
formula printed in its source (float64, on a slab of planes), the copy's against its input
plus one.

usage (GPU, CuPy, the stencilscope binary):
  bench/store-spread.py measure BIN OUT.json CONFIG...
  bench/store-spread.py summary OUT.json
CONFIG: `twin:bx,by,bz` (compiled without options), `twin:bx,by,bz/fopt` (with the float
options), `copy:bx,by,bz`.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (FLOAT_OPTIONS, WARP_IDS, check_lbm_aos, emit_cuda,  # noqa: E402
                      lbm_aos_fields, provenance)

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = os.path.join(HERE, "counters", "d3q19_srt_pull_aos.toml")
DOMAIN = "256,256,256"
COMPONENTS = 19
EDGE = 256  # the copy's domain, as l2-traffic.py's

# The per-warp record: SM, clock64 when the first output is ready, clock64 after the last store.
STAMP_PROLOGUE = "\n" + WARP_IDS + "    unsigned long long ss_ready = 0;\n"
# The ready stamp depends on the value (after every load it needs), not on memory, so the
# compiler keeps the stores where it would put them.
READY = ('asm volatile("mov.u64 %0, %%clock64; /* after %1 */" : "=l"(ss_ready) : "f"({v}));')
EPILOGUE = """    {
        unsigned long long ss_end, ss_sm;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(ss_end) :: "memory");
        unsigned smid; asm volatile("mov.u32 %0, %%smid;" : "=r"(smid)); ss_sm = smid;
        if (ss_lin % 32 == 0) {
            unsigned long long* ss_rec = ss_ts + (ss_blk * ss_wpb + ss_lin / 32) * 3;
            ss_rec[0] = ss_sm; ss_rec[1] = ss_ready; ss_rec[2] = ss_end;
        }
    }
"""

COPY_SOURCE = r"""
#define Q 19
extern "C" __global__ void copy_stamped(const float* __restrict__ a, float* __restrict__ b, int n,
                                        unsigned long long* __restrict__ ss_ts)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const int z = blockIdx.z * blockDim.z + threadIdx.z;
    const long long r = (x + (long long)n * (y + (long long)n * z)) * Q;
""" + STAMP_PROLOGUE + r"""
    float v[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) v[q] = a[r + q];
    // As `copy_spin` at no wait: the stores go out once the first and last words are back.
    const float ss_v = v[0] + v[Q - 1];
""" + "    " + READY.format(v="ss_v") + r"""
#pragma unroll
    for (int q = 0; q < Q; ++q) b[r + q] = v[q] + 1.0f;
""" + EPILOGUE + "}\n"


def stamp_twin(src):
    """The twin's source with the stamps and an extra last argument `ss_ts`."""
    lines = src.split("\n")
    out, stamped, sig = [], False, None
    for line in lines:
        if line.startswith('extern "C" __global__'):
            sig = len(out)
            assert line.rstrip().endswith(")"), line
            line = line.rstrip()[:-1] + ", unsigned long long* __restrict__ ss_ts)"
        m = re.fullmatch(r"(\s*)fld_dst\[(.+)\] = (.+);", line)
        if m and not stamped:
            ind, idx, val = m.groups()
            out.append(f"{ind}{{ const float ss_v = {val}; {READY.format(v='ss_v')} "
                       f"fld_dst[{idx}] = ss_v; }}")
            stamped = True
            continue
        out.append(line)
    assert sig is not None and stamped, "not a generated D3Q19 AoS twin"
    if re.search(r"fold point \(i, j, k\) = \((?!0, 0, 0)", src):
        sys.exit("store-spread stamps unfolded twins only (one fold point)")
    body = out.index("{", sig)
    out.insert(body + 1, STAMP_PROLOGUE)
    end = max(i for i, l in enumerate(out) if l == "}")
    out.insert(end, EPILOGUE)
    return "\n".join(out)



def spread(rec, wpb):
    """What the stamps say: per SM the warps storing at once, per block the same among its warps
    and the spread of their ready stamps, and the warps' store phases (cycles)."""
    import numpy as np

    sm, ready, end = rec[:, 0], rec[:, 1].astype(np.int64), rec[:, 2].astype(np.int64)
    phase = end - ready

    def at_once(r, e):
        # The warps' open phases summed, over the time any is open (their union).
        order = np.argsort(r)
        r, e = r[order], e[order]
        covered, lo, hi = 0, r[0], e[0]
        for a, b in zip(r[1:], e[1:]):
            if a > hi:
                covered += hi - lo
                lo, hi = a, b
            else:
                hi = max(hi, b)
        covered += hi - lo
        return float((e - r).sum() / max(covered, 1))

    per_sm = [at_once(ready[sm == s], end[sm == s]) for s in np.unique(sm)]
    blocks = len(rec) // wpb
    sample = range(0, blocks, max(1, blocks // 4096))
    per_block = [at_once(ready[b * wpb:(b + 1) * wpb], end[b * wpb:(b + 1) * wpb])
                 for b in sample]
    block_spread = [int(ready[b * wpb:(b + 1) * wpb].max() - ready[b * wpb:(b + 1) * wpb].min())
                    for b in sample]
    q = lambda v, p: float(np.percentile(v, p))  # noqa: E731
    return {"sm_warps_at_once": {"p10": q(per_sm, 10), "p50": q(per_sm, 50), "p90": q(per_sm, 90)},
            "block_warps_at_once_p50": q(per_block, 50),
            "block_ready_spread_p50": q(block_spread, 50),
            "block_ready_spread_p90": q(block_spread, 90),
            "store_phase_p50": q(phase, 50), "store_phase_p90": q(phase, 90)}


def run_one(cp, binary, config):
    kind, rest = config.split(":")
    parts = rest.split("/")
    block = [int(x) for x in parts[0].split(",")]
    fopt = "fopt" in parts[1:]
    wpb = (block[0] * block[1] * block[2] + 31) // 32
    if kind == "copy":
        grid = [EDGE // b for b in block]
        kern = cp.RawKernel(COPY_SOURCE, "copy_stamped")
        cells = EDGE ** 3
        a = cp.empty((cells, COMPONENTS), dtype=cp.float32)
        a[:] = cp.arange(1, COMPONENTS + 1, dtype=cp.float32)
        b = cp.zeros_like(a)
        nb = grid[0] * grid[1] * grid[2]
        rec = cp.zeros(nb * wpb * 3, dtype=cp.uint64)
        args = (a, b, cp.int32(EDGE), rec)
        kern(tuple(grid), tuple(block), args)
        cp.cuda.runtime.deviceSynchronize()
        if not bool(cp.all(b == a + 1.0)):
            sys.exit(f"copy {block}: wrong records written")
        err = 0.0
    elif kind == "twin":
        src, grid, ext, name = emit_cuda(binary, KERNEL, block, [1, 1, 1], "f32", DOMAIN)
        kern = cp.RawKernel(stamp_twin(src), name, options=FLOAT_OPTIONS if fopt else ())
        u, v = lbm_aos_fields(cp, ext, COMPONENTS)
        nb = grid[0] * grid[1] * grid[2]
        rec = cp.zeros(nb * wpb * 3, dtype=cp.uint64)
        args = (u, v, rec)
        kern(tuple(grid), tuple(block), args)
        cp.cuda.runtime.deviceSynchronize()
        err = check_lbm_aos(cp, u, v, src, ext, f"{block}{' fopt' if fopt else ''}")
    else:
        sys.exit(f"unknown configuration {config}")
    # The measured launch, after the checked one.
    rec.fill(0)
    kern(tuple(grid), tuple(block), args)
    cp.cuda.runtime.deviceSynchronize()
    regs = kern.attributes["num_regs"]
    host = cp.asnumpy(rec).reshape(-1, 3)
    return {"config": config, "kind": kind, "block": block, "fopt": fopt, "registers": regs,
            "warps_per_block": wpb, "max_rel_error": err, **spread(host, wpb)}


def measure(binary, out_path, configs):
    import cupy as cp

    results = [run_one(cp, binary, c) for c in configs]
    json.dump({**provenance(cp), "domain": DOMAIN, "results": results}, open(out_path, "w"),
              indent=1)


def summary(path):
    d = json.load(open(path))
    print(f"# How many warps store at once on the {d['device']} (issue 8)\n")
    print(f"Measured {d['date'][:10]}, driver {d['driver']}, commit {d['commit']}, domain "
          f"{d['domain']}. `clock64` cycles; the SM's warps storing at once p10 / p50 / p90 over "
          "the SMs; per block (median over blocks): its warps storing at once and the spread of "
          "their ready stamps (p50 / p90); a warp's store phase (ready to after its last store, "
          "p50 / p90).\n")
    print("| kernel | block (warps) | registers | SM warps at once | block warps at once | "
          "block ready spread | store phase |")
    print("|---|---|---|---|---|---|---|")
    for r in d["results"]:
        kern = ("copy" if r["kind"] == "copy" else
                "D3Q19 AoS twin, float options" if r["fopt"] else "D3Q19 AoS twin")
        s = r["sm_warps_at_once"]
        print(f"| {kern} | {'×'.join(map(str, r['block']))} ({r['warps_per_block']}) | "
              f"{r['registers']} | {s['p10']:.1f} / {s['p50']:.1f} / {s['p90']:.1f} | "
              f"{r['block_warps_at_once_p50']:.1f} | {r['block_ready_spread_p50']:.0f} / "
              f"{r['block_ready_spread_p90']:.0f} | {r['store_phase_p50']:.0f} / "
              f"{r['store_phase_p90']:.0f} |")


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) >= 4 and a[0] == "measure":
        measure(a[1], a[2], a[3:])
    elif len(a) == 2 and a[0] == "summary":
        summary(a[1])
    else:
        sys.exit(__doc__)

#!/usr/bin/env python3
"""How long L1 keeps a thread's stack (spilled registers) between a store and its load (issue 8).

The counter sweeps' spilling D3Q19 SoA kernels (one block of 32 warps per SM, 64 registers) miss
L1 on 0.56-0.97 of their stack loads where the visitor's L1 (`footprint::local`: a word survives
the lines the SM's warps touched since its store, in 4-way sets filled at random) says 0.38-0.80;
the tiles folded along x far more than the others (`../results/h200/counters/README.md`, "The
stack's L1 misses, read off the counters"). This separates the L1's part from the kernels'.

One block of 1024 threads on each SM (132 blocks, each block's `%smid` checked). Each thread, `reps` times
over, stores `S` words to a volatile local array (a warp's store of one word is one 128-byte line
of local memory), then moves `G` fresh global lines per warp (mode `load`: reads them; `store`:
writes them), then loads its `S` words back. Between a word's store and its load the SM's 32
warps touch `32 (S + G)` lines (the words after it, the global lines, the words before it loaded
back, which hit or bring their line in again), all in step as far as the warps keep step.
Nsight Compute reads the local loads' L1 hits and misses; every launch checks its sums.

usage (GPU, CuPy, ncu): bench/stack-l1.py measure OUT.json
                        bench/stack-l1.py summary OUT.json
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import number, profile_plan, provenance  # noqa: E402

SOURCE = r"""
extern "C" __global__ void __launch_bounds__(1024, 1)
stackprobe(const float* __restrict__ a, int S, int G, int mode, int reps,
           float* __restrict__ w, float* __restrict__ out, int* __restrict__ sm)
{
    if (threadIdx.x == 0) {
        int id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
        sm[blockIdx.x] = id;
    }
    volatile float st[128];
    const int lane = threadIdx.x & 31;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    float acc = 0.0f;
    for (int r = 0; r < reps; ++r) {
        for (int k = 0; k < S; ++k) st[k] = (float)(r + k);
        for (int j = 0; j < G; ++j) {
            const long long at = ((warp * reps + r) * G + j) * 32 + lane;
            if (mode == 1) {
                w[at] = (float)(r + j);
            } else {
                acc += a[at];
            }
        }
        for (int k = 0; k < S; ++k) acc += st[k];
    }
    out[(long long)blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"""
METRICS = [
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st_lookup_miss.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "launch__shared_mem_config_size",
    "launch__registers_per_thread",
]
UNIFIED_BYTES = 256 * 1024
LINE = 128
SMS = 132
THREADS = 1024
MODES = {"load": 0, "store": 1}


def plan():
    """(S, G, mode) points: the stack alone from a few words to past L1, and with global lines
    read or written between a word's store and its load."""
    pts = [(s, 0, "load") for s in (4, 8, 16, 24, 32, 40, 48, 56, 64, 96)]
    for mode in ("load", "store"):
        for s in (8, 16, 32):
            for g in (8, 16, 32, 48):
                pts.append((s, g, mode))
    return pts


def launch(plan_path):
    import cupy as cp

    p = json.load(open(plan_path))
    reps = p["reps"]
    kern = cp.RawKernel(SOURCE, "stackprobe")
    warps = SMS * THREADS // 32
    top = max(warps * reps * g * 32 for _, g, _ in p["points"]) + 32
    a = cp.ones(top, dtype=cp.float32)
    w = cp.zeros(top, dtype=cp.float32)
    out = cp.zeros(SMS * THREADS, dtype=cp.float32)
    sm = cp.zeros(SMS, dtype=cp.int32)
    for s, g, mode in p["points"]:
        kern((SMS,), (THREADS,), (a, cp.int32(s), cp.int32(g), cp.int32(MODES[mode]),
                                  cp.int32(reps), w, out, sm))
        cp.cuda.runtime.deviceSynchronize()
        # One block per SM: the L1 holds one block's 32 warps.
        if len(set(sm.get().tolist())) != SMS:
            sys.exit(f"S {s} G {g} {mode}: blocks shared an SM")
        want = sum(r + k for r in range(reps) for k in range(s)) + (g * reps if mode == "load" else 0)
        if not bool(cp.all(out == float(want))):
            sys.exit(f"S {s} G {g} {mode}: sums {float(out.min())}..{float(out.max())}, expected {want}")
        if mode == "store" and g:
            got = w[:warps * reps * g * 32].reshape(warps, reps, g, 32)
            expect = cp.arange(reps)[:, None] + cp.arange(g)[None, :]
            if not bool(cp.all(got == expect[None, :, :, None].astype(cp.float32))):
                sys.exit(f"S {s} G {g} store: wrong lines written")


def survival(fill, ways=4):
    """The visitor's chance that a line survives a window of `fill` L1s (`conflict_survival`:
    fewer than `ways` of the window's lines in its set, Poisson)."""
    lam = ways * fill
    return sum(math.exp(-lam) * lam ** k / math.factorial(k) for k in range(ways))


def measure(out_path, reps=16):
    import cupy as cp

    points = plan()
    rows, _ = profile_plan(__file__, points, ["stackprobe"], METRICS, settings={"reps": reps})
    results = []
    for (s, g, mode), row in zip(points, rows):
        c = {k: number(row[k]) for k in METRICS}
        results.append({"S": s, "G": g, "mode": mode, "counters": c,
                        "l1_bytes": UNIFIED_BYTES - c["launch__shared_mem_config_size"]})
    json.dump({**provenance(cp), "reps": reps, "sms": SMS, "threads": THREADS,
               "results": results}, open(out_path, "w"), indent=1)


def summary(path):
    d = json.load(open(path))
    print(f"# Stack words in L1 between their store and load, {d['device']} (issue 8)\n")
    print(f"Measured {d['date'][:10]}, driver {d['driver']}, commit {d.get('commit', '?')}; "
          f"{d['sms']} blocks of {d['threads']} threads, {d['reps']} rounds. Fill: the lines the "
          "SM's 32 warps touch between a word's store and its load, over the granted L1's lines; "
          "the visitor's hit at that fill (4-way sets at random) next to the measured share of "
          "local-load sectors that hit.\n")
    print("| S words | G global lines | mode | registers | granted L1 KiB | fill | local loads hit | "
          "visitor | local stores hit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in d["results"]:
        c = r["counters"]
        ld = c[METRICS[0]] + c[METRICS[1]]
        st = c[METRICS[2]] + c[METRICS[3]]
        lines = r["l1_bytes"] / LINE
        fill = 32 * (r["S"] + r["G"]) / lines
        print(f"| {r['S']} | {r['G']} | {r['mode']} | {c['launch__registers_per_thread']:.0f} | "
              f"{r['l1_bytes'] / 1024:.0f} | {fill:.2f} | {c[METRICS[0]] / ld:.3f} | "
              f"{survival(fill):.3f} | {c[METRICS[2]] / st:.3f} |")


def main():
    a = sys.argv[1:]
    if len(a) == 2 and a[0] == "launch":
        launch(a[1])
    elif len(a) == 2 and a[0] == "measure":
        measure(a[1])
    elif len(a) == 2 and a[0] == "summary":
        summary(a[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

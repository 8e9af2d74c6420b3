#!/usr/bin/env python3
"""How finely the warps of an SM interleave their loads, seen from L1 (issue 8).

The simulator brackets the hardware between two issue orders: lockstep (every warp issues one
instruction before any issues the next) and warp-burst (a warp issues a fold point's loads back to
back). For a reuse by the same warp `g` instructions later, of `k` lines per instruction, the
lines L1 sees in between are `g·k` under warp-burst and `g·k·W` under lockstep with `W` warps on
the SM; the reuse hits while that stays below the L1's capacity `C`. This measures it: every warp
of a full wave reads its own `g·k` lines cyclically, instruction `i` touching the `k` lines of group
`i mod g` (lane `j` line `j mod k`, word `j div k`), with the loads pipelined as in the generated
kernels (a chain of dependent additions, the loop unrolled so that the compiler issues loads ahead,
`__launch_bounds__(256, blocks per SM)` so that registers are as short as in the counter sweeps).
Nsight Compute gives L1's hit and miss sectors; the steady hit rate leaves out the first touches.

The effective number of warps interleaved is `C / (g½·k)`, `g½` the gap at which half the reuses
hit: 1 is warp-burst, `W` lockstep.

`--threads T` sets the block's threads (default 256, as the presets' table was measured), so
that the same warps per SM come from one block or several. `--mode cross` makes the reuses
another warp's: warp `w` of a block reads, in its `c`-th cycle of `g` instructions, the lines
of the block's warp `(w + c) mod W_b`, so a line is read again `g` instructions later by the
warp before it, as the D3Q19 AoS pull reads a neighbour row's records (`own`, the default: its
own lines, as before). In lockstep both modes see the same `g·k·W` lines between two reads.

usage (GPU, CuPy, ncu): bench/l1-interleave.py measure OUT.json [--l1-kib 224] [--bps 2,8] [--lines 1,8,32]
                                                 [--carveout -1] [--threads 256] [--mode own|cross]
                        bench/l1-interleave.py summary OUT.json
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import number, profile_plan, provenance  # noqa: E402

SOURCE = r"""
extern "C" __global__ void __launch_bounds__(THREADS, BPS) l1interleave(
    const float* __restrict__ a, int n, int g, int k, float* __restrict__ out)
{
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    const long long base = warp * g * k + lane % k;
    const int word = lane / k;
    float s = 0.0f;
#pragma unroll 16
    for (int i = 0; i < n; ++i) {
        s = s * 0.5f + a[(base + (long long)(i % g) * k) * 32 + word];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""
# Mode `cross`: its own kernel, so that `own` compiles as the presets' table was measured.
SOURCE_CROSS = r"""
extern "C" __global__ void __launch_bounds__(THREADS, BPS) l1interleave(
    const float* __restrict__ a, int n, int g, int k, float* __restrict__ out)
{
    const int wb = THREADS / 32;
    const int wib = threadIdx.x >> 5;
    const long long first = (long long)blockIdx.x * wb;
    const int lane = threadIdx.x & 31;
    const int word = lane / k;
    float s = 0.0f;
#pragma unroll 16
    for (int i = 0; i < n; ++i) {
        // The c-th cycle of g instructions reads warp (wib + c) mod wb's lines.
        const long long owner = first + (wib + i / g) % wb;
        s = s * 0.5f + a[(owner * g * k + lane % k + (long long)(i % g) * k) * 32 + word];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""
METRICS = [
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "launch__shared_mem_config_size",
    "launch__registers_per_thread",
]
GAPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96)
LINE = 128


def plan(bps_list=(2, 8), lines=(1, 8, 32), threads=256, mode="own"):
    """(blocks per SM, lines per instruction, gap, threads per block, mode) points."""
    return [(bps, k, g, threads, mode) for bps in bps_list for k in lines for g in GAPS]


def launch(plan_path):
    import cupy as cp

    p = json.load(open(plan_path))
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    kern = {(bps, t, mode): cp.RawKernel(
                (SOURCE_CROSS if mode == "cross" else SOURCE)
                .replace("BPS", str(bps)).replace("THREADS", str(t)), "l1interleave")
            for bps, t, mode in {(q[0], q[3], q[4]) for q in p["points"]}}
    for k in kern.values():
        # The shared-memory carve-out preference (-1: the driver's choice) sets the granted L1.
        fn = k.kernel if hasattr(k, "kernel") else k.function
        cp.cuda.driver.funcSetAttribute(
            fn.ptr, cp.cuda.driver.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, p["carveout"])
    top = max(sms * bps * t // 32 * g * k for bps, k, g, t, _ in p["points"])
    a = cp.ones(top * 32 + 32, dtype=cp.float32)
    for bps, k, g, t, mode in p["points"]:
        n = max(8 * g, 256)
        out = cp.zeros(sms * bps * t, dtype=cp.float32)
        kern[(bps, t, mode)]((sms * bps,), (t,), (a, cp.int32(n), cp.int32(g), cp.int32(k), out))
        cp.cuda.runtime.deviceSynchronize()
        # s = s/2 + 1 converges to 2: a wrong address would still read 1s, so check the count.
        if abs(float(out[0]) - 2.0) > 1e-3:
            sys.exit(f"bps {bps} k {k} g {g}: result {float(out[0])}, expected 2")


def measure(out_path, l1_kib, bps_list, lines, carveout=-1, threads=256, mode="own"):
    import cupy as cp

    points = plan(bps_list, lines, threads, mode)
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    rows, _ = profile_plan(__file__, points, ["l1interleave"], METRICS,
                           settings={"carveout": carveout})
    results = []
    for (bps, k, g, t, _), row in zip(points, rows):
        n = max(8 * g, 256)
        warps = sms * bps * t // 32
        per_line = max(1, 4 // k)  # sectors each instruction reads per line
        total = warps * n * k * per_line
        first = warps * g * k * per_line
        hit = number(row[METRICS[0]])
        results.append({"blocks_per_sm": bps, "warps_per_sm": bps * t // 32, "threads": t,
                        "mode": mode, "lines_per_instruction": k,
                        "gap": g, "instructions": n, "hit_sectors": hit,
                        "miss_sectors": number(row[METRICS[1]]),
                        "l2_read_sectors": number(row[METRICS[2]]),
                        "total_sectors": total, "first_touch_sectors": first,
                        "steady_hit_rate": hit / (total - first),
                        "registers": number(row[METRICS[4]]),
                        "l1_bytes": 256 * 1024 - number(row[METRICS[3]])})
    json.dump({**provenance(cp), "sms": sms, "l1_kib_guess": l1_kib, "carveout": carveout,
               "results": results}, open(out_path, "w"), indent=1)


def summary(path):
    d = json.load(open(path))
    res = d["results"]
    print(f"# Warp interleaving seen from L1 on the {d['device']} (issue 8)\n")
    granted = sorted({r["l1_bytes"] // 1024 for r in res})
    print(f"Measured {d['date'][:10]}, driver {d['driver']}, carve-out preference "
          f"{d.get('carveout', -1)} (granted L1 {', '.join(f'{g:.0f}' for g in granted)} KiB); "
          "a full wave of blocks of the threads given, "
          "each warp re-reading its own lines (mode `own`) or the lines the warp after it read "
          "(`cross`) every `g` instructions of `k` lines. Steady hit "
          "rate per gap `g`; the last columns: the gap `g½` at which half the reuses hit, and "
          "the effective warps interleaved `C / (g½·k)` with `C` the granted L1 in lines (1 is "
          "warp-burst, the SM's warps lockstep; — where no gap measured loses half).\n")
    # Runs before `--threads` and `--mode` were 256-thread blocks reading their own lines.
    key = lambda r: (r["warps_per_sm"], r.get("threads", 256), r.get("mode", "own"),  # noqa: E731
                     r["lines_per_instruction"])
    print("| warps/SM | threads | mode | lines/instr | registers | "
          + " | ".join(f"g={g}" for g in GAPS) + " | g½ | effective warps |")
    print("|---|---|---|---|---|" + "---|" * len(GAPS) + "---|---|")
    for w, t, mode, k in sorted({key(r) for r in res}):
        rs = sorted((r for r in res if key(r) == (w, t, mode, k)), key=lambda r: r["gap"])
        lines = rs[0]["l1_bytes"] / LINE
        half = None
        for a, b in zip(rs, rs[1:]):
            ha, hb = a["steady_hit_rate"], b["steady_hit_rate"]
            if ha >= 0.5 > hb:
                half = a["gap"] + (ha - 0.5) / (ha - hb) * (b["gap"] - a["gap"])
                break
        if half is None and rs[0]["steady_hit_rate"] < 0.5:
            half = 0.0
        eff = "—" if half is None else ("> W" if half == 0 else f"{lines / (half * k):.1f}")
        print(f"| {w} | {t} | {mode} | {k} | {rs[0]['registers']:.0f} | "
              + " | ".join(f"{r['steady_hit_rate']:.2f}" for r in rs)
              + f" | {'—' if half is None else f'{half:.1f}'} | {eff} |")


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "launch":
        launch(args[1])
    elif len(args) >= 2 and args[0] == "measure":
        def opt(name, default):
            return args[args.index(name) + 1] if name in args else default
        ints = lambda v: tuple(int(x) for x in v.split(","))  # noqa: E731
        mode = opt("--mode", "own")
        if mode not in ("own", "cross"):
            sys.exit(f"--mode must be own or cross, not {mode}")
        measure(args[1], int(opt("--l1-kib", "224")), ints(opt("--bps", "2,8")),
                ints(opt("--lines", "1,8,32")), int(opt("--carveout", "-1")),
                int(opt("--threads", "256")), mode)
    elif len(args) == 2 and args[0] == "summary":
        summary(args[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How the L1 of one SM replaces lines: hit rate of a cyclic sweep over N lines (issue 8).

One warp on one SM reads N distinct 128-byte lines (each lane one 4-byte word, so every load is one
whole line) in a fixed order, `reps` times over. Under LRU (and FIFO) the sweep hits every time
while N lines fit in L1 and never once they do not: the hit rate falls from 1 to 0 at N = capacity.
Under random replacement it falls gradually, from well below the capacity on, and stays above 0
past it. The footprint visitor and the simulator assume LRU; the measured curve says which it is.

Variants: reused accesses `stride` bytes apart: whole lines (set conflicts show as a hit rate
below the LRU one at the same lines), and the row and layer pitches of the counter sweeps' f64
256-cubed domain with 4 ghost layers (2112 bytes, 16.5 lines, so that each access covers half of
two lines); and the sweep in a scrambled order (`i * P mod N`, P coprime to N), which changes
nothing under LRU, FIFO or random replacement.

Nsight Compute reads the L1's hit and miss sectors of each launch and the shared-memory carve-out
it granted (L1 = 256 KiB minus that).

Sector sweeps (`--sectors 1,2,4`): the same cyclic sweep over consecutive lines, reading only the
first 1, 2 or 4 sectors of each line (8 lanes per sector). If L1 allocates its data store by line,
a sweep stops fitting at the same number of lines whatever the sectors read; if by sector, sweeps
that read fewer sectors keep hitting up to the tags' limit (512 sets of 4 ways, `l1-sets.py`).

Store sweeps (`--writes`): as the sweeps with lines read once between the reused ones, but those
lines are written (one whole line per store, to a buffer of their own) and not read, next to the
same sweeps with the lines read: whether L1 gives a line of its data store to a store.

usage (GPU, CuPy, ncu): bench/l1-policy.py measure OUT.json [--carveout -1] [--reps 8] [--l1-kib 224]
                                           [--sectors 1,2,4 | --writes]
                         bench/l1-policy.py summary OUT.json
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import number, profile_plan, provenance  # noqa: E402

SOURCE = r"""
extern "C" __global__ void l1probe(const float* __restrict__ a, int n, long long stride, int scramble,
                                   int stream, int reps, float* __restrict__ out, int writes,
                                   float* __restrict__ w)
{
    float s = 0.0f;
    // Lines read once (or, with `writes`, written once to `w`), after each reused one: past the
    // reused lines' region.
    const long long fresh = writes ? 0 : (long long)n * stride + 64;
    for (int r = 0; r < reps; ++r) {
        for (int i = 0; i < n; ++i) {
            const long long line = scramble ? ((long long)i * scramble) % n : i;
            s += a[line * stride + threadIdx.x];
            for (int k = 0; k < stream; ++k) {
                const long long at = fresh + (((long long)r * n + i) * stream + k) * 32 + threadIdx.x;
                if (writes) {
                    w[at] = s;
                } else {
                    s += a[at];
                }
            }
        }
    }
    out[threadIdx.x] = s;
}
"""
METRICS = [
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",
    "launch__shared_mem_config_size",
]
UNIFIED_BYTES = 256 * 1024
LINE = 128


def plan(l1_lines, sectors=None, writes=False):
    """(n, stride, scramble, stream, sectors per access, writes) points: N around the capacity at
    stride 1, scrambled, with lines read once between the reused ones, then strides; or, with
    `sectors`, consecutive lines read `sectors` at a time from half the capacity to four times it;
    or, with `writes`, lines written once between the reused ones, next to the same lines read."""
    if sectors:
        return [(max(1, round(f * l1_lines)), LINE, 0, 0, k, 0) for k in sectors
                for f in (0.5, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0)]
    if writes:
        return [(round(f * l1_lines), LINE, 0, k, 4, w) for k in (1, 3) for w in (0, 1)
                for f in (0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 0.9)]
    pts = []
    for f in (0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0):
        pts.append((max(1, round(f * l1_lines)), LINE, 0, 0))
    for f in (0.5, 0.9, 1.1):
        n = round(f * l1_lines)
        p = next(q for q in range(int(0.618 * n), n) if math.gcd(q, n) == 1)
        pts.append((n, LINE, p, 0))
    for k in (1, 3):
        for f in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4):
            pts.append((round(f * l1_lines), LINE, 0, k))
    for stride in (2, 4, 8, 16, 17, 32, 64, 128, 256, 512):
        for f in (0.25, 0.5, 0.9):
            pts.append((round(f * l1_lines), stride * LINE, 0, 0))
    # Row pitches (f64, 256 + 8 points; 1, 2 and 4 rows) and a layer pitch: two lines per access.
    for stride in (2112, 4224, 8448, 2112 * 264):
        for f in (0.125, 0.25, 0.4, 0.45, 0.5, 0.55):
            pts.append((round(f * l1_lines), stride, 0, 0))
    return [p + (4, 0) for p in pts]


def launch(plan_path):
    import cupy as cp

    p = json.load(open(plan_path))
    kern = cp.RawKernel(SOURCE, "l1probe")
    fn = kern.kernel if hasattr(kern, "kernel") else kern.function
    cp.cuda.driver.funcSetAttribute(
        fn.ptr, cp.cuda.driver.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, p["carveout"])
    top = max(n * (s // 4 + 32 * k * p["reps"]) for n, s, _, k, _, _ in p["points"])
    a = cp.ones(top * 32 + 32, dtype=cp.float32)
    out = cp.zeros(32, dtype=cp.float32)
    wtop = max([n * 32 * k * p["reps"] for n, _, _, k, _, w in p["points"] if w] or [0])
    w_buf = cp.zeros(wtop + 32, dtype=cp.float32)
    for n, stride, scramble, stream, sectors, writes in p["points"]:
        if writes:
            w_buf.fill(0.0)
        kern((1,), (8 * sectors,), (a, cp.int32(n), cp.int64(stride // 4), cp.int32(scramble), cp.int32(stream),
                           cp.int32(p["reps"]), out, cp.int32(writes), w_buf))
        cp.cuda.runtime.deviceSynchronize()
        want = n * p["reps"] * (1 if writes else 1 + stream)
        if float(out[0]) != float(want):
            sys.exit(f"n {n} stride {stride}: sum {float(out[0])}, expected {want}")
        if writes:
            # Each line written holds the sum read so far: 1, 2, ... in sweep order.
            got = w_buf[:n * 32 * stream * p["reps"]].reshape(-1, 32)
            expect = cp.repeat(cp.arange(1, n * p["reps"] + 1, dtype=cp.float32), stream)
            if not bool(cp.all(got == expect[:, None])):
                sys.exit(f"n {n} stride {stride}: wrong lines written")


def measure(out_path, carveout, reps, l1_guess, sectors=None, writes=False):
    import cupy as cp

    points = plan(l1_guess // LINE, sectors, writes)
    rows, _ = profile_plan(__file__, points, ["l1probe"], METRICS,
                           settings={"carveout": carveout, "reps": reps})
    results = []
    for (n, stride, scramble, stream, sectors, writes), row in zip(points, rows):
        hit = number(row[METRICS[0]])
        miss = number(row[METRICS[1]])
        smem = number(row["launch__shared_mem_config_size"])
        # The first sweep misses every reused line and every line read once misses; the steady
        # state is the reused lines' later sweeps (`sectors` per access).
        later = sectors * n * (reps - 1)
        hit_rate = hit / later if later else None
        results.append({"lines": n, "stride_bytes": stride, "scramble": scramble, "stream": stream,
                        "sectors": sectors, "writes": writes,
                        "l1_bytes": UNIFIED_BYTES - smem, "hit_sectors": hit, "miss_sectors": miss,
                        "steady_hit_rate": hit_rate})
    json.dump({**provenance(cp), "carveout": carveout, "reps": reps, "line_bytes": LINE, "results": results},
              open(out_path, "w"), indent=1)


def lru_rate(n, stream, lines):
    """Steady hit rate of the reused lines under LRU: all while a sweep's lines fit."""
    return 1.0 if n * (1 + stream) <= lines else 0.0


def lines_per_access(stride_bytes):
    return 1 if stride_bytes % LINE == 0 else 2


def random_rate(n, stream, lines):
    """The same under random replacement, a fixed point: between two uses a line sees the sweep's
    misses (the lines read once, and the reused lines that missed), each evicting it with
    probability 1/lines; below the capacity with nothing read once, nothing misses."""
    if n * (1 + stream) <= lines and stream == 0:
        return 1.0
    h = 0.0
    for _ in range(500):
        h = (1 - 1 / lines) ** (n * stream + n * (1 - h))
    return h


def summary(path):
    d = json.load(open(path))
    print(f"# L1 replacement probe on the {d['device']} (issue 8)\n")
    print(f"Measured {d['date'][:10]}, driver {d['driver']}, carve-out preference {d['carveout']}, "
          f"{d['reps']} sweeps; one warp, one SM. Hit rate of the sweeps after the first, against "
          "LRU (and FIFO) and random replacement of the granted L1.\n")
    print("| reused accesses | KiB of lines | read (or written) once per reused | stride B | order | sectors per access | granted L1 KiB | hit rate | LRU | random |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in d["results"]:
        lines = r["l1_bytes"] // d["line_bytes"]
        k, per = r["stream"], lines_per_access(r["stride_bytes"])
        n = r["lines"] * per
        once = f"{k} written" if r.get("writes") else f"{k}"
        print(f"| {r['lines']} | {n * d['line_bytes'] / 1024:.0f} | {once} | {r['stride_bytes']} | "
              f"{'scrambled' if r['scramble'] else 'cyclic'} | {r.get('sectors', 4)} | "
              f"{r['l1_bytes'] / 1024:.0f} | "
              f"{r['steady_hit_rate']:.3f} | {lru_rate(n, k, lines):.2f} | "
              f"{random_rate(n, k, lines):.3f} |")


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "launch":
        launch(args[1])
    elif len(args) >= 2 and args[0] == "measure":
        carveout, reps, kib = -1, 8, 224
        if "--l1-kib" in args:
            kib = int(args[args.index("--l1-kib") + 1])
        if "--carveout" in args:
            carveout = int(args[args.index("--carveout") + 1])
        if "--reps" in args:
            reps = int(args[args.index("--reps") + 1])
        sectors = None
        if "--sectors" in args:
            sectors = [int(k) for k in args[args.index("--sectors") + 1].split(",")]
            if any(k not in (1, 2, 3, 4) for k in sectors):
                sys.exit("--sectors takes sectors per access, 1 to 4, e.g. 1,2,4")
        measure(args[1], carveout, reps, kib * 1024, sectors, "--writes" in args)
    elif len(args) == 2 and args[0] == "summary":
        summary(args[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How far the warps of an SM drift apart, in fold points, while a generated stencil kernel runs.

The footprint visitor and the simulator assume the warps of a wave advance together (lockstep, or
each warp's fold point issued as a burst): a sector reused by another warp at the same fold point
is reused within a few instructions. This measures that assumption on the GPU. It emits the CUDA
twin of each configuration of a counter sweep, adds a timestamp (`clock64`, lane 0 of each warp,
with a memory clobber so that no load moves across it) at the start of every fold point and at the
end, and the SM the warp ran on; it checks the output against a reference computed with CuPy
(from the formula and coefficients printed in the source), then reports per configuration:

- `lag` between the warps of one block: when a warp starts fold point f, how many fold points
  behind (or ahead of) it each other running warp of its block is (|f - f'|, f' the fold point that
  warp is in); the share of such pairs at 0, 1, 2 and more fold points;
- `lag_sm` the same against the warps of the other blocks resident on the SM;
- the median duration of a fold point, in cycles.

usage (on a machine with an NVIDIA GPU, CuPy and the stencilscope binary):
  bench/warp-skew.py BIN REPORT.json KERNEL.toml OUT.json [--dtype f64] [--domain 256,256,256]
then, anywhere:
  bench/warp-skew.py --summary OUT.json [RECHECKED_REPORT.json]
The first form takes about 8 minutes for 52 configurations on an H100 (mostly the lag statistics,
in NumPy). The second form prints a Markdown table; with a counter report re-analysed by the current visitor
(`bench/recheck-counters.sh`) it adds the estimated and measured L2 load.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import check_twin, emit_cuda, provenance, stamp_fold_points, twin_fields  # noqa: E402


def lags(rec, nf, wpb):
    """Lag histograms (within the block, against other blocks of the SM) and fold durations."""
    import numpy as np

    nb = rec.shape[0] // wpb
    sm = rec[:, 0].astype(np.int64)
    t = rec[:, 1:].astype(np.int64)  # nf + 1 stamps: starts of the fold points, then the end
    dur = np.median(np.diff(t, axis=1)) if nf > 1 else float(np.median(t[:, -1] - t[:, 0]))
    within = np.zeros(4)
    across = np.zeros(4)
    # Per SM, warps ordered by start; for each warp and fold point, the fold point the others
    # are in (searchsorted on their stamps).
    blk = np.repeat(np.arange(nb), wpb)
    rng = np.random.default_rng(0)
    for s in np.unique(sm):
        ws = np.nonzero(sm == s)[0]
        # Sample warps to keep this quick on long grids.
        pick = ws if len(ws) <= 256 else rng.choice(ws, 256, replace=False)
        ts = t[ws]
        for w in pick:
            for f in range(nf):
                now = t[w, f]
                running = (ts[:, 0] <= now) & (ts[:, -1] > now)
                others = ws[running]
                if len(others) < 2:
                    continue
                fo = (ts[running] <= now).sum(axis=1) - 1  # fold point each running warp is in
                lag = np.minimum(np.abs(fo - f), 3)
                same = blk[others] == blk[w]
                me = others == w
                within += np.bincount(lag[same & ~me], minlength=4)[:4]
                across += np.bincount(lag[~same], minlength=4)[:4]
    return within, across, float(dur)


def measure(binary, report, kernel, out_path, dtype, domain):
    import cupy as cp

    records = json.load(open(report))["records"]
    results = []
    for r in records:
        block, fold = r["config"]["block"], r["config"]["fold"]
        src, grid, ext, name = emit_cuda(binary, kernel, block, fold, dtype, domain)
        isrc, points = stamp_fold_points(src, "clock64")
        nf = len(points)
        kern = cp.RawKernel(isrc, name)
        u, v = twin_fields(cp, ext, dtype)
        threads = block[0] * block[1] * block[2]
        wpb = (threads + 31) // 32
        nblocks = grid[0] * grid[1] * grid[2]
        ts = cp.zeros(nblocks * wpb * (nf + 2), dtype=cp.uint64)
        args = (u, v, ts)
        kern(tuple(grid), tuple(block), args)  # warm-up (and the checked result)
        err = check_twin(cp, u, v, src, dtype, f"{block} fold {fold}")
        ts.fill(0)
        kern(tuple(grid), tuple(block), args)
        cp.cuda.runtime.deviceSynchronize()
        rec = cp.asnumpy(ts).reshape(nblocks * wpb, nf + 2)
        within, across, dur = lags(rec, nf, wpb)
        results.append({"block": block, "fold": fold, "fold_points": nf, "warps_per_block": wpb,
                        "lag_within_block": within.tolist(), "lag_sm": across.tolist(),
                        "fold_cycles_median": dur, "max_rel_error": err})
        print(f"{block} fold {fold}: fold points {nf}, lag within block 0/1/2/3+ "
              f"{(within / max(within.sum(), 1)).round(3).tolist()}, on the SM "
              f"{(across / max(across.sum(), 1)).round(3).tolist()}, {dur:.0f} cycles per fold point",
              flush=True)
    json.dump({**provenance(cp), "cuda_driver_api": cp.cuda.runtime.driverGetVersion(),
               "report": report, "kernel": kernel, "dtype": dtype, "domain": domain,
               "results": results}, open(out_path, "w"), indent=1)


def summary(path, recheck=None):
    d = json.load(open(path))
    est = {}
    if recheck:
        for r in json.load(open(recheck))["records"]:
            key = (tuple(r["config"]["block"]), tuple(r["config"]["fold"]))
            est[key] = (r["estimate"]["l2_load"], r["measured"]["l2_load"])
    print(f"{d['device']}, {d['kernel'].split('/')[-1]} {d['dtype']} {d['domain']}\n")
    head = "| block | fold | fold points | warps/block | lag 0 / 1 / 2+ (block) | lag 0 / 1 / 2+ (SM) | cycles per fold point |"
    if est:
        head += " L2 load est. | measured | error |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in d["results"]:
        def share(h):
            s = sum(h) or 1
            return f"{h[0] / s:.2f} / {h[1] / s:.2f} / {(h[2] + h[3]) / s:.2f}"
        line = (f"| {'×'.join(map(str, r['block']))} | {'×'.join(map(str, r['fold']))} | "
                f"{r['fold_points']} | {r['warps_per_block']} | {share(r['lag_within_block'])} | "
                f"{share(r['lag_sm'])} | {r['fold_cycles_median']:.0f} |")
        key = (tuple(r["block"]), tuple(r["fold"]))
        if key in est:
            e, m = est[key]
            line += f" {e:.1f} | {m:.1f} | {100 * (e / m - 1):+.0f} % |"
        print(line)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a and a[0] == "--summary":
        summary(a[1], a[2] if len(a) > 2 else None)
    elif len(a) >= 4:
        opts = dict(zip(a[4::2], a[5::2]))
        measure(a[0], a[1], a[2], a[3], opts.get("--dtype", "f64"),
                opts.get("--domain", "256,256,256"))
    else:
        sys.exit(__doc__)

#!/usr/bin/env python3
"""How much of the GPU's work passes between a thread's consecutive fold points (issue 8).

The footprint visitor times a block's accesses in steps of its run: the blocks resident at once
(a wave) are at every step of their runs, so a reuse from fold point k of a thread to fold point
k + 1 sees the wave's traffic of one fold point, a 1/F share of a block's run for F fold points.
Where the compiled code or the memory system makes some fold points shorter than others, a
reuse across them sees less (or more) of the GPU's traffic than that, and L2 keeps it (or loses
it) at a distance the visitor misjudges: the z-folded D3Q19 AoS tiles two cells deep at full
occupancy read 40-60 % less from DRAM than estimated, and their FP0 -> FP1 reuses are where the
estimate loses most.

It emits the CUDA twin of each configuration, records per warp (lane 0) `%globaltimer` at the
start of every fold point and at the end (`benchlib.stamp_fold_points`; each stamp is a memory
clobber, so the compiler keeps every fold point's loads after its stamp), checks the output
against the reference and reports, per fold point k (k + 1 = F: the end):

- `share`: the warp's time from the start of fold point k to that of k + 1, over its run (the
  lockstep waves' 1/F), median and mean over the warps;
- `gpu`: the fold points all warps start in that time, over the warps resident at once (the
  lockstep waves' 1: every resident warp starts one), mean over a sample of warps;
- `wait`: the warp's time from the start of fold point k to its first store to the output (the
  stored value needs the fold point's loads, so their data are back; their lines are in L2), over
  its run, median;
- `gpu_after_ready`: the fold points all warps start from that first store to the start of fold
  point k + 1, over the warps resident at once: the GPU's work between the fill of a line fold
  point k loaded and its reuse by fold point k + 1 (each stamp is a memory clobber, so fold
  point k + 1's loads come after fold point k's stores);
- `resident`: the warps running at once (median over the warps' starts), and the run's length.

usage (on a machine with an NVIDIA GPU, CuPy and the stencilscope binary):
  bench/fold-gaps.py measure BIN OUT.json KERNEL.toml DTYPE DOMAIN CONFIG...
    CONFIG = bx,by,bz/fx,fy,fz (LBM kernels are compiled with the float options the counter
    sweeps' twins ran with, `benchlib.FLOAT_OPTIONS`)
  bench/fold-gaps.py summary OUT.json [REPORT.json ...]
    REPORT: counter reports of the same kernel and domain (`stencilscope counters`, or those
    `bench/recheck-counters.sh` writes): each configuration's DRAM load estimated and measured.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import report_levels, stamped_cli, stamped_heading, stamped_measure  # noqa: E402

# Warps whose gaps are counted against every warp's fold point starts (all warps' shares are
# taken; the GPU-wide count samples these many).
SAMPLE = 20000


def gaps(rec, wpb, nf):
    """What one launch's stamps say (rows: SM, the fold points' starts, the end, the fold
    points' first stores)."""
    import numpy as np

    t = rec[:, 1:nf + 2].astype(np.int64)
    ready = rec[:, nf + 2:2 * nf + 2].astype(np.int64)
    life = t[:, -1] - t[:, 0]
    ok = life > 0
    t, ready, life = t[ok], ready[ok], life[ok]
    share = np.diff(t, axis=1) / life[:, None]
    wait = (ready - t[:, :nf]) / life[:, None]
    starts = np.sort(t[:, :nf].ravel())
    begin, end = np.sort(t[:, 0]), np.sort(t[:, -1])
    rng = np.random.default_rng(0)
    pick = rng.choice(len(t), min(SAMPLE, len(t)), replace=False)
    ts, rs = t[pick], ready[pick]
    # Warps running at a sampled warp's start: begun, not yet ended.
    running = np.searchsorted(begin, ts[:, 0], side="right") - np.searchsorted(
        end, ts[:, 0], side="right")
    per = np.maximum(running, 1)

    def between(a, b):
        return float(np.mean((np.searchsorted(starts, b) - np.searchsorted(starts, a)) / per))

    return {
        "fold_points": nf,
        "warps_per_block": wpb,
        "resident_warps": float(np.median(running)),
        "run_us": float((t[:, -1].max() - t[:, 0].min()) / 1e3),
        "warp_run_us": float(np.median(life) / 1e3),
        "share_median": [float(x) for x in np.median(share, axis=0)],
        "share_mean": [float(x) for x in share.mean(axis=0)],
        "wait_median": [float(x) for x in np.median(wait, axis=0)],
        "gpu": [between(ts[:, k], ts[:, k + 1]) for k in range(nf)],
        "gpu_after_ready": [between(rs[:, k], ts[:, k + 1]) for k in range(nf)],
    }


def measure(binary, out_path, kernel, dtype, domain, configs):
    def analyse(config, run):
        res = {"config": config, "block": run["block"], "fold": run["fold"],
               "registers": run["kernel"].attributes["num_regs"],
               "max_rel_error": run["max_rel_error"],
               **gaps(run["records"], run["wpb"], len(run["points"]))}
        return res, (f"resident {res['resident_warps']:.0f} warps, share "
                     f"{[round(x, 3) for x in res['share_median']]}, gpu "
                     f"{[round(x, 3) for x in res['gpu']]}, wait "
                     f"{[round(x, 3) for x in res['wait_median']]}, gpu after ready "
                     f"{[round(x, 3) for x in res['gpu_after_ready']]}")

    stamped_measure(binary, out_path, kernel, dtype, domain, configs, analyse, ready=True)


def shown(xs):
    """The first 8 of a per-fold-point list, to two places."""
    return " ".join(f"{x:.2f}" for x in xs[:8]) + (" …" if len(xs) > 8 else "")


def summary(path, *reports):
    d = json.load(open(path))
    dram = report_levels(reports, "dram_load")
    print(stamped_heading(d))
    print("| block | fold | registers | resident warps | warp run µs | share of the run per "
          "fold point (median) | of which until its first store | GPU fold points per resident "
          "warp in it | of which after its first store | DRAM load est / measured |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in d["results"]:
        key = (tuple(r["block"]), tuple(r["fold"]))
        dl = dram.get(key)
        dl = f"{dl[0]:.1f} / {dl[1]:.1f}" if dl else "–"
        print(f"| {'×'.join(map(str, r['block']))} | {'×'.join(map(str, r['fold']))} | "
              f"{r['registers']} | {r['resident_warps']:.0f} | {r['warp_run_us']:.1f} | "
              f"{shown(r['share_median'])} | "
              f"{shown(r['wait_median'])} | "
              f"{shown(r['gpu'])} | "
              f"{shown(r['gpu_after_ready'])} | {dl} |")
    print("\nLockstep waves: each fold point 1/F of the run, and every resident warp starts one "
          "fold point in it (1.00). Up to 8 fold points are shown.")


if __name__ == "__main__":
    stamped_cli(__doc__, measure, summary)

#!/usr/bin/env python3
"""How far apart the warps of one block run, in fold points, fold point by fold point (issue 8).

The footprint visitor's steps hold a block's warps together: a line one warp loads is reused by
the warp beside it at the same step of their runs. `bench/warp-skew.py` counted, per pair of
warps, the fold point each was in (whole fold points: a lag of 0 or 1 cannot tell warps a few
instructions apart from warps most of a fold point apart). This reads the same per-warp stamps
(`benchlib.stamped_run`: `%globaltimer` at the start of every fold point and at the end, lane 0
of each warp; each stamp a memory clobber) as times and reports, per configuration:

- `spread`: at the start of fold point k, the mean |t_i - t_j| over the pairs of warps of a block,
  over the block's mean fold point (its warps' runs over F), averaged over the blocks; for each
  warp late by a delay uniform over D fold points it is D / 3;
- `drift`: 3 x the mean spread over the fold points after the first (k >= 1) and the end: the D
  of uniform delays that gives it;
- `spread_by_warp_distance`: the mean |t_w - t_(w+d)| over the block's warps w and those fold
  points, over the block's mean fold point, for d = 1, 2, 4, …: how far apart warps d apart in
  the block run (neighbouring rows of a tile are neighbouring warps);
- the blocks per SM the stamps show (warps running at once over the block's warps).

usage (on a machine with an NVIDIA GPU, CuPy and the stencilscope binary):
  bench/warp-drift.py measure BIN OUT.json KERNEL.toml DTYPE DOMAIN CONFIG...
    CONFIG = bx,by,bz/fx,fy,fz (LBM kernels are compiled with the float options the counter
    sweeps' twins ran with, `benchlib.FLOAT_OPTIONS`)
  bench/warp-drift.py summary OUT.json [REPORT.json ...]
    REPORT: counter reports of the same kernel (those `bench/recheck-counters.sh` writes): each
    configuration's L2 load estimated and measured, with the blocks per SM of its launch.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import report_levels, stamped_cli, stamped_heading, stamped_measure  # noqa: E402


def pair_spread(x):
    """Mean |x_i - x_j| over the pairs of a 1-D array (sorted: sum of (2i - n + 1) x_i)."""
    import numpy as np

    n = len(x)
    if n < 2:
        return 0.0
    s = np.sort(x).astype(np.float64)
    return float(np.sum((2 * np.arange(n) - n + 1) * s) / (n * (n - 1) / 2))


def spreads(rec, wpb, nf):
    """Per fold point start (and the end): the blocks' mean pair spread over their fold point."""
    import numpy as np

    t = rec[:, 1:nf + 2].astype(np.int64)
    nb = len(t) // wpb
    t = t[:nb * wpb].reshape(nb, wpb, nf + 1)
    ok = (t[:, :, -1] > t[:, :, 0]).all(axis=1)
    t = t[ok]
    per_fold = (t[:, :, -1] - t[:, :, 0]).mean(axis=1) / nf
    out = np.zeros(nf + 1)
    for b in range(len(t)):
        for k in range(nf + 1):
            out[k] += pair_spread(t[b, :, k]) / per_fold[b]
    out /= max(len(t), 1)
    # By the warps' distance in the block (warp w against w + d), over the fold points after
    # the first and the end: neighbouring warps may run closer than the block's pairs.
    by_distance = {}
    d = 1
    while d < wpb:
        diff = np.abs(t[:, d:, 1:] - t[:, :-d, 1:]) / per_fold[:, None, None]
        by_distance[d] = float(diff.mean())
        d *= 2
    # Warps running at once, over a block's warps.
    begin, end = np.sort(rec[:, 1]), np.sort(rec[:, nf + 1])
    mid = rec[len(rec) // 2, 1]
    running = np.searchsorted(begin, mid, side="right") - np.searchsorted(end, mid, side="right")
    sms = len(np.unique(rec[:, 0]))
    return out, float(running / max(sms, 1) / wpb), by_distance


def measure(binary, out_path, kernel, dtype, domain, configs):
    def analyse(config, run):
        nf = len(run["points"])
        sp, bps, near = spreads(run["records"], run["wpb"], nf)
        drift = 3 * float(sp[1:].mean()) if nf > 1 else 0.0
        res = {"config": config, "block": run["block"], "fold": run["fold"],
               "fold_points": nf, "warps_per_block": run["wpb"],
               "registers": run["kernel"].attributes["num_regs"], "blocks_per_sm": bps,
               "spread": [float(x) for x in sp], "drift": drift,
               "spread_by_warp_distance": near,
               "max_rel_error": run["max_rel_error"]}
        return res, (f"{nf} fold points, {bps:.1f} blocks per SM, spread "
                     f"{[round(float(x), 3) for x in sp[:9]]}, drift {drift:.2f} fold points, "
                     f"by warp distance { {k: round(v, 3) for k, v in near.items()} }")

    stamped_measure(binary, out_path, kernel, dtype, domain, configs, analyse)


def summary(path, *reports):
    d = json.load(open(path))
    est = report_levels(reports, "l2_load")
    print(stamped_heading(d))
    print("| block | fold | fold points | warps/block | registers | blocks/SM (stamped) | "
          "spread at fold points 0, 1, 2, … end | drift D (fold points) | spread by warp distance "
          "1, 2, 4, … | L2 load est / "
          "measured (blocks/SM) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in d["results"]:
        key = (tuple(r["block"]), tuple(r["fold"]))
        e = est.get(key)
        e = f"{e[0]:.1f} / {e[1]:.1f} ({e[2]}), {100 * (e[0] / e[1] - 1):+.0f} %" if e else "–"
        sp = r["spread"]
        shown = " ".join(f"{x:.2f}" for x in sp[:6]) + (" … " + f"{sp[-1]:.2f}" if len(sp) > 6 else "")
        print(f"| {'×'.join(map(str, r['block']))} | {'×'.join(map(str, r['fold']))} | "
              f"{r['fold_points']} | {r['warps_per_block']} | {r['registers']} | "
              f"{r['blocks_per_sm']:.1f} | {shown} | {r['drift']:.2f} | "
              f"{' '.join(f'{v:.2f}' for v in r.get('spread_by_warp_distance', {}).values())} | {e} |")
    print("\nSpread: mean |t_i - t_j| over a block's pairs of warps at a fold point's start, over the "
          "block's mean fold point; uniform delays over D fold points give D / 3. Drift: 3 x the "
          "mean spread after the first fold point.")


if __name__ == "__main__":
    stamped_cli(__doc__, measure, summary)

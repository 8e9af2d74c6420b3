#!/usr/bin/env python3
"""How far apart in time two blocks of a generated stencil kernel touch the planes they share
(issue 8).

The footprint visitor places a block's accesses on lockstep waves: the blocks of a wave start
together, and a block one z-layer of tiles later touches the shared z-halo either in the same
wave (a few steps later) or a whole wave later. The L2 distance of that reuse decides whether
the z-halo is read from DRAM again, and on the slope of L2's measured reuse curve a distance a
few per cent off moves the DRAM volume by more than ±10 %. This measures the gaps on the GPU.

It emits the CUDA twin of each configuration, records per warp (lane 0) the SM (`%smid`) and the
global timer (`%globaltimer`, ns) at the start of every fold point and at the end, checks the
output against the CuPy reference (the formula printed in the source), and reports per
configuration, over every block that has a neighbour in z (`blockIdx.z + 1`):

- `duration`: the block's run, first warp's start to last warp's end (µs; p10/p50/p90);
- `start_gap`: the neighbour's start less the block's start, in median block durations (the
  visitor's lockstep waves: 0 or 1; launch order without waves: the launch distance over the
  blocks of a wave);
- `halo_gap`: from the block's first fold point (where it loads its column's upper z-halo, the
  planes the neighbour reads at its own first fold point) to the neighbour's first fold point,
  and `last_gap` from the block's last fold point to the neighbour's first: in µs and in median
  durations;
- the kernel's run (first start to last end, µs) as recorded.

usage (on a machine with an NVIDIA GPU, CuPy and the stencilscope binary):
  bench/link-gaps.py measure BIN OUT.json KERNEL.toml DTYPE DOMAIN CONFIG...
    CONFIG = bx,by,bz/fx,fy,fz (for example 64,4,1/1,2,4)
  bench/link-gaps.py summary OUT.json [REPORT.json ...]
    REPORT: counter reports of the same domain (`stencilscope counters`): a configuration's
    measured DRAM bytes and ncu duration turn its gaps into MiB moved through DRAM.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import provenance, stamped_cli, stamped_heading, stamped_run  # noqa: E402


def pct(a, qs=(10, 50, 90)):
    import numpy as np

    return [float(np.percentile(a, q)) for q in qs]


def gaps(rec, grid, wpb, nf):
    """The figures of one recorded launch (see the module doc)."""
    import numpy as np

    nb = grid[0] * grid[1] * grid[2]
    t = rec[:, 1:].astype(np.int64).reshape(nb, wpb, nf + 1)
    t0 = int(t.min())
    t = (t - t0) / 1000.0  # µs from the kernel's first stamp
    start = t[:, :, 0].min(axis=1)
    end = t[:, :, -1].max(axis=1)
    dur = end - start
    med = float(np.median(dur))
    first = np.median(t[:, :, 0], axis=1)
    last = np.median(t[:, :, nf - 1], axis=1)
    # Blocks with a neighbour in z: every block but those of the last grid layer.
    plane = grid[0] * grid[1]
    a = np.arange(nb - plane)
    b = a + plane
    sg = (start[b] - start[a]) / med
    hg = first[b] - first[a]
    lg = first[b] - last[a]
    # Resident blocks, as the run had them: those running at the middle of the kernel.
    mid = (start.min() + end.max()) / 2
    resident = int(((start <= mid) & (end > mid)).sum())
    return {
        "blocks": nb,
        "run_us": float(end.max()),
        "duration_us": pct(dur),
        "start_gap": pct(sg),
        "start_gap_mean": float(sg.mean()),
        "halo_gap_us": pct(hg),
        "halo_gap": pct(hg / med),
        "last_gap_us": pct(lg),
        "last_gap": pct(lg / med),
        "launch_distance": plane,
        "wave_blocks": resident,
    }


def measure(binary, out_path, kernel, dtype, domain, configs):
    import cupy as cp
    import numpy as np

    results = []
    for c in configs:
        run = stamped_run(cp, binary, kernel, dtype, domain, c)
        block, fold, grid, points = run["block"], run["fold"], run["grid"], run["points"]
        r, wpb, nf, err = run["records"], run["wpb"], len(points), run["max_rel_error"]
        g = gaps(r, grid, wpb, nf)
        g["sms_used"] = int(np.unique(r[:, 0]).size)
        results.append({"block": block, "fold": fold, "fold_points": points, "grid": grid,
                        "max_rel_error": err, **g})
        print(f"{block} fold {fold}: duration p50 {g['duration_us'][1]:.1f} µs, resident "
              f"{g['wave_blocks']}, launch distance {g['launch_distance']} "
              f"({g['launch_distance'] / max(g['wave_blocks'], 1):.2f} of them), start gap p10/50/90 "
              f"{[round(x, 2) for x in g['start_gap']]}, halo gap {[round(x, 2) for x in g['halo_gap']]} "
              f"durations", flush=True)
    json.dump({**provenance(cp), "kernel": kernel, "dtype": dtype, "domain": domain,
               "results": results}, open(out_path, "w"), indent=1)


def summary(path, *reports):
    d = json.load(open(path))
    meas = {}
    for report in reports:
        for r in json.load(open(report))["records"]:
            key = (tuple(r["config"]["block"]), tuple(r["config"]["fold"]))
            meas[key] = r
    print(stamped_heading(d))
    head = ("| block | fold | duration µs p50 | resident blocks | z launch distance / resident | "
            "start gap p10 / p50 / p90 | halo gap p10 / p50 / p90 | last gap p10 / p50 / p90 |")
    if meas:
        head += " DRAM MiB per µs | halo gap p50 in MiB | DRAM load measured |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in d["results"]:
        f3 = lambda xs: " / ".join(f"{x:.2f}" for x in xs)  # noqa: E731
        line = (f"| {'×'.join(map(str, r['block']))} | {'×'.join(map(str, r['fold']))} | "
                f"{r['duration_us'][1]:.1f} | {r['wave_blocks']} | "
                f"{r['launch_distance'] / max(r['wave_blocks'], 1):.2f} | {f3(r['start_gap'])} | "
                f"{f3(r['halo_gap'])} | {f3(r['last_gap'])} |")
        m = meas.get((tuple(r["block"]), tuple(r["fold"])))
        if m:
            c = m["counters"]
            rate = (c["dram__bytes_read.sum"] + c["dram__bytes_write.sum"]) / (
                c["gpu__time_duration.sum"] * 1e6) / 2**20
            line += (f" {rate:.2f} | {r['halo_gap_us'][1] * rate:.1f} | "
                     f"{m['measured']['dram_load']:.2f} |")
        print(line)
    print("\nGaps in median block durations; the halo gap from the block's first fold point to "
          "its z-neighbour's, the last gap from its last fold point to the neighbour's first.")


if __name__ == "__main__":
    stamped_cli(__doc__, measure, summary)

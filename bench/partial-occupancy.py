#!/usr/bin/env python3
"""Early write-backs of partly written sectors against the blocks resident at once (issue 8).

The counter sweeps' D3Q19 SoA tiles folded along x complete each output sector in two stores of
one thread, at two fold points. Compiled with the float options (124-136 registers, 8-16 warps per
SM) they write 0.34-0.72 of those sectors back before the second store arrives, where the
visitor, whose L2 kept the sector between two writes as it keeps a reuse, charged none; the
visitor's own count of such sectors partly written at a time (Little's law over its lockstep
steps, `bench/prototypes/partial-count.diff`) orders the losses. If L2 writes partly written
sectors back once their number passes a limit (the `threshold` and `pstride` sets of
`bench/l2-traffic.py`), the loss of one kernel falls as fewer of its blocks run at once, the
count falling with them, and vanishes below the limit; if it is a matter of each sector's own
time or of the warps' issue, it stays. (It falls: the machine figure `partial_sector_limit`,
bench/results/h200/counters/README.md, "Sectors partly written at a time".)

Each configuration's CUDA twin is launched under Nsight Compute (caches flushed before each
launch, `--clock-control none`) with dynamic shared memory that lets exactly K blocks fit on an
SM, for several K, and the carve-out at 100 % for every launch (the L1 then the same 28 KiB at
every K); and once more at the most blocks that fit with no shared memory and the driver's
carve-out, as the counter sweeps ran. Every launch's output is checked against the reference. A
control with whole sectors per store (32x4x2, no folding) runs at the same K and carve-out.

usage (GPU, CuPy, ncu, the stencilscope binary):
  bench/partial-occupancy.py measure BIN OUT.json [folded|narrow]
      folded (default): tiles folded along x whose thread completes its sectors; narrow: tiles
      narrower than a sector, completed by x-neighbouring blocks
  bench/partial-occupancy.py summary OUT.json
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (  # noqa: E402
    FLOAT_OPTIONS, check_lbm_soa, check_twin, emit_cuda, lbm_layout, lbm_soa_fields,
    measure_twins, occupancy_smem, set_carveout, twin_fields, twin_results)

HERE = os.path.dirname(os.path.abspath(__file__))
DOMAIN = "256,256,256"
SOA = "lbm/d3q19_srt_pull.toml"
STAR = "stencils/star3d_r4.toml"
# (kernel file, dtype, block, fold, NVRTC options, blocks per SM to run at; the first is the
# most that fit, as the counter sweeps ran them).
PLAN = [
    (SOA, "f32", (4, 2, 8), (2, 1, 4), FLOAT_OPTIONS, (8, 6, 4, 2, 1)),
    (SOA, "f32", (4, 1, 32), (2, 2, 1), FLOAT_OPTIONS, (4, 3, 2, 1)),
    (SOA, "f32", (4, 2, 8), (2, 1, 4), (), (21, 12, 8, 4, 2, 1)),
    (SOA, "f32", (4, 1, 64), (2, 1, 1), (), (6, 4, 2, 1)),
    (SOA, "f32", (2, 8, 16), (2, 4, 1), FLOAT_OPTIONS, (2, 1)),
    (SOA, "f32", (32, 4, 2), (1, 1, 1), FLOAT_OPTIONS, (8, 4, 2, 1)),
    (SOA, "f32", (32, 4, 2), (1, 1, 1), (), (21, 12, 8, 6, 4, 2, 1)),
    (STAR, "f64", (2, 1, 32), (4, 1, 1), (), (32, 16, 8, 4, 2)),
    (STAR, "f64", (1, 16, 4), (4, 1, 1), (), (32, 16, 8, 4)),
    (STAR, "f64", (2, 16, 2), (4, 1, 2), (), (16, 8, 4)),
    (STAR, "f64", (32, 4, 2), (1, 1, 1), (), (32, 16, 8, 4, 2)),
]
# The set `narrow`: tiles narrower than a sector, whose sectors x-neighbouring blocks complete
# (D3Q19 SoA two and one threads wide, star3d_r4 one thread wide), and the controls.
NARROW = [
    (SOA, "f32", (2, 4, 4), (1, 4, 4), (), (32, 16, 8, 4, 2, 1)),
    (SOA, "f32", (1, 64, 2), (1, 2, 1), (), (12, 8, 4, 2, 1)),
    (SOA, "f32", (1, 8, 32), (2, 2, 1), FLOAT_OPTIONS, (2, 1)),
    (SOA, "f32", (32, 4, 2), (1, 1, 1), (), (8, 4, 2, 1)),
    (SOA, "f32", (32, 4, 2), (1, 1, 1), FLOAT_OPTIONS, (8, 2, 1)),
    (STAR, "f64", (1, 4, 32), (1, 4, 2), (), (16, 8, 4, 2, 1)),
    (STAR, "f64", (2, 2, 64), (1, 1, 4), (), (8, 4, 2, 1)),
    (STAR, "f64", (32, 4, 2), (1, 1, 1), (), (8, 4, 2, 1)),
]
# The configurations run once more at the most blocks that fit, with no shared memory and the
# driver's carve-out (the L1 of the counter sweeps).
FULL_L1 = True
# The control of each kernel (whole sectors, no pairs): its DRAM write at the same options and
# carve-out, and at the same K where it ran at it (else the nearest).
CONTROL = ([32, 4, 2], [1, 1, 1])
METRICS = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__registers_per_thread",
    "gpu__time_duration.sum",
]


def launch(plan_path):
    import cupy as cp

    for pt in json.load(open(plan_path))["points"]:
        kern = cp.RawKernel(pt["source"], pt["name"], options=tuple(pt["options"]))
        kern.compile()
        # CuPy keeps one compiled module per source: the attribute is set for every launch,
        # -1 (no preference: the driver's choice) where none is asked for.
        set_carveout(kern, -1 if pt["carveout"] is None else pt["carveout"])
        smem = 0 if pt["carveout"] is None else occupancy_smem(pt["bps"])
        kern.max_dynamic_shared_size_bytes = smem
        comps, _ = lbm_layout(pt["source"])
        u, v = lbm_soa_fields(cp, pt["source"]) if comps > 1 else twin_fields(
            cp, pt["ext"], pt["dtype"])
        kern(tuple(pt["grid"]), tuple(pt["block"]), (u, v), shared_mem=smem)
        cp.cuda.runtime.deviceSynchronize()
        what = f"{pt['kernel']} {pt['block']} fold {pt['fold']} at {pt['bps']} blocks per SM"
        if comps > 1:
            check_lbm_soa(cp, u, v, pt["source"], what)
        else:
            check_twin(cp, u, v, pt["source"], pt["dtype"], what)
        del u, v


def measure(binary, out_path, which="folded"):
    points = []
    for kernel, dtype, block, fold, options, ks in (NARROW if which == "narrow" else PLAN):
        src, grid, ext, name = emit_cuda(binary, os.path.join(HERE, "..", kernel), block, fold,
                                         dtype, DOMAIN)
        runs = [(k, 100) for k in ks] + ([(ks[0], None)] if FULL_L1 else [])
        for k, carveout in runs:
            points.append({"kernel": os.path.basename(kernel), "dtype": dtype,
                           "block": list(block), "fold": list(fold), "options": list(options),
                           "bps": k, "carveout": carveout, "grid": grid, "ext": ext,
                           "name": name, "source": src})
    measure_twins(__file__, points, METRICS, out_path, DOMAIN)


def summary(path):
    d, updates = twin_results(path)
    print(f"# Early write-backs against the blocks resident at once, on the {d['device']} "
          "(issue 8)\n")
    print(f"Measured {d['date'][:10]}, driver {d['driver']}, commit {d['commit']}, domain "
          f"{'×'.join(map(str, d['domain']))}; carve-out 100 % (L1 28 KiB) or the driver's (no "
          "shared memory, at the most blocks that fit). Volumes "
          "in B/LUP. `writes beyond`: DRAM write beyond the control's (32×4×2, no folding: "
          "whole sectors; same kernel, options and carve-out, at the same K or the nearest) per byte stored (19 × 4 B for D3Q19, 8 B "
          "for star3d_r4 f64): the early write-backs per stored sector, each sector of these "
          "tiles completed by one pair of stores. `fills`: the DRAM read beyond the control's, "
          "likewise.\n")
    print("| kernel | block | fold | options | K asked | blocks that fit (ncu) | carve-out | "
          "registers | L2 rd | L2 wr | DRAM rd | DRAM wr | writes beyond | fills | time µs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    per = lambda r, k: r["counters"][k] / updates  # noqa: E731
    key = lambda r: (r["kernel"], tuple(r["options"]), r["bps"], r.get("carveout", 100))  # noqa: E731
    controls = [r for r in d["results"] if (r["block"], r["fold"]) == CONTROL]

    def control_of(r):
        """The control at the same K, else at the nearest K (its DRAM traffic does not move
        with K: whole sectors are never written back early)."""
        same = [c for c in controls if key(c)[:2] == key(r)[:2] and key(c)[3] == key(r)[3]]
        return min(same, key=lambda c: abs(c["bps"] - r["bps"]), default=None)

    def fit(r):
        """The blocks per SM the launch's limits allow (— where the run predates them)."""
        lim = [v for k, v in r["counters"].items() if k.startswith("launch__occupancy_limit")]
        return f"{min(lim):.0f}" if len(lim) == 4 else "—"

    for r in d["results"]:
        stored = 76.0 if r["kernel"].startswith("d3q19") else 8.0
        rd, wr = per(r, "dram__bytes_read.sum"), per(r, "dram__bytes_write.sum")
        c = control_of(r)
        if c is None or c is r:
            beyond = fills = "control" if c is r else "—"
        else:
            beyond = f"{(wr - per(c, 'dram__bytes_write.sum')) / stored:+.2f}"
            fills = f"{(rd - per(c, 'dram__bytes_read.sum')) / stored:+.2f}"
        print(f"| {r['kernel'].split('.')[0]} | {'×'.join(map(str, r['block']))} | "
              f"{'×'.join(map(str, r['fold']))} | {'float' if r['options'] else 'plain'} | "
              f"{r['bps']} | {fit(r)} | {'driver' if r.get('carveout', 100) is None else '100 %'} | "
              f"{r['counters']['launch__registers_per_thread']:.0f} | "
              f"{32 * per(r, 'lts__t_sectors_srcunit_tex_op_read.sum'):.1f} | "
              f"{32 * per(r, 'lts__t_sectors_srcunit_tex_op_write.sum'):.1f} | {rd:.1f} | "
              f"{wr:.1f} | {beyond} | {fills} | "
              f"{r['counters']['gpu__time_duration.sum'] / 1e3:.0f} |")


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["launch"] and len(a) == 2:
        launch(a[1])
    elif a[:1] == ["measure"] and len(a) in (3, 4) and a[3:] in ([], ["folded"], ["narrow"]):
        measure(a[1], a[2], (a[3:] or ["folded"])[0])
    elif a[:1] == ["summary"] and len(a) == 2:
        summary(a[1])
    else:
        sys.exit(__doc__)

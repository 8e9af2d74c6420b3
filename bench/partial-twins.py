#!/usr/bin/env python3
"""What in a stencil kernel makes L2 write partly written sectors back early (issue 8).

Some star3d_r4 f64 tiles narrower than a sector write 0.2–0.35 sectors more to DRAM per pair of
partial stores than they store (and read as much again as fills), while box3d_r1 f32's narrow
folded tiles lose almost nothing; the `runs` probe of `l2-traffic.py` fits neither. This takes
the kernels themselves apart. For each configuration it emits the CUDA twin and launches, under
Nsight Compute (caches flushed before each launch, `--clock-control none`):

- `orig`: the twin as emitted;
- `l1`: the same instructions, every load's index taken modulo 1024 elements, so that every load
  hits L1 (8 KiB for f64) and nothing but the stores reaches L2: the stores keep their addresses,
  widths and order;
- `l2`: every load's index modulo 2^19 elements (4 MiB for f64): the loads reach L2 as in `orig`
  (a block's neighbourhood is unchanged but for the wrap), but the input stays in L2, so that
  nothing is read from DRAM and no input sector is allocated in L2 but once.

The input repeats with the variant's period (1024 elements for `orig`), so every variant computes
the same result as `orig` on it, and every launch is checked against the CuPy reference of the
formula printed in the source. Each configuration runs in f64 and in f32 (a sector's pieces of 8
or 4 bytes, shared by half or twice as many x-neighbours), next to a control with full sectors
(32×4×2, no folding).

The set `offsets` launches `orig` of four of the configurations (and their controls) with the output
placed 0, 1 MiB, 3 MiB + 64 KiB and 17 MiB + 2 KiB further from the input than the allocator puts
it: whether the loss depends on where in L2 the output's sectors fall relative to the input's.

usage (GPU, CuPy, ncu, the stencilscope binary):
  bench/partial-twins.py measure BIN OUT.json [variants|offsets]
  bench/partial-twins.py summary OUT.json
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (  # noqa: E402
    LOAD_PERIODS, check_twin, emit_cuda, measure_twins, periodic_input, redirect_loads,
    twin_results)

HERE = os.path.dirname(os.path.abspath(__file__))
DOMAIN = "256,256,256"
# (kernel file, configurations as (block, fold)): the narrow tiles of the H100 sweeps and a control.
PLAN = [
    ("stencils/star3d_r4.toml", [((2, 2, 64), (1, 1, 4)), ((2, 1, 32), (4, 1, 1)),
                                 ((1, 4, 32), (1, 4, 2)), ((2, 16, 2), (4, 1, 2)),
                                 ((32, 4, 2), (1, 1, 1))]),
    ("stencils/box3d_r1.toml", [((1, 16, 4), (2, 4, 2)), ((1, 64, 8), (2, 4, 4)),
                                ((1, 16, 16), (2, 1, 4)), ((32, 4, 2), (1, 1, 1))]),
]
DTYPES = ("f64", "f32")
# The set `offsets`: (kernel, dtype, block, fold), and the output's extra offsets in bytes.
OFFSET_PLAN = [
    ("stencils/star3d_r4.toml", "f64", (2, 2, 64), (1, 1, 4)),
    ("stencils/star3d_r4.toml", "f64", (2, 1, 32), (4, 1, 1)),
    ("stencils/star3d_r4.toml", "f64", (32, 4, 2), (1, 1, 1)),
    ("stencils/box3d_r1.toml", "f32", (1, 16, 4), (2, 4, 2)),
    ("stencils/box3d_r1.toml", "f64", (1, 16, 4), (2, 4, 2)),
    ("stencils/box3d_r1.toml", "f32", (32, 4, 2), (1, 1, 1)),
    ("stencils/box3d_r1.toml", "f64", (32, 4, 2), (1, 1, 1)),
]
OFFSETS = (0, 1 << 20, (3 << 20) + (64 << 10), (17 << 20) + 2048)
# Variant: the period (elements) its loads' indices are taken modulo, and its input repeats with.
VARIANTS = {"orig": None, **LOAD_PERIODS}
METRICS = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "gpu__time_duration.sum",
]


def variant(src, which):
    """The source of a variant: `orig` unchanged, the others with every load's index modulo the
    variant's period."""
    period = VARIANTS[which]
    return src if period is None else redirect_loads(src, period)


def launch(plan_path):
    import cupy as cp

    for pt in json.load(open(plan_path))["points"]:
        ext = pt["ext"]
        n = ext[0] * ext[1] * ext[2]
        u = periodic_input(cp, ext, pt["dtype"], VARIANTS[pt["variant"]] or VARIANTS["l1"])
        # The output `offset` bytes into a buffer of its own (a multiple of the element size).
        skip = pt.get("offset", 0) // u.itemsize
        v = cp.zeros(n + skip, dtype=ty)[skip:].reshape(u.shape)
        kern = cp.RawKernel(pt["source"], pt["name"])
        kern(tuple(pt["grid"]), tuple(pt["block"]), (u, v))
        cp.cuda.runtime.deviceSynchronize()
        check_twin(cp, u, v, pt["source"], pt["dtype"],
                   f"{pt['kernel']} {pt['dtype']} {pt['block']} fold {pt['fold']} {pt['variant']}")
        del u, v


def measure(binary, out_path, which_set):
    def point(kernel, dtype, block, fold, which, offset):
        src, grid, ext, name = emit_cuda(binary, os.path.join(HERE, "..", kernel), block, fold,
                                         dtype, DOMAIN)
        return {"kernel": os.path.basename(kernel), "dtype": dtype, "block": list(block),
                "fold": list(fold), "variant": which, "offset": offset, "grid": grid, "ext": ext,
                "name": name, "source": variant(src, which)}

    if which_set == "variants":
        points = [point(kernel, dtype, block, fold, which, 0)
                  for kernel, configs in PLAN for dtype in DTYPES for block, fold in configs
                  for which in VARIANTS]
    else:
        points = [point(kernel, dtype, block, fold, "orig", off)
                  for kernel, dtype, block, fold in OFFSET_PLAN for off in OFFSETS]
    measure_twins(__file__, points, METRICS, out_path, DOMAIN, periods=VARIANTS)


CONTROL = ([32, 4, 2], [1, 1, 1])


def summary(path):
    d, updates = twin_results(path)
    print(f"# Partial stores in the twins, taken apart, on the {d['device']} (issue 8)\n")
    print(f"Measured {d['date'][:10]}, driver {d['driver']}, commit {d['commit']}, domain "
          f"{'×'.join(map(str, d['domain']))}. Volumes in B/LUP. `fills` and `writes`: DRAM read "
          "and written beyond the control's (block 32×4×2, no folding: full sectors) of the same "
          "kernel, type, variant and output offset, per stored sector (the element size); the "
          "control's own row shows its DRAM write against the output, negative where written "
          "sectors were still in L2 when the kernel ended.\n")
    print("| kernel | dtype | block | fold | variant | output offset | L2 rd | L2 wr | DRAM rd | "
          "DRAM wr | fills | writes | time µs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    key = lambda r: (r["kernel"], r["dtype"], r["variant"], r.get("offset", 0))  # noqa: E731
    per = lambda r, k: r["counters"][k] / updates  # noqa: E731
    control = {key(r): r for r in d["results"] if (r["block"], r["fold"]) == CONTROL}
    for r in d["results"]:
        size = 8 if r["dtype"] == "f64" else 4
        rd, wr = per(r, "dram__bytes_read.sum"), per(r, "dram__bytes_write.sum")
        c = control.get(key(r))
        if c is None:
            fills = writes = "—"
        elif c is r:
            fills, writes = "control", f"{(wr - size) / size:+.2f}"
        else:
            fills = f"{(rd - per(c, 'dram__bytes_read.sum')) / size:+.2f}"
            writes = f"{(wr - per(c, 'dram__bytes_write.sum')) / size:+.2f}"
        print(f"| {r['kernel'].split('.')[0]} | {r['dtype']} | {'×'.join(map(str, r['block']))} | "
              f"{'×'.join(map(str, r['fold']))} | {r['variant']} | {r.get('offset', 0)} | "
              f"{32 * per(r, 'lts__t_sectors_srcunit_tex_op_read.sum'):.1f} | "
              f"{32 * per(r, 'lts__t_sectors_srcunit_tex_op_write.sum'):.1f} | {rd:.1f} | {wr:.1f} | "
              f"{fills} | {writes} | {r['counters']['gpu__time_duration.sum'] / 1e3:.0f} |")


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["launch"] and len(a) == 2:
        launch(a[1])
    elif a[:1] == ["measure"] and len(a) in (3, 4) and a[3:] in ([], ["variants"], ["offsets"]):
        measure(a[1], a[2], (a[3:] or ["variants"])[0])
    elif a[:1] == ["summary"] and len(a) == 2:
        summary(a[1])
    else:
        sys.exit(__doc__)

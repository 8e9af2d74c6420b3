#!/usr/bin/env python3
"""How many sectors a stencil kernel keeps partly written at once, from when its warps really
store (issue 8).

L2 keeps at most a few MiB of partly written sectors (`bench/l2-traffic.py` set `threshold`:
about 6.7 MiB on the H100, 9 MiB on the H200); beyond that, each further one costs a fill and a
second write. A tile narrower than a sector leaves a sector partly written from the first of its
pieces to the last, and those pieces come from neighbouring blocks (or from one thread's x-fold
points), whose timing the visitor's lockstep waves set equal. This measures it: it emits the CUDA
twin of each configuration, records per warp (lane 0) `%globaltimer` at the start of every fold
point and at the end (`benchlib.stamp_fold_points`), checks the output against the CuPy
reference, and takes each store to land when its warp starts the next fold point (or ends); an
array-of-structures LBM twin's thread stores its record at once, so only the record's first and
last sector can be shared with the records beside it. From
the generated index expressions it finds every output element's sector, and per sector the time
of its first and last piece (a sector one store completes is never partly written). It reports:

- `sectors_split`: the share of the output's sectors written in more than one store;
- `open_mib`: the partly written sectors at a time (MiB of sectors), averaged over the kernel's
  run, and its p90 and maximum over the run;
- `spread`: a split sector's time from its first piece to its last, p50 and p90, in median
  fold-point durations (the time between two fold-point stamps of a warp);
- `open_lines`: the lines holding partly written sectors at a time (a line from the first piece
  of its split sectors to the last), mean, p90 and maximum over the run: L2's limit counts
  lines, not sectors (`bench/l2-traffic.py` set `pstride`);
- `lost` (per limit in `LIMITS_LINES`): the share of those lines that a cache keeping at most
  that many of them would have to fill early, replaying the stores in time order and filling the
  oldest whenever the limit is passed.

usage (on a machine with an NVIDIA GPU, CuPy and the stencilscope binary):
  bench/partial-drift.py measure BIN OUT.json KERNEL.toml DTYPE DOMAIN CONFIG...
    CONFIG = bx,by,bz/fx,fy,fz[/l1|l2][/cN][/kN] (for example 1,4,32/1,4,2; 1,4,32/1,4,2/l1 for
    the variant whose loads all hit L1, `benchlib.LOAD_PERIODS`; 1,4,32/1,4,2/c100 at a
    carve-out of 100 % shared memory; 1,4,32/1,4,2/k4 with dynamic shared memory that lets 4
    blocks fit on an SM)
  bench/partial-drift.py summary OUT.json [REPORT.json ...]
    REPORT: counter reports of the same kernel and domain (`stencilscope counters`, or the
    `raw/*-device-report.json` they come from): each configuration's measured DRAM write beyond
    the output, per output sector, next to the replayed losses.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import lbm_layout, provenance, stamped_cli, stamped_heading, stamped_run  # noqa: E402

SECTOR = 32
LINE = 128
# The limits of lines holding partly written sectors the replay is run with: about the H100's
# (`l2-traffic/pstride`: 2 MiB of sectors one per line, or 8 MiB four per line, begin to cost
# fills, 65 Ki lines) and half of it.
LIMITS_LINES = [32768, 65536]
REPLAY_LINES = 4 << 20


def output_stores(src):
    """The output array's index base `{thread/block variable: coefficient}` and, per fold point
    in order, the constant offsets of its stores."""
    out = re.search(r"^// (\w+): output ", src, re.M).group(1)
    m = re.search(rf"const int base_{out[4:]} = ([^;]*);", src)
    coef = {v: int(c) for c, v in re.findall(r"(-?\d+)\*(\w+)", m.group(1))}
    offsets = []
    for line in src.split("\n"):
        if re.match(r"\s*// fold point \(i, j, k\)", line):
            offsets.append([])
        for c in re.findall(rf"{out}\[base_{out[4:]} \+ (\d+)\] =", line):
            offsets[-1].append(int(c))
    return coef, offsets


def replay(opens, closes, limit):
    """The share of the lines (open and close times of their partly written state, sorted by
    opening) that a cache keeping at most `limit` of them partly written fills early, filling
    the oldest first."""
    import numpy as np

    n = len(opens)
    if n == 0:
        return 0.0
    order_close = np.argsort(closes, kind="stable")
    lost = np.zeros(n, dtype=bool)
    closed = np.zeros(n, dtype=bool)
    count = 0
    oldest = 0  # the oldest opened line not yet closed or lost (opens are sorted)
    j = 0
    for i in range(n):
        t = opens[i]
        # Lines completed before this one opens leave the count.
        while j < n and closes[order_close[j]] <= t:
            s = order_close[j]
            if not lost[s]:
                count -= 1
            closed[s] = True
            j += 1
        count += 1
        while count > limit:
            while closed[oldest] or lost[oldest]:
                oldest += 1
            lost[oldest] = True
            count -= 1
    return float(lost.mean())


def sectors_of(src, block, fold, grid, wpb, nf, rec, esize):
    """Per split sector (written in more than one store), the times of its first and last piece
    (µs from the kernel's first stamp) and the sector, in increasing order; the sectors written
    in all; the median fold-point duration (µs) and the run (µs). An output of several
    components (D3Q19's 19 arrays) is taken one component at a time."""
    import numpy as np

    coef, offsets = output_stores(src)
    assert len(offsets) == nf and all(offsets), "stores at every fold point"
    q = component_stride(src)
    nb = grid[0] * grid[1] * grid[2]
    t = rec[:, 1:].astype(np.int64).reshape(nb, wpb, nf + 1)
    t0 = int(t[t > 0].min())
    t = (t - t0) / 1000.0
    fp = np.diff(t, axis=2)
    fp_med = float(np.median(fp))
    nthr = block[0] * block[1] * block[2]
    lin = np.arange(nthr)
    tx, ty, tz = lin % block[0], (lin // block[0]) % block[1], lin // (block[0] * block[1])
    b = np.arange(nb)
    bx, by, bz = b % grid[0], (b // grid[0]) % grid[1], b // (grid[0] * grid[1])
    thread_base = coef.get("tx", 0) * tx + coef.get("ty", 0) * ty + coef.get("tz", 0) * tz
    block_base = coef.get("bx", 0) * bx + coef.get("by", 0) * by + coef.get("bz", 0) * bz
    base = (block_base[:, None] + thread_base[None, :]).astype(np.int64)  # (nb, nthr)
    warp = lin // 32
    if lbm_layout(src)[1]:
        return record_sectors(base, offsets, t, warp, esize) + (fp_med, float(t.max()))
    stores = sorted((c // q, c, k) for k, cs in enumerate(offsets) for c in cs)
    firsts, lasts, sectors, written = [], [], [], 0
    for comp in sorted({s[0] for s in stores}):
        secs, times = [], []
        for _, c, k in (s for s in stores if s[0] == comp):
            secs.append(((base + c) * esize // SECTOR).ravel())
            # The fold point's stores land when its warp starts the next one (or ends).
            times.append(t[:, warp, k + 1].ravel())
        first, last, sector, n = split_sectors(secs, times)
        firsts.append(first)
        lasts.append(last)
        sectors.append(sector)
        written += n
    return (np.concatenate(firsts), np.concatenate(lasts), np.concatenate(sectors), written,
            fp_med, float(t.max()))


def record_sectors(base, offsets, t, warp, esize):
    """`sectors_of` for an array-of-structures output: a thread stores its record (the fold
    point's stores, next to each other) all at once, so only a record's first and last sector
    can be shared, with the records beside it; the sectors between are its own. Per split
    sector the times of its first and last piece and the sector, and the sectors written."""
    import numpy as np

    secs, times, inner = [], [], 0
    for k, cs in enumerate(offsets):
        lo = ((base + min(cs)) * esize // SECTOR).ravel()
        hi = ((base + max(cs)) * esize + esize - 1) // SECTOR
        hi = hi.ravel()
        tk = t[:, warp, k + 1].ravel()
        secs += [lo, hi]
        times += [tk, tk]
        inner += int(np.maximum(hi - lo - 1, 0).sum())
    first, last, sector, n = split_sectors(secs, times)
    return first, last, sector, n + inner


def split_sectors(secs, times):
    """Of the stores' sectors and times (lists of arrays), per sector written in pieces at
    different times the times of its first and last piece and the sector; and the sectors."""
    import numpy as np

    sec = np.concatenate(secs)
    tim = np.concatenate(times)
    order = np.argsort(sec, kind="stable")
    sec, tim = sec[order], tim[order]
    starts, first, last = spans(sec, tim, tim)
    split = last > first
    return first[split], last[split], sec[starts][split], len(starts)


def component_stride(src):
    """The output's component stride (elements; `q` in the generated source's header)."""
    return int(re.search(r"^// \w+: output .* q (\d+)$", src, re.M).group(1))


def spans(keys, lo, hi):
    """Per run of equal `keys` (sorted): where it starts, the least of `lo` and the greatest of
    `hi` over it."""
    import numpy as np

    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return starts, np.minimum.reduceat(lo, starts), np.maximum.reduceat(hi, starts)


def lines_of(first, last, sectors, per_line):
    """Per line holding a split sector, the times of the first and the last piece of its split
    sectors (a line holds partly written sectors from the one to the other, as a rule)."""
    _, first, last = spans(sectors // per_line, first, last)
    return first, last


def open_over_run(first, last, run):
    """The count of open intervals `[first, last)` averaged over the run, and at its p90 and
    maximum (sampled at 1000 even times)."""
    import numpy as np

    if len(first) == 0 or run <= 0:
        return 0.0, 0.0, 0.0
    ev_t = np.concatenate([first, last])
    ev_d = np.concatenate([np.ones(len(first)), -np.ones(len(last))])
    o = np.argsort(ev_t, kind="stable")
    ev_t, count = ev_t[o], np.cumsum(ev_d[o])
    dt = np.diff(np.r_[ev_t, ev_t[-1]])
    mean = float((count * dt).sum() / run)
    at = np.searchsorted(ev_t, np.linspace(0, run, 1000), side="right") - 1
    samples = np.where(at >= 0, count[np.clip(at, 0, None)], 0)
    return mean, float(np.percentile(samples, 90)), float(samples.max())


def measure(binary, out_path, kernel, dtype, domain, configs):
    import cupy as cp
    import numpy as np

    esize = 8 if dtype == "f64" else 4
    results = []
    for c in configs:
        st = stamped_run(cp, binary, kernel, dtype, domain, c)
        block, fold, grid, src = st["block"], st["fold"], st["grid"], st["src"]
        r, wpb, nf, err, kern = (st["records"], st["wpb"], len(st["points"]),
                                 st["max_rel_error"], st["kernel"])
        first, last, secs, written, fp_med, run = sectors_of(src, block, fold, grid, wpb, nf, r,
                                                             esize)
        mib = SECTOR / 2**20
        mean_open, p90_open, max_open = (x * mib for x in open_over_run(first, last, run))
        lf, ll = lines_of(first, last, secs, LINE // SECTOR)
        lines_open = open_over_run(lf, ll, run)
        so = np.argsort(lf, kind="stable")
        spread = (last - first) / fp_med if len(first) else np.zeros(1)
        # The replay is a Python loop: left out (None) past REPLAY_LINES lines.
        lost = {str(lim): replay(lf[so], ll[so], lim) if len(lf) <= REPLAY_LINES else None
                for lim in LIMITS_LINES}
        res = {"block": block, "fold": fold, "variant": st["variant"],
               "carveout": st["carveout"], "blocks_per_sm": st["blocks_per_sm"], "grid": grid,
               "max_rel_error": err,
               "registers": int(kern.attributes["num_regs"]),
               "run_us": run, "fold_point_us": fp_med, "sectors_written": written,
               "sectors_split": len(first) / max(written, 1), "open_mib_mean": mean_open,
               "open_mib_p90": p90_open, "open_mib_max": max_open,
               "open_lines_mean": lines_open[0], "open_lines_p90": lines_open[1],
               "open_lines_max": lines_open[2],
               "spread_p50": float(np.percentile(spread, 50)),
               "spread_p90": float(np.percentile(spread, 90)), "lost": lost}
        results.append(res)
        print(f"{block} fold {fold} {st['variant']} carve-out {st['carveout']}: run {run:.0f} µs, split {res['sectors_split']:.2f}, open "
              f"{mean_open:.2f} MiB (p90 {res['open_mib_p90']:.2f}, max {res['open_mib_max']:.2f}),"
              f" lines {lines_open[0]:.0f} (p90 {lines_open[1]:.0f}, max {lines_open[2]:.0f}),"
              f" spread p50/p90 {res['spread_p50']:.2f}/{res['spread_p90']:.2f} fold points, lost "
              + " ".join(f"{k}:{x:.2f}" for k, x in lost.items() if x is not None), flush=True)
    json.dump({**provenance(cp), "kernel": kernel, "dtype": dtype, "domain": domain,
               "limits_lines": LIMITS_LINES, "results": results}, open(out_path, "w"), indent=1)


def summary(path, *reports):
    d = json.load(open(path))
    meas = {}
    for report in reports:
        rep = json.load(open(report))
        for r in rep["records"]:
            key = (tuple(r["config"]["block"]), tuple(r["config"]["fold"]))
            meas[key] = (r, rep["minimal"][1])
    print(stamped_heading(d))
    lims = [str(x) for x in d["limits_lines"]]
    head = ("| block | fold | variant | blocks/SM | run µs | fold point µs | split | "
            "open MiB mean / p90 / max | "
            "open lines (Ki) mean / p90 / max | spread p50 / p90 | "
            + " | ".join(f"lost at {int(x) // 1024} Ki lines" for x in lims) + " |")
    if meas:
        head += " DRAM write beyond the output, per split sector |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in d["results"]:
        line = (f"| {'×'.join(map(str, r['block']))} | {'×'.join(map(str, r['fold']))} | "
                f"{r.get('variant', 'orig')} | {r.get('blocks_per_sm') or 'all that fit'} | "
                f"{r['run_us']:.0f} | {r['fold_point_us']:.2f} | {r['sectors_split']:.2f} | "
                f"{r['open_mib_mean']:.2f} / {r['open_mib_p90']:.2f} / {r['open_mib_max']:.2f} | "
                f"{r['open_lines_mean'] / 1024:.1f} / {r['open_lines_p90'] / 1024:.1f} / "
                f"{r['open_lines_max'] / 1024:.1f} | "
                f"{r['spread_p50']:.2f} / {r['spread_p90']:.2f} | "
                + " | ".join("–" if r["lost"][x] is None else f"{r['lost'][x]:.2f}" for x in lims)
                + " |")
        m = meas.get((tuple(r["block"]), tuple(r["fold"])))
        if m and r.get("variant", "orig") == "orig" and r.get("carveout") is None:
            # The output written once is the report's minimal DRAM store; what is written beyond
            # it, per split sector.
            rec, ideal = m
            excess = (rec["measured"]["dram_store"] - ideal) / ideal / max(r["sectors_split"], 1e-9)
            line += f" {excess:.2f} |"
        elif meas:
            line += " |"
        print(line)
    print("\nSplit: the share of the output's sectors written in more than one store. Spread: a "
          "split sector's first to last piece, in median fold-point durations. Lost: the replay's "
          "share of the lines holding split sectors filled early at that limit of such lines.")


if __name__ == "__main__":
    stamped_cli(__doc__, measure, summary)

#!/usr/bin/env python3
"""Which SM each block of a generated stencil kernel runs on, and which blocks share an SM (issue 8).

The simulator and the visitor assume that the blocks of a wave go to the SMs in launch order,
block `i` of a wave to SM `i mod SMs`, so that the blocks sharing an SM's L1 are `SMs` apart in
launch order: blocks next to each other in x never share an L1. This measures it. It emits the
CUDA twin of each configuration, records per block the SM (`%smid`) and the global timer at the
start of its first warp and at the end of its last, checks the output against a CuPy reference
(the formula printed in the source), and reports per configuration:

- `same_sm`: for the block next in x (linear id + 1, same row of the grid), in y and in z, the
  share that ran on the same SM at the same time as the block (their intervals overlap);
- `delta`: the most frequent differences in launch order between a block and the blocks running
  on its SM when it starts;
- `round_robin`: in the first wave, the share of blocks `i` whose SM is that of block `i - SMs`
  (1 under the simulator's rule) and of block `i - 1`;
- the SM of each block of the first wave, in launch order;
- `timing`: block durations, and the gap in start time between blocks one step apart in x, y, z
  and one first wave apart in launch order, in median block durations (lockstep waves: 0 and 1);
- with `--rows star:R` or `box:R` (the stencil's rows along y and z: the axes within R, or the
  whole square) and for tiles one row tall and deep: `rows_from_sm`, the share of a block's input
  rows that another block on its SM read while running at the same time, or that ended at most
  0.5, 1 or 2 median durations before it started (rows its L1 may still hold).

usage (on a machine with an NVIDIA GPU, CuPy and the stencilscope binary):
  bench/block-placement.py BIN OUT.json KERNEL.toml DTYPE DOMAIN [--rows star:R|box:R]
                           [--save-blocks] CONFIG...
    --save-blocks also writes each run's per-block SM, start and end (ns) beside OUT.json, as
    OUT-BXxBYxBZ-FXxFYxFZ-RUN.npz (for replays of the L1 by block, offline)
    CONFIG = bx,by,bz/fx,fy,fz (for example 1,64,4/1,1,1)
  bench/block-placement.py --summary OUT.json
  bench/block-placement.py --replay RUN.npz DOMAIN BLOCK/FOLD star:R|box:R ELEM_BYTES [SMS]
    replays the L1s of one saved run: on each of the first SMS SMs (default 16), its blocks in
    the order they started, each reading at its start every input sector of its tile (rows R
    ghost layers wide, unpadded, as the emitters lay them out), into an LRU of sectors of the
    usual L1 (224 KiB), twice as large per TPC (the two SMs together) and unbounded; prints the
    share of the sectors read that the SM already held (what co-resident and earlier blocks save)
"""
import json
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import check_twin, emit_cuda, provenance, twin_fields  # noqa: E402


def instrument(src):
    """The source with a record per warp: SM, global timer at the start and at the end."""
    lines = src.split("\n")
    sig = next(i for i, l in enumerate(lines) if l.startswith('extern "C" __global__'))
    line = lines[sig].rstrip()
    assert line.endswith(")"), line
    lines[sig] = line[:-1] + ", unsigned long long* __restrict__ bp_rec)"
    prologue = """
    const unsigned bp_lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned bp_wpb = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
    const unsigned long long bp_blk = blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    unsigned long long* bp_r = bp_rec + (bp_blk * bp_wpb + bp_lin / 32) * 3;
    if (bp_lin % 32 == 0) {
        unsigned id; unsigned long long t;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
        bp_r[0] = id; bp_r[1] = t;
    }"""
    body = lines.index("{", sig)
    lines.insert(body + 1, prologue)
    end = max(i for i, l in enumerate(lines) if l == "}")
    lines.insert(end, '    if (bp_lin % 32 == 0) { unsigned long long t; '
                      'asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory"); bp_r[2] = t; }')
    return "\n".join(lines)


def row_offsets(rows):
    """The (dy, dz) rows a point reads for `--rows star:R` or `box:R` (see [`offsets3`])."""
    return {(dy, dz) for _, dy, dz in offsets3(rows)[0]}


def rows_from_sm(sm, start, end, grid, offsets, windows=(0.0, 0.5, 1.0, 2.0), samples=4000):
    """For tiles one row tall and deep: per window W (median durations), the share of a block's
    input rows that a block on the same SM also reads and that ran while it did or ended at most
    W before it started."""
    import numpy as np

    gx, gy, gz = grid
    nb = len(sm)
    med = float(np.median(end - start))
    rng = np.random.default_rng(1)
    reach = max(max(abs(a), abs(b)) for a, b in offsets)
    shares = {w: [] for w in windows}
    for b in rng.choice(nb, min(nb, samples), replace=False):
        by, bz = (b // gx) % gy, b // (gx * gy)
        rows = {(by + a, bz + c) for a, c in offsets}
        # Candidates: the blocks of the same x whose rows can meet these.
        found = {w: set() for w in windows}
        for dz in range(-2 * reach, 2 * reach + 1):
            for dy in range(-2 * reach, 2 * reach + 1):
                ny, nz = by + dy, bz + dz
                if (dy, dz) == (0, 0) or not (0 <= ny < gy and 0 <= nz < gz):
                    continue
                n = b + dy * gx + dz * gx * gy
                if sm[n] != sm[b] or start[n] > end[b]:
                    continue
                common = rows & {(ny + a, nz + c) for a, c in offsets}
                for w in windows:
                    if end[n] >= start[b] - w * med:
                        found[w] |= common
        for w in windows:
            shares[w].append(len(found[w]) / len(rows))
    return {str(w): float(np.mean(v)) for w, v in shares.items()}


def analyse(rec, wpb, grid, sms, offsets=None):
    """Placement statistics of one launch from its per-warp records."""
    import numpy as np

    nb = grid[0] * grid[1] * grid[2]
    rec = rec.reshape(nb, wpb, 3).astype(np.int64)
    sm = rec[:, 0, 0]
    start = rec[:, :, 1].min(axis=1)
    end = rec[:, :, 2].max(axis=1)
    ids = np.arange(nb)
    gx, gy, _ = grid

    def together(step, ok):
        a = ids[ok]
        b = a + step
        same = (sm[a] == sm[b]) & (start[a] < end[b]) & (start[b] < end[a])
        return float(same.mean()) if len(a) else None

    x_ok = (ids % gx) < gx - 1
    y_ok = ((ids // gx) % gy < gy - 1)
    z_ok = ids + gx * gy < nb
    same_sm = {"x": together(1, x_ok), "y": together(gx, y_ok & (ids + gx < nb)),
               "z": together(gx * gy, z_ok)}
    # Blocks resident on the same SM when each block starts: differences in launch order.
    delta = Counter()
    rng = np.random.default_rng(0)
    for b in rng.choice(nb, min(nb, 4000), replace=False):
        on = np.nonzero((sm == sm[b]) & (start <= start[b]) & (end > start[b]) & (ids != b))[0]
        delta.update((on - b).tolist())
    # Blocks that start before the first one ends make up the first wave.
    first = np.sort(ids[start < end.min()])
    fw = sm[first]
    nsm = len(np.unique(sm))
    rr = float(np.mean(fw[nsm:] == fw[:-nsm])) if len(fw) > nsm else None
    prev = float(np.mean(fw[1:] == fw[:-1])) if len(fw) > 1 else None
    # Time order: block durations, and how far apart in time blocks start that are a given
    # distance apart in launch order (next in x, y, z, and one first wave later), in units of the
    # median duration. Lockstep waves would give 0 within a wave and 1 a wave apart.
    dur = (end - start).astype(np.float64)
    med = float(np.median(dur))
    timing = {"duration_ns": [float(np.percentile(dur, q)) for q in (10, 50, 90)], "start_gap": {}}
    for name, step in (("x", 1), ("y", gx), ("z", gx * gy), ("wave", len(first))):
        if 0 < step < nb:
            gap = (start[step:] - start[:-step]) / med
            timing["start_gap"][name] = {"step": int(step),
                                         "q10_50_90": [float(np.percentile(gap, q)) for q in (10, 50, 90)]}
    extra = {}
    if offsets and grid[0] >= 1:
        extra["rows_from_sm"] = rows_from_sm(sm, start, end, grid, offsets)
    return {**extra, "same_sm": same_sm, "timing": timing,
            "delta_top": [[int(d), int(c)] for d, c in delta.most_common(12)],
            "delta_samples": 4000 if nb > 4000 else nb,
            "first_wave_blocks": int(len(first)), "sms_used": nsm,
            "round_robin": {"same_as_minus_sms": rr, "same_as_previous": prev},
            "first_wave_sm": fw.tolist(), "first_wave_ids": first.tolist()[:64]}


def save_blocks(path, rec, wpb, nb):
    """The per-block SM, start and end of one launch's records, as an .npz at `path`."""
    import numpy as np

    r = rec.reshape(nb, wpb, 3).astype(np.int64)
    np.savez_compressed(path, sm=r[:, 0, 0].astype(np.int16), start=r[:, :, 1].min(axis=1),
                        end=r[:, :, 2].max(axis=1))


def measure(binary, out_path, kernel, dtype, domain, configs, rows=None, keep=False):
    import cupy as cp

    dev = cp.cuda.runtime.getDeviceProperties(0)
    sms = dev["multiProcessorCount"]
    results = []
    for cfg in configs:
        block, fold = [[int(v) for v in p.split(",")] for p in cfg.split("/")]
        src, grid, ext, name = emit_cuda(binary, kernel, block, fold, dtype, domain)
        kern = cp.RawKernel(instrument(src), name)
        u, v = twin_fields(cp, ext, dtype)
        threads = block[0] * block[1] * block[2]
        wpb = (threads + 31) // 32
        nb = grid[0] * grid[1] * grid[2]
        rec = cp.zeros(nb * wpb * 3, dtype=cp.uint64)
        kern(tuple(grid), tuple(block), (u, v, rec))
        err = check_twin(cp, u, v, src, dtype, f"{block} fold {fold}")
        runs = []
        for run in range(2):
            rec.fill(0)
            kern(tuple(grid), tuple(block), (u, v, rec))
            cp.cuda.runtime.deviceSynchronize()
            if keep:
                tag = "x".join(map(str, block)) + "-" + "x".join(map(str, fold))
                save_blocks(f"{os.path.splitext(out_path)[0]}-{tag}-{run}.npz",
                            cp.asnumpy(rec), wpb, nb)
            flat = block[1] * fold[1] == 1 and block[2] * fold[2] == 1
            runs.append(analyse(cp.asnumpy(rec), wpb, grid, sms,
                                row_offsets(rows) if rows and flat else None))
        bps = kern.attributes  # registers and limits, for the record
        results.append({"block": block, "fold": fold, "grid": grid, "max_rel_error": err,
                        "registers": bps["num_regs"], "runs": runs})
        a = runs[0]
        print(f"{block} fold {fold} grid {grid}: same SM x/y/z {a['same_sm']}, first wave "
              f"{a['first_wave_blocks']} blocks, SM(i)=SM(i-SMs) {a['round_robin']['same_as_minus_sms']}, "
              f"SM(i)=SM(i-1) {a['round_robin']['same_as_previous']}, delta {a['delta_top'][:6]}, "
              f"first SMs {a['first_wave_sm'][:24]}, rows from SM {a.get('rows_from_sm')}", flush=True)
    json.dump({**provenance(cp), "sms": sms, "kernel": kernel, "dtype": dtype, "domain": domain,
               "rows": rows, "results": results},
              open(out_path, "w"))


def summary(path):
    d = json.load(open(path))
    print(f"{d['device']} ({d['sms']} SMs), {d['kernel'].split('/')[-1]} {d['dtype']} {d['domain']}\n")
    print("| block | fold | grid | same SM as x / y / z neighbour | first wave: SM(i) = SM(i − SMs) | SM(i) = SM(i − 1) | most frequent launch-order gaps to co-resident blocks |")
    print("|---|---|---|---|---|---|---|")
    for r in d["results"]:
        a = r["runs"][0]
        s = a["same_sm"]
        f = lambda v: "—" if v is None else f"{v:.2f}"  # noqa: E731
        gaps = ", ".join(f"{g:+d}" for g, _ in a["delta_top"][:6])
        print(f"| {'×'.join(map(str, r['block']))} | {'×'.join(map(str, r['fold']))} | "
              f"{'×'.join(map(str, r['grid']))} | {f(s['x'])} / {f(s['y'])} / {f(s['z'])} | "
              f"{f(a['round_robin']['same_as_minus_sms'])} | {f(a['round_robin']['same_as_previous'])} | {gaps} |")
    shared = [r for r in d["results"] if r["runs"][0].get("rows_from_sm")]
    if shared:
        print(f"\nInput rows ({d.get('rows')}) that another block on the same SM read while the "
              "block ran, or ended at most W median durations before it started (runs[0]):\n")
        print("| block | fold | W = 0 | 0.5 | 1 | 2 |")
        print("|---|---|---|---|---|---|")
        for r in shared:
            v = r["runs"][0]["rows_from_sm"]
            print(f"| {'×'.join(map(str, r['block']))} | {'×'.join(map(str, r['fold']))} | "
                  + " | ".join(f"{v[k]:.3f}" for k in ("0.0", "0.5", "1.0", "2.0")) + " |")
    print("\nTime order (runs[0]): block duration, and the gap in start time between blocks a step "
          "apart in launch order, in median durations (10th / 50th / 90th percentile).\n")
    print("| block | fold | duration µs (p10 / p50 / p90) | x | y | z | one first wave |")
    print("|---|---|---|---|---|---|---|")
    for r in d["results"]:
        t = r["runs"][0].get("timing")
        if not t:
            continue
        g = t["start_gap"]
        cell = lambda k: (" / ".join(f"{v:.2f}" for v in g[k]["q10_50_90"])  # noqa: E731
                          + f" (step {g[k]['step']})") if k in g else "—"
        print(f"| {'×'.join(map(str, r['block']))} | {'×'.join(map(str, r['fold']))} | "
              f"{' / '.join(f'{v / 1e3:.1f}' for v in t['duration_ns'])} | {cell('x')} | "
              f"{cell('y')} | {cell('z')} | {cell('wave')} |")


def offsets3(rows):
    """The (dx, dy, dz) a point reads for `star:R` (the axes) or `box:R` (the cube)."""
    kind, r = rows.split(":")
    r = int(r)
    span = range(-r, r + 1)
    if kind == "star":
        return sorted({(d, 0, 0) for d in span} | {(0, d, 0) for d in span}
                      | {(0, 0, d) for d in span}), r
    if kind == "box":
        return [(a, b, c) for a in span for b in span for c in span], r
    sys.exit(f"rows must be star:R or box:R, not {rows}")


def replay(npz, domain, cfg, rows, elem, sms=16, sector=32, l1_bytes=224 << 10):
    """Shares of the input sectors a block reads that its SM's L1 (or its TPC's two, or an
    unbounded one) already held, replaying the saved placement (see the usage)."""
    import numpy as np
    from collections import OrderedDict

    d = np.load(npz)
    sm, start = d["sm"].astype(np.int64), d["start"]
    block, fold = [[int(v) for v in p.split(",")] for p in cfg.split("/")]
    tile = [block[i] * fold[i] for i in range(3)]
    dom = [int(v) for v in domain.split(",")]
    grid = [-(-dom[i] // tile[i]) for i in range(3)]
    offs, g = offsets3(rows)
    ext = [n + 2 * g for n in dom]
    pts = np.stack(np.meshgrid(*[np.arange(t) for t in tile], indexing="ij"), -1).reshape(-1, 3)
    reads = (pts[:, None, :] + np.array(offs)[None, :, :]).reshape(-1, 3)
    out = {}
    for label, key, cap in (("SM", sm, l1_bytes // sector), ("TPC", sm // 2, 2 * l1_bytes // sector),
                            ("unbounded", sm, None)):
        chosen = set(np.unique(key)[:sms].tolist())
        order = [b for b in np.lexsort((np.arange(len(sm)), start)) if key[b] in chosen]
        caches = {}
        total = hits = 0
        for b in order:
            o = np.array([b % grid[0], (b // grid[0]) % grid[1], b // (grid[0] * grid[1])]) * tile
            q = reads + o + g
            ok = (q[:, 0] < ext[0]) & (q[:, 1] < ext[1]) & (q[:, 2] < ext[2])
            q = q[ok]
            secs = np.unique(((q[:, 2] * ext[1] + q[:, 1]) * ext[0] + q[:, 0]) * elem // sector)
            c = caches.setdefault(int(key[b]), OrderedDict())
            for sct in secs.tolist():
                total += 1
                if sct in c:
                    hits += 1
                    c.move_to_end(sct)
                else:
                    c[sct] = None
                    if cap is not None and len(c) > cap:
                        c.popitem(last=False)
        out[label] = hits / total
        print(f"{label}: {hits / total:.3f} of {total} sectors already held", flush=True)
    return out


if __name__ == "__main__":
    a = sys.argv[1:]
    if a and a[0] == "--summary":
        summary(a[1])
    elif a and a[0] == "--replay" and len(a) in (6, 7):
        replay(a[1], a[2], a[3], a[4], int(a[5]), *(int(x) for x in a[6:]))
    elif len(a) >= 6:
        rows = None
        if "--rows" in a:
            i = a.index("--rows")
            rows = a[i + 1]
            row_offsets(rows)
            a = a[:i] + a[i + 2:]
        keep = "--save-blocks" in a
        a = [x for x in a if x != "--save-blocks"]
        measure(a[0], a[1], a[2], a[3], a[4], a[5:], rows, keep)
    else:
        sys.exit(__doc__)

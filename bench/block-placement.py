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
  and one first wave apart in launch order, in median block durations (lockstep waves: 0 and 1).

usage (on a machine with an NVIDIA GPU, CuPy and the stencilscope binary):
  bench/block-placement.py BIN OUT.json KERNEL.toml DTYPE DOMAIN CONFIG...
    CONFIG = bx,by,bz/fx,fy,fz (for example 1,64,4/1,1,1)
  bench/block-placement.py --summary OUT.json
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


def analyse(rec, wpb, grid, sms):
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
    return {"same_sm": same_sm, "timing": timing,
            "delta_top": [[int(d), int(c)] for d, c in delta.most_common(12)],
            "delta_samples": 4000 if nb > 4000 else nb,
            "first_wave_blocks": int(len(first)), "sms_used": nsm,
            "round_robin": {"same_as_minus_sms": rr, "same_as_previous": prev},
            "first_wave_sm": fw.tolist(), "first_wave_ids": first.tolist()[:64]}


def measure(binary, out_path, kernel, dtype, domain, configs):
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
        for _ in range(2):
            rec.fill(0)
            kern(tuple(grid), tuple(block), (u, v, rec))
            cp.cuda.runtime.deviceSynchronize()
            runs.append(analyse(cp.asnumpy(rec), wpb, grid, sms))
        bps = kern.attributes  # registers and limits, for the record
        results.append({"block": block, "fold": fold, "grid": grid, "max_rel_error": err,
                        "registers": bps["num_regs"], "runs": runs})
        a = runs[0]
        print(f"{block} fold {fold} grid {grid}: same SM x/y/z {a['same_sm']}, first wave "
              f"{a['first_wave_blocks']} blocks, SM(i)=SM(i-SMs) {a['round_robin']['same_as_minus_sms']}, "
              f"SM(i)=SM(i-1) {a['round_robin']['same_as_previous']}, delta {a['delta_top'][:6]}, "
              f"first SMs {a['first_wave_sm'][:24]}", flush=True)
    json.dump({**provenance(cp), "sms": sms, "kernel": kernel, "dtype": dtype, "domain": domain, "results": results},
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


if __name__ == "__main__":
    a = sys.argv[1:]
    if a and a[0] == "--summary":
        summary(a[1])
    elif len(a) >= 6:
        measure(a[0], a[1], a[2], a[3], a[4], a[5:])
    else:
        sys.exit(__doc__)

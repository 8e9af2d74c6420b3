#!/usr/bin/env python3
"""Calibration of the model against measured oracle sweeps (issue 7).

usage: bench/calibrate-model.py SUMMARY_DIR [SUMMARY_DIR ...] [--counters DIR] [--detail NAME]

Each SUMMARY_DIR holds the per-sweep `NAME.summary.json` of `stencilscope bench summarize --out DIR
bench/results/<gpu>/sweeps/measured/*.sweep.json` (each point carries the model's level times,
volumes, registers, occupancy and wave factor); give the H200 and the H100 ones for the
leave-one-GPU-out checks. Prints, per sweep:

1. the ranking figures (top-1 and best-of-top-5 % of the oracle, Spearman, Kendall τ-b, geomean
   relative error), as `bench summarize` computes them;
2. predicted over measured time, median per group: predicted limiter, fold, folded points,
   threads per block, bx, resident warps per SM;
3. latency hiding by resident warps (src/model `latency_hiding`, the DRAM time times
   (1 + w_h/w)/(1 + w_h/w_max), w_h = DRAM bandwidth × latency / (SMs × bytes in flight per
   warp)): the model's factor is taken out with the machine file and the bytes in flight per
   warp chosen again, leave-one-GPU-out (fit on one GPU's sweeps, score on the other's) and
   leave-one-sweep-out over all sweeps;
4. leave-one-sweep-out of the soft-max exponent.

The register estimate is checked against the compiled kernels by `tests/model_registers.rs`
(`cargo test --test model_registers -- --nocapture` prints every configuration).

--counters DIR: the hardware-counter reports (bench/results/h200/counters): the highest sustained
rates per level (a lower bound on each peak), and the time over the soft maximum of the level
times from the *measured* volumes against resident warps (the latency-hiding fit; volume errors
cannot enter it).
"""

import argparse
import glob
import json
import math
import os
import statistics
import tomllib
from collections import defaultdict

SOFTMAX_P = 6.0  # src/model OVERLAP_EXPONENT


def cfg_name(c):
    return "x".join(map(str, c["block"])) + "/" + "x".join(map(str, c["fold"]))


def ranks(v):
    idx = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[idx[j + 1]] == v[idx[i]]:
            j += 1
        for k in range(i, j + 1):
            r[idx[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    c = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    return c / math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))


def kendall(a, b):
    conc = disc = ta = tb = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ta += 1
            elif db == 0:
                tb += 1
            elif (da > 0) == (db > 0):
                conc += 1
            else:
                disc += 1
    return (conc - disc) / math.sqrt((conc + disc + ta) * (conc + disc + tb))


LAUNCH_OVERHEAD_S = 3e-6  # the H200 and H100 presets' launch overhead


MODEL_WARP_BYTES = 768.0  # src/model WARP_BYTES_IN_FLIGHT
_MACHINES = {}


def machine(s):
    name = s["machine"]
    if name not in _MACHINES:
        # A preset's name, or the path of a machine file (`bench summarize --machine FILE`).
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "machines")
        path = name if name.endswith(".toml") else os.path.join(here, name + ".toml")
        with open(path, "rb") as f:
            _MACHINES[name] = tomllib.load(f)
    return _MACHINES[name]


def hiding(s, warps, warp_bytes):
    """src/model latency_hiding; warp_bytes None or 0: no hiding factor."""
    if not warp_bytes:
        return 1.0
    m = machine(s)
    wh = m["dram_bandwidth"] * m["dram_latency_ns"] * 1e-9 / (m["sms"] * warp_bytes)
    return (1 + wh / max(1, warps)) / (1 + wh / m["max_warps_per_sm"])


def predict(s, p, softmax_p=SOFTMAX_P, warp_bytes=MODEL_WARP_BYTES):
    """The model's time from its own level times (the formula of src/model), with the DRAM
    time's latency-hiding factor recomputed for `warp_bytes` in flight per warp."""
    t = p["times"]
    w = p["occupancy"]["warps_per_sm"]
    d = t["dram"] / hiding(s, w, MODEL_WARP_BYTES) * hiding(s, w, warp_bytes)
    # DRAM bandwidth and DRAM latency (Little's law) bound the same transfers: the larger enters.
    dram = max(d, t["latency"])
    soft = sum(x**softmax_p for x in [dram, t["l2"], t["l1"], t["compute"]]) ** (1 / softmax_p)
    return soft * p["wave_factor"] + LAUNCH_OVERHEAD_S


def figures(s, pred):
    pts = s["points"]
    meas = [p["measured_s"] for p in pts]
    order = sorted(range(len(pts)), key=lambda i: (pred[i], cfg_name(pts[i]["config"])))
    oracle = min(meas)
    top1 = 100 * oracle / meas[order[0]]
    top5 = 100 * oracle / min(meas[i] for i in order[:5])
    ge = math.exp(
        sum(math.log(max(abs(a - b) / b, 1e-12)) for a, b in zip(pred, meas)) / len(pts)
    )
    return top1, top5, spearman(pred, meas), kendall(pred, meas), ge, pts[order[0]]["config"]


def fig_line(name, f):
    return "  %-22s top-1 %5.1f%%  top-5 %5.1f%%  Spearman %5.2f  Kendall %5.2f  geomean err %.3f  choice %s" % (
        name, f[0], f[1], f[2], f[3], f[4], cfg_name(f[5]))


def median_line(S, fig):
    t1 = [fig[s["name"]][0] for s in S]
    sp = [fig[s["name"]][2] for s in S]
    return "  median top-1 %.1f%% (lowest %.1f%%), median Spearman %.2f (lowest %.2f)" % (
        statistics.median(t1), min(t1), statistics.median(sp), min(sp))


def groups(s, pred):
    g = defaultdict(list)
    for p, q in zip(s["points"], pred):
        c = p["config"]
        b, f = c["block"], c["fold"]
        r = q / p["measured_s"]
        g[("limiter", p["limiter"])].append((r, p))
        g[("fold", "x".join(map(str, f)))].append((r, p))
        g[("points", f[0] * f[1] * f[2])].append((r, p))
        g[("threads", b[0] * b[1] * b[2])].append((r, p))
        g[("bx", b[0])].append((r, p))
        g[("warps/SM", p["occupancy"]["warps_per_sm"])].append((r, p))
    return g


def print_groups(s, pred):
    g = groups(s, pred)
    for k in sorted(g, key=lambda k: (k[0], str(k[1]).zfill(8))):
        rs = [r for r, _ in g[k]]
        ms = [p["measured_s"] for _, p in g[k]]
        print("    %-9s %-8s n=%3d  pred/meas median %.2f (%.2f–%.2f)  measured median %7.1f µs, best %7.1f µs" % (
            k[0], k[1], len(rs), statistics.median(rs), min(rs), max(rs),
            1e6 * statistics.median(ms), 1e6 * min(ms)))


def counters_section(d):
    print("\n== hardware counters: sustained rates and latency hiding (measured volumes)")
    rows = []
    for f in sorted(glob.glob(os.path.join(d, "*.json"))):
        rep = json.load(open(f))
        if rep.get("format") != "stencilscope-counters":
            continue
        n = rep["updates"]
        sms = rep["device"]["sms"]
        hi = [0, 0, 0]
        for r in rep["records"]:
            m, t, c = r["measured"], r["duration_s"], r["config"]
            l1 = m["l1_wavefronts"] * n / (t * sms * 1.98e9)
            l2 = (m["l2_load"] + m["l2_store"]) * n / t
            dr = (m["dram_load"] + m["dram_store"]) * n / t
            hi = [max(hi[0], l1), max(hi[1], l2), max(hi[2], dr)]
            threads = c["block"][0] * c["block"][1] * c["block"][2]
            warps = r["blocks_per_sm"] * ((threads + 31) // 32)
            levels = [
                (m["dram_load"] + m["dram_store"]) * n / 4.18e12,  # the f64 copy
                (m["l2_load"] + m["l2_store"]) * n / 10e12,
                m["l1_wavefronts"] * n / (sms * 1.98e9),
            ]
            soft = sum(x**SOFTMAX_P for x in levels) ** (1 / SOFTMAX_P)
            rows.append((os.path.basename(f)[:-5], rep["dtype"], warps, t / soft))
        print("  %-34s highest sustained: L1 %.2f wavefronts/cycle/SM, L2 %.2f TB/s, DRAM %.2f TB/s" % (
            os.path.basename(f), hi[0], hi[1] / 1e12, hi[2] / 1e12))
    print("  time over the soft maximum of the measured-volume level times, against resident warps,")
    print("  and the fit 1 + w_h/w (rms of the log residual after the best common scale):")
    for sel in ("star3d_r4-f64", "star3d_r4-f64-768"):
        xs = [(w, q) for name, _, w, q in rows if name == sel]
        if not xs:
            continue
        byw = defaultdict(list)
        for w, q in xs:
            byw[w].append(q)
        print("   ", sel, " ".join("%dw:%.2f" % (w, statistics.median(byw[w])) for w in sorted(byw)))
        for wh in (0, 2, 4, 6, 8, 10, 12, 16):
            lc = sum(math.log(q / (1 + wh / w)) for w, q in xs) / len(xs)
            res = math.sqrt(sum((math.log(q / (1 + wh / w)) - lc) ** 2 for w, q in xs) / len(xs))
            print("      w_h %2d f64 warps: scale %.2f, rms log residual %.3f" % (wh, math.exp(lc), res))


def score(fs):
    return (statistics.median(f[0] for f in fs), min(f[0] for f in fs),
            statistics.median(f[2] for f in fs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("summaries", nargs="+")
    ap.add_argument("--counters")
    ap.add_argument("--detail", action="append", default=[])
    a = ap.parse_args()
    by_dir = {}
    for d in a.summaries:
        by_dir[d] = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(d, "*.summary.json")))]
    S = [s for v in by_dir.values() for s in v]

    def label(d):
        return by_dir[d][0]["device"].replace("NVIDIA ", "") if by_dir[d] else d

    def tag(s):
        return "%s %s" % (s["device"].replace("NVIDIA ", "")[:9], s["name"])

    print("== the model as it is")
    fig = {}
    for d, sweeps in by_dir.items():
        print(" ", d)
        for s in sweeps:
            fig[tag(s)] = figures(s, [p["predicted_s"] for p in s["points"]])
            print(fig_line(s["name"], fig[tag(s)]))
        print("  median top-1 %.1f%% (lowest %.1f%%), median Spearman %.2f" % score(
            [fig[tag(s)] for s in sweeps]))
    for s in S:
        print("  %s: predicted / measured by group" % tag(s))
        print_groups(s, [p["predicted_s"] for p in s["points"]])

    def figs(sweeps, **kw):
        return [figures(s, [predict(s, p, **kw) for p in s["points"]]) for s in sweeps]

    grids = {
        "warp_bytes": [0, 3072, 2048, 1536, 1024, 768, 512, 384],
        "softmax_p": [2, 3, 4, 6, 8],
    }
    for what, grid in grids.items():
        print("\n== %s: median top-1 / lowest top-1 / median Spearman per GPU" % what)
        table = {d: {v: score(figs(sw, **{what: v})) for v in grid} for d, sw in by_dir.items()}
        for v in grid:
            print("  %-6s " % v + " | ".join(
                "%s %.1f / %.1f / %.2f" % (label(d), *table[d][v]) for d in by_dir))
        if len(by_dir) > 1:
            print("  leave-one-GPU-out (chosen by median top-1, lowest top-1, median Spearman):")
            for fit in by_dir:
                best = max(grid, key=lambda v: table[fit][v])
                for test in by_dir:
                    if test != fit:
                        print("    fit on %s → %s; on %s: %.1f / %.1f / %.2f" % (
                            label(fit), best, label(test), *table[test][best]))
        outs = []
        for i, o in enumerate(S):
            rest = S[:i] + S[i + 1:]
            best = max(grid, key=lambda v: score(figs(rest, **{what: v})))
            f = figs([o], **{what: best})[0]
            outs.append(f)
            print("  leave-one-sweep-out: without %-40s → %-5s; on it: top-1 %5.1f%%, Spearman %5.2f" % (
                tag(o), best, f[0], f[2]))
        print("  leave-one-sweep-out median top-1 %.1f%%, lowest %.1f%%, median Spearman %.2f" % score(outs))

    for name in a.detail:
        for s in (s for s in S if s["name"] == name):
            print("\n== %s: every configuration, by measured time" % tag(s))
            for p in sorted(s["points"], key=lambda p: p["measured_s"]):
                t = p["times"]
                print("  %-14s rank %3d  pred %7.1f  meas %7.1f µs | dram %6.1f l2 %6.1f l1 %6.1f | regs %3d warps %2d wave %.3f" % (
                    cfg_name(p["config"]), p["rank"], 1e6 * p["predicted_s"], 1e6 * p["measured_s"],
                    1e6 * t["dram"], 1e6 * t["l2"], 1e6 * t["l1"], p["registers"],
                    p["occupancy"]["warps_per_sm"], p["wave_factor"]))

    if a.counters:
        counters_section(a.counters)


if __name__ == "__main__":
    main()

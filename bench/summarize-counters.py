#!/usr/bin/env python3
"""Tables for bench/results/<gpu>/counters/README.md from the JSON that `stencilscope counters`
writes: per sweep and level the error distribution, and the diagnostics that tell which model
assumption fails (see the README for what each column means).

usage: bench/summarize-counters.py DIR [NAME ...]     (NAME: sweep stems; default: every *.json)
"""
import json
import statistics
import sys
from pathlib import Path

LEVELS = ["l1_load_requests", "l1_wavefronts", "l2_load", "l2_store", "dram_load", "dram_store"]
NAMES = ["L1 load requests", "L1 wavefronts", "L2 load", "L2 store", "DRAM load", "DRAM store"]


def pct(v):
    return "–" if v is None else f"{v * 100:+.1f}%"


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    pos = q * (len(xs) - 1)
    i = int(pos)
    f = pos - i
    return xs[i] + f * (xs[i + 1] - xs[i]) if i + 1 < len(xs) else xs[i]


def cfg(r):
    c = r["config"]
    return "x".join(map(str, c["block"])) + " f" + "x".join(map(str, c["fold"]))


def summary(name, s):
    print(f"\n### {name}: {s['kernel']} ({s['dtype']}), domain {s['domain']['size']}, "
          f"{len(s['records'])} configurations")
    if s.get("carveout") is not None or s.get("shared_config_bytes") is not None:
        print(f"\ncarve-out preference {s.get('carveout')}, shared-memory configuration "
              f"{s.get('shared_config_bytes')} B")
    print("\n| level | n | median | p10 | p90 | median abs | p90 abs | max abs | within ±10% |")
    print("|---|---|---|---|---|---|---|---|---|")
    for e in s["summary"]:
        q = e["signed_quantiles"]
        name = NAMES[LEVELS.index(e["level"])]
        print(f"| {name} | {e['count']} | {pct(q[2])} | {pct(q[1])} | {pct(q[3])} | "
              f"{pct(e['median_abs'])} | {pct(e['p90_abs'])} | {pct(e['max_abs'])} | "
              f"{e['within_tolerance'] * 100:.0f}% |")


def diagnostics(name, s):
    n = s["updates"]
    rec = s["records"]
    print(f"\n#### Diagnostics: {name}")

    def m(r, k):
        return r["counters"].get(k)

    # Fold: the compiler shares loads between a thread's folded points.
    for label, sel in [("fold 1", lambda r: r["config"]["fold"] == [1, 1, 1]),
                       ("folded", lambda r: r["config"]["fold"] != [1, 1, 1])]:
        errs = [r["errors"][0] for r in rec if sel(r) and r["errors"][0] is not None]
        if errs:
            print(f"- L1 load requests, {label}: {len(errs)} configurations, median "
                  f"{pct(statistics.median(errs))}, max abs {pct(max(map(abs, errs)))}")
    # Load instructions per update measured against the IR's accesses.
    reqs = [(r, m(r, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")) for r in rec]
    reqs = [(r, q * 32 / n) for r, q in reqs if q]
    if reqs:
        f1 = [q for r, q in reqs if r["config"]["fold"] == [1, 1, 1]]
        fo = [q for r, q in reqs if r["config"]["fold"] != [1, 1, 1]]
        if f1:
            print(f"- global load instructions per update (warp requests × 32 / LUP): fold 1 "
                  f"median {statistics.median(f1):.2f}")
        if fo:
            print(f"  folded median {statistics.median(fo):.2f} (min {min(fo):.2f})")
    # L2 load: L1 misses measured against the estimate.
    miss = [(r, m(r, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum")) for r in rec]
    miss = [(r, x * 32 / n) for r, x in miss if x]
    if miss:
        ratio = [r["measured"]["l2_load"] / x for r, x in miss if x > 0]
        print(f"- L2 load / L1 lookup-miss sectors: median {statistics.median(ratio):.3f}")
    spills = [r for r in rec
              if (m(r, "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum") or 0) > 0
              or (m(r, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum") or 0) > 0]
    if spills:
        print(f"- register spills (local-memory sectors) in {len(spills)}: "
              + ", ".join(cfg(r) for r in spills))
    # DRAM store: within the kernel and written back after it.
    k = [m(r, "dram__bytes_write.sum") / n for r in rec if m(r, "dram__bytes_write.sum")]
    a = [r["flush_counters"]["dram__bytes_write.sum"] / n for r in rec
         if r.get("flush_counters") and "dram__bytes_write.sum" in r["flush_counters"]]
    if k and a:
        print(f"- DRAM store within the kernel: median {statistics.median(k):.2f} B/LUP; written "
              f"back after it (eviction kernel): median {statistics.median(a):.2f} B/LUP")
    fab = [(r, m(r, "lts__t_sectors_srcunit_ltcfabric.sum")) for r in rec]
    fab = [(r, x * 32 / n) for r, x in fab if x is not None]
    if fab:
        v = [x / r["measured"]["l2_load"] for r, x in fab if r["measured"]["l2_load"]]
        print(f"- L2 fabric (between the two L2 partitions) sectors / L2 load: median "
              f"{statistics.median(v):.2f}, range {min(v):.2f}–{max(v):.2f}")
    print("\n| configuration | regs | L2 load est/meas | DRAM load est/meas | DRAM store est/meas "
          "(in kernel + after) | L1 req est/meas |")
    print("|---|---|---|---|---|---|")
    worst = sorted(rec, key=lambda r: -max(abs(r["errors"][i] or 0) for i in (2, 4, 5)))[:8]
    for r in worst:
        e, me = r["estimate"], r["measured"]
        kin = (m(r, "dram__bytes_write.sum") or 0) / n
        aft = ((r.get("flush_counters") or {}).get("dram__bytes_write.sum") or 0) / n
        print(f"| {cfg(r)} | {r['registers']} | {e['l2_load']:.1f}/{me['l2_load']:.1f} "
              f"({pct(r['errors'][2])}) | {e['dram_load']:.2f}/{me['dram_load']:.2f} "
              f"({pct(r['errors'][4])}) | {e['dram_store']:.2f}/{me['dram_store']:.2f} "
              f"({kin:.2f} + {aft:.2f}) | {e['l1_load_requests']:.0f}/"
              f"{me['l1_load_requests']:.0f} |")


def main():
    d = Path(sys.argv[1])
    names = sys.argv[2:] or sorted(p.stem for p in d.glob("*.json"))
    for name in names:
        s = json.loads((d / f"{name}.json").read_text())
        summary(name, s)
    for name in names:
        s = json.loads((d / f"{name}.json").read_text())
        diagnostics(name, s)


if __name__ == "__main__":
    main()

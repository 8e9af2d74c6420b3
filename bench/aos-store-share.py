#!/usr/bin/env python3
"""The share of D3Q19 AoS record sectors L2 writes back early, read off the counter sweeps (issue 8).

The visitor charges a block's stores that complete sectors only together (AoS records) a share
`partial_store_loss` of early write-backs: the machine's share for the block's warps, or, where
the compiled order has a thread store into two fold points' records at once, the share for the
SM's resident warps (`footprint::block::partial_store_share`). This script reads what the GPU
lost, per configuration, from two re-analyses of the committed sweeps by
`bench/recheck-counters.sh`: one with the preset (the estimate with the loss) and one with an
experiment file whose `partial_store_loss` is zero (suffix `-step`, the estimate without it):

    implied share = (measured DRAM store - estimate without) / (estimate with - estimate without)
                    * the share the estimate used

It prints one row per folded or multi-warp AoS configuration: warps per block and per SM, the
registers, whether the compiled order interleaves fold points' stores, the mean number of fold
points whose records are open while a store goes out (1: one at a time), and the implied share
against the block's and the SM's share; then the interleaved configurations grouped by the SM's
resident warps.

usage:
  sed 's/^partial_store_loss = \\[\\[.*/partial_store_loss = [[1, 0.0], [32, 0.0]]/' \\
    machines/h100-sxm.toml > /tmp/h100-nopartial.toml
  EXP_FILE=/tmp/h100-nopartial.toml GPU=h100 bench/recheck-counters.sh /tmp/rc0
  bench/aos-store-share.py /tmp/rc0 h100 machines/h100-sxm.toml
(and the same with h200 and machines/h200.toml)
"""
import json
import math
import os
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = "d3q19_srt_pull_aos f32"
LOADS = 19  # instructions 0..18 are the loads, 19..37 the stores
H100 = os.path.join(HERE, "results", "h100", "counters")
H200 = os.path.join(HERE, "results", "h200", "counters")
# sweep: (domain, the compiled orders its estimates follow, as bench/recheck-counters.sh gives)
SWEEPS = {
    "h100": {
        "d3q19_srt_pull-aos": ("256,256,256", f"{H100}/compiled-order/orders.txt"),
        "d3q19_srt_pull-aos-128": (
            "128,128,128", f"{H100}/aos128/raw/d3q19_srt_pull-aos-128-compiled-order.txt"),
        "d3q19_srt_pull-aos-timed": (
            "256,256,256", f"{H100}/timed-twin/raw/d3q19_srt_pull-aos-compiled-order.txt"),
        "d3q19_srt_pull-aos-spill": (
            "256,256,256", f"{H100}/spill/raw/d3q19_srt_pull-aos-compiled-order.txt"),
    },
    "h200": {
        "d3q19_srt_pull-aos": ("256,256,256", f"{H100}/compiled-order/orders-18bdee4.txt"),
        "d3q19_srt_pull-aos-timed": (
            "256,256,256", f"{H200}/timed-twin/raw/d3q19_srt_pull-aos-compiled-order.txt"),
    },
}


def read_orders(path):
    """Configuration key -> [(fold point, instruction)], stack accesses left out."""
    orders = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or ":" not in line:
                continue
            key, seq = line.split(":", 1)
            orders[key.strip()] = [tuple(map(int, t.split(","))) for t in seq.split()
                                   if t[0].isdigit()]
    return orders


def store_overlap(order):
    """(whether a fold point's stores begin before an earlier one's end, the mean number of fold
    points whose stores have begun and not ended at each store)."""
    stores = [(q, f) for q, (f, i) in enumerate(order) if i >= LOADS]
    first, last = {}, {}
    for q, f in stores:
        first.setdefault(f, q)
        last[f] = q
    spans = sorted((first[f], last[f]) for f in first)
    interleaved = any(b[0] < a[1] for a, b in zip(spans, spans[1:]))
    open_ = sum(sum(1 for g in first if first[g] <= q <= last[g]) for q, _ in stores)
    return interleaved, open_ / len(stores)


def share_at(table, warps):
    """The machine's share at `warps`, linear in log2 between its points (as
    `MachineModel::partial_store_share`)."""
    pts = [(math.log2(w), s) for w, s in table]
    x = math.log2(warps)
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return pts[-1][1]


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in SWEEPS:
        sys.exit(__doc__)
    out, gpu, machine = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(machine, "rb") as f:
        table = tomllib.load(f)["partial_store_loss"]
    rows = []
    for sweep, (domain, order_file) in SWEEPS[gpu].items():
        orders = read_orders(order_file)
        with open(os.path.join(out, f"{sweep}.json")) as f:
            with_loss = json.load(f)
        with open(os.path.join(out, f"{sweep}-step.json")) as f:
            without = {json.dumps(r["config"]): r for r in json.load(f)["records"]}
        for r in with_loss["records"]:
            c = r["config"]
            block, fold = ",".join(map(str, c["block"])), ",".join(map(str, c["fold"]))
            warps = math.prod(c["block"]) // 32
            bps = r["blocks_per_sm"]
            e1 = r["estimate"]["dram_store"]
            e0 = without[json.dumps(c)]["estimate"]["dram_store"]
            if e1 - e0 < 1e-6:
                continue
            order = orders.get(f"{KERNEL} {block} {fold} {domain}")
            interleaved, open_ = store_overlap(order) if order else (False, float("nan"))
            block_share, sm_share = share_at(table, warps), share_at(table, warps * bps)
            used = max(block_share, sm_share) if interleaved else block_share
            implied = (r["measured"]["dram_store"] - e0) / (e1 - e0) * used
            rows.append((sweep, block, fold, warps, bps, r["registers"], interleaved, open_,
                         block_share, sm_share, implied, r["errors"][5]))
    rows.sort(key=lambda t: (t[3], t[4], t[0]))
    print("| sweep | block | fold | warps | per SM | registers | interleaved | records open "
          "| block's share | SM's share | implied | DRAM store error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (sweep, b, f, w, bps, regs, inter, op, sb, ssm, imp, err) in rows:
        print(f"| {sweep} | {b} | {f} | {w} | {w * bps} | {regs} | {'yes' if inter else 'no'} "
              f"| {op:.2f} | {sb:.2f} | {ssm:.2f} | {imp:.2f} | {err * 100:+.1f} % |")
    print()
    print("| interleaved, warps per block < 32 | configurations | implied share, range |")
    print("|---|---|---|")
    groups = {}
    for row in rows:
        if row[6] and row[3] < 32:
            groups.setdefault(row[3] * row[4] <= 36, []).append(row[10])
    for small, v in sorted(groups.items(), reverse=True):
        label = "at most 36 warps per SM" if small else "40 or more warps per SM"
        print(f"| {label} | {len(v)} | {min(v):.2f}-{max(v):.2f} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The visitor's own count of sectors partly written at a time against the early write-backs the
counters measured (issue 8, class `partial`).

Needs a build with `bench/prototypes/partial-count.diff` applied: with STENCILSCOPE_PARTIAL_COUNT
set, the visitor prints per configuration the write pairs of the average block and the sectors
every resident block holds partly written at a time (Little's law: each write pair's sector for
the steps between its two writes, times the resident blocks). Run the recheck with that binary,
then this on its OUTDIR:

    STENCILSCOPE_PARTIAL_COUNT=1 GPU=h100 bench/recheck-counters.sh DIR BIN
    bench/partial-count.py DIR [DIR ...]

Prints, for every stencil and D3Q19 SoA configuration with write pairs, the count, the pairs per
stored sector, and the DRAM write beyond the stored sectors per stored sector, measured and
estimated (the early write-backs), sorted by the count.
"""
import json
import math
import re
import sys
from pathlib import Path

LINE = re.compile(
    r"partial-count \[(\d+), (\d+), (\d+)\] \[(\d+), (\d+), (\d+)\] wave (\d+) steps (\d+) "
    r"pairs/block ([\d.]+) sectors/block ([\d.]+) partly-written (\d+)")


def rows(d):
    """`(count, sweep, block, fold, blocks per SM, pairs per sector, measured, estimated)` of the
    recheck in directory `d` (AoS sweeps and those without write pairs left out)."""
    out = []
    for f in sorted(d.glob("*.json")):
        name = f.stem
        log = d / f"{name}.log"
        if name.endswith("-step") or "aos" in name or not log.exists():
            continue
        counts = {}
        for line in log.read_text().splitlines():
            m = LINE.match(line)
            if m:
                g = m.groups()
                # The first estimate of a configuration (a sweep may estimate it again).
                counts.setdefault(tuple(map(int, g[:6])), (float(g[8]), float(g[9]), int(g[10])))
        for r in json.loads(f.read_text())["records"]:
            c = r["config"]
            got = counts.get(tuple(c["block"] + c["fold"]))
            ms = r["measured"].get("dram_store")
            if not got or got[0] == 0 or not ms:
                continue
            pairs, sectors, count = got
            stored = sectors * 32 / math.prod(c["block"] + c["fold"])
            out.append((count, f"{d.name}/{name}", "×".join(map(str, c["block"])),
                        "×".join(map(str, c["fold"])), r["blocks_per_sm"], pairs / sectors,
                        ms / stored - 1, r["estimate"]["dram_store"] / stored - 1))
    return out


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    all_rows = sorted(r for d in sys.argv[1:] for r in rows(Path(d)))
    print("| partly written at a time (sectors) | sweep | block | fold | blocks/SM | pairs per "
          "sector | early write-backs per sector, measured | estimated |")
    print("|---|---|---|---|---|---|---|---|")
    for count, sweep, block, fold, bps, pairs, meas, est in all_rows:
        print(f"| {count} | {sweep} | {block} | {fold} | {bps} | {pairs:.2f} | {meas:+.2f} | "
              f"{est:+.2f} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Two re-analyses of the committed counter sweeps compared, configuration by configuration
(issue 8).

`bench/recheck-counters.sh` prints, per level, how many configurations are within ±10 % of the
counters. A visitor change is judged by which configurations it brings in and which it takes
out, and by how far the others move: this reads the reports of two runs (before and after, same
GPU) and lists, per level, every configuration that crosses the ±10 % line, the totals, and how
many configurations move toward the counters and away from them.

usage: bench/recheck-compare.py BEFORE AFTER [LEVEL ...] [--moved PCT]
  BEFORE, AFTER  OUTDIRs of bench/recheck-counters.sh (the same GPU)
  LEVEL          l2_load, dram_load, dram_store (default: all three)
  --moved PCT    also list configurations whose error moves by more than PCT percentage points
                 without crossing the line (default: only those that cross)
"""
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import LEVELS, TOL, recheck_sweeps  # noqa: E402

DEFAULT = ["l2_load", "dram_load", "dram_store"]


def pairs(before, after):
    """(sweep, record before, record after) for every configuration both runs estimated; the
    sweeps of the ranking's top configurations are left out, as from the recheck's totals."""
    for name in recheck_sweeps(before):
        b, a = Path(before) / f"{name}.json", Path(after) / f"{name}.json"
        if not a.exists():
            continue
        rb, ra = json.load(open(b))["records"], json.load(open(a))["records"]
        for x, y in zip(rb, ra):
            if x["config"] != y["config"]:
                sys.exit(f"{name}: the two runs list other configurations ({x['config']} "
                         f"against {y['config']}); compare runs of the same sweeps")
            if x["errors"] is None or y["errors"] is None:
                continue
            yield name, x, y


def label(name, r):
    c = r["config"]
    return (f"{name} {'×'.join(map(str, c['block']))} fold {'×'.join(map(str, c['fold']))} "
            f"({r['blocks_per_sm']} per SM)")


def compare(before, after, levels, moved):
    rows = list(pairs(before, after))
    if not rows:
        sys.exit(f"no sweep of {before} is in {after}")
    for lv in levels:
        i = LEVELS.index(lv)
        inside = [0, 0]
        came, left, shown = [], [], []
        toward = away = 0
        for name, x, y in rows:
            eb, ea = x["errors"][i], y["errors"][i]
            ib, ia = abs(eb) <= TOL, abs(ea) <= TOL
            inside[0] += ib
            inside[1] += ia
            if abs(ea - eb) > 1e-9:
                toward += abs(ea) < abs(eb)
                away += abs(ea) > abs(eb)
            line = f"  {label(name, x)}: {eb * 100:+.1f} → {ea * 100:+.1f} %"
            if ia and not ib:
                came.append(line)
            elif ib and not ia:
                left.append(line)
            elif moved is not None and abs(ea - eb) * 100 > moved:
                shown.append(line)
        n = len(rows)
        print(f"{lv}: {inside[0]} → {inside[1]} of {n} within ±10 % ({len(came)} in, "
              f"{len(left)} out); {toward} move toward the counters, {away} away")
        for title, lines in (("in", came), ("out", left), ("moved", shown)):
            if lines:
                print(f" {title}:")
                print("\n".join(lines))


def main(argv):
    moved = None
    if "--moved" in argv:
        k = argv.index("--moved")
        try:
            moved = float(argv[k + 1])
        except (IndexError, ValueError):
            sys.exit("--moved takes a number of percentage points, e.g. --moved 5")
        argv = argv[:k] + argv[k + 2:]
    if len(argv) < 2:
        sys.exit(__doc__)
    before, after, levels = argv[0], argv[1], argv[2:] or DEFAULT
    for d in (before, after):
        if not Path(d).is_dir():
            sys.exit(f"{d}: not a directory (give the OUTDIRs of bench/recheck-counters.sh)")
    bad = [lv for lv in levels if lv not in LEVELS]
    if bad:
        sys.exit(f"unknown level {bad[0]}: valid are {', '.join(LEVELS)}")
    compare(before, after, levels, moved)


if __name__ == "__main__":
    main(sys.argv[1:])

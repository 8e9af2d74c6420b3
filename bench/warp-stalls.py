#!/usr/bin/env python3
"""Summarises what `bench/warp-stalls.sh` collected: per kernel, how its global loads are placed in
the SASS (the loads a warp can issue before it first waits for one) and, per configuration, where
its warps spend their cycles (ncu's WarpStateStats and SchedulerStats sections).

usage: bench/warp-stalls.py DIR   (DIR holds *.sass and ncu_*.csv)
"""
import csv
import glob
import os
import re
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__)
d = sys.argv[1]

print("## Load placement in the SASS (nvcc -arch=sm_90 with the NVRTC float options)\n")
print("`L` a global load, `S` a global store, `f` a floating-point instruction, `.` anything else; "
      "the kernel body up to its 300th instruction.\n")
print("| kernel | LDG | loads before the first floating-point instruction | trace |")
print("|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(d, "*.sass"))):
    kinds = ""
    for line in open(f):
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if not m:
            continue
        ins = m.group(1).strip()
        op = ins.split()[1] if ins.startswith("@") else ins.split()[0]
        if op.startswith("LDG"):
            kinds += "L"
        elif op.startswith("STG"):
            kinds += "S"
        elif op[0] in "FDH" and not op.startswith("FLO"):
            kinds += "f"
        else:
            kinds += "."
    first_f = kinds.find("f")
    before = kinds[:first_f].count("L") if first_f >= 0 else kinds.count("L")
    name = os.path.basename(f)[:-5]
    print(f"| {name} | {kinds.count('L')} | {before} | `{kinds[:300]}` |")

print("\n## Where the warps wait (ncu, one launch per configuration)\n")
keys = ["Warp Cycles Per Issued Instruction", "Issued Warp Per Scheduler", "Active Warps Per Scheduler",
        "Eligible Warps Per Scheduler", "Registers Per Thread", "Shared Memory Configuration Size"]
print("| configuration | " + " | ".join(keys) + " | dominant stall (ncu's rule) |")
print("|---|" + "---|" * (len(keys) + 1))
for f in sorted(glob.glob(os.path.join(d, "ncu_*.csv"))):
    vals, stall = {}, ""
    for r in csv.reader(l for l in open(f) if l.startswith('"')):
        if len(r) < 15 or r[0] == "ID":
            continue
        if r[12]:
            vals[r[12]] = r[14]
        elif len(r) >= 18 and r[15] == "CPIStall" and "spends" in r[17]:
            m = re.search(r"spends ([\d.]+) cycles being stalled (.*?)\.", r[17])
            if m:
                stall = f"{m.group(1)} cycles {m.group(2)}"
    name = os.path.basename(f)[4:-4]
    print(f"| {name} | " + " | ".join(vals.get(k, "") for k in keys) + f" | {stall} |")

# The stall reasons per issued instruction (ncu's smsp__average_warps_issue_stalled_*), where the
# CSVs carry them (bench/warp-stalls.sh asks for them since the narrow-tile set).
PREFIX, SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
reasons = ["long_scoreboard", "lg_throttle", "mio_throttle", "short_scoreboard", "not_selected", "wait"]
rows = []
for f in sorted(glob.glob(os.path.join(d, "ncu_*.csv"))):
    vals = {}
    for r in csv.reader(l for l in open(f) if l.startswith('"')):
        if len(r) >= 15 and r[12].startswith(PREFIX) and r[12].endswith(SUFFIX):
            vals[r[12][len(PREFIX):-len(SUFFIX)]] = float(r[14].replace(",", ""))
    if vals:
        rows.append((os.path.basename(f)[4:-4], vals))
if rows:
    print("\n## Cycles a warp stalls per issued instruction, by reason (ncu)\n")
    print("| configuration | " + " | ".join(reasons) + " | all reasons |")
    print("|---|" + "---|" * (len(reasons) + 1))
    for name, vals in rows:
        print(f"| {name} | " + " | ".join(f"{vals.get(k, 0.0):.1f}" for k in reasons)
              + f" | {sum(vals.values()):.1f} |")

#!/usr/bin/env python3
"""The same configurations on two GPUs: where the counters differ and the estimates do not (issue 8).

Reads the reports `bench/recheck-counters.sh` writes for two GPUs (GPU=h100 and GPU=h200 into two
directories) and, for every sweep both hold, pairs the configurations (block and fold) measured on
both. It prints those whose measured level differs by more than TOL between the GPUs while the two
estimates agree within 2 %: the same kernel and launch, the same model figure, another volume.
On the H100 and the H200 (the same SM and L1, the same 50 MB of L2, faster DRAM on the H200) such
a pair says that the volume depends on how fast the memory below answers, which the visitor's
volumes do not take in (the narrow tiles' two regimes, bench/results/h100/counters/README.md).

usage: bench/counters-gpus.py DIR_A DIR_B [LEVEL [TOL]]
  DIR_A, DIR_B  OUTDIRs of bench/recheck-counters.sh for the two GPUs
  LEVEL         l2_load (default), dram_load, dram_store, l1_wavefronts
  TOL           the least relative difference between the GPUs' counters shown (default 0.10)
"""
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import recheck_sweeps  # noqa: E402


def records(d):
    """Per sweep (the experiment files' variants left out), the records by (block, fold)."""
    out = {}
    for name in recheck_sweeps(d):
        s = json.load(open(Path(d) / f"{name}.json"))
        if "records" not in s:
            continue
        out[name] = {(tuple(r["config"]["block"]), tuple(r["config"]["fold"])): r
                       for r in s["records"]}
    return out


def main():
    args = sys.argv[1:]
    if len(args) < 2 or args[0] in ("-h", "--help"):
        sys.exit(__doc__)
    level = args[2] if len(args) > 2 else "l2_load"
    tol = float(args[3]) if len(args) > 3 else 0.10
    a, b = records(args[0]), records(args[1])
    print("| sweep | block | fold | blocks per SM (A / B) | estimate A / B | measured A / B | B / A |")
    print("|---|---|---|---|---|---|---|")
    pairs = shown = 0
    for sweep in sorted(set(a) & set(b)):
        for key in sorted(set(a[sweep]) & set(b[sweep])):
            ra, rb = a[sweep][key], b[sweep][key]
            ea, eb = ra["estimate"][level], rb["estimate"][level]
            ma, mb = ra["measured"].get(level), rb["measured"].get(level)
            if not ma or not mb:
                continue
            pairs += 1
            if abs(ea - eb) > 0.02 * max(ea, eb) or abs(mb - ma) <= tol * ma:
                continue
            shown += 1
            block, fold = ("×".join(map(str, k)) for k in key)
            print(f"| {sweep} | {block} | {fold} | {ra['blocks_per_sm']} / {rb['blocks_per_sm']} "
                  f"| {ea:.1f} / {eb:.1f} | {ma:.1f} / {mb:.1f} | {mb / ma:.2f} |")
    print(f"\n{shown} of {pairs} pairs measured on both differ by more than {tol:.0%} in {level} "
          f"with estimates within 2 %")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The timed simulator with L2's bandwidth limited, against the counters (issue 8, no GPU).

Runs `stencilscope volumes --simulate --issue-order timed --timing 1,16,35,270,570[,RATE]` for the
narrow box3d_r1 f32 and star3d_r4 f64 tiles whose L2 load the visitor's lockstep gets wrong
(`bench/results/h100/counters/README.md`, "Narrow tiles: two regimes of the issue order"), each on
the smallest 256 × Y × Z domain that fills 1.2 waves at the H100 sweep's blocks per SM, in the
emitted order, and prints the visitor's and the simulator's L2 load beside the one measured at 256³.

usage: bench/timed-l2-rate.py RATES [BIN]
  RATES  comma-separated L2 sectors per SM per 1,000 cycles; 0: unlimited (e.g. 0,600,650)
  BIN    the stencilscope binary (default target/release/stencilscope)
"""
import itertools
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# kernel, dtype, block, fold, blocks per SM and L2 load (B/LUP) of the H100 counter sweeps at 256³
# (box3d_r1-f32, star3d_r4-f64, star3d_r4-f64-narrow).
CONFIGS = [
    ("box3d_r1", "f32", "1,16,4", "2,4,2", 32, 45.9),
    ("box3d_r1", "f32", "1,16,16", "2,1,4", 8, 46.4),
    ("box3d_r1", "f32", "1,64,8", "2,4,4", 4, 57.5),
    ("box3d_r1", "f32", "2,16,8", "4,2,1", 8, 13.6),
    ("box3d_r1", "f32", "4,8,4", "4,2,4", 16, 9.1),
    ("star3d_r4", "f64", "1,4,32", "1,4,2", 16, 416.3),
    ("star3d_r4", "f64", "1,16,8", "4,2,4", 9, 223.1),
    ("star3d_r4", "f64", "1,128,2", "2,2,2", 5, 347.6),
    ("star3d_r4", "f64", "2,1,32", "4,1,1", 32, 209.2),
    ("star3d_r4", "f64", "1,4,64", "2,4,4", 4, 203.7),
    ("star3d_r4", "f64", "2,4,32", "2,4,4", 5, 77.9),
    ("star3d_r4", "f64", "1,32,4", "1,2,2", 16, 393.7),
    ("star3d_r4", "f64", "2,2,32", "1,2,2", 16, 180.3),
]
SMS = 132


def domain(block, fold, bps):
    """The smallest 256 × Y × Z domain of whole tiles with 1.2 waves of blocks."""
    b = [int(v) for v in block.split(",")]
    f = [int(v) for v in fold.split(",")]
    t = [b[i] * f[i] for i in range(3)]
    best = None
    for y in range(t[1], 513, t[1]):
        for z in range(t[2], 513, t[2]):
            blocks = (256 // t[0]) * (y // t[1]) * (z // t[2])
            if blocks >= 1.2 * bps * SMS and (best is None or y * z < best[0]):
                best = (y * z, y, z)
    return f"256,{best[1]},{best[2]}"


def run(job, binary):
    (kernel, dtype, block, fold, bps, measured), rate = job
    dom = domain(block, fold, bps)
    timing = "1,16,35,270,570" + ("" if rate == "0" else f",{rate}")
    visitor, sim = benchlib.simulated_l2_load(
        binary, f"{HERE}/stencils/{kernel}.toml", "h100-sxm", dom, block, fold, bps,
        ["--dtype", dtype, "--issue-order", "timed", "--timing", timing])
    return (f"| {kernel} {dtype} {block.replace(',', '×')} fold {fold.replace(',', '×')} | {bps} "
            f"| {dom.replace(',', '×')} | {rate} | {visitor:.2f} | {sim:.2f} | {measured} |")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    rates = sys.argv[1].split(",")
    binary = sys.argv[2] if len(sys.argv) == 3 else f"{HERE}/target/release/stencilscope"
    print("| tile | blocks/SM | domain | L2 rate (sectors/SM/1000 cycles; 0: unlimited) "
          "| visitor L2 load | timed simulator | measured at 256³ |")
    print("|---|---|---|---|---|---|---|")
    with ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        for line in ex.map(lambda j: run(j, binary), itertools.product(CONFIGS, rates)):
            print(line, flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Which assumption each counter miss points to (issue 8).

Reads the reports `bench/recheck-counters.sh` writes (the committed ncu CSVs re-analysed with the
current visitor) and sorts every configuration whose DRAM load or L2 load is outside ±10 % of the
counters into the class of misses the probes in bench/results/*/counters/README.md explain. The
rules use only what the report holds (the sweep, the block, the L1 the estimate took, the other
levels' errors); they name the evidence, they are not a model.

usage: bench/counters-misses.py DIR [SWEEP ...]
  DIR    the OUTDIR of bench/recheck-counters.sh (NAME.json per sweep)
  SWEEP  sweep names (default: every NAME.json in DIR but the experiment files' variants,
         `-reuse-curve`, `-step` and `-full-l2`, and the sweeps of the ranking's top
         configurations, `-top63`, which the recheck's totals leave out too)
"""
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import LEVELS, TOL, recheck_sweeps  # noqa: E402

# class: (level, the assumption that fails, where the evidence is)
CLASSES = {
    "spill": ("DRAM or L2 load", "no local memory: the compiled kernel keeps values on its "
              "stack (spilled registers, the twin's `local_bytes`), whose loads and stores pass "
              "L1, L2 and DRAM beside the kernel's own; the estimate follows them where the "
              "compiled order has the stack accesses (`stack_accesses`), else it counts the "
              "emitted accesses only",
              "spill/, timed-twin/ (the SASS's STL/LDL, footprint::local)"),
    "spill-model": ("DRAM or L2 load", "register spills counted (footprint::local): the "
                    "stack's lines take L1 room from the global ones and the GPU's L2 keeps "
                    "them otherwise than its reuse curve says; the largest stacks (240-640 B "
                    "per thread) read up to 16 % more through L2 than estimated, and stack "
                    "loads that miss L1 read up to 21 % less from DRAM",
                    "spill/"),
    "partial": ("DRAM load", "write-back: L2 writes partly written sectors back before other "
                "stores complete them, each then costing a fill and a second write, once the "
                "lines holding such sectors pass a limit that comes earlier the further apart "
                "they lie; the lockstep waves keep neighbouring blocks' pieces together, where "
                "the GPU's blocks drift apart, and the count of such lines does not set the "
                "loss (one-thread-wide tiles lose far more at the same count); D3Q19 SoA's "
                "pairs of stores steps apart take 1 - partial_sector_limit/count, the count "
                "the visitor's Little's law over its lockstep steps (measured by occupancy, "
                "partial-occupancy/), which overcounts tiles of two fold points (whose first "
                "fold point takes most of the run); sectors blocks beside each other write at "
                "one step count for neighbour_drift_share of the run and go once each (oos60/: "
                "four-wide tiles at 16 warps per SM still 19-27 % over in DRAM store, one-wide "
                "at 48 warps 22 % under, rows not aligned to sectors below the limit 7-14 % "
                "under; one-array kernels too, where star3d_r4's narrow tiles at 28 KiB of "
                "L1 lose none and box3d_r1's none at all; AoS records two blocks write at one "
                "fold point likewise, oos61/: tiles one or two records wide still lose "
                "0.2-2.25 sectors per straddling sector against 0-0.75 charged, their records "
                "more than the block's share), and star3d_r4's single array loses "
                "none by its pairs steps apart; the row ends of rows not aligned to sectors, which "
                "blocks beside each other complete at one step, go at least at "
                "row_end_write_back_share in kernels storing several arrays (D3Q19, D3Q27, D2Q9 "
                "SoA, top63/, oos63/, oos64/), and a kernel storing in place into whole sectors "
                "(AA) loses none; D3Q19 push AoS counts each sector stored together open "
                "from its first writer to its last and loses it once (stop 64), though its "
                "writes per sector rise with the count over the limit (1.8-2.0 at 2-12 times, "
                "4-5.8 above 60; stop 65); SoA tiles no wider than a sector folded along x "
                "write each sector half as often at a third of the blocks per SM (xf65/), "
                "and 2-wide tiles folded 4x1x1 write it 1.9 times where the visitor charges "
                "3.65 (their pieces counted open a fold point of the emitted order, stored "
                "in a short phase after all loads by the compiled code); for AoS records "
                "the measured share by warps (after all loads where every store needs every "
                "load; back to back where the compiled code issues a fold point's stores as "
                "consecutive instructions, compiled-order/places/; the SM's where it "
                "interleaves fold points' stores, and beyond 32 warps per SM where they span "
                "most of a fold point) does not grade how far they overlap, nor "
                "block shape, nor spacings between back to back and a loop (a chain of 1-4 "
                "FMAs between stores loses 0.10-0.21 at 4 warps, the D3Q19 twins' stores "
                "spread among the collision's arithmetic 0.06-0.08), nor how many warps store "
                "at once (a copy whose block's warps store apart keeps its records: 32 warps "
                "0.51 -> 0.04); the back-to-back copy still loses more than the back-to-back "
                "twins at 4 warps (0.05 against 0.02 in DRAM read beyond the record)",
                "README sections on partly written sectors and lines; l2-traffic/threshold, "
                "l2-traffic/pstride, l2-traffic/afterloads, l2-traffic/storegap, "
                "l2-traffic/warpskew, store-spread/, partial-drift (and its -oos run); "
                "bench/partial-count.py: the visitor's own count of sectors partly written at a "
                "time orders D3Q19 SoA's losses (half the pairs at 80-240 K), not star3d_r4's; "
                "h200 partial-occupancy/: the loss follows the blocks resident, not the compiled "
                "order; h200 oos60/: D3Q19 SoA tiles whose sectors neighbouring blocks write at "
                "one step; h200 oos61/: D3Q19 AoS tiles one or two records wide; h200 "
                "oos69/, xf65/"),
    "l2-less": ("DRAM load", "L2 capacity: L2 loses reuses the model keeps (reuse distances "
                "on the steep part of the measured curve, the L2 split, written data taking "
                "more room than read data; in SoA tiles folded along x, the other half of a "
                "64-byte fetch where the lines a window's sectors lie in do not give all of "
                "it; not hits that fail to renew a sector, nor fetched halves or far-apart "
                "arrays kept less long; since the links and windows follow the blocks' "
                "launch times, the 512-plane stencils' slab reuses are no longer a class of "
                "their own; folded D3Q19 AoS tiles, whose DRAM store misses "
                "explain a third of their DRAM load misses at most: L2 itself loses their "
                "reuses at high occupancy with L1 out of the way, under a stream of misses "
                "at about two thirds of the distance a reread loses them at)",
                "l2-traffic/capacity, l2-traffic/wcapacity, l2-traffic/lines, "
                "l2-traffic/promote, l2-traffic/pprio, l2-traffic/segments, l2-traffic/window; "
                "aos-reads/cg, aos-reads/cgstores; the 512-top and 512-fold2 sweeps"),
    "l2-more": ("DRAM load", "L2 capacity: L2 keeps reuses the model loses (reuse distances "
                "on the measured curve's slope, where the stencil's loss is a ramp and the "
                "two-reader probe's a knee; with the step at the effective capacity, most "
                "reuses between 25 and 50 MiB; the distances take l2_reuse_distance_scale, "
                "fitted where kernels lose reuses earlier than the reread probe, which some "
                "keep longer: x-folded tiles 2 threads wide re-fetching lines from L1, "
                "star3d_r4 2x1x32 fold 4x1x1 at 32 blocks per SM +115 %; D3Q19 AoS tiles two "
                "cells deep folded along z, +40-60 %: at several blocks per SM a block waits "
                "most of its run for its first loads and runs the later fold points in a short "
                "stretch, so a fold point's lines are read again by the next after about a third "
                "of the lockstep's traffic; the tiles of many fold points, as short, lose their "
                "reuses all the same, with their stores; a kernel storing in place into whole "
                "sectors counts only its written data's extra room, l2_store_weight - 1; its AA "
                "tiles two threads wide folded along x, 70-250 % over before stop 64's in-place "
                "rules (no fills, no partly written sectors), are -25 to +74 %, oos63/-oos66/)",
                "l2-traffic/capacity, l2-traffic/wcapacity, l2-traffic/sibling, link-gaps/, "
                "h200 fold-gaps/; the -step experiment files"),
    "order-aos": ("L2 load", "scheduling order: AoS warps are interleaved by the full L1 load "
                  "queue (lg_throttle), between the lockstep and warp-burst orders; the first "
                  "fold point's burst is modelled (l1_interleave where blocks start among "
                  "others, lockstep where one block fills the SM and its warps start together), "
                  "the later points by a warp's queue and one L2 latency for its own lines "
                  "only; folded 32-warp blocks at one per SM are still under, beyond lockstep "
                  "(their warps drift apart, by 0.17 of a fold point between neighbours, which "
                  "explains few of them), small folded blocks at 5 or more per SM over; "
                  "stores take L1 lines too (stop 65: the interleaved warps' in a first burst, "
                  "a fold point's in lockstep), which brought push AoS's unfolded blocks within "
                  "while its folded ones stay 15-50 % under",
                  "issue-order/, issue-order/warp-stalls/, l1-interleave/, "
                  "l1-interleave/one-block/, warp-skew/, h200 warp-drift/, h200 oos62/, "
                  "h200 README 'A store's lines in L1', oos69/"),
    "small-l1": ("L2 load", "L1 replacement at a small L1 (carve-out 100 %): the model takes the "
                 "ways (l1_conflict_ways_by_l1) and the burst interleave measured at that L1; "
                 "what is left is mostly over, L1 keeping more of many small blocks' reuses",
                 "l1-policy/, l1-carveout/, l1-interleave/carveout/"),
    "narrow": ("L2 load", "scheduling order: blocks 1-2 threads wide re-fetch lines that "
               "x-neighbouring blocks share; their order decides the hits: box3d_r1's run "
               "L1-bound (the timed simulator keeps their reuses, the lockstep visitor does "
               "not), star3d_r4's L2-bound at L2's measured rate for one sector per line",
               "issue-order/, issue-order/timed-l2-rate.md, narrow-256x256x128/, "
               "l2-traffic/l2rate; the refetch-chain and own-window-narrow prototypes"),
    "l1-less": ("L2 load", "scheduling order and L1 replacement, at 8 or more blocks per SM: "
                "the GPU runs near the lockstep simulator with the measured set function; the "
                "visitor keeps more by its Poisson set conflicts and by the first fold point's "
                "burst interleave (in the compiled order where the configuration has one, the "
                "burst up to the first fold point's last load)",
                "visitor-vs-sim/, compiled-order/; l1-policy/, l1-sets/, l1-interleave/"),
    "block-drift": ("L2 load", "scheduling order, at 1-7 blocks per SM: L1 keeps halo rows the "
                    "GPU loses; most such misses were the emitted issue order, which the compiled "
                    "code does not keep (its fold points' loads interleave, compiled-order/); "
                    "what is left is either a configuration without a compiled order or warps "
                    "of a large block drifting apart",
                    "compiled-order/, visitor-vs-sim/; warp-skew/"),
    "l1-more": ("L2 load", "scheduling order: L1 keeps more than the lockstep model, whose "
                "warps touch the whole halo between two uses", "issue-order/"),
}


def err(r, level):
    """The report's relative error of one level (None where nothing was measured)."""
    return r["errors"][LEVELS.index(level)]


def dram_load_class(r, e):
    """The class of a DRAM load miss of relative error `e`: `partial` where the write-backs the
    estimate misses explain it, else the L2 capacity class its remaining error's sign gives.

    Every early write-back of a partly written sector is one more write and one fill (the
    `partial*` probes), so the DRAM store the estimate misses, `ms - es`, stands for as much DRAM
    load. Where adding it brings the DRAM load within ±10 %, the write-backs are the miss;
    otherwise what is left after them is L2 losing (or keeping) reuses: a folded AoS tile whose
    DRAM store is 10 % under but whose DRAM load is 30 % under is mostly an L2 capacity miss."""
    ms, es = r["measured"].get("dram_store") or 0, r["estimate"]["dram_store"]
    md, ed = r["measured"].get("dram_load") or 0, r["estimate"]["dram_load"]
    rest = (ed + (ms - es) - md) / md if md > 0 else e
    if abs(ms - es) > 0.05 * es and abs(rest) <= TOL:
        return "partial"
    return "l2-less" if rest < 0 else "l2-more"


def classify(sweep, r):
    """The classes of one configuration's misses (none where both levels are within ±10 %)."""
    out = []
    block = r["config"]["block"]
    e2, e4 = err(r, "l2_load"), err(r, "dram_load")
    if (r.get("local_bytes") or 0) > 0 and any(e is not None and abs(e) > TOL for e in (e2, e4)):
        return ["spill-model" if r.get("stack_accesses") else "spill"]
    e = err(r, "dram_load")
    if e is not None and abs(e) > TOL:
        out.append(dram_load_class(r, e))
    e = err(r, "l2_load")
    if e is not None and abs(e) > TOL:
        if "aos" in sweep:
            out.append("order-aos")
        elif r.get("l1_bytes", 1 << 30) <= 64 << 10:
            out.append("small-l1")
        elif block[0] <= 2 and e > 0:
            out.append("narrow")
        else:
            # Below 8 blocks per SM the visitor agrees with its lockstep simulator and both keep
            # too much (visitor-vs-sim/).
            low = r["blocks_per_sm"] < 8
            out.append(("block-drift" if low else "l1-less") if e < 0 else "l1-more")
    return out


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        sys.exit(__doc__)
    d = Path(args[0])
    names = args[1:] or recheck_sweeps(d)
    counts = {c: {} for c in CLASSES}
    totals = {"DRAM load": [0, 0], "L2 load": [0, 0]}
    examples = {c: [] for c in CLASSES}
    for name in names:
        s = json.load(open(d / f"{name}.json"))
        for r in s["records"]:
            for lv, key in (("DRAM load", "dram_load"), ("L2 load", "l2_load")):
                e = err(r, key)
                if e is not None:
                    totals[lv][0] += 1
                    totals[lv][1] += abs(e) <= TOL
            for c in classify(name, r):
                counts[c][name] = counts[c].get(name, 0) + 1
                lv = "dram_load" if CLASSES[c][0] == "DRAM load" else "l2_load"
                cfg = r["config"]
                examples[c].append(
                    f"{'×'.join(map(str, cfg['block']))} fold {'×'.join(map(str, cfg['fold']))} "
                    f"({name}, {err(r, lv) * 100:+.0f} %)")
    print("| level | within ±10 % |\n|---|---|")
    for lv, (n, ok) in totals.items():
        print(f"| {lv} | {ok} of {n} ({100 * ok / n:.0f} %) |")
    print("\n| class | level | misses | sweeps | the assumption that fails | evidence |")
    print("|---|---|---|---|---|---|")
    for c, (lv, why, where) in CLASSES.items():
        n = sum(counts[c].values())
        if n == 0:
            continue
        per = ", ".join(f"{k} {v}" for k, v in sorted(counts[c].items()))
        print(f"| {c} | {lv} | {n} | {per} | {why} | {where} |")
    print()
    for c in CLASSES:
        if examples[c]:
            shown = "; ".join(examples[c][:4]) + ("; …" if len(examples[c]) > 4 else "")
            print(f"- {c}: {shown}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What the counter sweeps say about L2's two partitions (issue 8, analysis only).

Every counters report (`stencilscope counters`, committed under bench/results/*/counters/) keeps
each configuration's raw ncu figures, among them three the volumes do not use: the L2 read
lookups that miss (`lts__t_sectors_srcunit_tex_op_read_lookup_miss`), the sectors L2 fills from
DRAM (`lts__d_sectors_fill_device`) and the sectors the L2 slices take from the fabric between the
two partitions (`lts__t_sectors_srcunit_ltcfabric`). This prints them per lattice update next to
the L2 reads and the DRAM load, estimated and measured, so that an L2 law can be checked against
more than the DRAM read: a lookup missed near but not filled from DRAM was served across the
fabric.

usage: bench/counters-l2-split.py REPORT.json [REPORT.json ...]
  REPORT.json  a counters report: a committed one carries the estimates of the binary that made
               it, those `bench/recheck-counters.sh` writes the current visitor's
"""
import json
import sys

SECTOR = 32
METRICS = {
    "read": "lts__t_sectors_srcunit_tex_op_read.sum",
    "read miss": "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "fill": "lts__d_sectors_fill_device.sum",
    "fabric": "lts__t_sectors_srcunit_ltcfabric.sum",
}


def main():
    paths = sys.argv[1:]
    if not paths or paths[0] in ("-h", "--help"):
        sys.exit(__doc__)
    for path in paths:
        s = json.load(open(path))
        n = s["updates"]
        print(f"\n{path} ({s['device']['name']}, {'×'.join(map(str, s['domain']['size']))})\n")
        print("| block | fold | blocks per SM | L2 read | read lookup miss | DRAM fill | fabric "
              "| fabric / read | DRAM load estimated / measured |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in s["records"]:
            c = r.get("counters") or {}
            if not all(m in c for m in METRICS.values()):
                continue
            v = {k: c[m] * SECTOR / n for k, m in METRICS.items()}
            block, fold = ("×".join(map(str, r["config"][k])) for k in ("block", "fold"))
            print(f"| {block} | {fold} | {r['blocks_per_sm']} | {v['read']:.1f} "
                  f"| {v['read miss']:.1f} | {v['fill']:.1f} | {v['fabric']:.1f} "
                  f"| {v['fabric'] / v['read']:.2f} "
                  f"| {r['estimate']['dram_load']:.1f} / {r['measured']['dram_load']:.1f} |")


if __name__ == "__main__":
    main()

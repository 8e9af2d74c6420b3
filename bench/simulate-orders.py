#!/usr/bin/env python3
"""L2 load of the configurations of a counter sweep under the simulator's issue orders.

For every configuration of a committed counter report (`bench/results/<gpu>/counters/*.json`), runs
`stencilscope volumes --simulate` on a smaller domain (the simulator is exact but slow; grown to two
tiles per axis where a tile is larger, then until the grid fills a wave) once per issue order:
lockstep (the visitor's model), warp-burst (each warp issues a fold point's instructions back to
back) and scheduler-burst (the SM's warps dealt to its four schedulers, each in warp-burst order,
taking turns); `--orders` picks others, e.g. `drift` (with `--drift D` passed on). Prints a
Markdown table of the visitor's estimate, each simulation and the measured L2 load (of the report's
domain), then the share within +-10 % of the measurement for each. L2 load is L1 misses, which
depend on the blocks sharing an SM, not on the domain size.

usage: bench/simulate-orders.py BIN REPORT.json KERNEL.toml MACHINE DOMAIN [--orders A,B,...]
                                [extra volumes args...]
  e.g. bench/simulate-orders.py target/release/stencilscope \\
         bench/results/h200/counters/d3q19_srt_pull-aos.json \\
         bench/counters/d3q19_srt_pull_aos.toml h200 256,64,64
"""
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

if len(sys.argv) < 6:
    sys.exit(__doc__)
binary, report, kernel, machine, domain = sys.argv[1:6]
extra = sys.argv[6:]
orders = ["lockstep", "warp-burst", "scheduler-burst"]
if "--orders" in extra:
    i = extra.index("--orders")
    orders = extra[i + 1].split(",")
    del extra[i:i + 2]
# `--drift D` belongs to the drift order only (`volumes` refuses it with any other).
drift = []
if "--drift" in extra:
    i = extra.index("--drift")
    drift = extra[i:i + 2]
    del extra[i:i + 2]
sweep = json.load(open(report))
records = sweep["records"]
base = [int(n) for n in domain.split(",")]


def machine_sms(name):
    """Streaming multiprocessors of a preset or machine file."""
    path = name if name.endswith(".toml") else f"{__file__.rsplit('/', 2)[0]}/machines/{name}.toml"
    return int(re.search(r"^sms\s*=\s*(\d+)", open(path).read(), re.M).group(1))


SMS = machine_sms(machine)
full = sweep["domain"]["size"]


def sim_domain(block, fold, blocks_per_sm):
    """The domain to simulate on (`benchlib.sim_domain`: two tiles per axis, then a full wave)."""
    return benchlib.sim_domain(block, fold, blocks_per_sm, SMS, base, full)


def volumes(block, fold, blocks_per_sm, order):
    """(visitor, simulation) L2 load in B/LUP, None where too large to simulate."""
    args = ["--issue-order", order] + extra + (drift if order == "drift" else [])
    return benchlib.simulated_l2_load(binary, kernel, machine,
                                      sim_domain(block, fold, blocks_per_sm),
                                      ",".join(map(str, block)), ",".join(map(str, fold)),
                                      blocks_per_sm, args)


rows = []
skipped = 0
names = ["visitor"] + [f"{o} sim" for o in orders]
print("| block | fold | blocks/SM | simulated domain | " + " | ".join(names) + " | measured |")
print("|---|---|---|---|" + "---|" * (len(names) + 1))
for r in records:
    c = r["config"]
    blocks_per_sm = r["blocks_per_sm"]
    sims = []
    for o in orders:
        v = volumes(c["block"], c["fold"], blocks_per_sm, o)
        if v is None:
            break
        est = v[0]
        sims.append(v[1])
    if len(sims) < len(orders):
        skipped += 1
        continue
    meas = r["measured"]["l2_load"]
    rows.append([est] + sims + [meas])
    b = "×".join(map(str, c["block"]))
    f = "×".join(map(str, c["fold"]))
    d = sim_domain(c["block"], c["fold"], blocks_per_sm).replace(",", "×")
    cells = " | ".join(f"{v:.1f}" for v in rows[-1])
    print(f"| {b} | {f} | {blocks_per_sm} | {d} | {cells} |", flush=True)

print()
print(f"{len(rows)} configurations ({skipped} too large to simulate), each on {domain}, grown to two tiles "
      "per axis and to a full wave; L2 load error against the measurement:")
for i, name in enumerate(names):
    errs = [v[i] / v[-1] - 1 for v in rows]
    within = sum(abs(e) <= 0.10 for e in errs) / len(errs)
    print(f"- {name}: within ±10 % {100 * within:.0f} %, median {100 * statistics.median(errs):+.1f} %, "
          f"max |error| {100 * max(abs(e) for e in errs):.0f} %")
if "lockstep" in orders and "warp-burst" in orders:
    a, b = 1 + orders.index("lockstep"), 1 + orders.index("warp-burst")
    between = sum(min(v[a], v[b]) * 0.9 <= v[-1] <= max(v[a], v[b]) * 1.1 for v in rows)
    print(f"- measured between the lockstep and warp-burst simulations (±10 %): {between} of {len(rows)}")

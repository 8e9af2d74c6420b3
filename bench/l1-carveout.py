#!/usr/bin/env python3
"""L2 load of a counter sweep's configurations as the L1 capacity is varied (issue 8).

The footprint visitor and the simulator treat L1 as one LRU cache of the granted capacity, shared
by the blocks resident on an SM. On the GPU that capacity is what the shared-memory carve-out
leaves of the SM's 256 KiB. This measures, per configuration, the L2 load (L1 misses) at every
carve-out the driver grants, so that the measured capacity curve can be set against the one the
model draws: a curve of the same shape shifted to smaller capacities says "effective capacity", a
curve that stays above the model's at every capacity says "not capacity" (replacement, set
mapping, or what is counted per miss).

It emits the CUDA twin of every configuration of a counter report, compiles it with CuPy (NVRTC),
checks its output against a CuPy reference (the formula printed in the source), then launches it once per
carve-out preference (`CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`) under Nsight Compute,
which records the shared-memory configuration actually granted with the counters.

usage (on a machine with an NVIDIA GPU, CuPy and ncu):
  bench/l1-carveout.py measure BIN REPORT.json KERNEL.toml OUT.json [--dtype f64]
                       [--domain 256,256,256] [--carveouts -1,0,3,7,14,28,43,57,71,85,100]
then, anywhere (runs the visitor, and with --simulate ORDER the simulator, at each granted L1):
  bench/l1-carveout.py summary BIN OUT.json KERNEL.toml MACHINE.toml [--simulate ORDER]
                       [--drift D] [--l1-replacement lru|random] [--sim-domain 256,64,64]
The first form takes a few minutes for 52 configurations on an H100 (one profiled launch per
configuration and carve-out, plus the checked one).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (check_twin, emit_cuda, ncu_rows, number, parse_twin, provenance,  # noqa: E402
                      set_carveout, sim_domain, twin_fields)

METRICS = [
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",
    "dram__bytes_read.sum",
    "gpu__time_duration.sum",
    "launch__shared_mem_config_size",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__registers_per_thread",
]
# The SM's L1 and shared memory together (H100, H200: 256 KiB).
UNIFIED_BYTES = 256 * 1024


def launch(plan_path):
    """Runs inside ncu: every configuration once checked, then once per carve-out."""
    import cupy as cp

    plan = json.load(open(plan_path))
    for c in plan["configs"]:
        src = c["source"]
        grid, ext, name = parse_twin(src)
        kern = cp.RawKernel(src, name)
        u, v = twin_fields(cp, ext, plan["dtype"])
        kern(tuple(grid), tuple(c["block"]), (u, v))
        c["max_rel_error"] = check_twin(cp, u, v, src, plan["dtype"],
                                        f"{c['block']} fold {c['fold']}")
        for p in plan["carveouts"]:
            set_carveout(kern, p)
            kern(tuple(grid), tuple(c["block"]), (u, v))
        cp.cuda.runtime.deviceSynchronize()
        print(f"{c['block']} fold {c['fold']}: checked ({c['max_rel_error']:.1e}), {len(plan['carveouts'])} launches",
              flush=True)
    json.dump({"errors": [c["max_rel_error"] for c in plan["configs"]]},
              open(plan_path + ".checked", "w"))


def measure(binary, report, kernel, out_path, dtype, domain, carveouts):
    import cupy as cp

    records = json.load(open(report))["records"]
    configs = []
    for r in records:
        block, fold = r["config"]["block"], r["config"]["fold"]
        configs.append({"block": block, "fold": fold,
                        "source": emit_cuda(binary, kernel, block, fold, dtype, domain)[0]})
    n = 1
    for d in domain.split(","):
        n *= int(d)
    with tempfile.TemporaryDirectory() as tmp:
        plan_path = os.path.join(tmp, "plan.json")
        json.dump({"configs": configs, "carveouts": carveouts, "dtype": dtype}, open(plan_path, "w"))
        log = os.path.join(tmp, "ncu.csv")
        cmd = ["ncu", "--clock-control", "none", "--kernel-name", "regex:^star3d", "--metrics",
               ",".join(METRICS), "--csv", "--page", "raw", "--print-units", "base", "--log-file",
               log, sys.executable, os.path.abspath(__file__), "launch", plan_path]
        subprocess.run(cmd, check=True)
        rows = ncu_rows(open(log).read())
        errors = json.load(open(plan_path + ".checked"))["errors"]
    per = 1 + len(carveouts)
    if len(rows) != per * len(configs):
        sys.exit(f"ncu recorded {len(rows)} launches, expected {per * len(configs)}")
    results = []
    for i, c in enumerate(configs):
        points = []
        for j, p in enumerate(carveouts):
            row = rows[i * per + 1 + j]
            limits = [number(row[m]) for m in METRICS if m.startswith("launch__occupancy_limit")]
            smem = number(row["launch__shared_mem_config_size"])
            points.append({
                "carveout": p,
                "shared_config_bytes": smem,
                "l1_bytes": UNIFIED_BYTES - smem,
                "blocks_per_sm": int(min(limits)),
                "registers": int(number(row["launch__registers_per_thread"])),
                "l2_load": number(row["lts__t_sectors_srcunit_tex_op_read.sum"]) * 32 / n,
                "l1_load_requests": number(row["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]) * 32 / n,
                "l1_miss": number(row["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum"]) * 32 / n,
                "dram_load": number(row["dram__bytes_read.sum"]) / n,
                "time_ns": number(row["gpu__time_duration.sum"]),
            })
        results.append({"block": c["block"], "fold": c["fold"], "max_rel_error": errors[i],
                        "points": points})
    json.dump({**provenance(cp), "report": report, "kernel": kernel, "dtype": dtype, "domain": domain,
               "unit": "B/LUP", "results": results}, open(out_path, "w"), indent=1)


def machine_with_l1(machine, l1_bytes, tmp):
    """A copy of the machine file with another L1 capacity."""
    text = open(machine).read()
    text, n = re.subn(r"(?m)^l1_bytes\s*=\s*\d+", f"l1_bytes = {l1_bytes}", text, count=1)
    if n != 1:
        sys.exit(f"{machine}: no `l1_bytes = N` line to replace")
    path = os.path.join(tmp, f"l1-{l1_bytes}.toml")
    open(path, "w").write(text)
    return path


def l2_load(binary, kernel, machine, domain, block, fold, blocks_per_sm, dtype, sim):
    """(visitor, simulation or None) L2 load in B/LUP."""
    cmd = [binary, "volumes", kernel, "--machine", machine, "--domain", domain,
           "--block", ",".join(map(str, block)), "--fold", ",".join(map(str, fold)),
           "--blocks-per-sm", str(blocks_per_sm), "--dtype", dtype]
    if sim:
        cmd += ["--simulate", "--issue-order", sim[0]] + sim[1]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {out.stderr.strip()}")
    if sim:
        m = re.search(r"^L2 load\s+([\d.]+) B/LUP\s+[\d.]+ B/LUP\s+([\d.]+) B/LUP", out.stdout, re.M)
        return float(m.group(1)), float(m.group(2))
    m = re.search(r"^L2 load\s+([\d.]+) B/LUP", out.stdout, re.M)
    return float(m.group(1)), None


def summary(binary, path, kernel, machine, sim, sim_base):
    data = json.load(open(path))
    sms = int(re.search(r"(?m)^sms\s*=\s*(\d+)", open(machine).read()).group(1))
    full = [int(d) for d in data["domain"].split(",")]
    print(f"# L2 load against the granted L1, {data['kernel']} {data['dtype']} on the {data['device']}\n")
    print(f"Measured {data['date'][:10]} at {data['commit']}, driver {data['driver']}, domain "
          f"{data['domain'].replace(',', '×')}; B/LUP. Per configuration and granted L1 (KiB): measured "
          f"/ visitor" + (f" / simulation ({' '.join([sim[0]] + sim[1])})" if sim else "") + ".\n")
    sizes = sorted({p["l1_bytes"] for r in data["results"] for p in r["points"]}, reverse=True)
    print("| block | fold | blocks/SM | " + " | ".join(f"L1 {s // 1024:.0f}" for s in sizes) + " |")
    print("|---|---|---|" + "---|" * len(sizes))
    pairs = []
    with tempfile.TemporaryDirectory() as tmp:
        files = {s: machine_with_l1(machine, int(s), tmp) for s in sizes}
        for r in data["results"]:
            by_size = {}
            for p in r["points"]:
                by_size.setdefault(p["l1_bytes"], p)
            bps = sorted({p["blocks_per_sm"] for p in r["points"]})
            cells = []
            for s in sizes:
                p = by_size.get(s)
                if p is None:
                    cells.append("—")
                    continue
                dom = (sim_domain(r["block"], r["fold"], p["blocks_per_sm"], sms, sim_base, full)
                       if sim else data["domain"])
                est, simulated = l2_load(binary, kernel, files[s], dom, r["block"], r["fold"],
                                         p["blocks_per_sm"], data["dtype"], sim)
                pairs.append((s, p["l2_load"], est, simulated))
                cell = f"{p['l2_load']:.0f} / {est:.0f}"
                if simulated is not None:
                    cell += f" / {simulated:.0f}"
                cells.append(cell)
            print(f"| {'×'.join(map(str, r['block']))} | {'×'.join(map(str, r['fold']))} | "
                  f"{'/'.join(map(str, bps))} | " + " | ".join(cells) + " |", flush=True)
    print()
    for s in sizes:
        sel = [q for q in pairs if q[0] == s]
        if not sel:
            continue
        line = f"- L1 {s // 1024:.0f} KiB ({len(sel)}): visitor within ±10 % " \
               f"{100 * sum(abs(q[2] / q[1] - 1) <= 0.1 for q in sel) / len(sel):.0f} %"
        if sim:
            line += f", simulation {100 * sum(abs(q[3] / q[1] - 1) <= 0.1 for q in sel) / len(sel):.0f} %"
        line += f"; measured above the visitor by more than 10 % in {sum(q[1] > 1.1 * q[2] for q in sel)}"
        print(line)


def option(args, name, default):
    if name in args:
        i = args.index(name)
        value = args[i + 1]
        del args[i:i + 2]
        return value
    return default


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        sys.exit(__doc__)
    mode = args.pop(0)
    if mode == "launch" and len(args) == 1:
        launch(args[0])
    elif mode == "measure" and len(args) >= 4:
        dtype = option(args, "--dtype", "f64")
        domain = option(args, "--domain", "256,256,256")
        carveouts = [int(c) for c in option(args, "--carveouts", "-1,0,3,7,14,28,43,57,71,85,100")
                     .split(",")]
        if len(args) != 4:
            sys.exit(__doc__)
        measure(*args, dtype, domain, carveouts)
    elif mode == "summary" and len(args) >= 4:
        order = option(args, "--simulate", None)
        drift = option(args, "--drift", None)
        replacement = option(args, "--l1-replacement", None)
        base = [int(d) for d in option(args, "--sim-domain", "256,64,64").split(",")]
        if len(args) != 4:
            sys.exit(__doc__)
        extra = ["--drift", drift] if drift and order == "drift" else []
        if replacement:
            extra += ["--l1-replacement", replacement]
        sim = (order, extra) if order else None
        summary(*args, sim, base)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

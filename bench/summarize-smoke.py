#!/usr/bin/env python3
"""Collects the JSON files of bench/gpu-smoke.sh into run-smoke.json and a Markdown report.

usage: summarize-smoke.py RAW_DIR DEST_DIR --commit SHA --command "..." [--date ISO]

Each kernel's bandwidth at minimal volume is also given as a fraction of the copy bandwidth
(the best copy configuration) measured with the same backend and dtype.
"""
import argparse
import datetime
import glob
import json
import os


def fmt_cfg(c):
    return "block {}x{}x{} fold {}x{}x{}".format(*c["block"], *c["fold"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("dest")
    ap.add_argument("--commit", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    a = ap.parse_args()

    smi = open(os.path.join(a.raw, "nvidia-smi.csv")).read().strip().splitlines()
    fields = [s.strip() for s in smi[-1].split(",")]
    gpu, driver = fields[0], fields[1]

    files = sorted(glob.glob(os.path.join(a.raw, "*.json")))
    runs_json, study_json = [], []
    for f in files:
        if os.path.basename(f).startswith("devices"):
            continue
        stem = os.path.basename(f)[:-5]
        r = json.load(open(f))
        r["file"] = stem
        # The bounds-check study (checks-*) and any run with wgpu's checks on are kept apart.
        if stem.startswith("checks-") or r["wgpu_bounds_checks"]:
            study_json.append(r)
        else:
            runs_json.append(r)
    copy = {}
    for r in runs_json:
        if r["kernel"] != "copy":
            continue
        best = max((x["bandwidth_min"] or 0) for x in r["results"])
        copy.setdefault(r["backend"], {})[r["dtype"]] = best

    runs = []
    for r in runs_json:
        for x in r["results"]:
            bw = x["bandwidth_min"]
            ref = copy.get(r["backend"], {}).get(r["dtype"])
            runs.append({
                "backend": r["backend"],
                "device": r["device"]["name"],
                "kernel": r["kernel"],
                "dtype": r["dtype"],
                "domain": r["domain"],
                "wgpu_bounds_checks": r["wgpu_bounds_checks"],
                "config": x["config"],
                "status": x["status"],
                "error": x["error"],
                "median_s": x["median_s"],
                "min_s": x["min_s"],
                "max_s": x["max_s"],
                "lups": x["lups"],
                "min_bytes_per_lup": r["min_bytes_per_lup"],
                "bandwidth_min_volume": bw,
                "fraction_of_copy": (bw / ref) if (bw and ref) else None,
                "verified": bool(x["verification"] and x["verification"]["passed"]),
                "reps": r["reps"],
            })
    study = []
    for r in study_json:
        for x in r["results"]:
            study.append({
                "file": r["file"],
                "kernel": r["kernel"],
                "dtype": r["dtype"],
                "wgpu_bounds_checks": r["wgpu_bounds_checks"],
                "config": x["config"],
                "status": x["status"],
                "median_s": x["median_s"],
                "bandwidth_min_volume": x["bandwidth_min"],
                "verified": bool(x["verification"] and x["verification"]["passed"]),
            })
    out = {
        "gpu": gpu,
        "driver": driver,
        "commit": a.commit,
        "date": a.date,
        "command": a.command,
        "copy_bandwidth": copy,
        "runs": runs,
        "wgpu_bounds_checks_study": study,
    }
    os.makedirs(a.dest, exist_ok=True)
    with open(os.path.join(a.dest, "run-smoke.json"), "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")

    lines = [
        f"# GPU smoke run: {gpu}",
        "",
        f"Driver {driver}, commit `{a.commit}`, {a.date}. Produced by:",
        "",
        "```",
        a.command,
        "```",
        "",
        "Median of the timed launches (device timers), alternating source and destination; every "
        "run's output was checked element by element against the CPU reference. Bandwidth at "
        "minimal volume = lattice updates/s x minimal bytes per update; 'of copy' divides it by "
        "the best copy-kernel bandwidth of the same backend and dtype.",
        "",
        "## Copy bandwidth (best of three configurations)",
        "",
        "| backend | f32 | f64 |",
        "|---|---|---|",
    ]
    for b in ["opencl", "wgpu", "cuda"]:
        c = copy.get(b, {})
        cell = lambda d: f"{c[d] / 1e12:.3f} TB/s" if d in c else "n/a"
        lines.append(f"| {b} | {cell('f32')} | {cell('f64')} |")
    lines += [
        "",
        "## Kernels",
        "",
        "| kernel | dtype | backend | config | median ms | spread | GLUP/s | TB/s at min. volume | of copy | verified |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = {"opencl": 0, "wgpu": 1, "cuda": 2}
    for x in sorted(runs, key=lambda x: (x["kernel"] == "copy", x["kernel"], x["dtype"], order[x["backend"]], x["wgpu_bounds_checks"])):
        be = x["backend"] + (" (checked)" if x["wgpu_bounds_checks"] else "")
        if x["median_s"] is None:
            lines.append(f"| {x['kernel']} | {x['dtype']} | {be} | {fmt_cfg(x['config'])} | {x['status']}: {x['error']} | | | | | |")
            continue
        spread = (x["max_s"] - x["min_s"]) / x["median_s"] * 100
        frac = f"{x['fraction_of_copy'] * 100:.0f}%" if x["fraction_of_copy"] else ""
        lines.append(
            f"| {x['kernel']} | {x['dtype']} | {be} | {fmt_cfg(x['config'])} | {x['median_s'] * 1e3:.3f} | {spread:.1f}% "
            f"| {x['lups'] / 1e9:.2f} | {x['bandwidth_min_volume'] / 1e12:.3f} | {frac} | {'yes' if x['verified'] else 'NO'} |"
        )
    if study:
        lines += [
            "",
            "## wgpu runtime bounds checks (f32; file order = run order)",
            "",
            "| run | kernel | checks | config | median ms | TB/s at min. volume | verified |",
            "|---|---|---|---|---|---|---|",
        ]
        for x in study:
            if x["median_s"] is None:
                continue
            lines.append(
                f"| {x['file']} | {x['kernel']} | {'on' if x['wgpu_bounds_checks'] else 'off'} | {fmt_cfg(x['config'])} "
                f"| {x['median_s'] * 1e3:.3f} | {x['bandwidth_min_volume'] / 1e12:.3f} | {'yes' if x['verified'] else 'NO'} |"
            )
    with open(os.path.join(a.dest, "tables.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

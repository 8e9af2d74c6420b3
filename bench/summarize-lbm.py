#!/usr/bin/env python3
"""Summarises a `bench/lbm-gpu.sh` output folder into `lbm.json` and `tables.md`.

usage: summarize-lbm.py RAW_DIR[:COMMIT] [RAW_DIR[:COMMIT] ...] [--out RESULT_DIR] [--date D]
                        [--command TEXT]

Several RAW_DIRs are several device calls, oldest first: a later call's runs of a kernel (and AA
step) on a backend replace every earlier run of it on that backend (kept under `superseded`).

Only runs whose output passed the element-by-element comparison with the CPU reference count.
MLUP/s = lattice updates / median launch time. The fraction of copy bandwidth divides the
bandwidth at the minimal volume (2·Q·element size bytes per update) by the best copy-kernel
bandwidth of the same backend (any element type and configuration) measured in the same call. An AA time step
pair (even + odd kernel, same configuration) makes two updates per cell.
"""
import argparse
import datetime
import glob
import json
import os
import re
import sys


def config_name(c):
    b, f = c["block"], c["fold"]
    s = "x".join(map(str, b))
    if f != [1, 1, 1]:
        s += " fold " + "x".join(map(str, f))
    return s


def load(raw):
    runs, copies, device = [], {}, None
    for path in sorted(glob.glob(os.path.join(raw, "*.json"))):
        stem = os.path.basename(path)[:-5]
        if stem == "devices":
            continue
        j = json.load(open(path))
        device = device or j["device"]
        points = j["domain"][0] * j["domain"][1] * j["domain"][2]
        for r in j["results"]:
            v = r.get("verification") or {}
            row = {
                "file": stem,
                "backend": j["backend"],
                "dtype": j["dtype"],
                "domain": j["domain"],
                "config": config_name(r["config"]),
                "block": r["config"]["block"],
                "fold": r["config"]["fold"],
                "status": r["status"],
                "error": r.get("error"),
                "verified": bool(v.get("passed")),
                "max_error": v.get("max_error"),
                "median_s": r.get("median_s"),
                "min_s": r.get("min_s"),
                "max_s": r.get("max_s"),
                "bytes_per_lup": j["min_bytes_per_lup"],
                "points": points,
            }
            if j["kernel"] == "copy":
                copies.setdefault(j["backend"], []).append(row)
                continue
            lbm = j["lbm"]
            step = "single"
            m = re.search(r"_(even|odd)$", j["kernel"])
            if m:
                step = m.group(1)
            row.update(
                kernel=lbm["name"],
                lattice=lbm["lattice"],
                collision=lbm["collision"]["kind"],
                streaming=lbm["streaming"],
                layout={"fzyx": "SoA (fzyx)", "zyxf": "AoS (zyxf)"}[lbm["layout"]],
                ghost=lbm.get("ghost", 1),
                step=step,
            )
            runs.append(row)
    return runs, copies, device


def copy_bandwidths(copies):
    out = {}
    for backend, rows in copies.items():
        good = [r for r in rows if r["verified"] and r["median_s"]]
        if good:
            best = max(good, key=lambda r: r["points"] * r["bytes_per_lup"] / r["median_s"])
            out[backend] = {
                "bytes_per_s": best["points"] * best["bytes_per_lup"] / best["median_s"],
                "dtype": best["dtype"],
                "config": best["config"],
                "domain": best["domain"],
            }
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw", nargs="+", help="RAW_DIR[:COMMIT], oldest call first")
    ap.add_argument("--out")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    ap.add_argument("--command", default="bench/lbm-gpu.sh target/release/stencilscope OUT")
    a = ap.parse_args()

    calls, runs, device, superseded = [], [], None, []
    for i, arg in enumerate(a.raw):
        raw, _, commit = arg.partition(":")
        call_runs, copies, dev = load(raw)
        if dev is None:
            sys.exit(f"no run JSON in {raw}")
        device = device or dev
        bw = copy_bandwidths(copies)
        calls.append({"call": i + 1, "commit": commit or "unknown", "copy_bandwidth": bw})
        for r in call_runs:
            r["call"], r["commit"] = i + 1, commit or "unknown"
            r["copy"] = bw.get(r["backend"])
        redone = {(r["kernel"], r["step"], r["backend"]) for r in call_runs}
        superseded += [r for r in runs if (r["kernel"], r["step"], r["backend"]) in redone]
        runs = [r for r in runs if (r["kernel"], r["step"], r["backend"]) not in redone]
        runs += call_runs

    def row_of(r):
        ok = r["status"] == "passed" and r["verified"] and r["median_s"]
        row = {k: r[k] for k in (
            "kernel", "lattice", "collision", "dtype", "streaming", "layout", "ghost", "step",
            "backend", "config", "block", "fold", "status", "verified", "max_error",
            "median_s", "min_s", "max_s", "bytes_per_lup", "error", "call", "commit")}
        if ok:
            bw = r["points"] * r["bytes_per_lup"] / r["median_s"]
            row["mlups"] = r["points"] / r["median_s"] / 1e6
            row["bandwidth_min_bytes_per_s"] = bw
            row["fraction_of_copy"] = bw / r["copy"]["bytes_per_s"] if r["copy"] else None
        return row

    out_runs = [row_of(r) for r in runs]
    old_runs = [row_of(r) for r in superseded]

    # AA: even + odd kernel with the same configuration = one double step.
    pairs = []
    by = {}
    for r, raw in zip(out_runs, runs):
        if r["step"] in ("even", "odd") and "mlups" in r:
            by.setdefault((r["kernel"], r["backend"], r["config"]), {})[r["step"]] = (r, raw)
    for (kernel, backend, config), d in sorted(by.items()):
        if set(d) != {"even", "odd"}:
            continue
        (e, raw), (o, _) = d["even"], d["odd"]
        t = e["median_s"] + o["median_s"]
        bw = 2 * raw["points"] * raw["bytes_per_lup"] / t
        c = raw["copy"]
        pairs.append({
            "kernel": kernel, "lattice": e["lattice"], "collision": e["collision"],
            "dtype": e["dtype"], "streaming": "aa", "layout": e["layout"], "ghost": e["ghost"],
            "backend": backend, "config": config, "call": e["call"], "commit": e["commit"], "median_s_even": e["median_s"],
            "median_s_odd": o["median_s"], "mlups": 2 * raw["points"] / t / 1e6,
            "bandwidth_min_bytes_per_s": bw,
            "fraction_of_copy": bw / c["bytes_per_s"] if c else None,
        })

    # Best configuration per variant and backend (pull: single kernel; AA: pair).
    best = {}
    for r in [x for x in out_runs if x["step"] == "single" and "mlups" in x] + pairs:
        key = (r["kernel"], r["backend"])
        if key not in best or r["mlups"] > best[key]["mlups"]:
            best[key] = r
    best_rows = sorted(best.values(), key=lambda r: (r["lattice"], r["dtype"], r["streaming"],
                                                      r["layout"], r["ghost"], r["backend"]))

    # The NVIDIA driver version as nvidia-smi reports it (the backends report API versions).
    driver = device["driver"]
    smi = os.path.join(a.raw[0].partition(":")[0], "nvidia-smi.csv")
    if os.path.exists(smi):
        lines_ = open(smi).read().splitlines()
        if len(lines_) > 1 and "," in lines_[1]:
            driver = lines_[1].split(",")[1].strip()
    doc = {
        "gpu": device["name"],
        "driver": driver,
        "commit": ", ".join(f"call {c['call']}: {c['commit']}" for c in calls),
        "date": a.date,
        "command": a.command,
        "domain": runs[0]["domain"] if runs else None,
        "method": __doc__.strip().split("\n\n", 2)[-1].replace("\n", " "),
        "calls": calls,
        "runs": out_runs,
        "aa_pairs": pairs,
        "best": best_rows,
        "superseded": old_runs,
    }

    tb = lambda x: f"{x / 1e12:.3f}"
    pct = lambda x: f"{100 * x:.1f}%" if x is not None else "-"
    lines = [f"# LBM on {device['name']}", "",
             f"Driver {driver}, {doc['commit']}, {a.date}, domain "
             f"{'x'.join(map(str, doc['domain'] or []))}. Produced by `{a.command}`.", "",
             "## Copy bandwidth (best verified copy-kernel run per backend and call)", "",
             "| call | backend | TB/s | dtype | config |", "|---|---|---|---|---|"]
    for c in calls:
        for b, cb in sorted(c["copy_bandwidth"].items()):
            lines.append(f"| {c['call']} | {b} | {tb(cb['bytes_per_s'])} | {cb['dtype']} | "
                         f"{cb['config']} |")
    lines += ["", "## Best configuration per variant and backend", "",
              "AA rows: even + odd kernel, two updates per cell.", "",
              "| lattice | collision | dtype | streaming | layout | ghost | backend | call | config | MLUP/s | TB/s at min. volume | of copy |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in best_rows:
        lines.append(
            f"| {r['lattice']} | {r['collision'].upper()} | {r['dtype']} | {r['streaming']} | "
            f"{r['layout']} | {r['ghost']} | {r['backend']} | {r['call']} | {r['config']} | "
            f"{r['mlups']:,.0f} | "
            f"{tb(r['bandwidth_min_bytes_per_s'])} | {pct(r['fraction_of_copy'])} |")
    def table(title, rows):
        out = ["", title, "",
               "| kernel | step | backend | call | config | median ms | MLUP/s | of copy | verified |",
               "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            head = f"| {r['kernel']} | {r['step']} | {r['backend']} | {r['call']} | {r['config']} |"
            if "mlups" in r:
                out.append(f"{head} {1e3 * r['median_s']:.3f} | {r['mlups']:,.0f} | "
                           f"{pct(r['fraction_of_copy'])} | yes (max error {r['max_error']:.1e}) |")
            else:
                why = r["error"] or ("verification failed" if not r["verified"] else r["status"])
                out.append(f"{head} {r['status']}: {why} | | | |")
        return out

    lines += table("## Every run", out_runs)
    if old_runs:
        lines += table("## Superseded by a later call (same kernel, step and backend)", old_runs)
    text = "\n".join(lines) + "\n"
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        json.dump(doc, open(os.path.join(a.out, "lbm.json"), "w"), indent=1)
        open(os.path.join(a.out, "tables.md"), "w").write(text)
    print(text)


if __name__ == "__main__":
    main()

//! `stencilscope bench` end to end on the CPU devices (PoCL, lavapipe): a tiny domain and a tiny
//! space, the summary's keys, the report, resuming after an interruption, and Ctrl-C.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use stencilscope::runtime::{skip_or_fail, BackendKind};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stencilscope"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c.env("XDG_RUNTIME_DIR", std::env::temp_dir());
    c
}

/// Whether the backend has a device; reports the skip (or fails where required) otherwise.
fn has_device(kind: BackendKind, test: &str) -> bool {
    match kind.devices() {
        Ok(d) if !d.is_empty() => true,
        Ok(_) => {
            skip_or_fail(kind.name(), test, "no device listed");
            false
        }
        Err(e) => {
            skip_or_fail(kind.name(), test, &e.to_string());
            false
        }
    }
}

/// A sweep over 10 configurations of 64 threads (5 block shapes × folding 1 or 2 in z).
fn sweep_args(backend: &str, out: &Path, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "bench",
        "stencils/star3d_r1.toml",
        "--machine",
        "h200",
        "--backend",
        backend,
        "--domain",
        "24,16,12",
        "--min-threads",
        "64",
        "--max-threads",
        "64",
        "--max-bz",
        "2",
        "--folds",
        "1,2",
        "--fold-dims",
        "z",
        "--min-bx",
        "16",
        "--out",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(out.to_str().unwrap().to_string());
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run(args: &[String]) -> Output {
    bin().args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn summary(path: PathBuf) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn end_to_end(kind: BackendKind, test: &str) {
    if !has_device(kind, test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = run(&sweep_args(
        kind.name(),
        dir.path(),
        &["--top", "3", "--sample", "3", "--seed", "2"],
    ));
    assert!(o.status.success(), "{}", text(&o));
    let name = format!("star3d_r1-f64-{}", kind.name());
    let s = summary(dir.path().join(format!("{name}.summary.json")));
    for key in [
        "device",
        "driver",
        "commit",
        "date",
        "kernel",
        "dtype",
        "backend",
        "domain",
        "configs_measured",
        "configs_refused",
        "oracle",
        "model_top1",
        "pct_of_oracle_top1",
        "pct_of_oracle_best_of_top5",
        "spearman",
        "kendall_tau",
        "geomean_rel_error",
        "speedup_over_default",
        "speedup_over_best_fixed",
    ] {
        assert!(s.get(key).is_some(), "summary lacks `{key}`: {s}");
    }
    // Top 3 + the default (8,8,4), outside this space, + 3 sampled = 7, all verified.
    assert_eq!(s["configs_planned"], 7);
    assert_eq!(s["configs_measured"], 7, "{s}");
    assert_eq!(s["complete"], true);
    assert_eq!(s["kernel"], "star3d_r1");
    assert_eq!(s["backend"], kind.name());
    let oracle = s["oracle"]["median_s"].as_f64().unwrap();
    let top1 = &s["model_top1"];
    assert_eq!(top1["rank"], 1);
    assert!(top1["predicted_s"].as_f64().unwrap() > 0.0);
    let measured = top1["measured_s"].as_f64().unwrap();
    assert!(oracle > 0.0 && oracle <= measured);
    let pct = s["pct_of_oracle_top1"].as_f64().unwrap();
    assert!((pct - 100.0 * oracle / measured).abs() < 1e-9);
    assert!(pct <= s["pct_of_oracle_best_of_top5"].as_f64().unwrap());
    assert!(s["spearman"].as_f64().unwrap().abs() <= 1.0);
    assert!(s["geomean_rel_error"].as_f64().unwrap() >= 0.0);
    assert!(s["speedup_over_default"].as_f64().unwrap() > 0.0);
    assert!(s["speedup_over_best_fixed"].is_null(), "one sweep has none");
    // Every record was timed ten times and verified in full (tiny domain: `auto` is full).
    let records = lines(&dir.path().join(format!("{name}.jsonl")));
    assert_eq!(records.len(), 7);
    for r in &records {
        assert_eq!(r["status"], "passed", "{r}");
        assert_eq!(r["times"].as_array().unwrap().len(), 10);
        assert_eq!(r["verification"]["passed"], true);
        assert!(r["verification"]["sampled_rows"].is_null());
    }
    let html = std::fs::read_to_string(dir.path().join(format!("{name}.html"))).unwrap();
    assert!(html.contains("<svg") && html.contains("predicted limiter"));
    assert!(html.contains("block/fold"));

    // A second sweep (sampled verification, another dtype), then both summarised together:
    // the best fixed configuration is defined and the summaries name it.
    let o = run(&sweep_args(
        kind.name(),
        dir.path(),
        &[
            "--top", "3", "--sample", "3", "--dtype", "f32", "--verify", "sampled",
        ],
    ));
    assert!(o.status.success(), "{}", text(&o));
    let f32_name = format!("star3d_r1-f32-{}", kind.name());
    let records = lines(&dir.path().join(format!("{f32_name}.jsonl")));
    assert!(records
        .iter()
        .all(|r| r["verification"]["sampled_rows"].as_u64().unwrap() > 0));
    let out2 = dir.path().join("both");
    let o = bin()
        .args(["bench", "summarize"])
        .arg(dir.path().join(format!("{name}.sweep.json")))
        .arg(dir.path().join(format!("{f32_name}.sweep.json")))
        .arg("--out")
        .arg(&out2)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("best fixed configuration over 2 sweeps"));
    let both: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out2.join("summary.json")).unwrap()).unwrap();
    for s in both.as_array().unwrap() {
        assert!(s["speedup_over_best_fixed"].as_f64().unwrap() > 0.0, "{s}");
    }
    assert!(std::fs::read_to_string(out2.join("summary.md"))
        .unwrap()
        .contains("| star3d_r1-f32-"));
}

#[test]
fn bench_end_to_end_opencl() {
    end_to_end(BackendKind::OpenCl, "bench_end_to_end_opencl");
}

#[test]
fn bench_end_to_end_wgpu() {
    end_to_end(BackendKind::Wgpu, "bench_end_to_end_wgpu");
}

#[test]
fn bench_resumes_after_an_interruption() {
    let test = "bench_resumes_after_an_interruption";
    if !has_device(BackendKind::OpenCl, test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let args = sweep_args("opencl", dir.path(), &["--all"]);
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let cache = dir.path().join("star3d_r1-f64-opencl.jsonl");
    let full = lines(&cache);
    assert_eq!(
        full.len(),
        11,
        "10 configurations of the space + the default"
    );
    // An interruption in the middle of writing the 9th line: 8 complete lines and a torn one.
    let bytes = std::fs::read(&cache).unwrap();
    let ends: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    std::fs::write(&cache, &bytes[..ends[7] + 40]).unwrap();
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("dropped an incomplete last line (40 bytes)"),
        "{t}"
    );
    assert!(t.contains("8 already in"), "{t}");
    assert!(t.contains("3 to measure"), "{t}");
    let resumed = lines(&cache);
    assert_eq!(resumed.len(), 11);
    // The first eight records are kept as they were; each configuration appears once.
    assert_eq!(resumed[..8], full[..8]);
    let mut configs: Vec<String> = resumed.iter().map(|r| r["config"].to_string()).collect();
    configs.sort();
    configs.dedup();
    assert_eq!(configs.len(), 11);
    let s = summary(dir.path().join("star3d_r1-f64-opencl.summary.json"));
    assert_eq!(s["complete"], true);
    assert_eq!(s["configs_measured"], 11);
    // A third run measures nothing.
    let t = text(&run(&args));
    assert!(
        t.contains("11 already in") && t.contains("0 to measure"),
        "{t}"
    );
}

#[test]
fn ctrl_c_finishes_the_current_line_and_resume_completes() {
    let test = "ctrl_c_finishes_the_current_line_and_resume_completes";
    if !has_device(BackendKind::OpenCl, test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A larger domain, so that a configuration takes long enough to be interrupted mid-sweep.
    let mut args = sweep_args("opencl", dir.path(), &["--all", "--reps", "40"]);
    let d = args.iter().position(|a| a == "24,16,12").unwrap();
    args[d] = "96,64,48".into();
    let mut child = bin()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let cache = dir.path().join("star3d_r1-f64-opencl.jsonl");
    let t0 = Instant::now();
    while std::fs::read(&cache).map_or(0, |b| b.iter().filter(|c| **c == b'\n').count()) < 2 {
        assert!(t0.elapsed() < Duration::from_secs(120), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    let n = lines(&cache).len();
    if status.success() {
        // The sweep finished before the signal arrived: nothing left to check.
        assert_eq!(n, 11);
        return;
    }
    assert_eq!(status.code(), Some(130));
    // Every line is complete and parses; the sweep is partial.
    assert!((2..11).contains(&n), "{n}");
    assert!(std::fs::read(&cache).unwrap().ends_with(b"\n"));
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(&format!("{n} already in")));
    assert_eq!(lines(&cache).len(), 11);
}

#[test]
fn bench_rejects_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&sweep_args("opencl", dir.path(), &[]));
    assert!(!o.status.success());
    assert!(text(&o).contains("--sample N"), "{}", text(&o));
    let o = run(&sweep_args("opencl", dir.path(), &["--all", "--reps", "5"]));
    assert!(!o.status.success());
    assert!(text(&o).contains("at least 10"), "{}", text(&o));
    let o = run(&sweep_args(
        "opencl",
        dir.path(),
        &["--all", "--fold-dims", "w"],
    ));
    assert!(text(&o).contains("--fold-dims"), "{}", text(&o));
    let o = run(&sweep_args(
        "opencl",
        dir.path(),
        &["--all", "--sample", "3"],
    ));
    assert!(!o.status.success());
    let o = bin()
        .args(["bench", "summarize", "no-such.sweep.json"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(text(&o).contains("no-such.sweep.json"));
}

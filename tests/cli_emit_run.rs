//! The `emit`, `run` and `devices` commands as a user calls them.

#[path = "support/cli.rs"]
mod cli;
use cli::{bin, out};

#[test]
fn emit_prints_each_target() {
    for (target, marker) in [
        ("opencl", "reqd_work_group_size(32, 4, 2)"),
        ("wgsl", "@workgroup_size(32, 4, 2)"),
        ("cuda", "__launch_bounds__(256)"),
    ] {
        let (ok, stdout, stderr) = out(bin().args([
            "emit",
            "stencils/star3d_r4.toml",
            "--target",
            target,
            "--block",
            "32,4,2",
            "--fold",
            "1,1,2",
            "--domain",
            "100,60,50",
            "--dtype",
            "f32",
        ]));
        assert!(ok, "{stderr}");
        assert!(stdout.contains(marker), "{target}: {stdout}");
        assert!(stdout.contains("domain 100x60x50"));
    }
}

#[test]
fn emit_writes_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("k.wgsl");
    let (ok, _, stderr) = out(bin().args([
        "emit",
        "stencils/star2d_r1.toml",
        "--target",
        "wgsl",
        "--block",
        "64,4",
        "-o",
        p.to_str().unwrap(),
    ]));
    assert!(ok, "{stderr}");
    let src = std::fs::read_to_string(&p).unwrap();
    assert!(src.contains("domain 8192x8192"));
}

#[test]
fn bad_arguments_are_clear_errors() {
    let cases: [(&[&str], &str); 5] = [
        (
            &[
                "emit",
                "stencils/star2d_r1.toml",
                "--target",
                "opencl",
                "--block",
                "32,4,2",
            ],
            "block z and fold z must be 1",
        ),
        (
            &[
                "emit",
                "stencils/star3d_r1.toml",
                "--target",
                "cuda",
                "--block",
                "32,0,2",
            ],
            "not a positive integer",
        ),
        (
            &[
                "emit",
                "stencils/star3d_r1.toml",
                "--target",
                "wgsl",
                "--block",
                "32,4,2",
                "--domain",
                "10,10",
            ],
            "kernel is 3D but the domain 10x10 is 2D",
        ),
        (
            &[
                "run",
                "stencils/star3d_r1.toml",
                "--backend",
                "opencl",
                "--block",
                "32,4,2",
                "--reps",
                "5",
            ],
            "at least 10 timed launches",
        ),
        (
            &[
                "run",
                "--copy",
                "--backend",
                "wgpu",
                "--block",
                "32,4,2",
                "--block",
                "8,8,1",
                "--fold",
                "1,1,1",
                "--fold",
                "1,1,2",
                "--fold",
                "1,2,1",
                "--domain",
                "8,8,8",
            ],
            "2 --block values but 3 --fold values",
        ),
    ];
    let fails = |args: &[&str], msg: &str| {
        let (ok, _, stderr) = out(bin().args(args));
        assert!(!ok, "{args:?} succeeded");
        assert!(stderr.contains(msg), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    };
    for (args, msg) in cases {
        fails(args, msg);
    }
    // Each issue order's option without its order, and a group of no warps.
    for (extra, msg) in [
        (
            &["--window", "4"][..],
            "--window sets the loads in flight of `--issue-order window`",
        ),
        (
            &["--issue-order", "window", "--interleave", "3"][..],
            "--interleave sets the warps in lockstep of `--issue-order interleave`",
        ),
        (
            &["--issue-order", "interleave", "--interleave", "0"][..],
            "0 is not in 1..=4096",
        ),
        (
            &["--timing", "22,16,35,270,550"][..],
            "--timing sets the timing model of `--issue-order timed`",
        ),
        (
            &["--issue-order", "timed", "--timing", "22,16,35"][..],
            "has 3 numbers; give registers,queue,l1,l2,dram",
        ),
        (
            &["--issue-order", "timed", "--timing", "22,0,35,270,550"][..],
            "is not five or six positive integers",
        ),
    ] {
        fails(&[&simulate_args("16,16,16")[..], extra].concat(), msg);
    }
}

/// `volumes` simulating star3d_r1 on `domain` (one block shape), before the issue order.
fn simulate_args(domain: &str) -> [&str; 9] {
    [
        "volumes",
        "stencils/star3d_r1.toml",
        "--machine",
        "h100-sxm",
        "--domain",
        domain,
        "--block",
        "8,4,2",
        "--simulate",
    ]
}

#[test]
fn volumes_simulates_in_each_issue_order() {
    for order in [
        &["--issue-order", "window", "--window", "3"][..],
        &["--issue-order", "interleave"][..],
        &["--issue-order", "interleave", "--interleave", "2"][..],
        &["--issue-order", "timed"][..],
        &["--issue-order", "timed", "--timing", "4,8,30,200,400"][..],
    ] {
        let (ok, stdout, stderr) = out(bin().args(simulate_args("32,16,16")).args(order));
        assert!(ok, "{order:?}: {stderr}");
        let l2 = stdout.lines().find(|l| l.starts_with("L2 load")).unwrap();
        assert_eq!(l2.matches("B/LUP").count(), 3, "{order:?}: {stdout}");
    }
}

#[test]
fn devices_lists_every_backend() {
    let (ok, stdout, stderr) = out(bin().arg("devices"));
    assert!(ok, "{stderr}");
    for b in ["opencl", "wgpu", "cuda"] {
        assert!(stdout.lines().any(|l| l.starts_with(b)), "{b}: {stdout}");
    }
}

#[test]
fn run_reports_time_bandwidth_and_verification() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let (ok, stdout, stderr) = out(bin().args([
        "run",
        "stencils/star3d_r1.toml",
        "--backend",
        "opencl",
        "--domain",
        "24,10,6",
        "--block",
        "8,2,2",
        "--fold",
        "1,1,2",
        "--json",
        json.to_str().unwrap(),
    ]));
    if !ok && stderr.contains("opencl is not available") {
        stencilscope::runtime::skip_or_fail(
            "opencl",
            "run_reports_time_bandwidth_and_verification",
            &stderr,
        );
        return;
    }
    assert!(ok, "{stderr}");
    assert!(stdout.contains("verification passed"), "{stdout}");
    assert!(stdout.contains("LUP/s") && stdout.contains("B/s at minimal volume"));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["min_bytes_per_lup"], 16);
    assert_eq!(j["results"][0]["status"], "passed");
    assert_eq!(j["results"][0]["times"].as_array().unwrap().len(), 10);
}

#[test]
fn emit_takes_lbm_files_and_aa_steps() {
    for (step, name) in [
        (None, "d3q19_srt_aa_odd"),
        (Some("even"), "d3q19_srt_aa_even"),
        (Some("odd"), "d3q19_srt_aa_odd"),
    ] {
        let mut args = vec![
            "emit",
            "lbm/d3q19_srt_aa.toml",
            "--target",
            "cuda",
            "--block",
            "64,2,1",
            "--domain",
            "40,20,10",
        ];
        if let Some(s) = step {
            args.extend(["--step", s]);
        }
        let (ok, stdout, stderr) = out(bin().args(&args));
        assert!(ok, "{stderr}");
        assert!(
            stdout.contains(&format!("void __launch_bounds__(128) {name}(")),
            "{step:?}: {stdout}"
        );
    }
    let (ok, stdout, stderr) = out(bin().args([
        "emit",
        "lbm/d2q9_srt_pull.toml",
        "--target",
        "wgsl",
        "--block",
        "32,4",
        "--domain",
        "30,20",
    ]));
    assert!(ok, "{stderr}");
    assert!(stdout.contains("@workgroup_size(32, 4, 1)"), "{stdout}");
    // A step for a pattern without steps, and for a stencil, are clear errors.
    for file in ["lbm/d3q19_srt_pull.toml", "stencils/star3d_r1.toml"] {
        let (ok, _, stderr) = out(bin().args([
            "emit", file, "--target", "opencl", "--block", "32,1,1", "--step", "even",
        ]));
        assert!(!ok && !stderr.contains("panicked"), "{file}: {stderr}");
        assert!(stderr.contains("step"), "{file}: {stderr}");
    }
}

#[test]
fn run_times_and_verifies_lbm_kernels() {
    let dir = tempfile::tempdir().unwrap();
    for (file, step, domain, block, bytes) in [
        ("lbm/d2q9_srt_pull.toml", None, "21,10", "16,4", 144),
        ("lbm/d3q19_srt_aa.toml", Some("even"), "9,6,5", "8,2,2", 152),
        ("lbm/d3q19_srt_aa.toml", None, "9,6,5", "8,2,2", 152),
    ] {
        let json = dir.path().join("r.json");
        let mut args = vec![
            "run",
            file,
            "--backend",
            "opencl",
            "--domain",
            domain,
            "--block",
            block,
            "--json",
            json.to_str().unwrap(),
        ];
        if let Some(s) = step {
            args.extend(["--step", s]);
        }
        let (ok, stdout, stderr) = out(bin().args(&args));
        if !ok && stderr.contains("opencl is not available") {
            stencilscope::runtime::skip_or_fail(
                "opencl",
                "run_times_and_verifies_lbm_kernels",
                &stderr,
            );
            return;
        }
        assert!(ok, "{file} {step:?}: {stderr}");
        assert!(stdout.contains("verification passed"), "{stdout}");
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(j["min_bytes_per_lup"], bytes, "{file}");
        assert_eq!(j["results"][0]["status"], "passed");
        let kernel = j["kernel"].as_str().unwrap();
        match step {
            Some("even") => assert!(kernel.ends_with("_even"), "{kernel}"),
            _ if file.contains("_aa") => assert!(kernel.ends_with("_odd"), "{kernel}"),
            _ => {}
        }
        assert!(j["lbm"]["streaming"].is_string(), "{j}");
    }
}

//! The `counters` command as a user calls it: without ncu, with a stand-in ncu that replays saved
//! output (the orchestration: arguments, files, report), and on ncu CSV saved from a real run.

use std::path::{Path, PathBuf};

#[path = "support/cli.rs"]
mod cli;
use cli::{bin, out};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The arguments of a `counters` run of star3d_r4 on 64³ (H200) with the ncu binary `ncu` (a
/// stand-in, or one that is missing), the configurations `configs` and the report `t` in `report`.
/// `counters` on star3d_r4 for the H200 on a 64³ domain: what every stand-in run analyses.
const STAR_64: [&str; 6] = [
    "counters",
    "stencils/star3d_r4.toml",
    "--machine",
    "h200",
    "--domain",
    "64,64,64",
];

fn stand_in_args(configs: &str, ncu: &Path, report: &Path) -> Vec<String> {
    let mut args: Vec<String> = STAR_64.map(String::from).into();
    args.extend([
        "--configs".into(),
        configs.into(),
        "--ncu".into(),
        ncu.display().to_string(),
        "--out".into(),
        report.display().to_string(),
        "--name".into(),
        "t".into(),
    ]);
    args
}

#[test]
fn missing_ncu_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = out(bin().args(stand_in_args(
        "sample:2",
        Path::new("/nonexistent/bin/ncu"),
        dir.path(),
    )));
    assert!(!ok);
    assert!(
        stderr.contains("Nsight Compute (ncu) is not installed or not found"),
        "{stderr}"
    );
    assert!(stderr.contains("/nonexistent/bin/ncu"), "{stderr}");
    // Without --ncu: an empty PATH and no $NCU find nothing (unless a toolkit sits in the
    // default places, as on a GPU machine).
    if !Path::new("/usr/local/cuda/bin/ncu").exists()
        && !Path::new("/opt/nvidia/nsight-compute/ncu").exists()
    {
        let (ok, _, stderr) = out(bin()
            .env("PATH", dir.path())
            .env_remove("NCU")
            .args(STAR_64)
            .args(["--out", &dir.path().display().to_string()]));
        assert!(!ok);
        assert!(stderr.contains("ncu on PATH"), "{stderr}");
    }
}

#[test]
fn bad_l2_fetch_size_is_an_error() {
    let (ok, _, stderr) = out(bin().args([
        "counters",
        "stencils/star3d_r4.toml",
        "--machine",
        "h200",
        "--l2-fetch-bytes",
        "48",
        "--list",
    ]));
    assert!(!ok);
    assert!(stderr.contains("use 32, 64 or 128"), "{stderr}");
}

/// A stand-in for ncu: answers `--version` and `--query-metrics`, records the profiling
/// command, writes the twin's info file and an empty report where the real ones would be, and
/// prints `$FAKE_CSV` on `--import`; with `$FAKE_DENY` set it profiles nothing and names ncu's
/// permission error instead, exiting 0 as ncu may.
#[cfg(unix)]
fn fake_ncu(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = r#"#!/bin/sh
case "$1" in
  --version) echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 0.0 (stand-in)"; exit 0;;
  --query-metrics) printf 'Device GH100\n%s\n' dram__bytes_read dram__bytes_write lts__t_sectors_srcunit_tex_op_read \
      lts__t_sectors_srcunit_tex_op_write l1tex__t_sectors_pipe_lsu_mem_global_op_ld \
      l1tex__data_pipe_lsu_wavefronts_mem_lg gpu__time_duration; exit 0;;
  --import) cat "$FAKE_CSV"; exit 0;;
esac
echo "$@" > "$FAKE_LOG"
if [ -n "$FAKE_DENY" ]; then
  echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0."
  exit 0
fi
export_to=""; prev=""; last=""
for a in "$@"; do
  [ "$prev" = "--export" ] && export_to="$a"
  prev="$a"; last="$a"
done
: > "$export_to.ncu-rep"
cp "$FAKE_TWIN" "$(dirname "$last")/twin.json"
echo "==PROF== Disconnected"
"#;
    let p = dir.join("ncu");
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[cfg(unix)]
#[test]
fn stand_in_ncu_drives_the_whole_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let ncu = fake_ncu(dir.path());
    let configs = dir.path().join("configs.txt");
    std::fs::write(&configs, "32,4,2 1,1,2\n64,4,1 1,1,4\n").unwrap();
    let twin = dir.path().join("twin.json");
    std::fs::write(
        &twin,
        r#"{"device":{"name":"Stand-in GPU","compute_capability":"9.0","driver_api":"13.0","sms":132,"l2_bytes":52428800},"flush_bytes":209715200,"kernels":[["ssk_32x4x2_1x1x2",40],["ssk_64x4x1_1x1x4",56]]}"#,
    )
    .unwrap();
    // Counters for both configurations (no registers reported, so the twin's are used).
    let mut csv =
        String::from("\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n");
    let n = 64.0 * 64.0 * 64.0;
    for (id, name) in [(1, "ssk_32x4x2_1x1x2"), (3, "ssk_64x4x1_1x1x4")] {
        for (m, unit, v) in [
            ("dram__bytes_read.sum", "byte", 8.4 * n),
            ("dram__bytes_write.sum", "byte", 4.0 * n),
            (
                "lts__t_sectors_srcunit_tex_op_read.sum",
                "sector",
                40.0 * n / 32.0,
            ),
            (
                "lts__t_sectors_srcunit_tex_op_write.sum",
                "sector",
                8.0 * n / 32.0,
            ),
            (
                "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                "sector",
                206.0 * n / 32.0,
            ),
            ("l1tex__data_pipe_lsu_wavefronts_mem_lg.sum", "", 2.4 * n),
        ] {
            csv.push_str(&format!("\"{id}\",\"{name}\",\"{m}\",\"{unit}\",\"{v}\"\n"));
        }
        csv.push_str(&format!(
            "\"{}\",\"ssflush\",\"dram__bytes_write.sum\",\"byte\",\"{}\"\n",
            id + 1,
            4.0 * n
        ));
    }
    let csv_path = dir.path().join("in.csv");
    std::fs::write(&csv_path, csv).unwrap();
    let log = dir.path().join("args.txt");
    let report = dir.path().join("report");
    let (ok, stdout, stderr) = out(bin()
        .env("FAKE_CSV", &csv_path)
        .env("FAKE_TWIN", &twin)
        .env("FAKE_LOG", &log)
        .args(stand_in_args(&configs.display().to_string(), &ncu, &report))
        .args([
            "--commit",
            "abc123",
            "--ncu-section",
            "LaunchStats",
            "--carveout",
            "100",
            "--l2-fetch-bytes",
            "32",
        ]));
    assert!(ok, "{stdout}\n{stderr}");
    // ncu was asked for the documented mode and the required metrics, and ran the twin.
    let args = std::fs::read_to_string(&log).unwrap();
    for want in [
        "--replay-mode application",
        "--cache-control none",
        "--clock-control none",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "lts__t_sectors_srcunit_tex_op_read.sum",
        "lts__t_sectors_srcunit_tex_op_write.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_lg.sum",
        "counters-twin",
        "--section LaunchStats",
    ] {
        assert!(args.contains(want), "{want} missing from: {args}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("t.json")).unwrap()).unwrap();
    assert_eq!(json["format"], "stencilscope-counters");
    assert_eq!(json["commit"], "abc123");
    assert_eq!(json["carveout"], 100);
    assert_eq!(json["l2_fetch_bytes"], 32);
    // The estimates read the fetches the twin set, not the machine's 64 bytes.
    assert!(
        json["notes"].to_string().contains("32-byte L2 fetches"),
        "{}",
        json["notes"]
    );
    assert_eq!(json["device"]["name"], "Stand-in GPU");
    let records = json["records"].as_array().unwrap();
    assert_eq!(records.len(), 2);
    // Registers from the twin; DRAM store = writes in the kernel plus the write-backs after it.
    assert_eq!(records[0]["registers"], 40);
    assert_eq!(records[1]["registers"], 56);
    let store = records[0]["measured"]["dram_store"].as_f64().unwrap();
    assert!((store - 8.0).abs() < 1e-9, "{store}");
    assert!(report.join("t.html").exists());
    assert!(report.join("raw/t-twin.json").exists());
    assert!(report.join("raw/t-query-metrics.txt").exists());
    assert!(stdout.contains("DRAM store"), "{stdout}");
    // The raw CSV is kept gzipped, and analysing it again gives the same measured volumes.
    let gz = report.join("raw/t.csv.gz");
    assert!(std::fs::read(&gz).unwrap().starts_with(&[0x1f, 0x8b]));
    let again = dir.path().join("again");
    let (ok, stdout, stderr) = out(bin().args(STAR_64).args([
        "--from-csv",
        &gz.display().to_string(),
        "--twin-info",
        &report.join("raw/t-twin.json").display().to_string(),
        "--out",
        &again.display().to_string(),
        "--name",
        "t",
    ]));
    assert!(ok, "{stdout}\n{stderr}");
    let json_again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(again.join("t.json")).unwrap()).unwrap();
    for (a, b) in records
        .iter()
        .zip(json_again["records"].as_array().unwrap())
    {
        assert_eq!(a["measured"], b["measured"]);
    }
    // Metrics the device does not offer are not asked for, and the report says so.
    assert!(!args.contains("launch__registers_per_thread"), "{args}");
    assert!(json["notes"]
        .to_string()
        .contains("launch__registers_per_thread"));
}

#[cfg(unix)]
#[test]
fn counters_the_user_may_not_read_are_named_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let ncu = fake_ncu(dir.path());
    let report = dir.path().join("report");
    let (ok, stdout, stderr) = out(bin()
        .env("FAKE_DENY", "1")
        .env("FAKE_LOG", dir.path().join("args.txt"))
        .args(stand_in_args("sample:2", &ncu, &report)));
    assert!(!ok, "{stdout}");
    assert!(stderr.contains("ERR_NVGPUCTRPERM"), "{stderr}");
    assert!(
        stderr.contains("NVreg_RestrictProfilingToAdminUsers=0"),
        "{stderr}"
    );
    assert!(stderr.contains("t-ncu.log"), "{stderr}");
    assert!(!report.join("t.json").exists());
}

#[test]
fn saved_csv_of_a_real_run_is_analysed_again() {
    let csv = fixture("ncu-star3d_r4-f64-h200.csv");
    let twin = fixture("ncu-star3d_r4-f64-h200-twin.json");
    let dir = tempfile::tempdir().unwrap();
    let (ok, stdout, stderr) = out(bin().args([
        "counters",
        "stencils/star3d_r4.toml",
        "--dtype",
        "f64",
        "--machine",
        "h200",
        "--domain",
        "256,256,256",
        "--from-csv",
        &csv.display().to_string(),
        "--twin-info",
        &twin.display().to_string(),
        "--out",
        &dir.path().display().to_string(),
        "--name",
        "again",
    ]));
    assert!(ok, "{stdout}\n{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("again.json")).unwrap())
            .unwrap();
    let records = json["records"].as_array().unwrap();
    assert!(records.len() >= 2);
    for r in records {
        // Every level measured, from counters ncu reported in its own units.
        for level in [
            "l1_load_requests",
            "l1_wavefronts",
            "l2_load",
            "l2_store",
            "dram_load",
            "dram_store",
        ] {
            let v = r["measured"][level].as_f64();
            assert!(v.is_some_and(|v| v > 0.0), "{level} of {}", r["entry"]);
        }
        // A 25-point f64 stencil loads at least its 8 bytes per update from DRAM and stores 8.
        let load = r["measured"]["dram_load"].as_f64().unwrap();
        let store = r["measured"]["dram_store"].as_f64().unwrap();
        assert!((7.5..20.0).contains(&load), "{load}");
        assert!((7.5..11.0).contains(&store), "{store}");
        // This run's ncu reported no registers: the twin's compiled figure is used.
        assert_eq!(r["registers_from"], "CU_FUNC_ATTRIBUTE_NUM_REGS");
    }
}

/// The emitted issue sequence of star3d_r4 f64 with `block` and `fold` on `domain`, reversed, as
/// a line of a compiled-orders file.
fn reversed_order_line(block: [usize; 3], fold: [usize; 3], domain: [usize; 3]) -> String {
    order_line(block, fold, domain, true)
}

/// The line of a compiled-orders file giving star3d_r4 f64's emitted issue order for the
/// configuration, reversed if `reversed`.
fn order_line(block: [usize; 3], fold: [usize; 3], domain: [usize; 3], reversed: bool) -> String {
    use stencilscope::config::LaunchConfig;
    use stencilscope::counters::{CompiledOrder, CompiledOrders};
    use stencilscope::footprint::MemoryProgram;
    use stencilscope::ir::{Domain, Dtype};
    let mut k = stencilscope::spec::load_stencil("stencils/star3d_r4.toml".as_ref())
        .unwrap()
        .kernel;
    k.set_dtype(Dtype::F64);
    let d = Domain::new3(domain[0], domain[1], domain[2]);
    let c = LaunchConfig::new(block, fold);
    let prog = MemoryProgram::new(&k, &d, &c).unwrap();
    let mut order: Vec<(usize, usize)> = prog.issued_sequence().collect();
    if reversed {
        order.reverse();
    }
    let order = CompiledOrder {
        steps: order,
        ..CompiledOrder::default()
    };
    format!("{}\n", CompiledOrders::line(&k, &c, &d, &order))
}

#[test]
fn compiled_orders_reach_the_estimates_of_a_saved_run() {
    let csv = fixture("ncu-star3d_r4-f64-h200.csv");
    let twin = fixture("ncu-star3d_r4-f64-h200-twin.json");
    let dir = tempfile::tempdir().unwrap();
    let run_with = |name: &str, orders: &[&Path]| {
        let mut args = vec![
            "counters".to_string(),
            "stencils/star3d_r4.toml".into(),
            "--dtype".into(),
            "f64".into(),
            "--machine".into(),
            "h200".into(),
            "--domain".into(),
            "256,256,256".into(),
            "--from-csv".into(),
            csv.display().to_string(),
            "--twin-info".into(),
            twin.display().to_string(),
            "--out".into(),
            dir.path().display().to_string(),
            "--name".into(),
            name.into(),
        ];
        for o in orders {
            args.extend(["--compiled-order".into(), o.display().to_string()]);
        }
        out(bin().args(&args))
    };
    let run = |name: &str, orders: Option<&Path>| run_with(name, orders.as_slice());
    let report = |name: &str| -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(format!("{name}.json"))).unwrap(),
        )
        .unwrap()
    };
    let (ok, stdout, stderr) = run("emitted", None);
    assert!(ok, "{stdout}\n{stderr}");
    let emitted = report("emitted");
    let first = &emitted["records"][0];
    // Record `i`'s block or fold.
    let cfg_of = |i: usize, key: &str| -> [usize; 3] {
        let v: Vec<usize> = emitted["records"][i]["config"][key]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as usize)
            .collect();
        [v[0], v[1], v[2]]
    };
    let (block, fold) = (cfg_of(0, "block"), cfg_of(0, "fold"));
    let orders = dir.path().join("orders.txt");
    std::fs::write(&orders, reversed_order_line(block, fold, [256, 256, 256])).unwrap();
    let (ok, stdout, stderr) = run("compiled", Some(&orders));
    assert!(ok, "{stdout}\n{stderr}");
    let compiled = report("compiled");
    let records = compiled["records"].as_array().unwrap();
    assert_eq!(records[0]["compiled_order"], true);
    assert!(records[1..].iter().all(|r| r["compiled_order"] == false));
    assert_eq!(records[1]["estimate"], emitted["records"][1]["estimate"]);
    assert_ne!(records[0]["estimate"], first["estimate"]);
    let n = records.len();
    assert!(
        stdout.contains(&format!(
            "1 of {n} configurations estimated with the compiled issue order"
        )),
        "{stdout}"
    );
    // A second file adds the configurations the first lacks (the second record's), not the
    // first's again: its line for the first configuration differs and is not taken.
    let more = dir.path().join("more.txt");
    std::fs::write(
        &more,
        order_line(block, fold, [256, 256, 256], false)
            + &reversed_order_line(cfg_of(1, "block"), cfg_of(1, "fold"), [256, 256, 256]),
    )
    .unwrap();
    let (ok, stdout, stderr) = run_with("two", &[&orders, &more]);
    assert!(ok, "{stdout}\n{stderr}");
    let two = report("two");
    let records2 = two["records"].as_array().unwrap();
    assert_eq!(records2[0]["estimate"], records[0]["estimate"]);
    assert_eq!(records2[1]["compiled_order"], true);
    assert_ne!(records2[1]["estimate"], emitted["records"][1]["estimate"]);
    assert!(records2[2..].iter().all(|r| r["compiled_order"] == false));
    assert!(stdout.contains("and, where it lacks them, "), "{stdout}");
    // Asking for the emitted order and giving orders at once is refused before anything runs.
    let mut args: Vec<String> = [
        "counters",
        "stencils/star3d_r4.toml",
        "--machine",
        "h200",
        "--emitted-order",
        "--compiled-order",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    args.push(orders.display().to_string());
    let (ok, _, stderr) = out(bin().args(&args));
    assert!(!ok);
    assert!(stderr.contains("--emitted-order"), "{stderr}");
    // A malformed file is one message naming its line, and no report.
    std::fs::write(&orders, "# orders\nstar3d_r4 f64 32,4,2 1,1,2: 0,0\n").unwrap();
    let (ok, _, stderr) = run("bad", Some(&orders));
    assert!(!ok);
    assert!(stderr.contains("orders.txt, line 2:"), "{stderr}");
    assert!(stderr.contains("5 words, found 4"), "{stderr}");
}

#[test]
fn volumes_count_the_spills_of_a_compiled_order() {
    // D3Q19 SoA 16x64x1 fold 4x1x1 with the float options spills 400 bytes per thread; the
    // timed twin's orders with its stack accesses (H100).
    let orders = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "bench/results/h100/counters/timed-twin/raw/d3q19_srt_pull-soa-compiled-order-stack.txt",
    );
    let volumes = |orders: &Path| {
        out(bin().args([
            "volumes",
            "lbm/d3q19_srt_pull.toml",
            "--machine",
            "h100-sxm",
            "--domain",
            "256,256,256",
            "--block",
            "16,64,1",
            "--fold",
            "4,1,1",
            "--registers",
            "64",
            "--compiled-order",
            &orders.display().to_string(),
        ]))
    };
    let (ok, stdout, stderr) = volumes(&orders);
    assert!(ok, "{stderr}");
    // The output's 76 B/LUP and the 116 spilled (measured: 192.0).
    assert!(
        stdout.contains("L2 store             192.00 B/LUP"),
        "{stdout}"
    );
    assert!(
        stdout.contains("222 stack accesses per thread, 1016 bytes: register spills"),
        "{stdout}"
    );
    // A stack access of a size the hardware has not: the file, the configuration and why.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("orders.txt");
    let text = std::fs::read_to_string(&orders).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(" 16,64,1 4,1,1 "))
        .unwrap()
        .replacen(":4 ", ":3 ", 1);
    std::fs::write(&bad, format!("{line}\n")).unwrap();
    let (ok, _, stderr) = volumes(&bad);
    assert!(!ok);
    assert!(
        stderr.contains("orders.txt") && stderr.contains("not 4, 8 or 16 bytes"),
        "{stderr}"
    );
}

#[test]
fn volumes_with_a_compiled_order_estimates_and_simulates_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let orders = dir.path().join("orders.txt");
    std::fs::write(
        &orders,
        reversed_order_line([32, 2, 1], [1, 1, 2], [128, 128, 32]),
    )
    .unwrap();
    let volumes = |block: &str, orders: Option<&Path>| {
        let mut args = vec![
            "volumes",
            "stencils/star3d_r4.toml",
            "--dtype",
            "f64",
            "--machine",
            "h100-sxm",
            "--domain",
            "128,128,32",
            "--block",
            block,
            "--fold",
            "1,1,2",
            "--simulate",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
        if let Some(o) = orders {
            args.extend(["--compiled-order".into(), o.display().to_string()]);
        }
        out(bin().args(&args))
    };
    let (ok, emitted, stderr) = volumes("32,2,1", None);
    assert!(ok, "{stderr}");
    let (ok, compiled, stderr) = volumes("32,2,1", Some(&orders));
    assert!(ok, "{stderr}");
    assert_ne!(emitted, compiled);
    // A configuration the file does not name: an error that says what the lines name.
    let (ok, _, stderr) = volumes("32,4,1", Some(&orders));
    assert!(!ok);
    assert!(
        stderr.contains("has no compiled order for star3d_r4 (f64) block 32x4x1 fold 1x1x2"),
        "{stderr}"
    );
}

#[test]
fn a_saved_run_keeps_its_spills_and_its_own_compiled_orders() {
    // The D3Q19 SoA sweep of the timed twin (bench/results/h100/counters/timed-twin/): its twin
    // info records local memory, its run wrote the orders it read from the SASS; `-stack.txt`
    // has the same orders with the spilling kernels' stack accesses.
    let raw =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/results/h100/counters/timed-twin/raw");
    let arg = |name: &str| raw.join(name).display().to_string();
    let run = |orders: &str| {
        let dir = tempfile::tempdir().unwrap();
        let (ok, stdout, stderr) = out(bin().args([
            "counters",
            "lbm/d3q19_srt_pull.toml",
            "--machine",
            "h100-sxm",
            "--domain",
            "256,256,256",
            "--from-csv",
            &arg("d3q19_srt_pull-soa.csv.gz"),
            "--twin-info",
            &arg("d3q19_srt_pull-soa-twin.json"),
            "--compiled-order",
            &arg(orders),
            "--out",
            &dir.path().display().to_string(),
            "--name",
            "soa",
        ]));
        assert!(ok, "{stdout}\n{stderr}");
        assert!(
            stdout.contains("3 of 25 configurations keep values in local memory")
                && stdout.contains("block 2x8x64 fold 4x1x2 (640 B)"),
            "{stdout}"
        );
        assert!(
            stdout.contains("25 of 25 configurations estimated with the compiled issue order"),
            "{stdout}"
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("soa.json")).unwrap())
                .unwrap();
        let records = report["records"].as_array().unwrap().clone();
        let spilled = records
            .iter()
            .filter(|r| r["local_bytes"].as_u64().is_some_and(|b| b > 0))
            .count();
        assert_eq!(spilled, 3);
        assert!(records.iter().all(|r| r["compiled_order"] == true));
        (stdout, records)
    };
    let l2_store = |records: &[serde_json::Value], block: [u64; 3]| {
        let r = records
            .iter()
            .find(|r| r["config"]["block"] == serde_json::json!(block))
            .unwrap();
        (
            r["estimate"]["l2_store"].as_f64().unwrap(),
            r["measured"]["l2_store"].as_f64().unwrap(),
        )
    };
    // Without the stack accesses: the spills are named as left out, and 16x64x1 fold 4x1x1
    // stores its 76-byte output only.
    let (stdout, records) = run("d3q19_srt_pull-soa-compiled-order.txt");
    assert!(stdout.contains("the estimate leaves out"), "{stdout}");
    let (est, measured) = l2_store(&records, [16, 64, 1]);
    assert_eq!(est, 76.0);
    assert!(measured > 190.0, "{measured}");
    // With them: followed, and the spilled stores (116 B/LUP) reach L2 as the counters say.
    let (stdout, records) = run("d3q19_srt_pull-soa-compiled-order-stack.txt");
    assert!(
        stdout.contains("the estimate follows their stack accesses")
            && !stdout.contains("leaves out"),
        "{stdout}"
    );
    let (est, measured) = l2_store(&records, [16, 64, 1]);
    assert!(
        (est / measured - 1.0).abs() < 0.01,
        "{est} against {measured}"
    );
    assert!(records.iter().all(|r| r["local_bytes"].as_u64() == Some(0)
        || r["stack_accesses"].as_u64().is_some_and(|n| n > 0)));
}

#[test]
fn a_damaged_saved_csv_is_named_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes, want) in [
        (
            "cut.csv.gz",
            &b"\x1f\x8bgarbage"[..],
            "a damaged gzipped CSV",
        ),
        (
            "binary.csv",
            &b"\xff\xfe"[..],
            "not an ncu CSV (text) nor gzipped",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (ok, _, stderr) = out(bin().args(STAR_64).args([
            "--from-csv",
            &path.display().to_string(),
            "--out",
            &dir.path().join("out").display().to_string(),
        ]));
        assert!(!ok);
        assert!(stderr.contains(name) && stderr.contains(want), "{stderr}");
    }
}

use super::*;
use crate::spec::{load_machine, load_stencil};

fn star() -> Kernel {
    load_stencil("stencils/star3d_r4.toml".as_ref())
        .unwrap()
        .kernel
}

#[test]
fn entry_names_round_trip() {
    let c = LaunchConfig::new([32, 4, 2], [1, 1, 2]);
    assert_eq!(entry_name(&c), "ssk_32x4x2_1x1x2");
    assert_eq!(parse_entry_name(&entry_name(&c)), Some(c));
    assert_eq!(parse_entry_name("ssflush"), None);
    assert_eq!(parse_entry_name("ssk_32x4_1x1x1"), None);
    assert_eq!(parse_entry_name("ssk_32x0x1_1x1x1"), None);
    assert_eq!(parse_entry_name("ssk_32x4x1_1x1x1x1"), None);
}

#[test]
fn normalisation_per_update_and_write_backs() {
    let mut k = BTreeMap::new();
    k.insert(ncu::DRAM_READ.to_string(), 1000.0);
    k.insert(ncu::DRAM_WRITE.to_string(), 300.0);
    k.insert(ncu::L2_READ_SECTORS.to_string(), 50.0);
    k.insert(ncu::L2_WRITE_SECTORS.to_string(), 25.0);
    k.insert(ncu::L1_LOAD_SECTORS.to_string(), 400.0);
    k.insert("w.sum".to_string(), 30.0);
    let mut f = BTreeMap::new();
    f.insert(ncu::DRAM_WRITE.to_string(), 500.0);
    let m = Measured::from_counters(&k, Some(&f), &["w.sum".to_string()], 100.0, 32.0);
    assert_eq!(m.dram_load, Some(10.0));
    // The write-backs after the kernel belong to its stores.
    assert_eq!(m.dram_store, Some(8.0));
    assert_eq!(m.l2_load, Some(16.0));
    assert_eq!(m.l2_store, Some(8.0));
    assert_eq!(m.l1_load_requests, Some(128.0));
    assert_eq!(m.l1_wavefronts, Some(0.3));
    let alone = Measured::from_counters(&k, None, &[], 100.0, 32.0);
    assert_eq!(alone.dram_store, Some(3.0));
    assert_eq!(alone.l1_wavefronts, None);
    // A wavefront metric missing from the launch leaves the level unmeasured.
    let missing = Measured::from_counters(&k, None, &["w.sum".into(), "x.sum".into()], 100.0, 32.0);
    assert_eq!(missing.l1_wavefronts, None);
}

#[test]
fn errors_and_quantiles() {
    assert!((relative_error(11.0, Some(10.0)).unwrap() - 0.1).abs() < 1e-15);
    assert_eq!(relative_error(1.0, Some(0.0)), None);
    assert_eq!(relative_error(1.0, None), None);
    let v = [1.0, 2.0, 3.0, 4.0, 5.0];
    assert_eq!(quantile(&v, 0.5), 3.0);
    assert_eq!(quantile(&v, 0.9), 4.6);
    assert_eq!(quantile(&v, 0.0), 1.0);
    assert_eq!(quantile(&v, 1.0), 5.0);
    assert!(quantile(&[], 0.5).is_nan());
}

#[test]
fn utc_dates() {
    assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
    assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(format_utc(1_763_712_000 + 3661), "2025-11-21T09:01:01Z");
}

/// A details-page CSV with one stencil launch of `c` and the eviction kernel after it, the
/// counters chosen so that every level equals `scale` × the estimate.
fn synthetic_csv(
    k: &Kernel,
    d: &Domain,
    m: &MachineModel,
    c: &LaunchConfig,
    scale: f64,
) -> (String, DataVolumes) {
    let regs = 40;
    let p = CacheParams::from_machine(
        m,
        c.threads(),
        m.occupancy(c.threads(), regs, 0).blocks_per_sm,
    );
    let est = footprint::estimate(k, c, d, &p).unwrap();
    let n = d.points() as f64;
    let name = entry_name(c);
    let mut s = String::from(
        "\"ID\",\"Process ID\",\"Kernel Name\",\"Device\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n",
    );
    let mut row = |id: usize, kernel: &str, metric: &str, unit: &str, v: f64| {
        s.push_str(&format!(
            "\"{id}\",\"77\",\"{kernel}\",\"NVIDIA H200\",\"Command line profiler metrics\",\"{metric}\",\"{unit}\",\"{v}\"\n"
        ))
    };
    row(0, FLUSH_KERNEL, ncu::DRAM_WRITE, "byte", 1e6);
    row(1, &name, ncu::DRAM_READ, "byte", est.dram_load * n * scale);
    // 90 % written back within the kernel, the rest after it.
    row(
        1,
        &name,
        ncu::DRAM_WRITE,
        "byte",
        0.9 * est.dram_store * n * scale,
    );
    row(
        1,
        &name,
        ncu::L2_READ_SECTORS,
        "sector",
        est.l2_load * n * scale / 32.0,
    );
    row(
        1,
        &name,
        ncu::L2_WRITE_SECTORS,
        "sector",
        est.l2_store * n * scale / 32.0,
    );
    row(
        1,
        &name,
        ncu::L1_LOAD_SECTORS,
        "sector",
        est.l1_load_requests * n * scale / 32.0,
    );
    row(
        1,
        &name,
        ncu::WAVEFRONT_CANDIDATES[0][0],
        "",
        est.l1_wavefronts * n * scale,
    );
    // Under the display name of the LaunchStats section, as the details page prints it.
    row(1, &name, ncu::REGISTERS[1], "register/thread", regs as f64);
    // The driver's usual 32 KiB (in ncu's rounded kB), which leaves the preset's L1.
    row(1, &name, ncu::SHARED_CONFIG[1], "Kbyte", 32.77);
    row(
        2,
        FLUSH_KERNEL,
        ncu::DRAM_WRITE,
        "byte",
        0.1 * est.dram_store * n * scale,
    );
    row(2, FLUSH_KERNEL, ncu::DRAM_READ, "byte", 4.0 * 60e6);
    (s, est)
}

/// The comparison of one configuration's synthetic launch (counters `scale` times the
/// estimate `est`, returned too), in the emitted order, with `fallback` registers.
fn compare_one(
    k: &Kernel,
    d: &Domain,
    m: &MachineModel,
    c: &LaunchConfig,
    scale: f64,
    fallback: usize,
) -> (Vec<ConfigRecord>, Vec<String>, DataVolumes) {
    let (csv, est) = synthetic_csv(k, d, m, c, scale);
    let launches = ncu::parse_csv(&csv).unwrap();
    let fallback = |_: &LaunchConfig| (fallback, "fallback".to_string());
    let input = CompareInput {
        kernel: k,
        domain: d,
        machine: m,
        fallback_registers: &fallback,
        compiled_orders: None,
    };
    let (records, notes) = compare(&launches, &input).unwrap();
    (records, notes, est)
}

#[test]
fn compare_pairs_launches_and_uses_measured_registers() {
    let k = star();
    let d = Domain::new3(64, 32, 32);
    let m = load_machine("h200").unwrap();
    let c = LaunchConfig::new([32, 4, 2], [1, 1, 2]);
    let (records, notes, est) = compare_one(&k, &d, &m, &c, 1.25, 999);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert_eq!(r.registers, 40);
    assert_eq!(r.registers_from, "ncu Registers Per Thread");
    assert_eq!(shared_config(&records), Some(32770.0));
    assert_eq!(r.l1_bytes, m.l1_bytes);
    assert_eq!(r.estimate, est);
    for (i, e) in r.errors.iter().enumerate() {
        // The estimate is 1/1.25 of the measurement at every level: -20 %.
        let e = e.unwrap_or_else(|| panic!("level {i} not measured"));
        assert!((e + 0.2).abs() < 1e-9, "level {:?}: {e}", Level::ALL[i]);
    }
    let s = summarize(&records);
    assert_eq!(s.len(), 6);
    assert!(s.iter().all(|e| e.within_tolerance == 0.0 && e.count == 1));
    let notes = flush_notes(&records, Some(4 * 60_000_000));
    assert!(notes[0].contains("240.0"), "{notes:?}");
    assert_eq!(notes.len(), 1);
    // The eviction kernel that read too little is flagged.
    assert_eq!(flush_notes(&records, Some(400_000_000)).len(), 2);
}

#[test]
fn the_estimate_takes_the_l1_the_launch_got() {
    let k = star();
    let d = Domain::new3(128, 64, 64);
    let m = load_machine("h100-sxm").unwrap();
    let c = LaunchConfig::new([2, 4, 32], [2, 4, 4]);
    let (csv, _) = synthetic_csv(&k, &d, &m, &c, 1.0);
    // Carve-out 100 %: 228 KiB of shared memory, 28 KiB of L1.
    let csv = csv.replace("\"Kbyte\",\"32.77\"", "\"Kbyte\",\"233.47\"");
    let launches = ncu::parse_csv(&csv).unwrap();
    let fallback = |_: &LaunchConfig| (999, "unused".to_string());
    let compare_on = |m: &MachineModel| {
        let input = CompareInput {
            kernel: &k,
            domain: &d,
            machine: m,
            fallback_registers: &fallback,
            compiled_orders: None,
        };
        let (mut records, notes) = compare(&launches, &input).unwrap();
        (records.remove(0), notes)
    };
    let (r, notes) = compare_on(&m);
    assert_eq!(r.l1_bytes, 28 << 10);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("of the SM's 256 KiB: 28 KiB")),
        "{notes:?}"
    );
    let mut small = m.clone();
    small.l1_bytes = 28 << 10;
    let p = CacheParams::from_machine(&small, c.threads(), r.blocks_per_sm);
    let at_28k = footprint::estimate(&k, &c, &d, &p).unwrap();
    assert_eq!(r.estimate, at_28k);
    // ... with the L1's ways and the warps interleaved with a burst measured at 28 KiB, which
    // the usual L1's figures at 28 KiB of capacity do not give.
    let warps = c.threads().div_ceil(32) * r.blocks_per_sm;
    assert_eq!(p.l1_conflict_ways, 1);
    assert_eq!(p.l1_interleave, m.l1_interleave_at(warps, 28 << 10));
    let usual = CacheParams {
        l1_bytes: 28 << 10,
        ..CacheParams::from_machine(&m, c.threads(), r.blocks_per_sm)
    };
    assert_eq!(usual.l1_conflict_ways, 4);
    assert_ne!(footprint::estimate(&k, &c, &d, &usual).unwrap(), at_28k);
    // A smaller L1 keeps less: more L2 load than the preset's L1.
    let p = CacheParams::from_machine(&m, c.threads(), r.blocks_per_sm);
    let preset = footprint::estimate(&k, &c, &d, &p).unwrap();
    assert!(
        at_28k.l2_load > 1.5 * preset.l2_load,
        "{at_28k:?} {preset:?}"
    );
    // A machine that does not know its L1 and shared memory together keeps its `l1_bytes`.
    let mut unknown = m.clone();
    unknown.l1_shared_bytes = None;
    let (r, notes) = compare_on(&unknown);
    assert_eq!((r.l1_bytes, r.estimate), (m.l1_bytes, preset));
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn compare_without_twin_kernels_or_eviction() {
    let k = star();
    let d = Domain::new3(64, 32, 32);
    let m = load_machine("h200").unwrap();
    let fallback = |c: &LaunchConfig| (crate::model::estimate_registers(&k, c), "model".into());
    let input = CompareInput {
        kernel: &k,
        domain: &d,
        machine: &m,
        fallback_registers: &fallback,
        compiled_orders: None,
    };
    let other = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\"0\",\"other\",\"dram__bytes_read.sum\",\"byte\",\"5\"\n";
    let l = ncu::parse_csv(other).unwrap();
    assert!(matches!(
        compare(&l, &input),
        Err(CountersError::NoTwinKernels)
    ));
    let c = LaunchConfig::new([64, 2, 1], [1, 1, 1]);
    let lone = format!(
        "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\"0\",\"{}\",\"dram__bytes_write.sum\",\"Kbyte\",\"5\"\n",
        entry_name(&c)
    );
    let (r, notes) = compare(&ncu::parse_csv(&lone).unwrap(), &input).unwrap();
    assert_eq!(r[0].registers_from, "model");
    assert_eq!(r[0].measured.dram_store, Some(5e3 / d.points() as f64));
    assert_eq!(r[0].measured.dram_load, None);
    assert!(notes[0].contains("no eviction kernel"));
}

#[test]
fn report_pages_show_every_level_and_configuration() {
    let k = star();
    let d = Domain::new3(64, 32, 32);
    let m = load_machine("h200").unwrap();
    let mut records = Vec::new();
    for (c, scale) in [
        (LaunchConfig::new([32, 4, 2], [1, 1, 2]), 1.05),
        (LaunchConfig::new([64, 2, 1], [1, 1, 1]), 0.5),
    ] {
        let (csv, _) = synthetic_csv(&k, &d, &m, &c, scale);
        let fallback = |_: &LaunchConfig| (32, "x".to_string());
        let input = CompareInput {
            kernel: &k,
            domain: &d,
            machine: &m,
            fallback_registers: &fallback,
            compiled_orders: None,
        };
        records.extend(compare(&ncu::parse_csv(&csv).unwrap(), &input).unwrap().0);
    }
    let summary = summarize(&records);
    assert!(summary
        .iter()
        .all(|s| (s.within_tolerance - 0.5).abs() < 1e-12));
    assert_eq!(summary[0].worst, Some(records[1].config));
    // The first as if estimated in a compiled order with its spills: both pages say which
    // order each took, and mark the spills, counted or not.
    records[0].compiled_order = true;
    records[0].local_bytes = Some(24);
    records[0].stack_accesses = 12;
    // The second as if it spilled, without the stack accesses.
    records[1].local_bytes = Some(400);
    let sweep = CountersSweep {
        format: COUNTERS_FORMAT.into(),
        version: COUNTERS_VERSION,
        kernel: k.name.clone(),
        dtype: k.dtype(),
        domain: d,
        updates: d.points(),
        minimal: footprint::minimal_volumes(&k),
        machine: m.name.clone(),
        device: None,
        ncu_version: Some("ncu 2025.3".into()),
        wavefront_metrics: vec![ncu::WAVEFRONT_CANDIDATES[0][0].into()],
        ncu_command: Some("ncu <x>".into()),
        command: "stencilscope counters".into(),
        commit: None,
        date: format_utc(0),
        flush_bytes: None,
        carveout: None,
        l2_fetch_bytes: None,
        shared_config_bytes: None,
        records,
        summary,
        notes: vec!["a <note>".into()],
    };
    let html = crate::report::counters_html(&sweep);
    assert!(html.starts_with("<!DOCTYPE html>"));
    // One scatter per level, two points each; the tables escape what they show.
    assert_eq!(html.matches("<circle").count(), 12);
    assert!(html.contains("ncu &lt;x&gt;") && html.contains("a &lt;note&gt;"));
    assert!(html.contains("block 64x2x1 fold 1x1x1"));
    assert!(html.contains("+5.0%") || html.contains("-4.8%"));
    assert!(html.contains("<td>compiled</td>") && html.contains("<td>emitted</td>"));
    assert!(
        html.contains("(spills, 400 B stack; not in the estimate)")
            && html.contains("(spills, 24 B stack; estimated with its 12 accesses)"),
        "{html}"
    );
    let table = crate::report::counters_table(&sweep);
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("block")).collect();
    assert_eq!(rows.len(), 2);
    assert!(
        rows[0].contains(" compiled ") && rows[1].contains(" emitted "),
        "{table}"
    );
    assert!(rows[0].contains("* ") && !rows[0].contains("! "), "{table}");
    assert!(rows[1].contains("! ") && !rows[1].contains("* "), "{table}");
    assert!(
        table.contains("(regs* / regs!: the kernel spills"),
        "{table}"
    );
    // The JSON round-trips.
    let json = serde_json::to_string(&sweep).unwrap();
    let back: CountersSweep = serde_json::from_str(&json).unwrap();
    assert_eq!(back, sweep);
}

#[test]
fn configuration_lists_and_selection() {
    let p = std::path::Path::new("list.txt");
    let text = "# chosen\n32,4,2 1,1,2\nblock 64x4x1 fold 1x1x4\n128,1\n";
    let l = parse_config_list(text, p).unwrap();
    assert_eq!(
        l,
        vec![
            LaunchConfig::new([32, 4, 2], [1, 1, 2]),
            LaunchConfig::new([64, 4, 1], [1, 1, 4]),
            LaunchConfig::new([128, 1, 1], [1, 1, 1]),
        ]
    );
    let json = serde_json::to_string(&l).unwrap();
    assert_eq!(parse_config_list(&json, p).unwrap(), l);
    assert!(parse_config_list("32,4,x\n", p).is_err());
    assert!(parse_config_list("1 2 3\n", p).is_err());
    assert!(parse_config_list("# nothing\n", p).is_err());
    assert!(parse_config_list("[{\"block\": 1}]", p).is_err());
    assert!("top:0".parse::<ConfigSpec>().is_err());
    assert_eq!("sample:7".parse::<ConfigSpec>(), Ok(ConfigSpec::Sample(7)));

    let k = star();
    let d = Domain::new3(64, 64, 64);
    let m = load_machine("h200").unwrap();
    let a = select_configs(&[ConfigSpec::Sample(12)], &k, &d, &m, 3).unwrap();
    let b = select_configs(&[ConfigSpec::Sample(12)], &k, &d, &m, 3).unwrap();
    let c = select_configs(&[ConfigSpec::Sample(12)], &k, &d, &m, 4).unwrap();
    assert_eq!(a.len(), 12);
    assert_eq!(a, b);
    assert_ne!(a, c);
    // Union without duplicates.
    let both = select_configs(
        &[ConfigSpec::Sample(12), ConfigSpec::Sample(12)],
        &k,
        &d,
        &m,
        3,
    )
    .unwrap();
    assert_eq!(both, a);
}

#[test]
fn listed_configurations_the_twin_cannot_run_here_are_errors() {
    let (k, m) = (star(), load_machine("h100-sxm").unwrap());
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("list.txt");
    // Legal at 256³; at 128³ the second x-fold point of every thread of the second lies
    // outside the domain, and the compiled kernel drops it.
    std::fs::write(&list, "# two\n64,4,1 1,1,4\n128,2,2 2,2,4\n").unwrap();
    let spec = [ConfigSpec::File(list.clone())];
    let big = Domain::new3(256, 256, 256);
    assert_eq!(select_configs(&spec, &k, &big, &m, 1).unwrap().len(), 2);
    let small = Domain::new3(128, 128, 128);
    let e = select_configs(&spec, &k, &small, &m, 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("list.txt, line 3: block 128x2x2 fold 2x2x4"),
        "{e}"
    );
    assert!(e.contains("overshoots the domain"), "{e}");
    // JSON lists say which entry.
    let json = dir.path().join("list.json");
    std::fs::write(
        &json,
        r#"[{"block":[64,4,1],"fold":[1,1,4]},{"block":[2048,1,1],"fold":[1,1,1]}]"#,
    )
    .unwrap();
    let e = select_configs(&[ConfigSpec::File(json)], &k, &big, &m, 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("list.json, entry 2"), "{e}");
}

/// ncu 2025.3.1's CSV of a real sweep on an H200 (star3d_r4 f64, 256³; the first 13 launches).
const REAL_CSV: &str = include_str!("../../tests/fixtures/ncu-star3d_r4-f64-h200.csv");

#[test]
fn real_ncu_csv_parses_to_base_units() {
    let l = ncu::parse_csv(REAL_CSV).unwrap();
    assert_eq!(l.len(), 13);
    assert_eq!(l[0].kernel, FLUSH_KERNEL);
    // "248,185,344" bytes with grouped digits; durations in ns.
    assert_eq!(l[0].metrics[ncu::DRAM_READ], 248_185_344.0);
    assert_eq!(l[0].units[ncu::DRAM_READ], "byte");
    assert!(l[0].metrics[ncu::DURATION] < 1e-3);
    assert_eq!(l[0].units[ncu::DURATION], "second");
    let k = &l[1];
    assert_eq!(
        parse_entry_name(&k.kernel),
        Some(LaunchConfig::new([1, 1, 64], [4, 2, 4]))
    );
    for m in [
        ncu::DRAM_READ,
        ncu::DRAM_WRITE,
        ncu::L2_READ_SECTORS,
        ncu::L2_WRITE_SECTORS,
        ncu::L1_LOAD_SECTORS,
    ] {
        assert!(k.metrics[m] > 0.0, "{m}");
    }
    // Stores reach L2 as whole sectors per warp instruction, as the estimator counts them: 8 B/LUP
    // for a warp along x, 32 B/LUP when each lane writes its own sector (blocks 1 wide in x).
    let d = Domain::new3(256, 256, 256);
    let m = load_machine("h200").unwrap();
    let n = d.points() as f64;
    let k = star();
    for s in l.iter().filter(|s| s.kernel != FLUSH_KERNEL) {
        let c = parse_entry_name(&s.kernel).unwrap();
        let est = footprint::estimate(&k, &c, &d, &CacheParams::from_machine(&m, c.threads(), 1))
            .unwrap();
        let l2_store = s.metrics[ncu::L2_WRITE_SECTORS] * 32.0 / n;
        assert!(
            (l2_store / est.l2_store - 1.0).abs() < 0.01,
            "{}: {l2_store} vs {}",
            s.kernel,
            est.l2_store
        );
    }
    assert_eq!(
        ncu::MetricSet::wavefronts_in(&l[1].metrics),
        vec!["l1tex__data_pipe_lsu_wavefronts.sum"]
    );
}

/// The same run's CSV with ncu's LaunchStats section (the first 3 launches): the section's rows
/// carry display names, and every metric row leaves out the header's empty rule columns.
const REAL_CSV_LAUNCHSTATS: &str =
    include_str!("../../tests/fixtures/ncu-star3d_r4-f64-h200-launchstats.csv");

#[test]
fn real_ncu_csv_with_launch_statistics() {
    let (l, skipped) = ncu::parse_csv_lenient(REAL_CSV_LAUNCHSTATS).unwrap();
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(l.len(), 3);
    let k = &l[1];
    let c = parse_entry_name(&k.kernel).unwrap();
    // A block of 64 threads: the driver grants 32 KiB of shared memory, so L1 keeps 224 KiB.
    assert_eq!(c.threads(), 64);
    assert_eq!(
        ncu::lookup(&k.metrics, ncu::SHARED_CONFIG),
        Some(("Shared Memory Configuration Size", 32768.0))
    );
    assert_eq!(
        ncu::lookup(&k.metrics, ncu::REGISTERS),
        Some(("Registers Per Thread", 96.0))
    );
    assert!(k.metrics["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] > 0.0);
    assert_eq!(
        ncu::MetricSet::wavefronts_in(&k.metrics),
        vec!["l1tex__data_pipe_lsu_wavefronts_mem_lgds.sum"]
    );
    // Text values (a scheduling policy) are not numbers and are left out.
    assert!(!l[0].metrics.contains_key("Cluster Scheduling Policy"));
    assert_eq!(l[0].metrics["Block Size"], 512.0);
}

#[test]
fn the_estimate_reads_the_fetches_the_twin_set() {
    let h100 = load_machine("h100-sxm").unwrap();
    assert_eq!(h100.l2_fetch_bytes, 64);
    // No limit set, or the machine's own: the machine as it is, no note.
    for f in [None, Some(64)] {
        let (m, note) = machine_for_fetch(&h100, f).unwrap();
        assert_eq!((m.l2_fetch_bytes, note), (64, None));
    }
    let (m32, note) = machine_for_fetch(&h100, Some(32)).unwrap();
    assert_eq!(m32.l2_fetch_bytes, 32);
    assert!(note.unwrap().contains("32-byte L2 fetches"));
    // star3d_r4 f64 rows start 32 bytes into a 64-byte fetch: the 32-byte fetch reads less
    // from DRAM, and nothing else moves.
    let k = star();
    let d = Domain::new3(64, 64, 64);
    let c = LaunchConfig::new([32, 4, 2], [1, 1, 2]);
    let v = |m: &MachineModel| {
        footprint::estimate(&k, &c, &d, &CacheParams::from_machine(m, c.threads(), 16)).unwrap()
    };
    let (v64, v32) = (v(&h100), v(&m32));
    assert!(v32.dram_load < v64.dram_load, "{v32:?} {v64:?}");
    assert_eq!((v32.l2_load, v32.dram_store), (v64.l2_load, v64.dram_store));
    // Sizes the machine cannot fetch are refused.
    for bad in [0, 48, 256] {
        let e = machine_for_fetch(&h100, Some(bad)).unwrap_err();
        assert!(e.to_string().contains("32-byte sectors"), "{e}");
    }
}

/// The line of a compiled-orders file for `k` launched with `c` on `d` in `order`.
fn order_line(k: &Kernel, c: &LaunchConfig, d: &Domain, order: &[(usize, usize)]) -> String {
    let order = CompiledOrder {
        steps: order.to_vec(),
        ..CompiledOrder::default()
    };
    format!("{}\n", CompiledOrders::line(k, c, d, &order))
}

#[test]
fn compare_follows_the_compiled_order_the_file_names() {
    let k = star();
    let d = Domain::new3(64, 32, 32);
    let m = load_machine("h200").unwrap();
    let c = LaunchConfig::new([32, 4, 2], [1, 1, 2]);
    let (csv, emitted) = synthetic_csv(&k, &d, &m, &c, 1.0);
    let launches = ncu::parse_csv(&csv).unwrap();
    let fallback = |_: &LaunchConfig| (999, "unused".to_string());
    let prog = || footprint::MemoryProgram::new(&k, &d, &c).unwrap();
    let reversed: Vec<(usize, usize)> = prog()
        .issued_sequence()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let run = |text: &str| {
        let orders = CompiledOrders::parse(text, "orders.txt".as_ref()).unwrap();
        let input = CompareInput {
            kernel: &k,
            domain: &d,
            machine: &m,
            fallback_registers: &fallback,
            compiled_orders: Some(&orders),
        };
        compare(&launches, &input).map(|(mut r, _)| r.remove(0))
    };
    // Named: the estimate is the program's in that order.
    let r = run(&order_line(&k, &c, &d, &reversed)).unwrap();
    assert!(r.compiled_order);
    let params = CacheParams::from_machine(&m, c.threads(), r.blocks_per_sm);
    let want = footprint::Estimator::default()
        .estimate_program(
            &prog().with_compiled_order(reversed.clone()).unwrap(),
            &params,
        )
        .unwrap();
    assert_eq!(r.estimate, want);
    assert_ne!(r.estimate, emitted);
    // Without places the record cannot say how the stores go out; with them it says (a stencil
    // stores one word per fold point, so none of its fold points stores several).
    assert_eq!(r.stores_back_to_back, None);
    let placed = CompiledOrder {
        steps: reversed.clone(),
        places: (0..reversed.len()).collect(),
        ..CompiledOrder::default()
    };
    let line = format!("{}\n", CompiledOrders::line(&k, &c, &d, &placed));
    let r = run(&line).unwrap();
    assert_eq!(r.stores_back_to_back, Some(0.0));
    assert_eq!(r.estimate, want);
    // Another configuration's line: the emitted order.
    let other = LaunchConfig::new([32, 4, 2], [1, 1, 1]);
    let r = run(&order_line(&k, &other, &d, &[(0, 0)])).unwrap();
    assert!(!r.compiled_order);
    assert_eq!(r.estimate, emitted);
    // An order that leaves an instruction out does not fit the program.
    let e = run(&order_line(&k, &c, &d, &reversed[1..])).unwrap_err();
    assert!(
        matches!(e, CountersError::CompiledOrderMismatch { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("ssk_32x4x2_1x1x2"), "{e}");
}

#[test]
fn compiled_orders_file_errors_name_the_line() {
    let parse = |text: &str| CompiledOrders::parse(text, "o.txt".as_ref());
    let ok = parse("# comment\n\nstar3d_r4 f64 32,4,2 1,1,2 64,32,32: 0,1 0,0 1,3\n").unwrap();
    assert_eq!(ok.len(), 1);
    let k = star();
    let c = LaunchConfig::new([32, 4, 2], [1, 1, 2]);
    let d = Domain::new3(64, 32, 32);
    assert_eq!(
        ok.get(&k, &c, &d).map(|o| o.steps.as_slice()),
        Some(&[(0, 1), (0, 0), (1, 3)][..])
    );
    assert_eq!(ok.get(&k, &c, &Domain::new3(64, 32, 64)), None);
    for (text, line, what) in [
        ("x f64 1,1,1 1,1,1 8,8,8 0,0\n", 1, "no `:`"),
        ("\nx f64 1,1,1 1,1,1: 0,0\n", 2, "5 words, found 4"),
        ("x f64 1,1 1,1,1 8,8,8: 0,0\n", 1, "block `1,1`"),
        ("x f64 1,1,1 1,0,1 8,8,8: 0,0\n", 1, "fold `1,0,1`"),
        ("x f64 1,1,1 1,1,1 8,8,8: 0,0 0;1\n", 1, "entry 2 `0;1`"),
        ("x f64 1,1,1 1,1,1 8,8,8:\n", 1, "empty"),
        (
            "x f64 1,1,1 1,1,1 8,8,8: 0,0 s@16:x\n",
            1,
            "entry 2 `s@16:x` is neither",
        ),
        ("x f64 1,1,1 1,1,1 8,8,8: s@16:8\n", 1, "empty"),
        (
            "x f64 1,1,1 1,1,1 8,8,8: 0,0@3 0,1\n",
            1,
            "entry 2 `0,1`: a line gives",
        ),
        (
            "x f64 1,1,1 1,1,1 8,8,8: 0,0 0,1@4\n",
            1,
            "entry 2 `0,1@4`: a line gives",
        ),
        (
            "x f64 1,1,1 1,1,1 8,8,8: 0,0@x\n",
            1,
            "entry 1 `0,0@x` is neither",
        ),
        (
            "x f64 1,1,1 1,1,1 8,8,8: 0,0\nx f64 1,1,1 1,1,1 8,8,8: 0,0\n",
            2,
            "a second order",
        ),
    ] {
        let e = parse(text).unwrap_err();
        match &e {
            CountersError::CompiledOrders {
                line: l, message, ..
            } => {
                assert_eq!(*l, line, "{text:?}: {e}");
                assert!(message.contains(what), "{text:?}: {e}");
            }
            other => panic!("{text:?}: {other}"),
        }
        assert!(
            e.to_string().starts_with(&format!("o.txt, line {line}: ")),
            "{e}"
        );
    }
}

/// star3d_r4 launched with 32×4×2 threads folded 1×1×2 on 64×32×32, as the orders tests name it.
fn star_32x4x2() -> (Kernel, LaunchConfig, Domain) {
    (
        star(),
        LaunchConfig::new([32, 4, 2], [1, 1, 2]),
        Domain::new3(64, 32, 32),
    )
}

#[test]
fn compiled_orders_keep_the_places_of_their_accesses() {
    let text = "star3d_r4 f64 32,4,2 1,1,2 64,32,32: s@0:4 0,1@2 0,0@5 1,3@9\n";
    let orders = CompiledOrders::parse(text, "o.txt".as_ref()).unwrap();
    let (k, c, d) = star_32x4x2();
    let order = orders.get(&k, &c, &d).unwrap();
    assert_eq!(order.steps, vec![(0, 1), (0, 0), (1, 3)]);
    assert_eq!(order.places, vec![2, 5, 9]);
    assert_eq!(
        format!("{}\n", CompiledOrders::line(&k, &c, &d, order)),
        text
    );
    // A file without places gives none.
    let plain = CompiledOrders::parse(
        "star3d_r4 f64 32,4,2 1,1,2 64,32,32: 0,1 0,0 1,3\n",
        "o.txt".as_ref(),
    )
    .unwrap();
    assert!(plain.get(&k, &c, &d).unwrap().places.is_empty());
}

#[test]
fn compiled_orders_keep_the_stack_accesses_in_their_place() {
    let text = "star3d_r4 f64 32,4,2 1,1,2 64,32,32: s@0:4 0,1 l@0:4 0,0 s@16:16 1,3 l@16:8\n";
    let orders = CompiledOrders::parse(text, "o.txt".as_ref()).unwrap();
    assert_eq!(orders.spilling(), 1);
    let (k, c, d) = star_32x4x2();
    let order = orders.get(&k, &c, &d).unwrap();
    assert_eq!(order.steps, vec![(0, 1), (0, 0), (1, 3)]);
    let at = |store, offset, bytes, position| footprint::LocalAccess {
        store,
        offset,
        bytes,
        position,
    };
    assert_eq!(
        order.local,
        vec![
            at(true, 0, 4, 0),
            at(false, 0, 4, 1),
            at(true, 16, 16, 2),
            at(false, 16, 8, 3)
        ]
    );
    // Written back as read.
    assert_eq!(
        format!("{}\n", CompiledOrders::line(&k, &c, &d, order)),
        text
    );
}

#[test]
fn spilled_configurations_are_named_with_their_local_memory() {
    let k = star();
    let d = Domain::new3(64, 32, 32);
    let m = load_machine("h200").unwrap();
    let c = LaunchConfig::new([32, 4, 2], [1, 1, 2]);
    let (records, _, _) = compare_one(&k, &d, &m, &c, 1.0, 40);
    let twin = |bytes: usize| TwinInfo {
        device: DeviceDesc {
            name: "test".into(),
            compute_capability: "9.0".into(),
            driver_api: "13.0".into(),
            sms: 132,
            l2_bytes: 50 << 20,
        },
        flush_bytes: 0,
        kernels: vec![(entry_name(&c), 40)],
        nvrtc_options: Vec::new(),
        local_bytes: vec![(entry_name(&c), bytes)],
    };
    // A stack: recorded and named.
    let (r, note) = attach_local_bytes(records.clone(), Some(&twin(400)));
    assert_eq!(r[0].local_bytes, Some(400));
    let note = note.unwrap();
    assert!(
        note.contains("1 of 1") && note.contains("(400 B)") && note.contains("leaves out"),
        "{note}"
    );
    // Where the compiled order gave the estimate the stack accesses, the note says so.
    let mut followed = records.clone();
    followed[0].stack_accesses = 12;
    let (_, note) = attach_local_bytes(followed, Some(&twin(400)));
    let note = note.unwrap();
    assert!(
        note.contains("follows their stack accesses") && !note.contains("leaves out"),
        "{note}"
    );
    // None: recorded, no note; no twin info (or a sweep from before): nothing.
    let (r, note) = attach_local_bytes(records.clone(), Some(&twin(0)));
    assert_eq!((r[0].local_bytes, note), (Some(0), None));
    let (r, note) = attach_local_bytes(records, None);
    assert_eq!((r[0].local_bytes, note), (None, None));
}

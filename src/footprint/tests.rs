#[allow(unused_imports)]
use super::*;
use crate::cachesim::simulate;
use crate::ir::{Access, Assignment, BinOp, Dtype, Expr, Field, FieldRole, Layout, Target};
use crate::spec::{shape_kernel, Shape, ShapeKind};

/// Caches large enough that only compulsory traffic and in-block reuse remain.
fn big() -> CacheParams {
    CacheParams {
        sms: 61,
        blocks_per_sm: 2,
        l1_bytes: 1 << 20,
        l1_conflict_ways: 0,
        l1_set_index: Default::default(),
        l1_set_ways: 0,
        l2_bytes: 256 << 20,
        l2_reuse_misses: Default::default(),
        l2_store_weight: 1.0,
        l2_reuse_distance_scale: 1.0,
        l1_interleave: Default::default(),
        sector_bytes: 32,
        dram_fetch_bytes: 32,
        line_bytes: 128,
        warp_size: 32,
        partial_store_loss: 0.0,
        partial_store_loss_sm: 0.0,
        partial_store_loss_sm_open: 0.0,
        partial_store_loss_after_loads: None,
        partial_store_loss_back_to_back: None,
        partial_sector_limit: 0.0,
        neighbour_drift_share: 0.0,
        row_end_write_back_share: 0.0,
        l1_queue: 0.0,
        l2_latency_lines: 0.0,
    }
}

/// `big()` with 4 SMs and an L1 of `lines` lines: small enough for the simulator's L1 tests.
fn four_sms_with_l1(lines: usize) -> CacheParams {
    CacheParams {
        sms: 4,
        l1_bytes: lines * 128,
        ..big()
    }
}

/// The kernel of the definition file `file` (relative to the crate).
fn kernel_of(file: &str) -> Kernel {
    crate::spec::load_definition(file.as_ref()).unwrap().kernel
}

/// The D3Q19 SRT pull kernels: AoS (the counter sweeps' definition) and SoA.
fn d3q19_pull() -> (Kernel, Kernel) {
    (
        kernel_of("bench/counters/d3q19_srt_pull_aos.toml"),
        kernel_of("lbm/d3q19_srt_pull.toml"),
    )
}

fn acc(field: usize, offset: [i32; 3], index: usize) -> Access {
    Access {
        field,
        offset,
        index,
    }
}

/// `dst[0] = sum of src at the given offsets and components`.
fn kernel(src: Field, dst: Field, loads: &[([i32; 3], usize)]) -> Kernel {
    let value = loads
        .iter()
        .map(|(o, q)| Expr::Load(acc(0, *o, *q)))
        .reduce(|a, b| Expr::bin(BinOp::Add, a, b))
        .expect("at least one load");
    Kernel {
        name: "k".into(),
        dims: 3,
        fields: vec![src, dst],
        params: vec![],
        temps: vec![],
        body: vec![Assignment {
            target: Target::Store(acc(1, [0; 3], 0)),
            value,
        }],
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn check(kernel: &Kernel, d: &Domain, c: &LaunchConfig, p: &CacheParams, want: [f64; 6]) {
    let e = data_volumes(kernel, d, c, p).unwrap();
    let got = [
        e.l1_load_requests,
        e.l1_wavefronts,
        e.l2_load,
        e.l2_store,
        e.dram_load,
        e.dram_store,
    ];
    for (g, w) in got.iter().zip(want) {
        assert!(close(*g, w), "{c}: estimate {got:?}, derived {want:?}");
    }
    // The simulator must agree exactly in these regular cases.
    let s = simulate(kernel, d, c, p).unwrap();
    let sim = [
        s.l1_load_requests,
        s.l1_wavefronts,
        s.l2_load,
        s.l2_store,
        s.dram_load,
        s.dram_store,
    ];
    for (g, w) in sim.iter().zip(want) {
        assert!(close(*g, w), "{c}: simulated {sim:?}, derived {want:?}");
    }
}

#[test]
fn pure_copy_moves_two_elements_per_update() {
    for dtype in [Dtype::F32, Dtype::F64] {
        let e = dtype.size() as f64;
        let k = kernel(
            Field::scalar("u", dtype, 0, FieldRole::Input),
            Field::scalar("v", dtype, 0, FieldRole::Output),
            &[([0; 3], 0)],
        );
        let d = Domain::new3(256, 16, 8);
        let c = LaunchConfig::new([128, 1, 1], [1; 3]);
        // A warp reads and writes 32·e contiguous, aligned bytes: 32·e/32 sectors each, and
        // 32·e/128 bank passes over as many lines, each line after the first costing 0.2
        // wavefronts more; nothing is reused, so every level sees e per update.
        let passes = 32.0 * e / 128.0;
        let wf = 2.0 * (passes + 0.2 * (passes - 1.0)) / 32.0;
        check(&k, &d, &c, &big(), [e, wf, e, e, e, e]);
        let v = data_volumes(&k, &d, &c, &big()).unwrap();
        assert!(close(v.dram_load + v.dram_store, 2.0 * e));
    }
}

#[test]
fn seven_point_star_by_hand() {
    let shape = Shape {
        kind: ShapeKind::Star,
        radius: 1,
        dims: 3,
        coefficients: vec![1.0, 1.0],
    };
    let mut k = shape_kernel("star", &shape, Dtype::F64, "u", "v");
    // Pad rows to 80 elements (640 B = 5 lines): every row starts on a line, and x sits at byte
    // 8·(x + 1) of its row (one ghost element).
    for f in &mut k.fields {
        f.padding = 14;
    }
    let d = Domain::new3(64, 48, 40);
    // Per warp (32 consecutive x, 256 B): the x-1 access starts at residue 0 (8 sectors, 2 lines);
    // x+1 at residue 16 and the five x+0 accesses (centre, y±1, z±1) at residue 8 (9 sectors,
    // 3 lines each). L1 requests: 8 + 9 + 5·9 = 62 sectors per 32 updates = 62 B/LUP.
    // Wavefronts: 2 bank passes per instruction (64 contiguous words) plus 0.2 per line after the
    // first: loads 2.2 + 6 · 2.4, the store 2.4: 19/32 per update. L2 store: 9 sectors per
    // 32 updates = 9 B/LUP.
    // DRAM, L2 holding everything: every source row (48 × 40 of them) reads x ∈ [-1, 65), bytes
    // [0, 528): 17 sectors; so do the halo rows y = -1, 48 (2 × 40) and planes z = -1, 40
    // (2 × 48) with x ∈ [0, 64), bytes [8, 520): 17·(48·40 + 80 + 96) sectors over 64·48·40
    // updates. Every destination row writes bytes [8, 520): 17 sectors (8.5 B/LUP), the first and
    // last partly, which costs two sector reads per row: + 1 B/LUP of DRAM load.
    let dram_load = 17.0 * (48.0 * 40.0 + 176.0) * 32.0 / (64.0 * 48.0 * 40.0) + 1.0;
    // Block (32,1,1): its footprint is the centre row x ∈ [-1, 33), bytes [0, 272): 9 sectors,
    // and rows y±1, z±1 with x ∈ [0, 32), bytes [8, 264): 9 sectors each; 45 sectors per 32
    // updates = 45 B/LUP of L2 load.
    let c = LaunchConfig::new([32, 1, 1], [1; 3]);
    check(
        &k,
        &d,
        &c,
        &big(),
        [62.0, 19.0 / 32.0, 45.0, 9.0, dram_load, 8.5],
    );
    // Block (32,4,1): rows y = 0..4 of the centre plane (x ∈ [-1, 33)), y = -1 and y = 4
    // (x ∈ [0, 32)), and four rows in each of planes z±1: 14 rows of 9 sectors per 128 updates
    // = 31.5 B/LUP. The y-neighbours now come from L1.
    let c = LaunchConfig::new([32, 4, 1], [1; 3]);
    check(
        &k,
        &d,
        &c,
        &big(),
        [62.0, 19.0 / 32.0, 31.5, 9.0, dram_load, 8.5],
    );
}

#[test]
fn misaligned_access_splits_sectors() {
    let k = kernel(
        Field::scalar("u", Dtype::F32, 1, FieldRole::Input),
        Field::scalar("v", Dtype::F32, 0, FieldRole::Output),
        &[([1, 0, 0], 0)],
    );
    // A single row of 128 points: the source row holds 130 f32 (520 B) and starts a buffer.
    let d = Domain::new3(128, 1, 1);
    let c = LaunchConfig::new([32, 1, 1], [1; 3]);
    // The ghost layer and the +1 offset put x at byte 4·(x + 2) of the (one) row: a warp's
    // 128 B start at residue 8, so they touch 5 sectors and 2 lines instead of 4 and 1 (one
    // bank pass, 1.2 wavefronts). The store (no ghost) is aligned: 4 sectors, 1 line, 1 wavefront.
    // Block footprint = one warp's: 5 sectors per 32 updates (5 B/LUP). DRAM: the loaded bytes
    // are [8, 520) of one row: 17 sectors per 128 updates = 4.25 B/LUP.
    check(
        &k,
        &d,
        &c,
        &big(),
        [5.0, 2.2 / 32.0, 5.0, 4.0, 17.0 * 32.0 / 128.0, 4.0],
    );
}

#[test]
fn dram_reads_whole_fetches() {
    // Measured on the H100 and H200 (`bench/l2-traffic.py`): L2 reads the aligned 64 B around a
    // sector it misses. Only the DRAM load changes, and only where a fetch holds bytes no access
    // touches.
    let pairs = CacheParams {
        dram_fetch_bytes: 64,
        ..big()
    };
    // The misaligned row of `misaligned_access_splits_sectors`: bytes [8, 520) loaded are the
    // fetches [0, 576), 9 of 64 B for 128 updates.
    let k = kernel(
        Field::scalar("u", Dtype::F32, 1, FieldRole::Input),
        Field::scalar("v", Dtype::F32, 0, FieldRole::Output),
        &[([1, 0, 0], 0)],
    );
    let (d, c) = (
        Domain::new3(128, 1, 1),
        LaunchConfig::new([32, 1, 1], [1; 3]),
    );
    let one = data_volumes(&k, &d, &c, &big()).unwrap();
    let two = data_volumes(&k, &d, &c, &pairs).unwrap();
    assert!(close(two.dram_load, 9.0 * 64.0 / 128.0), "{two:?}");
    assert!(close(one.dram_load, 17.0 * 32.0 / 128.0), "{one:?}");
    assert_eq!((one.l2_load, one.dram_store), (two.l2_load, two.dram_store));
    // The simulator fetches the same.
    let sim = simulate(&k, &d, &c, &pairs).unwrap();
    assert!(close(sim.dram_load, two.dram_load), "{sim:?}");
    assert!(close(
        simulate(&k, &d, &c, &big()).unwrap().dram_load,
        one.dram_load
    ));
    // Records of 16 f32 (64 B) of which the first 8 are read: one sector per update, in a fetch
    // of two.
    let mut src = Field::scalar("f", Dtype::F32, 0, FieldRole::Input);
    src.components = 16;
    src.layout = Layout::Zyxf;
    let loads: Vec<([i32; 3], usize)> = (0..8).map(|q| ([0; 3], q)).collect();
    let k = kernel(
        src,
        Field::scalar("v", Dtype::F32, 0, FieldRole::Output),
        &loads,
    );
    let (d, c) = (
        Domain::new3(64, 8, 4),
        LaunchConfig::new([32, 2, 1], [1; 3]),
    );
    let one = data_volumes(&k, &d, &c, &big()).unwrap();
    let two = data_volumes(&k, &d, &c, &pairs).unwrap();
    assert!(
        close(one.dram_load, 32.0) && close(two.dram_load, 64.0),
        "{one:?} {two:?}"
    );
    assert!(close(simulate(&k, &d, &c, &pairs).unwrap().dram_load, 64.0));
    assert!(
        close(one.l2_load, 32.0) && close(two.l2_load, 32.0),
        "{one:?} {two:?}"
    );
    // A fetch that is not a power of two of sectors, or larger than a line, is refused.
    for bad in [96, 256] {
        let p = CacheParams {
            dram_fetch_bytes: bad,
            ..big()
        };
        assert!(data_volumes(&k, &d, &c, &p).is_err(), "{bad}");
    }
}

#[test]
fn measured_reuse_misses_replace_the_capacity_step() {
    // A star whose rows are reused by the blocks beside it, through L2 (L1 holds 4 lines).
    let k = kernel(
        Field::scalar("u", Dtype::F32, 1, FieldRole::Input),
        Field::scalar("v", Dtype::F32, 0, FieldRole::Output),
        &[
            ([0, 0, 0], 0),
            ([0, -1, 0], 0),
            ([0, 1, 0], 0),
            ([0, 0, -1], 0),
            ([0, 0, 1], 0),
        ],
    );
    let (d, c) = (
        Domain::new3(64, 32, 32),
        LaunchConfig::new([32, 4, 1], [1; 3]),
    );
    let with = |points: &[(f64, f64)]| {
        let p = CacheParams {
            l2_reuse_misses: ReuseMisses::new(points).unwrap(),
            ..four_sms_with_l1(4)
        };
        data_volumes(&k, &d, &c, &p).unwrap()
    };
    let step = data_volumes(&k, &d, &c, &four_sms_with_l1(4)).unwrap();
    let (none, all, half) = (
        with(&[(0.0, 0.0)]),
        with(&[(0.0, 1.0)]),
        with(&[(0.0, 0.5)]),
    );
    // No misses: as the step of an L2 that holds everything; every reuse missed: the footprints.
    assert!(close(none.dram_load, step.dram_load), "{none:?} {step:?}");
    assert!(all.dram_load > 1.5 * none.dram_load, "{none:?} {all:?}");
    assert!(
        close(half.dram_load, (none.dram_load + all.dram_load) / 2.0),
        "{half:?}"
    );
    // Only DRAM load moves.
    assert_eq!(
        (none.l2_load, none.dram_store),
        (all.l2_load, all.dram_store)
    );
}

#[test]
fn reuse_miss_curves_interpolate_and_refuse_bad_points() {
    let c = ReuseMisses::new(&[(0.0, 0.0), (10.0, 0.2), (20.0, 1.0)]).unwrap();
    assert_eq!(c.share_at(0.0), Some(0.0));
    assert!((c.share_at(5.0).unwrap() - 0.1).abs() < 1e-12);
    assert!((c.share_at(15.0).unwrap() - 0.6).abs() < 1e-12);
    assert_eq!(c.share_at(50.0), Some(1.0));
    assert_eq!(ReuseMisses::default().share_at(5.0), None);
    assert!(ReuseMisses::default().is_empty());
    assert!(ReuseMisses::new(&[(10.0, 0.1), (5.0, 0.2)]).is_err());
    assert!(ReuseMisses::new(&[(0.0, 1.5)]).is_err());
    assert!(ReuseMisses::new(&[(-1.0, 0.5)]).is_err());
    assert!(ReuseMisses::new(&[(0.0, 0.0); 17]).is_err());
    // Serialised as its points, and checked when read.
    let json = serde_json::to_string(&c).unwrap();
    assert_eq!(json, "[[0.0,0.0],[10.0,0.2],[20.0,1.0]]");
    assert_eq!(serde_json::from_str::<ReuseMisses>(&json).unwrap(), c);
    assert!(serde_json::from_str::<ReuseMisses>("[[10.0,0.1],[5.0,0.2]]").is_err());
}

/// Records of 19 f32 in `layout`, one word stored per instruction (the D3Q19 output's pattern).
fn records_stored_word_by_word(layout: Layout) -> Kernel {
    let mut dst = Field::scalar("f", Dtype::F32, 0, FieldRole::Output);
    dst.components = 19;
    dst.layout = layout;
    let mut k = kernel(
        Field::scalar("u", Dtype::F32, 0, FieldRole::Input),
        dst,
        &[([0; 3], 0)],
    );
    let value = k.body[0].value.clone();
    k.body = (0..19)
        .map(|q| Assignment {
            target: Target::Store(acc(1, [0; 3], q)),
            value: value.clone(),
        })
        .collect();
    k
}

#[test]
fn records_whose_stores_need_every_load_take_the_share_after_loads() {
    // Measured on the H100 (`bench/l2-traffic.py`, sets `partial` and `afterloads`): a record
    // copy whose stores wait for all its loads writes back 0.505 of its record sectors early at
    // 32 warps per block, the copy that stores each word as its load returns 0.602.
    let (d, c) = (
        Domain::new3(64, 8, 4),
        LaunchConfig::new([32, 2, 1], [1; 3]),
    );
    let p = CacheParams {
        partial_store_loss: 0.5,
        partial_store_loss_after_loads: Some(0.2),
        ..big()
    };
    // Every store of the single loaded value: the stores need every load.
    let after = records_stored_word_by_word(Layout::Zyxf);
    assert!(after.stores_need_every_load());
    let v = data_volumes(&after, &d, &c, &p).unwrap();
    assert!(close(v.dram_store, 76.0 + 0.2 * 76.0), "{v:?}");
    // A record copied word by word, each store its own load's word: the copy's share.
    let mut copy = after.clone();
    copy.fields[0].components = 19;
    copy.fields[0].layout = Layout::Zyxf;
    for (q, a) in copy.body.iter_mut().enumerate() {
        a.value = Expr::Load(acc(0, [0; 3], q));
    }
    assert!(!copy.stores_need_every_load());
    let v = data_volumes(&copy, &d, &c, &p).unwrap();
    assert!(close(v.dram_store, 76.0 + 38.0), "{v:?}");
    // Where the machine has no such table, the copy's share stands for both.
    let unmeasured = CacheParams {
        partial_store_loss_after_loads: None,
        partial_store_loss_back_to_back: None,
        ..p
    };
    let v = data_volumes(&after, &d, &c, &unmeasured).unwrap();
    assert!(close(v.dram_store, 76.0 + 38.0), "{v:?}");
}

/// Records of 19 words stored word by word at two fold points (a 32×2×1 block folded 1×1×2), as
/// emitted, and its issued sequence (a compiled order for it).
fn records_in_issued_order() -> (MemoryProgram, Vec<(usize, usize)>) {
    let (d, c) = (
        Domain::new3(64, 8, 4),
        LaunchConfig::new([32, 2, 1], [1, 1, 2]),
    );
    let k = records_stored_word_by_word(Layout::Zyxf);
    let prog = MemoryProgram::new(&k, &d, &c).unwrap();
    let order = prog.issued_sequence().collect();
    (prog, order)
}

/// Places in the SASS for `order`: each fold point's load and its arithmetic 200 instructions
/// (D3Q19's loads and collision take about 170), then its stores `gap(fold point)` apart.
fn store_places(
    prog: &MemoryProgram,
    order: &[(usize, usize)],
    gap: impl Fn(usize) -> usize,
) -> Vec<usize> {
    let mut at = 0;
    order
        .iter()
        .map(|&(f, i)| {
            at += if prog.instructions[i].kind == AccessKind::Store {
                gap(f)
            } else {
                200
            };
            at
        })
        .collect()
}

#[test]
fn records_stored_back_to_back_take_the_share_measured_so() {
    // Measured on the H100 (`bench/l2-traffic.py`, set `storegap`): the record copy whose 19
    // stores are consecutive instructions loses 0.107 of its record sectors at 16 warps, with
    // one FMA between stores twice that; the D3Q19 AoS twins with the float options store so.
    let p = CacheParams {
        partial_store_loss: 0.5,
        partial_store_loss_after_loads: Some(0.2),
        partial_store_loss_back_to_back: Some(0.05),
        ..big()
    };
    let (prog, order) = records_in_issued_order();
    let ordered = prog.clone().with_compiled_order(order.clone()).unwrap();
    // The first fold point's stores `gap` apart, the second's `second`: a small part of the
    // fold point either way.
    let places = |gap: usize, second: usize| {
        store_places(&prog, &order, |f| if f == 0 { gap } else { second })
    };
    let est = |prog: &MemoryProgram| Estimator::default().estimate_program(prog, &p).unwrap();
    let back_to_back = ordered.clone().with_store_places(&places(1, 1)).unwrap();
    assert_eq!(back_to_back.stores_back_to_back, Some(1.0));
    assert!(close(est(&back_to_back).dram_store, 76.0 + 0.05 * 76.0));
    // One instruction between stores (a chain of one FMA) is not back to back.
    let spread = ordered.clone().with_store_places(&places(2, 2)).unwrap();
    assert_eq!(spread.stores_back_to_back, Some(0.0));
    assert!(close(est(&spread).dram_store, 76.0 + 0.2 * 76.0));
    assert!(close(est(&ordered).dram_store, est(&spread).dram_store));
    // One fold point of two back to back: half of each share.
    let half = ordered.clone().with_store_places(&places(1, 5)).unwrap();
    assert_eq!(half.stores_back_to_back, Some(0.5));
    assert!(close(est(&half).dram_store, 76.0 + 0.125 * 76.0));
    // Where the machine has no such table, the share after loads stands.
    let unmeasured = CacheParams {
        partial_store_loss_back_to_back: None,
        ..p
    };
    let v = Estimator::default()
        .estimate_program(&back_to_back, &unmeasured)
        .unwrap();
    assert!(close(v.dram_store, 76.0 + 0.2 * 76.0), "{v:?}");
    // A new compiled order forgets the places of the one it replaces.
    assert_eq!(
        back_to_back
            .with_compiled_order(order.clone())
            .unwrap()
            .stores_back_to_back,
        None
    );
    // Places must come with an order, one per entry, rising.
    let e = |r: Result<MemoryProgram, FootprintError>| r.unwrap_err().to_string();
    assert!(e(prog.clone().with_store_places(&places(1, 1))).contains("need the compiled order"));
    assert!(e(ordered.clone().with_store_places(&[1, 2])).contains("2 instruction places"));
    let mut falling = places(1, 1);
    falling.swap(3, 4);
    assert!(e(ordered.with_store_places(&falling)).contains("entry 5 lies at"));
}

#[test]
fn records_open_throughout_a_fold_point_take_the_sm_share_beyond_the_measured_warps() {
    // The AoS sweeps' compiled code: where a fold point's stores span most of its instructions a
    // thread keeps a record partly written all the time, and above 32 warps per SM such tiles
    // lose 0.64-0.94 of their record sectors (the SM's share at the table's largest warps), not
    // the block's 0.10-0.31; spans of half a fold point or less keep the block's share.
    let p = CacheParams {
        partial_store_loss: 0.1,
        partial_store_loss_sm: 0.0,
        partial_store_loss_sm_open: 0.6,
        partial_store_loss_after_loads: Some(0.1),
        partial_store_loss_back_to_back: Some(0.05),
        ..big()
    };
    let (prog, order) = records_in_issued_order();
    let ordered = prog.clone().with_compiled_order(order.clone()).unwrap();
    // The stores `gap` apart span 18 gap of about 200 + 19 gap places per fold point (the
    // places' range, from the first load, leaves out one fold point's 200).
    let placed = |gap: usize| {
        ordered
            .clone()
            .with_store_places(&store_places(&prog, &order, |_| gap))
            .unwrap()
    };
    let share = |gap: usize| placed(gap).store_span_share.unwrap();
    assert!((share(2) - 36.0 / 138.5).abs() < 1e-9, "{}", share(2));
    assert!((share(40) - 720.0 / 860.5).abs() < 1e-9, "{}", share(40));
    let store = |gap: usize| {
        Estimator::default()
            .estimate_program(&placed(gap), &p)
            .unwrap()
            .dram_store
    };
    assert!(close(store(2), 76.0 + 0.1 * 76.0), "{}", store(2));
    assert!(close(store(40), 76.0 + 0.6 * 76.0), "{}", store(40));
    // The machine's table ends at 32 warps: the SM's share stops there for interleaved stores
    // and stays for records open throughout.
    let m = crate::spec::load_machine("h100-sxm").unwrap();
    let at6 = CacheParams::from_machine(&m, 256, 6);
    assert_eq!(at6.partial_store_loss_sm, 0.0);
    assert_eq!(at6.partial_store_loss_sm_open, m.partial_store_share(32));
    // A new compiled order forgets the span with the places.
    assert_eq!(
        placed(40)
            .with_compiled_order(order)
            .unwrap()
            .store_span_share,
        None
    );
}

#[test]
fn records_stored_word_by_word_lose_a_share_of_their_sectors() {
    // Measured (`bench/l2-traffic.py`, set `partial`): L2 writes back a share of the sectors a
    // block's stores complete only together before the last word arrives; each costs a second
    // write and a fill. Records of 19 f32 written one word per store: every sector holds words
    // of two or more stores, so all 76 B of a record are at risk; SoA arrays are not.
    let store_all = records_stored_word_by_word;
    let (d, c) = (
        Domain::new3(64, 8, 4),
        LaunchConfig::new([32, 2, 1], [1; 3]),
    );
    let half = CacheParams {
        partial_store_loss: 0.5,
        ..big()
    };
    let aos = store_all(Layout::Zyxf);
    let kept = data_volumes(&aos, &d, &c, &big()).unwrap();
    let lost = data_volumes(&aos, &d, &c, &half).unwrap();
    assert!(close(kept.dram_store, 76.0), "{kept:?}");
    assert!(close(lost.dram_store, 76.0 + 38.0), "{lost:?}");
    assert!(
        close(lost.dram_load, kept.dram_load + 38.0),
        "{kept:?} {lost:?}"
    );
    assert_eq!(kept.l2_store, lost.l2_store);
    // The simulator adds the same.
    let sim = simulate(&aos, &d, &c, &half).unwrap();
    assert!(close(sim.dram_store, 114.0), "{sim:?}");
    assert!(close(early_write_backs(&aos, &d, &c, &half).unwrap(), 38.0));
    let soa = store_all(Layout::Fzyx);
    let kept = data_volumes(&soa, &d, &c, &big()).unwrap();
    let lost = data_volumes(&soa, &d, &c, &half).unwrap();
    assert_eq!(kept, lost);
    // A share outside [0, 1] is refused.
    let p = CacheParams {
        partial_store_loss: 1.5,
        ..big()
    };
    assert!(data_volumes(&aos, &d, &c, &p).is_err());
}

/// AoS records stored word by word by blocks of 32×2 threads folded twice along z, on 64×8×4: the
/// program as emitted (each fold point's stores together), and in a compiled order that takes the
/// two fold points' stores turn about.
fn records_of_two_fold_points() -> (MemoryProgram, MemoryProgram) {
    let (emitted, mut turns) = records_in_issued_order();
    turns.sort_by_key(|&(f, i)| (i, f));
    let together = emitted.clone().with_compiled_order(turns).unwrap();
    (emitted, together)
}

#[test]
fn records_stored_across_fold_points_lose_the_share_of_the_sm_warps() {
    // Measured on the H100 (`bench/aos-reads.py`, set `fence`): where the compiled code stores
    // into two fold points' records at once, 16-warp blocks lose 0.79-0.90 of their record
    // sectors, 0.24 (the share for their warps) with the fold points' stores kept apart.
    let p = CacheParams {
        partial_store_loss: 0.1,
        partial_store_loss_sm: 0.6,
        ..big()
    };
    let (emitted, turns) = records_of_two_fold_points();
    let order: Vec<(usize, usize)> = emitted.issued_sequence().collect();
    let est = |prog: &MemoryProgram| Estimator::default().estimate_program(prog, &p).unwrap();
    let apart = est(&emitted.clone().with_compiled_order(order).unwrap());
    let together = est(&turns);
    // 76 B of records per update, lost at 0.1 apart and 0.6 together.
    assert!(close(apart.dram_store, 76.0 + 7.6), "{apart:?}");
    assert!(close(together.dram_store, 76.0 + 45.6), "{together:?}");
    assert!(
        close(together.dram_load - apart.dram_load, 38.0),
        "{apart:?} {together:?}"
    );
    // The emitted order keeps each fold point's stores together; so does the simulator's count.
    assert_eq!(est(&emitted), apart);
    assert!(close(early_write_backs_program(&emitted, &p).unwrap(), 7.6));
}

#[test]
fn aos_reuses_within_a_wave_see_the_lines_of_the_records_between() {
    // L2 holds whole lines, and each warp instruction on AoS records reads one word of every
    // record: against the visitor's own simulator (an LRU of lines), with L1 out of the way, a
    // D3Q19 AoS tile folded along z kept a third of the misses (`bench/l2-visitor-vs-sim.sh`).
    let m = crate::spec::load_machine("h100-sxm").unwrap();
    let (aos, soa) = d3q19_pull();
    let d = Domain::new3(64, 64, 32);
    let c = LaunchConfig::new([32, 2, 2], [1, 1, 2]);
    // 16 SMs of 8 blocks (a wave of an eighth of the grid), an L1 of 8 lines, an LRU L2 of 2 MiB.
    let p = CacheParams {
        sms: 16,
        l1_bytes: 1024,
        l2_bytes: 2 << 20,
        l2_reuse_misses: Default::default(),
        ..CacheParams::from_machine(&m, c.threads(), 8)
    };
    let ratio = |k: &Kernel| {
        let est = estimate(k, &c, &d, &p).unwrap().dram_load;
        let sim = crate::cachesim::simulate(k, &d, &c, &p).unwrap().dram_load;
        est / sim
    };
    let (r_aos, r_soa) = (ratio(&aos), ratio(&soa));
    assert!(
        (0.6..1.1).contains(&r_aos),
        "AoS estimate / simulator {r_aos}"
    );
    assert!(
        (0.85..1.15).contains(&r_soa),
        "SoA estimate / simulator {r_soa}"
    );
}

#[test]
fn sectors_partly_written_beyond_the_limit_are_written_back_early() {
    // Measured on the H200 (`bench/partial-occupancy.py`): D3Q19 SoA 4x2x8 fold 2x1x4, whose
    // thread completes each output sector at two fold points, writes back 0.02-0.65 of them
    // early as 1 to 8 blocks per SM hold more of them partly written at a time; each costs one
    // more write and one fill. A single output array (star3d_r4) loses none at as many.
    let m = crate::spec::load_machine("h200").unwrap();
    let (_, soa) = d3q19_pull();
    let d = Domain::new3(128, 64, 64);
    let c = LaunchConfig::new([4, 2, 8], [2, 1, 4]);
    let at = |bps, limit| CacheParams {
        partial_sector_limit: limit,
        ..CacheParams::from_machine(&m, c.threads(), bps)
    };
    let est = |k: &Kernel, p: &CacheParams| estimate(k, &c, &d, p).unwrap();
    let none = est(&soa, &at(8, 0.0));
    let few = est(&soa, &at(8, 1.0e9));
    assert_eq!(few, none);
    let lost = est(&soa, &at(8, 1.0));
    // Nearly every pair whose stores are fold points apart: the x-fold pairs of every sector.
    let extra = lost.dram_store - none.dram_store;
    assert!((30.0..=76.0).contains(&extra), "{extra} B/LUP more written");
    assert!(close(lost.dram_load - none.dram_load, extra));
    assert_eq!(lost.l2_load, none.l2_load);
    // Fewer blocks per SM hold fewer sectors partly written (Little's law over the resident
    // blocks): at one limit, 1 - limit/count of the pairs go, the counts in the ratio of the
    // blocks resident (the grid's 1024 blocks at 8 per SM, 264 at 2).
    let share = |bps, limit| {
        let base = est(&soa, &at(bps, 0.0)).dram_store;
        (est(&soa, &at(bps, limit)).dram_store - base)
            / (est(&soa, &at(bps, 1.0)).dram_store - base)
    };
    for limit in [1.0e4, 3.0e4] {
        let (s8, s2) = (share(8, limit), share(2, limit));
        assert!(s8 > s2 && s2 > 0.0, "{s8} {s2}");
        let ratio = (1.0 - s2) / (1.0 - s8);
        assert!((ratio / (1024.0 / 264.0) - 1.0).abs() < 0.02, "{ratio}");
    }
    // Below the limit, none.
    assert_eq!(share(2, 5.0e4), 0.0);
    // A kernel storing one array keeps its pairs; an AoS record's words lie side by side.
    let star = star_r4_f64();
    assert_eq!(est(&star, &at(8, 1.0)), est(&star, &at(8, 0.0)));
    let (aos, _) = d3q19_pull();
    let several = |k: &Kernel| {
        MemoryProgram::new(k, &d, &c)
            .unwrap()
            .stores_several_arrays()
    };
    assert!(several(&soa) && !several(&aos) && !several(&star));
}

/// The H200's volumes of `kernel` at 128×64×64 and 3 blocks per SM, with L2's limit on partly
/// written sectors and the neighbouring blocks' drift as given.
fn with_limit_and_drift(kernel: &Kernel, c: &LaunchConfig, limit: f64, drift: f64) -> DataVolumes {
    let m = crate::spec::load_machine("h200").unwrap();
    let p = CacheParams {
        partial_sector_limit: limit,
        neighbour_drift_share: drift,
        ..CacheParams::from_machine(&m, c.threads(), 3)
    };
    estimate(kernel, c, &Domain::new3(128, 64, 64), &p).unwrap()
}

#[test]
fn sectors_neighbouring_blocks_write_at_one_step_are_lost_by_their_drift() {
    // Measured on the H200 (`oos60/`): D3Q19 SoA tiles one to four cells wide, unfolded along
    // x, whose sectors two to eight x-neighbouring blocks write at one step, write 0.3-0.8 of
    // them back early. The visitor counts such a sector partly written for the blocks' drift
    // (`neighbour_drift_share` of the run) and loses it once, however many pieces it has.
    let m = crate::spec::load_machine("h200").unwrap();
    let (_, soa) = d3q19_pull();
    let d = Domain::new3(128, 64, 64);
    let est =
        |c: &LaunchConfig, limit: f64, drift: f64| with_limit_and_drift(&soa, c, limit, drift);
    // One output sector holds 8 words: 76 B/LUP more written if every sector went twice.
    let whole = 19.0 * 32.0 / 8.0;
    for block in [[1, 32, 8], [4, 16, 4]] {
        let c = LaunchConfig::new(block, [1, 1, 2]);
        let base = est(&c, 0.0, 0.0);
        // Without a drift the pieces at one step are complete at once.
        assert_eq!(est(&c, 1.0, 0.0), base, "{block:?}");
        let lost = est(&c, 1.0, 0.2);
        let extra = lost.dram_store - base.dram_store;
        // Nearly every sector, each once (a one-wide tile's sector has seven pairs).
        assert!(
            (0.8 * whole..=1.001 * whole).contains(&extra),
            "{block:?}: {extra} B/LUP more written"
        );
        assert!(close(lost.dram_load - base.dram_load, extra));
        assert_eq!(lost.l2_load, base.l2_load);
        // A longer drift holds more sectors partly written: more go at one limit.
        let at = |drift| est(&c, 3.0e4, drift).dram_store;
        assert!(at(0.05) < at(0.2) && at(0.2) < at(0.4), "{block:?}");
    }
    // A tile one thread completes each sector of, at fold points along x, keeps its count.
    let folded = LaunchConfig::new([4, 2, 8], [2, 1, 4]);
    assert_eq!(est(&folded, 3.0e4, 0.4), est(&folded, 3.0e4, 0.0));
    // A kernel storing one array (star3d_r4 f64, four words a sector) loses its sectors shared
    // at one step too, once each, while it keeps its pairs steps apart.
    let star = star_r4_f64();
    let p = |limit: f64, drift: f64, c: &LaunchConfig| CacheParams {
        partial_sector_limit: limit,
        neighbour_drift_share: drift,
        ..CacheParams::from_machine(&m, c.threads(), 8)
    };
    let narrow = LaunchConfig::new([1, 16, 8], [1, 2, 2]);
    let star_est = |limit, drift| estimate(&star, &narrow, &d, &p(limit, drift, &narrow)).unwrap();
    let extra = star_est(1.0, 0.2).dram_store - star_est(0.0, 0.0).dram_store;
    assert!((0.8 * 8.0..=1.001 * 8.0).contains(&extra), "{extra} B/LUP");
    let x_folded = LaunchConfig::new([4, 2, 8], [2, 1, 4]);
    let star_folded = |limit, drift| estimate(&star, &x_folded, &d, &p(limit, drift, &x_folded));
    assert_eq!(
        star_folded(1.0, 0.2).unwrap(),
        star_folded(0.0, 0.0).unwrap()
    );
}

#[test]
fn record_sectors_neighbouring_blocks_write_at_one_fold_point_are_lost_by_their_drift() {
    // An AoS record's 19 words go out at one fold point, store by store. Where x-neighbouring
    // blocks write the two records a sector straddles (tiles one record wide), the sector is
    // partly written for as long as the blocks drift apart, as SoA sectors the blocks write at
    // one step: counted and lost once each (counter sweeps, H100 and H200: D3Q19 AoS tiles one
    // or two records wide, unfolded along x, wrote 4.5-17.4 % more than estimated without it).
    let (aos, _) = d3q19_pull();
    let est =
        |c: &LaunchConfig, limit: f64, drift: f64| with_limit_and_drift(&aos, c, limit, drift);
    // 76-byte records: 7 of every 8 record boundaries fall inside a sector, both of the
    // representative block's here: a sector per boundary, 32 B/LUP if every one went twice.
    let straddling = 32.0;
    let one_wide = LaunchConfig::new([1, 32, 8], [1, 1, 2]);
    let base = est(&one_wide, 0.0, 0.0);
    assert_eq!(est(&one_wide, 1.0, 0.0), base);
    let lost = est(&one_wide, 1.0, 0.2);
    let extra = lost.dram_store - base.dram_store;
    assert!(
        (0.8 * straddling..=1.001 * straddling).contains(&extra),
        "{extra} B/LUP more written"
    );
    assert!(close(lost.dram_load - base.dram_load, extra));
    // A wide tile's neighbouring records are its own warp's, complete at once.
    let wide = LaunchConfig::new([32, 4, 2], [1, 1, 2]);
    let wide_extra = est(&wide, 1.0, 0.2).dram_store - est(&wide, 0.0, 0.0).dram_store;
    assert!(wide_extra < 0.1 * extra, "{wide_extra} B/LUP");
    // Records of one thread's x-fold points are written fold points apart: not at one time.
    let x_folded = LaunchConfig::new([1, 32, 8], [2, 1, 1]);
    let folded_extra = est(&x_folded, 1.0, 0.2).dram_store - est(&x_folded, 0.0, 0.0).dram_store;
    assert!(folded_extra < 0.6 * extra, "{folded_extra} B/LUP");
}

#[test]
fn interleaved_records_keep_the_block_share_beyond_the_measured_sm_warps() {
    // The AoS sweeps (`bench/aos-store-share.py`): tiles whose compiled code interleaves fold
    // points' stores lose the SM's share at 28-36 warps per SM (0.35-0.88), but only about the
    // block's at 40-48 (0.09-0.16); the machine's table reaches 32 warps.
    let m = crate::spec::load_machine("h100-sxm").unwrap();
    let at = |bps| CacheParams::from_machine(&m, 256, bps);
    assert_eq!(at(4).partial_store_loss_sm, m.partial_store_share(32));
    assert_eq!(at(6).partial_store_loss_sm, 0.0);
    let (_, together) = records_of_two_fold_points();
    let store = |p: &CacheParams| {
        Estimator::default()
            .estimate_program(&together, p)
            .unwrap()
            .dram_store
    };
    let block = CacheParams {
        partial_store_loss_sm: 0.0,
        ..at(4)
    };
    assert!(store(&at(4)) > store(&block) + 10.0);
    assert_eq!(
        store(&at(6)),
        store(&CacheParams {
            blocks_per_sm: 6,
            ..block
        })
    );
}

#[test]
fn array_of_structures_field() {
    let mut src = Field::scalar("f", Dtype::F64, 0, FieldRole::Input);
    src.components = 4;
    src.layout = Layout::Zyxf;
    let k = kernel(
        src,
        Field::scalar("v", Dtype::F64, 0, FieldRole::Output),
        &[([0; 3], 0), ([0; 3], 1), ([0; 3], 2), ([0; 3], 3)],
    );
    let d = Domain::new3(64, 8, 4);
    let c = LaunchConfig::new([32, 2, 1], [1; 3]);
    // A point's 4 components fill one 32 B sector. Each component load of a warp touches 32
    // sectors (one per lane, stride 32 B) in 8 lines: 4 · 32 sectors per 32 updates = 128 B/LUP
    // of L1 requests. Wavefronts: a component's words 8l + 2c put 8 lanes on each of 4 banks, 8
    // passes, plus 0.2 for each of 7 further lines: 4 · 9.4 + 2.2 (the store) per 32 updates.
    // The block reuses each
    // sector for the other three components: L2 and DRAM load 32 B/LUP, the minimum.
    check(
        &k,
        &d,
        &c,
        &big(),
        [128.0, 39.8 / 32.0, 32.0, 8.0, 32.0, 8.0],
    );
    // In SoA the same loads are four coalesced streams: 4 · 8 sectors per 32 updates, and 2.2
    // wavefronts per instruction.
    let mut k2 = k.clone();
    k2.fields[0].layout = Layout::Fzyx;
    check(
        &k2,
        &d,
        &c,
        &big(),
        [32.0, 11.0 / 32.0, 32.0, 8.0, 32.0, 8.0],
    );
}

#[test]
fn bad_input_is_an_error() {
    let shape = Shape {
        kind: ShapeKind::Star,
        radius: 1,
        dims: 3,
        coefficients: vec![1.0, 1.0],
    };
    let k = shape_kernel("star", &shape, Dtype::F64, "u", "v");
    let d = Domain::new3(16, 16, 16);
    let c = LaunchConfig::new([32, 1, 1], [1; 3]);
    let mut p = big();
    p.sms = 0;
    assert!(matches!(
        data_volumes(&k, &d, &c, &p),
        Err(FootprintError::BadParams(_))
    ));
    let mut p = big();
    p.line_bytes = 96;
    assert!(data_volumes(&k, &d, &c, &p).is_err());
    assert!(matches!(
        data_volumes(&k, &Domain::new2(16, 16), &c, &big()),
        Err(FootprintError::DomainDims { .. })
    ));
    assert!(matches!(
        data_volumes(&k, &Domain::new3(0, 4, 4), &c, &big()),
        Err(FootprintError::EmptyDomain(_))
    ));
    assert!(data_volumes(&k, &d, &LaunchConfig::new([0, 1, 1], [1; 3]), &big()).is_err());
    let mut k2 = k.clone();
    k2.fields[0].ghost = 0;
    assert!(matches!(
        data_volumes(&k2, &d, &c, &big()),
        Err(FootprintError::OffsetBeyondGhost { .. })
    ));
}

/// The 25-point star of radius 4 in f64.
fn star_r4_f64() -> Kernel {
    let shape = Shape {
        kind: ShapeKind::Star,
        radius: 4,
        dims: 3,
        coefficients: vec![1.0; 5],
    };
    shape_kernel("star", &shape, Dtype::F64, "u", "v")
}

#[test]
fn reusing_an_estimator_gives_the_same_volumes() {
    let k = star_r4_f64();
    let d = Domain::new3(640, 512, 512);
    let p = CacheParams::from_machine(&crate::spec::load_machine("h100-sxm").unwrap(), 256, 8);
    let mut est = Estimator::default();
    let a = LaunchConfig::new([32, 4, 2], [1, 2, 1]);
    let b = LaunchConfig::new([64, 2, 1], [2, 1, 1]);
    let va = est.estimate(&k, &d, &a, &p).unwrap();
    let _ = est.estimate(&k, &d, &b, &p).unwrap();
    assert_eq!(est.estimate(&k, &d, &a, &p).unwrap(), va);
    // Large domain: DRAM traffic stays between the minimum and the no-reuse bound.
    assert!(va.dram_load >= 8.0 && va.dram_load < va.l2_load);
    assert!(va.l2_load <= va.l1_load_requests);
}

/// The first blocks along small axes reuse the representative's first touches and links outside
/// their bands: the volumes are those of processing them in full on the same rows.
#[test]
fn first_blocks_reuse_the_representatives_rows_exactly() {
    let k = star_r4_f64();
    // Few blocks along every axis, so that first blocks are sampled along each and in pairs.
    let d = Domain::new3(384, 192, 160);
    let machine = crate::spec::load_machine("h100-sxm").unwrap();
    let (mut reusing, mut full) = (Estimator::default(), Estimator::default());
    full.block.full_extra_passes = true;
    for (block, fold) in [
        ([64, 2, 2], [1, 4, 2]),
        ([32, 4, 8], [1, 1, 2]),
        ([128, 1, 4], [1, 4, 4]),
        ([16, 16, 4], [2, 1, 4]),
        ([32, 8, 1], [2, 2, 4]),
        ([64, 1, 16], [2, 2, 1]),
        ([32, 32, 1], [1, 1, 4]),
    ] {
        let c = LaunchConfig::new(block, fold);
        let p = CacheParams::from_machine(&machine, c.threads(), 2);
        let (a, b) = (
            reusing.estimate(&k, &d, &c, &p).unwrap(),
            full.estimate(&k, &d, &c, &p).unwrap(),
        );
        // The two sum the rows' statistics in different orders: equal to rounding, which the
        // L1 set conflicts' steep survival magnifies to a few parts in 10^9.
        for (x, y) in [
            (a.l2_load, b.l2_load),
            (a.dram_load, b.dram_load),
            (a.dram_store, b.dram_store),
        ] {
            assert!(
                (x - y).abs() <= 1e-8 * y.abs().max(1.0),
                "{c}: reusing {a:?}, in full {b:?}"
            );
        }
    }
    assert_eq!(reusing.block.reused_axes, 0b111, "reuse along every axis");
    assert_eq!(full.block.reused_axes, 0);
}

/// L1's statistics come from a sample of the representative's rows that no period of its fold
/// points aliases with: for a tile one thread wide folded 4×2×4, whose rows repeat along y and z
/// with the block, an even sample of 64 rows took every row of two y-phases in 16 and read
/// 2.1 times as much through L2 as every row does (262.7 against 125.6 B/LUP).
#[test]
fn l1_statistics_of_a_folded_narrow_tile_are_those_of_every_row() {
    let k = star_r4_f64();
    let d = Domain::new3(256, 96, 96);
    let c = LaunchConfig::new([1, 16, 8], [4, 2, 4]);
    let p = CacheParams {
        sms: 8,
        blocks_per_sm: 1,
        l1_bytes: 224 * 128,
        ..big()
    };
    let (mut sampled, mut every) = (Estimator::default(), Estimator::default());
    every.block.l1_row_budget = Some(usize::MAX);
    let (a, b) = (
        sampled.estimate(&k, &d, &c, &p).unwrap(),
        every.estimate(&k, &d, &c, &p).unwrap(),
    );
    // L1 overflows: the tile's halo rows are fetched again.
    assert!(b.l2_load > 2.0 * b.dram_load, "{b:?}");
    assert!(
        (a.l2_load / b.l2_load - 1.0).abs() < 0.1,
        "sampled {a:?}, every row {b:?}"
    );
}

#[test]
fn folded_partial_tiles_are_exact_per_warp() {
    let shape = Shape {
        kind: ShapeKind::Star,
        radius: 1,
        dims: 3,
        coefficients: vec![1.0; 2],
    };
    let k = shape_kernel("star", &shape, Dtype::F64, "u", "v");
    // Tiles reaching past the domain in x (64 > 48) and folded: every fold point of a partial
    // tile places its warps at its own offset.
    let d = Domain::new3(48, 24, 20);
    for c in [
        LaunchConfig::new([64, 2, 1], [1, 2, 2]),
        LaunchConfig::new([32, 4, 1], [2, 1, 1]),
        LaunchConfig::new([16, 2, 4], [1, 1, 2]),
    ] {
        let e = data_volumes(&k, &d, &c, &big()).unwrap();
        let s = simulate(&k, &d, &c, &big()).unwrap();
        assert!(close(e.l1_load_requests, s.l1_load_requests), "{c}");
        assert!(close(e.l1_wavefronts, s.l1_wavefronts), "{c}");
        assert!(close(e.l2_store, s.l2_store), "{c}");
    }
}

#[test]
fn cached_grid_unions_follow_the_kernel() {
    let kernel = |radius: usize| {
        let shape = Shape {
            kind: ShapeKind::Star,
            radius,
            dims: 3,
            coefficients: vec![1.0; radius + 1],
        };
        shape_kernel("star", &shape, Dtype::F64, "u", "v")
    };
    let d = Domain::new3(64, 40, 24);
    let c = LaunchConfig::new([32, 4, 1], [1, 1, 1]);
    let mut est = Estimator::default();
    let r1 = est.estimate(&kernel(1), &d, &c, &big()).unwrap();
    let r4 = est.estimate(&kernel(4), &d, &c, &big()).unwrap();
    assert_eq!(
        r4,
        Estimator::default()
            .estimate(&kernel(4), &d, &c, &big())
            .unwrap()
    );
    assert!(r4.dram_load > r1.dram_load);
    let other = Domain::new3(64, 40, 12);
    assert_eq!(
        est.estimate(&kernel(4), &other, &c, &big()).unwrap(),
        Estimator::default()
            .estimate(&kernel(4), &other, &c, &big())
            .unwrap()
    );
}

#[test]
fn bank_passes_count_the_busiest_bank() {
    let mut w = Vec::new();
    let lanes = |stride: i64| (0..32).map(move |l| l * stride);
    // 32 contiguous f64: 64 words, two on every bank.
    assert_eq!(super::bank_passes(lanes(8), 8, &mut w), 2);
    // f32 every 64 bytes: all words on banks 0 and 16, 16 each.
    assert_eq!(super::bank_passes(lanes(64), 4, &mut w), 16);
    // f32 every 76 bytes (D3Q19 AoS): 19 is odd, every lane on its own bank.
    assert_eq!(super::bank_passes(lanes(76), 4, &mut w), 1);
    // The same word for every lane (a broadcast) is one pass.
    assert_eq!(super::bank_passes(lanes(0), 4, &mut w), 1);
    assert!((super::wavefronts(2, 3) - 2.4).abs() < 1e-12);
}

/// Eight f64 components per point (64 B: two sectors), all loaded at the point itself, on a
/// domain of 64×16×8 in blocks of 32×4: a warp's load of one component touches 16 lines, and the
/// 2 blocks of 4 warps an SM gets with 4 SMs touch 128 per instruction.
fn eight_components() -> (Kernel, Domain, LaunchConfig) {
    let mut src = Field::scalar("f", Dtype::F64, 0, FieldRole::Input);
    src.components = 8;
    src.layout = Layout::Zyxf;
    let loads: Vec<([i32; 3], usize)> = (0..8).map(|q| ([0; 3], q)).collect();
    let k = kernel(
        src,
        Field::scalar("v", Dtype::F64, 0, FieldRole::Output),
        &loads,
    );
    (
        k,
        Domain::new3(64, 16, 8),
        LaunchConfig::new([32, 4, 1], [1; 3]),
    )
}

#[test]
fn simulator_measured_l1_sets_and_their_data_store() {
    use crate::cachesim::{simulate_counts, IssueOrder, L1Replacement};
    use crate::machine::SetIndex;
    // 128 lines between two uses of a line (see `simulator_issue_orders_bracket_l1_reuse`).
    let (k, d, c) = eight_components();
    let points = d.points() as u64;
    let l2_load = |p: &CacheParams| {
        simulate_counts(&k, &d, &c, p, IssueOrder::Lockstep, L1Replacement::Lru)
            .unwrap()
            .l2_load_sectors
    };
    let sets = |bits: u32, ways: usize, lines: usize| CacheParams {
        l1_conflict_ways: ways,
        l1_set_index: SetIndex::new(&(0..bits).map(|b| 1u64 << b).collect::<Vec<_>>()).unwrap(),
        l1_set_ways: 0,
        ..four_sms_with_l1(lines)
    };
    // 1,024 sets of 4 ways by the low line-address bits spread these lines evenly, so the tags
    // never overflow and the data store alone decides: a fully associative LRU of its size.
    assert_eq!(l2_load(&sets(10, 4, 64)), 8 * points);
    assert_eq!(l2_load(&sets(10, 4, 256)), 2 * points);
    // 32 sets of 4 ways hold 128 lines, no more than the data store, which then never evicts;
    // the window's 128 lines plus the next ones overflow the sets.
    let tight = l2_load(&sets(5, 4, 256));
    assert!(tight > 2 * points, "32 sets of 4 ways: {tight}");
    // 64 sets of 4 ways hold the window.
    assert_eq!(l2_load(&sets(6, 4, 256)), 2 * points);
    // The sets keep the tags' ways (`l1_set_ways`) where the visitor's ways are fewer (a small
    // L1's replacement): 64 sets of 4 ways still hold the window, 64 sets of 1 way do not.
    let tags = |ways| CacheParams {
        l1_set_ways: 4,
        ..sets(6, ways, 256)
    };
    assert_eq!(l2_load(&tags(1)), 2 * points);
    assert!(l2_load(&sets(6, 1, 256)) > 2 * points);
}

#[test]
fn simulator_issue_orders_bracket_l1_reuse() {
    use crate::cachesim::{simulate_counts, IssueOrder, IssueTiming, L1Replacement};
    // 128 lines per instruction, twice what L1 holds here.
    let (k, d, c) = eight_components();
    let p = four_sms_with_l1(64);
    let run = |order| simulate_counts(&k, &d, &c, &p, order, L1Replacement::Lru).unwrap();
    let (lock, burst) = (run(IssueOrder::Lockstep), run(IssueOrder::WarpBurst));
    let points = d.points() as u64;
    // In lockstep every warp's lines are evicted before it loads the next component: each of
    // the 8 loads misses. A warp issuing its 8 loads back to back finds its 16 lines still in L1:
    // each sector is loaded once.
    assert_eq!(lock.l2_load_sectors, 8 * points);
    assert_eq!(burst.l2_load_sectors, 2 * points);
    // The per-warp counts do not depend on the order.
    assert_eq!(lock.l1_load_sectors, burst.l1_load_sectors);
    assert_eq!(lock.l1_bank_passes, burst.l1_bank_passes);
    assert_eq!(lock.l1_extra_lines, burst.l1_extra_lines);
    assert_eq!(lock.l2_store_sectors, burst.l2_store_sectors);
    // The SM's 8 warps on 4 schedulers: 4 warps' bursts interleave, 64 lines live, what this L1
    // holds: as warp-burst. With half the L1 the interleaved bursts evict each other.
    assert_eq!(run(IssueOrder::SchedulerBurst), burst);
    let half = four_sms_with_l1(32);
    let run_half = |order| simulate_counts(&k, &d, &c, &half, order, L1Replacement::Lru).unwrap();
    assert_eq!(run_half(IssueOrder::WarpBurst).l2_load_sectors, 2 * points);
    assert_eq!(
        run_half(IssueOrder::SchedulerBurst).l2_load_sectors,
        8 * points
    );
    // Lockstep among a group of warps: one warp is warp-burst, the SM's 8 lockstep; 4 warps'
    // 64 lines fit this L1 and not half of it, 2 warps' fit both.
    let group = |p: &CacheParams, warps| {
        simulate_counts(
            &k,
            &d,
            &c,
            p,
            IssueOrder::Interleave { warps },
            L1Replacement::Lru,
        )
        .unwrap()
        .l2_load_sectors
    };
    assert_eq!(group(&p, 1), burst.l2_load_sectors);
    assert_eq!(group(&p, 8), lock.l2_load_sectors);
    assert_eq!(group(&p, 64), lock.l2_load_sectors);
    assert_eq!(group(&p, 4), 2 * points);
    assert_eq!(group(&half, 4), 8 * points);
    assert_eq!(group(&half, 2), 2 * points);
    // A window of one instruction in flight is lockstep, count for count; one of all 8 loads
    // sends them as a burst.
    assert_eq!(run(IssueOrder::Window { loads: 1 }), lock);
    assert_eq!(
        run(IssueOrder::Window { loads: 8 }).l2_load_sectors,
        2 * points
    );
    // The timed order makes the same accesses; a warp keeping all 8 loads in flight (8 f64
    // loads in 16 registers) issues them back to back and finds its lines, as in warp-burst;
    // with one load in flight and room for one instruction in front of the L1, the oldest warp
    // that can issue goes next, which here is lockstep.
    let timed = |p: &CacheParams, load_registers, queue| {
        simulate_counts(
            &k,
            &d,
            &c,
            p,
            IssueOrder::Timed(IssueTiming {
                load_registers,
                queue,
                ..IssueTiming::default()
            }),
            L1Replacement::Lru,
        )
        .unwrap()
    };
    let batch = timed(&p, 16, 16);
    assert_eq!(batch.l1_load_sectors, lock.l1_load_sectors);
    assert_eq!(batch.l1_bank_passes, lock.l1_bank_passes);
    assert_eq!(batch.l1_extra_lines, lock.l1_extra_lines);
    assert_eq!(batch.l2_store_sectors, lock.l2_store_sectors);
    assert_eq!(batch.l2_load_sectors, 2 * points);
    assert_eq!(timed(&p, 2, 1).l2_load_sectors, 8 * points);
    // The L1 serves one line per cycle: the sweep takes at least its lines' cycles per SM.
    assert!(
        batch.cycles * p.sms as u64 >= lock.l1_extra_lines,
        "{batch:?}"
    );
    // With one load per point both orders are the same.
    let one = kernel(
        Field::scalar("u", Dtype::F64, 0, FieldRole::Input),
        Field::scalar("v", Dtype::F64, 0, FieldRole::Output),
        &[([0; 3], 0)],
    );
    let all = [
        IssueOrder::Lockstep,
        IssueOrder::WarpBurst,
        IssueOrder::SchedulerBurst,
    ]
    .map(|o| simulate_counts(&one, &d, &c, &p, o, L1Replacement::Lru).unwrap());
    assert_eq!(all[0], all[1]);
    assert_eq!(all[0], all[2]);
}

#[test]
fn simulator_drift_delays_reuse_between_warps() {
    use crate::cachesim::{simulate_counts, IssueOrder, L1Replacement};
    // Each warp (a row of 32 f64: two lines) loads its row and the next one: the next row is
    // the next warp's own, loaded at the same fold point. In lockstep the second touch follows
    // the first within the step; with warps up to 4 fold points apart, the SM's other warps'
    // lines (16 per instruction) come in between and evict it from an L1 of 32 lines.
    let k = kernel(
        Field::scalar("u", Dtype::F64, 1, FieldRole::Input),
        Field::scalar("v", Dtype::F64, 0, FieldRole::Output),
        &[([0; 3], 0), ([0, 1, 0], 0)],
    );
    let d = Domain::new3(64, 16, 64);
    let c = LaunchConfig::new([32, 4, 1], [1, 1, 8]);
    let p = four_sms_with_l1(32);
    let run = |order| simulate_counts(&k, &d, &c, &p, order, L1Replacement::Lru).unwrap();
    let lock = run(IssueOrder::Lockstep);
    assert_eq!(run(IssueOrder::Drift { hundredths: 0 }), lock);
    let drift = run(IssueOrder::Drift { hundredths: 400 });
    assert!(
        drift.l2_load_sectors as f64 > 1.2 * lock.l2_load_sectors as f64,
        "drift {} against lockstep {}",
        drift.l2_load_sectors,
        lock.l2_load_sectors
    );
    // The per-warp counts do not depend on the order.
    assert_eq!(drift.l1_load_sectors, lock.l1_load_sectors);
    assert_eq!(drift.l2_store_sectors, lock.l2_store_sectors);
}

#[test]
fn simulator_random_l1_replacement_smooths_the_capacity_cliff() {
    use crate::cachesim::{simulate_counts, IssueOrder, L1Replacement};
    // An SM's 8 warps touch 128 lines per instruction in lockstep.
    let (k, d, c) = eight_components();
    let points = d.points() as u64;
    let l2_load = |lines: usize, l1| {
        simulate_counts(
            &k,
            &d,
            &c,
            &four_sms_with_l1(lines),
            IssueOrder::Lockstep,
            l1,
        )
        .unwrap()
        .l2_load_sectors
    };
    // 128 lines between two uses of a line. LRU with 64 lines keeps none of them and with 256
    // all; random replacement keeps some in the first case and, as lines of later blocks keep
    // coming in, loses some in the second.
    assert_eq!(l2_load(64, L1Replacement::Lru), 8 * points);
    assert_eq!(l2_load(256, L1Replacement::Lru), 2 * points);
    let small = l2_load(64, L1Replacement::Random);
    let large = l2_load(256, L1Replacement::Random);
    assert!(small < 8 * points * 9 / 10, "random, 64 lines: {small}");
    assert!(large > 2 * points * 11 / 10, "random, 256 lines: {large}");
    assert!(large < small);
    // Reproducible.
    assert_eq!(l2_load(64, L1Replacement::Random), small);
}

#[test]
fn reuse_probe_follows_the_timing_model() {
    use crate::cachesim::{reuse_probe_hit_rate, IssueTiming};
    // 64 warps on an SM whose L1 holds 1792 lines, 32 lines per instruction.
    let p = CacheParams {
        blocks_per_sm: 8,
        l1_bytes: 1792 * 128,
        ..big()
    };
    let hit = |timing: &IssueTiming, g| reuse_probe_hit_rate(&p, timing, 32, g, 256).unwrap();
    // 22 loads in flight: a warp issues its batch back to back and finds its lines 8
    // instructions later; 96 instructions of 32 lines are more than the L1 holds.
    let batch = IssueTiming {
        load_registers: 22,
        ..IssueTiming::default()
    };
    assert!(hit(&batch, 8).0 > 0.95, "{:?}", hit(&batch, 8));
    assert!(hit(&batch, 96).0 < 0.05, "{:?}", hit(&batch, 96));
    // One load in flight: the oldest warps that can issue take turns, about queue + 1 +
    // latency / 32 of them, so a reuse 2 instructions later still hits and one 4 later
    // mostly does not (measured on the GPU at 64 warps: 0.50 and 0.05).
    let single = IssueTiming::default();
    assert_eq!(single.loads_in_flight(4), 1);
    assert!(hit(&single, 2).0 > 0.9, "{:?}", hit(&single, 2));
    assert!(hit(&single, 4).0 < 0.3, "{:?}", hit(&single, 4));
    // The L1 serves one line per cycle: 64 warps' 256 instructions of 32 lines take longer.
    assert!(hit(&single, 2).1 >= 64 * 256 * 32);
    // With L2's bandwidth limited, misses queue for it: a probe that misses L1 takes longer at
    // 0.5 sectors per cycle (32 lines of one sector each per instruction, most of them missed),
    // and as long where it hits.
    let limited = IssueTiming {
        l2_sectors_per_kcycle: 500,
        ..IssueTiming::default()
    };
    let (miss_free, miss_limited) = (hit(&single, 96), hit(&limited, 96));
    assert!(
        miss_limited.1 as f64 > 1.5 * miss_free.1 as f64,
        "{miss_free:?} {miss_limited:?}"
    );
    assert!(miss_limited.1 >= 64 * 256 * 32 * 2 * 9 / 10);
    assert_eq!(hit(&limited, 1).0, hit(&single, 1).0);
    // The timing parses with or without the rate, and refuses other counts.
    let t: IssueTiming = "1,16,35,270,570,600".parse().unwrap();
    assert_eq!(t.l2_sectors_per_kcycle, 600);
    let t: IssueTiming = "1,16,35,270,570".parse().unwrap();
    assert_eq!(t, IssueTiming::default());
    assert!("1,16,35,270".parse::<IssueTiming>().is_err());
    assert!("1,16,35,270,570,600,1".parse::<IssueTiming>().is_err());
    assert!("1,16,35,270,570,0".parse::<IssueTiming>().is_err());
    // Bad probe parameters are an error.
    assert!(reuse_probe_hit_rate(&p, &batch, 33, 2, 256).is_err());
    assert!(reuse_probe_hit_rate(&p, &batch, 32, 0, 256).is_err());
}

/// The bounds rankings prune with are never above the estimate, at any level, for stencils and
/// LBM kernels (AoS records, whose early write-backs enter both), with full and partial tiles.
#[test]
fn bounds_never_exceed_the_estimate() {
    let m = crate::spec::load_machine("h100-sxm").unwrap();
    let files = [
        "stencils/star3d_r4.toml",
        "stencils/box3d_r1.toml",
        "lbm/d3q19_srt_push_aos.toml",
        "lbm/d3q19_srt_pull.toml",
    ];
    let configs = [
        LaunchConfig::new([32, 4, 2], [1, 2, 1]),
        LaunchConfig::new([8, 4, 4], [1, 1, 2]),
        LaunchConfig::new([128, 1, 1], [2, 1, 1]),
        LaunchConfig::new([2, 4, 4], [1, 4, 4]),
        LaunchConfig::new([1024, 1, 1], [1, 1, 1]),
    ];
    let mut est = Estimator::default();
    for f in files {
        let k = kernel_of(f);
        for d in [Domain::new3(200, 72, 40), Domain::new3(256, 128, 128)] {
            for c in &configs {
                let p = CacheParams::from_machine(&m, c.threads(), 2);
                let prog = MemoryProgram::new(&k, &d, c).unwrap();
                let b = est.bounds_program(&prog, &p).unwrap();
                let e = est.estimate_program(&prog, &p).unwrap();
                for ((level, lo), (_, v)) in b.levels().into_iter().zip(e.levels()) {
                    assert!(lo <= v, "{f} {d} {c}: {level} bound {lo} above {v}");
                }
                // The per-warp volumes are the estimate's own.
                assert_eq!(b.l1_wavefronts, e.l1_wavefronts);
                assert_eq!(b.l2_store, e.l2_store);
                assert!(b.dram_load > 0.0 && b.l2_load > 0.0, "{f} {c}: {b:?}");
            }
        }
    }
}

#[test]
fn fetch_partners_are_lost_between_x_fold_points_where_l2_misses() {
    // Measured on the H100 (D3Q19 SoA, bench/results/h100/counters/l2-fetch/): a tile folded
    // along x fetches per fold point; the other half of a 64-byte fetch, first requested at the
    // thread's next x-fold point, is fetched again where L2 misses that reuse.
    let k = kernel(
        Field::scalar("u", Dtype::F32, 1, FieldRole::Input),
        Field::scalar("v", Dtype::F32, 0, FieldRole::Output),
        &[([0, 0, 0], 0)],
    );
    let d = Domain::new3(256, 16, 4);
    let at = |c: &LaunchConfig, fetch: usize, l2: usize| {
        let p = CacheParams {
            dram_fetch_bytes: fetch,
            l2_bytes: l2,
            ..big()
        };
        data_volumes(&k, &d, c, &p).unwrap()
    };
    let (keeps, loses) = (big().l2_bytes, 64);
    // Each fold point of 8 f32 covers two sectors from byte 4 on, in one or two fetches.
    let folded = LaunchConfig::new([8, 4, 1], [4, 1, 1]);
    let (kept32, kept64) = (at(&folded, 32, keeps), at(&folded, 64, keeps));
    let (lost32, lost64) = (at(&folded, 32, loses), at(&folded, 64, loses));
    assert!(
        kept64.dram_load < 1.1 * kept32.dram_load,
        "{kept64:?} {kept32:?}"
    );
    assert!(
        lost64.dram_load > 1.3 * lost32.dram_load,
        "{lost64:?} {lost32:?}"
    );
    assert_eq!(
        (lost64.l2_load, lost64.dram_store),
        (lost32.l2_load, lost32.dram_store)
    );
    // Unfolded, a fetch's halves are requested at the same step (by blocks side by side).
    let flat = LaunchConfig::new([32, 4, 1], [1; 3]);
    let (flat32, flat64) = (at(&flat, 32, loses), at(&flat, 64, loses));
    assert!(
        flat64.dram_load < 1.1 * flat32.dram_load,
        "{flat64:?} {flat32:?}"
    );
}

#[test]
fn fetch_partners_come_sooner_where_the_compiled_code_interleaves_x_fold_points() {
    // The compiled code issues the x-fold points' loads together (ptxas interleaves fold
    // points): the other half of a fetch is requested a step later, not a fold point later, and
    // L2 keeps it at sizes where it loses it a fold point apart; never the reverse.
    let k = kernel(
        Field::scalar("u", Dtype::F32, 1, FieldRole::Input),
        Field::scalar("v", Dtype::F32, 0, FieldRole::Output),
        &[([0, 0, 0], 0)],
    );
    let d = Domain::new3(256, 16, 4);
    let c = LaunchConfig::new([8, 4, 1], [4, 1, 1]);
    let emitted = MemoryProgram::new(&k, &d, &c).unwrap();
    let mut order: Vec<(usize, usize)> = emitted.issued_sequence().collect();
    // Loads (instruction 0) of the four fold points first, then the stores.
    order.sort_by_key(|&(f, i)| (i, f));
    let together = MemoryProgram::new(&k, &d, &c)
        .unwrap()
        .with_compiled_order(order)
        .unwrap();
    let mut sooner = 0;
    for l2 in (6..20).map(|e| 1usize << e) {
        let p = CacheParams {
            dram_fetch_bytes: 64,
            l2_bytes: l2,
            ..big()
        };
        let est = |prog: &MemoryProgram| Estimator::default().estimate_program(prog, &p).unwrap();
        let (a, b) = (est(&emitted).dram_load, est(&together).dram_load);
        assert!(b <= a + 1e-9, "L2 of {l2} B: {b} against {a} as emitted");
        sooner += usize::from(b < a - 1e-9);
    }
    assert!(
        sooner > 0,
        "no L2 size keeps the partners only when they come sooner"
    );
}

/// L2 holds whole 128-byte lines (measured on both GPUs: a buffer read one sector per line is lost
/// at the same MiB of lines as one read whole, `bench/l2-traffic.py` set `lines`), so a window
/// within a wave shorter than a tile's x-fold points takes the room of the lines its sectors lie
/// in. D3Q19 SoA at 256³ on the H200 (the current kernel, rows 32 bytes into a line): 16×64×1
/// folded 4×1×1 (one block per SM) was measured at 134.3 B/LUP of DRAM load and 8×16×2 folded
/// 4×1×1 at 190.4: L2 loses the reuse from one x-fold point to the next, whose window of about
/// 27 MiB of sectors (where the measured curve keeps nearly everything) lies in two to three
/// times as many lines. Counted in sectors they were estimated at 84.8 and 117.2. An unfolded
/// block is unchanged (80.8 estimated, 82.0 measured for 32×4×4). Since a fold point's stores
/// take L1 room in lockstep (stop 65), the first reads 148.4 here, in the emitted order (+10.5 %;
/// +8.8 % in the compiled order the counter recheck takes): within 12 %.
#[test]
fn a_window_takes_the_room_of_its_lines_in_l2() {
    let k = kernel_of("lbm/d3q19_srt_pull.toml");
    let d = Domain::new3(256, 256, 256);
    let m = crate::spec::load_machine("h200").unwrap();
    let at = |block: [usize; 3], fold: [usize; 3], bps: usize| {
        let c = LaunchConfig::new(block, fold);
        let p = CacheParams::from_machine(&m, c.threads(), bps);
        data_volumes(&k, &d, &c, &p).unwrap().dram_load
    };
    for (block, fold, bps, measured) in [
        ([16, 64, 1], [4, 1, 1], 1, 134.3),
        ([8, 16, 2], [4, 1, 1], 6, 190.4),
        ([32, 4, 4], [1, 1, 1], 3, 82.0),
    ] {
        let e = at(block, fold, bps);
        assert!((e / measured - 1.0).abs() < 0.12, "{block:?} {fold:?}: {e}");
    }
}

/// The room factors themselves: f32 rows 32 bytes into a line, blocks 16 wide folded 4 times.
/// One x-fold point covers 64 bytes of every 256, a line and a half of room for two sectors (3);
/// two consecutive ones 128 bytes in two lines (2); all four whole rows. Relative to whole rows,
/// whose 32 sectors lie in 9 lines (1.125): 2.67 and 1.78.
#[test]
fn line_room_counts_the_lines_of_the_fold_points_in_a_window() {
    let k = kernel(
        Field::scalar("u", Dtype::F32, 8, FieldRole::Input),
        Field::scalar("v", Dtype::F32, 8, FieldRole::Output),
        &[([0, 0, 0], 0)],
    );
    let d = Domain::new3(256, 8, 8);
    let c = LaunchConfig::new([16, 4, 1], [4, 1, 1]);
    let prog = MemoryProgram::new(&k, &d, &c).unwrap();
    let (mut planes, mut acc) = (Vec::new(), Vec::new());
    super::geometry::planes(&prog, &mut planes, &mut acc);
    let room = super::block::line_room(&planes, &acc, 16, 4, 256, 32, 128);
    assert_eq!(room.len(), 4);
    assert!((room[0] - 3.0 / 1.125).abs() < 0.1, "{room:?}");
    assert!((room[1] - 2.0 / 1.125).abs() < 0.1, "{room:?}");
    assert_eq!(room[3], 1.0);
    assert!(room.windows(2).all(|w| w[0] >= w[1]), "{room:?}");
}

#[test]
fn bursts_of_back_to_back_loads_see_only_the_interleaved_warps() {
    // Measured on the H100 and the H200 (bench/l1-interleave.py): between two loads of one
    // warp's burst, L1 sees the loads of only a share of the SM's warps. A narrow block's
    // x-neighbours reuse each line within the burst; in lockstep every resident warp's 32 lines
    // per step come in between and evict it, with a small share they do not.
    let k = kernel(
        Field::scalar("u", Dtype::F32, 1, FieldRole::Input),
        Field::scalar("v", Dtype::F32, 0, FieldRole::Output),
        &[([-1, 0, 0], 0), ([0, 0, 0], 0), ([1, 0, 0], 0)],
    );
    let d = Domain::new3(64, 256, 16);
    let at = |c: &LaunchConfig, share: Option<f64>| {
        let p = CacheParams {
            blocks_per_sm: 8,
            l1_bytes: 64 * 128,
            l1_interleave: share
                .map(|s| InterleaveShares::new(&[(1.0, s)]).unwrap())
                .unwrap_or_default(),
            ..big()
        };
        data_volumes(&k, &d, c, &p).unwrap()
    };
    let flat = LaunchConfig::new([1, 64, 1], [1; 3]);
    let (lockstep, all, few) = (at(&flat, None), at(&flat, Some(1.0)), at(&flat, Some(0.05)));
    assert_eq!(lockstep, all, "a share of 1 is lockstep");
    assert!(few.l2_load < 0.8 * lockstep.l2_load, "{few:?} {lockstep:?}");
    assert!(few.l2_load >= 4.0, "{few:?}");
    assert_eq!(
        (few.l1_load_requests, few.dram_store),
        (lockstep.l1_load_requests, lockstep.dram_store)
    );
    // Folded, only the first fold point's loads are the burst: the later points take turns with
    // every warp, so the share saves less per update.
    let folded = LaunchConfig::new([1, 64, 1], [1, 1, 4]);
    let (f_lock, f_few) = (at(&folded, None), at(&folded, Some(0.05)));
    assert!(f_few.l2_load < f_lock.l2_load, "{f_few:?} {f_lock:?}");
    assert!(
        f_lock.l2_load - f_few.l2_load < lockstep.l2_load - few.l2_load,
        "{f_few:?} {f_lock:?}"
    );
}

#[test]
fn one_block_per_sm_issues_its_first_burst_in_lockstep() {
    // A block alone on its SM starts all its warps together (bench/warp-drift.py: 0.00-0.01 of
    // a fold point apart at the first fold point's start), so its first burst's loads go out
    // side by side and L1 sees every warp's lines between two of one warp's loads, not the
    // share `l1_interleave` measured for warps in their steady state: a D3Q19 AoS block of 32
    // warps alone on its SM re-fetches more of its records' lines than with that share (the
    // one-block AoS counters were 5-25 % above the estimate with it).
    let m = crate::spec::load_machine("h100-sxm").unwrap();
    let (k, _) = d3q19_pull();
    let d = Domain::new3(64, 64, 64);
    let c = LaunchConfig::new([4, 16, 16], [1, 1, 1]);
    let l1 = 248 << 10;
    let one = CacheParams {
        sms: 16,
        ..CacheParams::for_l1(&m, c.threads(), 1, l1)
    };
    assert_eq!(one.l1_interleave, InterleaveShares::default());
    let burst = CacheParams {
        l1_interleave: m.l1_interleave_at(32, l1),
        ..one
    };
    assert!(burst.l1_interleave.share(19.0) < 0.9);
    let (a, b) = (
        data_volumes(&k, &d, &c, &one).unwrap(),
        data_volumes(&k, &d, &c, &burst).unwrap(),
    );
    assert!(a.l2_load > 1.02 * b.l2_load, "{a:?} {b:?}");
    assert_eq!(a.l1_load_requests, b.l1_load_requests);
    // Two blocks per SM start apart and take the table.
    let two = CacheParams::for_l1(&m, c.threads(), 2, l1);
    assert_eq!(two.l1_interleave, m.l1_interleave_at(64, l1));
}

#[test]
fn interleave_shares_interpolate_in_log_lines_and_refuse_bad_points() {
    let c = InterleaveShares::new(&[(1.0, 0.4), (4.0, 0.6)]).unwrap();
    assert!((c.share(2.0) - 0.5).abs() < 1e-12);
    assert_eq!((c.share(0.5), c.share(32.0)), (0.4, 0.6));
    assert_eq!(InterleaveShares::default().share(8.0), 1.0);
    for bad in [
        vec![(0.5, 0.5)],
        vec![(1.0, 0.0)],
        vec![(1.0, 1.5)],
        vec![(4.0, 0.5), (2.0, 0.5)],
        vec![(1.0, 0.5); 9],
    ] {
        assert!(InterleaveShares::new(&bad).is_err(), "{bad:?}");
    }
}

/// L2 sees a block's sector at its first touch and at each L1 re-fetch of it, not at L1's hits,
/// so another block's reuse is linked from the last re-fetch. Measured on the H100 (512³
/// star3d_r4 f64, `counters/star3d_r4-f64-512-top`): the same 64×4×4 tiles read 9.1 B/LUP from
/// DRAM as 64×2×1 folded 1×2×4, whose z-halo rows come back at every other fold point and are
/// re-fetched late, and 10.5 as 64×4×1 folded 1×1×4, whose L1 keeps them from the first touch on
/// (the tile above then finds them a wave later, further along L2's measured curve). Linked from
/// the first touches alone, the first was estimated 12.9 (with the step, before the preset took
/// the curve). Both within ±10 % of the counters (9.95 and 10.11 with the blocks at their launch
/// times, in the order measured but 0.16 B/LUP apart, of the measured 1.3: the slab above starts
/// 0.97 and 1.29 block durations later, and L2's measured curve keeps both reuses about alike).
#[test]
fn l2_sees_a_sector_at_its_last_refetch() {
    let k = star_r4_f64();
    let d = Domain::new3(512, 512, 512);
    let m = crate::spec::load_machine("h100-sxm").unwrap();
    let at = |block: [usize; 3], fold: [usize; 3], bps: usize| {
        let c = LaunchConfig::new(block, fold);
        let p = CacheParams::from_machine(&m, c.threads(), bps);
        data_volumes(&k, &d, &c, &p).unwrap()
    };
    let late = at([64, 2, 1], [1, 2, 4], 8);
    let kept = at([64, 4, 1], [1, 1, 4], 6);
    assert!((late.dram_load / 9.15 - 1.0).abs() < 0.1, "{late:?}");
    assert!((kept.dram_load / 10.45 - 1.0).abs() < 0.1, "{kept:?}");
    assert!(kept.dram_load > late.dram_load, "{late:?} {kept:?}");
}

/// Written data takes more L2 room than read data (`MachineModel::l2_store_weight`): with the
/// H100's measured reuse curve, star3d_r4 f64 64×4×1 fold 1×1×4 at 512³ (6 blocks per SM, as
/// the counter sweeps ran it) loses more of its z-reuses when each written byte takes the room of
/// 1.67 read ones, as measured. Its DRAM load was measured at 10.4 B/LUP
/// (`bench/results/h100/counters/`, `star3d_r4-f64-512-top`); stores weighed as reads give 8.9.
#[test]
fn written_data_takes_more_l2_room() {
    let k = star_r4_f64();
    let d = Domain::new3(512, 512, 512);
    let mut m = crate::spec::load_machine("h100-sxm").unwrap();
    m.l2_reuse_misses = vec![
        (0.0, 0.0),
        (24.0, 0.004),
        (28.0, 0.076),
        (32.0, 0.130),
        (36.0, 0.263),
        (40.0, 0.465),
        (44.0, 0.784),
        (48.0, 0.972),
        (56.0, 0.998),
        (64.0, 1.0),
    ];
    let c = LaunchConfig::new([64, 4, 1], [1, 1, 4]);
    let at = |weight: f64| {
        let mut p = CacheParams::from_machine(&m, c.threads(), 6);
        p.l2_store_weight = weight;
        data_volumes(&k, &d, &c, &p).unwrap()
    };
    let (read, written) = (at(1.0), at(1.67));
    assert!(read.dram_load < 9.4, "{read:?}");
    assert!((written.dram_load / 10.4 - 1.0).abs() < 0.1, "{written:?}");
    // The stores themselves are what they are.
    assert_eq!(read.dram_store, written.dram_store);
    let mut p = CacheParams::from_machine(&m, c.threads(), 6);
    p.l2_store_weight = 0.5;
    assert!(data_volumes(&k, &d, &c, &p).is_err());
}

/// `eight_components()` folded along z by 2: each fold point's 8 loads touch the same 16 lines
/// per warp, one after another in the emitted order.
fn eight_components_folded() -> (Kernel, Domain, LaunchConfig) {
    let (k, d, _) = eight_components();
    (k, d, LaunchConfig::new([32, 4, 1], [1, 1, 2]))
}

#[test]
fn compiled_order_must_name_every_issued_instruction_once() {
    let (k, d, c) = eight_components_folded();
    let prog = || MemoryProgram::new(&k, &d, &c).unwrap();
    let emitted: Vec<(usize, usize)> = prog().issued_sequence().collect();
    // Two fold points of 8 loads and a store each.
    assert_eq!(emitted.len(), 18);
    let err = |order: Vec<(usize, usize)>| match prog().with_compiled_order(order) {
        Err(FootprintError::CompiledOrder(m)) => m,
        other => panic!("expected a compiled-order error, got {other:?}"),
    };
    let mut short = emitted.clone();
    short.pop();
    assert!(err(short).contains("17 entries, but the thread issues 18"));
    let mut twice = emitted.clone();
    twice[1] = twice[0];
    assert!(err(twice).contains("twice"));
    let mut beyond = emitted.clone();
    beyond[0] = (2, 0);
    assert!(err(beyond).contains("2 fold points of 9 instructions"));
    // Reversed is a valid order, and the program issues in it.
    let reversed: Vec<(usize, usize)> = emitted.iter().rev().copied().collect();
    let p = prog().with_compiled_order(reversed.clone()).unwrap();
    assert_eq!(p.issued_sequence().collect::<Vec<_>>(), reversed);
    assert_eq!(p.emitted_sequence().collect::<Vec<_>>(), emitted);
}

#[test]
fn compiled_order_not_issued_load_is_an_error() {
    // Folded along z, the second fold point's loads at z - 1 … z + 1 overlap the first's: a
    // register holds them, and an order naming one is refused.
    let mut src = Field::scalar("u", Dtype::F64, 1, FieldRole::Input);
    src.components = 1;
    let k = kernel(
        src,
        Field::scalar("v", Dtype::F64, 1, FieldRole::Output),
        &[([0, 0, -1], 0), ([0, 0, 0], 0), ([0, 0, 1], 0)],
    );
    let d = Domain::new3(64, 16, 8);
    let c = LaunchConfig::new([32, 4, 1], [1, 1, 2]);
    let prog = MemoryProgram::new(&k, &d, &c).unwrap();
    let n = prog.instructions.len();
    let held = (0..n)
        .find(|&i| !prog.issues(1, i))
        .expect("a load held in a register");
    let mut order: Vec<(usize, usize)> = prog.issued_sequence().collect();
    order[0] = (1, held);
    let e = prog.with_compiled_order(order).unwrap_err().to_string();
    assert!(e.contains("does not issue"), "{e}");
}

#[test]
fn compiled_order_interleaving_fold_points_stretches_l1_reuse() {
    use crate::cachesim::{simulate_program, IssueOrder, L1Replacement};
    // 2 blocks of 4 warps per SM touch 128 lines per load instruction; an L1 of 192 lines keeps
    // a line from one load to the next, not across two.
    let (k, d, c) = eight_components_folded();
    let p = four_sms_with_l1(192);
    let emitted = MemoryProgram::new(&k, &d, &c).unwrap();
    let order: Vec<(usize, usize)> = emitted.issued_sequence().collect();
    // The compiled code's way: the two fold points' loads taken turn about.
    let of =
        |f: usize| -> Vec<(usize, usize)> { order.iter().copied().filter(|s| s.0 == f).collect() };
    let (mut fp0, mut fp1) = (of(0), of(1));
    let mut interleaved = Vec::new();
    while !fp0.is_empty() || !fp1.is_empty() {
        interleaved.extend(fp0.drain(..1.min(fp0.len())));
        interleaved.extend(fp1.drain(..1.min(fp1.len())));
    }
    let same = MemoryProgram::new(&k, &d, &c)
        .unwrap()
        .with_compiled_order(order)
        .unwrap();
    let turns = MemoryProgram::new(&k, &d, &c)
        .unwrap()
        .with_compiled_order(interleaved)
        .unwrap();
    let est = |prog: &MemoryProgram| Estimator::default().estimate_program(prog, &p).unwrap();
    let sim = |prog: &MemoryProgram| {
        simulate_program(prog, &p, IssueOrder::Lockstep, L1Replacement::Lru).unwrap()
    };
    // The emitted order given as the compiled one changes nothing.
    assert_eq!(est(&same), est(&emitted));
    assert_eq!(sim(&same), sim(&emitted));
    // Taken turn about, a fold point's loads reuse their lines two loads apart: L1 loses them.
    let (e0, e1) = (est(&emitted).l2_load, est(&turns).l2_load);
    let (s0, s1) = (sim(&emitted).l2_load, sim(&turns).l2_load);
    assert!(s1 > 2.0 * s0, "simulator: {s0} -> {s1}");
    assert!(e1 > 2.0 * e0, "visitor: {e0} -> {e1}");
    assert!(
        (e1 / s1 - 1.0).abs() < 0.2,
        "visitor {e1} against simulator {s1}"
    );
    // Orders that interleave the emitted fold points refuse it.
    let e = simulate_program(&turns, &p, IssueOrder::WarpBurst, L1Replacement::Lru);
    assert!(matches!(e, Err(FootprintError::CompiledOrder(_))), "{e:?}");
}

/// The folded program issued in its emitted order, with a spill of 8 bytes stored after
/// `store_at` and loaded back after `load_at` of its global accesses.
fn spilled(store_at: usize, load_at: usize) -> MemoryProgram {
    let (k, d, c) = eight_components_folded();
    let prog = MemoryProgram::new(&k, &d, &c).unwrap();
    let order: Vec<(usize, usize)> = prog.issued_sequence().collect();
    let spill = |store, position| LocalAccess {
        store,
        offset: 16,
        bytes: 8,
        position,
    };
    prog.with_compiled_order(order)
        .unwrap()
        .with_local_accesses(vec![spill(true, store_at), spill(false, load_at)])
        .unwrap()
}

#[test]
fn spills_are_written_through_and_kept_where_the_caches_hold_them() {
    let (k, d, c) = eight_components_folded();
    let plain = MemoryProgram::new(&k, &d, &c).unwrap();
    let est = |prog: &MemoryProgram, p: &CacheParams| {
        Estimator::default().estimate_program(prog, p).unwrap()
    };
    // Two fold points per thread: 8 bytes stored per thread are 4 per lattice update.
    let (base, near) = (est(&plain, &big()), est(&spilled(1, 2), &big()));
    assert_eq!(near.l2_store, base.l2_store + 4.0);
    // Large caches: the load back hits L1, and L2 keeps the word until the next block's store.
    assert_eq!(near.l2_load, base.l2_load);
    assert_eq!(near.dram_load, base.dram_load);
    assert_eq!(near.dram_store, base.dram_store);
    // A warp moves two lines per 8-byte access: 2 × 2 wavefronts per 32 lanes × 2 points.
    assert!((near.l1_wavefronts - base.l1_wavefronts - 4.0 / 64.0).abs() < 1e-12);
    assert_eq!(near.l1_load_requests, base.l1_load_requests);
    // The lower bounds count the spilled stores too.
    let bounds = Estimator::default()
        .bounds_program(&spilled(1, 2), &big())
        .unwrap();
    assert!(bounds.l2_store <= near.l2_store && bounds.l2_store > base.l2_store);
}

#[test]
fn spills_far_apart_miss_small_caches() {
    let (k, d, c) = eight_components_folded();
    let plain = MemoryProgram::new(&k, &d, &c).unwrap();
    // An L1 of one line and an L2 of a few: the word is lost between store and load.
    let small = CacheParams {
        l2_bytes: 4096,
        ..four_sms_with_l1(1)
    };
    let est = |prog: &MemoryProgram| Estimator::default().estimate_program(prog, &small).unwrap();
    let (base, far) = (est(&plain), est(&spilled(0, 18)));
    assert_eq!(far.l2_store, base.l2_store + 4.0);
    assert_eq!(far.l2_load, base.l2_load + 4.0);
    assert_eq!(far.dram_load, base.dram_load + 4.0);
    assert_eq!(far.dram_store, base.dram_store + 4.0);
    // With the measured curve instead of the step, L2 loses the word by its share at the
    // distance: here every byte beyond 1 KiB.
    let curve = CacheParams {
        l2_reuse_misses: ReuseMisses::new(&[(0.0, 0.0), (1024.0, 1.0)]).unwrap(),
        ..small
    };
    let far = Estimator::default()
        .estimate_program(&spilled(0, 18), &curve)
        .unwrap();
    assert_eq!(far.dram_load, base.dram_load + 4.0);
    // Stored and loaded back around one global load: L1 (one line) loses the word, an L2 of 1
    // MiB keeps it.
    let mib = CacheParams {
        l2_bytes: 1 << 20,
        ..small
    };
    let est = |prog: &MemoryProgram| Estimator::default().estimate_program(prog, &mib).unwrap();
    let (base, near) = (est(&plain), est(&spilled(16, 18)));
    assert_eq!(near.l2_load, base.l2_load + 4.0);
    assert_eq!(near.dram_load, base.dram_load);
    // With nothing but a store between them, L1 keeps it too (stores bring no lines in).
    assert_eq!(est(&spilled(17, 18)).l2_load, base.l2_load);
}

#[test]
fn stack_accesses_must_fit_the_compiled_order() {
    let (k, d, c) = eight_components_folded();
    let prog = || MemoryProgram::new(&k, &d, &c).unwrap();
    let order: Vec<(usize, usize)> = prog().issued_sequence().collect();
    let access = |offset, bytes, position| LocalAccess {
        store: true,
        offset,
        bytes,
        position,
    };
    let err = |local: Vec<LocalAccess>| match prog()
        .with_compiled_order(order.clone())
        .unwrap()
        .with_local_accesses(local)
    {
        Err(FootprintError::CompiledOrder(m)) => m,
        other => panic!("expected a compiled-order error, got {other:?}"),
    };
    assert!(err(vec![access(0, 12, 0)]).contains("not 4, 8 or 16 bytes"));
    assert!(err(vec![access(4, 8, 0)]).contains("aligned"));
    assert!(err(vec![access(0, 4, 19)]).contains("the order has 18"));
    assert!(err(vec![access(0, 4, 5), access(4, 4, 3)]).contains("stack access 2"));
    // Without a compiled order there is nothing to place them in.
    let e = prog()
        .with_local_accesses(vec![access(0, 4, 0)])
        .unwrap_err();
    assert!(e.to_string().contains("need the compiled order"), "{e}");
    // A new order drops the accesses placed in the old one.
    let p = spilled(1, 2).with_compiled_order(order.clone()).unwrap();
    assert!(p.local.is_empty());
}

#[test]
fn a_warp_waiting_for_its_aos_loads_sees_the_queue_and_one_l2_latency_of_lines() {
    // Measured on the H100 at 128³ (`issue-order/d3q19_srt_pull-aos-timed-128.md`): the L2 load
    // of folded D3Q19 AoS blocks follows the simulator's timed order, where a warp's next load
    // goes out an L2 latency after its last, behind the L1's queue; between two of its loads
    // L1 serves those lines, not a load of every resident warp. Its own lines come back more
    // often than in lockstep; SoA kernels and launches with few warps keep lockstep.
    let m = crate::spec::load_machine("h100-sxm").unwrap();
    let (aos, soa) = d3q19_pull();
    let d = Domain::new3(256, 128, 64);
    let at = |k: &Kernel, c: &LaunchConfig, bps: usize, queue: bool| {
        let mut p = CacheParams::from_machine(&m, c.threads(), bps);
        if !queue {
            (p.l1_queue, p.l2_latency_lines) = (0.0, 0.0);
        }
        data_volumes(k, &d, c, &p).unwrap()
    };
    assert!(m.l1_queue_instructions > 0 && m.l2_latency_cycles > 0.0);
    let small = LaunchConfig::new([2, 4, 4], [1, 4, 4]);
    let (lock, queued) = (at(&aos, &small, 32, false), at(&aos, &small, 32, true));
    assert!(queued.l2_load < 0.95 * lock.l2_load, "{queued:?} {lock:?}");
    assert!(
        queued.l2_load >= queued.l1_load_requests / 19.0,
        "{queued:?}"
    );
    assert_eq!(
        (queued.l1_load_requests, queued.l2_store),
        (lock.l1_load_requests, lock.l2_store)
    );
    // Two warps on the SM: the window is every other warp's already.
    assert_eq!(at(&aos, &small, 2, true), at(&aos, &small, 2, false));
    // SoA: no change.
    let soa_c = LaunchConfig::new([32, 4, 2], [1, 2, 1]);
    assert_eq!(at(&soa, &soa_c, 4, true), at(&soa, &soa_c, 4, false));
}

/// `v = u` in f32, without ghost layers: no input sector is shared between blocks but by their
/// own layout.
fn copy_f32() -> Kernel {
    kernel(
        Field::scalar("u", Dtype::F32, 0, FieldRole::Input),
        Field::scalar("v", Dtype::F32, 0, FieldRole::Output),
        &[([0, 0, 0], 0)],
    )
}

#[test]
fn a_sector_split_in_several_pieces_is_filled_once_per_piece_written_back() {
    // Two threads wide, folded 4 along x: each f32 output sector (8 words) is written in four
    // pieces, one per fold point. With an L2 that keeps nothing, every piece is written back
    // partly written and filled first: 4 writes and 4 fills per sector (16 B/LUP each), not the
    // 2 fills per split pair (3 pairs: 24 B/LUP) that counting the pairs alone would give. The
    // input (no halo, no reuse) costs its 4 B/LUP.
    let k = copy_f32();
    let d = Domain::new3(64, 16, 4);
    let c = LaunchConfig::new([2, 16, 1], [4, 1, 1]);
    let tiny_l2 = CacheParams {
        l2_bytes: 1024,
        ..big()
    };
    let v = data_volumes(&k, &d, &c, &tiny_l2).unwrap();
    assert!(close(v.dram_store, 16.0), "{v:?}");
    assert!(close(v.dram_load, 4.0 + 16.0), "{v:?}");
    // With L2 keeping everything, the pieces meet there: one write, no fill.
    let v = data_volumes(&k, &d, &c, &big()).unwrap();
    assert!(close(v.dram_store, 4.0) && close(v.dram_load, 4.0), "{v:?}");
}

#[test]
fn a_sector_neighbouring_blocks_write_in_pieces_is_filled_once_per_piece_written_back() {
    // One thread wide: each f32 output sector (8 words) is written by 8 blocks side by side,
    // each in a wave of its own (one SM, one block). With an L2 that keeps nothing, each of the
    // 8 pieces is written back and filled: 32 B/LUP of each, not the 56 B/LUP of fills that two
    // per split pair (7 pairs) would give. Every block's read of the input misses L2 as well
    // (32 B/LUP).
    let k = copy_f32();
    let d = Domain::new3(64, 32, 4);
    let c = LaunchConfig::new([1, 32, 1], [1, 1, 1]);
    let tiny_l2 = CacheParams {
        sms: 1,
        blocks_per_sm: 1,
        l2_bytes: 1024,
        ..big()
    };
    let v = data_volumes(&k, &d, &c, &tiny_l2).unwrap();
    assert!(close(v.dram_store, 32.0), "{v:?}");
    assert!(close(v.dram_load, 32.0 + 32.0), "{v:?}");
}

#[test]
fn a_sectors_reuse_survives_where_its_line_is_renewed_between() {
    // L2 keeps whole lines and a hit renews the line's place (bench/l2-traffic.py sets `lines`
    // and `promote`). Flat D3Q19 AoS tiles read a record's line in three layers of tiles, each
    // its own words: the sectors of the z-velocities are read two layers apart and the middle
    // layer renews their line. With an L2 that holds one layer's traffic but not two, the
    // visitor came within 6 % of its own simulator (an LRU of lines, lockstep waves) only where
    // it counted that renewal (without it, 12 % over). With the blocks started at their launch
    // offsets, in the visitor as in the simulator, the layers overlap in time and the simulator
    // loses more (244 B/LUP against 167 in lockstep waves); the visitor follows within 15 %
    // (214; 222 without the renewal).
    let m = crate::spec::load_machine("h100-sxm").unwrap();
    let (aos, _) = d3q19_pull();
    let d = Domain::new3(64, 64, 32);
    let c = LaunchConfig::new([32, 4, 1], [1; 3]);
    // 16 SMs of 2 blocks: a wave is one layer of 32 tiles; an L1 of 8 lines, an LRU L2 of 1 MiB.
    let p = CacheParams {
        sms: 16,
        l1_bytes: 1024,
        l2_bytes: 1 << 20,
        l2_reuse_misses: Default::default(),
        ..CacheParams::from_machine(&m, c.threads(), 2)
    };
    let est = estimate(&aos, &c, &d, &p).unwrap().dram_load;
    let sim = crate::cachesim::simulate_in(
        &aos,
        &d,
        &c,
        &p,
        crate::cachesim::IssueOrder::Launched,
        crate::cachesim::L1Replacement::Lru,
    )
    .unwrap()
    .dram_load;
    assert!(
        (0.85..1.06).contains(&(est / sim)),
        "estimate {est} against the simulator's {sim} B/LUP"
    );
}

#[test]
fn links_across_waves_are_as_long_as_their_launch_offset() {
    // Each plane is read again by the blocks of the next one, 12 blocks later in launch order:
    // 1.5 waves of 8. Blocks start as others finish, so every such reuse lies 1.5 waves back;
    // lockstep waves would put half of them one wave back and half two, and an L2 between
    // those distances would keep half (three levels of DRAM load over the capacities below).
    let k = kernel(
        Field::scalar("u", Dtype::F32, 1, FieldRole::Input),
        Field::scalar("v", Dtype::F32, 0, FieldRole::Output),
        &[([0, 0, 0], 0), ([0, 0, -1], 0)],
    );
    let (d, c) = (
        Domain::new3(64, 24, 16),
        LaunchConfig::new([32, 4, 1], [1; 3]),
    );
    let dram_load = |l2_bytes: usize| {
        let p = CacheParams {
            l2_bytes,
            ..four_sms_with_l1(4)
        };
        data_volumes(&k, &d, &c, &p).unwrap().dram_load
    };
    let (lost, kept) = (dram_load(1 << 10), dram_load(1 << 20));
    assert!(lost > 1.5 * kept, "{lost} {kept}");
    let levels: Vec<f64> = (4..=64)
        .step_by(4)
        .map(|kib| dram_load(kib << 10))
        .collect();
    // One step: at most one capacity between the two levels (where L2 holds part of a window).
    let between = levels
        .iter()
        .filter(|&&v| !close(v, lost) && !close(v, kept))
        .count();
    assert!(between <= 1, "{levels:?}");
    assert!(levels.iter().any(|&v| close(v, lost)) && levels.iter().any(|&v| close(v, kept)));
}

#[test]
fn stores_in_place_leave_no_sector_partly_written() {
    // Measured on the H200 (`oos63/`-`oos65/`): the AA kernels, which store where a thread
    // read, write no sector back early: each sector is whole in L2 when the stores arrive. The
    // visitor charged them a write-only kernel's partly written sectors (DRAM load up to three
    // times the counters; D3Q19 AA's even step 2×8×64 fold 1×1×2 at one block per SM, a tile
    // narrower than a sector: 179.1 B/LUP written for 90.3, now 90.6). Not all: D3Q15 AA f64
    // 1×2×32 fold 1×2×2 at 16 blocks per SM writes 247.8 (now 120.9, before 224.4).
    let aa = kernel_of("lbm/d3q19_srt_aa.toml");
    let d = Domain::new3(128, 64, 64);
    let m = crate::spec::load_machine("h200").unwrap();
    let p = |c: &LaunchConfig| CacheParams {
        partial_sector_limit: 1.0,
        ..CacheParams::from_machine(&m, c.threads(), 3)
    };
    let (min_load, min_store) = minimal_volumes(&aa);
    let wide = LaunchConfig::new([8, 16, 2], [1, 2, 2]);
    let narrow = LaunchConfig::new([2, 16, 2], [1, 2, 2]);
    for c in [&wide, &narrow] {
        assert!(MemoryProgram::new(&aa, &d, c).unwrap().stores_in_place());
        let v = estimate(&aa, c, &d, &p(c)).unwrap();
        // Every sector written once, none filled: the minimal volumes (its edges aside).
        assert!(
            v.dram_store < 1.02 * min_store,
            "{c:?}: {} B/LUP written",
            v.dram_store
        );
        assert!(
            v.dram_load < 1.05 * min_load,
            "{c:?}: {} B/LUP read",
            v.dram_load
        );
    }
    // A pull kernel stores into another array than it reads: its narrow tiles' sectors are
    // partly written, and L2's limit writes them back early.
    let (_, soa) = d3q19_pull();
    assert!(!MemoryProgram::new(&soa, &d, &wide)
        .unwrap()
        .stores_in_place());
    let (_, soa_min_store) = minimal_volumes(&soa);
    let v = estimate(&soa, &narrow, &d, &p(&narrow)).unwrap();
    assert!(
        v.dram_store > 1.2 * soa_min_store,
        "{} B/LUP written",
        v.dram_store
    );
    // The written sectors are those it read: where a tile's row spans a sector, in L2's
    // windows only the written data's extra room counts (`l2_store_weight` less one). H200,
    // 256³, 4×16×4 fold 4×1×1 at 3 blocks per SM: 111.9 B/LUP written and 98.7 read, where the
    // whole weight gave 207.0 and 300.8.
    assert!(MemoryProgram::new(&aa, &d, &wide)
        .unwrap()
        .stores_in_place_whole(32));
    assert!(!MemoryProgram::new(&aa, &d, &narrow)
        .unwrap()
        .stores_in_place_whole(32));
    let folded = LaunchConfig::new([4, 16, 4], [4, 1, 1]);
    let v = estimate(
        &aa,
        &folded,
        &Domain::new3(256, 256, 256),
        &CacheParams::from_machine(&m, folded.threads(), 3),
    )
    .unwrap();
    assert!(
        (v.dram_store / 111.9 - 1.0).abs() < 0.1,
        "{} B/LUP",
        v.dram_store
    );
    assert!(v.dram_load < 1.4 * 98.7, "{} B/LUP", v.dram_load);
}

#[test]
fn stores_in_place_fill_none_of_the_sectors_they_write_back_in_pieces() {
    // Measured on the H200 (`oos63/`-`oos65/`): AA tiles narrower than a sector that L2
    // evicts between two of a sector's writes (DRAM store above the minimum) read what their
    // loads miss and no more: each sector they write, they read first. D3Q19 AA (even step)
    // 1×64×4 fold 2×1×2 at 3 blocks per SM writes 94.3 B/LUP and reads 81.1, where a fill per
    // piece written back gave 183.6 (now 76.6).
    let aa = kernel_of("lbm/d3q19_srt_aa.toml");
    let (_, soa) = d3q19_pull();
    let d = Domain::new3(128, 64, 64);
    let m = crate::spec::load_machine("h200").unwrap();
    let narrow = LaunchConfig::new([2, 16, 2], [2, 2, 2]);
    // An L2 of 1 MiB: pairs of writes a fold point apart are evicted between.
    let p = CacheParams {
        l2_bytes: 1 << 20,
        l2_reuse_misses: Default::default(),
        ..CacheParams::from_machine(&m, narrow.threads(), 3)
    };
    let (min_load, min_store) = minimal_volumes(&aa);
    let v = estimate(&aa, &narrow, &d, &p).unwrap();
    let (read, written) = (v.dram_load - min_load, v.dram_store - min_store);
    assert!(written > 0.3 * min_store, "{} B/LUP written", v.dram_store);
    // A write-only kernel fills each piece written back; the in-place one reads only what its
    // loads miss, less than it writes again.
    let w = estimate(&soa, &narrow, &d, &p).unwrap();
    let (soa_min_load, soa_min_store) = minimal_volumes(&soa);
    let (soa_read, soa_written) = (w.dram_load - soa_min_load, w.dram_store - soa_min_store);
    assert!(soa_read > soa_written, "{soa_read} {soa_written} B/LUP");
    assert!(
        read < soa_read - soa_written,
        "{read} {written} / {soa_read} {soa_written} B/LUP"
    );
}

#[test]
fn the_store_rules_select_exactly_the_kernels_they_were_measured_on() {
    // The in-place rules (no fills, no partly written sectors) hold for the AA kernels, both
    // steps; the push rule (each sector stored together lost once) for the push kernel. Every
    // other kernel of the project keeps the write-only rules.
    use crate::lbm::Step;
    let d = Domain::new3(64, 32, 32);
    let d2 = Domain::new2(256, 128);
    let c = LaunchConfig::new([32, 4, 1], [1, 1, 1]);
    let files = [
        "stencils/box3d_r1.toml",
        "stencils/star2d_r1.toml",
        "stencils/star3d_r1.toml",
        "stencils/star3d_r4.toml",
        "stencils/varcoeff3d_r1.toml",
        "lbm/d2q9_srt_pull.toml",
        "lbm/d3q15_trt_aa_force.toml",
        "lbm/d3q19_srt_aa.toml",
        "lbm/d3q19_srt_pull.toml",
        "lbm/d3q19_srt_push_aos.toml",
        "lbm/d3q19_trt_pull.toml",
        "lbm/d3q27_trt_pull.toml",
        "bench/counters/d3q19_srt_pull_aos.toml",
        "bench/counters/d3q19_srt_pull_soa.toml",
    ];
    for file in files {
        let aa = file.contains("_aa");
        let steps: &[Option<Step>] = if aa {
            &[Some(Step::Even), Some(Step::Odd)]
        } else {
            &[None]
        };
        for &step in steps {
            let k = crate::spec::load_definition_step(file.as_ref(), step)
                .unwrap()
                .kernel;
            let dom = if file.contains("2d") || file.contains("d2q9") {
                &d2
            } else {
                &d
            };
            let prog = MemoryProgram::new(&k, dom, &c).unwrap();
            assert_eq!(prog.stores_in_place(), aa, "{file} {step:?}");
            // The AA odd step stores to neighbours too, but in place.
            let push = file.contains("push");
            assert_eq!(
                prog.stores_scattered() && !prog.stores_in_place(),
                push,
                "{file} {step:?}"
            );
        }
    }
}

/// The smallest and largest offset per axis of `prog`'s stores, as the estimate finds them.
fn store_reach(prog: &MemoryProgram) -> [(i64, i64); 3] {
    let (mut planes, mut acc) = (Vec::new(), Vec::new());
    super::geometry::planes(prog, &mut planes, &mut acc);
    acc.retain(|a| a.kind == AccessKind::Store);
    super::block::offset_range(&acc)
}

#[test]
fn a_push_kernels_sectors_stay_open_for_a_plane_of_cells() {
    // Each sector D3Q19 push stores is written from the plane below to the plane above: two
    // planes of cells apart in launch order, whatever the block.
    let push = kernel_of("lbm/d3q19_srt_push_aos.toml");
    let count = |d: Domain, c: LaunchConfig| {
        let prog = MemoryProgram::new(&push, &d, &c).unwrap();
        let per_block = (c.threads() * c.points_per_thread()) as f64;
        super::block::scattered_count(&prog, store_reach(&prog), per_block)
    };
    let c = LaunchConfig::new([64, 1, 1], [1, 1, 1]);
    // One sector per cell: two planes and two rows (the y offsets) and two cells (x).
    let big = count(Domain::new3(256, 256, 32), c);
    assert!(close(big, 2.0 * 256.0 * 256.0 + 2.0 * 256.0 + 2.0), "{big}");
    let small = count(Domain::new3(64, 64, 32), c);
    assert!(
        close(small, 2.0 * 64.0 * 64.0 + 2.0 * 64.0 + 2.0),
        "{small}"
    );
    // The same for another block shape and folding.
    let folded = LaunchConfig::new([16, 4, 2], [2, 1, 2]);
    assert!(close(count(Domain::new3(256, 256, 32), folded), big));
    // A pull kernel's stores do not spread.
    let (aos, _) = d3q19_pull();
    let prog = MemoryProgram::new(&aos, &Domain::new3(64, 64, 32), &c).unwrap();
    assert_eq!(
        super::block::scattered_count(&prog, store_reach(&prog), 64.0),
        0.0
    );
}

#[test]
fn push_kernels_lose_each_sector_they_store_together_once() {
    // Measured on the H200 (`top63/`, `top64/`): D3Q19 SRT push AoS, whose threads each write
    // one word into 19 neighbours' records, writes every sector twice and reads it once more
    // (DRAM store 146-155 B/LUP for 76 stored, DRAM read as much beyond its 76 loaded) at 1 to
    // 32 blocks per SM alike: L2 fills each partly written sector once at its limit. The
    // visitor's count of their pairs put them below the limit (79-103 B/LUP); with their
    // writers' spread in launch order (a plane of cells) above it.
    let push = kernel_of("lbm/d3q19_srt_push_aos.toml");
    let d = Domain::new3(128, 64, 64);
    let m = crate::spec::load_machine("h200").unwrap();
    let c = LaunchConfig::new([64, 1, 1], [1, 1, 1]);
    let prog = MemoryProgram::new(&push, &d, &c).unwrap();
    assert!(prog.stores_scattered() && !prog.stores_several_arrays());
    let p = CacheParams::from_machine(&m, c.threads(), 25);
    let v = estimate(&push, &c, &d, &p).unwrap();
    let (min_load, min_store) = minimal_volumes(&push);
    let again = v.dram_store / min_store;
    assert!(
        (1.85..=2.1).contains(&again),
        "{} B/LUP written",
        v.dram_store
    );
    // One fill per sector written again.
    let read = v.dram_load - min_load;
    let written = v.dram_store - min_store;
    assert!(
        (read / written - 1.0).abs() < 0.15,
        "{read} {written} B/LUP"
    );
    // A smaller plane keeps fewer sectors partly written at a time (a sector's writers are a
    // plane apart in launch order): less is lost. Measured at 64³: 89-94 B/LUP written.
    let small = estimate(&push, &c, &Domain::new3(32, 32, 64), &p).unwrap();
    assert!(
        small.dram_store < v.dram_store - 0.2 * min_store,
        "{} B/LUP written at 32×32×64, {} at 128×64×64",
        small.dram_store,
        v.dram_store
    );
    // A pull kernel stores at its own cell.
    let (aos, _) = d3q19_pull();
    assert!(!MemoryProgram::new(&aos, &d, &c).unwrap().stores_scattered());
}

#[test]
fn row_ends_blocks_beside_each_other_complete_lose_the_machines_share_below_the_limit() {
    // Measured on the H200 (`oos60/` misaligned, `top63/`, `oos63/`): D3Q19, D3Q27 and D2Q9
    // SoA tiles whose rows start 4 or 8 bytes into a sector (one ghost layer) write back early
    // 0.2-0.45 of the sectors at their rows' ends, which the blocks beside them complete at one
    // step, at 1 to 25 blocks per SM, where L2's limit counts none.
    let trt = kernel_of("lbm/d3q19_trt_pull.toml");
    let d = Domain::new3(128, 64, 64);
    let m = crate::spec::load_machine("h200").unwrap();
    let est = |k: &Kernel, c: &LaunchConfig, share: f64| {
        let p = CacheParams {
            row_end_write_back_share: share,
            ..CacheParams::from_machine(&m, c.threads(), 3)
        };
        estimate(k, c, &d, &p).unwrap()
    };
    // 16-word rows: one sector in two straddles two blocks' rows, 19 arrays.
    let c = LaunchConfig::new([16, 4, 1], [1, 1, 1]);
    let (base, lost) = (est(&trt, &c, 0.0), est(&trt, &c, 0.3));
    let straddling = 19.0 * 32.0 / 16.0;
    let extra = lost.dram_store - base.dram_store;
    assert!(
        (0.8 * 0.3 * straddling..=1.05 * 0.3 * straddling).contains(&extra),
        "{extra} B/LUP more written"
    );
    // Each one written back early is filled too.
    assert!(close(lost.dram_load - base.dram_load, extra));
    assert_eq!(lost.l2_load, base.l2_load);
    // Tiles narrower than a sector keep the limit's law alone (none at few blocks per SM).
    let narrow = LaunchConfig::new([4, 8, 2], [1, 1, 1]);
    assert_eq!(est(&trt, &narrow, 0.3), est(&trt, &narrow, 0.0));
    // So does a kernel storing one array (box3d_r1's rows with one ghost layer lose none).
    let box3d = kernel_of("stencils/box3d_r1.toml");
    assert_eq!(est(&box3d, &c, 0.3), est(&box3d, &c, 0.0));
}

#[test]
fn push_kernels_stores_evict_the_lines_a_burst_of_loads_shares() {
    // L1 allocates a line for a store. D3Q19 push AoS stores to the lines of nine rows for the
    // one row of records it loads, and the warps interleaved with a warp's burst of 19 loads
    // are storing meanwhile: on the H200 at 128^3, 64x1x1 at 25 blocks per SM reads 118.5
    // B/LUP through L2 (`dom64/`; 76 minimal), where the loads' lines alone lose 85.9.
    let push = kernel_of("lbm/d3q19_srt_push_aos.toml");
    let m = crate::spec::load_machine("h200").unwrap();
    let d = Domain::new3(128, 128, 128);
    let c = LaunchConfig::new([64, 1, 1], [1, 1, 1]);
    let p = CacheParams::from_machine(&m, c.threads(), 25);
    let e = estimate(&push, &c, &d, &p).unwrap();
    assert!(
        (0.9 * 118.5..=1.1 * 118.5).contains(&e.l2_load),
        "{} B/LUP",
        e.l2_load
    );
}

#[test]
fn stores_between_two_fold_points_loads_take_l1_room_in_lockstep() {
    // L1 allocates a line for a store: in lockstep, a fold point's stores issued before the
    // next fold point's loads sit inside the windows of the reuses across them. The same loads
    // in the same order, with every store after the last load, keep more.
    let (_, soa) = d3q19_pull();
    let m = crate::spec::load_machine("h200").unwrap();
    let d = Domain::new3(128, 64, 64);
    let c = LaunchConfig::new([4, 4, 8], [2, 2, 2]);
    let prog = MemoryProgram::new(&soa, &d, &c).unwrap();
    let emitted: Vec<(usize, usize)> = prog.issued_sequence().collect();
    let is_load = |&(_, i): &(usize, usize)| prog.instructions[i].kind == AccessKind::Load;
    let (loads, stores): (Vec<_>, Vec<_>) = emitted.iter().partition(|s| is_load(s));
    let last = prog
        .clone()
        .with_compiled_order([loads, stores].concat())
        .unwrap();
    let between = prog.clone().with_compiled_order(emitted).unwrap();
    for bps in [1, 2, 4] {
        let p = CacheParams::from_machine(&m, c.threads(), bps);
        let est = |prog: &MemoryProgram| Estimator::default().estimate_program(prog, &p).unwrap();
        let (a, b) = (est(&last), est(&between));
        // 8 fold points of 19 stores to 19 arrays: 6-15 % more through L2.
        assert!(b.l2_load > 1.05 * a.l2_load, "{bps}: {a:?} {b:?}");
    }
}

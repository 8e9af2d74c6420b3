//! Shared by the agreement test and the `footprint_agreement` example: kernels, configurations and
//! the comparison of the footprint visitor with the cache simulator.
#![allow(dead_code)]

use stencilscope::cachesim::{simulate_in, IssueOrder, L1Replacement};
use stencilscope::config::LaunchConfig;
use stencilscope::footprint::{data_volumes, CacheParams, DataVolumes};
use stencilscope::ir::{
    Access, Assignment, BinOp, Domain, Dtype, Expr, Field, FieldRole, Kernel, Layout, Target,
};
use stencilscope::spec::{shape_kernel, Shape, ShapeKind};

/// A star or box stencil kernel.
pub fn shape(kind: ShapeKind, radius: usize) -> Kernel {
    let n = kind.coefficient_count(radius, 3);
    let s = Shape {
        kind,
        radius,
        dims: 3,
        coefficients: vec![0.5; n],
    };
    shape_kernel("k", &s, Dtype::F64, "u", "v")
}

/// The D3Q19 velocities.
pub fn d3q19() -> Vec<[i32; 3]> {
    let mut v = vec![[0, 0, 0]];
    for d in 0..3 {
        for s in [-1, 1] {
            let mut c = [0; 3];
            c[d] = s;
            v.push(c);
        }
    }
    for (a, b) in [(0, 1), (0, 2), (1, 2)] {
        for sa in [-1, 1] {
            for sb in [-1, 1] {
                let mut c = [0; 3];
                c[a] = sa;
                c[b] = sb;
                v.push(c);
            }
        }
    }
    v
}

/// The access pattern of a D3Q19 pull kernel: population q loaded at `-c_q`, all 19 loaded into
/// temporaries first, then every population stored at the point itself.
pub fn d3q19_pull(layout: Layout) -> Kernel {
    let c = d3q19();
    let field = |name: &str, role| Field {
        name: name.into(),
        dtype: Dtype::F64,
        components: 19,
        layout,
        ghost: 1,
        padding: 0,
        role,
    };
    let mut body = Vec::new();
    for (q, cq) in c.iter().enumerate() {
        body.push(Assignment {
            target: Target::Temp(q),
            value: Expr::Load(Access {
                field: 0,
                offset: [-cq[0], -cq[1], -cq[2]],
                index: q,
            }),
        });
    }
    for q in 0..19 {
        body.push(Assignment {
            target: Target::Store(Access {
                field: 1,
                offset: [0; 3],
                index: q,
            }),
            value: Expr::bin(BinOp::Mul, Expr::Temp(q), Expr::Lit(0.9)),
        });
    }
    Kernel {
        name: "d3q19_pull".into(),
        dims: 3,
        fields: vec![
            field("src", FieldRole::Input),
            field("dst", FieldRole::Output),
        ],
        params: vec![],
        temps: (0..19).map(|q| format!("f{q}")).collect(),
        body,
    }
}

/// `n` varied configurations: block shapes of 32 to 512 threads spread over the list of shapes,
/// the folding cycling through none, 2 in y, 2 in z, 2 in x and 2 in y and z.
pub fn configs(n: usize) -> Vec<LaunchConfig> {
    const FOLDS: [[usize; 3]; 5] = [[1, 1, 1], [1, 2, 1], [1, 1, 2], [2, 1, 1], [1, 2, 2]];
    let mut shapes = Vec::new();
    for bx in [4, 8, 16, 32, 64, 128] {
        for by in [1, 2, 4, 8] {
            for bz in [1, 2, 4] {
                if (32..=512).contains(&(bx * by * bz)) {
                    shapes.push([bx, by, bz]);
                }
            }
        }
    }
    let all = shapes.len() * FOLDS.len();
    (0..n.min(all))
        .map(|k| {
            let shape = shapes[k * shapes.len() / n.min(all)];
            LaunchConfig::new(shape, FOLDS[k % FOLDS.len()])
        })
        .collect()
}

/// The six levels, named.
pub const LEVELS: [&str; 6] = [
    "L1 load requests",
    "L1 wavefronts",
    "L2 load",
    "L2 store",
    "DRAM load",
    "DRAM store",
];

/// The volumes as an array in `LEVELS` order.
pub fn levels(v: &DataVolumes) -> [f64; 6] {
    [
        v.l1_load_requests,
        v.l1_wavefronts,
        v.l2_load,
        v.l2_store,
        v.dram_load,
        v.dram_store,
    ]
}

/// Relative errors (estimate / simulation - 1) per level, one row per configuration, against
/// the simulator's lockstep waves.
pub fn compare(
    kernel: &Kernel,
    domain: &Domain,
    configs: &[LaunchConfig],
    params: &CacheParams,
) -> Vec<(LaunchConfig, [f64; 6], [f64; 6])> {
    compare_in(kernel, domain, configs, params, IssueOrder::Lockstep)
}

/// As [`compare`], against the simulator issuing in `order`.
pub fn compare_in(
    kernel: &Kernel,
    domain: &Domain,
    configs: &[LaunchConfig],
    params: &CacheParams,
    order: IssueOrder,
) -> Vec<(LaunchConfig, [f64; 6], [f64; 6])> {
    configs
        .iter()
        .map(|c| {
            let e = levels(&data_volumes(kernel, domain, c, params).expect("estimate"));
            let s = simulate_in(kernel, domain, c, params, order, L1Replacement::Lru);
            (*c, e, levels(&s.expect("simulate")))
        })
        .collect()
}

/// Relative error of `e` against `s`.
pub fn rel(e: f64, s: f64) -> f64 {
    if s == 0.0 {
        if e == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        e / s - 1.0
    }
}

/// Quantiles (0, 50, 90, 100 %) of the absolute relative errors of level `l`.
pub fn quantiles(rows: &[(LaunchConfig, [f64; 6], [f64; 6])], l: usize) -> [f64; 4] {
    let mut v: Vec<f64> = rows.iter().map(|r| rel(r.1[l], r.2[l]).abs()).collect();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    [q(0.0), q(0.5), q(0.9), q(1.0)]
}

/// The simulated machine of the agreement runs: many SMs, so that blocks sharing an SM are far
/// apart in the grid (as on a real GPU), and an L2 holding `l2_bytes`.
pub fn params(l2_bytes: usize) -> CacheParams {
    CacheParams {
        sms: 61,
        blocks_per_sm: 2,
        l1_bytes: 64 << 10,
        l1_conflict_ways: 0,
        l1_set_index: Default::default(),
        l1_set_ways: 0,
        l2_bytes,
        l2_reuse_misses: Default::default(),
        l2_store_weight: 1.0,
        l2_reuse_distance_scale: 1.0,
        // The simulator's issue orders are its own; the visitor's burst share is not compared.
        l1_interleave: Default::default(),
        sector_bytes: 32,
        dram_fetch_bytes: 32,
        line_bytes: 128,
        warp_size: 32,
        // The measured early write-backs are a charge on top of either model, not compared.
        partial_store_loss: 0.0,
        partial_store_loss_sm: 0.0,
        partial_store_loss_sm_open: 0.0,
        partial_store_loss_after_loads: None,
        partial_store_loss_back_to_back: None,
        partial_sector_limit: 0.0,
        neighbour_drift_share: 0.0,
        row_end_write_back_share: 0.0,
        // Lockstep, as the simulator's default order.
        l1_queue: 0.0,
        l2_latency_lines: 0.0,
    }
}

//! Shared by the device tests: every shipped stencil, f32 and f64, on a sample of configurations,
//! checked against the CPU reference on one backend.

use std::path::Path;
use stencilscope::config::LaunchConfig;
use stencilscope::ir::{Domain, Dtype, Kernel};
use stencilscope::runtime::measure::{measure, MeasureOptions, RunResult, Status, Timing};
use stencilscope::runtime::{
    skip_or_fail, Backend, BackendKind, BackendOptions, DeviceSelector, RuntimeError,
};

pub const STENCILS: [&str; 5] = [
    "star2d_r1",
    "star3d_r1",
    "star3d_r4",
    "box3d_r1",
    "varcoeff3d_r1",
];

pub fn stencil(name: &str, dtype: Dtype) -> Kernel {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("stencils/{name}.toml"));
    let mut k = stencilscope::spec::load_stencil(&p).unwrap().kernel;
    k.set_dtype(dtype);
    k
}

/// Domains that are not a multiple of any tile below, plus one that is.
pub fn cases(dims: usize) -> Vec<(Domain, Vec<LaunchConfig>)> {
    let c = LaunchConfig::new;
    if dims == 2 {
        vec![
            (
                Domain::new2(37, 11),
                vec![
                    c([16, 4, 1], [1, 1, 1]),
                    // folding in x and y
                    c([8, 2, 1], [3, 2, 1]),
                    // block wider than the domain
                    c([64, 1, 1], [1, 4, 1]),
                ],
            ),
            (Domain::new2(32, 8), vec![c([8, 2, 1], [2, 2, 1])]),
        ]
    } else {
        vec![
            (
                Domain::new3(19, 7, 5),
                vec![
                    c([8, 4, 2], [1, 1, 1]),
                    // folding in x and z
                    c([4, 2, 2], [2, 1, 3]),
                    // block wider than the domain in x, folding in y
                    c([32, 1, 1], [1, 3, 1]),
                    // block taller than the domain in z
                    c([4, 2, 8], [1, 2, 1]),
                    // fold points sharing loads across guarded dimensions
                    c([1, 1, 4], [2, 2, 1]),
                ],
            ),
            (
                Domain::new3(16, 8, 8),
                vec![
                    c([8, 4, 2], [2, 2, 2]),
                    // fold points sharing loads, also (1,0,0)'s with (0,1,0)
                    c([1, 1, 8], [2, 2, 1]),
                ],
            ),
        ]
    }
}

/// Opens the backend's first device, or reports the skip (failing where it is required).
pub fn open(kind: BackendKind, test: &str, options: &BackendOptions) -> Option<Box<dyn Backend>> {
    match kind.open(&DeviceSelector::First, options) {
        Ok(b) => Some(b),
        Err(e @ (RuntimeError::NotAvailable { .. } | RuntimeError::NoDevice { .. })) => {
            skip_or_fail(kind.name(), test, &e.to_string());
            None
        }
        Err(e) => panic!("{test}: opening {kind} failed: {e}"),
    }
}

pub fn run(
    backend: &mut dyn Backend,
    k: &Kernel,
    d: &Domain,
    configs: &[LaunchConfig],
    timing: Option<Timing>,
) -> Vec<RunResult> {
    let o = MeasureOptions {
        timing,
        verify: true,
        seed: 7,
    };
    match k.dtype() {
        Dtype::F32 => measure::<f32>(backend, k, d, configs, &o),
        Dtype::F64 => measure::<f64>(backend, k, d, configs, &o),
    }
    .unwrap_or_else(|e| panic!("{} on {d}: {e}", k.name))
}

/// Every stencil, f32 and f64, every case: the device output equals the reference.
pub fn all_stencils_match_reference(kind: BackendKind, test: &str) {
    let Some(mut b) = open(kind, test, &BackendOptions::default()) else {
        return;
    };
    let mut checked = 0;
    for dtype in [Dtype::F32, Dtype::F64] {
        for name in STENCILS {
            let k = stencil(name, dtype);
            if dtype == Dtype::F64 && !b.info().f64 {
                // The device genuinely lacks f64: the refusal must say so.
                let (d, c) = &cases(k.dims)[0];
                let e = b.compile(&k, &c[0], d).unwrap_err();
                assert!(matches!(e, RuntimeError::Unsupported { .. }), "{e}");
                eprintln!("SKIPPED {test} {name} f64: {e}");
                continue;
            }
            for (d, configs) in cases(k.dims) {
                for r in run(&mut *b, &k, &d, &configs, None) {
                    assert_eq!(
                        r.status,
                        Status::Passed,
                        "{name} {dtype} {d} {}: {:?} {:?}",
                        r.config,
                        r.error,
                        r.verification
                    );
                    let v = r.verification.unwrap();
                    assert!(v.passed && v.checked > 0);
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 40, "only {checked} configurations checked");
}

/// Timed launches return one positive device time each, and the copy kernel verifies.
pub fn timing_and_copy(kind: BackendKind, test: &str) {
    let Some(mut b) = open(kind, test, &BackendOptions::default()) else {
        return;
    };
    let t = Some(Timing {
        warmup: 2,
        warmup_ms: 0,
        reps: 10,
    });
    let k = stencilscope::runtime::measure::copy_kernel(3, Dtype::F32);
    let d = Domain::new3(64, 16, 8);
    let r = &run(
        &mut *b,
        &k,
        &d,
        &[LaunchConfig::new([32, 2, 1], [1, 1, 2])],
        t,
    )[0];
    assert_eq!(r.status, Status::Passed, "{:?}", r.error);
    assert_eq!(r.times.len(), 10);
    assert!(
        r.times.iter().all(|s| *s > 0.0 && *s < 1.0),
        "{:?}",
        r.times
    );
    let m = r.median_s.unwrap();
    assert!(r.min_s.unwrap() <= m && m <= r.max_s.unwrap());
    let lups = r.lups.unwrap();
    assert!((lups * m - d.points() as f64).abs() < 1e-6 * d.points() as f64);
    assert!((r.bandwidth_min.unwrap() / lups - 8.0).abs() < 1e-9);
}

/// A block beyond the device's limits is refused before launch, naming the limit.
pub fn oversized_block_is_refused(kind: BackendKind, test: &str, limit: &str) {
    let Some(mut b) = open(kind, test, &BackendOptions::default()) else {
        return;
    };
    let k = stencil("star3d_r1", Dtype::F32);
    let too_big = (b.info().max_threads as usize + 1).next_power_of_two();
    let r = &run(
        &mut *b,
        &k,
        &Domain::new3(8, 8, 8),
        &[LaunchConfig::new([too_big, 1, 1], [1, 1, 1])],
        None,
    )[0];
    assert_eq!(r.status, Status::Refused);
    let e = r.error.as_deref().unwrap();
    assert!(e.contains(limit), "{e}");
}

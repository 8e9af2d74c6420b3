//! Runs a kernel under several launch configurations on one backend: timing and verification.
//!
//! Method (the same on every backend):
//! 1. Every field is filled with seeded uniform random values in `[1, 2)`; never zeros, so a
//!    kernel that reads the wrong element produces a wrong value.
//! 2. Timing: the random state is uploaded, `warmup` launches run untimed, then `reps` launches
//!    are timed with the device's timers. Launches alternate source and destination buffers
//!    (the i-th input field swaps with the i-th output field of the same size), as a time loop
//!    would. The median is reported, with minimum and maximum.
//! 3. Verification: inputs are uploaded again and outputs are poisoned with NaN; one launch runs
//!    and every element of every written field, ghost layers and padding included, is compared
//!    with the CPU reference: elements the reference leaves poisoned must still be NaN, every
//!    other one must satisfy `|got - want| ≤ rtol · max(|want|, scale)`, where `scale` is the
//!    largest finite `|want|` of the field (stencils cancel, so a purely pointwise relative
//!    tolerance would flag rounding noise near zero) and `rtol` is 1e-4 for f32 and 1e-10 for
//!    f64: a few hundred ulps, far below the O(1) error of any wrong access.

use super::{Backend, BufferId, RuntimeError};
use crate::config::LaunchConfig;
use crate::ir::{
    Access, Assignment, Domain, Dtype, Expr, Field, FieldLayout, FieldRole, Kernel, Target,
};
use crate::reference::{self, FieldArray, Real};
use rayon::prelude::*;
use serde::Serialize;

/// How many launches to time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Timing {
    /// Untimed launches before the timed ones.
    pub warmup: usize,
    /// Timed launches.
    pub reps: usize,
}

/// What `measure` does per configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeasureOptions {
    /// Time the kernel (`None`: verification only).
    pub timing: Option<Timing>,
    /// Check one launch against the CPU reference.
    pub verify: bool,
    /// Seed of the random inputs (field `i` uses `seed + i`).
    pub seed: u64,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            timing: Some(Timing {
                warmup: 3,
                reps: 10,
            }),
            verify: true,
            seed: 1,
        }
    }
}

/// The outcome of one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Ran, and verification (if asked for) passed.
    Passed,
    /// Ran, but the output differs from the reference.
    Wrong,
    /// Rejected before launch by a limit check, or refused by the driver.
    Refused,
    /// Another error (compiler, driver).
    Error,
}

/// Result of the comparison with the CPU reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    /// Whether every element matched.
    pub passed: bool,
    /// Elements compared (all elements of all written fields).
    pub checked: usize,
    /// Elements that did not match.
    pub mismatches: usize,
    /// Largest `|got - want| / max(|want|, scale)` over the non-poisoned elements.
    pub max_error: f64,
    /// The tolerance `rtol`.
    pub tolerance: f64,
    /// The first mismatching element, described.
    pub first_mismatch: Option<String>,
}

/// One configuration's measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    /// The launch configuration.
    pub config: LaunchConfig,
    /// Outcome.
    pub status: Status,
    /// The error of a refused or failed configuration.
    pub error: Option<String>,
    /// Device time of each timed launch, seconds.
    pub times: Vec<f64>,
    /// Median launch time, seconds.
    pub median_s: Option<f64>,
    /// Fastest launch, seconds.
    pub min_s: Option<f64>,
    /// Slowest launch, seconds.
    pub max_s: Option<f64>,
    /// Lattice updates per second at the median time.
    pub lups: Option<f64>,
    /// Bytes per second at the median time if each update moved `min_bytes_per_lup`.
    pub bandwidth_min: Option<f64>,
    /// The comparison with the reference.
    pub verification: Option<Verification>,
}

impl RunResult {
    /// A result with nothing measured yet.
    fn new(config: LaunchConfig) -> RunResult {
        RunResult {
            config,
            status: Status::Passed,
            error: None,
            times: Vec::new(),
            median_s: None,
            min_s: None,
            max_s: None,
            lups: None,
            bandwidth_min: None,
            verification: None,
        }
    }

    fn failed(config: LaunchConfig, e: &RuntimeError) -> RunResult {
        RunResult {
            status: if e.is_refusal() {
                Status::Refused
            } else {
                Status::Error
            },
            error: Some(e.to_string()),
            ..RunResult::new(config)
        }
    }
}

/// Relative tolerance of the verification for a dtype.
pub fn tolerance(dtype: Dtype) -> f64 {
    match dtype {
        Dtype::F32 => 1e-4,
        Dtype::F64 => 1e-10,
    }
}

/// The copy kernel `dst[0,0,0] = src[0,0,0]` (no ghosts): the device's copy bandwidth through
/// the same emitters and backends as every stencil.
pub fn copy_kernel(dims: usize, dtype: Dtype) -> Kernel {
    let at = |field| Access {
        field,
        offset: [0; 3],
        index: 0,
    };
    Kernel {
        name: "copy".into(),
        dims,
        fields: vec![
            Field::scalar("src", dtype, 0, FieldRole::Input),
            Field::scalar("dst", dtype, 0, FieldRole::Output),
        ],
        params: vec![],
        temps: vec![],
        body: vec![Assignment {
            target: Target::Store(at(1)),
            value: Expr::Load(at(0)),
        }],
    }
}

/// Median of a non-empty list.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    }
}

fn bytes_of<T: Real + bytemuck::Pod>(a: &FieldArray<T>) -> &[u8] {
    bytemuck::cast_slice(a.as_slice())
}

/// Runs `kernel` on `domain` under each of `configs` (T must be the kernel's dtype). An error
/// that concerns one configuration is recorded in its result; the `Err` return is for errors
/// that stop the whole measurement (allocation, upload, reference).
pub fn measure<T: Real + bytemuck::Pod>(
    backend: &mut dyn Backend,
    kernel: &Kernel,
    domain: &Domain,
    configs: &[LaunchConfig],
    options: &MeasureOptions,
) -> Result<Vec<RunResult>, RuntimeError> {
    let dtype = kernel.dtype();
    if dtype.size() != std::mem::size_of::<T>() {
        return Err(RuntimeError::Usage(format!(
            "kernel `{}` is {dtype} but was measured with {}-byte elements",
            kernel.name,
            std::mem::size_of::<T>()
        )));
    }
    let random: Vec<FieldArray<T>> = kernel
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| FieldArray::random(f, domain, options.seed + i as u64, 1.0, 2.0))
        .collect();
    let written: Vec<usize> = (0..kernel.fields.len())
        .filter(|&i| kernel.fields[i].role != FieldRole::Input)
        .collect();
    let poisoned: Vec<FieldArray<T>> = random
        .iter()
        .zip(&kernel.fields)
        .map(|(a, f)| match f.role {
            FieldRole::Output => FieldArray::filled(f, domain, T::nan()),
            _ => a.clone(),
        })
        .collect();
    let expected = if options.verify {
        let mut e = poisoned.clone();
        reference::run(kernel, domain, &mut e)
            .map_err(|e| RuntimeError::Usage(format!("the CPU reference failed: {e}")))?;
        Some(e)
    } else {
        None
    };
    let mut ids = Vec::new();
    for a in &random {
        ids.push(backend.alloc(std::mem::size_of_val(a.as_slice()))?);
    }
    // Alternation: swap the i-th input with the i-th output where their sizes match.
    let inputs: Vec<usize> = (0..kernel.fields.len())
        .filter(|&i| kernel.fields[i].role == FieldRole::Input)
        .collect();
    let outputs: Vec<usize> = (0..kernel.fields.len())
        .filter(|&i| kernel.fields[i].role == FieldRole::Output)
        .collect();
    let mut swapped = ids.clone();
    for (&i, &o) in inputs.iter().zip(&outputs) {
        if random[i].len() == random[o].len() {
            swapped.swap(i, o);
        }
    }
    let sets = [ids.clone(), swapped];
    let upload = |backend: &mut dyn Backend, state: &[FieldArray<T>]| -> Result<(), RuntimeError> {
        for (id, a) in ids.iter().zip(state) {
            backend.upload(*id, bytes_of(a))?;
        }
        Ok(())
    };
    let points = domain.points() as f64;
    let min_bytes = kernel.min_bytes_per_lup() as f64;
    let mut results = Vec::new();
    for config in configs {
        let program = match backend.compile(kernel, config, domain) {
            Ok(p) => p,
            Err(e) => {
                results.push(RunResult::failed(*config, &e));
                continue;
            }
        };
        let mut r = RunResult::new(*config);
        let run = (|| -> Result<(), RuntimeError> {
            if let Some(t) = options.timing {
                upload(backend, &random)?;
                let warm: Vec<Vec<BufferId>> = (0..t.warmup).map(|i| sets[i % 2].clone()).collect();
                backend.launch(program, &warm, false)?;
                let timed: Vec<Vec<BufferId>> = (0..t.reps)
                    .map(|i| sets[(t.warmup + i) % 2].clone())
                    .collect();
                r.times = backend.launch(program, &timed, true)?;
                if !r.times.is_empty() {
                    let m = median(&r.times);
                    r.median_s = Some(m);
                    r.min_s = r.times.iter().copied().reduce(f64::min);
                    r.max_s = r.times.iter().copied().reduce(f64::max);
                    r.lups = Some(points / m);
                    r.bandwidth_min = Some(points * min_bytes / m);
                }
            }
            if let Some(expected) = &expected {
                upload(backend, &poisoned)?;
                backend.launch(program, &[ids.clone()], false)?;
                let mut v = Verification {
                    passed: true,
                    checked: 0,
                    mismatches: 0,
                    max_error: 0.0,
                    tolerance: tolerance(dtype),
                    first_mismatch: None,
                };
                for &f in &written {
                    let want = expected[f].as_slice();
                    let mut got = vec![T::zero(); want.len()];
                    backend.download(ids[f], bytemuck::cast_slice_mut(&mut got))?;
                    compare(&kernel.fields[f], expected[f].layout(), &got, want, &mut v);
                }
                if !v.passed {
                    r.status = Status::Wrong;
                }
                r.verification = Some(v);
            }
            Ok(())
        })();
        if let Err(e) = run {
            let times = std::mem::take(&mut r.times);
            r = RunResult::failed(*config, &e);
            r.times = times;
        }
        results.push(r);
    }
    Ok(results)
}

/// Compares one field's device output with the reference, accumulating into `v`. Runs in
/// parallel over chunks (GPU-sized LBM fields have hundreds of millions of elements); the first
/// mismatch reported is the one with the lowest index, as a serial scan would find.
fn compare<T: Real>(
    field: &Field,
    layout: &FieldLayout,
    got: &[T],
    want: &[T],
    v: &mut Verification,
) {
    const CHUNK: usize = 1 << 16;
    let scale = want
        .par_iter()
        .filter(|w| w.is_finite())
        .map(|w| Real::to_f64(*w).abs())
        .reduce(|| f64::MIN_POSITIVE, f64::max);
    let tolerance = v.tolerance;
    // Per chunk: (mismatches, max error, first mismatching element and its values).
    type Part = (usize, f64, Option<(usize, f64, f64)>);
    let parts: Vec<Part> = got
        .par_chunks(CHUNK)
        .zip(want.par_chunks(CHUNK))
        .enumerate()
        .map(|(c, (got, want))| {
            let mut part: Part = (0, 0.0, None);
            for (j, (g, w)) in got.iter().zip(want).enumerate() {
                let (g, w) = (Real::to_f64(*g), Real::to_f64(*w));
                let ok = if w.is_nan() {
                    g.is_nan()
                } else {
                    let err = (g - w).abs() / w.abs().max(scale);
                    if err.is_finite() {
                        part.1 = part.1.max(err);
                    }
                    err <= tolerance
                };
                if !ok {
                    part.0 += 1;
                    part.2 = part.2.or(Some((c * CHUNK + j, g, w)));
                }
            }
            part
        })
        .collect();
    v.checked += got.len().min(want.len());
    for (mismatches, max_error, first) in parts {
        v.max_error = v.max_error.max(max_error);
        v.mismatches += mismatches;
        if mismatches > 0 {
            v.passed = false;
        }
        if let (None, Some((i, g, w))) = (&v.first_mismatch, first) {
            let (x, y, z, q) = coordinates(layout, i);
            v.first_mismatch = Some(format!(
                "`{}` at (x, y, z) = ({x}, {y}, {z}), component {q}: got {g}, expected {w}{}",
                field.name,
                if w.is_nan() {
                    " (a ghost or padding element the kernel must not write)"
                } else {
                    ""
                }
            ));
        }
    }
}

/// Interior coordinates and component of memory element `i` (ghosts are negative or ≥ size).
fn coordinates(l: &FieldLayout, i: usize) -> (i64, i64, i64, usize) {
    let [ex, ey, ez] = l.extent;
    let (q, rest) = if l.stride_q == 1 && l.components > 1 {
        (i % l.components, i / l.components)
    } else {
        (i / (ex * ey * ez), i % (ex * ey * ez))
    };
    let x = (rest % ex) as i64 - l.ghost[0] as i64;
    let y = ((rest / ex) % ey) as i64 - l.ghost[1] as i64;
    let z = (rest / (ex * ey)) as i64 - l.ghost[2] as i64;
    (x, y, z, q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Layout;

    #[test]
    fn median_and_tolerance() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(tolerance(Dtype::F32) > tolerance(Dtype::F64));
    }

    #[test]
    fn coordinates_invert_the_layout() {
        let mut f = Field::scalar("f", Dtype::F64, 2, FieldRole::Output);
        f.components = 3;
        let d = Domain::new3(5, 4, 3);
        for layout in [Layout::Fzyx, Layout::Zyxf] {
            f.layout = layout;
            let l = f.layout_for(&d);
            for (x, y, z, q) in [(0, 0, 0, 0), (-2, 5, 1, 2), (6, -1, 4, 1)] {
                assert_eq!(coordinates(&l, l.index(x, y, z, q)), (x, y, z, q));
            }
        }
    }

    #[test]
    fn comparison_flags_wrong_and_written_poison() {
        let f = Field::scalar("v", Dtype::F64, 1, FieldRole::Output);
        let d = Domain::new2(2, 1);
        let l = f.layout_for(&d);
        let mut want = vec![f64::NAN; l.len()];
        want[l.index(0, 0, 0, 0)] = 2.0;
        want[l.index(1, 0, 0, 0)] = -4.0;
        let mut v = Verification {
            passed: true,
            checked: 0,
            mismatches: 0,
            max_error: 0.0,
            tolerance: 1e-10,
            first_mismatch: None,
        };
        compare(&f, &l, &want.clone(), &want, &mut v);
        assert!(v.passed && v.checked == l.len());
        let mut got = want.clone();
        got[l.index(1, 0, 0, 0)] = -4.0 + 1e-12;
        got[l.index(-1, 0, 0, 0)] = 0.0;
        compare(&f, &l, &got, &want, &mut v);
        assert!(!v.passed);
        assert_eq!(v.mismatches, 1);
        let m = v.first_mismatch.unwrap();
        assert!(
            m.contains("(x, y, z) = (-1, 0, 0)") && m.contains("must not write"),
            "{m}"
        );
    }

    #[test]
    fn copy_kernel_moves_two_elements() {
        let k = copy_kernel(3, Dtype::F32);
        k.validate().unwrap();
        assert_eq!(k.min_bytes_per_lup(), 8);
    }
}

//! Runs a kernel under several launch configurations on one backend: timing and verification.
//!
//! Method (the same on every backend):
//! 1. Every field is filled with seeded uniform random values in `[1, 2)`; never zeros, so a
//!    kernel that reads the wrong element produces a wrong value. The random state and the
//!    poisoned state of step 3 are uploaded once per session and kept on the device; before each
//!    configuration's timing and again before its verification, the working buffers are restored
//!    from them with device-side copies (or, where the device has no room for the copies, by
//!    uploading again), so every configuration starts from the same state without a trip over
//!    the host bus.
//! 2. Timing: from the random state, untimed launches keep the device busy for at least
//!    `warmup` launches and `warmup_ms` milliseconds, then batches of `reps` launches are timed
//!    with the device's timers until two consecutive batch medians agree within 2% (at most
//!    [`MAX_TIMED_BATCHES`]); the last batch is reported (median, minimum, maximum). The busy
//!    warm-up and the steady-state test exist because drivers clock down an idle GPU: under
//!    NVIDIA's Vulkan driver an H200 fell from 1980 to 345 MHz (SM clock) within a second of the
//!    bench's mostly idle rhythm and stayed there, making kernels 4–8× slower, while its CUDA and
//!    OpenCL contexts held the clock. Launches alternate source and destination buffers (the
//!    i-th input field swaps with the i-th output field of the same size), as a time loop would.
//! 3. Verification: inputs hold the random state and outputs are poisoned with NaN; one launch
//!    runs and the written fields are compared with the CPU reference: elements the reference
//!    leaves poisoned must still be NaN, every other one must satisfy
//!    `|got - want| ≤ rtol · max(|want|, scale)`, where `scale` is the largest finite `|want|` of
//!    the compared elements (stencils cancel, so a purely pointwise relative tolerance would flag
//!    rounding noise near zero) and `rtol` is 1e-4 for f32 and 1e-10 for f64: a few hundred ulps,
//!    far below the O(1) error of any wrong access.
//!
//! What is compared is the [`VerifyScope`]: every element of every written field (`Full`), or
//! (`Sampled`, for domains too large to check element by element per configuration) every ghost
//! and padding element plus the whole rows (x lines, ghosts included) of a set of planes and of
//! random rows; see [`SampleSpec`] for what that set catches.

use super::{Backend, BufferId, ProgramId, RuntimeError};
use crate::config::LaunchConfig;
use crate::ir::{
    Access, Assignment, Domain, Dtype, Expr, Field, FieldLayout, FieldRole, Kernel, Target,
};
use crate::reference::{self, FieldArray, Real};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// How many launches to time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Timing {
    /// Untimed launches before the timed ones (at least).
    pub warmup: usize,
    /// Milliseconds the untimed launches keep the device busy (at least), so that a driver
    /// that lowered the clocks of an idle GPU raises them again before timing.
    pub warmup_ms: u32,
    /// Timed launches per batch.
    pub reps: usize,
}

/// Timed batches per configuration at most, while consecutive medians still differ by > 2%.
pub const MAX_TIMED_BATCHES: usize = 8;

/// Relative difference of consecutive batch medians below which timing is steady.
const STEADY: f64 = 0.02;

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
                warmup_ms: 100,
                reps: 10,
            }),
            verify: true,
            seed: 1,
        }
    }
}

/// Which rows sampled verification compares (3D; in 2D the z planes are left out, since the
/// single z plane is the whole domain).
///
/// Compared: every ghost and padding element of every written field (an out-of-range write
/// anywhere is caught); the whole rows of the z planes `0, 1, nz/2 - 1, nz/2, nz - 2, nz - 1`
/// and of `random_planes` random z planes, likewise of y planes; and `random_rows` random rows.
/// Every compared row is complete in x, so every x position (block and tile boundaries, the
/// x guards) is checked in each of them; the fixed planes hold the domain faces and the tile
/// boundary in the middle, where guards and folding go wrong. An error that spoils a whole
/// plane, row or column of points (a wrong stride, offset, guard or fold index) is caught with
/// near certainty: with 4096 random rows, a single wrong z or y plane of 512 is missed with
/// probability (1 - 1/512)^4096 ≈ 3e-4. A single wrong isolated point is caught only with the
/// probability of being sampled (the compared fraction of the rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleSpec {
    /// Random z planes and random y planes, each, in addition to the fixed ones.
    pub random_planes: usize,
    /// Random rows in addition to the planes.
    pub random_rows: usize,
    /// Seed of the random choice.
    pub seed: u64,
}

impl Default for SampleSpec {
    fn default() -> SampleSpec {
        SampleSpec {
            random_planes: 3,
            random_rows: 4096,
            seed: 1,
        }
    }
}

/// Which elements verification compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyScope {
    /// Every element of every written field.
    Full,
    /// Ghosts and padding everywhere, and the rows of [`SampleSpec`].
    Sampled(SampleSpec),
}

impl SampleSpec {
    /// The rows `(y, z)` to compare for `domain`, sorted and distinct.
    pub fn rows(&self, domain: &Domain) -> Vec<(usize, usize)> {
        let [_, ny, nz] = domain.size;
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
        // The faces, their neighbours and the middle (a tile boundary for power-of-two tiles).
        let fixed = |n: usize| {
            [
                0,
                1,
                (n / 2).saturating_sub(1),
                n / 2,
                n.saturating_sub(2),
                n - 1,
            ]
            .into_iter()
            .filter(move |p| *p < n)
        };
        let planes = |n: usize, rng: &mut rand::rngs::StdRng| {
            let mut p: Vec<usize> = fixed(n).collect();
            p.extend((0..self.random_planes).map(|_| rng.gen_range(0..n)));
            p
        };
        let mut rows = Vec::new();
        if domain.dims == 3 {
            for z in planes(nz, &mut rng) {
                rows.extend((0..ny).map(|y| (y, z)));
            }
        }
        for y in planes(ny, &mut rng) {
            rows.extend((0..nz).map(|z| (y, z)));
        }
        rows.extend((0..self.random_rows).map(|_| (rng.gen_range(0..ny), rng.gen_range(0..nz))));
        rows.sort_unstable_by_key(|&(y, z)| (z, y));
        rows.dedup();
        rows
    }
}

/// The outcome of one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// Whether every compared element matched.
    pub passed: bool,
    /// Elements compared.
    pub checked: usize,
    /// Elements that did not match.
    pub mismatches: usize,
    /// Largest `|got - want| / max(|want|, scale)` over the non-poisoned elements.
    pub max_error: f64,
    /// The tolerance `rtol`.
    pub tolerance: f64,
    /// The first mismatching element, described.
    pub first_mismatch: Option<String>,
    /// Interior rows compared in full under sampled verification; `None`: every element.
    #[serde(default)]
    pub sampled_rows: Option<usize>,
}

impl Verification {
    fn new(dtype: Dtype, sampled_rows: Option<usize>) -> Verification {
        Verification {
            passed: true,
            checked: 0,
            mismatches: 0,
            max_error: 0.0,
            tolerance: tolerance(dtype),
            first_mismatch: None,
            sampled_rows,
        }
    }
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

/// Runs `kernel` on `domain` under each of `configs` (T must be the kernel's dtype), verifying
/// every element. An error that concerns one configuration is recorded in its result; the `Err`
/// return is for errors that stop the whole measurement (allocation, upload, reference).
pub fn measure<T: Real + bytemuck::Pod>(
    backend: &mut dyn Backend,
    kernel: &Kernel,
    domain: &Domain,
    configs: &[LaunchConfig],
    options: &MeasureOptions,
) -> Result<Vec<RunResult>, RuntimeError> {
    let mut session = Session::<T>::new(backend, kernel, domain, options, VerifyScope::Full)?;
    Ok(configs.iter().map(|c| session.run(c)).collect())
}

/// The state the working buffers are restored to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Every field random (timing).
    Random,
    /// Outputs poisoned, everything else random (verification).
    Poisoned,
}

/// One kernel on one domain and device, measured configuration by configuration: the random
/// state, the reference and the device buffers are prepared once, so a long sweep pays for them
/// once (see the module documentation for the method).
pub struct Session<'a, T: Real + bytemuck::Pod> {
    backend: &'a mut dyn Backend,
    kernel: &'a Kernel,
    domain: Domain,
    options: MeasureOptions,
    random: Vec<FieldArray<T>>,
    poisoned: Vec<FieldArray<T>>,
    /// The reference result (on the sampled rows only under sampled verification).
    expected: Option<Vec<FieldArray<T>>>,
    /// Sampled verification: per interior row `y + ny·z`, whether it is compared.
    sampled: Option<Vec<bool>>,
    /// The scope actually used (sampled falls back to full where it cannot apply).
    scope: VerifyScope,
    written: Vec<usize>,
    ids: Vec<BufferId>,
    sets: [Vec<BufferId>; 2],
    /// Device copies of the random state of every field and the poisoned state of the outputs.
    pristine: Option<(Vec<BufferId>, Vec<Option<BufferId>>)>,
}

impl<'a, T: Real + bytemuck::Pod> Session<'a, T> {
    /// Prepares the random and poisoned states, the reference and the device buffers.
    /// `Sampled` applies only where every store of the kernel writes its own point (a kernel
    /// that stores to neighbours is verified in full).
    pub fn new(
        backend: &'a mut dyn Backend,
        kernel: &'a Kernel,
        domain: &Domain,
        options: &MeasureOptions,
        scope: VerifyScope,
    ) -> Result<Session<'a, T>, RuntimeError> {
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
        let local_stores = kernel.body.iter().all(|a| match a.target {
            Target::Store(acc) => acc.offset == [0; 3],
            Target::Temp(_) => true,
        });
        let scope = match scope {
            VerifyScope::Sampled(_) if !local_stores => VerifyScope::Full,
            s => s,
        };
        let rows = match scope {
            VerifyScope::Sampled(spec) => Some(spec.rows(domain)),
            VerifyScope::Full => None,
        };
        let expected = if options.verify {
            let mut e = poisoned.clone();
            match &rows {
                None => reference::run(kernel, domain, &mut e),
                Some(r) => reference::run_rows(kernel, domain, &mut e, r),
            }
            .map_err(|e| RuntimeError::Usage(format!("the CPU reference failed: {e}")))?;
            Some(e)
        } else {
            None
        };
        let sampled = rows.map(|r| {
            let [_, ny, nz] = domain.size;
            let mut m = vec![false; ny * nz];
            for (y, z) in r {
                m[y + ny * z] = true;
            }
            m
        });
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
        let pristine = Self::keep_on_device(backend, &random, &poisoned, kernel);
        Ok(Session {
            backend,
            kernel,
            domain: *domain,
            options: *options,
            random,
            poisoned,
            expected,
            sampled,
            scope,
            written,
            ids,
            sets,
            pristine,
        })
    }

    /// Uploads the random and poisoned states into buffers of their own; `None` where the device
    /// refuses the memory (then every restore uploads from the host).
    fn keep_on_device(
        backend: &mut dyn Backend,
        random: &[FieldArray<T>],
        poisoned: &[FieldArray<T>],
        kernel: &Kernel,
    ) -> Option<(Vec<BufferId>, Vec<Option<BufferId>>)> {
        let mut keep = |a: &FieldArray<T>| -> Result<BufferId, RuntimeError> {
            let id = backend.alloc(std::mem::size_of_val(a.as_slice()))?;
            backend.upload(id, bytes_of(a))?;
            Ok(id)
        };
        let r: Vec<BufferId> = random
            .iter()
            .map(&mut keep)
            .collect::<Result<_, _>>()
            .ok()?;
        let p: Vec<Option<BufferId>> = poisoned
            .iter()
            .zip(&kernel.fields)
            .map(|(a, f)| match f.role {
                FieldRole::Output => keep(a).map(Some),
                _ => Ok(None),
            })
            .collect::<Result<_, _>>()
            .ok()?;
        Some((r, p))
    }

    /// The device.
    pub fn backend(&self) -> &dyn Backend {
        &*self.backend
    }

    /// The verification scope in use.
    pub fn scope(&self) -> VerifyScope {
        self.scope
    }

    /// Compiles, times and verifies one configuration. Failures of this configuration (refusal,
    /// compiler, driver, wrong output) are recorded in the result.
    pub fn run(&mut self, config: &LaunchConfig) -> RunResult {
        let program = match self.backend.compile(self.kernel, config, &self.domain) {
            Ok(p) => p,
            Err(e) => return RunResult::failed(*config, &e),
        };
        let mut r = RunResult::new(*config);
        if let Err(e) = self.measure_program(program, &mut r) {
            let times = std::mem::take(&mut r.times);
            r = RunResult::failed(*config, &e);
            r.times = times;
        }
        r
    }

    fn restore(&mut self, state: State) -> Result<(), RuntimeError> {
        for f in 0..self.ids.len() {
            let host = match (state, self.kernel.fields[f].role) {
                (State::Poisoned, FieldRole::Output) => &self.poisoned[f],
                _ => &self.random[f],
            };
            match &self.pristine {
                Some((random, poisoned)) => {
                    let src = match (state, poisoned[f]) {
                        (State::Poisoned, Some(p)) => p,
                        _ => random[f],
                    };
                    let bytes = std::mem::size_of_val(host.as_slice());
                    self.backend.copy_buffer(src, self.ids[f], bytes)?;
                }
                None => self.backend.upload(self.ids[f], bytes_of(host))?,
            }
        }
        Ok(())
    }

    fn measure_program(
        &mut self,
        program: ProgramId,
        r: &mut RunResult,
    ) -> Result<(), RuntimeError> {
        let points = self.domain.points() as f64;
        let min_bytes = self.kernel.min_bytes_per_lup() as f64;
        if let Some(t) = self.options.timing {
            self.restore(State::Random)?;
            // Busy warm-up: chunks of launches, doubling, until both minima are reached.
            let start = std::time::Instant::now();
            let busy = std::time::Duration::from_millis(u64::from(t.warmup_ms));
            let mut launched = 0;
            let mut chunk = t.warmup.max(1);
            while launched < t.warmup || start.elapsed() < busy {
                let warm: Vec<Vec<BufferId>> = (launched..launched + chunk)
                    .map(|i| self.sets[i % 2].clone())
                    .collect();
                self.backend.launch(program, &warm, false)?;
                launched += chunk;
                chunk = (2 * chunk).min(256);
            }
            let mut previous: Option<f64> = None;
            for _ in 0..MAX_TIMED_BATCHES {
                let timed: Vec<Vec<BufferId>> = (launched..launched + t.reps)
                    .map(|i| self.sets[i % 2].clone())
                    .collect();
                launched += t.reps;
                r.times = self.backend.launch(program, &timed, true)?;
                if r.times.is_empty() {
                    break;
                }
                let m = median(&r.times);
                if previous.is_some_and(|p| (m - p).abs() <= STEADY * m) {
                    break;
                }
                previous = Some(m);
            }
            if !r.times.is_empty() {
                let m = median(&r.times);
                r.median_s = Some(m);
                r.min_s = r.times.iter().copied().reduce(f64::min);
                r.max_s = r.times.iter().copied().reduce(f64::max);
                r.lups = Some(points / m);
                r.bandwidth_min = Some(points * min_bytes / m);
            }
        }
        if self.expected.is_some() {
            self.restore(State::Poisoned)?;
            self.backend
                .launch(program, std::slice::from_ref(&self.ids), false)?;
            let sampled_rows = self
                .sampled
                .as_ref()
                .map(|m| m.iter().filter(|s| **s).count());
            let mut v = Verification::new(self.kernel.dtype(), sampled_rows);
            for &f in &self.written {
                let Some(expected) = &self.expected else {
                    break;
                };
                let want = expected[f].as_slice();
                let mut got = vec![T::zero(); want.len()];
                self.backend
                    .download(self.ids[f], bytemuck::cast_slice_mut(&mut got))?;
                let field = &self.kernel.fields[f];
                let layout = expected[f].layout();
                match &self.sampled {
                    None => compare(field, layout, &got, want, &mut v),
                    Some(rows) => {
                        compare_sampled(field, layout, &self.domain, rows, &got, want, &mut v)
                    }
                }
            }
            if !v.passed {
                r.status = Status::Wrong;
            }
            r.verification = Some(v);
        }
        Ok(())
    }
}

/// Compares one element, accumulating into `v`; `i` is its memory index (for the message).
fn compare_one<T: Real>(
    field: &Field,
    layout: &FieldLayout,
    i: usize,
    g: T,
    w: T,
    scale: f64,
    v: &mut Verification,
) {
    v.checked += 1;
    let (g, w) = (Real::to_f64(g), Real::to_f64(w));
    let ok = if w.is_nan() {
        g.is_nan()
    } else {
        let err = (g - w).abs() / w.abs().max(scale);
        if err.is_finite() {
            v.max_error = v.max_error.max(err);
        }
        err <= v.tolerance
    };
    if !ok {
        v.passed = false;
        v.mismatches += 1;
        if v.first_mismatch.is_none() {
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

/// Calls `f(index)` for every memory element of row `(y, z)` (interior coordinates, ghosts
/// allowed) and component `q`, x over the whole allocated extent or, with `only_outside`, over
/// the ghost and padding elements alone.
fn for_row(
    l: &FieldLayout,
    nx: usize,
    (y, z, q): (i64, i64, usize),
    only_outside: bool,
    mut f: impl FnMut(usize),
) {
    let gx = l.ghost[0] as i64;
    let end = l.extent[0] as i64 - gx;
    if only_outside {
        for x in (-gx..0).chain(nx as i64..end) {
            f(l.index(x, y, z, q));
        }
    } else {
        for x in -gx..end {
            f(l.index(x, y, z, q));
        }
    }
}

/// Compares the sampled rows and every ghost and padding element of one field.
fn compare_sampled<T: Real>(
    field: &Field,
    layout: &FieldLayout,
    domain: &Domain,
    sampled: &[bool],
    got: &[T],
    want: &[T],
    v: &mut Verification,
) {
    let [nx, ny, nz] = domain.size;
    let [gy, gz] = [layout.ghost[1] as i64, layout.ghost[2] as i64];
    let rows = || {
        (0..layout.components).flat_map(move |q| {
            (-gz..nz as i64 + gz).flat_map(move |z| (-gy..ny as i64 + gy).map(move |y| (y, z, q)))
        })
    };
    let interior_unsampled = |(y, z, _): (i64, i64, usize)| {
        (0..ny as i64).contains(&y)
            && (0..nz as i64).contains(&z)
            && !sampled[y as usize + ny * z as usize]
    };
    let mut scale = f64::MIN_POSITIVE;
    for row in rows() {
        for_row(layout, nx, row, interior_unsampled(row), |i| {
            if want[i].is_finite() {
                scale = scale.max(Real::to_f64(want[i]).abs());
            }
        });
    }
    for row in rows() {
        for_row(layout, nx, row, interior_unsampled(row), |i| {
            compare_one(field, layout, i, got[i], want[i], scale, v)
        });
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
        let mut v = Verification::new(Dtype::F64, None);
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

    fn star(name: &str) -> Kernel {
        let p =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("stencils/{name}.toml"));
        crate::spec::load_stencil(&p).unwrap().kernel
    }

    #[test]
    fn sample_rows_cover_faces_middle_and_random_rows() {
        let d = Domain::new3(40, 24, 20);
        let spec = SampleSpec {
            random_planes: 2,
            random_rows: 50,
            seed: 3,
        };
        let rows = spec.rows(&d);
        assert!(rows.windows(2).all(|w| (w[0].1, w[0].0) < (w[1].1, w[1].0)));
        assert!(rows.iter().all(|&(y, z)| y < 24 && z < 20));
        for z in [0, 1, 9, 10, 18, 19] {
            assert!((0..24).all(|y| rows.contains(&(y, z))), "z plane {z}");
        }
        for y in [0, 1, 11, 12, 22, 23] {
            assert!((0..20).all(|z| rows.contains(&(y, z))), "y plane {y}");
        }
        assert_eq!(spec.rows(&d), rows, "seeded");
        // A tiny domain: the fixed planes stay inside it.
        let tiny = spec.rows(&Domain::new3(3, 1, 2));
        assert!(tiny.iter().all(|&(y, z)| y < 1 && z < 2));
        // 2D: no z planes; rows are y lines.
        let two = spec.rows(&Domain::new2(16, 12));
        assert!(two.iter().all(|&(_, z)| z == 0));
        assert!([0, 1, 5, 6, 10, 11].iter().all(|y| two.contains(&(*y, 0))));
    }

    /// The reference on sampled rows against the device output of a correct kernel and of
    /// kernels with indexing errors (simulated on the CPU): only the correct one passes.
    #[test]
    fn sampled_comparison_catches_indexing_errors() {
        let k = star("star3d_r1");
        let d = Domain::new3(24, 20, 16);
        let spec = SampleSpec {
            random_planes: 2,
            random_rows: 256,
            seed: 9,
        };
        let rows = spec.rows(&d);
        let mut sampled = vec![false; 20 * 16];
        for (y, z) in &rows {
            sampled[y + 20 * z] = true;
        }
        let init = |k: &Kernel| -> Vec<FieldArray<f64>> {
            k.fields
                .iter()
                .enumerate()
                .map(|(i, f)| match f.role {
                    FieldRole::Output => FieldArray::filled(f, &d, f64::NAN),
                    _ => FieldArray::random(f, &d, 5 + i as u64, 1.0, 2.0),
                })
                .collect()
        };
        let mut want = init(&k);
        reference::run_rows(&k, &d, &mut want, &rows).unwrap();
        let out = k
            .fields
            .iter()
            .position(|f| f.role == FieldRole::Output)
            .unwrap();
        let layout = *want[out].layout();
        let check = |got: &[f64]| {
            let mut v = Verification::new(Dtype::F64, Some(rows.len()));
            compare_sampled(
                &k.fields[out],
                &layout,
                &d,
                &sampled,
                got,
                want[out].as_slice(),
                &mut v,
            );
            v
        };
        // The correct kernel on the whole domain.
        let mut good = init(&k);
        reference::run(&k, &d, &mut good).unwrap();
        let v = check(good[out].as_slice());
        assert!(v.passed, "{:?}", v.first_mismatch);
        // Fewer elements than the field: ghosts and sampled rows only.
        assert!(v.checked < layout.len() && v.checked > rows.len() * 24);

        // Every single z plane or y plane left unwritten (a guard or fold bound off by one).
        for z in 0..16i64 {
            let mut bad = good[out].clone();
            for y in 0..20 {
                for x in 0..24 {
                    bad.set(x, y, z, 0, f64::NAN);
                }
            }
            assert!(!check(bad.as_slice()).passed, "missed z plane {z}");
        }
        for y in 0..20i64 {
            let mut bad = good[out].clone();
            for z in 0..16 {
                bad.set(7, y, z, 0, 0.0);
            }
            assert!(!check(bad.as_slice()).passed, "missed y line {y}");
        }
        // A write into a ghost layer anywhere.
        let mut bad = good[out].clone();
        bad.set(3, 5, -1, 0, 1.0);
        let v = check(bad.as_slice());
        assert!(!v.passed && v.first_mismatch.unwrap().contains("must not write"));
        // A wrong stencil (x offset 0 instead of +1): every point differs.
        let mut shifted = k.clone();
        for a in &mut shifted.body {
            shift_x(&mut a.value);
        }
        let mut wrong = init(&shifted);
        reference::run(&shifted, &d, &mut wrong).unwrap();
        assert!(!check(wrong[out].as_slice()).passed);
    }

    fn shift_x(e: &mut Expr) {
        match e {
            Expr::Load(a) if a.offset[0] == 1 => a.offset[0] = 0,
            Expr::Load(_) | Expr::Lit(_) | Expr::Param(_) | Expr::Temp(_) => {}
            Expr::Unary(_, a) => shift_x(a),
            Expr::Binary(_, a, b) => {
                shift_x(a);
                shift_x(b);
            }
            Expr::Fma(a, b, c) => {
                shift_x(a);
                shift_x(b);
                shift_x(c);
            }
            Expr::Select {
                lhs,
                rhs,
                then,
                otherwise,
                ..
            } => {
                shift_x(lhs);
                shift_x(rhs);
                shift_x(then);
                shift_x(otherwise);
            }
        }
    }

    #[test]
    fn copy_kernel_moves_two_elements() {
        let k = copy_kernel(3, Dtype::F32);
        k.validate().unwrap();
        assert_eq!(k.min_bytes_per_lup(), 8);
    }
}

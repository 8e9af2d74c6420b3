use super::{parse_dims, CliError, DtypeArg, StepArg};
use clap::{Args, ValueEnum};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use stencilscope::config::LaunchConfig;
use stencilscope::ir::{Domain, Dtype, Kernel};
use stencilscope::lbm::LbmSpec;
use stencilscope::runtime::measure::{self, MeasureOptions, RunResult, Status, Timing};
use stencilscope::runtime::{BackendKind, BackendOptions, DeviceInfo, DeviceSelector};

/// Backend of `stencilscope run`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BackendArg {
    /// OpenCL (any platform).
    Opencl,
    /// WebGPU through wgpu on Vulkan.
    Wgpu,
    /// CUDA through NVRTC (needs a build with `--features cuda`).
    Cuda,
}

impl From<BackendArg> for BackendKind {
    fn from(b: BackendArg) -> BackendKind {
        match b {
            BackendArg::Opencl => BackendKind::OpenCl,
            BackendArg::Wgpu => BackendKind::Wgpu,
            BackendArg::Cuda => BackendKind::Cuda,
        }
    }
}

/// Arguments of `stencilscope run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Stencil or LBM definition file (TOML); omit with `--copy`. An LBM file runs its bulk
    /// kernel (one sweep, like a stencil; the AA pattern's odd step unless `--step even`).
    #[arg(required_unless_present = "copy", conflicts_with = "copy")]
    file: Option<PathBuf>,
    /// For an LBM file with AA streaming: which step's kernel (default: odd).
    #[arg(long, value_enum, conflicts_with = "copy")]
    step: Option<StepArg>,
    /// Measure the copy kernel `dst = src` instead of a stencil: the device's copy bandwidth
    /// through the same emitter and backend.
    #[arg(long)]
    copy: bool,
    /// Backend to run on.
    #[arg(long, value_enum)]
    backend: BackendArg,
    /// Device: an index from `stencilscope devices`, or part of its name; the first GPU (else the
    /// first device) when omitted.
    #[arg(long)]
    device: Option<String>,
    /// Domain size `nx,ny[,nz]`; the file's `domain` when omitted (required with `--copy`).
    #[arg(long, value_delimiter = ',')]
    domain: Option<Vec<usize>>,
    /// Threads per block `x,y,z`; repeat (with `--fold`) to measure several configurations.
    #[arg(long, value_parser = parse_dims, required = true)]
    block: Vec<[usize; 3]>,
    /// Points per thread `x,y,z`: none (1,1,1), one for every `--block`, or one per `--block`.
    #[arg(long, value_parser = parse_dims)]
    fold: Vec<[usize; 3]>,
    /// Element type, overriding the file's (f64 for `--copy` unless given).
    #[arg(long, value_enum)]
    dtype: Option<DtypeArg>,
    /// Timed launches per configuration (at least 10).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Untimed warm-up launches per configuration (at least).
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Milliseconds the warm-up keeps the device busy (at least): drivers clock down idle GPUs.
    #[arg(long, default_value_t = 100)]
    warmup_ms: u32,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Skip the comparison with the CPU reference.
    #[arg(long)]
    no_verify: bool,
    /// wgpu: keep wgpu's runtime bounds checks in the shader (off by default: the emitted guards
    /// keep every access in range).
    #[arg(long)]
    wgpu_bounds_checks: bool,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Serialize)]
struct RunJson<'a> {
    kernel: &'a str,
    dtype: Dtype,
    domain: [usize; 3],
    dims: usize,
    backend: BackendKind,
    device: &'a DeviceInfo,
    wgpu_bounds_checks: bool,
    min_bytes_per_lup: usize,
    flops_per_lup: usize,
    warmup: usize,
    warmup_ms: u32,
    reps: usize,
    seed: u64,
    /// The LBM variant, for LBM files.
    #[serde(skip_serializing_if = "Option::is_none")]
    lbm: Option<&'a LbmSpec>,
    results: &'a [RunResult],
}

fn configs(a: &RunArgs) -> Result<Vec<LaunchConfig>, CliError> {
    let folds = match a.fold.len() {
        0 => vec![[1, 1, 1]; a.block.len()],
        1 => vec![a.fold[0]; a.block.len()],
        n if n == a.block.len() => a.fold.clone(),
        n => {
            return Err(CliError::Usage(format!(
                "{} --block values but {n} --fold values; give no --fold, one for all, or one per --block",
                a.block.len()
            )))
        }
    };
    Ok(a.block
        .iter()
        .zip(folds)
        .map(|(b, f)| LaunchConfig::new(*b, f))
        .collect())
}

fn si(v: f64, unit: &str) -> String {
    let (s, p) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(s, _)| v >= *s)
        .unwrap_or((1.0, ""));
    format!("{:.3} {p}{unit}", v / s)
}

pub fn run(a: &RunArgs, out: &mut impl Write) -> Result<(), CliError> {
    if a.reps < 10 {
        return Err(CliError::Usage(format!(
            "--reps {} is too few; the median and spread need at least 10 timed launches",
            a.reps
        )));
    }
    let (kernel, domain, lbm): (Kernel, Domain, Option<LbmSpec>) = if a.copy {
        let dims = a.domain.as_ref().map(|d| d.len()).unwrap_or(0);
        let domain = super::domain_for(
            std::path::Path::new("--copy"),
            a.domain.as_deref(),
            None,
            if dims == 2 { 2 } else { 3 },
        )?;
        let dtype = a.dtype.map(Dtype::from).unwrap_or(Dtype::F64);
        (measure::copy_kernel(domain.dims, dtype), domain, None)
    } else {
        let file = a.file.as_ref().expect("clap requires FILE without --copy");
        let def = super::load_step(file, a.dtype, a.step)?;
        let domain = super::domain_for(file, a.domain.as_deref(), def.domain, def.kernel.dims)?;
        (def.kernel, domain, def.lbm)
    };
    let configs = configs(a)?;
    let kind: BackendKind = a.backend.into();
    let selector = a
        .device
        .as_deref()
        .map(DeviceSelector::parse)
        .unwrap_or_default();
    let mut backend = kind.open(
        &selector,
        &BackendOptions {
            wgpu_bounds_checks: a.wgpu_bounds_checks,
            ..BackendOptions::default()
        },
    )?;
    let dtype = kernel.dtype();
    writeln!(
        out,
        "{} ({dtype}) on {}, domain {domain}, {} B/LUP minimal, {} flops/LUP",
        kernel.name,
        backend.info(),
        kernel.min_bytes_per_lup(),
        kernel.flops().total()
    )?;
    if kind == BackendKind::Wgpu {
        writeln!(
            out,
            "wgpu runtime bounds checks: {}",
            if a.wgpu_bounds_checks { "on" } else { "off" }
        )?;
    }
    let options = MeasureOptions {
        timing: Some(Timing {
            warmup: a.warmup,
            warmup_ms: a.warmup_ms,
            reps: a.reps,
        }),
        verify: !a.no_verify,
        seed: a.seed,
    };
    let results = match dtype {
        Dtype::F32 => measure::measure::<f32>(&mut *backend, &kernel, &domain, &configs, &options)?,
        Dtype::F64 => measure::measure::<f64>(&mut *backend, &kernel, &domain, &configs, &options)?,
    };
    for r in &results {
        write!(out, "{}: ", r.config)?;
        match r.status {
            Status::Refused => writeln!(out, "refused: {}", r.error.as_deref().unwrap_or(""))?,
            Status::Error => writeln!(out, "error: {}", r.error.as_deref().unwrap_or(""))?,
            Status::Passed | Status::Wrong => {
                if let (Some(m), Some(lo), Some(hi)) = (r.median_s, r.min_s, r.max_s) {
                    write!(
                        out,
                        "median {:.4} ms (min {:.4}, max {:.4}, spread {:.1}%), {}, {} at minimal volume",
                        m * 1e3,
                        lo * 1e3,
                        hi * 1e3,
                        100.0 * (hi - lo) / m,
                        si(r.lups.unwrap_or(0.0), "LUP/s"),
                        si(r.bandwidth_min.unwrap_or(0.0), "B/s"),
                    )?;
                }
                match &r.verification {
                    None => writeln!(out, ", not verified")?,
                    Some(v) if v.passed => writeln!(
                        out,
                        ", verification passed ({} elements, max error {:.2e}, tolerance {:.0e})",
                        v.checked, v.max_error, v.tolerance
                    )?,
                    Some(v) => writeln!(
                        out,
                        ", VERIFICATION FAILED: {} of {} elements differ; first: {}",
                        v.mismatches,
                        v.checked,
                        v.first_mismatch.as_deref().unwrap_or("?")
                    )?,
                }
            }
        }
    }
    if let Some(path) = &a.json {
        let j = RunJson {
            kernel: &kernel.name,
            dtype,
            domain: domain.size,
            dims: domain.dims,
            backend: kind,
            device: backend.info(),
            wgpu_bounds_checks: kind == BackendKind::Wgpu && a.wgpu_bounds_checks,
            min_bytes_per_lup: kernel.min_bytes_per_lup(),
            flops_per_lup: kernel.flops().total(),
            warmup: a.warmup,
            warmup_ms: a.warmup_ms,
            reps: a.reps,
            seed: a.seed,
            lbm: lbm.as_ref(),
            results: &results,
        };
        std::fs::write(path, serde_json::to_string_pretty(&j)? + "\n")?;
    }
    let bad = results
        .iter()
        .filter(|r| matches!(r.status, Status::Wrong | Status::Error))
        .count();
    if bad > 0 {
        return Err(CliError::RunFailed {
            failed: bad,
            total: results.len(),
        });
    }
    Ok(())
}

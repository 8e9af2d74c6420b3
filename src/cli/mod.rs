//! Subcommands of the `stencilscope` binary; each turns library errors into one message.

mod bench;
mod counters;
mod devices;
mod emit;
mod rank;
mod run;
mod show;
mod volumes;

use clap::{Parser, Subcommand, ValueEnum};
use stencilscope::ir::{Domain, Dtype};
use stencilscope::spec::SpecError;

/// Code generator for GPU stencil and Lattice-Boltzmann kernels with a built-in data-volume estimator.
#[derive(Debug, Parser)]
#[command(name = "stencilscope", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a parsed kernel (stencil or LBM file): fields, accesses, flops and minimal bytes per
    /// lattice update.
    Show(show::ShowArgs),
    /// List the OpenCL, WebGPU (Vulkan) and CUDA devices, or why a backend has none.
    Devices(devices::DevicesArgs),
    /// Print the OpenCL C, WGSL or CUDA source of a kernel for one launch configuration.
    Emit(emit::EmitArgs),
    /// Run a kernel on a device: time it, check it against the CPU reference, report LUP/s and
    /// bandwidth.
    Run(run::RunArgs),
    /// Data volumes per memory level (B/LUP) of one launch configuration, next to the minimum;
    /// `--simulate` adds the exact cache simulator's figures.
    Volumes(volumes::VolumesArgs),
    /// Rank every launch configuration of a kernel on a machine model, without running anything.
    Rank(rank::RankArgs),
    /// Measure the model's top configurations and a sample of the rest (or all of them) on a
    /// device, verify each against the CPU reference, and report how good the ranking was.
    Bench(Box<bench::BenchArgs>),
    /// Validate the estimated volumes against hardware counters: run the CUDA twin of each
    /// configuration under Nsight Compute (ncu) and report estimate against measurement.
    Counters(counters::CountersArgs),
    /// The CUDA twin that `counters` runs under ncu (internal).
    #[command(hide = true)]
    CountersTwin(counters::TwinArgs),
}

/// Element type as given on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DtypeArg {
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
}

impl From<DtypeArg> for Dtype {
    fn from(d: DtypeArg) -> Dtype {
        match d {
            DtypeArg::F32 => Dtype::F32,
            DtypeArg::F64 => Dtype::F64,
        }
    }
}

/// Everything that can fail in a subcommand.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A definition file was rejected.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// Output could not be written.
    #[error("cannot write output: {0}")]
    Io(#[from] std::io::Error),
    /// A kernel could not be emitted.
    #[error(transparent)]
    Emit(#[from] stencilscope::emit::EmitError),
    /// A device operation failed.
    #[error(transparent)]
    Runtime(#[from] stencilscope::runtime::RuntimeError),
    /// Inconsistent command-line values.
    #[error("{0}")]
    Usage(String),
    /// Some configurations produced wrong results or failed.
    #[error("{failed} of {total} configurations failed or produced wrong results (see above)")]
    RunFailed {
        /// Failed configurations.
        failed: usize,
        /// All configurations.
        total: usize,
    },
    /// An LBM variant could not be turned into its time loop.
    #[error(transparent)]
    Lbm(#[from] stencilscope::lbm::LbmError),
    /// A machine file or preset was rejected.
    #[error(transparent)]
    Machine(#[from] stencilscope::spec::MachineError),
    /// The volumes could not be computed.
    #[error(transparent)]
    Footprint(#[from] stencilscope::footprint::FootprintError),
    /// JSON serialisation failed.
    #[error("cannot serialise to JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A named output file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// Ranking failed (boxed: the ranking error is large, and errors travel by value).
    #[error(transparent)]
    Rank(Box<stencilscope::rank::RankError>),
    /// The measurement cache could not be read or written.
    #[error(transparent)]
    Cache(#[from] stencilscope::bench::cache::CacheError),
    /// A sweep was interrupted (Ctrl-C) after writing what it had measured.
    #[error("interrupted; what was measured is in the cache, and the same command resumes")]
    Interrupted,
    /// A counter sweep failed.
    #[error(transparent)]
    Counters(#[from] stencilscope::counters::CountersError),
    /// Neither the file nor the command line gives a domain.
    #[error("no domain: the file gives none, so pass --domain NX,NY[,NZ]")]
    NoDomain,
}

// Boxed: the ranking error is large, and every subcommand returns `CliError`.
impl From<stencilscope::rank::RankError> for CliError {
    fn from(e: stencilscope::rank::RankError) -> CliError {
        CliError::Rank(Box::new(e))
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Show(a) => show::run(&a, &mut std::io::stdout().lock()),
        Command::Devices(a) => devices::run(&a, &mut std::io::stdout().lock()),
        Command::Emit(a) => emit::run(&a, &mut std::io::stdout().lock()),
        Command::Run(a) => run::run(&a, &mut std::io::stdout().lock()),
        Command::Volumes(a) => volumes::run(&a, &mut std::io::stdout().lock()),
        Command::Rank(a) => rank::run(&a, &mut std::io::stdout().lock()),
        Command::Bench(a) => bench::run(&a, &mut std::io::stdout().lock()),
        Command::Counters(a) => counters::run(&a, &mut std::io::stdout().lock()),
        Command::CountersTwin(a) => counters::twin(&a, &mut std::io::stdout().lock()),
    }
}

/// Which kernel of an LBM AA variant (the odd step when not given).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StepArg {
    /// The even step: local collision, populations stored in their opposite slots.
    Even,
    /// The odd step: gather from and scatter to the neighbours.
    Odd,
}

impl From<StepArg> for stencilscope::lbm::Step {
    fn from(s: StepArg) -> stencilscope::lbm::Step {
        match s {
            StepArg::Even => stencilscope::lbm::Step::Even,
            StepArg::Odd => stencilscope::lbm::Step::Odd,
        }
    }
}

/// Loads a stencil or LBM file (its primary kernel: the AA odd step) and applies a dtype override.
fn load(
    path: &std::path::Path,
    dtype: Option<DtypeArg>,
) -> Result<stencilscope::spec::Definition, CliError> {
    load_step(path, dtype, None)
}

/// Loads a stencil or LBM file, picking an AA step, and applies a dtype override.
fn load_step(
    path: &std::path::Path,
    dtype: Option<DtypeArg>,
    step: Option<StepArg>,
) -> Result<stencilscope::spec::Definition, CliError> {
    let mut def = stencilscope::spec::load_definition_step(path, step.map(Into::into))?;
    if let Some(d) = dtype {
        def.set_dtype(d.into());
    }
    Ok(def)
}

/// Parses `x,y,z` (or `x,y`, z = 1) into three positive sizes.
fn parse_dims(s: &str) -> Result<[usize; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(format!(
            "`{s}` needs 2 or 3 comma-separated sizes, e.g. 32,4,2"
        ));
    }
    let mut v = [1usize; 3];
    for (i, p) in parts.iter().enumerate() {
        v[i] = match p.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => return Err(format!("`{p}` in `{s}` is not a positive integer")),
        };
    }
    Ok(v)
}

/// The domain from `--domain`, else the file's, checked against the kernel's dimensions.
fn domain_for(
    file: &std::path::Path,
    given: Option<&[usize]>,
    default: Option<stencilscope::ir::Domain>,
    dims: usize,
) -> Result<stencilscope::ir::Domain, CliError> {
    let d = match given {
        Some(s) => stencilscope::ir::Domain::from_slice(s).ok_or_else(|| {
            CliError::Usage(format!(
                "--domain needs 2 or 3 sizes (nx,ny or nx,ny,nz), got {}",
                s.len()
            ))
        })?,
        None => default.ok_or_else(|| {
            CliError::Usage(format!(
                "{} has no `domain`; pass --domain nx,ny[,nz]",
                file.display()
            ))
        })?,
    };
    if d.size.contains(&0) {
        return Err(CliError::Usage(format!(
            "--domain {d} has a zero size; every size must be at least 1"
        )));
    }
    if d.dims != dims {
        return Err(CliError::Usage(format!(
            "the kernel is {dims}D but the domain {d} is {}D",
            d.dims
        )));
    }
    Ok(d)
}

/// Parses `640,512,512` (or `x`-separated) into a domain.
pub fn parse_domain(s: &str) -> Result<Domain, String> {
    let sizes = parse_list(s)?;
    if sizes.contains(&0) {
        return Err(format!("`{s}`: every domain extent must be at least 1"));
    }
    Domain::from_slice(&sizes)
        .ok_or_else(|| format!("`{s}`: give 2 or 3 extents, e.g. 640,512,512"))
}

/// Parses a comma- or `x`-separated list of non-negative integers.
pub fn parse_list(s: &str) -> Result<Vec<usize>, String> {
    s.split([',', 'x'])
        .map(|p| {
            p.trim()
                .parse::<usize>()
                .map_err(|_| format!("`{s}`: `{p}` is not a non-negative integer"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn dims_parse_and_reject() {
        assert_eq!(super::parse_dims("32,4,2"), Ok([32, 4, 2]));
        assert_eq!(super::parse_dims("64, 2"), Ok([64, 2, 1]));
        assert!(super::parse_dims("32").unwrap_err().contains("2 or 3"));
        assert!(super::parse_dims("32,0,1").unwrap_err().contains("`0`"));
        assert!(super::parse_dims("a,1").is_err());
    }
}

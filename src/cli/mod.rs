//! Subcommands of the `stencilscope` binary; each turns library errors into one message.

mod rank;
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
    /// Data volumes per memory level (B/LUP) of one launch configuration, next to the minimum;
    /// `--simulate` adds the exact cache simulator's figures.
    Volumes(volumes::VolumesArgs),
    /// Rank every launch configuration of a kernel on a machine model, without running anything.
    Rank(rank::RankArgs),
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
    /// An LBM variant could not be turned into its time loop.
    #[error(transparent)]
    Lbm(#[from] stencilscope::lbm::LbmError),
    /// A machine file or preset was rejected.
    #[error(transparent)]
    Machine(#[from] stencilscope::spec::MachineError),
    /// The volumes could not be computed.
    #[error(transparent)]
    Footprint(#[from] stencilscope::footprint::FootprintError),
    /// Inconsistent command-line arguments.
    #[error("{0}")]
    Usage(String),
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
    /// Neither the file nor the command line gives a domain.
    #[error("no domain: the file gives none, so pass --domain NX,NY[,NZ]")]
    NoDomain,
}

impl From<stencilscope::rank::RankError> for CliError {
    fn from(e: stencilscope::rank::RankError) -> CliError {
        CliError::Rank(Box::new(e))
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Show(a) => show::run(&a, &mut std::io::stdout().lock()),
        Command::Volumes(a) => volumes::run(&a, &mut std::io::stdout().lock()),
        Command::Rank(a) => rank::run(&a, &mut std::io::stdout().lock()),
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

/// Loads a stencil or LBM file (its primary kernel) and applies a dtype override.
#[allow(dead_code)] // the entry point for subcommands without a step choice (emit, run, rank)
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

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
    /// Print a parsed kernel: fields, accesses, flops and minimal bytes per lattice update.
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
    /// Ranking failed.
    #[error(transparent)]
    Rank(#[from] stencilscope::rank::RankError),
    /// Neither the file nor the command line gives a domain.
    #[error("no domain: the file gives none, so pass --domain NX,NY[,NZ]")]
    NoDomain,
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Show(a) => show::run(&a, &mut std::io::stdout().lock()),
        Command::Volumes(a) => volumes::run(&a, &mut std::io::stdout().lock()),
        Command::Rank(a) => rank::run(&a, &mut std::io::stdout().lock()),
    }
}

/// Loads a stencil file and applies a dtype override.
fn load(
    path: &std::path::Path,
    dtype: Option<DtypeArg>,
) -> Result<stencilscope::spec::StencilDefinition, CliError> {
    let mut def = stencilscope::spec::load_stencil(path)?;
    if let Some(d) = dtype {
        def.kernel.set_dtype(d.into());
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

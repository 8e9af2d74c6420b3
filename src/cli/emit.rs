use super::{load_step, parse_dims, CliError, DtypeArg, StepArg};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use stencilscope::config::LaunchConfig;
use stencilscope::emit::{self, Language, Options};

/// Target language of `stencilscope emit`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TargetArg {
    /// OpenCL C.
    Opencl,
    /// WGSL (validated with naga).
    Wgsl,
    /// CUDA C++ for NVRTC.
    Cuda,
}

impl From<TargetArg> for Language {
    fn from(t: TargetArg) -> Language {
        match t {
            TargetArg::Opencl => Language::OpenCl,
            TargetArg::Wgsl => Language::Wgsl,
            TargetArg::Cuda => Language::Cuda,
        }
    }
}

/// Arguments of `stencilscope emit`.
#[derive(Debug, Args)]
pub struct EmitArgs {
    /// Stencil or LBM definition file (TOML).
    file: PathBuf,
    /// For an LBM file with AA streaming: which step's kernel (default: odd).
    #[arg(long, value_enum)]
    step: Option<StepArg>,
    /// Source language.
    #[arg(long, value_enum)]
    target: TargetArg,
    /// Threads per block, `x,y,z` (`x,y` for 2D kernels).
    #[arg(long, value_parser = parse_dims)]
    block: [usize; 3],
    /// Points per thread, `x,y,z`, strided by the block size.
    #[arg(long, value_parser = parse_dims, default_value = "1,1,1")]
    fold: [usize; 3],
    /// Domain size `nx,ny[,nz]`; the file's `domain` when omitted.
    #[arg(long, value_delimiter = ',')]
    domain: Option<Vec<usize>>,
    /// Element type, overriding the file's.
    #[arg(long, value_enum)]
    dtype: Option<DtypeArg>,
    /// Write the source here instead of standard output.
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
}

pub fn run(a: &EmitArgs, out: &mut impl Write) -> Result<(), CliError> {
    let def = load_step(&a.file, a.dtype, a.step)?;
    let domain = super::domain_for(&a.file, a.domain.as_deref(), def.domain, def.kernel.dims)?;
    let config = LaunchConfig::new(a.block, a.fold);
    let src = emit::emit(
        a.target.into(),
        &def.kernel,
        &config,
        &domain,
        &Options::default(),
    )?;
    match &a.output {
        Some(p) => std::fs::write(p, src)?,
        None => out.write_all(src.as_bytes())?,
    }
    Ok(())
}

use super::{load, CliError, DtypeArg};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;
use stencilscope::config::SpaceOptions;
use stencilscope::ir::Domain;
use stencilscope::rank::{rank, Pruning, RankOptions};
use stencilscope::report::{ranking_html, ranking_table};
use stencilscope::spec::load_machine;

/// Arguments of `stencilscope rank`.
#[derive(Debug, Args)]
pub struct RankArgs {
    /// Stencil or LBM definition file (TOML).
    file: PathBuf,
    /// Machine preset (v100, a100-40gb, h100-sxm, h200) or machine file.
    #[arg(long)]
    machine: String,
    /// Domain, e.g. 640,512,512 (default: the file's).
    #[arg(long, value_parser = super::parse_domain)]
    domain: Option<Domain>,
    /// Element type, overriding the file's.
    #[arg(long, value_enum)]
    dtype: Option<DtypeArg>,
    /// Rows of the terminal table.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Write every configuration, with its evidence, as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the HTML report with SVG plots.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Registers per thread (default: estimated from the kernel).
    #[arg(long)]
    registers: Option<usize>,
    /// Also try thread folding by 8 in each dimension.
    #[arg(long)]
    fold8: bool,
    /// Estimate in full every configuration whose lower bound is within this factor of the best
    /// predicted time (and the `--top` best); the others keep their bounds.
    #[arg(long, default_value_t = Pruning::DEFAULT_MARGIN, conflicts_with = "exhaustive")]
    margin: f64,
    /// Estimate every configuration in full (no pruning).
    #[arg(long)]
    exhaustive: bool,
}

pub fn run(a: &RankArgs, out: &mut impl Write) -> Result<(), CliError> {
    let start = Instant::now();
    let def = load(&a.file, a.dtype)?;
    let domain = a.domain.or(def.domain).ok_or(CliError::NoDomain)?;
    let machine = load_machine(&a.machine)?;
    let mut opts = RankOptions {
        registers: a.registers,
        pruning: (!a.exhaustive).then_some(Pruning {
            margin: a.margin,
            keep: a.top,
        }),
        ..RankOptions::default()
    };
    if a.fold8 {
        opts.space = SpaceOptions {
            folds: vec![1, 2, 4, 8],
            ..SpaceOptions::default()
        };
    }
    let ranking = rank(&def.kernel, &domain, &machine, &opts)?;
    let elapsed = start.elapsed().as_secs_f64();
    write!(out, "{}", ranking_table(&ranking, a.top))?;
    let all = ranking.legal() + ranking.refused.len();
    writeln!(
        out,
        "ranked {all} configurations in {elapsed:.3} s ({:.0} configurations/s): {} estimated \
         in full, {} bounded, {} refused",
        all as f64 / elapsed,
        ranking.ranked.len(),
        ranking.bounded.len(),
        ranking.refused.len(),
    )?;
    if let Some(p) = &ranking.pruned {
        writeln!(
            out,
            "ranks 1-{} are exact: every configuration that can take at most {:.3} ms ({}× the \
             best time, or the time of the best {}) is estimated in full; the bounded ones \
             cannot (--exhaustive estimates all)",
            p.exact_ranks,
            p.threshold_seconds * 1e3,
            p.pruning.margin,
            p.pruning.keep,
        )?;
    }
    if let Some(p) = &a.json {
        let f = std::fs::File::create(p).map_err(|e| CliError::Write {
            path: p.clone(),
            source: e,
        })?;
        serde_json::to_writer(std::io::BufWriter::new(f), &ranking)?;
        writeln!(out, "wrote {}", p.display())?;
    }
    if let Some(p) = &a.html {
        std::fs::write(p, ranking_html(&ranking, a.top)).map_err(|e| CliError::Write {
            path: p.clone(),
            source: e,
        })?;
        writeln!(out, "wrote {}", p.display())?;
    }
    Ok(())
}

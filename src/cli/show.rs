use super::{load, CliError, DtypeArg};
use clap::Args;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use stencilscope::ir::{AccessKind, FlopCounts, Kernel};

/// Arguments of `stencilscope show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Stencil definition file (TOML).
    file: PathBuf,
    /// Element type, overriding the file's.
    #[arg(long, value_enum)]
    dtype: Option<DtypeArg>,
    /// Print the IR and the counts as JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct ShowJson<'a> {
    kernel: &'a Kernel,
    loads: usize,
    stores: usize,
    flops: FlopCounts,
    flops_total: usize,
    min_bytes_per_lup: usize,
}

pub fn run(a: &ShowArgs, out: &mut impl Write) -> Result<(), CliError> {
    let def = load(&a.file, a.dtype)?;
    let k = &def.kernel;
    let loads = k.distinct_accesses(AccessKind::Load);
    let stores = k.distinct_accesses(AccessKind::Store);
    let flops = k.flops();
    if a.json {
        let j = ShowJson {
            kernel: k,
            loads: loads.len(),
            stores: stores.len(),
            flops,
            flops_total: flops.total(),
            min_bytes_per_lup: k.min_bytes_per_lup(),
        };
        serde_json::to_writer_pretty(&mut *out, &j)?;
        writeln!(out)?;
        return Ok(());
    }
    write!(out, "kernel {} ({}D, {})", k.name, k.dims, k.dtype())?;
    if let Some(d) = &def.description {
        write!(out, ": {d}")?;
    }
    writeln!(out)?;
    if let Some(d) = def.domain {
        writeln!(out, "default domain: {d}")?;
    }
    writeln!(out, "fields:")?;
    for f in &k.fields {
        writeln!(
            out,
            "  {:<8} {:<6} {}  components {}  layout {}  ghost {}  padding {}",
            f.name, f.role, f.dtype, f.components, f.layout, f.ghost, f.padding
        )?;
    }
    if !k.params.is_empty() {
        writeln!(out, "parameters:")?;
        for p in &k.params {
            writeln!(out, "  {} = {}", p.name, p.value)?;
        }
    }
    writeln!(out, "update:")?;
    for i in 0..k.body.len() {
        writeln!(out, "  {}", k.statement_source(i))?;
    }
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    writeln!(
        out,
        "accesses: {}, {}",
        plural(loads.len(), "load"),
        plural(stores.len(), "store")
    )?;
    for (kind, list) in [("load ", &loads), ("store", &stores)] {
        for acc in list.iter() {
            let o = acc.offset;
            writeln!(
                out,
                "  {kind} {:<16} offset ({:>2},{:>2},{:>2})",
                k.access_source(acc),
                o[0],
                o[1],
                o[2]
            )?;
        }
    }
    writeln!(
        out,
        "flops per lattice update: {} (add {}, mul {}, div {}, fma {}, sqrt {}, other {})",
        flops.total(),
        flops.add,
        flops.mul,
        flops.div,
        flops.fma,
        flops.sqrt,
        flops.other
    )?;
    writeln!(
        out,
        "minimal bytes per lattice update: {} B ({}: each input read once, each output written once)",
        k.min_bytes_per_lup(),
        k.dtype()
    )?;
    Ok(())
}

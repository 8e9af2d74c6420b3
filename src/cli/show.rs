use super::{load_step, CliError, DtypeArg, StepArg};
use clap::Args;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use stencilscope::ir::{AccessKind, FlopCounts, Kernel};
use stencilscope::lbm::LbmSpec;

/// Arguments of `stencilscope show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Stencil or LBM definition file (TOML).
    file: PathBuf,
    /// For an LBM file with AA streaming: which step's kernel to show (default: odd).
    #[arg(long, value_enum)]
    step: Option<StepArg>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    lbm: Option<&'a LbmSpec>,
}

pub fn run(a: &ShowArgs, out: &mut impl Write) -> Result<(), CliError> {
    let def = load_step(&a.file, a.dtype, a.step)?;
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
            lbm: def.lbm.as_ref(),
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
    if let Some(spec) = &def.lbm {
        writeln!(out, "lattice-Boltzmann: {}", spec.summary())?;
        if let Some(d) = &def.domain {
            let program = spec.program(d, None)?;
            writeln!(out, "time loop on {d} (periodic):")?;
            for line in program.describe() {
                writeln!(out, "  {line}")?;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn show(file: &str, step: Option<StepArg>, json: bool) -> Result<String, CliError> {
        let a = ShowArgs {
            file: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(file),
            step,
            dtype: None,
            json,
        };
        let mut out = Vec::new();
        run(&a, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn shows_lbm_files() {
        let s = show("lbm/d3q19_srt_pull.toml", None, false).unwrap();
        assert!(s.contains("lattice-Boltzmann: D3Q19 SRT"), "{s}");
        assert!(s.contains("minimal bytes per lattice update: 152 B"), "{s}");
        assert!(
            s.contains("kernel d3q19_srt_pull(src = f_a, dst = f_b)"),
            "{s}"
        );
        let odd = show("lbm/d3q19_srt_aa.toml", None, false).unwrap();
        assert!(odd.starts_with("kernel d3q19_srt_aa_odd"), "{odd}");
        let even = show("lbm/d3q19_srt_aa.toml", Some(StepArg::Even), false).unwrap();
        assert!(even.starts_with("kernel d3q19_srt_aa_even"), "{even}");
        let e = show("lbm/d3q19_srt_pull.toml", Some(StepArg::Odd), false).unwrap_err();
        assert!(e.to_string().contains("single kernel"), "{e}");
        let e = show("stencils/star3d_r1.toml", Some(StepArg::Odd), false).unwrap_err();
        assert!(e.to_string().contains("only for LBM"), "{e}");
        let j: serde_json::Value =
            serde_json::from_str(&show("lbm/d3q27_trt_pull.toml", None, true).unwrap()).unwrap();
        assert_eq!(j["lbm"]["lattice"], "D3Q27");
        assert_eq!(j["min_bytes_per_lup"], 2 * 27 * 4);
    }
}

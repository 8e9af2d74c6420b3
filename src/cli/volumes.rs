use super::{load_step, CliError, DtypeArg, StepArg};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use stencilscope::cachesim;
use stencilscope::config::LaunchConfig;
use stencilscope::counters::CompiledOrders;
use stencilscope::footprint::{self, CacheParams};
use stencilscope::ir::Domain;
use stencilscope::spec::load_machine;

/// Arguments of `stencilscope volumes`.
#[derive(Debug, Args)]
pub struct VolumesArgs {
    /// Stencil or LBM definition file (TOML).
    file: PathBuf,
    /// For an LBM file with AA streaming: which step's kernel (default: odd).
    #[arg(long, value_enum)]
    step: Option<StepArg>,
    /// Machine: a preset name (v100, a100-40gb, h100-sxm, h200) or a machine file.
    #[arg(long)]
    machine: String,
    /// Domain size, e.g. `256,128,128` (default: the file's domain).
    #[arg(long, value_delimiter = ',')]
    domain: Option<Vec<usize>>,
    /// Threads per block, e.g. `32,4,1` (2 entries for 2D kernels).
    #[arg(long, value_delimiter = ',', required = true)]
    block: Vec<usize>,
    /// Points per thread, e.g. `1,2,1` (default: no folding).
    #[arg(long, value_delimiter = ',')]
    fold: Option<Vec<usize>>,
    /// Element type, overriding the file's.
    #[arg(long, value_enum)]
    dtype: Option<DtypeArg>,
    /// Registers per thread for the occupancy calculation.
    #[arg(long, default_value_t = 32)]
    registers: usize,
    /// Resident blocks per SM, overriding the occupancy calculation.
    #[arg(long)]
    blocks_per_sm: Option<usize>,
    /// The compiled code's issue orders (`bench/compiled-order.py orders`): estimate (and
    /// simulate) with the order the compiled kernel issues this configuration's loads and stores
    /// in, rather than the emitted one; the file must name the configuration.
    #[arg(long)]
    compiled_order: Option<PathBuf>,
    /// Also run the exact cache simulator (small domains only) and print its figures alongside.
    #[arg(long)]
    simulate: bool,
    /// The order in which the simulator's warps issue their instructions.
    #[arg(long, value_enum, default_value_t = IssueOrderArg::Lockstep, requires = "simulate")]
    issue_order: IssueOrderArg,
    /// With `--issue-order drift`: the largest delay of a warp, in fold points (each warp's is
    /// drawn uniformly from 0 to this) [default: 1].
    #[arg(long, value_parser = drift_fold_points)]
    drift: Option<f64>,
    /// With `--issue-order window`: the memory instructions a warp keeps in flight
    /// [default: 12].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    window: Option<u32>,
    /// With `--issue-order interleave`: the warps of an SM issuing in lockstep together
    /// [default: half the SM's warps].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    interleave: Option<u32>,
    /// With `--issue-order timed`: the timing model as `registers,queue,l1,l2,dram[,l2_rate]` —
    /// registers per thread holding loads in flight, warp instructions queued in front of the L1,
    /// the L1, L2 and DRAM latencies in cycles, and optionally the sectors an SM's L1 misses may
    /// fetch from L2 per 1,000 cycles (unlimited where left out) [default: 1,16,35,270,570].
    #[arg(long)]
    timing: Option<cachesim::IssueTiming>,
    /// Which line the simulator's L1 gives up for a new one.
    #[arg(long, value_enum, default_value_t = L1ReplacementArg::Lru, requires = "simulate")]
    l1_replacement: L1ReplacementArg,
}

/// `--l1-replacement`: see [`cachesim::L1Replacement`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum L1ReplacementArg {
    /// The least recently used line of the line's set: the sets of the machine's measured set
    /// function (of its `l1_conflict_ways` ways at the usual L1, the tags'), or else sets of the
    /// ways for this L1 chosen by a hash (0 ways: one set).
    Lru,
    /// A random line of the whole L1.
    Random,
}

/// Parses `--drift`: fold points from 0 to 100.
fn drift_fold_points(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "`{s}` is not a number of fold points from 0 to 100"
        )),
    }
}

/// `--issue-order`: see [`cachesim::IssueOrder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum IssueOrderArg {
    /// Every warp issues an instruction before any issues the next (the visitor's L1 model).
    Lockstep,
    /// Each warp issues all the instructions of a fold point back to back, warp after warp.
    WarpBurst,
    /// Warps dealt to the SM's four schedulers, each in warp-burst order, taking turns.
    SchedulerBurst,
    /// Lockstep with each warp late by a random delay of up to `--drift` fold points.
    Drift,
    /// Each warp's first `--window` memory instructions as a burst, then one per lockstep step.
    Window,
    /// Lockstep among `--interleave` warps of the SM at a time, group after group.
    Interleave,
    /// From a timing model of the SM (`--timing`): loads in flight, a queue in front of the
    /// L1, greedy-then-oldest issue.
    Timed,
    /// Lockstep within each block, blocks starting at their launch offsets (`n / wave` block
    /// durations), not in waves: the visitor's L2 model.
    Launched,
}

fn triple(v: &[usize], what: &str) -> Result<[usize; 3], CliError> {
    match *v {
        [x, y] => Ok([x, y, 1]),
        [x, y, z] => Ok([x, y, z]),
        _ => Err(CliError::Usage(format!(
            "--{what} takes 2 or 3 comma-separated numbers, got {}",
            v.len()
        ))),
    }
}

pub fn run(a: &VolumesArgs, out: &mut impl Write) -> Result<(), CliError> {
    let def = load_step(&a.file, a.dtype, a.step)?;
    let k = &def.kernel;
    let machine = load_machine(&a.machine)?;
    let domain = match &a.domain {
        Some(d) => Domain::from_slice(d)
            .ok_or_else(|| CliError::Usage("--domain takes 2 or 3 numbers".into()))?,
        None => def.domain.ok_or_else(|| {
            CliError::Usage(format!(
                "{} gives no domain; pass --domain",
                a.file.display()
            ))
        })?,
    };
    let block = triple(&a.block, "block")?;
    let fold = match &a.fold {
        Some(f) => triple(f, "fold")?,
        None => [1, 1, 1],
    };
    let config = LaunchConfig::new(block, fold);
    config
        .check(k.dims)
        .map_err(|e| CliError::Footprint(e.into()))?;
    let bps = match a.blocks_per_sm {
        Some(0) => return Err(CliError::Usage("--blocks-per-sm must be at least 1".into())),
        Some(b) => b,
        None => {
            let occ = machine.occupancy(config.threads(), a.registers, 0);
            if occ.blocks_per_sm == 0 {
                return Err(CliError::Usage(format!(
                    "{} threads per block with {} registers each cannot run on {} ({:?})",
                    config.threads(),
                    a.registers,
                    machine.name,
                    occ.limiter
                )));
            }
            occ.blocks_per_sm
        }
    };
    let params = CacheParams::from_machine(&machine, config.threads(), bps);
    let mut prog = footprint::MemoryProgram::new(k, &domain, &config)?;
    if let Some(path) = &a.compiled_order {
        let named;
        (prog, named) = CompiledOrders::read(path)?.apply(k, prog)?;
        if !named {
            return Err(CliError::Usage(format!(
                "{} has no compiled order for {} ({}) {config} on {domain}; its lines name the kernel, element type, block, fold and domain",
                path.display(),
                k.name,
                k.dtype()
            )));
        }
    }
    let est = footprint::Estimator::default().estimate_program(&prog, &params)?;
    // Each order's own option is used with that order only.
    for (given, option, sets, order) in [
        (
            a.drift.is_some(),
            "--drift",
            "the delays",
            IssueOrderArg::Drift,
        ),
        (
            a.window.is_some(),
            "--window",
            "the loads in flight",
            IssueOrderArg::Window,
        ),
        (
            a.interleave.is_some(),
            "--interleave",
            "the warps in lockstep",
            IssueOrderArg::Interleave,
        ),
        (
            a.timing.is_some(),
            "--timing",
            "the timing model",
            IssueOrderArg::Timed,
        ),
    ] {
        if given && a.issue_order != order {
            let name = order.to_possible_value().map(|v| v.get_name().to_string());
            return Err(CliError::Usage(format!(
                "{option} sets {sets} of `--issue-order {}` and is used with it only",
                name.unwrap_or_default()
            )));
        }
    }
    let sim = if a.simulate {
        let order = match a.issue_order {
            IssueOrderArg::Lockstep => cachesim::IssueOrder::Lockstep,
            IssueOrderArg::WarpBurst => cachesim::IssueOrder::WarpBurst,
            IssueOrderArg::SchedulerBurst => cachesim::IssueOrder::SchedulerBurst,
            IssueOrderArg::Drift => cachesim::IssueOrder::Drift {
                hundredths: (a.drift.unwrap_or(1.0) * 100.0).round() as u32,
            },
            IssueOrderArg::Window => cachesim::IssueOrder::Window {
                loads: a.window.unwrap_or(12),
            },
            IssueOrderArg::Interleave => cachesim::IssueOrder::Interleave {
                warps: a.interleave.unwrap_or_else(|| {
                    (bps * config.threads().div_ceil(machine.warp_size)).div_ceil(2) as u32
                }),
            },
            IssueOrderArg::Timed => cachesim::IssueOrder::Timed(a.timing.unwrap_or_default()),
            IssueOrderArg::Launched => cachesim::IssueOrder::Launched,
        };
        let l1 = match a.l1_replacement {
            L1ReplacementArg::Lru => cachesim::L1Replacement::Lru,
            L1ReplacementArg::Random => cachesim::L1Replacement::Random,
        };
        Some(cachesim::simulate_program(&prog, &params, order, l1)?)
    } else {
        None
    };
    let (min_load, min_store) = footprint::minimal_volumes(k);
    writeln!(
        out,
        "{} ({}) on {}, domain {domain}, {config}, {bps} block(s) per SM",
        k.name,
        k.dtype(),
        machine.name
    )?;
    write!(out, "{:<18} {:>12} {:>12}", "level", "estimate", "minimal")?;
    if sim.is_some() {
        write!(out, " {:>12} {:>9}", "simulated", "est/sim")?;
    }
    writeln!(out)?;
    let line = params.line_bytes as f64;
    let rows = |v: &footprint::DataVolumes| {
        [
            v.l1_load_requests,
            v.l1_wavefronts * line,
            v.l2_load,
            v.l2_store,
            v.dram_load,
            v.dram_store,
        ]
    };
    let names = [
        "L1 load requests",
        "L1 wavefronts",
        "L2 load",
        "L2 store",
        "DRAM load",
        "DRAM store",
    ];
    let minimal = [
        min_load,
        (min_load + min_store),
        min_load,
        min_store,
        min_load,
        min_store,
    ];
    let e = rows(&est);
    let s = sim.as_ref().map(rows);
    for i in 0..6 {
        write!(
            out,
            "{:<18} {:>8.2} B/LUP {:>6.2} B/LUP",
            names[i], e[i], minimal[i]
        )?;
        if let Some(s) = &s {
            let ratio = if s[i] > 0.0 {
                format!("{:.3}", e[i] / s[i])
            } else {
                "-".into()
            };
            write!(out, " {:>6.2} B/LUP {ratio:>9}", s[i])?;
        }
        writeln!(out)?;
    }
    writeln!(
        out,
        "(L1 wavefronts as wavefronts x {} B: {:.4} wavefronts/LUP)",
        params.line_bytes, est.l1_wavefronts
    )?;
    if !prog.local.is_empty() {
        let bytes: u32 = prog.local.iter().map(|l| l.bytes).sum();
        writeln!(
            out,
            "(the estimate counts the compiled code's {} stack accesses per thread, {bytes} bytes: register spills{})",
            prog.local.len(),
            if sim.is_some() {
                "; the simulator has no local memory"
            } else {
                ""
            }
        )?;
    }
    Ok(())
}

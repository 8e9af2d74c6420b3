//! Ranking: evaluate the whole configuration space in parallel, sort by predicted time, keep the
//! evidence of every prediction and the reason of every refusal. Pruned, it estimates in full only
//! the configurations whose lower bounds let them come near the best (see [`rank_configs`]).

use crate::config::{check_legal, enumerate, Illegal, LaunchConfig, SpaceOptions};
use crate::footprint::{CacheParams, Estimator, FootprintError, MemoryProgram};
use crate::ir::{Domain, Kernel};
use crate::machine::{MachineModel, Occupancy};
use crate::model::{capped, predict, KernelRegisters, Prediction, MAX_REGISTERS};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// The JSON format name and version of a ranking.
pub const RANKING_FORMAT: &str = "stencilscope-ranking";
/// Bumped whenever the JSON layout changes incompatibly (2: `ranked` holds only the
/// configurations estimated in full; a pruned ranking keeps the others in `bounded`).
pub const RANKING_VERSION: u32 = 2;

/// Why nothing could be ranked.
#[derive(Debug, thiserror::Error)]
pub enum RankError {
    /// Domain and kernel dimensions differ.
    #[error("the kernel is {kernel}D but the domain {domain} is {found}D")]
    Dims {
        /// Kernel dimensions.
        kernel: usize,
        /// The domain.
        domain: Domain,
        /// Domain dimensions.
        found: usize,
    },
    /// A domain extent smaller than the stencil.
    #[error("domain {domain} is smaller than the stencil: every extent must be at least {needed} (2 × radius {radius} + 1)")]
    DomainTooSmall {
        /// The domain.
        domain: Domain,
        /// Minimum extent.
        needed: usize,
        /// Stencil radius.
        radius: usize,
    },
    /// An explicitly requested configuration is not legal.
    #[error("configuration {config} is not legal on {machine}: {reason}")]
    IllegalConfig {
        /// The configuration.
        config: LaunchConfig,
        /// The machine.
        machine: String,
        /// The rule it breaks.
        reason: Illegal,
    },
    /// The estimator failed.
    #[error(transparent)]
    Footprint(#[from] FootprintError),
    /// A pruning margin that is not a factor of at least 1.
    #[error("pruning margin {0} must be a number of at least 1 (1.5: estimate in full every configuration that can come within 1.5× of the best)")]
    BadMargin(f64),
    /// No legal configuration at all.
    #[error("no legal configuration in the space ({count} enumerated)")]
    Empty {
        /// Configurations enumerated.
        count: usize,
    },
}

/// Knobs of a ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankOptions {
    /// The space to enumerate.
    pub space: SpaceOptions,
    /// Registers per thread; `None` estimates from the IR.
    pub registers: Option<usize>,
    /// Largest block extent per dimension of the target API (CUDA/OpenCL on NVIDIA: 1024, 1024, 64).
    pub max_extent: [usize; 3],
    /// Estimate in full only the configurations that can come near the best (`None`: every
    /// one).
    #[serde(default)]
    pub pruning: Option<Pruning>,
}

impl Default for RankOptions {
    fn default() -> RankOptions {
        RankOptions {
            space: SpaceOptions::default(),
            registers: None,
            max_extent: [1024, 1024, 64],
            pruning: None,
        }
    }
}

/// Which configurations a ranking estimates in full: every one whose lower bound (see
/// [`Estimator::bounds_program`]) is within `margin` of the best predicted time, or within the
/// `keep`-th best time. The others cannot be that fast, and keep their bounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pruning {
    /// Factor on the best predicted time (at least 1).
    pub margin: f64,
    /// The best configurations estimated in full however slow they are.
    pub keep: usize,
}

impl Pruning {
    /// The margin `rank` uses unless told otherwise: every configuration predicted within 1.5×
    /// of the best is estimated in full and ranked exactly.
    pub const DEFAULT_MARGIN: f64 = 1.5;

    /// Checks that the margin is a number of at least 1.
    pub fn check(&self) -> Result<(), RankError> {
        if self.margin.is_nan() || self.margin < 1.0 {
            return Err(RankError::BadMargin(self.margin));
        }
        Ok(())
    }
}

/// What a pruned ranking left out, and what it guarantees.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PruneSummary {
    /// The pruning asked for.
    pub pruning: Pruning,
    /// Every configuration not estimated in full is bounded above this time (seconds): the
    /// larger of `margin` × the best time and the `keep`-th best time.
    pub threshold_seconds: f64,
    /// The first `exact_ranks` of `ranked` (those predicted within the threshold) are the first
    /// of the full ranking, in its order, with the same predictions.
    pub exact_ranks: usize,
}

/// One ranked configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    /// 1-based rank.
    pub rank: usize,
    /// The configuration.
    pub config: LaunchConfig,
    /// The prediction and its evidence.
    pub prediction: Prediction,
}

/// A configuration not estimated in full: its prediction from the lower bounds of its volumes,
/// which the full estimate can only exceed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bounded {
    /// The configuration.
    pub config: LaunchConfig,
    /// The prediction at the lower bounds of the volumes: it takes at least `seconds`.
    pub bound: Prediction,
}

/// A configuration that is not a candidate, with the reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refused {
    /// The configuration.
    pub config: LaunchConfig,
    /// The rule it breaks.
    pub reason: Illegal,
}

/// A complete ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    /// `RANKING_FORMAT`.
    pub format: String,
    /// `RANKING_VERSION`.
    pub version: u32,
    /// Kernel name.
    pub kernel: String,
    /// Element type.
    pub dtype: crate::ir::Dtype,
    /// The domain.
    pub domain: Domain,
    /// The machine model used.
    pub machine: MachineModel,
    /// Minimal bytes per lattice update.
    pub min_bytes_per_lup: usize,
    /// Flops per lattice update.
    pub flops_per_lup: usize,
    /// The options.
    pub options: RankOptions,
    /// Legal configurations estimated in full, best first.
    pub ranked: Vec<Ranked>,
    /// Legal configurations a pruned ranking only bounded, fastest bound first.
    #[serde(default)]
    pub bounded: Vec<Bounded>,
    /// What the pruning left out (`None`: every legal configuration is in `ranked`).
    #[serde(default)]
    pub pruned: Option<PruneSummary>,
    /// Illegal configurations.
    pub refused: Vec<Refused>,
}

impl Ranking {
    /// Legal configurations, estimated in full or bounded.
    pub fn legal(&self) -> usize {
        self.ranked.len() + self.bounded.len()
    }
}

fn check_inputs(kernel: &Kernel, domain: &Domain) -> Result<(), RankError> {
    if domain.dims != kernel.dims {
        return Err(RankError::Dims {
            kernel: kernel.dims,
            domain: *domain,
            found: domain.dims,
        });
    }
    let r = kernel.radius();
    let needed = 2 * r + 1;
    if domain.size[..domain.dims].iter().any(|n| *n < needed) {
        return Err(RankError::DomainTooSmall {
            domain: *domain,
            needed,
            radius: r,
        });
    }
    Ok(())
}

/// A legal configuration with what its prediction needs besides the volumes.
#[derive(Debug, Clone)]
struct Admitted {
    config: LaunchConfig,
    registers: usize,
    occupancy: Occupancy,
    cache: CacheParams,
}

/// Checks `config` for legality and finds its registers and occupancy, or says why it is not
/// legal; also returns its memory program.
fn admit(
    regs: &KernelRegisters,
    kernel: &Kernel,
    domain: &Domain,
    machine: &MachineModel,
    config: &LaunchConfig,
    opts: &RankOptions,
) -> Result<Result<(Admitted, MemoryProgram), Illegal>, FootprintError> {
    if let Err(e) = check_legal(
        config,
        domain,
        machine.max_threads_per_block,
        opts.max_extent,
    ) {
        return Ok(Err(e));
    }
    // The program is built first: its plan of shared loads also serves the register estimate.
    let prog = MemoryProgram::new(kernel, domain, config)?;
    // Without a compiler's figure, a configuration whose live values do not fit in registers
    // would spill: left out rather than predicted without its local-memory traffic.
    let registers = match opts.registers {
        Some(r) => r,
        None => {
            let demand = regs.demand_with(kernel, config, &prog.sharing);
            if demand > MAX_REGISTERS as f64 {
                return Ok(Err(Illegal::RegisterSpill));
            }
            capped(demand)
        }
    };
    let occupancy = machine.occupancy(config.threads(), registers, 0);
    if occupancy.blocks_per_sm == 0 {
        return Ok(Err(Illegal::ZeroOccupancy));
    }
    let cache = CacheParams::from_machine(machine, config.threads(), occupancy.blocks_per_sm);
    Ok(Ok((
        Admitted {
            config: *config,
            registers,
            occupancy,
            cache,
        },
        prog,
    )))
}

/// Predicts an admitted configuration from the volumes `est` estimates for its program (or,
/// with `bound`, from their lower bounds).
fn predict_admitted(
    est: &mut Estimator,
    a: &Admitted,
    prog: &MemoryProgram,
    kernel: &Kernel,
    domain: &Domain,
    machine: &MachineModel,
    bound: bool,
) -> Result<Prediction, FootprintError> {
    let volumes = if bound {
        est.bounds_program(prog, &a.cache)?
    } else {
        est.estimate_program(prog, &a.cache)?
    };
    Ok(predict(
        kernel,
        &a.config,
        domain,
        machine,
        &volumes,
        a.occupancy,
        a.registers,
    ))
}

/// Predicts one explicitly chosen configuration; an illegal one is an error.
pub fn evaluate(
    kernel: &Kernel,
    domain: &Domain,
    machine: &MachineModel,
    config: &LaunchConfig,
    opts: &RankOptions,
) -> Result<Prediction, RankError> {
    check_inputs(kernel, domain)?;
    let regs = KernelRegisters::new(kernel);
    let (a, prog) = admit(&regs, kernel, domain, machine, config, opts)?.map_err(|reason| {
        RankError::IllegalConfig {
            config: *config,
            machine: machine.name.clone(),
            reason,
        }
    })?;
    let mut est = Estimator::default();
    Ok(predict_admitted(
        &mut est, &a, &prog, kernel, domain, machine, false,
    )?)
}

/// Ranks the whole space of `kernel` on `domain` and `machine`.
pub fn rank(
    kernel: &Kernel,
    domain: &Domain,
    machine: &MachineModel,
    opts: &RankOptions,
) -> Result<Ranking, RankError> {
    rank_configs(
        kernel,
        domain,
        machine,
        &enumerate(domain, &opts.space),
        opts,
    )
}

/// One estimator per worker thread for a whole ranking: its buffers and caches (the grid-wide
/// unions, the totals per tile, the row patterns) serve every configuration the thread evaluates
/// (`map_init` would start afresh for every piece of the split work: dozens with two threads).
struct Estimators(Vec<Mutex<Estimator>>);

impl Estimators {
    fn new() -> Estimators {
        Estimators(
            (0..rayon::current_num_threads())
                .map(|_| Mutex::default())
                .collect(),
        )
    }

    /// Runs `f` with this worker's estimator. A worker evaluates one configuration at a time, so
    /// its estimator is free; were it not, a fresh one does.
    fn with<T>(&self, f: impl FnOnce(&mut Estimator) -> T) -> T {
        let worker = rayon::current_thread_index().unwrap_or(0) % self.0.len();
        match self.0[worker].try_lock() {
            Ok(mut est) => f(&mut est),
            Err(_) => f(&mut Estimator::default()),
        }
    }
}

/// Ranks the given configurations instead of the enumerated space (`opts.space` is recorded but
/// not used): a reduced space, or the configurations a benchmark measured.
///
/// With `opts.pruning`, every configuration is first bounded (a fraction of an estimate's cost);
/// then, in order of their bounds, configurations are estimated in full until the next bound
/// exceeds the pruning's threshold, which only falls as better times are found. A configuration
/// left out is bounded above the final threshold, so every configuration predicted within it is
/// estimated, and the ranking up to it is the full ranking's.
pub fn rank_configs(
    kernel: &Kernel,
    domain: &Domain,
    machine: &MachineModel,
    space: &[LaunchConfig],
    opts: &RankOptions,
) -> Result<Ranking, RankError> {
    check_inputs(kernel, domain)?;
    if let Some(p) = &opts.pruning {
        p.check()?;
    }
    let regs = KernelRegisters::new(kernel);
    let estimators = Estimators::new();
    let bound = opts.pruning.is_some();
    // Legality for all; with pruning, the bound of each legal configuration, else its estimate.
    type Outcome = (Admitted, Prediction);
    let outcomes: Vec<Result<Outcome, Refused>> = space
        .par_iter()
        .map(|c| {
            Ok(match admit(&regs, kernel, domain, machine, c, opts)? {
                Ok((a, prog)) => {
                    let p = estimators.with(|est| {
                        predict_admitted(est, &a, &prog, kernel, domain, machine, bound)
                    })?;
                    Ok((a, p))
                }
                Err(reason) => Err(Refused { config: *c, reason }),
            })
        })
        .collect::<Result<_, FootprintError>>()?;
    let mut refused = Vec::new();
    let mut legal = Vec::new();
    for o in outcomes {
        match o {
            Ok(x) => legal.push(x),
            Err(r) => refused.push(r),
        }
    }
    if legal.is_empty() {
        return Err(RankError::Empty { count: space.len() });
    }
    legal.sort_by(by_time);
    // Both come sorted by time.
    let (estimated, bounded, pruned) = match opts.pruning {
        None => (legal, Vec::new(), None),
        Some(pruning) => {
            let (estimated, bounded, summary) =
                estimate_within(legal, pruning, &estimators, kernel, domain, machine)?;
            (estimated, bounded, Some(summary))
        }
    };
    let ranked = estimated
        .into_iter()
        .enumerate()
        .map(|(i, (a, prediction))| Ranked {
            rank: i + 1,
            config: a.config,
            prediction,
        })
        .collect();
    let bounded = bounded
        .into_iter()
        .map(|(a, bound)| Bounded {
            config: a.config,
            bound,
        })
        .collect();
    Ok(Ranking {
        format: RANKING_FORMAT.into(),
        version: RANKING_VERSION,
        kernel: kernel.name.clone(),
        dtype: kernel.dtype(),
        domain: *domain,
        machine: machine.clone(),
        min_bytes_per_lup: kernel.min_bytes_per_lup(),
        flops_per_lup: kernel.flops().total(),
        options: opts.clone(),
        ranked,
        bounded,
        pruned,
        refused,
    })
}

/// The order of a ranking, deterministic: time first, then the configuration's own order.
fn by_time(a: &(Admitted, Prediction), b: &(Admitted, Prediction)) -> std::cmp::Ordering {
    a.1.seconds
        .total_cmp(&b.1.seconds)
        .then(a.0.config.cmp(&b.0.config))
}

/// Configurations a pruned ranking estimates per round, between two updates of its threshold:
/// fixed, so that which configurations are estimated does not depend on the threads running it.
const PRUNE_ROUND: usize = 64;

/// The estimates of the configurations of `bounded` (sorted by their bounds) that can come
/// within `pruning`'s threshold, sorted by time, the bounds of the others, and what that
/// guarantees.
#[allow(clippy::type_complexity)]
fn estimate_within(
    bounded: Vec<(Admitted, Prediction)>,
    pruning: Pruning,
    estimators: &Estimators,
    kernel: &Kernel,
    domain: &Domain,
    machine: &MachineModel,
) -> Result<
    (
        Vec<(Admitted, Prediction)>,
        Vec<(Admitted, Prediction)>,
        PruneSummary,
    ),
    RankError,
> {
    let mut estimated: Vec<(Admitted, Prediction)> = Vec::new();
    // `estimated` is kept sorted; fewer than `keep` estimates leave the threshold open.
    let threshold = |estimated: &[(Admitted, Prediction)]| -> f64 {
        let time = |i: usize| estimated.get(i).map_or(f64::INFINITY, |e| e.1.seconds);
        let kth = if pruning.keep == 0 {
            0.0
        } else {
            time(pruning.keep - 1)
        };
        (pruning.margin * time(0)).max(kth)
    };
    let mut done = 0;
    while done < bounded.len() && bounded[done].1.seconds <= threshold(&estimated) {
        let end = (done + PRUNE_ROUND).min(bounded.len());
        let round_estimates: Vec<(Admitted, Prediction)> = bounded[done..end]
            .par_iter()
            .map(|(a, _)| {
                let prog = MemoryProgram::new(kernel, domain, &a.config)?;
                let p = estimators
                    .with(|est| predict_admitted(est, a, &prog, kernel, domain, machine, false))?;
                Ok((a.clone(), p))
            })
            .collect::<Result<_, FootprintError>>()?;
        estimated.extend(round_estimates);
        estimated.sort_by(by_time);
        done = end;
    }
    let threshold_seconds = threshold(&estimated);
    let exact_ranks = estimated
        .iter()
        .filter(|e| e.1.seconds <= threshold_seconds)
        .count();
    let rest = bounded.into_iter().skip(done).collect();
    Ok((
        estimated,
        rest,
        PruneSummary {
            pruning,
            threshold_seconds,
            exact_ranks,
        },
    ))
}

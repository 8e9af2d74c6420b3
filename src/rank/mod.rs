//! Ranking: evaluate the whole configuration space in parallel, sort by predicted time, keep the
//! evidence of every prediction and the reason of every refusal.

use crate::config::{check_legal, enumerate, Illegal, LaunchConfig, SpaceOptions};
use crate::footprint::{CacheParams, Estimator, FootprintError, MemoryProgram};
use crate::ir::{Domain, Kernel};
use crate::machine::MachineModel;
use crate::model::{capped, predict, KernelRegisters, Prediction, MAX_REGISTERS};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// The JSON format name and version of a ranking.
pub const RANKING_FORMAT: &str = "stencilscope-ranking";
/// Bumped whenever the JSON layout changes incompatibly.
pub const RANKING_VERSION: u32 = 1;

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
}

impl Default for RankOptions {
    fn default() -> RankOptions {
        RankOptions {
            space: SpaceOptions::default(),
            registers: None,
            max_extent: [1024, 1024, 64],
        }
    }
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
    /// Legal configurations, best first.
    pub ranked: Vec<Ranked>,
    /// Illegal configurations.
    pub refused: Vec<Refused>,
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

/// Predicts one configuration with `est`, or says why it is not legal.
fn evaluate_one(
    est: &mut Estimator,
    regs: &KernelRegisters,
    kernel: &Kernel,
    domain: &Domain,
    machine: &MachineModel,
    config: &LaunchConfig,
    opts: &RankOptions,
) -> Result<Result<Prediction, Illegal>, FootprintError> {
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
    let volumes = est.estimate_program(&prog, &cache)?;
    Ok(Ok(predict(
        kernel, config, domain, machine, &volumes, occupancy, registers,
    )))
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
    let mut est = Estimator::default();
    evaluate_one(
        &mut est,
        &KernelRegisters::new(kernel),
        kernel,
        domain,
        machine,
        config,
        opts,
    )?
    .map_err(|reason| RankError::IllegalConfig {
        config: *config,
        machine: machine.name.clone(),
        reason,
    })
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

/// Ranks the given configurations instead of the enumerated space (`opts.space` is recorded but
/// not used): a reduced space, or the configurations a benchmark measured.
pub fn rank_configs(
    kernel: &Kernel,
    domain: &Domain,
    machine: &MachineModel,
    space: &[LaunchConfig],
    opts: &RankOptions,
) -> Result<Ranking, RankError> {
    check_inputs(kernel, domain)?;
    let regs = KernelRegisters::new(kernel);
    // One estimator per worker thread for the whole ranking: its buffers and caches (the
    // grid-wide unions, the totals per tile, the row patterns) serve every configuration the
    // thread evaluates (`map_init` would start afresh for every piece of the split work: dozens
    // with two threads). A worker evaluates one configuration at a time, so its estimator is
    // free; were it not, a fresh one does.
    let estimators: Vec<Mutex<Estimator>> = (0..rayon::current_num_threads())
        .map(|_| Mutex::default())
        .collect();
    let outcomes: Vec<(LaunchConfig, Result<Prediction, Illegal>)> = space
        .par_iter()
        .map(|c| {
            let worker = rayon::current_thread_index().unwrap_or(0) % estimators.len();
            let outcome = match estimators[worker].try_lock() {
                Ok(mut est) => evaluate_one(&mut est, &regs, kernel, domain, machine, c, opts),
                Err(_) => evaluate_one(
                    &mut Estimator::default(),
                    &regs,
                    kernel,
                    domain,
                    machine,
                    c,
                    opts,
                ),
            };
            outcome.map(|o| (*c, o))
        })
        .collect::<Result<_, _>>()?;
    let mut ranked = Vec::new();
    let mut refused = Vec::new();
    for (config, o) in outcomes {
        match o {
            Ok(prediction) => ranked.push(Ranked {
                rank: 0,
                config,
                prediction,
            }),
            Err(reason) => refused.push(Refused { config, reason }),
        }
    }
    if ranked.is_empty() {
        return Err(RankError::Empty { count: space.len() });
    }
    // Deterministic: time first, then the configuration's own order.
    ranked.sort_by(|a, b| {
        a.prediction
            .seconds
            .total_cmp(&b.prediction.seconds)
            .then(a.config.cmp(&b.config))
    });
    for (i, r) in ranked.iter_mut().enumerate() {
        r.rank = i + 1;
    }
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
        refused,
    })
}

//! Hardware-counter validation of the estimated data volumes (issue 8).
//!
//! The CUDA twin of each configuration runs under Nsight Compute (`ncu`); the counters, per
//! lattice update, are set beside the footprint visitor's estimate for the same kernel, domain
//! and configuration.
//!
//! How the twin is run, and why:
//! - `stencilscope counters` runs `ncu … stencilscope counters-twin PLAN`: one process per kernel
//!   file that compiles (NVRTC, the same emitted source and options as `run --backend cuda`) and
//!   launches every configuration once, each kernel under its own entry name
//!   (`ssk_32x4x2_1x1x2`, see [`entry_name`]), so ncu's CSV says which configuration each row is.
//! - **Application replay, no cache control.** L2 is write-back: when a kernel ends, up to an L2's
//!   worth of its stores is still dirty in L2 and never reaches `dram__bytes_write` within the
//!   kernel. ncu's default kernel replay flushes the caches *before* each pass, outside the
//!   measurement, so those bytes would be lost. Instead the twin runs an eviction kernel
//!   (`ssflush`, reading a buffer of several L2 sizes) after every stencil launch, ncu profiles
//!   both, and the DRAM store volume is the kernel's writes plus the write-backs the eviction
//!   kernel causes. The same eviction before each launch leaves L2 holding none of the kernel's
//!   data (cold, as the estimate assumes). Since caches are then managed by the twin,
//!   `--cache-control none`, and `--replay-mode application` re-runs the whole twin per pass so
//!   that every pass sees the same cache history (kernel replay would restore memory between
//!   passes, through L2). `--clock-control none` leaves the clocks alone.
//! - Levels compared (per lattice update, the domain's points): L1 load requests
//!   (`l1tex__t_sectors_pipe_lsu_mem_global_op_ld` × 32 B), L1 wavefronts (data-stage
//!   wavefronts of global loads and stores, a count), L2 load and store
//!   (`lts__t_sectors_srcunit_tex_op_read`/`_write` × 32 B), DRAM load and store
//!   (`dram__bytes_read`/`_write`, the store including the eviction kernel's write-backs).
//! - The estimate uses the registers the compiled kernel really has
//!   (`launch__registers_per_thread`) for the occupancy, so that a wrong register guess does not
//!   pass for a volume error.

pub mod ncu;
mod order;
pub mod sass;
mod select;
#[cfg(feature = "cuda")]
pub mod twin;

pub use order::{CompiledOrder, CompiledOrders};
pub use select::{parse_config_list, select_configs, ConfigSpec};

use crate::config::LaunchConfig;
use crate::footprint::{self, CacheParams, DataVolumes, FootprintError};
use crate::ir::{Domain, Dtype, Kernel};
use crate::machine::MachineModel;
use ncu::ProfiledLaunch;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The JSON format name of a counter sweep.
pub const COUNTERS_FORMAT: &str = "stencilscope-counters";
/// Bumped whenever the JSON layout changes incompatibly.
pub const COUNTERS_VERSION: u32 = 1;
/// Entry-point prefix of the twin's stencil kernels.
pub const ENTRY_PREFIX: &str = "ssk_";
/// Name of the twin's L2 eviction kernel.
pub const FLUSH_KERNEL: &str = "ssflush";
/// Relative error counted as agreement.
pub const TOLERANCE: f64 = 0.10;

/// Everything that can go wrong in a counter sweep.
#[derive(Debug, thiserror::Error)]
pub enum CountersError {
    /// No ncu executable.
    #[error("Nsight Compute (ncu) is not installed or not found (searched: {searched}); install the CUDA toolkit's Nsight Compute, or pass --ncu PATH")]
    NcuMissing {
        /// Where it was looked for.
        searched: String,
    },
    /// ncu ran but failed.
    #[error("`{command}` failed ({status}); the end of its output:\n{tail}")]
    NcuFailed {
        /// The command line.
        command: String,
        /// Exit status.
        status: String,
        /// The last lines of its output.
        tail: String,
    },
    /// ncu may not read the GPU's performance counters as this user (`ERR_NVGPUCTRPERM`).
    #[error("ncu may not read the GPU's performance counters as this user (ERR_NVGPUCTRPERM, in {}); run the sweep as root, or let every user profile: load the NVIDIA driver with `NVreg_RestrictProfilingToAdminUsers=0` (https://developer.nvidia.com/ERR_NVGPUCTRPERM)", log.display())]
    NcuPermission {
        /// ncu's log, which names the error.
        log: PathBuf,
    },
    /// ncu's CSV could not be read.
    #[error("ncu CSV, line {line}: {message}")]
    Csv {
        /// 1-based line (0: the whole file).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The CSV holds no profiled launch.
    #[error("the ncu CSV holds no profiled kernel launch (did the kernel-name filter match?)")]
    NoProfiledKernels,
    /// The CSV holds no launch of the twin's stencil kernels.
    #[error("no launch in the ncu CSV is one of the twin's kernels (names starting with `{ENTRY_PREFIX}`)")]
    NoTwinKernels,
    /// An L2 fetch size the machine cannot fetch.
    #[error("an L2 fetch of {bytes} bytes is not the machine's {sector}-byte sectors times a power of two, up to its {line}-byte line")]
    Fetch {
        /// The size asked for.
        bytes: usize,
        /// The machine's sector.
        sector: usize,
        /// The machine's line.
        line: usize,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A compiled-orders file (`--compiled-order`) that cannot be read.
    #[error("{}, line {line}: {message}", path.display())]
    CompiledOrders {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A compiled order that names other instructions than the estimate's program issues.
    #[error("{}: the order of {configuration} does not fit the program the estimate builds ({source}); was it taken from another emitter's code?", path.display())]
    CompiledOrderMismatch {
        /// The file.
        path: PathBuf,
        /// The configuration and its twin's entry name.
        configuration: String,
        /// What does not fit.
        source: FootprintError,
    },
    /// A `--configs` value that is neither `top:K`, `sample:N` nor a readable list.
    #[error("--configs {0}")]
    BadConfigSpec(String),
    /// The estimator failed.
    #[error(transparent)]
    Footprint(#[from] FootprintError),
    /// Ranking (for `top:K`) failed.
    #[error(transparent)]
    Rank(Box<crate::rank::RankError>),
    /// JSON could not be read or written.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The twin needs the CUDA backend.
    #[error("the CUDA twin needs a build with `--features cuda`")]
    NoCudaFeature,
    /// The twin failed on the device.
    #[error("CUDA twin: {0}")]
    Twin(String),
}

impl From<crate::rank::RankError> for CountersError {
    fn from(e: crate::rank::RankError) -> CountersError {
        CountersError::Rank(Box::new(e))
    }
}

/// The entry-point name of the twin kernel of `config`: `ssk_<block>_<fold>`, e.g.
/// `ssk_32x4x2_1x1x2`.
pub fn entry_name(config: &LaunchConfig) -> String {
    let [bx, by, bz] = config.block;
    let [fx, fy, fz] = config.fold;
    format!("{ENTRY_PREFIX}{bx}x{by}x{bz}_{fx}x{fy}x{fz}")
}

/// The configuration an entry name stands for (`None` for any other kernel name).
pub fn parse_entry_name(name: &str) -> Option<LaunchConfig> {
    let rest = name.strip_prefix(ENTRY_PREFIX)?;
    let (b, f) = rest.split_once('_')?;
    let three = |s: &str| -> Option<[usize; 3]> {
        let v: Vec<usize> = s
            .split('x')
            .map(|p| p.parse::<usize>().ok().filter(|n| *n > 0))
            .collect::<Option<_>>()?;
        v.try_into().ok()
    };
    Some(LaunchConfig::new(three(b)?, three(f)?))
}

/// A memory level (or the L1 wavefront count) as compared here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Bytes requested from L1 by global loads (distinct sectors per warp instruction).
    L1LoadRequests,
    /// L1 data-stage wavefronts of global loads and stores (a count).
    L1Wavefronts,
    /// Bytes L1 requests from L2 for loads.
    L2Load,
    /// Bytes stored to L2.
    L2Store,
    /// Bytes read from DRAM.
    DramLoad,
    /// Bytes written to DRAM.
    DramStore,
}

impl Level {
    /// Every level, from L1 outwards.
    pub const ALL: [Level; 6] = [
        Level::L1LoadRequests,
        Level::L1Wavefronts,
        Level::L2Load,
        Level::L2Store,
        Level::DramLoad,
        Level::DramStore,
    ];

    /// Human-readable name.
    pub fn name(self) -> &'static str {
        match self {
            Level::L1LoadRequests => "L1 load requests",
            Level::L1Wavefronts => "L1 wavefronts",
            Level::L2Load => "L2 load",
            Level::L2Store => "L2 store",
            Level::DramLoad => "DRAM load",
            Level::DramStore => "DRAM store",
        }
    }

    /// Unit of the per-update figure.
    pub fn unit(self) -> &'static str {
        match self {
            Level::L1Wavefronts => "wavefronts/LUP",
            _ => "B/LUP",
        }
    }

    /// The estimator's figure for this level.
    pub fn estimate(self, v: &DataVolumes) -> f64 {
        match self {
            Level::L1LoadRequests => v.l1_load_requests,
            Level::L1Wavefronts => v.l1_wavefronts,
            Level::L2Load => v.l2_load,
            Level::L2Store => v.l2_store,
            Level::DramLoad => v.dram_load,
            Level::DramStore => v.dram_store,
        }
    }
}

/// Measured volumes per lattice update, one per level (`None`: not measured).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Measured {
    /// L1 load requests, B/LUP.
    pub l1_load_requests: Option<f64>,
    /// L1 wavefronts per LUP.
    pub l1_wavefronts: Option<f64>,
    /// L2 load, B/LUP.
    pub l2_load: Option<f64>,
    /// L2 store, B/LUP.
    pub l2_store: Option<f64>,
    /// DRAM load, B/LUP.
    pub dram_load: Option<f64>,
    /// DRAM store (the kernel's writes plus the write-backs after it), B/LUP.
    pub dram_store: Option<f64>,
}

impl Measured {
    /// The figure of one level.
    pub fn get(&self, level: Level) -> Option<f64> {
        match level {
            Level::L1LoadRequests => self.l1_load_requests,
            Level::L1Wavefronts => self.l1_wavefronts,
            Level::L2Load => self.l2_load,
            Level::L2Store => self.l2_store,
            Level::DramLoad => self.dram_load,
            Level::DramStore => self.dram_store,
        }
    }

    /// Normalises one kernel launch's counters (and the following eviction kernel's, for the
    /// write-backs) by `updates` lattice updates. `wavefronts` are the metrics summed into the
    /// wavefront count.
    pub fn from_counters(
        kernel: &BTreeMap<String, f64>,
        flush: Option<&BTreeMap<String, f64>>,
        wavefronts: &[String],
        updates: f64,
        sector_bytes: f64,
    ) -> Measured {
        let per = |v: Option<f64>| v.map(|v| v / updates);
        let m = |name: &str| kernel.get(name).copied();
        let sectors = |name: &str| m(name).map(|s| s * sector_bytes);
        let wf = if wavefronts.is_empty() {
            None
        } else {
            wavefronts.iter().map(|w| m(w)).sum::<Option<f64>>()
        };
        let after = flush.and_then(|f| f.get(ncu::DRAM_WRITE).copied());
        Measured {
            l1_load_requests: per(sectors(ncu::L1_LOAD_SECTORS)),
            l1_wavefronts: per(wf),
            l2_load: per(sectors(ncu::L2_READ_SECTORS)),
            l2_store: per(sectors(ncu::L2_WRITE_SECTORS)),
            dram_load: per(m(ncu::DRAM_READ)),
            dram_store: per(m(ncu::DRAM_WRITE).map(|w| w + after.unwrap_or(0.0))),
        }
    }
}

/// Relative error of an estimate against a measurement: `(estimate − measured) / measured`
/// (`None` where nothing, or zero, was measured).
pub fn relative_error(estimate: f64, measured: Option<f64>) -> Option<f64> {
    let m = measured?;
    (m > 0.0 && estimate.is_finite()).then(|| (estimate - m) / m)
}

/// One configuration: estimate, measurement and the raw counters behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigRecord {
    /// The launch configuration.
    pub config: LaunchConfig,
    /// The twin's entry-point name.
    pub entry: String,
    /// Registers per thread used for the occupancy (the compiled kernel's where ncu reported
    /// them).
    pub registers: usize,
    /// Where `registers` comes from.
    pub registers_from: String,
    /// Resident blocks per SM from the machine model's occupancy calculation.
    pub blocks_per_sm: usize,
    /// The L1 capacity the estimate took: what the launch's shared-memory configuration (as ncu
    /// reported it) leaves of the SM's L1 and shared memory, else the machine's `l1_bytes`.
    #[serde(default)]
    pub l1_bytes: usize,
    /// Whether the estimate took the compiled code's issue order (`--compiled-order`), not the
    /// emitted one.
    #[serde(default)]
    pub compiled_order: bool,
    /// Local memory per thread of the compiled kernel (spilled values), where the twin recorded
    /// it: its loads and stores pass L1 and L2 and are in the counters; in the estimate where
    /// the compiled order gave them (`stack_accesses`).
    #[serde(default)]
    pub local_bytes: Option<usize>,
    /// The stack accesses (spilled registers' `STL`/`LDL`) per thread the estimate followed,
    /// from the compiled order (0: none, or no compiled order).
    #[serde(default)]
    pub stack_accesses: usize,
    /// The share of the fold points storing several words whose compiled stores go out back to
    /// back (`MemoryProgram::stores_back_to_back`), where the compiled order gave the places of
    /// its accesses; `None` where it did not.
    #[serde(default)]
    pub stores_back_to_back: Option<f64>,
    /// How much of a fold point's compiled instructions its stores span
    /// (`MemoryProgram::store_span_share`), where the compiled order gave the places; `None`
    /// where it did not.
    #[serde(default)]
    pub store_span_share: Option<f64>,
    /// Kernel duration under the profiler, seconds.
    pub duration_s: Option<f64>,
    /// The footprint visitor's volumes.
    pub estimate: DataVolumes,
    /// The counters' volumes.
    pub measured: Measured,
    /// Relative error per level, in [`Level::ALL`] order.
    pub errors: Vec<Option<f64>>,
    /// The kernel launch's counters in base units.
    pub counters: BTreeMap<String, f64>,
    /// The following eviction kernel's counters (its `dram__bytes_write` are this kernel's
    /// dirty lines written back).
    pub flush_counters: Option<BTreeMap<String, f64>>,
}

/// The error distribution of one level over a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorSummary {
    /// The level.
    pub level: Level,
    /// Configurations with a measurement.
    pub count: usize,
    /// Quantiles of the signed relative error: 0, 10, 50, 90 and 100 %.
    pub signed_quantiles: [f64; 5],
    /// Median of |error|.
    pub median_abs: f64,
    /// 90th percentile of |error|.
    pub p90_abs: f64,
    /// Largest |error|.
    pub max_abs: f64,
    /// Share of configurations with |error| ≤ [`TOLERANCE`].
    pub within_tolerance: f64,
    /// The configuration with the largest |error|.
    pub worst: Option<LaunchConfig>,
}

/// The `q`-quantile (0..=1) of sorted values, interpolating linearly.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (i, f) = (pos.floor() as usize, pos.fract());
    if i + 1 < sorted.len() {
        sorted[i] + f * (sorted[i + 1] - sorted[i])
    } else {
        sorted[i]
    }
}

/// Summarises the errors of every level over `records`.
pub fn summarize(records: &[ConfigRecord]) -> Vec<ErrorSummary> {
    Level::ALL
        .iter()
        .enumerate()
        .filter_map(|(i, &level)| {
            let errs: Vec<(f64, LaunchConfig)> = records
                .iter()
                .filter_map(|r| r.errors.get(i).copied().flatten().map(|e| (e, r.config)))
                .collect();
            if errs.is_empty() {
                return None;
            }
            let mut signed: Vec<f64> = errs.iter().map(|e| e.0).collect();
            signed.sort_by(f64::total_cmp);
            let mut abs: Vec<f64> = signed.iter().map(|e| e.abs()).collect();
            abs.sort_by(f64::total_cmp);
            let worst = errs
                .iter()
                .max_by(|a, b| a.0.abs().total_cmp(&b.0.abs()))
                .map(|e| e.1);
            Some(ErrorSummary {
                level,
                count: errs.len(),
                signed_quantiles: [0.0, 0.1, 0.5, 0.9, 1.0].map(|q| quantile(&signed, q)),
                median_abs: quantile(&abs, 0.5),
                p90_abs: quantile(&abs, 0.9),
                max_abs: *abs.last().unwrap_or(&f64::NAN),
                // A hair of slack so that exactly 10 % (after rounding to B/LUP) counts.
                within_tolerance: abs.iter().filter(|e| **e <= TOLERANCE + 1e-9).count() as f64
                    / abs.len() as f64,
                worst,
            })
        })
        .collect()
}

/// The device as the twin saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceDesc {
    /// Device name.
    pub name: String,
    /// Compute capability, e.g. `9.0`.
    pub compute_capability: String,
    /// CUDA driver API version, e.g. `13.0`.
    pub driver_api: String,
    /// Streaming multiprocessors.
    pub sms: usize,
    /// L2 size the driver reports, bytes.
    pub l2_bytes: usize,
}

/// What the twin writes beside its run: the device and each kernel's compiled facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TwinInfo {
    /// The device.
    pub device: DeviceDesc,
    /// Bytes the eviction kernel reads.
    pub flush_bytes: usize,
    /// Per configuration: entry name and registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub kernels: Vec<(String, usize)>,
    /// NVRTC's options for the stencil kernels besides `--gpu-architecture` (empty in the
    /// sweeps taken before the twin compiled with `run --backend cuda`'s float options).
    #[serde(default)]
    pub nvrtc_options: Vec<String>,
    /// Per configuration: entry name and local memory per thread in bytes
    /// (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`: the stack of values the compiler spilled); not
    /// recorded by the sweeps taken before.
    #[serde(default)]
    pub local_bytes: Vec<(String, usize)>,
}

/// What the twin is told to run (written as JSON by `counters`, read by `counters-twin`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TwinPlan {
    /// The stencil or LBM file.
    pub file: PathBuf,
    /// Element type (applied to the file's kernel).
    pub dtype: Dtype,
    /// AA step (`even`/`odd`), for LBM files.
    pub step: Option<String>,
    /// The domain.
    pub domain: Domain,
    /// Configurations, launched in this order.
    pub configs: Vec<LaunchConfig>,
    /// The eviction buffer in L2 sizes.
    pub flush_factor: usize,
    /// `CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT` of the stencil kernels, percent of
    /// the largest shared-memory carve-out (0: largest L1); `None` leaves the driver's choice.
    #[serde(default)]
    pub carveout: Option<u32>,
    /// `CU_LIMIT_MAX_L2_FETCH_GRANULARITY` of the twin's context in bytes; `None` leaves the
    /// driver's.
    #[serde(default)]
    pub l2_fetch_bytes: Option<u32>,
    /// Compile and load every configuration, write the [`TwinInfo`] and stop, launching
    /// nothing (run once outside ncu, with the driver's JIT cache in a folder of its own, so
    /// that the SASS the profiled kernels run can be read: [`sass`]).
    #[serde(default)]
    pub compile_only: bool,
    /// Where compiled PTX is kept between replay passes.
    pub ptx_cache: PathBuf,
    /// Where the twin writes its [`TwinInfo`].
    pub info: PathBuf,
}

/// A whole sweep: what was run, on what, and the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountersSweep {
    /// [`COUNTERS_FORMAT`].
    pub format: String,
    /// [`COUNTERS_VERSION`].
    pub version: u32,
    /// Kernel name.
    pub kernel: String,
    /// Element type.
    pub dtype: Dtype,
    /// The domain.
    pub domain: Domain,
    /// Lattice updates per launch (the normalisation).
    pub updates: usize,
    /// Minimal bytes per update (loads, stores).
    pub minimal: (f64, f64),
    /// The machine model the estimates use.
    pub machine: String,
    /// The device, where known.
    pub device: Option<DeviceDesc>,
    /// `ncu --version`, where it ran.
    pub ncu_version: Option<String>,
    /// The metrics summed into the wavefront count.
    pub wavefront_metrics: Vec<String>,
    /// The ncu command line of the profiling run.
    pub ncu_command: Option<String>,
    /// The stencilscope command line.
    pub command: String,
    /// Source revision, where known.
    pub commit: Option<String>,
    /// When the sweep was analysed (UTC, ISO 8601).
    pub date: String,
    /// Bytes read by the eviction kernel.
    pub flush_bytes: Option<usize>,
    /// The preferred shared-memory carve-out the twin set (percent), if any.
    #[serde(default)]
    pub carveout: Option<u32>,
    /// The L2 fetch size limit the twin set (bytes), if any.
    #[serde(default)]
    pub l2_fetch_bytes: Option<u32>,
    /// The shared-memory configuration ncu reported per launch (bytes; L1 is the rest), where
    /// all launches agree.
    #[serde(default)]
    pub shared_config_bytes: Option<f64>,
    /// One record per configuration.
    pub records: Vec<ConfigRecord>,
    /// Error distribution per level.
    pub summary: Vec<ErrorSummary>,
    /// Observations (missing counters, eviction checks).
    pub notes: Vec<String>,
}

/// Inputs of [`compare`] besides the profiled launches.
pub struct CompareInput<'a> {
    /// The kernel.
    pub kernel: &'a Kernel,
    /// The domain it ran on.
    pub domain: &'a Domain,
    /// The machine model for the estimate.
    pub machine: &'a MachineModel,
    /// Registers per thread where ncu did not report them (e.g. the twin's figures).
    pub fallback_registers: &'a dyn Fn(&LaunchConfig) -> (usize, String),
    /// The compiled code's issue orders, for the configurations they name (the estimate of the
    /// others takes the emitted order).
    pub compiled_orders: Option<&'a CompiledOrders>,
}

/// `records` with the local memory the twin recorded for each (`TwinInfo::local_bytes`), and a
/// note naming those that spill: their counters hold local loads and stores the estimate does
/// not (`model::spills`).
pub fn attach_local_bytes(
    mut records: Vec<ConfigRecord>,
    twin: Option<&TwinInfo>,
) -> (Vec<ConfigRecord>, Option<String>) {
    let Some(twin) = twin.filter(|t| !t.local_bytes.is_empty()) else {
        return (records, None);
    };
    for r in &mut records {
        r.local_bytes = twin
            .local_bytes
            .iter()
            .find(|(e, _)| *e == r.entry)
            .map(|(_, b)| *b);
    }
    let spilled = |followed: bool| -> Vec<String> {
        records
            .iter()
            .filter_map(|r| match r.local_bytes {
                Some(b) if b > 0 && (r.stack_accesses > 0) == followed => {
                    Some(format!("{} ({b} B)", r.config))
                }
                _ => None,
            })
            .collect()
    };
    let (with, without) = (spilled(true), spilled(false));
    let mut parts = Vec::new();
    if !with.is_empty() {
        parts.push(format!(
            "the estimate follows their stack accesses from the compiled order: {}",
            with.join(", ")
        ));
    }
    if !without.is_empty() {
        parts.push(format!(
            "their L1, L2 and DRAM counters include loads and stores the estimate leaves out (no stack accesses in a compiled order): {}",
            without.join(", ")
        ));
    }
    let note = (!parts.is_empty()).then(|| {
        format!(
            "{} of {} configurations keep values in local memory (spilled registers, bytes per thread); {}",
            with.len() + without.len(),
            records.len(),
            parts.join("; ")
        )
    });
    (records, note)
}

/// Pairs each twin kernel launch with the eviction launch after it, estimates its volumes and
/// computes the errors. Launches of other kernels are ignored; a configuration profiled twice
/// keeps its first launch.
pub fn compare(
    launches: &[ProfiledLaunch],
    input: &CompareInput,
) -> Result<(Vec<ConfigRecord>, Vec<String>), CountersError> {
    let mut notes = Vec::new();
    let mut records: Vec<ConfigRecord> = Vec::new();
    let updates = input.domain.points() as f64;
    let sector = input.machine.sector_bytes as f64;
    let mut estimator = footprint::Estimator::default();
    for (i, l) in launches.iter().enumerate() {
        let Some(config) = parse_entry_name(&l.kernel) else {
            continue;
        };
        if records.iter().any(|r| r.config == config) {
            notes.push(format!(
                "{} was profiled more than once; the first launch is used",
                l.kernel
            ));
            continue;
        }
        let flush = launches
            .get(i + 1)
            .filter(|n| n.kernel == FLUSH_KERNEL)
            .map(|n| n.metrics.clone());
        if flush.is_none() {
            notes.push(format!(
                "{}: no eviction kernel follows it, so its DRAM store counts only the write-backs within the kernel",
                l.kernel
            ));
        }
        let wavefronts = ncu::MetricSet::wavefronts_in(&l.metrics);
        let measured =
            Measured::from_counters(&l.metrics, flush.as_ref(), &wavefronts, updates, sector);
        let (registers, registers_from) = match ncu::lookup(&l.metrics, ncu::REGISTERS) {
            Some((name, r)) if r >= 1.0 => (r as usize, format!("ncu {name}")),
            _ => (input.fallback_registers)(&config),
        };
        let occ = input
            .machine
            .occupancy(config.threads(), registers, 0)
            .blocks_per_sm;
        // The kernel ran, so at least one block was resident: a zero comes from a model limit.
        let blocks_per_sm = occ.max(1);
        // The driver picks the shared-memory configuration per launch (a carve-out preference
        // or the blocks' needs), and the L1 gets the rest: 28 KiB at carve-out 100 % on the
        // H100 against the usual 224 KiB. Configurations are whole KiB; ncu may print them in
        // rounded kB (32.77 for 32 KiB).
        let l1_bytes = ncu::lookup(&l.metrics, ncu::SHARED_CONFIG)
            .filter(|(_, b)| b.is_finite() && *b >= 0.0)
            .and_then(|(_, b)| {
                let kib = (b / 1024.0).round() as usize;
                input.machine.l1_bytes_beside_shared(kib * 1024)
            })
            .unwrap_or(input.machine.l1_bytes);
        let params = CacheParams::for_l1(input.machine, config.threads(), blocks_per_sm, l1_bytes);
        let prog = footprint::MemoryProgram::new(input.kernel, input.domain, &config)?;
        let (prog, compiled) = match input.compiled_orders {
            Some(orders) => orders.apply(input.kernel, prog)?,
            None => (prog, false),
        };
        let estimate = estimator.estimate_program(&prog, &params)?;
        let errors = Level::ALL
            .iter()
            .map(|lv| relative_error(lv.estimate(&estimate), measured.get(*lv)))
            .collect();
        records.push(ConfigRecord {
            config,
            entry: l.kernel.clone(),
            registers,
            registers_from,
            blocks_per_sm,
            l1_bytes: params.l1_bytes,
            compiled_order: compiled,
            local_bytes: None,
            stack_accesses: prog.local.len(),
            stores_back_to_back: prog.stores_back_to_back,
            store_span_share: prog.store_span_share,
            duration_s: l.metrics.get(ncu::DURATION).copied(),
            estimate,
            measured,
            errors,
            counters: l.metrics.clone(),
            flush_counters: flush,
        });
    }
    if records.is_empty() {
        return Err(CountersError::NoTwinKernels);
    }
    let mut l1: Vec<usize> = records.iter().map(|r| r.l1_bytes).collect();
    l1.sort_unstable();
    l1.dedup();
    if l1 != [input.machine.l1_bytes] {
        let kib: Vec<String> = l1.iter().map(|b| format!("{}", b / 1024)).collect();
        notes.push(format!(
            "estimates take each launch's L1 as what its shared-memory configuration (ncu) leaves \
             of the SM's {} KiB: {} KiB",
            input.machine.l1_shared_bytes.unwrap_or(0) / 1024,
            kib.join(", ")
        ));
    }
    Ok((records, notes))
}

/// The machine a sweep's estimates use: `machine` with the L2 fetch size the twin set
/// (`--l2-fetch-bytes`), so that estimate and counters count the same DRAM fetches; with a note
/// where that changed the machine's figure. A size the machine cannot fetch
/// ([`MachineModel::can_fetch`]) is an error.
pub fn machine_for_fetch(
    machine: &MachineModel,
    fetch_bytes: Option<u32>,
) -> Result<(MachineModel, Option<String>), CountersError> {
    let mut m = machine.clone();
    let Some(bytes) = fetch_bytes.map(|b| b as usize) else {
        return Ok((m, None));
    };
    if !m.can_fetch(bytes) {
        return Err(CountersError::Fetch {
            bytes,
            sector: m.sector_bytes,
            line: m.line_bytes,
        });
    }
    if bytes == m.l2_fetch_bytes {
        return Ok((m, None));
    }
    let note = format!(
        "estimates read {bytes}-byte L2 fetches, the size the twin set, instead of {}'s {} bytes",
        m.name, m.l2_fetch_bytes
    );
    m.l2_fetch_bytes = bytes;
    Ok((m, Some(note)))
}

/// The shared-memory configuration (bytes) ncu reported, where every launch reports the same.
pub fn shared_config(records: &[ConfigRecord]) -> Option<f64> {
    let v: Vec<f64> = records
        .iter()
        .filter_map(|r| ncu::lookup(&r.counters, ncu::SHARED_CONFIG).map(|x| x.1))
        .collect();
    let first = *v.first()?;
    (v.len() == records.len() && v.iter().all(|x| *x == first)).then_some(first)
}

/// Checks on the eviction kernel: it should read about its buffer from DRAM (else L2 kept part
/// of it and may have kept dirty lines too).
pub fn flush_notes(records: &[ConfigRecord], flush_bytes: Option<usize>) -> Vec<String> {
    let Some(fb) = flush_bytes else {
        return Vec::new();
    };
    let reads: Vec<f64> = records
        .iter()
        .filter_map(|r| r.flush_counters.as_ref()?.get(ncu::DRAM_READ).copied())
        .collect();
    if reads.is_empty() {
        return vec!["the eviction kernel's DRAM reads were not measured".into()];
    }
    let min = reads.iter().copied().fold(f64::INFINITY, f64::min);
    let max = reads.iter().copied().fold(0.0, f64::max);
    let mut notes = vec![format!(
        "eviction kernel: read {:.1}–{:.1} MB from DRAM for a {:.1} MB buffer",
        min / 1e6,
        max / 1e6,
        fb as f64 / 1e6
    )];
    if min < 0.9 * fb as f64 {
        notes.push(
            "eviction kernel read less than 90 % of its buffer from DRAM: L2 kept part of it, so dirty lines of the stencil kernel may have stayed in L2 too"
                .into(),
        );
    }
    notes
}

pub use crate::bench::cache::{utc_from_unix as format_utc, utc_now};

#[cfg(test)]
mod tests;

//! The footprint visitor: per-level data volumes (bytes per lattice update) of a kernel under a
//! launch configuration, computed from the same address expressions the emitters print.
//!
//! Nothing here enumerates the grid. Per-warp volumes (L1 requests and wavefronts, L2 stores) come
//! from the distinct lane patterns of one block, combined with the distribution of block base
//! addresses modulo the line size (exact for every block, including partial tiles at the domain
//! edges, which form their own classes). Per-block volumes (L2 loads, DRAM) come from one
//! representative block per position class (first, interior, last along each axis), whose footprint
//! is a union of byte intervals per row; the neighbours it shares sectors with are found by row, not
//! by hashing addresses. See `DESIGN.md` and the module docs of `warp` and `block` for the model.

mod block;
mod geometry;
mod local;
mod program;
mod rows;
mod warp;

pub use program::{Instruction, LocalAccess, MemoryProgram, BACK_TO_BACK_GAP, FIELD_SPACING};
pub use warp::{bank_passes, wavefronts, WAVEFRONTS_PER_EXTRA_LINE};

use crate::config::{ConfigError, LaunchConfig};
use crate::ir::{AccessKind, Domain, Kernel};
use crate::machine::{MachineModel, SetIndex};
use serde::{Deserialize, Serialize};

/// The piecewise-linear function through `points` (x rising) at `x`, flat before the first
/// point and after the last; `None` without points. A scan, not a binary search: points read
/// without a check never index out of range.
pub fn piecewise_linear(points: impl IntoIterator<Item = (f64, f64)>, x: f64) -> Option<f64> {
    let mut points = points.into_iter();
    let mut prev = points.next()?;
    if x <= prev.0 {
        return Some(prev.1);
    }
    for p in points {
        if x < p.0 {
            return Some(prev.1 + (x - prev.0) / (p.0 - prev.0) * (p.1 - prev.1));
        }
        prev = p;
    }
    Some(prev.1)
}

/// Up to `N` points `(x, y)` of a measured curve, x rising, checked once when made: the storage
/// of [`ReuseMisses`] and [`InterleaveShares`] (`Copy`, so that `CacheParams` stays `Copy`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Points<const N: usize> {
    /// The first `len` are used.
    points: [(f64, f64); N],
    len: usize,
}

impl<const N: usize> Default for Points<N> {
    fn default() -> Self {
        Points {
            points: [(0.0, 0.0); N],
            len: 0,
        }
    }
}

impl<const N: usize> Points<N> {
    /// `points`: at most `N`, each `valid` (else the error `invalid`), x rising (`x_name` names
    /// it in the error).
    fn new(
        points: &[(f64, f64)],
        valid: impl Fn(f64, f64) -> bool,
        invalid: &str,
        x_name: &str,
    ) -> Result<Self, String> {
        if points.len() > N {
            return Err(format!("{} points, at most {N}", points.len()));
        }
        if !points.iter().all(|&(x, y)| valid(x, y)) {
            return Err(invalid.into());
        }
        if points.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(format!("{x_name} must rise from point to point"));
        }
        let mut c = Points::default();
        c.points[..points.len()].copy_from_slice(points);
        c.len = points.len();
        Ok(c)
    }

    fn as_slice(&self) -> &[(f64, f64)] {
        &self.points[..self.len]
    }
}

/// Most points of a [`ReuseMisses`] curve.
pub const REUSE_POINTS: usize = 16;

/// The share of sectors L2 misses when they are used again after a given number of distinct
/// bytes moved through it (the reuse distance), measured by a cyclic scan on the GPU
/// (`bench/l2-traffic.py`, set `capacity`); linear between the points, flat beyond them.
/// Empty: L2 is an LRU cache of `CacheParams::l2_bytes` (a step).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "Vec<(f64, f64)>", into = "Vec<(f64, f64)>")]
pub struct ReuseMisses(Points<REUSE_POINTS>);

impl ReuseMisses {
    /// The curve through `points` (`(bytes, share)`): at most [`REUSE_POINTS`], bytes rising from
    /// 0 up, shares from 0 to 1.
    pub fn new(points: &[(f64, f64)]) -> Result<ReuseMisses, String> {
        Points::new(
            points,
            |bytes, share| bytes >= 0.0 && (0.0..=1.0).contains(&share),
            "distances must be at least 0 and shares from 0 to 1",
            "distances",
        )
        .map(ReuseMisses)
    }

    /// The measured share at a reuse distance of `bytes`; `None` without a curve.
    pub fn share_at(&self, bytes: f64) -> Option<f64> {
        piecewise_linear(self.0.as_slice().iter().copied(), bytes)
    }

    /// Whether there is no curve (L2 is then a step at its capacity).
    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }
}

/// Most points of an [`InterleaveShares`] curve.
pub const INTERLEAVE_POINTS: usize = 8;

/// The share of an SM's resident warps whose loads L1 sees between two loads of one warp's burst
/// (loads issued back to back), by the lines each load instruction touches, for one launch's
/// resident warps (`MachineModel::l1_interleave`); linear in log2 of the lines between the
/// points, flat beyond them. Empty: every resident warp (lockstep).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "Vec<(f64, f64)>", into = "Vec<(f64, f64)>")]
pub struct InterleaveShares(Points<INTERLEAVE_POINTS>);

impl InterleaveShares {
    /// The curve through `points` (`(lines, share)`): at most [`INTERLEAVE_POINTS`], lines rising
    /// from 1 up, shares above 0 and at most 1.
    pub fn new(points: &[(f64, f64)]) -> Result<InterleaveShares, String> {
        Points::new(
            points,
            |lines, share| lines >= 1.0 && share > 0.0 && share <= 1.0,
            "lines must be at least 1 and shares above 0 and at most 1",
            "lines",
        )
        .map(InterleaveShares)
    }

    /// The share at `lines` per load instruction; 1 without a curve.
    pub fn share(&self, lines: f64) -> f64 {
        let log2 = |l: f64| l.max(1.0).log2();
        piecewise_linear(
            self.0.as_slice().iter().map(|&(l, s)| (log2(l), s)),
            log2(lines),
        )
        .unwrap_or(1.0)
    }
}

/// Read as its list of points, checked as [`InterleaveShares::new`] checks them.
impl TryFrom<Vec<(f64, f64)>> for InterleaveShares {
    type Error = String;

    fn try_from(points: Vec<(f64, f64)>) -> Result<InterleaveShares, String> {
        InterleaveShares::new(&points)
    }
}

/// Written as its list of points.
impl From<InterleaveShares> for Vec<(f64, f64)> {
    fn from(c: InterleaveShares) -> Vec<(f64, f64)> {
        c.0.as_slice().to_vec()
    }
}

/// Read as its list of points, checked as [`ReuseMisses::new`] checks them.
impl TryFrom<Vec<(f64, f64)>> for ReuseMisses {
    type Error = String;

    fn try_from(points: Vec<(f64, f64)>) -> Result<ReuseMisses, String> {
        ReuseMisses::new(&points)
    }
}

/// Written as its list of points.
impl From<ReuseMisses> for Vec<(f64, f64)> {
    fn from(c: ReuseMisses) -> Vec<(f64, f64)> {
        c.0.as_slice().to_vec()
    }
}

/// The memory-system parameters the visitor needs (kept free of `machine` on purpose).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheParams {
    /// Streaming multiprocessors.
    pub sms: usize,
    /// Resident blocks per SM for this launch (from the occupancy calculation).
    pub blocks_per_sm: usize,
    /// Usable L1 bytes per SM.
    pub l1_bytes: usize,
    /// Ways of the L1's sets, lines falling into sets as if at random (0: one fully associative
    /// LRU); see `MachineModel::l1_conflict_ways`.
    #[serde(default)]
    pub l1_conflict_ways: usize,
    /// The L1's measured set function, where known (empty: lines fall into sets as if at random).
    /// The simulator uses it; the visitor does not yet.
    #[serde(default)]
    pub l1_set_index: SetIndex,
    /// Ways of each set of `l1_set_index`: the tags', the same at every L1 (0: take
    /// `l1_conflict_ways`, which a smaller L1 lowers to model its replacement).
    #[serde(default)]
    pub l1_set_ways: usize,
    /// Effective L2 bytes (the half a single SM's data lives in, on split-L2 parts).
    pub l2_bytes: usize,
    /// The measured misses of reuses by distance, where known; the visitor uses them in place
    /// of a step at `l2_bytes` (the simulator's LRU L2 keeps `l2_bytes`).
    #[serde(default)]
    pub l2_reuse_misses: ReuseMisses,
    /// The L2 room a written sector takes in the distance of a reuse, in sectors of read data
    /// (see `MachineModel::l2_store_weight`; 1: as read data).
    #[serde(default = "crate::machine::unit_weight")]
    pub l2_store_weight: f64,
    /// The factor reuse distances take before `l2_reuse_misses` is read at them (see
    /// `MachineModel::l2_reuse_distance_scale`; 1: none).
    #[serde(default = "crate::machine::unit_weight")]
    pub l2_reuse_distance_scale: f64,
    /// The share of the resident warps that interleave with a warp's burst of loads, by lines
    /// per load instruction, for this launch (empty: all of them, lockstep).
    #[serde(default)]
    pub l1_interleave: InterleaveShares,
    /// Sector size in bytes (32 on NVIDIA).
    pub sector_bytes: usize,
    /// Bytes L2 reads from DRAM per read miss, the aligned group around the sector (0: one
    /// sector).
    #[serde(default)]
    pub dram_fetch_bytes: usize,
    /// L1 line size in bytes (128 on NVIDIA).
    pub line_bytes: usize,
    /// Threads per warp.
    pub warp_size: usize,
    /// The share of the sectors a block completes in several store instructions that L2 writes
    /// back before they are complete, for this launch's block (see
    /// `MachineModel::partial_store_loss`; 0: none).
    #[serde(default)]
    pub partial_store_loss: f64,
    /// The same share for blocks of all the SM's resident warps: what the visitor takes where the
    /// compiled code stores into several fold points' records at once (a thread's records then
    /// stay partly written across its fold points; 0: none, or more warps than measured).
    #[serde(default)]
    pub partial_store_loss_sm: f64,
    /// The share for all the SM's resident warps without the limit of measured warps (beyond the
    /// table's largest warps, that one's): what the visitor takes where a thread's stores span
    /// most of its fold point, so that every warp keeps a record partly written throughout (0:
    /// none).
    #[serde(default)]
    pub partial_store_loss_sm_open: f64,
    /// The block's share where its stores wait for all its loads (a kernel whose every store
    /// needs every load; see `MachineModel::partial_store_loss_after_loads`); `None` where not
    /// measured (`partial_store_loss` stands).
    #[serde(default)]
    pub partial_store_loss_after_loads: Option<f64>,
    /// The block's share where its stores also go out back to back (see
    /// `MachineModel::partial_store_loss_back_to_back`); `None` where not measured.
    #[serde(default)]
    pub partial_store_loss_back_to_back: Option<f64>,
    /// The sectors partly written at a time over the GPU above which L2 writes back early
    /// `1 - limit / count` of the pairs of stores steps apart (in a kernel storing several
    /// arrays per point) and of the sectors blocks beside each other write at one step (AoS
    /// records: at one fold point; see `MachineModel::partial_sector_limit`; 0: none).
    #[serde(default)]
    pub partial_sector_limit: f64,
    /// The share of a block's run between the pieces blocks beside each other write of one
    /// sector at one step, or one fold point in AoS records (see
    /// `MachineModel::neighbour_drift_share`; 0: none).
    #[serde(default)]
    pub neighbour_drift_share: f64,
    /// The share of the row-end sectors blocks beside each other complete together at one step
    /// that L2 writes back early at the least, in a kernel storing several arrays it does not
    /// read (see `MachineModel::row_end_write_back_share`; 0: none).
    #[serde(default)]
    pub row_end_write_back_share: f64,
    /// Warp instructions waiting in front of the L1 at most (0: not known, reuses of a warp's own
    /// AoS lines after its first burst see every resident warp, as in lockstep).
    #[serde(default)]
    pub l1_queue: f64,
    /// The lines L1 serves while a load is served by L2 (L2's latency at the L1's wavefronts per
    /// cycle).
    #[serde(default)]
    pub l2_latency_lines: f64,
}

impl CacheParams {
    /// The parameters of `machine` for a launch of blocks of `threads_per_block` threads with
    /// `blocks_per_sm` resident blocks per SM and the usual L1 (`MachineModel::l1_bytes`); the
    /// L2 capacity is the effective one.
    pub fn from_machine(
        machine: &MachineModel,
        threads_per_block: usize,
        blocks_per_sm: usize,
    ) -> CacheParams {
        CacheParams::for_l1(machine, threads_per_block, blocks_per_sm, machine.l1_bytes)
    }

    /// As [`CacheParams::from_machine`], for a launch granted `l1_bytes` of L1 (a shared-memory
    /// configuration other than the usual one): the L1's ways and the warps interleaved with a
    /// burst are those measured at that L1.
    pub fn for_l1(
        machine: &MachineModel,
        threads_per_block: usize,
        blocks_per_sm: usize,
        l1_bytes: usize,
    ) -> CacheParams {
        let warps = threads_per_block.div_ceil(machine.warp_size.max(1));
        CacheParams {
            sms: machine.sms,
            blocks_per_sm,
            l1_bytes,
            l1_conflict_ways: machine.l1_conflict_ways_at(l1_bytes),
            l1_set_index: machine.l1_set_index,
            l1_set_ways: machine.l1_conflict_ways,
            l2_bytes: machine.l2_effective_bytes,
            l2_reuse_misses: machine.l2_reuse_curve(),
            l2_store_weight: machine.l2_store_weight,
            l2_reuse_distance_scale: machine.l2_reuse_distance_scale,
            l1_interleave: machine.l1_interleave_for(warps, blocks_per_sm, l1_bytes),
            sector_bytes: machine.sector_bytes,
            dram_fetch_bytes: machine.l2_fetch_bytes,
            line_bytes: machine.line_bytes,
            warp_size: machine.warp_size,
            partial_store_loss: machine.partial_store_share(warps),
            partial_store_loss_sm: machine.partial_store_share_sm(warps * blocks_per_sm),
            partial_store_loss_sm_open: machine.partial_store_share(warps * blocks_per_sm),
            partial_store_loss_after_loads: machine.partial_store_share_after_loads(warps),
            partial_store_loss_back_to_back: machine.partial_store_share_back_to_back(warps),
            partial_sector_limit: machine.partial_sector_limit,
            neighbour_drift_share: machine.neighbour_drift_share,
            row_end_write_back_share: machine.row_end_write_back_share,
            l1_queue: machine.l1_queue_instructions as f64,
            l2_latency_lines: machine.l2_latency_cycles * machine.l1_wavefronts_per_cycle_per_sm,
        }
    }

    /// Checks that every size is positive and the granularities nest.
    pub fn check(&self) -> Result<(), FootprintError> {
        let bad = |m: String| Err(FootprintError::BadParams(m));
        for (name, v) in [
            ("sms", self.sms),
            ("blocks_per_sm", self.blocks_per_sm),
            ("l1_bytes", self.l1_bytes),
            ("l2_bytes", self.l2_bytes),
            ("sector_bytes", self.sector_bytes),
            ("line_bytes", self.line_bytes),
            ("warp_size", self.warp_size),
        ] {
            if v == 0 {
                return bad(format!("{name} must be positive"));
            }
        }
        if !self.sector_bytes.is_power_of_two() || !self.line_bytes.is_power_of_two() {
            return bad(format!(
                "sector_bytes ({}) and line_bytes ({}) must be powers of two",
                self.sector_bytes, self.line_bytes
            ));
        }
        if self.line_bytes < self.sector_bytes || self.line_bytes / self.sector_bytes > 64 {
            return bad(format!(
                "line_bytes ({}) must hold 1 to 64 sectors of {} bytes",
                self.line_bytes, self.sector_bytes
            ));
        }
        for (name, v) in [
            ("partial_store_loss", self.partial_store_loss),
            ("partial_store_loss_sm", self.partial_store_loss_sm),
            (
                "partial_store_loss_sm_open",
                self.partial_store_loss_sm_open,
            ),
            (
                "partial_store_loss_after_loads",
                self.partial_store_loss_after_loads.unwrap_or(0.0),
            ),
            (
                "partial_store_loss_back_to_back",
                self.partial_store_loss_back_to_back.unwrap_or(0.0),
            ),
            ("neighbour_drift_share", self.neighbour_drift_share),
            ("row_end_write_back_share", self.row_end_write_back_share),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(format!("{name} ({v}) must be a share from 0 to 1"));
            }
        }
        for (name, v) in [
            ("l1_queue", self.l1_queue),
            ("l2_latency_lines", self.l2_latency_lines),
            ("partial_sector_limit", self.partial_sector_limit),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(format!("{name} ({v}) must be a number from 0 up"));
            }
        }
        if !(1.0..=8.0).contains(&self.l2_store_weight) {
            return bad(format!(
                "l2_store_weight ({}) must be from 1 to 8",
                self.l2_store_weight
            ));
        }
        if !(1.0..=4.0).contains(&self.l2_reuse_distance_scale) {
            return bad(format!(
                "l2_reuse_distance_scale ({}) must be from 1 to 4",
                self.l2_reuse_distance_scale
            ));
        }
        if self.line_bytes > 4096 {
            return bad(format!("line_bytes ({}) above 4096", self.line_bytes));
        }
        let f = self.fetch_bytes();
        if !f.is_multiple_of(self.sector_bytes)
            || !(f / self.sector_bytes).is_power_of_two()
            || f > self.line_bytes
        {
            return bad(format!(
                "dram_fetch_bytes ({f}) must be sector_bytes ({}) times a power of two, at most \
                 line_bytes ({})",
                self.sector_bytes, self.line_bytes
            ));
        }
        Ok(())
    }

    /// The share of reuses `bytes` of L2 traffic apart that L2 misses: the measured curve where
    /// the machine has one (at the distance times `l2_reuse_distance_scale`), else a step at the
    /// effective capacity.
    pub fn l2_miss_at(&self, bytes: f64) -> f64 {
        match self
            .l2_reuse_misses
            .share_at(bytes * self.l2_reuse_distance_scale)
        {
            Some(miss) => miss,
            None => f64::from(u8::from(bytes >= self.l2_bytes as f64)),
        }
    }

    /// Bytes L2 reads from DRAM per read miss (at least one sector).
    pub fn fetch_bytes(&self) -> usize {
        self.dram_fetch_bytes.max(self.sector_bytes)
    }
}

/// Data volumes of one sweep, per lattice update.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct DataVolumes {
    /// Bytes requested from L1 by loads: per warp load instruction, distinct sectors.
    pub l1_load_requests: f64,
    /// L1 wavefronts (a count, not bytes) of load and store instructions: per warp instruction,
    /// its bank passes plus a fraction per further line ([`wavefronts`]).
    pub l1_wavefronts: f64,
    /// Bytes loaded from L2 (L1 misses).
    pub l2_load: f64,
    /// Bytes stored to L2: per warp store instruction, distinct sectors.
    pub l2_store: f64,
    /// Bytes loaded from DRAM (L2 misses and fills of partly written sectors).
    pub dram_load: f64,
    /// Bytes stored to DRAM: distinct sectors written.
    pub dram_store: f64,
}

impl DataVolumes {
    /// Every volume with its field's name, from L1 to DRAM.
    pub fn levels(&self) -> [(&'static str, f64); 6] {
        [
            ("l1_load_requests", self.l1_load_requests),
            ("l1_wavefronts", self.l1_wavefronts),
            ("l2_load", self.l2_load),
            ("l2_store", self.l2_store),
            ("dram_load", self.dram_load),
            ("dram_store", self.dram_store),
        ]
    }
}

/// Why volumes cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FootprintError {
    /// The launch configuration does not fit the kernel.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Kernel and domain disagree on the dimensions.
    #[error("the kernel is {kernel}D but the domain is {domain}D")]
    DomainDims {
        /// Kernel dimensions.
        kernel: usize,
        /// Domain dimensions.
        domain: usize,
    },
    /// A domain without points.
    #[error("domain {0} has no points; every extent must be at least 1")]
    EmptyDomain(Domain),
    /// A field larger than the address space reserved per field.
    #[error("field `{field}` needs {bytes} bytes, more than the 1 TiB modelled per buffer")]
    FieldTooLarge {
        /// Field name.
        field: String,
        /// Its size.
        bytes: u128,
    },
    /// An access to a field index that does not exist.
    #[error("access to unknown field #{0}")]
    UnknownField(usize),
    /// A component beyond the field's index dimension.
    #[error("access to component {index} of `{field}`, which does not exist")]
    BadComponent {
        /// Field name.
        field: String,
        /// Component.
        index: usize,
    },
    /// An offset reaching past the ghost layers.
    #[error("access to `{field}` at offset {offset:?} reaches past its {ghost} ghost layer(s)")]
    OffsetBeyondGhost {
        /// Field name.
        field: String,
        /// Offset.
        offset: [i32; 3],
        /// Ghost layers.
        ghost: usize,
    },
    /// The kernel touches no memory.
    #[error("the kernel has no memory access")]
    NoAccesses,
    /// Inconsistent cache parameters.
    #[error("invalid cache parameters: {0}")]
    BadParams(String),
    /// A timing model of issue that is not five or six positive integers.
    #[error("{0}")]
    BadTiming(String),
    /// A compiled issue order that does not fit the program.
    #[error("compiled issue order: {0}")]
    CompiledOrder(String),
    /// A simulation that would take too long.
    #[error("{0} lane accesses are too many to simulate; use a smaller domain")]
    TooLargeToSimulate(u64),
}

/// Computes the data volumes of one sweep of `kernel` launched with `config` on `domain`
/// (allocating a fresh [`Estimator`]; reuse one to rank many configurations).
pub fn estimate(
    kernel: &Kernel,
    config: &LaunchConfig,
    domain: &Domain,
    params: &CacheParams,
) -> Result<DataVolumes, FootprintError> {
    Estimator::default().estimate(kernel, domain, config, params)
}

/// As [`estimate`], with the arguments in the order of the simulator's functions.
pub fn data_volumes(
    kernel: &Kernel,
    domain: &Domain,
    config: &LaunchConfig,
    params: &CacheParams,
) -> Result<DataVolumes, FootprintError> {
    Estimator::default().estimate(kernel, domain, config, params)
}

/// The bytes per lattice update L2 writes back early (partly written sectors, see
/// [`CacheParams::partial_store_loss`]), as the visitor counts them: each is one more DRAM write
/// and one fill. The simulator's LRU L2 has no such loss and adds these.
pub fn early_write_backs(
    kernel: &Kernel,
    domain: &Domain,
    config: &LaunchConfig,
    params: &CacheParams,
) -> Result<f64, FootprintError> {
    let prog = MemoryProgram::new(kernel, domain, config)?;
    early_write_backs_program(&prog, params)
}

/// As [`early_write_backs`], for a program built already.
pub fn early_write_backs_program(
    prog: &MemoryProgram,
    params: &CacheParams,
) -> Result<f64, FootprintError> {
    params.check()?;
    let share = block::partial_store_share(prog, params);
    if share == 0.0 {
        return Ok(0.0);
    }
    let sectors = block::stores_completed_together(prog, params.sector_bytes);
    Ok(sectors * share * params.sector_bytes as f64 / prog.updates())
}

/// The minimal volumes: every loaded component read once, every stored one written once (B/LUP).
pub fn minimal_volumes(kernel: &Kernel) -> (f64, f64) {
    let bytes = |kind| -> f64 {
        let mut comps: Vec<(usize, usize)> = kernel
            .distinct_accesses(kind)
            .iter()
            .map(|a| (a.field, a.index))
            .collect();
        comps.dedup();
        comps
            .iter()
            .map(|(f, _)| kernel.fields[*f].dtype.size() as f64)
            .sum()
    };
    (bytes(AccessKind::Load), bytes(AccessKind::Store))
}

/// A reusable estimator: holds the scratch buffers so that ranking many configurations allocates
/// only while the buffers grow.
#[derive(Debug, Default)]
pub struct Estimator {
    warp: warp::WarpScratch,
    block: block::BlockScratch,
}

impl Estimator {
    /// Computes the data volumes of one sweep of `kernel` on `domain` launched with `config`.
    pub fn estimate(
        &mut self,
        kernel: &Kernel,
        domain: &Domain,
        config: &LaunchConfig,
        params: &CacheParams,
    ) -> Result<DataVolumes, FootprintError> {
        params.check()?;
        let prog = MemoryProgram::new(kernel, domain, config)?;
        self.estimate_program(&prog, params)
    }

    /// As [`Estimator::estimate`], for a program built already.
    pub fn estimate_program(
        &mut self,
        prog: &MemoryProgram,
        params: &CacheParams,
    ) -> Result<DataVolumes, FootprintError> {
        let (classes, w) = self.per_warp(prog, params)?;
        let b = self.block.run(
            prog,
            params,
            &classes,
            &w.load_sectors_per_block,
            w.store_sectors,
        );
        let global = Self::volumes(prog, params, &w, &b);
        if prog.local.is_empty() {
            return Ok(global);
        }
        // The stack's lines take L1 room from the global ones: the global reuses see the share
        // of L1 the global lines have of the lines L1 takes in.
        let share = local::global_l1_share(prog, &global);
        let global = if share < 1.0 {
            let narrowed = CacheParams {
                l1_bytes: ((params.l1_bytes as f64 * share) as usize).max(params.line_bytes),
                ..*params
            };
            let b = self.block.run(
                prog,
                &narrowed,
                &classes,
                &w.load_sectors_per_block,
                w.store_sectors,
            );
            Self::volumes(prog, params, &w, &b)
        } else {
            global
        };
        Ok(add(global, local::spill_volumes(prog, params, &global)))
    }

    /// Lower bounds of [`Estimator::estimate_program`]'s volumes, at a fraction of its cost: the
    /// per-warp volumes (exact), and per level what no reuse can save (L2 load: every block's
    /// footprint; DRAM: the compulsory traffic). Reuse that L1 or L2 misses only adds to these,
    /// so every volume of the estimate is at least its bound (rankings prune with them).
    pub fn bounds_program(
        &mut self,
        prog: &MemoryProgram,
        params: &CacheParams,
    ) -> Result<DataVolumes, FootprintError> {
        let (classes, w) = self.per_warp(prog, params)?;
        let b = self
            .block
            .bounds(prog, params, &classes, &w.load_sectors_per_block);
        let mut bounds = Self::volumes(prog, params, &w, &b);
        // Spilled stores reach L2 whatever the caches keep.
        bounds.l2_store += local::spilled_store_bytes(prog);
        Ok(bounds)
    }

    /// The blocks' size classes and the per-warp totals (checking `params` first).
    fn per_warp(
        &mut self,
        prog: &MemoryProgram,
        params: &CacheParams,
    ) -> Result<(SizeClasses, warp::WarpTotals), FootprintError> {
        params.check()?;
        let classes = SizeClasses::new(&prog.config, &prog.domain);
        let w = self.warp.run(prog, params, &classes);
        Ok((classes, w))
    }

    /// Volumes per lattice update from the per-warp and per-block totals.
    fn volumes(
        prog: &MemoryProgram,
        params: &CacheParams,
        w: &warp::WarpTotals,
        b: &block::BlockTotals,
    ) -> DataVolumes {
        let n = prog.updates();
        let s = params.sector_bytes as f64;
        DataVolumes {
            l1_load_requests: w.load_sectors * s / n,
            l1_wavefronts: w.wavefronts / n,
            l2_load: b.l2_load_sectors * s / n,
            l2_store: w.store_sectors * s / n,
            dram_load: b.dram_load_sectors * s / n,
            dram_store: b.dram_store_sectors * s / n,
        }
    }
}

/// The sum of two volumes, level by level.
fn add(a: DataVolumes, b: DataVolumes) -> DataVolumes {
    DataVolumes {
        l1_load_requests: a.l1_load_requests + b.l1_load_requests,
        l1_wavefronts: a.l1_wavefronts + b.l1_wavefronts,
        l2_load: a.l2_load + b.l2_load,
        l2_store: a.l2_store + b.l2_store,
        dram_load: a.dram_load + b.dram_load,
        dram_store: a.dram_store + b.dram_store,
    }
}

/// Blocks of equal valid extent: per axis, the full tiles and (if the domain is not a multiple of
/// the tile) the last, partial one.
#[derive(Debug, Clone)]
pub(crate) struct SizeClasses {
    /// Per axis: `(valid extent, first block, end block)` of each class (1 or 2 entries).
    pub axes: [Vec<(usize, usize, usize)>; 3],
    /// Blocks per axis.
    pub grid: [usize; 3],
    /// Tile per axis.
    pub tile: [usize; 3],
}

impl SizeClasses {
    fn new(config: &LaunchConfig, domain: &Domain) -> SizeClasses {
        let tile = config.tile();
        let grid = config.grid(domain);
        let axes = std::array::from_fn(|d| {
            let rem = domain.size[d] - (grid[d] - 1) * tile[d];
            if rem == tile[d] {
                vec![(tile[d], 0, grid[d])]
            } else if grid[d] == 1 {
                vec![(rem, 0, 1)]
            } else {
                vec![(tile[d], 0, grid[d] - 1), (rem, grid[d] - 1, grid[d])]
            }
        });
        SizeClasses { axes, grid, tile }
    }

    /// Index of the size class (`cx + 2·cy + 4·cz`) of the block at grid position `b`.
    pub fn class_of(&self, b: [usize; 3]) -> usize {
        (0..3)
            .map(|d| {
                let a = &self.axes[d];
                let c = usize::from(a.len() == 2 && b[d] + 1 == self.grid[d]);
                c << d
            })
            .sum()
    }

    /// The valid extents of size class `c`, or `None` where the class does not exist.
    pub fn extent(&self, c: usize) -> Option<[usize; 3]> {
        let mut e = [0; 3];
        for (d, ed) in e.iter_mut().enumerate() {
            *ed = self.axes[d].get((c >> d) & 1)?.0;
        }
        Some(e)
    }
}

#[cfg(test)]
mod tests;

//! A register estimate from the IR, for the occupancy calculation when no compiler report is given.
//!
//! Registers follow the values a thread must hold at once, in the order the emitters print the
//! code: each fold point loads its elements into temporaries just before it needs them
//! ([`LoadSharing`]), and an element shared with later fold points stays live until the last of
//! them. Inside one point, a value that a later statement still reads (an LBM distribution read
//! for the moments and again for the collision) is live too; a stencil's single sum is not, the
//! compiler accumulates it as the loads arrive.

use crate::address::LoadSharing;
use crate::config::LaunchConfig;
use crate::ir::{Domain, Expr, Kernel, Target};

/// Registers of a thread with no live values: indices, bases, guards, the accumulator (fitted,
/// `tests/model_registers.rs`: 95 compiled kernels of the H200 counters, ncu
/// `Registers Per Thread`, least squares).
pub const REGISTER_BASE: f64 = 23.0;

/// Registers per live 32-bit word (fitted with [`REGISTER_BASE`]; below 1 because the compiler
/// reorders a little and does not keep every value).
pub const REGISTERS_PER_WORD: f64 = 0.87;

/// The architectural limit of registers per thread (sm_70…sm_90).
pub const MAX_REGISTERS: usize = 255;

/// Registers per thread the generated code is expected to use: `REGISTER_BASE` (23) +
/// `REGISTERS_PER_WORD` (0.87) × words of the peak live values ([`live_values`]), at most
/// [`MAX_REGISTERS`] (more would spill; [`spills`] says so). `rank --registers N` overrides it.
pub fn estimate_registers(kernel: &Kernel, config: &LaunchConfig) -> usize {
    capped(register_demand(kernel, config))
}

/// Whether the live values alone need more registers than a thread can have: such a kernel
/// spills to local memory, which the model's volumes do not contain.
pub fn spills(kernel: &Kernel, config: &LaunchConfig) -> bool {
    register_demand(kernel, config) > MAX_REGISTERS as f64
}

/// Registers the live values need, uncapped: above [`MAX_REGISTERS`] the kernel would spill.
/// (One evaluation serves both [`estimate_registers`] and [`spills`] through [`capped`].)
pub fn register_demand(kernel: &Kernel, config: &LaunchConfig) -> f64 {
    KernelRegisters::new(kernel).demand(kernel, config)
}

/// The part of the register estimate that depends on the kernel alone (its element width and
/// the values held across statements of one point), computed once for a whole ranking.
#[derive(Debug, Clone, Copy)]
pub struct KernelRegisters {
    words: usize,
    within: usize,
}

impl KernelRegisters {
    /// The kernel-only part of `kernel`'s register estimate.
    pub fn new(kernel: &Kernel) -> KernelRegisters {
        KernelRegisters {
            words: kernel.dtype().size().div_ceil(4),
            within: within_point(kernel),
        }
    }

    /// [`register_demand`] of `config` (for the kernel this was made from).
    pub fn demand(&self, kernel: &Kernel, config: &LaunchConfig) -> f64 {
        self.demand_of(carried_loads(kernel, config))
    }

    /// As [`KernelRegisters::demand`], reusing `sharing` (the plan of `config` on some domain)
    /// where it is unguarded: it is then the plan the estimate assumes, and rank need not plan
    /// the loads twice per configuration.
    pub fn demand_with(
        &self,
        kernel: &Kernel,
        config: &LaunchConfig,
        sharing: &LoadSharing,
    ) -> f64 {
        if sharing.unguarded() {
            self.demand_of(peak_carried(sharing))
        } else {
            self.demand(kernel, config)
        }
    }

    fn demand_of(&self, carried: usize) -> f64 {
        let live = carried + self.within;
        REGISTER_BASE + REGISTERS_PER_WORD * (self.words * live) as f64
    }
}

/// The registers of a demand from [`register_demand`], rounded and at most [`MAX_REGISTERS`].
pub fn capped(demand: f64) -> usize {
    (demand.round() as usize).min(MAX_REGISTERS)
}

/// Peak number of values a thread holds at once: the loads of earlier fold points that later
/// ones still read (largest after any fold point, in emitted order), plus the values held across
/// statements inside one point.
pub fn live_values(kernel: &Kernel, config: &LaunchConfig) -> usize {
    carried_loads(kernel, config) + within_point(kernel)
}

/// Largest number of loaded elements held from one fold point to a later one.
fn carried_loads(kernel: &Kernel, config: &LaunchConfig) -> usize {
    if config.points_per_thread() == 1 {
        return 0;
    }
    // A domain that is a multiple of the tile: no guards, so all sharing the emitters can do.
    let tile = config.tile();
    let domain = Domain {
        size: [0, 1, 2].map(|d| 2 * tile[d]),
        dims: kernel.dims,
    };
    let layouts: Vec<_> = kernel
        .fields
        .iter()
        .map(|f| f.layout_for(&domain))
        .collect();
    peak_carried(&LoadSharing::new(kernel, &layouts, config, &domain))
}

/// Largest number of loaded elements held from one fold point to a later one under `sh`.
fn peak_carried(sh: &LoadSharing) -> usize {
    let slots = sh.loads.len();
    let points = sh.points.len();
    if slots == 0 {
        return 0;
    }
    // Last fold point reading each issued load (by point and slot, as `source`; walked point by
    // point rather than dividing each index by the slots).
    let mut last: Vec<usize> = (0..points)
        .flat_map(|p| std::iter::repeat_n(p, slots))
        .collect();
    for (p, sources) in sh.source.chunks(slots).enumerate() {
        for (q, s) in sources.iter().flatten() {
            let l = &mut last[q * slots + s];
            *l = (*l).max(p);
        }
    }
    // Live after point p: issued at or before p, read after p (a difference array over points).
    let mut delta = vec![0isize; points + 1];
    for (p, (sources, lasts)) in sh.source.chunks(slots).zip(last.chunks(slots)).enumerate() {
        for (src, &l) in sources.iter().zip(lasts) {
            if src.is_none() && l > p {
                delta[p] += 1;
                delta[l] -= 1;
            }
        }
    }
    let mut live = 0isize;
    let mut peak = 0isize;
    for d in &delta[..points] {
        live += d;
        peak = peak.max(live);
    }
    peak as usize
}

/// Largest number of values (distinct loads and temporaries) defined before a statement boundary
/// of one point and read after it.
fn within_point(kernel: &Kernel) -> usize {
    // Per value: (statement that defines it or first reads it, last statement reading it).
    let mut spans: Vec<(ValueKey, usize, usize)> = Vec::new();
    let mut touch = |v: ValueKey, t: usize| match spans.iter_mut().find(|s| s.0 == v) {
        Some(s) => s.2 = s.2.max(t),
        None => spans.push((v, t, t)),
    };
    for (t, a) in kernel.body.iter().enumerate() {
        a.value.visit(&mut |e| match e {
            Expr::Load(acc) => touch(ValueKey::Load(*acc), t),
            Expr::Temp(i) => touch(ValueKey::Temp(*i), t),
            _ => {}
        });
        if let Target::Temp(i) = a.target {
            touch(ValueKey::Temp(i), t);
        }
    }
    (0..kernel.body.len().saturating_sub(1))
        .map(|b| spans.iter().filter(|s| s.1 <= b && s.2 > b).count())
        .max()
        .unwrap_or(0)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ValueKey {
    Load(crate::ir::Access),
    Temp(usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load_stencil;

    fn star_r4() -> Kernel {
        load_stencil("stencils/star3d_r4.toml".as_ref())
            .unwrap()
            .kernel
    }

    #[test]
    fn unfolded_stencil_keeps_no_values() {
        // One sum per point: ncu reports 30–32 registers for every unfolded star3d_r4 f64.
        let k = star_r4();
        let c = LaunchConfig::new([32, 4, 2], [1, 1, 1]);
        assert_eq!(live_values(&k, &c), 0);
        assert_eq!(estimate_registers(&k, &c), 23);
    }

    #[test]
    fn shared_fold_loads_stay_live() {
        // 2x16x1 folded 2x4x2 (radius 4, x stride 2): ncu 164 registers; 64x4x2/4x2x2: 128;
        // 4x8x16/2x4x1 (little sharing): 32.
        let k = star_r4();
        let heavy = estimate_registers(&k, &LaunchConfig::new([2, 16, 1], [2, 4, 2]));
        let mid = estimate_registers(&k, &LaunchConfig::new([64, 4, 2], [4, 2, 2]));
        let light = estimate_registers(&k, &LaunchConfig::new([4, 8, 16], [2, 4, 1]));
        assert!((130..=190).contains(&heavy), "{heavy}");
        assert!((100..=150).contains(&mid), "{mid}");
        assert!(light <= 45, "{light}");
        let mut k32 = k.clone();
        k32.set_dtype(crate::ir::Dtype::F32);
        let c = LaunchConfig::new([2, 16, 1], [2, 4, 2]);
        assert!(estimate_registers(&k32, &c) < heavy);
    }

    #[test]
    fn capped_and_spilling() {
        let k = star_r4();
        // 32 points in a 1-wide block: every x neighbour is shared.
        let c = LaunchConfig::new([1, 1, 64], [4, 4, 4]);
        assert!(estimate_registers(&k, &c) <= MAX_REGISTERS);
        let c1 = LaunchConfig::new([32, 4, 2], [1, 1, 1]);
        assert!(!spills(&k, &c1));
        // 1x1x64 folded 32x4x1: every x and y neighbour is shared, 259 values carried at once:
        // 2 × 259 words of f64 cannot fit, 259 of f32 just do (248 registers).
        let wide = LaunchConfig::new([1, 1, 64], [32, 4, 1]);
        assert_eq!(live_values(&k, &wide), 259);
        assert!(spills(&k, &wide));
        let mut k32 = k.clone();
        k32.set_dtype(crate::ir::Dtype::F32);
        assert!(!spills(&k32, &wide));
        assert_eq!(estimate_registers(&k32, &wide), 248);
    }

    #[test]
    fn demand_with_a_programs_plan_matches() {
        // Rank passes the program's plan: reused where unguarded, replanned where guarded.
        let k = star_r4();
        let regs = KernelRegisters::new(&k);
        let c = LaunchConfig::new([2, 16, 1], [2, 4, 2]);
        for (x, guarded) in [(64, false), (63, true)] {
            let d = crate::ir::Domain::new3(x, 64, 64);
            let prog = crate::footprint::MemoryProgram::new(&k, &d, &c).unwrap();
            assert_eq!(prog.sharing.unguarded(), !guarded);
            assert_eq!(regs.demand_with(&k, &c, &prog.sharing), regs.demand(&k, &c));
        }
    }
}

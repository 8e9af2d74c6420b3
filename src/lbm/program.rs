//! The time loop of an LBM variant as data: buffers, kernels and, per time step, which buffers the
//! kernel sees and which copies (periodic exchange, bounce-back) run before and after it.
//!
//! A runtime (CPU, OpenCL, WebGPU, CUDA) drives any variant the same way:
//!
//! ```text
//! allocate program.buffers; upload initial populations (see State)
//! for t in 0..steps:
//!     phase = program.cycle[t % program.cycle.len()]
//!     run phase.before transfers (in order)
//!     launch program.kernels[phase.kernel] with field i bound to buffer phase.bindings[i]
//!     run phase.after transfers (in order)
//! populations now sit as program.cycle[(steps - 1) % len].state_after describes
//! ```
//!
//! Pull and push alternate the roles of two buffers (a cycle of two phases; no pointer swap
//! needed), AA alternates its even and odd kernels on one buffer.
//!
//! Boundaries: the domain is periodic along every axis; walls are cells of a [`Flags`] field
//! (0 = fluid, 1 = wall) and act as half-way bounce-back (no-slip, wall half-way between a fluid
//! cell and a wall cell). Bounce-back is not in the kernels: it is a list of element copies per
//! fluid–wall link, built on the host from the flags (as lbmpy and waLBerla do with index lists).
//! So the bulk kernel stays the benchmark kernel, costs nothing in cells away from walls, and the
//! in-place AA kernels keep their race freedom. Wall cells are updated by the kernels like fluid
//! cells, but their values never reach a fluid cell: every slot a fluid cell reads from a wall is
//! overwritten by a link copy first. So values inside walls mean nothing (under a body force, deep
//! inside thick walls, they may even grow without bound); compare runs on fluid cells only, through
//! [`LbmProgram::element`] (as `Simulation::populations` does).

use super::lattice::Lattice;
use super::model::{LbmError, LbmSpec, Streaming};
use super::transfer::{periodic_fill, periodic_fold, Transfer};
use crate::ir::{Domain, Field, FieldLayout, FieldRole, Kernel};
use serde::{Deserialize, Serialize};

/// Flag value of a fluid cell.
pub const FLUID: u8 = 0;
/// Flag value of a no-slip wall cell (half-way bounce-back).
pub const WALL: u8 = 1;

/// Cell types of the interior, one byte per cell, x fastest (`x + nx·(y + ny·z)`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flags {
    domain: Domain,
    cells: Vec<u8>,
}

impl Flags {
    /// All fluid.
    pub fn fluid(domain: &Domain) -> Flags {
        Flags {
            domain: *domain,
            cells: vec![FLUID; domain.points()],
        }
    }

    /// From raw bytes; every value must be [`FLUID`] or [`WALL`].
    pub fn from_cells(domain: &Domain, cells: Vec<u8>) -> Result<Flags, LbmError> {
        if cells.len() != domain.points() {
            return Err(LbmError::InitShape {
                found: vec![cells.len()],
                expected: vec![domain.points()],
            });
        }
        if let Some(i) = cells.iter().position(|c| *c != FLUID && *c != WALL) {
            let [nx, ny, _] = domain.size;
            return Err(LbmError::BadFlag {
                value: cells[i],
                cell: [i % nx, (i / nx) % ny, i / (nx * ny)],
            });
        }
        Ok(Flags {
            domain: *domain,
            cells,
        })
    }

    /// A channel: walls on the first and last layer of cells along `axis` (0, 1 or 2), fluid
    /// between. The walls sit half-way, so the channel is `n − 2` cells wide.
    pub fn channel(domain: &Domain, axis: usize) -> Flags {
        let mut f = Flags::fluid(domain);
        let n = domain.size[axis];
        for z in 0..domain.size[2] {
            for y in 0..domain.size[1] {
                for x in 0..domain.size[0] {
                    let p = [x, y, z][axis];
                    if p == 0 || p + 1 == n {
                        f.set(x, y, z, WALL);
                    }
                }
            }
        }
        f
    }

    /// The domain.
    pub fn domain(&self) -> &Domain {
        &self.domain
    }

    /// The raw bytes.
    pub fn cells(&self) -> &[u8] {
        &self.cells
    }

    fn linear(&self, x: usize, y: usize, z: usize) -> usize {
        x + self.domain.size[0] * (y + self.domain.size[1] * z)
    }

    /// Sets a cell's flag (only [`FLUID`] and [`WALL`] are meaningful; others count as wall).
    pub fn set(&mut self, x: usize, y: usize, z: usize, flag: u8) {
        let i = self.linear(x, y, z);
        self.cells[i] = flag;
    }

    /// Whether the cell is a wall.
    pub fn is_wall(&self, x: usize, y: usize, z: usize) -> bool {
        self.cells[self.linear(x, y, z)] != FLUID
    }

    /// Number of fluid cells.
    pub fn fluid_cells(&self) -> usize {
        self.cells.iter().filter(|c| **c == FLUID).count()
    }
}

/// Where the populations of fluid cells are between two time steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateKind {
    /// `f_i(x)` (pre-collision, post-streaming) at `(x, i)`.
    Home,
    /// `f_i(x)` still to be gathered: at `(x − c_i, i)` (periodic), or at `(x, ī)` when `x − c_i`
    /// is a wall (the population that bounced back). Pull keeps its populations this way.
    Gathered,
    /// As `Gathered`, in the opposite slots: at `(x − c_i, ī)`, or `(x, i)` next to a wall. The
    /// AA pattern is in this state after an even step.
    Swapped,
}

/// A buffer and the way it holds the populations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Buffer index.
    pub buffer: usize,
    /// Arrangement.
    pub kind: StateKind,
}

/// One time step of the cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Index into `LbmProgram::kernels`.
    pub kernel: usize,
    /// Buffer bound to each field of the kernel.
    pub bindings: Vec<usize>,
    /// Copies before the kernel, in order.
    pub before: Vec<Transfer>,
    /// Copies after the kernel, in order.
    pub after: Vec<Transfer>,
    /// Where the populations are once the phase (and its `after` copies) completed.
    pub state_after: State,
}

/// The complete time loop of one LBM variant on one domain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LbmProgram {
    /// The variant.
    pub spec: LbmSpec,
    /// The lattice model.
    pub lattice: Lattice,
    /// The interior size.
    pub domain: Domain,
    /// Wall cells, if any.
    pub flags: Option<Flags>,
    /// Population buffers (all alike: Q components, one ghost layer; `role` is meaningless here).
    pub buffers: Vec<Field>,
    /// The kernels (`[step]`, or `[even, odd]` for AA).
    pub kernels: Vec<Kernel>,
    /// Time step `t` runs `cycle[t % cycle.len()]`.
    pub cycle: Vec<Phase>,
    /// Where the initial populations go.
    pub initial: State,
}

impl LbmSpec {
    /// The time loop on `domain`, periodic, with bounce-back walls where `flags` says so.
    pub fn program(&self, domain: &Domain, flags: Option<Flags>) -> Result<LbmProgram, LbmError> {
        self.check_domain(domain)?;
        if let Some(f) = &flags {
            if f.domain() != domain {
                return Err(LbmError::FlagDomain {
                    found: *f.domain(),
                    expected: *domain,
                });
            }
        }
        let kernels = self.kernels()?;
        let lattice = super::lattice::Lattice::new(self.lattice);
        let q = lattice.q();
        let buffer_names: &[&str] = match self.streaming {
            Streaming::Aa => &["f"],
            _ => &["f_a", "f_b"],
        };
        let buffers: Vec<Field> = buffer_names
            .iter()
            .map(|n| super::kernels::population_field(self, n, q, FieldRole::Inout))
            .collect();
        let layout = buffers[0].layout_for(domain);
        let links = wall_links(&lattice, flags.as_ref());
        let link_pairs = |buffer: usize, pair: &dyn Fn([i64; 3], usize, [i64; 3]) -> [usize; 2]| {
            let pairs: Vec<[usize; 2]> = links.iter().map(|(x, i, y)| pair(*x, *i, *y)).collect();
            (!pairs.is_empty()).then_some(Transfer::Elements { buffer, pairs })
        };
        let idx = |p: [i64; 3], i: usize| layout.index(p[0], p[1], p[2], i);
        let opp = |i: usize| lattice.opposite[i];
        let exchange_err = |e: super::transfer::ExchangeError| LbmError::EmptyDomain(e.domain);
        let mut cycle = Vec::new();
        let initial;
        match self.streaming {
            Streaming::Pull => {
                initial = State {
                    buffer: 0,
                    kind: StateKind::Gathered,
                };
                for (src, dst) in [(0, 1), (1, 0)] {
                    // The wall slot a fluid cell will pull from gets the population that bounced.
                    let mut before: Vec<Transfer> =
                        link_pairs(src, &|x, i, y| [idx(x, opp(i)), idx(y, i)])
                            .into_iter()
                            .collect();
                    before.push(periodic_fill(&kernels[0], 0, domain, src).map_err(exchange_err)?);
                    cycle.push(Phase {
                        kernel: 0,
                        bindings: vec![src, dst],
                        before: nonempty(before),
                        after: vec![],
                        state_after: State {
                            buffer: dst,
                            kind: StateKind::Gathered,
                        },
                    });
                }
            }
            Streaming::Push => {
                initial = State {
                    buffer: 0,
                    kind: StateKind::Home,
                };
                for (src, dst) in [(0, 1), (1, 0)] {
                    let mut after =
                        vec![periodic_fold(&kernels[0], 1, domain, dst).map_err(exchange_err)?];
                    // What a fluid cell pushed into a wall comes back to it, reversed.
                    after.extend(link_pairs(dst, &|x, i, y| [idx(y, opp(i)), idx(x, i)]));
                    cycle.push(Phase {
                        kernel: 0,
                        bindings: vec![src, dst],
                        before: vec![],
                        after: nonempty(after),
                        state_after: State {
                            buffer: dst,
                            kind: StateKind::Home,
                        },
                    });
                }
            }
            Streaming::Aa => {
                initial = State {
                    buffer: 0,
                    kind: StateKind::Home,
                };
                cycle.push(Phase {
                    kernel: 0,
                    bindings: vec![0],
                    before: vec![],
                    after: vec![],
                    state_after: State {
                        buffer: 0,
                        kind: StateKind::Swapped,
                    },
                });
                let mut before: Vec<Transfer> =
                    link_pairs(0, &|x, i, y| [idx(x, i), idx(y, opp(i))])
                        .into_iter()
                        .collect();
                before.push(periodic_fill(&kernels[1], 0, domain, 0).map_err(exchange_err)?);
                let mut after =
                    vec![periodic_fold(&kernels[1], 0, domain, 0).map_err(exchange_err)?];
                after.extend(link_pairs(0, &|x, i, y| [idx(y, opp(i)), idx(x, i)]));
                cycle.push(Phase {
                    kernel: 1,
                    bindings: vec![0],
                    before: nonempty(before),
                    after: nonempty(after),
                    state_after: State {
                        buffer: 0,
                        kind: StateKind::Home,
                    },
                });
            }
        }
        Ok(LbmProgram {
            spec: self.clone(),
            lattice,
            domain: *domain,
            flags,
            buffers,
            kernels,
            cycle,
            initial,
        })
    }
}

fn nonempty(v: Vec<Transfer>) -> Vec<Transfer> {
    v.into_iter().filter(|t| !t.is_empty()).collect()
}

/// Fluid–wall links `(x, i, y)`: fluid cell `x` receives population `i` from wall cell
/// `y = x − c_i` (periodically wrapped).
fn wall_links(lat: &Lattice, flags: Option<&Flags>) -> Vec<([i64; 3], usize, [i64; 3])> {
    let Some(flags) = flags else {
        return vec![];
    };
    let d = flags.domain();
    let mut out = Vec::new();
    for z in 0..d.size[2] {
        for y in 0..d.size[1] {
            for x in 0..d.size[0] {
                if flags.is_wall(x, y, z) {
                    continue;
                }
                let p = [x as i64, y as i64, z as i64];
                for i in 1..lat.q() {
                    let w = wrap(d, [0, 1, 2].map(|k| p[k] - lat.velocities[i][k] as i64));
                    if flags.is_wall(w[0] as usize, w[1] as usize, w[2] as usize) {
                        out.push((p, i, w));
                    }
                }
            }
        }
    }
    out
}

/// The periodic image of a point in the interior.
pub(crate) fn wrap(d: &Domain, p: [i64; 3]) -> [i64; 3] {
    [0, 1, 2].map(|k| p[k].rem_euclid(d.size[k] as i64))
}

impl LbmProgram {
    /// Layout of every buffer.
    pub fn layout(&self) -> FieldLayout {
        self.buffers[0].layout_for(&self.domain)
    }

    /// Whether cell `(x, y, z)` is a wall.
    pub fn is_wall(&self, x: usize, y: usize, z: usize) -> bool {
        self.flags.as_ref().is_some_and(|f| f.is_wall(x, y, z))
    }

    /// The state after `steps` time steps (the initial one for 0).
    pub fn state_at(&self, steps: usize) -> State {
        if steps == 0 {
            self.initial
        } else {
            self.cycle[(steps - 1) % self.cycle.len()].state_after
        }
    }

    /// Element index of population `i` of fluid cell `(x, y, z)` in a buffer in state `kind`.
    pub fn element(&self, kind: StateKind, x: usize, y: usize, z: usize, i: usize) -> usize {
        let lat = &self.lattice;
        let layout = self.layout();
        let p = [x as i64, y as i64, z as i64];
        let from = wrap(
            &self.domain,
            [0, 1, 2].map(|k| p[k] - lat.velocities[i][k] as i64),
        );
        let wall = self.is_wall(from[0] as usize, from[1] as usize, from[2] as usize);
        let o = lat.opposite[i];
        let (at, slot) = match (kind, wall) {
            (StateKind::Home, _) => (p, i),
            (StateKind::Gathered, false) => (from, i),
            (StateKind::Gathered, true) => (p, o),
            (StateKind::Swapped, false) => (from, o),
            (StateKind::Swapped, true) => (p, i),
        };
        layout.index(at[0], at[1], at[2], slot)
    }
}

impl LbmProgram {
    /// One line per phase: copies, kernel with its buffers, and where the populations end up.
    pub fn describe(&self) -> Vec<String> {
        let name = |b: usize| self.buffers[b].name.as_str();
        let copies = |ts: &[Transfer]| -> String {
            if ts.is_empty() {
                return String::new();
            }
            let parts: Vec<String> = ts
                .iter()
                .map(|t| {
                    let what = match t {
                        Transfer::Boxes { boxes, .. } => {
                            format!("periodic exchange ({} boxes", boxes.len())
                        }
                        Transfer::Elements { .. } => "bounce-back links (".to_string(),
                    };
                    let sep = if matches!(t, Transfer::Boxes { .. }) {
                        ", "
                    } else {
                        ""
                    };
                    format!("{what}{sep}{} elements of {})", t.len(), name(t.buffer()))
                })
                .collect();
            parts.join(", then ")
        };
        self.cycle
            .iter()
            .enumerate()
            .map(|(t, p)| {
                let k = &self.kernels[p.kernel];
                let binds: Vec<String> = k
                    .fields
                    .iter()
                    .zip(&p.bindings)
                    .map(|(f, b)| format!("{} = {}", f.name, name(*b)))
                    .collect();
                let mut s = format!("step {t} mod {}: ", self.cycle.len());
                let before = copies(&p.before);
                if !before.is_empty() {
                    s += &format!("{before}; ");
                }
                s += &format!("kernel {}({})", k.name, binds.join(", "));
                let after = copies(&p.after);
                if !after.is_empty() {
                    s += &format!("; {after}");
                }
                let kind = match p.state_after.kind {
                    StateKind::Home => "at home",
                    StateKind::Gathered => "to be gathered",
                    StateKind::Swapped => "swapped, to be gathered",
                };
                s + &format!(" → populations in {} ({kind})", name(p.state_after.buffer))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::{Collision, LatticeKind};
    use std::collections::BTreeSet;

    fn flags(d: &Domain) -> Flags {
        let mut f = Flags::channel(d, 1);
        f.set(0, 2, 0, WALL);
        f.set(2, 3, d.size[2] - 1, WALL);
        f
    }

    /// Copies of one transfer may run in parallel: no element written twice, none both read and
    /// written.
    #[test]
    fn transfers_are_independent_copies() {
        for lattice in [LatticeKind::D2Q9, LatticeKind::D3Q27] {
            for streaming in [Streaming::Pull, Streaming::Push, Streaming::Aa] {
                let mut s = LbmSpec::new("t", lattice, 0.7);
                s.collision = Collision::Trt { magic: 0.1875 };
                s.streaming = streaming;
                let d = if lattice.dims() == 2 {
                    Domain::new2(5, 6)
                } else {
                    Domain::new3(5, 6, 4)
                };
                let p = s.program(&d, Some(flags(&d))).unwrap();
                assert_eq!(p.cycle.len(), 2);
                assert_eq!(p.buffers.len(), streaming.arrays());
                let n = p.layout().len();
                let mut links = 0;
                for phase in &p.cycle {
                    for t in phase.before.iter().chain(&phase.after) {
                        let pairs = t.pairs();
                        let src: BTreeSet<usize> = pairs.iter().map(|x| x[0]).collect();
                        let dst: BTreeSet<usize> = pairs.iter().map(|x| x[1]).collect();
                        assert_eq!(dst.len(), pairs.len(), "{streaming}: a target twice");
                        assert!(src.is_disjoint(&dst), "{streaming}: read and written");
                        assert!(pairs.iter().all(|x| x[0] < n && x[1] < n));
                        if matches!(t, Transfer::Elements { .. }) {
                            links += pairs.len();
                        }
                    }
                }
                assert!(links > 0, "{streaming}: walls make links");
            }
        }
    }

    #[test]
    fn rejects_foreign_flags_and_bad_values() {
        let s = LbmSpec::new("t", LatticeKind::D2Q9, 0.7);
        let d = Domain::new2(4, 4);
        let other = Flags::fluid(&Domain::new2(4, 5));
        assert!(matches!(
            s.program(&d, Some(other)),
            Err(LbmError::FlagDomain { .. })
        ));
        let mut cells = vec![FLUID; 16];
        cells[5] = 7;
        assert!(matches!(
            Flags::from_cells(&d, cells),
            Err(LbmError::BadFlag {
                value: 7,
                cell: [1, 1, 0]
            })
        ));
        assert!(matches!(
            s.program(&Domain::new3(4, 4, 4), None),
            Err(LbmError::DomainDims { .. })
        ));
    }
}

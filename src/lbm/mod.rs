//! Lattice-Boltzmann kernels: lattice models (D2Q9, D3Q15, D3Q19, D3Q27), the second-order
//! equilibrium, SRT and TRT collision, Guo body forcing and the pull, push and AA streaming
//! patterns, generated as IR kernels; plus the time loop around them ([`LbmProgram`]: periodic
//! ghost exchange and half-way bounce-back walls as element copies) and a CPU driver
//! ([`Simulation`]) on the reference executor.
//!
//! Emission, volume estimation and ranking see plain IR kernels: populations are one field with
//! Q components (the index dimension), laid out SoA (`fzyx`) or AoS (`zyxf`).

mod kernels;
mod lattice;
mod model;
mod program;
mod simulation;
mod transfer;

pub use kernels::Step;
pub use lattice::{Lattice, LatticeKind};
pub(crate) use model::check_count;
pub use model::{Collision, LbmError, LbmSpec, Streaming, DEFAULT_MAGIC, MAX_GHOST_OR_PADDING};
pub use program::{Flags, LbmProgram, Phase, State, StateKind, FLUID, WALL};
pub use simulation::{Macroscopic, Simulation};
pub use transfer::{periodic_fill, periodic_fold, BoxCopy, ExchangeError, Transfer};

//! stencilscope: a code generator for GPU stencil and Lattice-Boltzmann kernels with a built-in
//! data-volume estimator.
//!
//! Data flows one way: `spec` → `ir` → `config` → `address` → … → `emit` → `runtime`, with
//! `reference` as the correctness oracle for everything that is emitted.

pub mod address;
pub mod bench;
pub mod cachesim;
pub mod config;
pub mod counters;
pub mod emit;
pub mod footprint;
pub mod ir;
pub mod lbm;
pub mod machine;
pub mod model;
pub mod rank;
pub mod reference;
pub mod report;
pub mod runtime;
pub mod spec;

//! stencilscope: a code generator for GPU stencil and Lattice-Boltzmann kernels with a built-in
//! data-volume estimator.

pub mod address;
pub mod config;
pub mod ir;
pub mod reference;
pub mod spec;

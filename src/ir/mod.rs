//! The kernel IR: fields, accesses, assignments as expression trees, flop and byte counts.
//!
//! Every later stage (reference, address, footprint, emit) reads kernels through these types.

mod expr;
mod field;
mod kernel;
mod print;
mod validate;

pub use expr::{BinOp, CmpOp, Expr, UnOp};
pub use field::{Domain, Dtype, Field, FieldLayout, FieldRole, Layout};
pub use kernel::{Access, AccessKind, Assignment, FlopCounts, Kernel, Param, Target};
pub use validate::IrError;

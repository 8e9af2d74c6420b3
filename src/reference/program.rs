//! Expression trees flattened into a stack program with precomputed element offsets.

use super::field_array::Real;
use crate::ir::{BinOp, CmpOp, Expr, FieldLayout, Kernel, Target, UnOp};

#[derive(Debug, Clone, Copy)]
enum Op<T> {
    Const(T),
    /// Load field `f` at element offset `off` from the point's base.
    Load(usize, isize),
    Temp(usize),
    Neg,
    Sqrt,
    Bin(BinOp),
    Fma,
    Select(CmpOp),
    Store(usize, isize),
    SetTemp(usize),
}

/// A compiled kernel for one set of field layouts.
pub struct Program<T> {
    ops: Vec<Op<T>>,
    temps: usize,
}

/// Per-thread scratch space.
pub struct Scratch<T> {
    stack: Vec<T>,
    temps: Vec<T>,
}

impl<T: Real> Program<T> {
    pub fn compile(kernel: &Kernel, layouts: &[FieldLayout]) -> Program<T> {
        let mut ops = Vec::new();
        for a in &kernel.body {
            emit(&a.value, kernel, layouts, &mut ops);
            ops.push(match a.target {
                Target::Store(acc) => Op::Store(
                    acc.field,
                    layouts[acc.field].relative(acc.offset, acc.index) as isize,
                ),
                Target::Temp(t) => Op::SetTemp(t),
            });
        }
        Program {
            ops,
            temps: kernel.temps.len(),
        }
    }

    pub fn scratch(&self) -> Scratch<T> {
        Scratch {
            stack: Vec::with_capacity(64),
            temps: vec![T::zero(); self.temps],
        }
    }

    /// Executes the program for the `nx` points of one row.
    ///
    /// # Safety
    /// `ptrs[f].offset(bases[f] + x * xsteps[f] + off)` must be in bounds for every access, and no
    /// other thread may access the elements this row writes.
    pub unsafe fn run_row(
        &self,
        ptrs: &[*mut T],
        bases: &[isize],
        xsteps: &[isize],
        nx: usize,
        s: &mut Scratch<T>,
    ) {
        for x in 0..nx as isize {
            let stack = &mut s.stack;
            stack.clear();
            for op in &self.ops {
                match *op {
                    Op::Const(v) => stack.push(v),
                    Op::Load(f, off) => {
                        stack.push(*ptrs[f].offset(bases[f] + x * xsteps[f] + off));
                    }
                    Op::Temp(t) => stack.push(s.temps[t]),
                    Op::Neg => {
                        let a = stack.pop().unwrap_unchecked();
                        stack.push(-a);
                    }
                    Op::Sqrt => {
                        let a = stack.pop().unwrap_unchecked();
                        stack.push(a.sqrt());
                    }
                    Op::Bin(b) => {
                        let r = stack.pop().unwrap_unchecked();
                        let l = stack.pop().unwrap_unchecked();
                        stack.push(match b {
                            BinOp::Add => l + r,
                            BinOp::Sub => l - r,
                            BinOp::Mul => l * r,
                            BinOp::Div => l / r,
                            BinOp::Min => l.min(r),
                            BinOp::Max => l.max(r),
                        });
                    }
                    Op::Fma => {
                        let c = stack.pop().unwrap_unchecked();
                        let b = stack.pop().unwrap_unchecked();
                        let a = stack.pop().unwrap_unchecked();
                        stack.push(a.mul_add(b, c));
                    }
                    Op::Select(cmp) => {
                        let otherwise = stack.pop().unwrap_unchecked();
                        let then = stack.pop().unwrap_unchecked();
                        let rhs = stack.pop().unwrap_unchecked();
                        let lhs = stack.pop().unwrap_unchecked();
                        stack.push(if cmp.eval(lhs, rhs) { then } else { otherwise });
                    }
                    Op::Store(f, off) => {
                        let v = stack.pop().unwrap_unchecked();
                        *ptrs[f].offset(bases[f] + x * xsteps[f] + off) = v;
                    }
                    Op::SetTemp(t) => s.temps[t] = stack.pop().unwrap_unchecked(),
                }
            }
        }
    }
}

fn emit<T: Real>(e: &Expr, k: &Kernel, layouts: &[FieldLayout], ops: &mut Vec<Op<T>>) {
    match e {
        Expr::Lit(v) => ops.push(Op::Const(T::from_f64(*v))),
        Expr::Param(i) => ops.push(Op::Const(T::from_f64(k.params[*i].value))),
        Expr::Load(a) => ops.push(Op::Load(
            a.field,
            layouts[a.field].relative(a.offset, a.index) as isize,
        )),
        Expr::Temp(t) => ops.push(Op::Temp(*t)),
        Expr::Unary(op, a) => {
            emit(a, k, layouts, ops);
            ops.push(match op {
                UnOp::Neg => Op::Neg,
                UnOp::Sqrt => Op::Sqrt,
            });
        }
        Expr::Binary(op, a, b) => {
            emit(a, k, layouts, ops);
            emit(b, k, layouts, ops);
            ops.push(Op::Bin(*op));
        }
        Expr::Fma(a, b, c) => {
            emit(a, k, layouts, ops);
            emit(b, k, layouts, ops);
            emit(c, k, layouts, ops);
            ops.push(Op::Fma);
        }
        Expr::Select {
            cmp,
            lhs,
            rhs,
            then,
            otherwise,
        } => {
            emit(lhs, k, layouts, ops);
            emit(rhs, k, layouts, ops);
            emit(then, k, layouts, ops);
            emit(otherwise, k, layouts, ops);
            ops.push(Op::Select(*cmp));
        }
    }
}

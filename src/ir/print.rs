//! Prints statements back in the update grammar of definition files (parseable again).

use super::expr::{BinOp, Expr, UnOp};
use super::kernel::{Access, Kernel, Target};

impl Kernel {
    /// The access as written in definition files, e.g. `u[-1,0,0]` or `f[0,1,0](3)`.
    pub fn access_source(&self, a: &Access) -> String {
        let offs: Vec<String> = a.offset[..self.dims]
            .iter()
            .map(|o| o.to_string())
            .collect();
        let f = &self.fields[a.field];
        if f.components > 1 {
            format!("{}[{}]({})", f.name, offs.join(","), a.index)
        } else {
            format!("{}[{}]", f.name, offs.join(","))
        }
    }

    /// Statement `i` in the update grammar.
    pub fn statement_source(&self, i: usize) -> String {
        let a = &self.body[i];
        let target = match &a.target {
            Target::Store(acc) => self.access_source(acc),
            Target::Temp(t) => self.temps[*t].clone(),
        };
        format!("{target} = {}", self.expr_source(&a.value, 0))
    }

    /// The whole body, one statement per line.
    pub fn update_source(&self) -> String {
        (0..self.body.len())
            .map(|i| self.statement_source(i))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `prec`: 0 top level, 1 inside `+`/`-` right operand, 2 inside `*`/`/` operand.
    fn expr_source(&self, e: &Expr, prec: u8) -> String {
        match e {
            Expr::Lit(v) => {
                let s = format!("{v:?}");
                if *v < 0.0 && prec > 0 {
                    format!("({s})")
                } else {
                    s
                }
            }
            Expr::Param(i) => self.params[*i].name.clone(),
            Expr::Load(a) => self.access_source(a),
            Expr::Temp(t) => self.temps[*t].clone(),
            Expr::Unary(UnOp::Neg, a) => format!("-{}", self.expr_source(a, 3)),
            Expr::Unary(UnOp::Sqrt, a) => format!("sqrt({})", self.expr_source(a, 0)),
            Expr::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => format!(
                "{op}({}, {})",
                self.expr_source(a, 0),
                self.expr_source(b, 0)
            ),
            Expr::Binary(op, a, b) => {
                let (mine, lp, rp) = match op {
                    BinOp::Add | BinOp::Sub => (1, 1, 2),
                    _ => (2, 2, 3),
                };
                let s = format!(
                    "{} {op} {}",
                    self.expr_source(a, lp),
                    self.expr_source(b, rp)
                );
                if prec > mine {
                    format!("({s})")
                } else {
                    s
                }
            }
            Expr::Fma(a, b, c) => format!(
                "fma({}, {}, {})",
                self.expr_source(a, 0),
                self.expr_source(b, 0),
                self.expr_source(c, 0)
            ),
            Expr::Select {
                cmp,
                lhs,
                rhs,
                then,
                otherwise,
            } => format!(
                "select({} {} {}, {}, {})",
                self.expr_source(lhs, 0),
                cmp.symbol(),
                self.expr_source(rhs, 0),
                self.expr_source(then, 0),
                self.expr_source(otherwise, 0)
            ),
        }
    }
}

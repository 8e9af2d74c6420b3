use super::kernel::Access;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Binary operators (min and max included: they cost one instruction each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BinOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnOp {
    /// `-a`
    Neg,
    /// `sqrt(a)`
    Sqrt,
}

/// Comparison used by `select`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl CmpOp {
    /// The operator as written in source code.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }

    /// Evaluates the comparison.
    pub fn eval<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
        }
    }
}

/// An expression tree of a right-hand side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expr {
    /// A finite literal.
    Lit(f64),
    /// A named parameter, by index into `Kernel::params`.
    Param(usize),
    /// A load of a field element.
    Load(Access),
    /// A temporary assigned earlier, by index into `Kernel::temps`.
    Temp(usize),
    /// A unary operation.
    Unary(UnOp, Box<Expr>),
    /// A binary operation.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// Fused multiply-add `a * b + c`.
    Fma(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `select(lhs cmp rhs, then, else)`.
    Select {
        /// The comparison.
        cmp: CmpOp,
        /// Left operand of the comparison.
        lhs: Box<Expr>,
        /// Right operand of the comparison.
        rhs: Box<Expr>,
        /// Value when the comparison holds.
        then: Box<Expr>,
        /// Value otherwise.
        otherwise: Box<Expr>,
    },
}

impl Expr {
    /// `a op b`.
    pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    /// Visits every node, children before parents.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        match self {
            Expr::Lit(_) | Expr::Param(_) | Expr::Load(_) | Expr::Temp(_) => {}
            Expr::Unary(_, a) => a.visit(f),
            Expr::Binary(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Fma(a, b, c) => {
                a.visit(f);
                b.visit(f);
                c.visit(f);
            }
            Expr::Select {
                lhs,
                rhs,
                then,
                otherwise,
                ..
            } => {
                lhs.visit(f);
                rhs.visit(f);
                then.visit(f);
                otherwise.visit(f);
            }
        }
        f(self);
    }

    /// The loads of this expression, in evaluation order.
    pub fn loads(&self) -> Vec<Access> {
        let mut out = Vec::new();
        self.visit(&mut |e| {
            if let Expr::Load(a) = e {
                out.push(*a);
            }
        });
        out
    }
}

impl fmt::Display for BinOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Min => "min",
            BinOp::Max => "max",
        })
    }
}

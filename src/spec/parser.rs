//! Recursive-descent parser of the update grammar into IR statements.
//!
//! ```text
//! program := stmt (sep stmt)*            sep: `;` or a line end outside brackets
//! stmt    := (access | name) `=` expr
//! expr    := term ((`+` | `-`) term)*
//! term    := unary ((`*` | `/`) unary)*
//! unary   := `-` unary | primary
//! primary := number | name | access | call | `(` expr `)`
//! access  := name `[` int (`,` int)* `]` (`(` int `)`)?     offsets, then the component
//! call    := fma(e,e,e) | sqrt(e) | min(e,e) | max(e,e) | select(e cmp e, e, e)
//! ```

use super::error::SemanticError;
use super::lexer::{tokenize, Tok, Token};
use crate::ir::{Access, Assignment, BinOp, Expr, Field, Param, Target, UnOp};

/// A parse failure at a byte offset of the update text.
#[derive(Debug)]
pub enum ParseError {
    /// Grammar violated.
    Syntax { at: usize, message: String },
    /// Grammar fine, meaning wrong.
    Semantic { at: usize, error: SemanticError },
}

/// The statements of an update, their start offsets, and the temporaries they introduced.
#[derive(Debug)]
pub struct ParsedUpdate {
    pub body: Vec<Assignment>,
    pub starts: Vec<usize>,
    pub temps: Vec<String>,
}

struct Parser<'a> {
    toks: Vec<Token>,
    pos: usize,
    dims: usize,
    fields: &'a [Field],
    params: &'a [Param],
    temps: Vec<String>,
    assigned: Vec<bool>,
}

/// Parses `src` against the declared fields and parameters of a `dims`-dimensional kernel.
pub fn parse_update(
    src: &str,
    dims: usize,
    fields: &[Field],
    params: &[Param],
) -> Result<ParsedUpdate, ParseError> {
    let toks = tokenize(src).map_err(|e| ParseError::Syntax {
        at: e.at,
        message: e.message,
    })?;
    let mut p = Parser {
        toks,
        pos: 0,
        dims,
        fields,
        params,
        temps: Vec::new(),
        assigned: Vec::new(),
    };
    let mut body = Vec::new();
    let mut starts = Vec::new();
    loop {
        while p.peek() == &Tok::Sep {
            p.pos += 1;
        }
        if p.peek() == &Tok::Eof {
            break;
        }
        starts.push(p.span().start);
        body.push(p.statement()?);
        match p.peek() {
            Tok::Sep | Tok::Eof => {}
            _ => return Err(p.expected("an operator or the end of the statement")),
        }
    }
    Ok(ParsedUpdate {
        body,
        starts,
        temps: p.temps,
    })
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn span(&self) -> std::ops::Range<usize> {
        self.toks[self.pos].span.clone()
    }

    fn next(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn expected(&self, what: &str) -> ParseError {
        ParseError::Syntax {
            at: self.span().start,
            message: format!("expected {what}, found {}", self.peek().describe()),
        }
    }

    fn expect(&mut self, tok: Tok, what: &str) -> Result<(), ParseError> {
        if *self.peek() == tok {
            self.next();
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    fn semantic(at: usize, error: SemanticError) -> ParseError {
        ParseError::Semantic { at, error }
    }

    fn statement(&mut self) -> Result<Assignment, ParseError> {
        let t = self.next();
        let Tok::Ident(name) = t.tok else {
            self.pos -= usize::from(t.tok != Tok::Eof);
            return Err(self.expected("a field access or a temporary name to assign to"));
        };
        let target = if *self.peek() == Tok::LBracket {
            Target::Store(self.access(&name, t.span.start)?)
        } else {
            if self.fields.iter().any(|f| f.name == name) {
                return Err(Self::semantic(
                    t.span.start,
                    SemanticError::FieldWithoutOffsets {
                        zeros: vec!["0"; self.dims].join(","),
                        name,
                    },
                ));
            }
            if self.params.iter().any(|p| p.name == name) {
                return Err(Self::semantic(
                    t.span.start,
                    SemanticError::NameClash {
                        name,
                        what: "parameter",
                    },
                ));
            }
            let id = match self.temps.iter().position(|n| *n == name) {
                Some(i) => i,
                None => {
                    self.temps.push(name);
                    self.assigned.push(false);
                    self.temps.len() - 1
                }
            };
            Target::Temp(id)
        };
        self.expect(Tok::Assign, "`=`")?;
        let value = self.expr()?;
        if let Target::Temp(id) = target {
            self.assigned[id] = true;
        }
        Ok(Assignment { target, value })
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.term()?;
        loop {
            let op = match self.peek() {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(lhs),
            };
            self.next();
            lhs = Expr::bin(op, lhs, self.term()?);
        }
    }

    fn term(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                _ => return Ok(lhs),
            };
            self.next();
            lhs = Expr::bin(op, lhs, self.unary()?);
        }
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        if *self.peek() == Tok::Minus {
            self.next();
            let inner = self.unary()?;
            // Fold negative literals so that `-1.5` is one literal, not an operation.
            return Ok(match inner {
                Expr::Lit(v) => Expr::Lit(-v),
                e => Expr::Unary(UnOp::Neg, Box::new(e)),
            });
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        let t = self.next();
        match t.tok {
            Tok::Num(v, text) => {
                if !v.is_finite() {
                    return Err(Self::semantic(
                        t.span.start,
                        SemanticError::NonFiniteLiteral { text },
                    ));
                }
                Ok(Expr::Lit(v))
            }
            Tok::LParen => {
                let e = self.expr()?;
                self.expect(Tok::RParen, "`)`")?;
                Ok(e)
            }
            Tok::Ident(name) => match self.peek() {
                Tok::LBracket => Ok(Expr::Load(self.access(&name, t.span.start)?)),
                Tok::LParen => self.call(&name, t.span.start),
                _ => self.name(name, t.span.start),
            },
            _ => {
                self.pos -= usize::from(t.tok != Tok::Eof);
                Err(self.expected("a number, a name, a field access or `(`"))
            }
        }
    }

    fn name(&self, name: String, at: usize) -> Result<Expr, ParseError> {
        if let Some(i) = self.temps.iter().position(|n| *n == name) {
            if self.assigned[i] {
                return Ok(Expr::Temp(i));
            }
        }
        if let Some(i) = self.params.iter().position(|p| p.name == name) {
            return Ok(Expr::Param(i));
        }
        if self.fields.iter().any(|f| f.name == name) {
            return Err(Self::semantic(
                at,
                SemanticError::FieldWithoutOffsets {
                    zeros: vec!["0"; self.dims].join(","),
                    name,
                },
            ));
        }
        let params: Vec<&str> = self.params.iter().map(|p| p.name.as_str()).collect();
        Err(Self::semantic(
            at,
            SemanticError::UnknownName {
                name,
                params: if params.is_empty() {
                    "none declared".into()
                } else {
                    params.join(", ")
                },
            },
        ))
    }

    fn int(&mut self) -> Result<(i64, usize), ParseError> {
        let at = self.span().start;
        let neg = match self.peek() {
            Tok::Minus => {
                self.next();
                true
            }
            Tok::Plus => {
                self.next();
                false
            }
            _ => false,
        };
        match self.peek().clone() {
            Tok::Num(v, text) if v.fract() == 0.0 && !text.contains(['.', 'e', 'E']) => {
                self.next();
                // Offsets beyond ±2^20 are nonsense for a stencil; keep them out of i32 overflow.
                if v > (1 << 20) as f64 {
                    return Err(ParseError::Syntax {
                        at,
                        message: format!("integer `{text}` is too large"),
                    });
                }
                Ok((if neg { -(v as i64) } else { v as i64 }, at))
            }
            _ => Err(self.expected("an integer")),
        }
    }

    fn access(&mut self, name: &str, at: usize) -> Result<Access, ParseError> {
        let Some(field) = self.fields.iter().position(|f| f.name == name) else {
            let known: Vec<&str> = self.fields.iter().map(|f| f.name.as_str()).collect();
            return Err(Self::semantic(
                at,
                SemanticError::UnknownField {
                    name: name.to_string(),
                    known: known.join(", "),
                },
            ));
        };
        self.expect(Tok::LBracket, "`[`")?;
        let mut offs = vec![self.int()?.0];
        while *self.peek() == Tok::Comma {
            self.next();
            offs.push(self.int()?.0);
        }
        self.expect(Tok::RBracket, "`,` or `]`")?;
        if offs.len() != self.dims {
            return Err(Self::semantic(
                at,
                SemanticError::OffsetCount {
                    field: name.to_string(),
                    found: offs.len(),
                    dims: self.dims,
                },
            ));
        }
        let mut offset = [0i32; 3];
        for (o, v) in offset.iter_mut().zip(&offs) {
            *o = *v as i32;
        }
        let components = self.fields[field].components;
        let mut index = 0usize;
        if *self.peek() == Tok::LParen {
            self.next();
            let (q, qat) = self.int()?;
            self.expect(Tok::RParen, "`)`")?;
            if q < 0 || q as usize >= components {
                return Err(Self::semantic(
                    qat,
                    SemanticError::BadComponent {
                        field: name.to_string(),
                        index: q,
                        components,
                    },
                ));
            }
            index = q as usize;
        }
        Ok(Access {
            field,
            offset,
            index,
        })
    }

    fn call(&mut self, name: &str, at: usize) -> Result<Expr, ParseError> {
        let arity = match name {
            "fma" => 3,
            "sqrt" => 1,
            "min" | "max" => 2,
            "select" => 3,
            _ => {
                return Err(Self::semantic(
                    at,
                    SemanticError::UnknownFunction {
                        name: name.to_string(),
                    },
                ))
            }
        };
        self.expect(Tok::LParen, "`(`")?;
        let mut args = Vec::new();
        let mut cmp = None;
        if *self.peek() != Tok::RParen {
            loop {
                args.push(self.expr()?);
                if name == "select" && args.len() == 1 {
                    let Tok::Cmp(c) = *self.peek() else {
                        return Err(self.expected("a comparison (< <= > >= == !=)"));
                    };
                    self.next();
                    cmp = Some((c, self.expr()?));
                }
                if *self.peek() != Tok::Comma {
                    break;
                }
                self.next();
            }
        }
        self.expect(Tok::RParen, "`,` or `)`")?;
        if args.len() != arity {
            return Err(Self::semantic(
                at,
                SemanticError::ArgumentCount {
                    name: name.to_string(),
                    expected: arity,
                    found: args.len(),
                },
            ));
        }
        let mut it = args.into_iter().map(Box::new);
        let mut arg = || it.next().expect("arity checked above");
        Ok(match name {
            "fma" => Expr::Fma(arg(), arg(), arg()),
            "sqrt" => Expr::Unary(UnOp::Sqrt, arg()),
            "min" => Expr::Binary(BinOp::Min, arg(), arg()),
            "max" => Expr::Binary(BinOp::Max, arg(), arg()),
            _ => {
                let (cmp, rhs) = cmp.expect("select parsed its comparison");
                Expr::Select {
                    cmp,
                    lhs: arg(),
                    rhs: Box::new(rhs),
                    then: arg(),
                    otherwise: arg(),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Dtype, FieldRole};

    fn fields() -> Vec<Field> {
        vec![
            Field::scalar("u", Dtype::F64, 1, FieldRole::Input),
            Field::scalar("v", Dtype::F64, 1, FieldRole::Output),
        ]
    }

    fn params() -> Vec<Param> {
        vec![Param {
            name: "c0".into(),
            value: 0.5,
        }]
    }

    #[test]
    fn parses_precedence_and_temps() {
        let p = parse_update(
            "t = u[1,0,0] - u[-1,0,0]\nv[0,0,0] = c0*t + 2*u[0,0,0] / 3; ",
            3,
            &fields(),
            &params(),
        )
        .unwrap();
        assert_eq!(p.body.len(), 2);
        assert_eq!(p.temps, vec!["t".to_string()]);
        assert_eq!(p.starts, vec![0, 25]);
        // c0*t + ((2*u)/3)
        let Expr::Binary(BinOp::Add, l, r) = &p.body[1].value else {
            panic!("expected an addition at the top: {:?}", p.body[1].value)
        };
        assert!(matches!(**l, Expr::Binary(BinOp::Mul, _, _)));
        assert!(matches!(**r, Expr::Binary(BinOp::Div, _, _)));
    }

    #[test]
    fn functions_and_select() {
        let p = parse_update(
            "v[0,0,0] = select(u[0,0,0] < 0, -u[0,0,0], fma(c0, sqrt(u[0,0,0]), max(1, min(2, 3))))",
            3,
            &fields(),
            &params(),
        )
        .unwrap();
        assert!(matches!(p.body[0].value, Expr::Select { .. }));
    }

    #[test]
    fn errors_point_at_the_token() {
        let err = |src: &str| parse_update(src, 3, &fields(), &params()).unwrap_err();
        match err("v[0,0,0] = w[0,0,0]") {
            ParseError::Semantic { at, error } => {
                assert_eq!(at, 11);
                assert!(matches!(error, SemanticError::UnknownField { .. }));
            }
            e => panic!("{e:?}"),
        }
        match err("v[0,0,0] = u[0,0]") {
            ParseError::Semantic { error, .. } => {
                assert!(matches!(error, SemanticError::OffsetCount { found: 2, .. }))
            }
            e => panic!("{e:?}"),
        }
        match err("v[0,0,0] = (u[0,0,0] + 1") {
            ParseError::Syntax { at, message } => {
                assert_eq!(at, 24);
                assert!(message.contains("expected `)`"), "{message}");
            }
            e => panic!("{e:?}"),
        }
        assert!(matches!(
            err("v[0,0,0] = 1e999"),
            ParseError::Semantic {
                error: SemanticError::NonFiniteLiteral { .. },
                ..
            }
        ));
        assert!(matches!(
            err("v[0,0,0] = t"),
            ParseError::Semantic {
                error: SemanticError::UnknownName { .. },
                ..
            }
        ));
        assert!(matches!(
            err("v[0,0,0] = foo(1)"),
            ParseError::Semantic {
                error: SemanticError::UnknownFunction { .. },
                ..
            }
        ));
        assert!(matches!(
            err("v[0,0,0] = min(1)"),
            ParseError::Semantic {
                error: SemanticError::ArgumentCount { .. },
                ..
            }
        ));
        assert!(matches!(
            err("v[0,0,0] = u[0,0,0](1)"),
            ParseError::Semantic {
                error: SemanticError::BadComponent { .. },
                ..
            }
        ));
        assert!(matches!(err("v[0,0,0] = 1 2"), ParseError::Syntax { .. }));
        assert!(matches!(err("= 1"), ParseError::Syntax { .. }));
    }
}

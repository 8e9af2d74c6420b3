//! Tokens of the update grammar, with byte spans into the update text.

use std::ops::Range;

/// A token kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Num(f64, String),
    Ident(String),
    Plus,
    Minus,
    Star,
    Slash,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Assign,
    Cmp(crate::ir::CmpOp),
    /// A statement separator: `;` or a newline outside brackets that does not follow an operator.
    Sep,
    Eof,
}

impl Tok {
    /// How the token is described in "expected X, found Y" messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Num(_, t) => format!("number `{t}`"),
            Tok::Ident(s) => format!("name `{s}`"),
            Tok::Plus => "`+`".into(),
            Tok::Minus => "`-`".into(),
            Tok::Star => "`*`".into(),
            Tok::Slash => "`/`".into(),
            Tok::LParen => "`(`".into(),
            Tok::RParen => "`)`".into(),
            Tok::LBracket => "`[`".into(),
            Tok::RBracket => "`]`".into(),
            Tok::Comma => "`,`".into(),
            Tok::Assign => "`=`".into(),
            Tok::Cmp(c) => format!("`{}`", c.symbol()),
            Tok::Sep => "end of statement".into(),
            Tok::Eof => "end of update".into(),
        }
    }

    /// Tokens after which a newline continues the statement.
    fn continues(&self) -> bool {
        matches!(
            self,
            Tok::Plus
                | Tok::Minus
                | Tok::Star
                | Tok::Slash
                | Tok::Assign
                | Tok::Comma
                | Tok::Cmp(_)
                | Tok::Sep
        )
    }
}

/// A token and its byte span.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Range<usize>,
}

/// A lexing failure at a byte offset.
#[derive(Debug)]
pub struct LexError {
    pub at: usize,
    pub message: String,
}

/// Splits the update text into tokens; `#` starts a comment to the end of the line.
pub fn tokenize(src: &str) -> Result<Vec<Token>, LexError> {
    use crate::ir::CmpOp;
    let bytes = src.as_bytes();
    let mut out: Vec<Token> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        let single = |t: Tok| Some((t, 1));
        let tok: Option<(Tok, usize)> = match c {
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'\n' => {
                let continues = out.last().map(|t| t.tok.continues()).unwrap_or(true);
                i += 1;
                if depth == 0 && !continues {
                    out.push(Token {
                        tok: Tok::Sep,
                        span: start..start + 1,
                    });
                }
                continue;
            }
            b';' => single(Tok::Sep),
            b'+' => single(Tok::Plus),
            b'-' => single(Tok::Minus),
            b'*' => single(Tok::Star),
            b'/' => single(Tok::Slash),
            b'(' => {
                depth += 1;
                single(Tok::LParen)
            }
            b')' => {
                depth = depth.saturating_sub(1);
                single(Tok::RParen)
            }
            b'[' => {
                depth += 1;
                single(Tok::LBracket)
            }
            b']' => {
                depth = depth.saturating_sub(1);
                single(Tok::RBracket)
            }
            b',' => single(Tok::Comma),
            b'=' if bytes.get(i + 1) == Some(&b'=') => Some((Tok::Cmp(CmpOp::Eq), 2)),
            b'=' => single(Tok::Assign),
            b'!' if bytes.get(i + 1) == Some(&b'=') => Some((Tok::Cmp(CmpOp::Ne), 2)),
            b'<' if bytes.get(i + 1) == Some(&b'=') => Some((Tok::Cmp(CmpOp::Le), 2)),
            b'<' => single(Tok::Cmp(CmpOp::Lt)),
            b'>' if bytes.get(i + 1) == Some(&b'=') => Some((Tok::Cmp(CmpOp::Ge), 2)),
            b'>' => single(Tok::Cmp(CmpOp::Gt)),
            b'0'..=b'9' | b'.' => {
                let mut j = i;
                while j < bytes.len() && (bytes[j].is_ascii_digit() || bytes[j] == b'.') {
                    j += 1;
                }
                if j < bytes.len() && (bytes[j] == b'e' || bytes[j] == b'E') {
                    let mut k = j + 1;
                    if k < bytes.len() && (bytes[k] == b'+' || bytes[k] == b'-') {
                        k += 1;
                    }
                    if k < bytes.len() && bytes[k].is_ascii_digit() {
                        while k < bytes.len() && bytes[k].is_ascii_digit() {
                            k += 1;
                        }
                        j = k;
                    }
                }
                let text = &src[i..j];
                match text.parse::<f64>() {
                    Ok(v) => Some((Tok::Num(v, text.to_string()), j - i)),
                    Err(_) => {
                        return Err(LexError {
                            at: i,
                            message: format!("malformed number `{text}`"),
                        })
                    }
                }
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let mut j = i;
                while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                    j += 1;
                }
                Some((Tok::Ident(src[i..j].to_string()), j - i))
            }
            _ => {
                let ch = src[i..].chars().next().unwrap_or('?');
                return Err(LexError {
                    at: i,
                    message: format!(
                        "unexpected character `{ch}` (expected a name, a number, an operator + - * / or one of ( ) [ ] , = ;)"
                    ),
                });
            }
        };
        if let Some((t, len)) = tok {
            out.push(Token {
                tok: t,
                span: start..start + len,
            });
            i += len;
        }
    }
    out.push(Token {
        tok: Tok::Eof,
        span: src.len()..src.len(),
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_separates_only_complete_statements() {
        let toks = tokenize("a = b +\n c\nd[0,\n1] = 2 # note\n").unwrap();
        let seps = toks.iter().filter(|t| t.tok == Tok::Sep).count();
        assert_eq!(seps, 2);
    }

    #[test]
    fn numbers_and_comparisons() {
        let toks = tokenize("x = 1.5e-3 <= .5").unwrap();
        assert!(matches!(toks[2].tok, Tok::Num(v, _) if (v - 1.5e-3).abs() < 1e-18));
        assert_eq!(toks[3].tok, Tok::Cmp(crate::ir::CmpOp::Le));
        assert!(tokenize("x = 1..2").is_err());
        assert!(tokenize("x = $").is_err());
    }
}

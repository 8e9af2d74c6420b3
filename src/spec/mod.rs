//! Definition files (TOML) into IR kernels; every error names file, line and column.

mod definition;
mod error;
mod lbm_file;
mod lexer;
mod machine_file;
mod parser;
mod shapes;
mod stencil;
mod toml_text;

pub use definition::{load_definition, load_definition_step, parse_definition, Definition};
pub use error::{Location, SemanticError, SpecError};
pub use lbm_file::{load_lbm, parse_lbm, LbmDefinition};
pub use machine_file::{load_machine, parse_machine, MachineError};
pub use parser::{parse_update, ParseError, ParsedUpdate};
pub use shapes::{shape_kernel, Shape, ShapeKind};
pub use stencil::{load_stencil, parse_stencil, StencilDefinition};

/// Line and column (1-based, column in characters) of byte `offset` in `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    // Step back to a character boundary so slicing cannot panic.
    let mut o = offset;
    while !text.is_char_boundary(o) {
        o -= 1;
    }
    let before = &text[..o];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn line_col_counts_characters() {
        assert_eq!(super::line_col("ab\ncd", 0), (1, 1));
        assert_eq!(super::line_col("ab\ncd", 4), (2, 2));
        assert_eq!(super::line_col("é\nx", 3), (2, 1));
        assert_eq!(super::line_col("é", 1), (1, 1));
        assert_eq!(super::line_col("ab", 99), (1, 3));
    }
}

#[cfg(test)]
mod roundtrip_tests;

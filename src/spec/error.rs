use crate::ir::IrError;
use std::fmt;

/// A position in a definition file: 1-based line and column (in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file as given by the user.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// Why a definition file was rejected.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file could not be read.
    #[error("{file}: cannot read the file: {source}")]
    Io {
        /// The file.
        file: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The text does not follow TOML or the update grammar.
    #[error("{loc}: syntax error: {message}")]
    Syntax {
        /// Where.
        loc: Location,
        /// What was found and what was expected.
        message: String,
    },
    /// The text parses but means something invalid.
    #[error("{loc}: {kind}")]
    Invalid {
        /// Where.
        loc: Location,
        /// What is wrong.
        kind: SemanticError,
    },
}

impl SpecError {
    /// The location, for errors that have one.
    pub fn location(&self) -> Option<&Location> {
        match self {
            SpecError::Io { .. } => None,
            SpecError::Syntax { loc, .. } | SpecError::Invalid { loc, .. } => Some(loc),
        }
    }

    /// The semantic error, if this is one.
    pub fn semantic(&self) -> Option<&SemanticError> {
        match self {
            SpecError::Invalid { kind, .. } => Some(kind),
            _ => None,
        }
    }
}

/// Semantic errors of definition files.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SemanticError {
    /// An access to a field that is not declared.
    #[error("unknown field `{name}` (declared fields: {known})")]
    UnknownField {
        /// The name used.
        name: String,
        /// The declared fields, comma-separated.
        known: String,
    },
    /// A bare name that is neither a parameter nor an assigned temporary.
    #[error("unknown name `{name}`: not a parameter ({params}) nor a temporary assigned earlier")]
    UnknownName {
        /// The name used.
        name: String,
        /// The declared parameters, comma-separated.
        params: String,
    },
    /// A field used without offsets.
    #[error("field `{name}` needs offsets, e.g. `{name}[{zeros}]`")]
    FieldWithoutOffsets {
        /// Field name.
        name: String,
        /// `0,0` or `0,0,0`.
        zeros: String,
    },
    /// A temporary or parameter name that is already a field or parameter.
    #[error("cannot assign to `{name}`: it is a {what}")]
    NameClash {
        /// The name.
        name: String,
        /// "field" or "parameter".
        what: &'static str,
    },
    /// An unknown function.
    #[error("unknown function `{name}` (valid: fma(a,b,c), sqrt(a), min(a,b), max(a,b), select(a < b, x, y))")]
    UnknownFunction {
        /// The name used.
        name: String,
    },
    /// Wrong number of arguments to a function.
    #[error("`{name}` takes {expected} argument(s), found {found}")]
    ArgumentCount {
        /// Function.
        name: String,
        /// Expected count.
        expected: usize,
        /// Found count.
        found: usize,
    },
    /// Number of offsets differs from the kernel's dimensions.
    #[error("dimension mismatch: `{field}` is accessed with {found} offset(s) but the kernel is {dims}D (write {dims} offsets)")]
    OffsetCount {
        /// Field name.
        field: String,
        /// Offsets written.
        found: usize,
        /// Kernel dimensions.
        dims: usize,
    },
    /// A component index on a scalar field or out of range.
    #[error("field `{field}` has {components} component(s); component {index} does not exist")]
    BadComponent {
        /// Field name.
        field: String,
        /// Index used.
        index: i64,
        /// Components of the field.
        components: usize,
    },
    /// `update` (or `[shape]`) is missing or has no statement.
    #[error("empty update: give `update = \"v[0,0,0] = ...\"` or a `[shape]` table")]
    EmptyUpdate,
    /// Both `update` and `[shape]` were given.
    #[error("give either `update` or `[shape]`, not both")]
    UpdateAndShape,
    /// A literal that is infinite or NaN.
    #[error("non-finite literal `{text}` (literals must be finite numbers)")]
    NonFiniteLiteral {
        /// The literal as written.
        text: String,
    },
    /// A parameter value that is infinite or NaN.
    #[error("parameter `{name}` is not finite ({value}); give a finite number")]
    NonFiniteParam {
        /// Parameter.
        name: String,
        /// The value.
        value: f64,
    },
    /// A domain size of zero or less, or a wrong number of sizes.
    #[error("invalid domain {found}: give {dims} sizes, each at least 1")]
    BadDomain {
        /// The domain as written.
        found: String,
        /// Kernel dimensions.
        dims: usize,
    },
    /// A dtype other than f32/f64.
    #[error("unknown dtype `{found}` (valid: f32, f64)")]
    UnknownDtype {
        /// The value found.
        found: String,
    },
    /// A layout other than fzyx/zyxf.
    #[error("unknown layout `{found}` (valid: fzyx (SoA), zyxf (AoS))")]
    UnknownLayout {
        /// The value found.
        found: String,
    },
    /// A role other than input/output/inout.
    #[error("unknown role `{found}` (valid: input, output, inout)")]
    UnknownRole {
        /// The value found.
        found: String,
    },
    /// A shape kind other than star/box.
    #[error("unknown shape `{found}` (valid: star, box)")]
    UnknownShape {
        /// The value found.
        found: String,
    },
    /// Dimensions other than 2 or 3.
    #[error("dims = {found}: stencilscope supports 2 or 3 dimensions")]
    BadDims {
        /// The value found.
        found: i64,
    },
    /// A negative or absurd integer setting.
    #[error("`{key}` = {found} is out of range ({valid})")]
    OutOfRange {
        /// The key.
        key: &'static str,
        /// The value found.
        found: i64,
        /// What would be valid.
        valid: &'static str,
    },
    /// Wrong number of shape coefficients.
    #[error("a {shape} stencil of radius {radius} in {dims}D needs {expected} coefficients ({meaning}), found {found}")]
    CoefficientCount {
        /// star or box.
        shape: String,
        /// Radius.
        radius: usize,
        /// Dimensions.
        dims: usize,
        /// Needed.
        expected: usize,
        /// Given.
        found: usize,
        /// What each coefficient weighs.
        meaning: &'static str,
    },
    /// A field declared twice, or input and output with one name.
    #[error("field `{0}` is declared twice")]
    DuplicateField(String),
    /// A name that is not an identifier.
    #[error("`{0}` is not a valid name (letters, digits and `_`, not starting with a digit)")]
    BadName(String),
    /// A rule of the IR.
    #[error("{0}")]
    Ir(IrError),
    /// An invalid LBM setting or combination.
    #[error("{0}")]
    Lbm(crate::lbm::LbmError),
}

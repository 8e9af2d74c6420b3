//! Source emitters: OpenCL C, WGSL and CUDA C from a kernel, a launch configuration and a domain.
//!
//! All three share one structure (naga-style `write_string(kernel, config, domain, &Options)`):
//!
//! - **Compile-time constants.** Domain sizes, field strides, ghost offsets and parameter values
//!   are printed as literals. Each emitted kernel is specialised for one domain (a configuration
//!   is only ranked for one domain anyway), so every address is a per-thread base plus a literal,
//!   which is the fastest code and keeps the address expressions fully numeric: the footprint
//!   visitor evaluates exactly the objects printed here. Changing a parameter or the domain means
//!   emitting again (microseconds) and compiling again (milliseconds).
//! - **Addresses.** For each field, the per-thread base index is the variable part of
//!   [`address::element_index`] over thread and block indices, printed once per thread; every
//!   access prints as `base + constant`, the constant being that same expression at the access's
//!   offset and fold point. Fold loops are unrolled by the emitter, so all targets get identical
//!   straight-line code without relying on a compiler's unrolling.
//! - **Loads.** Each distinct element is loaded once per thread into a temporary `ld_<point>_<slot>`
//!   and later fold points that read it use that temporary ([`LoadSharing`], which the footprint
//!   visitor counts from too), rather than leaving the merge to a compiler.
//! - **Guards.** A fold point is guarded per dimension only where the domain is not a multiple of
//!   the tile; fold points that lie outside the domain for every thread are not emitted at all.
//!   The guards keep every access inside its buffer, which is why the WebGPU backend may skip
//!   wgpu's own runtime bounds checks.
//! - **Index width.** 32-bit index arithmetic when every index the grid can form fits, 64-bit
//!   otherwise (OpenCL `long`, CUDA `long long`); WGSL always uses `u32` and refuses larger fields.
//! - **Buffers.** One buffer argument (binding) per field, in field order, named `fld_<name>`;
//!   temporaries are `tmp_<name>` and bases `base_<name>`, so no IR name collides with a target's
//!   keywords.

pub mod cuda;
pub mod opencl;
pub mod wgsl;

use crate::address::{self, AffineExpr, LoadSharing};
use crate::config::{ConfigError, LaunchConfig};
use crate::ir::{
    Access, BinOp, CmpOp, Domain, Dtype, Expr, FieldLayout, IrError, Kernel, Target, UnOp,
};
use std::fmt::Write;

/// A source language the emitters produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// OpenCL C 1.2.
    OpenCl,
    /// WGSL (WebGPU).
    Wgsl,
    /// CUDA C++ (NVRTC).
    Cuda,
}

impl Language {
    /// Name as used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Language::OpenCl => "opencl",
            Language::Wgsl => "wgsl",
            Language::Cuda => "cuda",
        }
    }
}

/// Options shared by all emitters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Name of the entry point; the kernel's name when `None`.
    pub entry_point: Option<String>,
    /// WGSL: the most workgroups a dispatch may have per dimension (wgpu's
    /// `max_compute_workgroups_per_dimension`, 65535 by default). A grid with more blocks in some
    /// dimension is dispatched as a linear sequence of workgroups that the kernel maps back to
    /// block indices.
    pub max_groups_per_dim: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            entry_point: None,
            max_groups_per_dim: 65535,
        }
    }
}

/// Why a kernel could not be emitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmitError {
    /// The kernel breaks an IR rule.
    #[error("invalid kernel: {0}")]
    Invalid(#[from] IrError),
    /// The launch configuration is unusable for this kernel.
    #[error("invalid launch configuration: {0}")]
    Config(#[from] ConfigError),
    /// The domain's dimensionality differs from the kernel's.
    #[error("domain {domain} is {found}D but kernel `{kernel}` is {expected}D")]
    DomainDims {
        /// Kernel name.
        kernel: String,
        /// The domain.
        domain: Domain,
        /// Domain dimensions.
        found: usize,
        /// Kernel dimensions.
        expected: usize,
    },
    /// An empty domain.
    #[error("domain {0} has no points; every size must be at least 1")]
    EmptyDomain(Domain),
    /// An entry point name that is not an identifier.
    #[error("entry point `{0}` is not an identifier (use letters, digits and `_`, not starting with a digit)")]
    BadEntryPoint(String),
    /// An element index exceeds what the target can address.
    #[error("field `{field}` needs element indices up to {max_index}, beyond {target}'s limit of {limit}; use a smaller domain")]
    IndexOverflow {
        /// Field name.
        field: String,
        /// Largest index the grid forms.
        max_index: i64,
        /// Target language.
        target: &'static str,
        /// Largest index the target supports.
        limit: i64,
    },
    /// A literal or parameter too large for an f32 kernel.
    #[error("{what} = {value} does not fit in f32 (largest finite is {max}); use dtype f64", max = f32::MAX)]
    F32Range {
        /// Which literal or parameter.
        what: String,
        /// Its value.
        value: f64,
    },
    /// The grid needs more workgroups than a dispatch can have even after linearisation.
    #[error("the grid has {blocks} blocks, more than a dispatch of {max}^3 workgroups can cover")]
    TooManyBlocks {
        /// Blocks in the grid.
        blocks: u64,
        /// Workgroups per dimension.
        max: u32,
    },
    /// A WGSL module that naga rejects: a bug in the emitter, reported with the offending line.
    #[error("emitted WGSL is invalid: {message}\n  at line {line}: {source_line}")]
    InvalidWgsl {
        /// naga's message.
        message: String,
        /// 1-based line number (0 when naga gave no location).
        line: usize,
        /// The offending line of WGSL.
        source_line: String,
    },
}

/// Emits `kernel` for `lang`; the same as calling the target module's `write_string`.
pub fn emit(
    lang: Language,
    kernel: &Kernel,
    config: &LaunchConfig,
    domain: &Domain,
    options: &Options,
) -> Result<String, EmitError> {
    match lang {
        Language::OpenCl => opencl::write_string(kernel, config, domain, options),
        Language::Wgsl => wgsl::write_string(kernel, config, domain, options),
        Language::Cuda => cuda::write_string(kernel, config, domain, options),
    }
}

/// Everything the emitters derive from (kernel, configuration, domain) before printing.
#[derive(Debug, Clone)]
pub(crate) struct Plan<'a> {
    pub kernel: &'a Kernel,
    pub config: LaunchConfig,
    pub domain: Domain,
    pub entry: String,
    pub layouts: Vec<FieldLayout>,
    /// Per field: the per-thread base index (thread and block terms only).
    pub bases: Vec<AffineExpr>,
    /// Per dimension: the per-thread coordinate (thread and block terms only).
    pub coords: [AffineExpr; 3],
    /// Per dimension: whether fold points need a guard.
    pub guard: [bool; 3],
    /// The fold points to emit, `(i, j, k)`, x fastest; points outside the domain for every
    /// thread are left out.
    pub points: Vec<[usize; 3]>,
    /// Per field: the largest element index any thread of the grid forms (or the buffer holds).
    pub max_index: Vec<i64>,
    /// Which loads each fold point issues and which reuse an earlier point's temporary.
    pub sharing: LoadSharing,
    /// Per issued load (`point · slots + slot`): whether a later fold point reads its temporary,
    /// which is then declared outside the point's block.
    pub exported: Vec<bool>,
}

impl<'a> Plan<'a> {
    pub fn new(
        kernel: &'a Kernel,
        config: &LaunchConfig,
        domain: &Domain,
        options: &Options,
    ) -> Result<Plan<'a>, EmitError> {
        kernel.validate()?;
        config.check(kernel.dims)?;
        if domain.dims != kernel.dims {
            return Err(EmitError::DomainDims {
                kernel: kernel.name.clone(),
                domain: *domain,
                found: domain.dims,
                expected: kernel.dims,
            });
        }
        if domain.points() == 0 {
            return Err(EmitError::EmptyDomain(*domain));
        }
        let entry = options
            .entry_point
            .clone()
            .unwrap_or_else(|| kernel.name.clone());
        if !is_identifier(&entry) {
            return Err(EmitError::BadEntryPoint(entry));
        }
        let layouts: Vec<FieldLayout> =
            kernel.fields.iter().map(|f| f.layout_for(domain)).collect();
        let origin = |field| Access {
            field,
            offset: [0; 3],
            index: 0,
        };
        let bases = layouts
            .iter()
            .enumerate()
            .map(|(f, l)| {
                address::element_index(l, &origin(f), config)
                    .at_fold_point([0; 3])
                    .variable_part()
            })
            .collect();
        let coords = [0, 1, 2].map(|d| address::coordinate(config, d).at_fold_point([0; 3]));
        let tile = config.tile();
        let guard = [0, 1, 2].map(|d| !domain.size[d].is_multiple_of(tile[d]));
        let mut points = Vec::new();
        for k in 0..config.fold[2] {
            for j in 0..config.fold[1] {
                for i in 0..config.fold[0] {
                    let p = [i, j, k];
                    // The smallest coordinate of this fold point over all threads is p·b.
                    if (0..3).all(|d| p[d] * config.block[d] < domain.size[d]) {
                        points.push(p);
                    }
                }
            }
        }
        let bounds = address::var_bounds(config, domain);
        let mut max_index: Vec<i64> = layouts.iter().map(|l| l.len() as i64 - 1).collect();
        for (a, _) in kernel.accesses() {
            let m = address::element_index(&layouts[a.field], &a, config).max_over(&bounds);
            max_index[a.field] = max_index[a.field].max(m);
        }
        if kernel.dtype() == Dtype::F32 {
            check_f32_range(kernel)?;
        }
        let sharing = LoadSharing::new(kernel, &layouts, config, domain);
        let slots = sharing.loads.len();
        let mut exported = vec![false; sharing.source.len()];
        for (q, s) in sharing.source.iter().flatten() {
            exported[q * slots + s] = true;
        }
        Ok(Plan {
            kernel,
            config: *config,
            domain: *domain,
            entry,
            layouts,
            bases,
            coords,
            guard,
            points,
            max_index,
            sharing,
            exported,
        })
    }

    /// Whether 32-bit signed index arithmetic suffices.
    pub fn fits_i32(&self) -> bool {
        self.max_index.iter().all(|m| *m < i32::MAX as i64)
    }

    /// The first field whose indices exceed `limit`, with its largest index.
    pub fn index_beyond(&self, limit: i64) -> Option<(String, i64)> {
        self.max_index
            .iter()
            .zip(&self.kernel.fields)
            .find(|(m, _)| **m > limit)
            .map(|(m, f)| (f.name.clone(), *m))
    }

    /// The constant of `access` at fold point `p`, relative to its field's base.
    pub fn offset(&self, access: &Access, p: [usize; 3]) -> i64 {
        let e = address::element_index(&self.layouts[access.field], access, &self.config)
            .at_fold_point(p);
        debug_assert_eq!(e.variable_part(), self.bases[access.field]);
        e.constant
    }

    /// The guard of fold point `p` as `(coordinate name, exclusive bound)` per guarded dimension:
    /// the point is inside when `x_d < bound` for each (bounds are at least 1).
    pub fn guards(&self, p: [usize; 3]) -> Vec<(&'static str, i64)> {
        (0..3)
            .filter(|&d| self.guard[d])
            .map(|d| {
                let c = (p[d] * self.config.block[d]) as i64;
                (COORD_NAMES[d], self.domain.size[d] as i64 - c)
            })
            .collect()
    }

    /// A comment block describing the kernel, in `//` comments (valid in all three targets).
    pub fn header(&self, lang: Language) -> String {
        let k = self.kernel;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "// {}: generated by stencilscope {} for {}",
            k.name,
            env!("CARGO_PKG_VERSION"),
            lang.name()
        );
        let _ = writeln!(
            s,
            "// {}D, {}, domain {}, {}, {} blocks {:?}",
            k.dims,
            k.dtype(),
            self.domain,
            self.config,
            self.config.blocks(&self.domain),
            self.config.grid(&self.domain)
        );
        for i in 0..k.body.len() {
            let _ = writeln!(s, "//   {}", k.statement_source(i));
        }
        for (f, l) in k.fields.iter().zip(&self.layouts) {
            let _ = writeln!(
                s,
                "// fld_{}: {} {} elements, extent {:?} x {} components, strides {:?} q {}",
                f.name,
                f.role,
                l.len(),
                l.extent,
                l.components,
                l.stride,
                l.stride_q
            );
        }
        s
    }
}

/// Rejects literals and parameter values that overflow f32 (they would print as `inf`).
fn check_f32_range(kernel: &Kernel) -> Result<(), EmitError> {
    let bad = |v: f64| v.is_finite() && !(v as f32).is_finite();
    for p in &kernel.params {
        if bad(p.value) {
            return Err(EmitError::F32Range {
                what: format!("parameter `{}`", p.name),
                value: p.value,
            });
        }
    }
    for (i, a) in kernel.body.iter().enumerate() {
        let mut found = None;
        a.value.visit(&mut |e| {
            if let Expr::Lit(v) = e {
                if bad(*v) {
                    found = Some(*v);
                }
            }
        });
        if let Some(value) = found {
            return Err(EmitError::F32Range {
                what: format!(
                    "a literal in statement {i} (`{}`)",
                    kernel.statement_source(i)
                ),
                value,
            });
        }
    }
    Ok(())
}

/// Names of the per-thread coordinates of fold point 0 in emitted code.
pub(crate) const COORD_NAMES: [&str; 3] = ["x0", "y0", "z0"];

/// Whether `s` is a plain identifier (ASCII letters, digits, `_`; not starting with a digit).
fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        && !s.starts_with("__")
}

/// How a target spells expressions.
pub(crate) trait Dialect {
    /// A floating-point literal of the kernel's dtype.
    fn literal(&self, v: f64) -> String;
    /// `min`/`max` call.
    fn minmax(&self, op: BinOp, a: &str, b: &str) -> String;
    /// Fused multiply-add.
    fn fma(&self, a: &str, b: &str, c: &str) -> String;
    /// Square root.
    fn sqrt(&self, a: &str) -> String;
    /// `cond ? then : otherwise`.
    fn select(&self, cond: &str, then: &str, otherwise: &str) -> String;
    /// An element index literal added to a base.
    fn index_literal(&self, v: i64) -> String;
}

/// Prints `e` fully parenthesised, with `load` spelling each field access.
pub(crate) fn print_expr(
    plan: &Plan,
    d: &dyn Dialect,
    e: &Expr,
    p: &dyn Fn(&Access) -> String,
) -> String {
    let k = plan.kernel;
    match e {
        Expr::Lit(v) => d.literal(*v),
        Expr::Param(i) => format!(
            "{} /* {} */",
            d.literal(k.params[*i].value),
            k.params[*i].name
        ),
        Expr::Load(a) => p(a),
        Expr::Temp(t) => format!("tmp_{}", k.temps[*t]),
        Expr::Unary(UnOp::Neg, a) => format!("(-{})", print_expr(plan, d, a, p)),
        Expr::Unary(UnOp::Sqrt, a) => d.sqrt(&print_expr(plan, d, a, p)),
        Expr::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => {
            d.minmax(*op, &print_expr(plan, d, a, p), &print_expr(plan, d, b, p))
        }
        Expr::Binary(op, a, b) => format!(
            "({} {op} {})",
            print_expr(plan, d, a, p),
            print_expr(plan, d, b, p)
        ),
        Expr::Fma(a, b, c) => d.fma(
            &print_expr(plan, d, a, p),
            &print_expr(plan, d, b, p),
            &print_expr(plan, d, c, p),
        ),
        Expr::Select {
            cmp,
            lhs,
            rhs,
            then,
            otherwise,
        } => {
            let cond = format!(
                "({} {} {})",
                print_expr(plan, d, lhs, p),
                cmp_symbol(*cmp),
                print_expr(plan, d, rhs, p)
            );
            d.select(
                &cond,
                &print_expr(plan, d, then, p),
                &print_expr(plan, d, otherwise, p),
            )
        }
    }
}

fn cmp_symbol(c: CmpOp) -> &'static str {
    c.symbol()
}

/// `fld_u[base_u + 1234]`.
pub(crate) fn element(plan: &Plan, d: &dyn Dialect, a: &Access, p: [usize; 3]) -> String {
    let name = &plan.kernel.fields[a.field].name;
    format!(
        "fld_{name}[base_{name} + {}]",
        d.index_literal(plan.offset(a, p))
    )
}

/// Name of the temporary holding load slot `slot` issued at fold point `point`.
fn load_name(point: usize, slot: usize) -> String {
    format!("ld_{point}_{slot}")
}

/// Prints the statements of fold point `p` (guard included) at indentation `ind`, with `decl`
/// spelling a temporary's declaration in the target.
///
/// Every load becomes a temporary, assigned just before the first statement that needs it (which
/// keeps the loads in statement order, not all at the top, for register pressure); one an
/// earlier fold point loaded is read from that point's temporary ([`LoadSharing`]). A load after
/// a store to the same element within the point reads memory again, as the statements say.
pub(crate) fn write_point(
    out: &mut String,
    plan: &Plan,
    d: &dyn Dialect,
    p: [usize; 3],
    guard_literal: &dyn Fn(i64) -> String,
    decl: &dyn Fn(&str) -> String,
) {
    let k = plan.kernel;
    let sh = &plan.sharing;
    let pi = sh.point_index(p);
    let slots = sh.loads.len();
    let _ = writeln!(
        out,
        "    // fold point (i, j, k) = ({}, {}, {})",
        p[0], p[1], p[2]
    );
    // Loads that later points reuse live outside this point's block.
    for s in 0..slots {
        if sh.source(pi, s).is_none() && plan.exported[pi * slots + s] {
            let _ = writeln!(out, "    {};", decl(&load_name(pi, s)));
        }
    }
    let guards = plan.guards(p);
    let inner = if guards.is_empty() {
        let _ = writeln!(out, "    {{");
        "        "
    } else {
        let cond: Vec<String> = guards
            .iter()
            .map(|(n, b)| format!("{n} < {}", guard_literal(*b)))
            .collect();
        let _ = writeln!(out, "    if ({}) {{", cond.join(" && "));
        "        "
    };
    let mut declared = vec![false; k.temps.len()];
    let mut loaded = vec![false; slots];
    let mut stored: Vec<Access> = Vec::new();
    for a in &k.body {
        for l in a.value.loads() {
            let Some(s) = sh.slot(&l) else { continue };
            if loaded[s] || stored.contains(&l) || sh.source(pi, s).is_some() {
                continue;
            }
            loaded[s] = true;
            let name = load_name(pi, s);
            let lhs = if plan.exported[pi * slots + s] {
                name
            } else {
                decl(&name)
            };
            let _ = writeln!(out, "{inner}{lhs} = {};", element(plan, d, &l, p));
        }
        let load = |l: &Access| -> String {
            match sh.slot(l) {
                Some(_) if stored.contains(l) => element(plan, d, l, p),
                Some(s) => match sh.source(pi, s) {
                    Some((q, qs)) => load_name(q, qs),
                    None => load_name(pi, s),
                },
                None => element(plan, d, l, p),
            }
        };
        let rhs = print_expr(plan, d, &a.value, &load);
        match &a.target {
            Target::Store(s) => {
                let _ = writeln!(out, "{inner}{} = {rhs};", element(plan, d, s, p));
                stored.push(*s);
            }
            Target::Temp(t) => {
                let name = format!("tmp_{}", k.temps[*t]);
                if declared[*t] {
                    let _ = writeln!(out, "{inner}{name} = {rhs};");
                } else {
                    declared[*t] = true;
                    let _ = writeln!(out, "{inner}{} = {rhs};", decl(&name));
                }
            }
        }
    }
    let _ = writeln!(out, "    }}");
}

/// Prints a finite f64 as a decimal literal that reads back exactly (always with `.` or `e`).
pub(crate) fn float_text(v: f64, dtype: Dtype) -> String {
    match dtype {
        Dtype::F32 => format!("{:?}", v as f32),
        Dtype::F64 => format!("{v:?}"),
    }
}

#[cfg(test)]
mod tests;

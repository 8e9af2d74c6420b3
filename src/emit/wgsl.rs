//! WGSL emitter: one `@compute @workgroup_size(bx, by, bz)` entry point, one storage binding per
//! field (group 0, binding = field index), `u32` index arithmetic.
//!
//! f64 kernels use WGSL's `f64` type and `lf` literals, which naga accepts when the validator has
//! `Capabilities::FLOAT64`; wgpu exposes that as `Features::SHADER_F64` (there is no `enable`
//! directive for it). Every module is validated with naga before it is returned, so a module
//! handed to wgpu is known to be valid WGSL.
//!
//! wgpu dispatches at most `max_groups_per_dim` (65535) workgroups per dimension. When the grid
//! has more blocks in some dimension, [`dispatch_size`] spreads the blocks linearly over up to
//! three dispatch dimensions and the kernel maps the linear workgroup index back to block indices
//! (x fastest, the same order as a direct grid), returning early past the last block.

use super::{write_point, Dialect, EmitError, Options, Plan, COORD_NAMES};
use crate::config::LaunchConfig;
use crate::ir::{BinOp, Domain, Dtype, FieldRole, Kernel};
use std::fmt::Write;

struct Wgsl {
    dtype: Dtype,
}

impl Dialect for Wgsl {
    fn literal(&self, v: f64) -> String {
        let t = super::float_text(v, self.dtype);
        let t = match self.dtype {
            Dtype::F32 => format!("{t}f"),
            Dtype::F64 => format!("{t}lf"),
        };
        if v < 0.0 {
            format!("({t})")
        } else {
            t
        }
    }
    fn minmax(&self, op: BinOp, a: &str, b: &str) -> String {
        let f = if op == BinOp::Min { "min" } else { "max" };
        format!("{f}({a}, {b})")
    }
    fn fma(&self, a: &str, b: &str, c: &str) -> String {
        format!("fma({a}, {b}, {c})")
    }
    fn sqrt(&self, a: &str) -> String {
        format!("sqrt({a})")
    }
    fn select(&self, cond: &str, then: &str, otherwise: &str) -> String {
        format!("select({otherwise}, {then}, {cond})")
    }
    fn index_literal(&self, v: i64) -> String {
        format!("{v}u")
    }
}

/// The workgroup counts to dispatch for `config` on `domain`: the grid itself when every
/// dimension fits `max_groups_per_dim`, otherwise the blocks spread linearly (see the module doc).
pub fn dispatch_size(
    config: &LaunchConfig,
    domain: &Domain,
    max_groups_per_dim: u32,
) -> Result<[u32; 3], EmitError> {
    let g = config.grid(domain);
    let max = max_groups_per_dim.max(1) as u64;
    if g.iter().all(|&n| n as u64 <= max) {
        return Ok(g.map(|n| n as u32));
    }
    let blocks = g.iter().map(|&n| n as u64).product::<u64>();
    let x = blocks.min(max);
    let y = blocks.div_ceil(x).min(max);
    let z = blocks.div_ceil(x * y);
    if z > max {
        return Err(EmitError::TooManyBlocks {
            blocks,
            max: max_groups_per_dim,
        });
    }
    Ok([x as u32, y as u32, z as u32])
}

/// Emits WGSL for `kernel` under `config` on `domain`, validated with naga.
pub fn write_string(
    kernel: &Kernel,
    config: &LaunchConfig,
    domain: &Domain,
    options: &Options,
) -> Result<String, EmitError> {
    let plan = Plan::new(kernel, config, domain, options)?;
    if let Some((field, max_index)) = plan.index_beyond(u32::MAX as i64) {
        return Err(EmitError::IndexOverflow {
            field,
            max_index,
            target: "wgsl",
            limit: u32::MAX as i64,
        });
    }
    let dtype = kernel.dtype();
    let d = Wgsl { dtype };
    let ty = match dtype {
        Dtype::F32 => "f32",
        Dtype::F64 => "f64",
    };
    let mut s = plan.header(super::Language::Wgsl);
    for (i, f) in kernel.fields.iter().enumerate() {
        let access = match f.role {
            FieldRole::Input => "read",
            FieldRole::Output | FieldRole::Inout => "read_write",
        };
        let _ = writeln!(
            s,
            "@group(0) @binding({i}) var<storage, {access}> fld_{}: array<{ty}>;",
            f.name
        );
    }
    let [bx, by, bz] = config.block;
    let _ = writeln!(s);
    let _ = writeln!(s, "@compute @workgroup_size({bx}, {by}, {bz})");
    let _ = writeln!(
        s,
        "fn {}(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {{",
        plan.entry
    );
    let _ = writeln!(s, "    let tx: u32 = lid.x;");
    let _ = writeln!(s, "    let ty: u32 = lid.y;");
    let _ = writeln!(s, "    let tz: u32 = lid.z;");
    let grid = config.grid(domain);
    let dispatch = dispatch_size(config, domain, options.max_groups_per_dim)?;
    if dispatch == grid.map(|n| n as u32) {
        let _ = writeln!(s, "    let bx: u32 = wid.x;");
        let _ = writeln!(s, "    let by: u32 = wid.y;");
        let _ = writeln!(s, "    let bz: u32 = wid.z;");
    } else {
        let [dx, dy, _] = dispatch;
        let blocks: usize = grid.iter().product();
        let _ = writeln!(
            s,
            "    // {blocks} blocks dispatched as {dispatch:?} workgroups: linear index back to blocks"
        );
        let _ = writeln!(
            s,
            "    let lin: u32 = wid.x + {dx}u * (wid.y + {dy}u * wid.z);"
        );
        let _ = writeln!(s, "    if (lin >= {blocks}u) {{ return; }}");
        let _ = writeln!(s, "    let bx: u32 = lin % {}u;", grid[0]);
        let _ = writeln!(s, "    let by: u32 = (lin / {}u) % {}u;", grid[0], grid[1]);
        let _ = writeln!(s, "    let bz: u32 = lin / {}u;", grid[0] * grid[1]);
    }
    for (f, base) in kernel.fields.iter().zip(&plan.bases) {
        let _ = writeln!(s, "    let base_{}: u32 = {};", f.name, wgsl_affine(base));
    }
    for ((name, coord), guarded) in COORD_NAMES.iter().zip(&plan.coords).zip(plan.guard) {
        if guarded {
            let _ = writeln!(s, "    let {name}: u32 = {};", wgsl_affine(coord));
        }
    }
    for p in &plan.points {
        write_point(&mut s, &plan, &d, *p, &|b| format!("{b}u"), &|n| {
            format!("var {n}: {ty}")
        });
    }
    let _ = writeln!(s, "}}");
    validate(&s, dtype)?;
    Ok(s)
}

/// Prints an address expression for WGSL: the shared `Display` form with `u32` literals (its
/// coefficients and, for bases, constants are never negative, so `u32` arithmetic is exact).
fn wgsl_affine(e: &crate::address::AffineExpr) -> String {
    debug_assert!(e.constant >= 0 && e.coeffs.iter().all(|c| *c >= 0));
    let mut out = String::new();
    // `Display` prints `c*v` terms joined by ` + `; suffix every integer with `u`.
    let text = e.to_string();
    let mut num = String::new();
    for ch in text.chars() {
        if ch.is_ascii_digit() {
            num.push(ch);
        } else {
            if !num.is_empty() {
                out.push_str(&num);
                out.push('u');
                num.clear();
            }
            out.push(ch);
        }
    }
    if !num.is_empty() {
        out.push_str(&num);
        out.push('u');
    }
    out
}

/// Parses and validates `source` with naga (f64 enabled when `dtype` is f64). An error quotes the
/// offending line.
pub fn validate(source: &str, dtype: Dtype) -> Result<naga::Module, EmitError> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| {
        let line = e.location(source).map(|l| l.line_number as usize);
        located(source, e.message().to_string(), line)
    })?;
    let mut caps = naga::valid::Capabilities::empty();
    if dtype == Dtype::F64 {
        caps |= naga::valid::Capabilities::FLOAT64;
    }
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(|e| {
            let line = e.location(source).map(|l| l.line_number as usize);
            let mut message = e.as_inner().to_string();
            let mut src: Option<&(dyn std::error::Error + 'static)> =
                std::error::Error::source(e.as_inner());
            while let Some(inner) = src {
                message.push_str(": ");
                message.push_str(&inner.to_string());
                src = inner.source();
            }
            located(source, message, line)
        })?;
    Ok(module)
}

fn located(source: &str, message: String, line: Option<usize>) -> EmitError {
    let n = line.unwrap_or(0);
    let source_line = match n {
        0 => "(no location given)".to_string(),
        n => source.lines().nth(n - 1).unwrap_or("").trim().to_string(),
    };
    EmitError::InvalidWgsl {
        message,
        line: n,
        source_line,
    }
}

//! OpenCL C 1.2 emitter: one `__kernel` with `reqd_work_group_size`, `cl_khr_fp64` for f64.
//!
//! Launch with a 3D NDRange of `grid · block` work-items and local size `block` (2D kernels use
//! z = 1). Buffer arguments follow the kernel's field order.

use super::{write_point, Dialect, EmitError, Options, Plan, COORD_NAMES};
use crate::config::LaunchConfig;
use crate::ir::{BinOp, Domain, Dtype, FieldRole, Kernel};
use std::fmt::Write;

struct OpenCl {
    dtype: Dtype,
}

impl Dialect for OpenCl {
    fn literal(&self, v: f64) -> String {
        let t = super::float_text(v, self.dtype);
        let t = match self.dtype {
            Dtype::F32 => format!("{t}f"),
            Dtype::F64 => t,
        };
        if v < 0.0 {
            format!("({t})")
        } else {
            t
        }
    }
    fn minmax(&self, op: BinOp, a: &str, b: &str) -> String {
        let f = if op == BinOp::Min { "fmin" } else { "fmax" };
        format!("{f}({a}, {b})")
    }
    fn fma(&self, a: &str, b: &str, c: &str) -> String {
        format!("fma({a}, {b}, {c})")
    }
    fn sqrt(&self, a: &str) -> String {
        format!("sqrt({a})")
    }
    fn select(&self, cond: &str, then: &str, otherwise: &str) -> String {
        format!("({cond} ? {then} : {otherwise})")
    }
    fn index_literal(&self, v: i64) -> String {
        v.to_string()
    }
}

/// C type name of a dtype.
fn ctype(d: Dtype) -> &'static str {
    match d {
        Dtype::F32 => "float",
        Dtype::F64 => "double",
    }
}

/// Emits OpenCL C for `kernel` under `config` on `domain`.
pub fn write_string(
    kernel: &Kernel,
    config: &LaunchConfig,
    domain: &Domain,
    options: &Options,
) -> Result<String, EmitError> {
    let plan = Plan::new(kernel, config, domain, options)?;
    let dtype = kernel.dtype();
    let d = OpenCl { dtype };
    let idx = if plan.fits_i32() { "int" } else { "long" };
    let mut s = plan.header(super::Language::OpenCl);
    if dtype == Dtype::F64 {
        let _ = writeln!(s, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable");
    }
    let [bx, by, bz] = config.block;
    let _ = writeln!(
        s,
        "__kernel __attribute__((reqd_work_group_size({bx}, {by}, {bz})))"
    );
    let args: Vec<String> = kernel
        .fields
        .iter()
        .map(|f| match f.role {
            FieldRole::Input => format!("__global const {}* restrict fld_{}", ctype(dtype), f.name),
            // An inout field is read and written through the same pointer: no `restrict` claim
            // beyond "no other argument aliases it", which holds.
            FieldRole::Output | FieldRole::Inout => {
                format!("__global {}* restrict fld_{}", ctype(dtype), f.name)
            }
        })
        .collect();
    let _ = writeln!(s, "void {}({})", plan.entry, args.join(", "));
    let _ = writeln!(s, "{{");
    for (dim, (t, b)) in [("tx", "bx"), ("ty", "by"), ("tz", "bz")]
        .iter()
        .enumerate()
    {
        let _ = writeln!(s, "    const {idx} {t} = ({idx})get_local_id({dim});");
        let _ = writeln!(s, "    const {idx} {b} = ({idx})get_group_id({dim});");
    }
    for (f, base) in kernel.fields.iter().zip(&plan.bases) {
        let _ = writeln!(s, "    const {idx} base_{} = {base};", f.name);
    }
    for ((name, coord), guarded) in COORD_NAMES.iter().zip(&plan.coords).zip(plan.guard) {
        if guarded {
            let _ = writeln!(s, "    const {idx} {name} = {coord};");
        }
    }
    let temp_ty = ctype(dtype);
    for p in &plan.points {
        write_point(&mut s, &plan, &d, *p, &|b| b.to_string(), &|n| {
            format!("{temp_ty} {n}")
        });
    }
    let _ = writeln!(s, "}}");
    Ok(s)
}

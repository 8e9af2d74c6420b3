//! CUDA C++ emitter (compiled with NVRTC): one `extern "C" __global__` function with
//! `__launch_bounds__(threads per block)`.
//!
//! Launch with grid `config.grid(domain)` and block `config.block`; pointer arguments follow the
//! kernel's field order. CUDA allows at most 65535 blocks in y and z: the runtime checks that
//! before launch.

use super::{write_point, Dialect, EmitError, Options, Plan, COORD_NAMES};
use crate::config::LaunchConfig;
use crate::ir::{BinOp, Domain, Dtype, FieldRole, Kernel};
use std::fmt::Write;

struct Cuda {
    dtype: Dtype,
}

impl Cuda {
    /// The C math function name for the dtype (`fminf` for float, `fmin` for double).
    fn math(&self, f: &str) -> String {
        match self.dtype {
            Dtype::F32 => format!("{f}f"),
            Dtype::F64 => f.to_string(),
        }
    }
}

impl Dialect for Cuda {
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
        let f = self.math(if op == BinOp::Min { "fmin" } else { "fmax" });
        format!("{f}({a}, {b})")
    }
    fn fma(&self, a: &str, b: &str, c: &str) -> String {
        format!("{}({a}, {b}, {c})", self.math("fma"))
    }
    fn sqrt(&self, a: &str) -> String {
        format!("{}({a})", self.math("sqrt"))
    }
    fn select(&self, cond: &str, then: &str, otherwise: &str) -> String {
        format!("({cond} ? {then} : {otherwise})")
    }
    fn index_literal(&self, v: i64) -> String {
        v.to_string()
    }
}

/// Emits CUDA C++ for `kernel` under `config` on `domain`.
pub fn write_string(
    kernel: &Kernel,
    config: &LaunchConfig,
    domain: &Domain,
    options: &Options,
) -> Result<String, EmitError> {
    let plan = Plan::new(kernel, config, domain, options)?;
    let dtype = kernel.dtype();
    let d = Cuda { dtype };
    let idx = if plan.fits_i32() { "int" } else { "long long" };
    let ty = match dtype {
        Dtype::F32 => "float",
        Dtype::F64 => "double",
    };
    let mut s = plan.header(super::Language::Cuda);
    let args: Vec<String> = kernel
        .fields
        .iter()
        .map(|f| match f.role {
            FieldRole::Input => format!("const {ty}* __restrict__ fld_{}", f.name),
            FieldRole::Output | FieldRole::Inout => format!("{ty}* __restrict__ fld_{}", f.name),
        })
        .collect();
    let _ = writeln!(
        s,
        "extern \"C\" __global__ void __launch_bounds__({}) {}({})",
        config.threads(),
        plan.entry,
        args.join(", ")
    );
    let _ = writeln!(s, "{{");
    for (t, b, c) in [("tx", "bx", 'x'), ("ty", "by", 'y'), ("tz", "bz", 'z')] {
        let _ = writeln!(s, "    const {idx} {t} = ({idx})threadIdx.{c};");
        let _ = writeln!(s, "    const {idx} {b} = ({idx})blockIdx.{c};");
    }
    for (f, base) in kernel.fields.iter().zip(&plan.bases) {
        let _ = writeln!(s, "    const {idx} base_{} = {base};", f.name);
    }
    for ((name, coord), guarded) in COORD_NAMES.iter().zip(&plan.coords).zip(plan.guard) {
        if guarded {
            let _ = writeln!(s, "    const {idx} {name} = {coord};");
        }
    }
    for p in &plan.points {
        write_point(&mut s, &plan, &d, *p, &|b| b.to_string(), &|n| {
            format!("{ty} {n}")
        });
    }
    let _ = writeln!(s, "}}");
    Ok(s)
}

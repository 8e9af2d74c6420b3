//! The CPU reference: executes any IR kernel on ndarray arrays, in parallel with rayon.
//!
//! It is the correctness oracle for every generated kernel, so it is deliberately simple: the
//! expression trees are flattened into a stack program with precomputed element offsets and
//! interpreted per point, rows in parallel.

mod field_array;
mod program;

pub use field_array::{FieldArray, Real};
use program::Program;

use crate::ir::{Domain, FieldLayout, IrError, Kernel};
use rayon::prelude::*;

/// Why the reference could not run a kernel.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    /// The kernel breaks an IR rule.
    #[error("invalid kernel: {0}")]
    Invalid(#[from] IrError),
    /// The arrays do not match the kernel's fields.
    #[error("field #{index} (`{name}`) was given {found} elements but needs {expected} for domain {domain}")]
    ArraySize {
        /// Field index.
        index: usize,
        /// Field name.
        name: String,
        /// Elements given.
        found: usize,
        /// Elements needed.
        expected: usize,
        /// The domain.
        domain: Domain,
    },
    /// Wrong number of arrays.
    #[error("kernel has {expected} fields but {found} arrays were given")]
    FieldCount {
        /// Fields of the kernel.
        expected: usize,
        /// Arrays given.
        found: usize,
    },
    /// The domain's dimensionality differs from the kernel's.
    #[error("domain {domain} is {found}D but the kernel is {expected}D")]
    DomainDims {
        /// The domain.
        domain: Domain,
        /// Domain dimensions.
        found: usize,
        /// Kernel dimensions.
        expected: usize,
    },
}

/// Allocates one array per field of `kernel` for `domain`, filled with `value`.
pub fn allocate<T: Real>(kernel: &Kernel, domain: &Domain, value: T) -> Vec<FieldArray<T>> {
    kernel
        .fields
        .iter()
        .map(|f| FieldArray::filled(f, domain, value))
        .collect()
}

/// Runs one sweep of `kernel` over the interior of `domain`, reading and writing `fields` in place.
///
/// Parameters take the values stored in the kernel.
pub fn run<T: Real>(
    kernel: &Kernel,
    domain: &Domain,
    fields: &mut [FieldArray<T>],
) -> Result<(), ReferenceError> {
    kernel.validate()?;
    if domain.dims != kernel.dims {
        return Err(ReferenceError::DomainDims {
            domain: *domain,
            found: domain.dims,
            expected: kernel.dims,
        });
    }
    if fields.len() != kernel.fields.len() {
        return Err(ReferenceError::FieldCount {
            expected: kernel.fields.len(),
            found: fields.len(),
        });
    }
    let layouts: Vec<FieldLayout> = kernel.fields.iter().map(|f| f.layout_for(domain)).collect();
    for (i, (arr, l)) in fields.iter().zip(&layouts).enumerate() {
        if arr.len() != l.len() {
            return Err(ReferenceError::ArraySize {
                index: i,
                name: kernel.fields[i].name.clone(),
                found: arr.len(),
                expected: l.len(),
                domain: *domain,
            });
        }
    }
    let program = Program::<T>::compile(kernel, &layouts);
    let ptrs = FieldPtrs(fields.iter_mut().map(|f| f.as_mut_ptr()).collect());
    let [nx, ny, nz] = domain.size;
    (0..nz * ny).into_par_iter().for_each_init(
        || program.scratch(),
        |scratch, row| {
            let (y, z) = ((row % ny) as i64, (row / ny) as i64);
            let bases: Vec<isize> = layouts
                .iter()
                .map(|l| l.index(0, y, z, 0) as isize)
                .collect();
            let xsteps: Vec<isize> = layouts.iter().map(|l| l.stride[0] as isize).collect();
            // SAFETY: `validate` guarantees that every written (field, component) is touched at a
            // single offset, so distinct points never access the same written element; loads of
            // input fields only read. Offsets stay inside the allocation because every access
            // radius is within the field's ghost layers (also checked by `validate`).
            unsafe { program.run_row(ptrs.get(), &bases, &xsteps, nx, scratch) };
        },
    );
    Ok(())
}

/// Raw base pointers of the field arrays, shared by the worker threads.
struct FieldPtrs<T>(Vec<*mut T>);
// SAFETY: see the comment at the single use in `run`: concurrent accesses never overlap on written
// elements.
unsafe impl<T: Send> Sync for FieldPtrs<T> {}
unsafe impl<T: Send> Send for FieldPtrs<T> {}

impl<T> FieldPtrs<T> {
    fn get(&self) -> &[*mut T] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Dtype;
    use crate::spec::{shape_kernel, Shape, ShapeKind};

    #[test]
    fn rejects_mismatched_arrays() {
        let shape = Shape {
            kind: ShapeKind::Star,
            radius: 1,
            dims: 2,
            coefficients: vec![1.0, 1.0],
        };
        let k = shape_kernel("s", &shape, Dtype::F64, "u", "v");
        let d = Domain::new2(8, 8);
        let mut f = allocate::<f64>(&k, &d, 0.0);
        f.pop();
        assert!(matches!(
            run(&k, &d, &mut f),
            Err(ReferenceError::FieldCount { .. })
        ));
        let mut f = allocate::<f64>(&k, &Domain::new2(4, 4), 0.0);
        assert!(matches!(
            run(&k, &d, &mut f),
            Err(ReferenceError::ArraySize { .. })
        ));
        let mut f = allocate::<f64>(&k, &d, 0.0);
        assert!(matches!(
            run(&k, &Domain::new3(8, 8, 1), &mut f),
            Err(ReferenceError::DomainDims { .. })
        ));
    }
}

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
    /// A row asked of `run_rows` lies outside the domain.
    #[error("row (y, z) = ({y}, {z}) lies outside domain {domain}")]
    RowOutside {
        /// Row y.
        y: usize,
        /// Row z.
        z: usize,
        /// The domain.
        domain: Domain,
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
    run_impl(kernel, domain, fields, None)
}

/// Like [`run`], but only for the points of the given rows `(y, z)` (each a whole x line of the
/// interior): the reference for sampled verification. Rows outside the domain are an error.
pub fn run_rows<T: Real>(
    kernel: &Kernel,
    domain: &Domain,
    fields: &mut [FieldArray<T>],
    rows: &[(usize, usize)],
) -> Result<(), ReferenceError> {
    if let Some(&(y, z)) = rows
        .iter()
        .find(|(y, z)| *y >= domain.size[1] || *z >= domain.size[2])
    {
        return Err(ReferenceError::RowOutside {
            y,
            z,
            domain: *domain,
        });
    }
    run_impl(kernel, domain, fields, Some(rows))
}

fn run_impl<T: Real>(
    kernel: &Kernel,
    domain: &Domain,
    fields: &mut [FieldArray<T>],
    rows: Option<&[(usize, usize)]>,
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
    // Row numbers `y + ny·z`; a row given twice would be written by two threads at once.
    let selected: Option<Vec<usize>> = rows.map(|r| {
        let mut v: Vec<usize> = r.iter().map(|(y, z)| y + ny * z).collect();
        v.sort_unstable();
        v.dedup();
        v
    });
    let all: Vec<usize>;
    let rows: &[usize] = match &selected {
        Some(v) => v,
        None => {
            all = (0..nz * ny).collect();
            &all
        }
    };
    rows.par_iter().for_each_init(
        || program.scratch(),
        |scratch, &row| {
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
    fn selected_rows_match_the_full_sweep() {
        let shape = Shape {
            kind: ShapeKind::Star,
            radius: 1,
            dims: 3,
            coefficients: vec![-6.0, 1.0],
        };
        let k = shape_kernel("s", &shape, Dtype::F64, "u", "v");
        let d = Domain::new3(9, 7, 5);
        let init = || {
            vec![
                FieldArray::<f64>::random(&k.fields[0], &d, 1, 1.0, 2.0),
                FieldArray::filled(&k.fields[1], &d, f64::NAN),
            ]
        };
        let mut full = init();
        run(&k, &d, &mut full).unwrap();
        let rows = [(0, 0), (6, 4), (3, 2), (3, 2)];
        let mut part = init();
        run_rows(&k, &d, &mut part, &rows).unwrap();
        for z in 0..5 {
            for y in 0..7 {
                for x in 0..9 {
                    let (a, b) = (full[1].get(x, y, z, 0), part[1].get(x, y, z, 0));
                    if rows.contains(&(y as usize, z as usize)) {
                        assert_eq!(a, b);
                    } else {
                        assert!(b.is_nan(), "row ({y}, {z}) was computed");
                    }
                }
            }
        }
        assert!(matches!(
            run_rows(&k, &d, &mut part, &[(7, 0)]),
            Err(ReferenceError::RowOutside { y: 7, z: 0, .. })
        ));
    }

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

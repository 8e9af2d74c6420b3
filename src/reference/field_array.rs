use crate::ir::{Domain, Field, FieldLayout, Layout};
use ndarray::{Array4, ArrayView4};
use num_traits::Float;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

/// The element types the reference and the runtimes handle (f32, f64).
pub trait Real: Float + Send + Sync + std::fmt::Debug + std::fmt::Display + 'static {
    /// Converts from f64 (rounding for f32).
    fn from_f64(v: f64) -> Self;
    /// Converts to f64.
    fn to_f64(self) -> f64;
}

impl Real for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl Real for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// The storage of one field: an ndarray in memory order (`[q, z, y, x]` for fzyx, `[z, y, x, q]`
/// for zyxf), ghost layers and padding included, contiguous so that it can be uploaded as is.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldArray<T> {
    data: Array4<T>,
    layout: FieldLayout,
    memory: Layout,
}

impl<T: Real> FieldArray<T> {
    /// An array for `field` on `domain` with every element set to `value`.
    pub fn filled(field: &Field, domain: &Domain, value: T) -> FieldArray<T> {
        let layout = field.layout_for(domain);
        let memory = field.layout;
        FieldArray {
            data: Array4::from_elem(layout.memory_shape(memory), value),
            layout,
            memory,
        }
    }

    /// An array with uniform random values in `[lo, hi)`, reproducible from `seed` (whatever the
    /// number of threads).
    pub fn random(field: &Field, domain: &Domain, seed: u64, lo: f64, hi: f64) -> FieldArray<T> {
        // Filled in parallel, one generator per chunk: a serial generator took seconds for the
        // hundreds of millions of elements of a GPU-sized LBM field.
        const CHUNK: usize = 1 << 16;
        let mut a = FieldArray::filled(field, domain, T::zero());
        a.as_mut_slice()
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, chunk)| {
                let stream = (c as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ stream);
                chunk
                    .iter_mut()
                    .for_each(|v| *v = T::from_f64(rng.gen_range(lo..hi)));
            });
        a
    }

    /// Wraps a flat buffer (e.g. downloaded from a device) of the right length.
    pub fn from_vec(field: &Field, domain: &Domain, data: Vec<T>) -> Option<FieldArray<T>> {
        let layout = field.layout_for(domain);
        let memory = field.layout;
        let data = Array4::from_shape_vec(layout.memory_shape(memory), data).ok()?;
        Some(FieldArray {
            data,
            layout,
            memory,
        })
    }

    /// Strides and extents.
    pub fn layout(&self) -> &FieldLayout {
        &self.layout
    }

    /// Number of elements, ghosts and padding included.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the array is empty.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The elements in memory order.
    pub fn as_slice(&self) -> &[T] {
        self.data
            .as_slice()
            .expect("FieldArray is always standard-layout")
    }

    /// The elements in memory order, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.data
            .as_slice_mut()
            .expect("FieldArray is always standard-layout")
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut T {
        self.data.as_mut_ptr()
    }

    /// The ndarray view in memory order.
    pub fn view(&self) -> ArrayView4<'_, T> {
        self.data.view()
    }

    /// Element at interior coordinates (ghost points have negative or ≥ n coordinates).
    pub fn get(&self, x: i64, y: i64, z: i64, q: usize) -> T {
        self.as_slice()[self.layout.index(x, y, z, q)]
    }

    /// Sets the element at interior coordinates.
    pub fn set(&mut self, x: i64, y: i64, z: i64, q: usize, v: T) {
        let i = self.layout.index(x, y, z, q);
        self.as_mut_slice()[i] = v;
    }

    /// Memory layout of the index dimension.
    pub fn memory_layout(&self) -> Layout {
        self.memory
    }
}

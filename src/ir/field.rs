use serde::{Deserialize, Serialize};
use std::fmt;

/// Element type of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    /// 32-bit IEEE float.
    F32,
    /// 64-bit IEEE float.
    F64,
}

impl Dtype {
    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F64 => 8,
        }
    }

    /// Parses `f32`/`f64` (also `float`/`double`).
    pub fn parse(s: &str) -> Option<Dtype> {
        match s {
            "f32" | "float" | "float32" => Some(Dtype::F32),
            "f64" | "double" | "float64" => Some(Dtype::F64),
            _ => None,
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
        })
    }
}

/// Memory layout of a field with an index dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Structure of arrays: the index dimension is slowest (`f[q][z][y][x]`).
    #[default]
    Fzyx,
    /// Array of structures: the index dimension is fastest (`f[z][y][x][q]`).
    Zyxf,
}

impl Layout {
    /// Parses `fzyx`/`soa` or `zyxf`/`aos`.
    pub fn parse(s: &str) -> Option<Layout> {
        match s {
            "fzyx" | "soa" | "SoA" => Some(Layout::Fzyx),
            "zyxf" | "aos" | "AoS" => Some(Layout::Zyxf),
            _ => None,
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Layout::Fzyx => "fzyx",
            Layout::Zyxf => "zyxf",
        })
    }
}

/// Whether a kernel reads a field, writes it, or both (in place, e.g. the LBM AA pattern).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldRole {
    /// Only loaded.
    Input,
    /// Only stored.
    Output,
    /// Loaded and stored in place; every component must be touched at a single offset.
    Inout,
}

impl fmt::Display for FieldRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            FieldRole::Input => "input",
            FieldRole::Output => "output",
            FieldRole::Inout => "inout",
        })
    }
}

/// A field: a 2D or 3D array of elements with optional index dimension, ghost layers and padding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    /// Name used in definition files and emitted code.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Number of components of the index dimension (1 for a scalar field, Q for LBM populations).
    pub components: usize,
    /// Memory layout (only matters when `components > 1`).
    pub layout: Layout,
    /// Ghost layers on each side of each spatial dimension.
    pub ghost: usize,
    /// Extra elements appended to each row of the fastest spatial dimension.
    pub padding: usize,
    /// Read, written or both.
    pub role: FieldRole,
}

impl Field {
    /// A scalar field with fzyx layout and no padding.
    pub fn scalar(name: &str, dtype: Dtype, ghost: usize, role: FieldRole) -> Field {
        Field {
            name: name.to_string(),
            dtype,
            components: 1,
            layout: Layout::Fzyx,
            ghost,
            padding: 0,
            role,
        }
    }

    /// Strides and extents of this field for a domain.
    pub fn layout_for(&self, domain: &Domain) -> FieldLayout {
        FieldLayout::new(self, domain)
    }
}

/// The interior size of the lattice (`nz = 1` in 2D).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Domain {
    /// Interior points per dimension, x fastest.
    pub size: [usize; 3],
    /// 2 or 3.
    pub dims: usize,
}

impl Domain {
    /// A 3D domain.
    pub fn new3(nx: usize, ny: usize, nz: usize) -> Domain {
        Domain {
            size: [nx, ny, nz],
            dims: 3,
        }
    }

    /// A 2D domain.
    pub fn new2(nx: usize, ny: usize) -> Domain {
        Domain {
            size: [nx, ny, 1],
            dims: 2,
        }
    }

    /// Builds a domain from a list of 2 or 3 sizes; `None` for another length.
    pub fn from_slice(s: &[usize]) -> Option<Domain> {
        match *s {
            [nx, ny] => Some(Domain::new2(nx, ny)),
            [nx, ny, nz] => Some(Domain::new3(nx, ny, nz)),
            _ => None,
        }
    }

    /// Number of lattice points (lattice updates per sweep).
    pub fn points(&self) -> usize {
        self.size.iter().product()
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.dims == 2 {
            write!(f, "{}x{}", self.size[0], self.size[1])
        } else {
            write!(f, "{}x{}x{}", self.size[0], self.size[1], self.size[2])
        }
    }
}

/// Extents and element strides of one field for one domain: the single definition of where an
/// element lives, used by the reference, the emitters and the address expressions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldLayout {
    /// Allocated extent per spatial dimension, ghost layers and padding included.
    pub extent: [usize; 3],
    /// Components of the index dimension.
    pub components: usize,
    /// Element stride of x, y, z.
    pub stride: [usize; 3],
    /// Element stride of the index dimension.
    pub stride_q: usize,
    /// Ghost layers per spatial dimension (0 in z for 2D).
    pub ghost: [usize; 3],
    /// Element size in bytes.
    pub elem_size: usize,
}

impl FieldLayout {
    /// Computes the layout of `field` on `domain`.
    pub fn new(field: &Field, domain: &Domain) -> FieldLayout {
        let g = field.ghost;
        let gz = if domain.dims == 3 { g } else { 0 };
        let ex = domain.size[0] + 2 * g + field.padding;
        let ey = domain.size[1] + 2 * g;
        let ez = domain.size[2] + 2 * gz;
        let q = field.components.max(1);
        let (stride, stride_q) = match field.layout {
            Layout::Fzyx => ([1, ex, ex * ey], ex * ey * ez),
            Layout::Zyxf => ([q, q * ex, q * ex * ey], 1),
        };
        FieldLayout {
            extent: [ex, ey, ez],
            components: q,
            stride,
            stride_q,
            ghost: [g, g, gz],
            elem_size: field.dtype.size(),
        }
    }

    /// Total number of elements allocated.
    pub fn len(&self) -> usize {
        self.extent.iter().product::<usize>() * self.components
    }

    /// Whether the field holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element index of interior coordinate `(x, y, z)` (may be negative down to `-ghost`) and component `q`.
    pub fn index(&self, x: i64, y: i64, z: i64, q: usize) -> usize {
        let idx = (q * self.stride_q) as i64
            + [x, y, z]
                .iter()
                .zip(self.ghost.iter().zip(self.stride))
                .map(|(p, (g, s))| (p + *g as i64) * s as i64)
                .sum::<i64>();
        debug_assert!(idx >= 0 && (idx as usize) < self.len());
        idx as usize
    }

    /// Element offset of a relative access `offset`, component `q`, from the point's own element 0.
    pub fn relative(&self, offset: [i32; 3], q: usize) -> i64 {
        (q * self.stride_q) as i64
            + (0..3)
                .map(|d| offset[d] as i64 * self.stride[d] as i64)
                .sum::<i64>()
    }

    /// Memory-order shape `[slow .. fast]`, as an ndarray of the field is allocated.
    pub fn memory_shape(&self, layout: Layout) -> [usize; 4] {
        let [ex, ey, ez] = self.extent;
        match layout {
            Layout::Fzyx => [self.components, ez, ey, ex],
            Layout::Zyxf => [ez, ey, ex, self.components],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soa_and_aos_strides() {
        let mut f = Field::scalar("f", Dtype::F64, 1, FieldRole::Input);
        f.components = 19;
        let d = Domain::new3(10, 8, 6);
        let soa = f.layout_for(&d);
        assert_eq!(soa.extent, [12, 10, 8]);
        assert_eq!(soa.stride, [1, 12, 120]);
        assert_eq!(soa.stride_q, 960);
        assert_eq!(soa.len(), 960 * 19);
        f.layout = Layout::Zyxf;
        let aos = f.layout_for(&d);
        assert_eq!(aos.stride, [19, 19 * 12, 19 * 120]);
        assert_eq!(aos.stride_q, 1);
        assert_eq!(aos.index(-1, -1, -1, 0), 0);
        assert_eq!(aos.index(0, 0, 0, 3), 19 + 19 * 12 + 19 * 120 + 3);
    }

    #[test]
    fn padding_and_2d() {
        let mut f = Field::scalar("u", Dtype::F32, 2, FieldRole::Input);
        f.padding = 3;
        let l = f.layout_for(&Domain::new2(16, 4));
        assert_eq!(l.extent, [23, 8, 1]);
        assert_eq!(l.ghost, [2, 2, 0]);
        assert_eq!(l.index(0, 0, 0, 0), 2 + 2 * 23);
        assert_eq!(l.relative([-1, 1, 0], 0), 22);
    }
}

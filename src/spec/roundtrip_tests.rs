//! Printing a kernel and parsing it again gives the same kernel.

use super::parse_update;
use crate::ir::Dtype;
use crate::spec::{shape_kernel, Shape, ShapeKind};

#[test]
fn printed_update_parses_to_the_same_body() {
    let shape = Shape {
        kind: ShapeKind::Box,
        radius: 1,
        dims: 3,
        coefficients: vec![1.0, -2.0, 3.0, 4.0],
    };
    let k = shape_kernel("s", &shape, Dtype::F64, "u", "v");
    let src = k.update_source();
    let p = parse_update(&src, 3, &k.fields, &k.params).unwrap();
    assert_eq!(p.body, k.body, "{src}");
    let src2 = "t = -(u[0,0,0] - u[1,0,0]) / (2 - u[0,1,0]) * -3.5\nv[0,0,0] = select(t >= 0, fma(t, t, -1), max(sqrt(t), -t)) - (t - (t - 1))";
    let fields = k.fields.clone();
    let p = parse_update(src2, 3, &fields, &k.params).unwrap();
    let mut k2 = k.clone();
    k2.body = p.body.clone();
    k2.temps = p.temps.clone();
    let printed = k2.update_source();
    let p2 = parse_update(&printed, 3, &fields, &k.params).unwrap();
    assert_eq!(p2.body, p.body, "{printed}");
}

/// LBM kernels are plain kernels: their printed update parses back to the same body, so anything
/// that handles definition files handles them.
#[test]
fn lbm_kernels_print_and_parse_back() {
    use crate::lbm::{Collision, LatticeKind, LbmSpec, Streaming};
    for lattice in [LatticeKind::D2Q9, LatticeKind::D3Q27] {
        for streaming in [Streaming::Pull, Streaming::Push, Streaming::Aa] {
            let mut s = LbmSpec::new("l", lattice, 0.7);
            s.collision = Collision::Trt { magic: 0.25 };
            s.streaming = streaming;
            s.force = [1e-5, -2e-5, 0.0];
            for k in s.kernels().unwrap() {
                let src = k.update_source();
                let p = parse_update(&src, k.dims, &k.fields, &k.params).unwrap();
                assert_eq!(p.body, k.body, "{src}");
                assert_eq!(p.temps, k.temps);
            }
        }
    }
}

/// Every shipped definition file loads.
#[test]
fn shipped_definitions_load() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for dir in ["stencils", "lbm"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let d = crate::spec::load_definition(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert_eq!(d.lbm.is_some(), dir == "lbm", "{}", path.display());
                n += 1;
            }
        }
    }
    assert!(n >= 10, "{n} files");
}

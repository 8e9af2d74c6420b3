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

use super::*;
use crate::ir::{Field, FieldRole, Param};
use crate::spec::load_stencil;
use std::path::Path;

fn stencil(name: &str) -> Kernel {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("stencils/{name}.toml"));
    load_stencil(&p).unwrap().kernel
}

const STENCILS: [&str; 5] = [
    "star2d_r1",
    "star3d_r1",
    "star3d_r4",
    "box3d_r1",
    "varcoeff3d_r1",
];

fn configs(dims: usize) -> Vec<LaunchConfig> {
    if dims == 2 {
        vec![
            LaunchConfig::new([16, 4, 1], [1, 1, 1]),
            LaunchConfig::new([8, 2, 1], [3, 2, 1]),
            LaunchConfig::new([64, 1, 1], [1, 4, 1]),
        ]
    } else {
        vec![
            LaunchConfig::new([8, 4, 2], [1, 1, 1]),
            LaunchConfig::new([4, 2, 2], [2, 1, 3]),
            LaunchConfig::new([32, 1, 1], [1, 2, 2]),
        ]
    }
}

fn domain(dims: usize) -> Domain {
    if dims == 2 {
        Domain::new2(37, 11)
    } else {
        Domain::new3(19, 7, 5)
    }
}

#[test]
fn every_stencil_emits_valid_wgsl_and_c() {
    for name in STENCILS {
        for dtype in [Dtype::F32, Dtype::F64] {
            let mut k = stencil(name);
            k.set_dtype(dtype);
            let dom = domain(k.dims);
            for c in configs(k.dims) {
                for lang in [Language::OpenCl, Language::Wgsl, Language::Cuda] {
                    let src = emit(lang, &k, &c, &dom, &Options::default())
                        .unwrap_or_else(|e| panic!("{name} {dtype} {c} {}: {e}", lang.name()));
                    assert!(src.contains(&format!("fld_{}", k.fields[0].name)));
                }
            }
        }
    }
}

#[test]
fn accesses_are_base_plus_layout_offset() {
    let k = stencil("star3d_r4");
    let dom = Domain::new3(19, 7, 5);
    let c = LaunchConfig::new([4, 2, 2], [2, 1, 3]);
    let plan = Plan::new(&k, &c, &dom, &Options::default()).unwrap();
    // Thread (3,1,0) of block (1,2,0) at fold point (1,0,2): x = 8+3+4, y = 4+1, z = 0+0+4.
    let v = [3, 1, 0, 1, 2, 0, 0, 0, 0];
    let (x, y, z) = (15, 5, 4);
    for (a, _) in k.accesses() {
        let l = &plan.layouts[a.field];
        let got = plan.bases[a.field].eval(&v) + plan.offset(&a, [1, 0, 2]);
        let want = l.index(
            x + a.offset[0] as i64,
            y + a.offset[1] as i64,
            z + a.offset[2] as i64,
            a.index,
        );
        assert_eq!(got, want as i64, "{a:?}");
    }
    assert_eq!(plan.coords[0].eval(&v) + 4, x);
}

#[test]
fn guards_only_where_the_tile_does_not_divide() {
    let k = stencil("star3d_r1");
    let c = LaunchConfig::new([8, 4, 2], [1, 1, 2]);
    let exact = Plan::new(&k, &c, &Domain::new3(16, 8, 8), &Options::default()).unwrap();
    assert_eq!(exact.guard, [false, false, false]);
    let src = opencl::write_string(&k, &c, &Domain::new3(16, 8, 8), &Options::default()).unwrap();
    assert!(!src.contains("if ("));
    let ragged = Plan::new(&k, &c, &Domain::new3(16, 9, 3), &Options::default()).unwrap();
    assert_eq!(ragged.guard, [false, true, true]);
    // Fold point k = 1 starts at z = 2 < 3: kept, with bound 3 - 2 = 1.
    assert_eq!(ragged.points, vec![[0, 0, 0], [0, 0, 1]]);
    assert_eq!(ragged.guards([0, 0, 1]), vec![("y0", 9), ("z0", 1)]);
    // A block wider than the domain: fold points beyond it are not emitted.
    let wide = LaunchConfig::new([64, 1, 1], [3, 1, 1]);
    let p = Plan::new(&k, &wide, &Domain::new3(40, 2, 2), &Options::default()).unwrap();
    assert_eq!(p.points, vec![[0, 0, 0]]);
    assert_eq!(p.guards([0, 0, 0]), vec![("x0", 40)]);
}

#[test]
fn headers_and_target_specifics() {
    let mut k = stencil("star3d_r1");
    let dom = Domain::new3(20, 8, 8);
    let c = LaunchConfig::new([32, 4, 2], [1, 1, 2]);
    let o = Options::default();
    let cl = opencl::write_string(&k, &c, &dom, &o).unwrap();
    assert!(cl.contains("#pragma OPENCL EXTENSION cl_khr_fp64 : enable"));
    assert!(cl.contains("reqd_work_group_size(32, 4, 2)"));
    assert!(cl.contains("__global const double* restrict fld_u"));
    let cu = cuda::write_string(&k, &c, &dom, &o).unwrap();
    assert!(cu.contains("__launch_bounds__(256)"));
    let w = wgsl::write_string(&k, &c, &dom, &o).unwrap();
    assert!(w.contains("@workgroup_size(32, 4, 2)"));
    assert!(w.contains("array<f64>"));
    assert!(w.contains("lf"));
    k.set_dtype(Dtype::F32);
    let cl = opencl::write_string(&k, &c, &dom, &o).unwrap();
    assert!(!cl.contains("cl_khr_fp64"));
    assert!(cl.contains("(-6.0f)"));
    let named = Options {
        entry_point: Some("sweep".into()),
        ..Options::default()
    };
    assert!(wgsl::write_string(&k, &c, &dom, &named)
        .unwrap()
        .contains("fn sweep("));
}

#[test]
fn large_grids_are_linearised_for_wgsl() {
    let k = stencil("star2d_r1");
    let c = LaunchConfig::new([1, 1, 1], [1, 1, 1]);
    let dom = Domain::new2(10, 7);
    assert_eq!(wgsl::dispatch_size(&c, &dom, 65535).unwrap(), [10, 7, 1]);
    // 70 blocks with at most 4 per dimension: 4 x 4 x 5 would need z = 5 > 4.
    assert!(matches!(
        wgsl::dispatch_size(&c, &dom, 4),
        Err(EmitError::TooManyBlocks { blocks: 70, .. })
    ));
    assert_eq!(wgsl::dispatch_size(&c, &dom, 9).unwrap(), [9, 8, 1]);
    let o = Options {
        max_groups_per_dim: 9,
        ..Options::default()
    };
    let src = wgsl::write_string(&k, &c, &dom, &o).unwrap();
    assert!(src.contains("if (lin >= 70u) { return; }"), "{src}");
}

#[test]
fn bad_inputs_are_errors() {
    let k = stencil("star3d_r1");
    let c = LaunchConfig::new([8, 4, 2], [1, 1, 1]);
    let o = Options::default();
    assert!(matches!(
        opencl::write_string(&k, &c, &Domain::new2(8, 8), &o),
        Err(EmitError::DomainDims { .. })
    ));
    assert!(matches!(
        opencl::write_string(&k, &c, &Domain::new3(8, 0, 8), &o),
        Err(EmitError::EmptyDomain(_))
    ));
    assert!(matches!(
        opencl::write_string(
            &k,
            &LaunchConfig::new([0, 1, 1], [1; 3]),
            &Domain::new3(8, 8, 8),
            &o
        ),
        Err(EmitError::Config(_))
    ));
    let bad = Options {
        entry_point: Some("2x".into()),
        ..Options::default()
    };
    assert!(matches!(
        cuda::write_string(&k, &c, &Domain::new3(8, 8, 8), &bad),
        Err(EmitError::BadEntryPoint(_))
    ));
    let mut big = stencil("varcoeff3d_r1");
    big.set_dtype(Dtype::F32);
    big.params[0] = Param {
        name: "dt".into(),
        value: 1e300,
    };
    let e = wgsl::write_string(&big, &c, &Domain::new3(8, 8, 8), &o).unwrap_err();
    assert!(e.to_string().contains("parameter `dt`"), "{e}");
}

#[test]
fn wgsl_errors_quote_the_offending_line() {
    let src = "@compute @workgroup_size(1)\nfn main() {\n    let a: f32 = 1u;\n}\n";
    let e = wgsl::validate(src, Dtype::F32).unwrap_err();
    match &e {
        EmitError::InvalidWgsl {
            line, source_line, ..
        } => {
            assert_eq!(*line, 3);
            assert_eq!(source_line, "let a: f32 = 1u;");
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("at line 3: let a: f32 = 1u;"));
    // f64 without the capability is a validation error, also with its line.
    let f64src = "@group(0) @binding(0) var<storage, read_write> b: array<f64>;\n@compute @workgroup_size(1)\nfn main() {\n    b[0] = 1.0lf;\n}\n";
    assert!(wgsl::validate(f64src, Dtype::F64).is_ok());
    assert!(matches!(
        wgsl::validate(f64src, Dtype::F32),
        Err(EmitError::InvalidWgsl { .. })
    ));
}

#[test]
fn wide_fields_switch_to_64_bit_indices_and_wgsl_refuses() {
    let mut k = Kernel {
        name: "copy".into(),
        dims: 3,
        fields: vec![
            Field::scalar("a", Dtype::F32, 0, FieldRole::Input),
            Field::scalar("b", Dtype::F32, 0, FieldRole::Output),
        ],
        params: vec![],
        temps: vec![],
        body: vec![crate::ir::Assignment {
            target: Target::Store(Access {
                field: 1,
                offset: [0; 3],
                index: 0,
            }),
            value: Expr::Load(Access {
                field: 0,
                offset: [0; 3],
                index: 0,
            }),
        }],
    };
    let c = LaunchConfig::new([32, 4, 1], [1, 1, 1]);
    let dom = Domain::new3(2048, 2048, 1024);
    let cl = opencl::write_string(&k, &c, &dom, &Options::default()).unwrap();
    assert!(cl.contains("const long base_a"));
    let cu = cuda::write_string(&k, &c, &dom, &Options::default()).unwrap();
    assert!(cu.contains("const long long base_a"));
    k.fields[0].components = 2;
    let e = wgsl::write_string(&k, &c, &dom, &Options::default()).unwrap_err();
    assert!(
        matches!(&e, EmitError::IndexOverflow { field, .. } if field == "a"),
        "{e}"
    );
    let small = Domain::new3(64, 8, 8);
    let cl = opencl::write_string(&k, &c, &small, &Options::default()).unwrap();
    assert!(cl.contains("const int base_a"));
}

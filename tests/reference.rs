//! The CPU reference against hand-written loops, for every shipped stencil, in f32 and f64.

use approx::assert_relative_eq;
use stencilscope::ir::{Domain, Dtype, Kernel};
use stencilscope::reference::{self, FieldArray, Real};
use stencilscope::spec::load_stencil;

fn load(name: &str, dtype: Dtype) -> Kernel {
    let mut k = load_stencil(format!("stencils/{name}.toml").as_ref())
        .unwrap()
        .kernel;
    k.set_dtype(dtype);
    k
}

fn param(k: &Kernel, name: &str) -> f64 {
    k.params.iter().find(|p| p.name == name).unwrap().value
}

/// Runs the reference on random inputs and returns the inputs and the output field.
fn run_reference<T: Real>(k: &Kernel, d: &Domain) -> (Vec<FieldArray<T>>, usize) {
    let mut fields: Vec<FieldArray<T>> = k
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| FieldArray::random(f, d, 42 + i as u64, -1.0, 1.0))
        .collect();
    reference::run(k, d, &mut fields).unwrap();
    let out = k.fields.iter().position(|f| f.name == "v").unwrap();
    (fields, out)
}

/// Compares every interior point with `expect(u_fields, x, y, z)`, computed in f64.
fn check<T: Real>(
    k: &Kernel,
    d: &Domain,
    tol: f64,
    expect: impl Fn(&[FieldArray<T>], i64, i64, i64) -> f64,
) {
    let (fields, out) = run_reference::<T>(k, d);
    let [nx, ny, nz] = d.size.map(|n| n as i64);
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let got = fields[out].get(x, y, z, 0).to_f64();
                let want = expect(&fields, x, y, z);
                assert_relative_eq!(got, want, max_relative = tol, epsilon = tol);
            }
        }
    }
}

fn star<T: Real>(name: &str, dtype: Dtype, d: Domain, tol: f64) {
    let k = load(name, dtype);
    let r = k.radius() as i64;
    let c: Vec<f64> = (0..=r).map(|i| param(&k, &format!("c{i}"))).collect();
    let dims = k.dims;
    check::<T>(&k, &d, tol, |f, x, y, z| {
        let u = |dx: i64, dy: i64, dz: i64| f[0].get(x + dx, y + dy, z + dz, 0).to_f64();
        let mut v = c[0] * u(0, 0, 0);
        for dist in 1..=r {
            let mut s = u(-dist, 0, 0) + u(dist, 0, 0) + u(0, -dist, 0) + u(0, dist, 0);
            if dims == 3 {
                s += u(0, 0, -dist) + u(0, 0, dist);
            }
            v += c[dist as usize] * s;
        }
        v
    });
}

#[test]
fn star2d_r1_matches_loops() {
    star::<f64>("star2d_r1", Dtype::F64, Domain::new2(37, 21), 1e-12);
    star::<f32>("star2d_r1", Dtype::F32, Domain::new2(37, 21), 1e-4);
}

#[test]
fn star3d_r1_matches_loops() {
    star::<f64>("star3d_r1", Dtype::F64, Domain::new3(19, 13, 11), 1e-12);
    star::<f32>("star3d_r1", Dtype::F32, Domain::new3(19, 13, 11), 1e-4);
}

#[test]
fn star3d_r4_matches_loops() {
    star::<f64>("star3d_r4", Dtype::F64, Domain::new3(23, 17, 12), 1e-12);
    star::<f32>("star3d_r4", Dtype::F32, Domain::new3(23, 17, 12), 1e-4);
}

fn box27<T: Real>(dtype: Dtype, tol: f64) {
    let k = load("box3d_r1", dtype);
    let c: Vec<f64> = (0..4).map(|i| param(&k, &format!("c{i}"))).collect();
    check::<T>(&k, &Domain::new3(15, 14, 13), tol, |f, x, y, z| {
        let mut v = 0.0;
        for dz in -1i64..=1 {
            for dy in -1i64..=1 {
                for dx in -1i64..=1 {
                    let manhattan = (dx.abs() + dy.abs() + dz.abs()) as usize;
                    v += c[manhattan] * f[0].get(x + dx, y + dy, z + dz, 0).to_f64();
                }
            }
        }
        v
    });
}

#[test]
fn box3d_r1_matches_loops() {
    box27::<f64>(Dtype::F64, 1e-12);
    box27::<f32>(Dtype::F32, 1e-4);
}

fn varcoeff<T: Real>(dtype: Dtype, tol: f64) {
    let k = load("varcoeff3d_r1", dtype);
    let dt = param(&k, "dt");
    check::<T>(&k, &Domain::new3(17, 9, 8), tol, |f, x, y, z| {
        let u = |dx: i64, dy: i64, dz: i64| f[0].get(x + dx, y + dy, z + dz, 0).to_f64();
        let kc = f[1].get(x, y, z, 0).to_f64();
        let lap = u(-1, 0, 0) + u(1, 0, 0) + u(0, -1, 0) + u(0, 1, 0) + u(0, 0, -1) + u(0, 0, 1)
            - 6.0 * u(0, 0, 0);
        u(0, 0, 0) + dt * kc * lap
    });
}

#[test]
fn varcoeff3d_r1_matches_loops() {
    varcoeff::<f64>(Dtype::F64, 1e-12);
    varcoeff::<f32>(Dtype::F32, 1e-4);
}

#[test]
fn reference_leaves_ghosts_and_inputs_alone() {
    let k = load("star3d_r1", Dtype::F64);
    let d = Domain::new3(8, 7, 6);
    let input = FieldArray::<f64>::random(&k.fields[0], &d, 1, -1.0, 1.0);
    let mut fields = vec![
        input.clone(),
        FieldArray::filled(&k.fields[1], &d, f64::NAN),
    ];
    reference::run(&k, &d, &mut fields).unwrap();
    assert_eq!(fields[0], input);
    // Every interior point written, every ghost point of the output untouched.
    let out = &fields[1];
    let g = 1i64;
    for z in -g..7 {
        for y in -g..8 {
            for x in -g..9 {
                let interior = (0..8).contains(&x) && (0..7).contains(&y) && (0..6).contains(&z);
                assert_eq!(!out.get(x, y, z, 0).is_nan(), interior, "({x},{y},{z})");
            }
        }
    }
}

//! LBM kernels as IR: moments, equilibrium, collision (SRT/TRT), Guo forcing and the accesses of
//! each streaming pattern.
//!
//! The collision is one function of "where population i is loaded" and "where post-collision
//! population i is stored", so every pattern and layout runs the identical arithmetic, in the same
//! order (bitwise-equal results). Physical constants (ω, weights, force) are folded into literals
//! and every shared subexpression is a temporary, so the flop count is what a GPU executes.

use super::lattice::Lattice;
use super::model::{Collision, LbmError, LbmSpec, Streaming};
use crate::ir::{Access, Assignment, BinOp, Expr, Field, FieldRole, Kernel, Target};

/// Which kernel of a streaming pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// The single kernel of pull or push.
    Single,
    /// The AA pattern's even step (local collision, populations stored in their opposite slots).
    Even,
    /// The AA pattern's odd step (gather from and scatter to the neighbours).
    Odd,
}

impl Step {
    /// Parses `even` or `odd`.
    pub fn parse(s: &str) -> Option<Step> {
        match s.to_ascii_lowercase().as_str() {
            "even" => Some(Step::Even),
            "odd" => Some(Step::Odd),
            _ => None,
        }
    }
}

impl LbmSpec {
    /// The kernels of one time-loop cycle, validated: `[step]` for pull and push, `[even, odd]` for AA.
    pub fn kernels(&self) -> Result<Vec<Kernel>, LbmError> {
        self.validate()?;
        let lat = Lattice::new(self.lattice);
        let steps: &[Step] = match self.streaming {
            Streaming::Aa => &[Step::Even, Step::Odd],
            _ => &[Step::Single],
        };
        let kernels: Vec<Kernel> = steps.iter().map(|s| build(self, &lat, *s)).collect();
        for k in &kernels {
            // Generated kernels are valid by construction; a failure here is a bug, reported as such.
            k.validate()
                .map_err(|e| LbmError::Reference(format!("generated kernel `{}`: {e}", k.name)))?;
        }
        Ok(kernels)
    }

    /// The kernel that stands for the pattern where one kernel is needed (`show`, volumes,
    /// ranking): the only kernel of pull and push, and the AA **odd** step, whose neighbour
    /// accesses decide how the layout and block shape perform (the even step touches only its own
    /// cell; both move the same 2·Q elements per cell).
    pub fn primary_step(&self) -> Step {
        match self.streaming {
            Streaming::Aa => Step::Odd,
            _ => Step::Single,
        }
    }

    /// The kernel of `step` (`None`: the primary one).
    pub fn kernel(&self, step: Option<Step>) -> Result<Kernel, LbmError> {
        let step = step.unwrap_or(self.primary_step());
        let index = match (self.streaming, step) {
            (Streaming::Aa, Step::Even) => 0,
            (Streaming::Aa, Step::Odd) => 1,
            (Streaming::Aa, Step::Single) => {
                return Err(LbmError::BadStep(
                    "the AA pattern has two kernels: choose the even or the odd step".into(),
                ))
            }
            (_, Step::Single) => 0,
            (s, _) => {
                return Err(LbmError::BadStep(format!(
                    "{s} streaming has a single kernel; even and odd steps exist only for streaming = \"aa\""
                )))
            }
        };
        Ok(self.kernels()?.swap_remove(index))
    }
}

/// The population field of a kernel.
pub(crate) fn population_field(spec: &LbmSpec, name: &str, q: usize, role: FieldRole) -> Field {
    Field {
        name: name.to_string(),
        dtype: spec.dtype,
        components: q,
        layout: spec.layout,
        ghost: spec.ghost,
        padding: spec.padding,
        role,
    }
}

fn build(spec: &LbmSpec, lat: &Lattice, step: Step) -> Kernel {
    let q = lat.q();
    let c = &lat.velocities;
    let neg = |v: [i32; 3]| [-v[0], -v[1], -v[2]];
    let at = |field: usize, offset: [i32; 3], index: usize| Access {
        field,
        offset,
        index,
    };
    let (name, fields, loads, stores): (String, Vec<Field>, Vec<Access>, Vec<Access>) =
        match (spec.streaming, step) {
            (Streaming::Pull, _) => (
                spec.name.clone(),
                vec![
                    population_field(spec, "src", q, FieldRole::Input),
                    population_field(spec, "dst", q, FieldRole::Output),
                ],
                (0..q).map(|i| at(0, neg(c[i]), i)).collect(),
                (0..q).map(|i| at(1, [0; 3], i)).collect(),
            ),
            (Streaming::Push, _) => (
                spec.name.clone(),
                vec![
                    population_field(spec, "src", q, FieldRole::Input),
                    population_field(spec, "dst", q, FieldRole::Output),
                ],
                (0..q).map(|i| at(0, [0; 3], i)).collect(),
                (0..q).map(|i| at(1, c[i], i)).collect(),
            ),
            (Streaming::Aa, Step::Odd) => (
                format!("{}_odd", spec.name),
                vec![population_field(spec, "f", q, FieldRole::Inout)],
                (0..q).map(|i| at(0, neg(c[i]), lat.opposite[i])).collect(),
                (0..q).map(|i| at(0, c[i], i)).collect(),
            ),
            (Streaming::Aa, _) => (
                format!("{}_even", spec.name),
                vec![population_field(spec, "f", q, FieldRole::Inout)],
                (0..q).map(|i| at(0, [0; 3], i)).collect(),
                (0..q).map(|i| at(0, [0; 3], lat.opposite[i])).collect(),
            ),
        };
    let mut b = Body::default();
    collide(spec, lat, &loads, &stores, &mut b);
    Kernel {
        name,
        dims: lat.dims(),
        fields,
        params: vec![],
        temps: b.temps,
        body: b.body,
    }
}

/// Statements under construction.
#[derive(Default)]
struct Body {
    temps: Vec<String>,
    body: Vec<Assignment>,
}

impl Body {
    fn temp(&mut self, name: String, value: Expr) -> Expr {
        let t = self.temps.len();
        self.temps.push(name);
        self.body.push(Assignment {
            target: Target::Temp(t),
            value,
        });
        Expr::Temp(t)
    }

    /// A temporary unless `value` is already a leaf (no work to share).
    fn share(&mut self, name: String, value: Expr) -> Expr {
        match value {
            Expr::Temp(_) | Expr::Lit(_) | Expr::Load(_) => value,
            v => self.temp(name, v),
        }
    }

    fn store(&mut self, acc: Access, value: Expr) {
        self.body.push(Assignment {
            target: Target::Store(acc),
            value,
        });
    }
}

fn lit(v: f64) -> Expr {
    Expr::Lit(v)
}
fn add(a: Expr, b: Expr) -> Expr {
    Expr::bin(BinOp::Add, a, b)
}
fn sub(a: Expr, b: Expr) -> Expr {
    Expr::bin(BinOp::Sub, a, b)
}
fn mul(a: Expr, b: Expr) -> Expr {
    Expr::bin(BinOp::Mul, a, b)
}
fn fma(a: Expr, b: Expr, c: Expr) -> Expr {
    Expr::Fma(Box::new(a), Box::new(b), Box::new(c))
}

/// `±t₀ ± t₁ ± …` as a chain of additions and subtractions, a positive term first (there always
/// is one in the sums built here: every velocity pair contributes one positive term).
fn signed_sum(mut terms: Vec<(bool, Expr)>) -> Expr {
    let first = terms
        .iter()
        .position(|(pos, _)| *pos)
        .expect("a signed sum with a positive term");
    let (_, mut e) = terms.remove(first);
    for (pos, t) in terms {
        e = if pos { add(e, t) } else { sub(e, t) };
    }
    e
}

/// Loads the populations from `loads`, collides them and stores population `i` at `stores[i]`.
///
/// With ω⁺ (symmetric) and ω⁻ (antisymmetric) rates (equal for SRT), per weight class m
/// (`a = 9/2·w·ω⁺·ρ`, `b = 3·w·ω⁻·ρ`, `c = w·ω⁺·ρ(1 − 3/2 u²) − 3·w·g⁺·u·F`, `g± = 1 − ω±/2`) and
/// per velocity pair (i, ī) with `cu = c_i·u`:
/// `X = (a·cu + 9·w·g⁺·c_i·F)·cu + c` (ω⁺ times the symmetric equilibrium plus the symmetric Guo
/// term) and `Y = b·cu + 3·w·g⁻·c_i·F` (the antisymmetric ones). SRT stores
/// `(1 − ω)f_i + X + Y` and `(1 − ω)f_ī + X − Y`; TRT stores `f_i + P + M` and `f_ī + P − M` with
/// `P = X − ω⁺/2·(f_i + f_ī)` and `M = Y − ω⁻/2·(f_i − f_ī)`. The velocity is `u = (j + F/2)/ρ`.
fn collide(spec: &LbmSpec, lat: &Lattice, loads: &[Access], stores: &[Access], b: &mut Body) {
    let q = lat.q();
    let dims = lat.dims();
    let (ws, wa) = (spec.omega_plus(), spec.omega_minus());
    let (gs, ga) = (1.0 - ws / 2.0, 1.0 - wa / 2.0);
    let force = spec.force;
    let forced = spec.has_force();

    let f: Vec<Expr> = (0..q)
        .map(|i| b.temp(format!("f{i}"), Expr::Load(loads[i])))
        .collect();
    let rho_sum = f[1..]
        .iter()
        .fold(f[0].clone(), |acc, fi| add(acc, fi.clone()));
    let rho = b.temp("rho".into(), rho_sum);
    let inv_rho = b.temp(
        "inv_rho".into(),
        Expr::bin(BinOp::Div, lit(1.0), rho.clone()),
    );
    let names = ["ux", "uy", "uz"];
    let mut u = Vec::new();
    for d in 0..dims {
        let terms: Vec<(bool, Expr)> = (1..q)
            .filter(|i| lat.velocities[*i][d] != 0)
            .map(|i| (lat.velocities[i][d] > 0, f[i].clone()))
            .collect();
        let mut j = signed_sum(terms);
        if force[d] != 0.0 {
            j = add(j, lit(force[d] / 2.0));
        }
        u.push(b.temp(names[d].into(), mul(j, inv_rho.clone())));
    }
    let mut usq = mul(u[0].clone(), u[0].clone());
    for ud in &u[1..] {
        usq = fma(ud.clone(), ud.clone(), usq);
    }
    let rc1 = b.temp(
        "rc1".into(),
        mul(rho.clone(), fma(lit(-1.5), usq, lit(1.0))),
    );
    let uf = forced.then(|| {
        let mut terms = (0..dims).filter(|d| force[*d] != 0.0);
        let d0 = terms.next().expect("a non-zero force component");
        let e = terms.fold(mul(lit(force[d0]), u[d0].clone()), |acc, d| {
            fma(lit(force[d]), u[d].clone(), acc)
        });
        b.temp("uf".into(), e)
    });

    // Per weight class: the rest population is class 0, then one class per speed.
    let mut class_c: Vec<(f64, Expr, Expr, Expr)> = Vec::new(); // (w, a, b, c)
    let class_of =
        |w: f64, classes: &[(f64, Expr, Expr, Expr)]| classes.iter().position(|(cw, ..)| *cw == w);
    let class_temps = |w: f64, k: usize, b: &mut Body| -> (Expr, Expr, Expr) {
        let a = b.temp(format!("a{k}"), mul(lit(4.5 * w * ws), rho.clone()));
        let bb = b.temp(format!("b{k}"), mul(lit(3.0 * w * wa), rho.clone()));
        let base = mul(lit(w * ws), rc1.clone());
        let c = match &uf {
            Some(uf) => fma(lit(-3.0 * w * gs), uf.clone(), base),
            None => base,
        };
        let c = b.temp(format!("c{k}"), c);
        (a, bb, c)
    };

    // Rest population: only the symmetric part exists.
    let w0 = lat.weights[0];
    let mut c0 = mul(lit(w0 * ws), rc1.clone());
    if let Some(uf) = &uf {
        c0 = fma(lit(-3.0 * w0 * gs), uf.clone(), c0);
    }
    b.store(stores[0], fma(lit(1.0 - ws), f[0].clone(), c0));

    for (i, o) in lat.pairs() {
        let w = lat.weights[i];
        let k = match class_of(w, &class_c) {
            Some(k) => k,
            None => {
                let (a, bb, c) = class_temps(w, class_c.len() + 1, b);
                class_c.push((w, a, bb, c));
                class_c.len() - 1
            }
        };
        let (_, a, bm, cm) = class_c[k].clone();
        let ci = lat.velocities[i];
        let cu_terms: Vec<(bool, Expr)> = (0..dims)
            .filter(|d| ci[*d] != 0)
            .map(|d| (ci[d] > 0, u[d].clone()))
            .collect();
        let cu = b.share(format!("cu{i}"), signed_sum(cu_terms));
        let cf: f64 = (0..dims).map(|d| ci[d] as f64 * force[d]).sum();
        let t = if cf != 0.0 {
            fma(a, cu.clone(), lit(9.0 * w * gs * cf))
        } else {
            mul(a, cu.clone())
        };
        let x = b.temp(format!("x{i}"), fma(t, cu.clone(), cm));
        let y = if cf != 0.0 {
            fma(bm, cu, lit(3.0 * w * ga * cf))
        } else {
            mul(bm, cu)
        };
        let y = b.temp(format!("y{i}"), y);
        match spec.collision {
            Collision::Srt => {
                let keep = lit(1.0 - ws);
                b.store(
                    stores[i],
                    fma(keep.clone(), f[i].clone(), add(x.clone(), y.clone())),
                );
                b.store(stores[o], fma(keep, f[o].clone(), sub(x, y)));
            }
            Collision::Trt { .. } => {
                let p = b.temp(
                    format!("p{i}"),
                    fma(lit(-ws / 2.0), add(f[i].clone(), f[o].clone()), x),
                );
                let m = b.temp(
                    format!("m{i}"),
                    fma(lit(-wa / 2.0), sub(f[i].clone(), f[o].clone()), y),
                );
                b.store(stores[i], add(f[i].clone(), add(p.clone(), m.clone())));
                b.store(stores[o], add(f[o].clone(), sub(p, m)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{AccessKind, Domain, Dtype, Layout};
    use crate::lbm::lattice::LatticeKind;
    use crate::reference::{self, FieldArray};
    use rand::{Rng, SeedableRng};

    fn spec(lattice: LatticeKind, collision: Collision, streaming: Streaming) -> LbmSpec {
        LbmSpec {
            collision,
            streaming,
            ..LbmSpec::new("t", lattice, 0.8)
        }
    }

    const TRT: Collision = Collision::Trt { magic: 0.1875 };

    #[test]
    fn kernels_are_valid_and_move_two_q_elements() {
        for lattice in LatticeKind::ALL {
            for collision in [Collision::Srt, TRT] {
                for streaming in [Streaming::Pull, Streaming::Push, Streaming::Aa] {
                    let mut s = spec(lattice, collision, streaming);
                    s.dtype = Dtype::F32;
                    s.force = [1e-5, 2e-5, 0.0];
                    let q = Lattice::new(lattice).q();
                    for k in s.kernels().unwrap() {
                        k.validate().unwrap();
                        assert_eq!(k.dims, lattice.dims());
                        assert_eq!(k.min_bytes_per_lup(), 2 * q * 4, "{}", k.name);
                        assert_eq!(k.distinct_accesses(AccessKind::Load).len(), q);
                        assert_eq!(k.distinct_accesses(AccessKind::Store).len(), q);
                        assert_eq!(k.flops().div, 1, "one division (1/ρ) per cell");
                    }
                }
            }
        }
    }

    /// The flop count stays near the minimum: moments (Q − 1 adds for ρ, about 2Q/3 per momentum
    /// component), a handful per velocity pair, nothing per population beyond the relaxation.
    #[test]
    fn arithmetic_is_tight() {
        let f = |l, c| spec(l, c, Streaming::Pull).kernel(None).unwrap().flops();
        let srt = f(LatticeKind::D3Q19, Collision::Srt);
        // ρ 18, j 27, 1/ρ 1, u 3, u² 5, ρ(1 − 3/2 u²) 3, classes 3×3 + 2, pairs 9×10 + 6 diagonals.
        assert!(srt.total() <= 170, "{srt:?}");
        let trt = f(LatticeKind::D3Q19, TRT);
        assert!(trt.total() <= srt.total() + 9 * 8, "{trt:?}");
        let q27 = f(LatticeKind::D3Q27, Collision::Srt);
        assert!(q27.total() <= 260, "{q27:?}");
    }

    #[test]
    fn aa_odd_is_the_primary_kernel() {
        let s = spec(LatticeKind::D3Q19, Collision::Srt, Streaming::Aa);
        assert_eq!(s.kernel(None).unwrap().name, "t_odd");
        assert_eq!(s.kernel(Some(Step::Even)).unwrap().name, "t_even");
        let p = spec(LatticeKind::D3Q19, Collision::Srt, Streaming::Pull);
        assert!(matches!(
            p.kernel(Some(Step::Odd)),
            Err(LbmError::BadStep(_))
        ));
    }

    /// The folded arithmetic equals the textbook operator on random non-equilibrium populations:
    /// `f* = f − ω⁺(f⁺ − f_eq⁺) − ω⁻(f⁻ − f_eq⁻) + (1 − ω⁺/2)S⁺ + (1 − ω⁻/2)S⁻` with Guo's
    /// `S_i = w_i[3(c_i − u)·F + 9(c_i·u)(c_i·F)]` and `u = (j + F/2)/ρ` (ω⁺ = ω⁻ for SRT).
    #[test]
    fn collision_matches_the_textbook_operator() {
        let mut worst: f64 = 0.0;
        for lattice in LatticeKind::ALL {
            for collision in [Collision::Srt, TRT] {
                let mut s = spec(lattice, collision, Streaming::Aa);
                s.tau = 0.63;
                s.force = if lattice.dims() == 2 {
                    [3e-3, -2e-3, 0.0]
                } else {
                    [3e-3, -2e-3, 1e-3]
                };
                let lat = Lattice::new(lattice);
                let q = lat.q();
                let k = s.kernel(Some(Step::Even)).unwrap();
                let d = if lattice.dims() == 2 {
                    Domain::new2(3, 2)
                } else {
                    Domain::new3(3, 2, 2)
                };
                let mut fa = FieldArray::<f64>::filled(&k.fields[0], &d, 0.0);
                let mut rng = rand::rngs::StdRng::seed_from_u64(5);
                let mut inputs = Vec::new();
                for z in 0..d.size[2] as i64 {
                    for y in 0..d.size[1] as i64 {
                        for x in 0..d.size[0] as i64 {
                            let f: Vec<f64> = lat
                                .weights
                                .iter()
                                .map(|w| w * rng.gen_range(0.7..1.3))
                                .collect();
                            for (i, v) in f.iter().enumerate() {
                                fa.set(x, y, z, i, *v);
                            }
                            inputs.push(((x, y, z), f));
                        }
                    }
                }
                reference::run(&k, &d, std::slice::from_mut(&mut fa)).unwrap();
                let (wp, wm) = (s.omega_plus(), s.omega_minus());
                for ((x, y, z), f) in inputs {
                    let (rho, j) = lat.moments(&f);
                    let u = [0, 1, 2].map(|a| (j[a] + s.force[a] / 2.0) / rho);
                    let feq = lat.equilibrium(rho, u);
                    let src: Vec<f64> = (0..q)
                        .map(|i| {
                            let c = lat.velocities[i].map(f64::from);
                            let cu: f64 = (0..3).map(|a| c[a] * u[a]).sum();
                            let cf: f64 = (0..3).map(|a| c[a] * s.force[a]).sum();
                            let uf: f64 = (0..3).map(|a| u[a] * s.force[a]).sum();
                            lat.weights[i] * (3.0 * (cf - uf) + 9.0 * cu * cf)
                        })
                        .collect();
                    for i in 0..q {
                        let o = lat.opposite[i];
                        let plus = |v: &[f64]| (v[i] + v[o]) / 2.0;
                        let minus = |v: &[f64]| (v[i] - v[o]) / 2.0;
                        let want =
                            f[i] - wp * (plus(&f) - plus(&feq)) - wm * (minus(&f) - minus(&feq))
                                + (1.0 - wp / 2.0) * plus(&src)
                                + (1.0 - wm / 2.0) * minus(&src);
                        let got = fa.get(x, y, z, o);
                        worst = worst.max((got - want).abs());
                        assert!(
                            (got - want).abs() < 1e-15,
                            "{lattice} {collision} population {i}: {got} vs {want}"
                        );
                    }
                }
            }
        }
        println!("collision against the textbook SRT/TRT + Guo operator (f64): max difference {worst:.2e}");
    }

    /// Collision keeps the equilibrium: run the AA even step (collision only, populations
    /// swapped into their opposite slots) on random equilibria.
    #[test]
    fn equilibrium_is_a_fixed_point() {
        let mut overall: f64 = 0.0;
        for lattice in LatticeKind::ALL {
            for collision in [Collision::Srt, TRT] {
                for layout in [Layout::Fzyx, Layout::Zyxf] {
                    let mut s = spec(lattice, collision, Streaming::Aa);
                    s.layout = layout;
                    let lat = Lattice::new(lattice);
                    let k = s.kernel(Some(Step::Even)).unwrap();
                    let d = if lattice.dims() == 2 {
                        Domain::new2(5, 4)
                    } else {
                        Domain::new3(4, 3, 3)
                    };
                    let mut fa = FieldArray::<f64>::filled(&k.fields[0], &d, 0.0);
                    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
                    let mut want = Vec::new();
                    for z in 0..d.size[2] as i64 {
                        for y in 0..d.size[1] as i64 {
                            for x in 0..d.size[0] as i64 {
                                let rho = rng.gen_range(0.8..1.2);
                                let mut u = [0.0; 3];
                                for ud in u.iter_mut().take(lattice.dims()) {
                                    *ud = rng.gen_range(-0.1..0.1);
                                }
                                let feq = lat.equilibrium(rho, u);
                                for (i, v) in feq.iter().enumerate() {
                                    fa.set(x, y, z, i, *v);
                                }
                                want.push(feq);
                            }
                        }
                    }
                    let before = fa.clone();
                    reference::run(&k, &d, std::slice::from_mut(&mut fa)).unwrap();
                    let mut worst: f64 = 0.0;
                    let mut n = 0;
                    for z in 0..d.size[2] as i64 {
                        for y in 0..d.size[1] as i64 {
                            for x in 0..d.size[0] as i64 {
                                for (i, w) in want[n].iter().enumerate() {
                                    let got = fa.get(x, y, z, lat.opposite[i]);
                                    worst = worst.max((got - w).abs());
                                }
                                n += 1;
                            }
                        }
                    }
                    assert!(worst < 1e-15, "{lattice} {collision} {layout}: {worst:e}");
                    overall = overall.max(worst);
                    // The check can fail: a non-equilibrium state is changed by collision.
                    let mut fne = before.clone();
                    let v = fne.get(1, 1, 0, 1);
                    fne.set(1, 1, 0, 1, v * 1.1);
                    reference::run(&k, &d, std::slice::from_mut(&mut fne)).unwrap();
                    assert!((fne.get(1, 1, 0, lat.opposite[1]) - v * 1.1).abs() > 1e-6);
                }
            }
        }
        println!("equilibrium through collision (all lattices, SRT and TRT, f64): max |f* - feq| = {overall:.2e}");
    }
}

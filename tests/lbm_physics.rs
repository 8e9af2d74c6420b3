//! End-to-end physics of the generated LBM kernels, run by the CPU reference through the time
//! loop (`LbmProgram`): conservation, Taylor–Green decay, Poiseuille flow, and agreement of every
//! streaming pattern and layout. Figures are printed (`cargo test --test lbm_physics -- --nocapture`).

#[path = "support/lbm.rs"]
mod lbm_support;

use ndarray::Array4;
use std::f64::consts::PI;
use stencilscope::ir::{Domain, Dtype, Layout};
use stencilscope::lbm::{
    Collision, Flags, LatticeKind, LbmProgram, LbmSpec, Simulation, Streaming, DEFAULT_MAGIC,
};

const TRT: Collision = Collision::Trt {
    magic: DEFAULT_MAGIC,
};
const PATTERNS: [Streaming; 3] = [Streaming::Pull, Streaming::Push, Streaming::Aa];

fn spec(lattice: LatticeKind, collision: Collision, tau: f64, streaming: Streaming) -> LbmSpec {
    LbmSpec {
        collision,
        streaming,
        ..LbmSpec::new("lbm", lattice, tau)
    }
}

fn program(s: &LbmSpec, d: &Domain, flags: Option<Flags>) -> LbmProgram {
    s.program(d, flags).unwrap()
}

/// The shared random state with this file's velocity and noise amplitudes.
fn random_populations(p: &LbmProgram, seed: u64) -> Array4<f64> {
    lbm_support::random_populations(p, seed, 0.05, 0.05)
}

fn domain_for(lattice: LatticeKind, n: [usize; 3]) -> Domain {
    if lattice.dims() == 2 {
        Domain::new2(n[0], n[1])
    } else {
        Domain::new3(n[0], n[1], n[2])
    }
}

#[test]
fn mass_and_momentum_are_conserved_over_100_periodic_steps() {
    let mut worst_mass: f64 = 0.0;
    let mut worst_mom: f64 = 0.0;
    for lattice in [LatticeKind::D2Q9, LatticeKind::D3Q19] {
        for collision in [Collision::Srt, TRT] {
            for streaming in PATTERNS {
                let s = spec(lattice, collision, 0.7, streaming);
                let d = domain_for(lattice, [7, 6, 5]);
                let p = program(&s, &d, None);
                let init = random_populations(&p, 11);
                let mut sim = Simulation::<f64>::new(p, &init).unwrap();
                let (m0, j0) = sim.totals();
                sim.run(100).unwrap();
                let (m1, j1) = sim.totals();
                let dm = ((m1 - m0) / m0).abs();
                // Momentum per cell is O(0.05); compare with the mass as the natural scale.
                let dj = (0..3)
                    .map(|k| (j1[k] - j0[k]).abs() / m0)
                    .fold(0.0, f64::max);
                assert!(dm < 1e-13, "{lattice} {collision} {streaming}: mass {dm:e}");
                assert!(
                    dj < 1e-13,
                    "{lattice} {collision} {streaming}: momentum {dj:e}"
                );
                worst_mass = worst_mass.max(dm);
                worst_mom = worst_mom.max(dj);
            }
        }
    }
    println!("conservation over 100 periodic steps (f64, random non-equilibrium start): max relative mass change {worst_mass:.2e}, max momentum change / mass {worst_mom:.2e}");
}

/// With a body force F, the momentum Σ(j + F/2) grows by exactly F per cell and step.
#[test]
fn guo_force_adds_momentum_at_the_right_rate() {
    for collision in [Collision::Srt, TRT] {
        let mut s = spec(LatticeKind::D3Q19, collision, 0.8, Streaming::Aa);
        s.force = [1e-4, -2e-4, 3e-5];
        let d = Domain::new3(5, 4, 6);
        let p = program(&s, &d, None);
        let init = random_populations(&p, 5);
        let mut sim = Simulation::<f64>::new(p, &init).unwrap();
        let (m0, j0) = sim.totals();
        let steps = 50;
        sim.run(steps).unwrap();
        let (m1, j1) = sim.totals();
        assert!(((m1 - m0) / m0).abs() < 1e-13);
        let cells = d.points() as f64;
        for k in 0..3 {
            let want = s.force[k] * cells * steps as f64;
            let got = j1[k] - j0[k];
            assert!(
                (got - want).abs() < 1e-12 * cells,
                "{collision} axis {k}: gained {got:e}, expected {want:e}"
            );
        }
    }
}

/// Amplitude of the Taylor–Green mode in the velocity field (least-squares projection).
fn tg_amplitude(sim: &Simulation<f64>, shape: impl Fn(usize, usize, usize) -> [f64; 3]) -> f64 {
    let m = sim.macroscopic();
    let [nx, ny, nz] = sim.program().domain.size;
    let (mut num, mut den) = (0.0, 0.0);
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let e = shape(x, y, z);
                for (d, ed) in e.iter().enumerate() {
                    num += m.u[[z, y, x, d]] * ed;
                    den += ed * ed;
                }
            }
        }
    }
    num / den
}

/// Runs a Taylor–Green vortex and returns (measured decay rate, ν k² factor · ν).
fn taylor_green(s: &LbmSpec, n: usize, steps: usize) -> (f64, f64) {
    let dims = s.lattice.dims();
    let k = 2.0 * PI / n as f64;
    let u0 = 0.01;
    let d = domain_for(s.lattice, [n, n, n]);
    let shape = move |x: usize, y: usize, z: usize| -> [f64; 3] {
        let (x, y, z) = (k * x as f64, k * y as f64, k * z as f64);
        if dims == 2 {
            [-x.cos() * y.sin(), x.sin() * y.cos(), 0.0]
        } else {
            [
                x.sin() * y.cos() * z.cos(),
                -x.cos() * y.sin() * z.cos(),
                0.0,
            ]
        }
    };
    let p = program(s, &d, None);
    let mut sim = Simulation::<f64>::from_equilibrium(p, |x, y, z| {
        let e = shape(x, y, z);
        (1.0, [u0 * e[0], u0 * e[1], u0 * e[2]])
    })
    .unwrap();
    // Skip the initial transient (the equilibrium start lacks the non-equilibrium part).
    let t1 = steps / 5;
    sim.run(t1).unwrap();
    let a1 = tg_amplitude(&sim, shape);
    sim.run(steps - t1).unwrap();
    let a2 = tg_amplitude(&sim, shape);
    let measured = (a1 / a2).ln() / (steps - t1) as f64;
    let expected = s.viscosity() * dims as f64 * k * k;
    (measured, expected)
}

#[test]
fn taylor_green_2d_decays_at_the_viscous_rate() {
    for (collision, streaming) in [(Collision::Srt, Streaming::Pull), (TRT, Streaming::Aa)] {
        let s = spec(LatticeKind::D2Q9, collision, 0.8, streaming);
        let (m, e) = taylor_green(&s, 32, 200);
        let err = m / e - 1.0;
        println!("Taylor-Green 2D D2Q9 {collision} {streaming} 32x32 tau=0.8 u0=0.01: decay rate {m:.6e}, 2 nu k^2 = {e:.6e}, relative error {err:+.2e}");
        assert!(err.abs() < 0.01, "{collision}: {err:e}");
    }
}

#[test]
fn taylor_green_3d_decays_at_the_viscous_rate() {
    for (lattice, collision, streaming, n) in [
        (LatticeKind::D3Q19, Collision::Srt, Streaming::Aa, 32),
        (LatticeKind::D3Q27, TRT, Streaming::Pull, 24),
    ] {
        let s = spec(lattice, collision, 0.8, streaming);
        let steps = if n == 32 { 130 } else { 75 };
        let (m, e) = taylor_green(&s, n, steps);
        let err = m / e - 1.0;
        println!("Taylor-Green 3D {lattice} {collision} {streaming} {n}^3 tau=0.8 u0=0.01: decay rate {m:.6e}, 3 nu k^2 = {e:.6e}, relative error {err:+.2e}");
        assert!(err.abs() < 0.01, "{lattice} {collision}: {err:e}");
    }
}

/// Runs a force-driven channel (walls at y = 0 and y = ny − 1, half-way bounce-back) to steady
/// state; returns the largest deviation from the parabola over its peak, and the steps taken.
fn poiseuille(s: &LbmSpec, d: &Domain) -> (f64, usize) {
    let p = program(s, d, Some(Flags::channel(d, 1)));
    let mut sim = Simulation::<f64>::from_equilibrium(p, |_, _, _| (1.0, [0.0; 3])).unwrap();
    let ny = d.size[1];
    let (lo, hi) = (0.5, ny as f64 - 1.5);
    let nu = s.viscosity();
    let fx = s.force[0];
    let exact = |y: f64| fx / (2.0 * nu) * (y - lo) * (hi - y);
    let peak = exact((lo + hi) / 2.0);
    let mut last = f64::INFINITY;
    let mut err = f64::INFINITY;
    while sim.time() < 40_000 {
        sim.run(250).unwrap();
        let m = sim.macroscopic();
        let mut worst: f64 = 0.0;
        let mut total = 0.0;
        for ((z, y, x), r) in m.rho.indexed_iter() {
            if r.is_nan() {
                continue;
            }
            let u = m.u[[z, y, x, 0]];
            total += u;
            worst = worst.max((u - exact(y as f64)).abs() / peak);
            for dd in 1..3 {
                assert!(m.u[[z, y, x, dd]].abs() < 1e-12 * peak.max(1.0));
            }
        }
        err = worst;
        if ((total - last) / total).abs() < 1e-9 {
            break;
        }
        last = total;
    }
    (err, sim.time())
}

#[test]
fn poiseuille_channel_matches_the_parabola() {
    for (lattice, collision, streaming, tau, tol) in [
        (
            LatticeKind::D2Q9,
            Collision::Srt,
            Streaming::Pull,
            0.8,
            0.01,
        ),
        (LatticeKind::D2Q9, TRT, Streaming::Aa, 0.8, 1e-6),
        (LatticeKind::D3Q19, TRT, Streaming::Push, 1.0, 1e-6),
        (LatticeKind::D3Q19, Collision::Srt, Streaming::Aa, 1.0, 0.01),
    ] {
        let mut s = spec(lattice, collision, tau, streaming);
        // Peak velocity 0.01 for a 16-cell channel.
        s.force[0] = 8.0 * s.viscosity() * 0.01 / 256.0;
        let d = domain_for(lattice, [3, 18, 2]);
        let (err, steps) = poiseuille(&s, &d);
        println!("Poiseuille {lattice} {collision} {streaming} tau={tau}, 16-cell channel, u_max=0.01: max |u - u_exact| / u_max = {err:.2e} (steady after {steps} steps)");
        assert!(err < tol, "{lattice} {collision} {streaming}: {err:e}");
    }
}

/// The same start, walls and force: every pattern and layout ends with bitwise-equal populations
/// (the collision arithmetic is shared), and f32 stays within its rounding.
#[test]
fn patterns_and_layouts_agree_bitwise() {
    for (lattice, collision) in [
        (LatticeKind::D2Q9, Collision::Srt),
        (LatticeKind::D3Q15, TRT),
        (LatticeKind::D3Q19, TRT),
        (LatticeKind::D3Q27, Collision::Srt),
    ] {
        let d = domain_for(lattice, [6, 7, 5]);
        let mut flags = Flags::channel(&d, 1);
        // Obstacles inside and on the periodic seam.
        flags.set(3, 3, 0, stencilscope::lbm::WALL);
        flags.set(0, 4, d.size[2] - 1, stencilscope::lbm::WALL);
        let steps = 7; // odd: AA ends after an even step, in its swapped state
        let mut reference: Option<Array4<f64>> = None;
        let mut init = None;
        for streaming in PATTERNS {
            for layout in [Layout::Fzyx, Layout::Zyxf] {
                let mut s = spec(lattice, collision, 0.7, streaming);
                s.layout = layout;
                s.force = [2e-4, -1e-4, 0.0];
                let p = program(&s, &d, Some(flags.clone()));
                let init = init
                    .get_or_insert_with(|| random_populations(&p, 3))
                    .clone();
                let mut sim = Simulation::<f64>::new(p.clone(), &init).unwrap();
                // Reading the start back is exact in every arrangement.
                assert_eq!(
                    sim.populations().iter().filter(|v| !v.is_nan()).count(),
                    flags.fluid_cells() * p.lattice.q()
                );
                let same = sim
                    .populations()
                    .iter()
                    .zip(init.iter())
                    .all(|(a, b)| a.is_nan() || a == b);
                assert!(
                    same,
                    "{lattice} {streaming} {layout}: initial state round trip"
                );
                sim.run(steps).unwrap();
                let got = sim.populations();
                match &reference {
                    None => reference = Some(got),
                    Some(r) => {
                        let bitwise = r
                            .iter()
                            .zip(got.iter())
                            .all(|(a, b)| a.to_bits() == b.to_bits());
                        assert!(
                            bitwise,
                            "{lattice} {collision} {streaming} {layout} differs from pull fzyx"
                        );
                    }
                }
                if layout == Layout::Zyxf && streaming == Streaming::Aa {
                    s.dtype = Dtype::F32;
                    let p32 = program(&s, &d, Some(flags.clone()));
                    let mut sim32 = Simulation::<f32>::new(p32, &init).unwrap();
                    sim32.run(steps).unwrap();
                    let r = reference.as_ref().unwrap();
                    let worst = r
                        .iter()
                        .zip(sim32.populations().iter())
                        .filter(|(a, _)| !a.is_nan())
                        .map(|(a, b)| (a - *b as f64).abs())
                        .fold(0.0, f64::max);
                    assert!(worst < 1e-6, "{lattice} f32 vs f64: {worst:e}");
                }
            }
        }
        // The walls matter: without them the result differs.
        let s = spec(lattice, collision, 0.7, Streaming::Pull);
        let mut sim =
            Simulation::<f64>::new(program(&s, &d, None), init.as_ref().unwrap()).unwrap();
        sim.run(steps).unwrap();
        let r = reference.as_ref().unwrap();
        assert!(r
            .iter()
            .zip(sim.populations().iter())
            .any(|(a, b)| !a.is_nan() && a != b));
    }
}

/// Walls stop the flow: in a closed box (walls on every side) mass stays exact and a smooth
/// shear flow comes to rest. (A white-noise start would not: LBM keeps checkerboard modes.)
#[test]
fn closed_box_keeps_mass_and_stops_the_flow() {
    for streaming in PATTERNS {
        let s = spec(LatticeKind::D3Q19, TRT, 0.9, streaming);
        let d = Domain::new3(8, 7, 6);
        let mut flags = Flags::fluid(&d);
        for z in 0..6 {
            for y in 0..7 {
                for x in 0..8 {
                    if x == 0 || y == 0 || z == 0 || x == 7 || y == 6 || z == 5 {
                        flags.set(x, y, z, stencilscope::lbm::WALL);
                    }
                }
            }
        }
        let p = program(&s, &d, Some(flags));
        let mut sim = Simulation::<f64>::from_equilibrium(p, |_, y, z| {
            let shear = (PI * (y as f64 - 0.5) / 5.0).sin() * (PI * (z as f64 - 0.5) / 4.0).sin();
            (1.0, [0.02 * shear, 0.0, 0.0])
        })
        .unwrap();
        let energy = |sim: &Simulation<f64>| -> f64 {
            let m = sim.macroscopic();
            m.u.iter().filter(|v| !v.is_nan()).map(|v| v * v).sum()
        };
        let (m0, _) = sim.totals();
        let e0 = energy(&sim);
        sim.run(200).unwrap();
        let (m1, _) = sim.totals();
        let e1 = energy(&sim);
        let dm = ((m1 - m0) / m0).abs();
        println!("closed box D3Q19 TRT {streaming}: relative mass change after 200 steps {dm:.2e}, kinetic energy {e0:.2e} -> {e1:.2e}");
        assert!(dm < 1e-13, "{streaming}: {dm:e}");
        assert!(e1 < 1e-8 * e0, "{streaming}: {e0:e} -> {e1:e}");
    }
}

/// Ghost layers beyond one and row padding (for alignment) only move the populations in memory:
/// the fields after N steps are bitwise those of the plain layout, for every pattern and layout.
#[test]
fn ghost_layers_and_padding_change_nothing_but_addresses() {
    for streaming in PATTERNS {
        for layout in [Layout::Fzyx, Layout::Zyxf] {
            let mut s = spec(LatticeKind::D3Q19, TRT, 0.7, streaming);
            s.layout = layout;
            s.force = [1e-4, 0.0, 0.0];
            let d = Domain::new3(7, 6, 5);
            let flags = Some(Flags::channel(&d, 1));
            let plain = program(&s, &d, flags.clone());
            s.ghost = 4;
            s.padding = 3;
            let wide = program(&s, &d, flags);
            assert_eq!(wide.layout().ghost, [4, 4, 4]);
            let init = random_populations(&plain, 5);
            let mut a = Simulation::<f64>::new(plain, &init).unwrap();
            let mut b = Simulation::<f64>::new(wide, &init).unwrap();
            a.run(9).unwrap();
            b.run(9).unwrap();
            let (pa, pb) = (a.populations(), b.populations());
            let same = pa
                .iter()
                .zip(pb.iter())
                .all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{streaming} {layout}");
        }
    }
}

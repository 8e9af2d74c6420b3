//! Emitted LBM kernels on devices: whole time loops (kernels with the phase's buffer bindings, the
//! periodic exchange and the bounce-back copies) run through `runtime::lbm` on each backend
//! (PoCL and lavapipe in CI; any GPU elsewhere) and compared after N steps with the CPU
//! `Simulation` running the same program. Domains are tiny and not multiples of the blocks, so the
//! guards and folding paths run too.

#[path = "support/lbm.rs"]
mod lbm_support;

use ndarray::Array4;
use stencilscope::config::LaunchConfig;
use stencilscope::ir::{Domain, Dtype, Layout};
use stencilscope::lbm::{
    Collision, Flags, LatticeKind, LbmProgram, LbmSpec, Simulation, Streaming, Transfer,
    DEFAULT_MAGIC, WALL,
};
use stencilscope::reference::Real;
use stencilscope::runtime::lbm::{compare_populations, run_program, LbmRunError};
use stencilscope::runtime::{
    skip_or_fail, Backend, BackendKind, BackendOptions, DeviceSelector, RuntimeError,
};

const TRT: Collision = Collision::Trt {
    magic: DEFAULT_MAGIC,
};

/// One time loop to compare.
struct Case {
    lattice: LatticeKind,
    collision: Collision,
    streaming: Streaming,
    layout: Layout,
    dtype: Dtype,
    walls: bool,
    force: bool,
    /// Ghost layers 4 and row padding 3 instead of 1 and 0.
    wide: bool,
    steps: usize,
}

impl Case {
    fn name(&self) -> String {
        format!(
            "{} {} {} {} {}{}{}{} ({} steps)",
            self.lattice,
            match self.collision {
                Collision::Srt => "srt",
                Collision::Trt { .. } => "trt",
            },
            self.streaming,
            self.layout,
            self.dtype,
            if self.walls { " walls" } else { " periodic" },
            if self.force { " force" } else { "" },
            if self.wide { " ghost 4 padding 3" } else { "" },
            self.steps
        )
    }

    fn domain(&self) -> Domain {
        if self.lattice.dims() == 2 {
            Domain::new2(13, 9)
        } else {
            Domain::new3(9, 7, 5)
        }
    }

    /// Launch configurations that do not divide the domain; the second folds.
    fn config(&self, which: usize) -> LaunchConfig {
        match (self.lattice.dims(), which % 2) {
            (2, 0) => LaunchConfig::new([8, 4, 1], [1, 1, 1]),
            (2, _) => LaunchConfig::new([4, 2, 1], [2, 3, 1]),
            (_, 0) => LaunchConfig::new([8, 2, 2], [1, 1, 1]),
            (_, _) => LaunchConfig::new([4, 2, 2], [1, 2, 2]),
        }
    }

    fn program(&self) -> LbmProgram {
        let mut s = LbmSpec {
            collision: self.collision,
            streaming: self.streaming,
            layout: self.layout,
            dtype: self.dtype,
            ..LbmSpec::new("lbm", self.lattice, 0.7)
        };
        if self.force {
            s.force = [2e-4, -1e-4, 0.0];
        }
        if self.wide {
            s.ghost = 4;
            s.padding = 3;
        }
        let d = self.domain();
        let flags = self.walls.then(|| {
            // A channel along y with one obstacle cell next to a wall and one in the middle.
            let mut f = Flags::channel(&d, 1);
            f.set(3, 1, 0, WALL);
            f.set(5, 4, d.size[2] - 1, WALL);
            f
        });
        s.program(&d, flags).unwrap()
    }
}

fn cases() -> Vec<Case> {
    use LatticeKind::*;
    use Streaming::*;
    let c = |lattice, collision, streaming, layout, dtype, walls, force, steps| Case {
        lattice,
        collision,
        streaming,
        layout,
        dtype,
        walls,
        force,
        wide: false,
        steps,
    };
    let (soa, aos) = (Layout::Fzyx, Layout::Zyxf);
    let (f32, f64) = (Dtype::F32, Dtype::F64);
    let mut v = vec![
        c(D2Q9, Collision::Srt, Pull, soa, f64, true, true, 7),
        c(D2Q9, Collision::Srt, Pull, aos, f32, false, false, 6),
        c(D2Q9, Collision::Srt, Push, aos, f32, true, false, 6),
        c(D2Q9, TRT, Aa, soa, f64, true, true, 7),
        c(D2Q9, Collision::Srt, Aa, aos, f32, false, false, 6),
        c(D3Q19, Collision::Srt, Pull, soa, f32, true, false, 7),
        c(D3Q19, Collision::Srt, Pull, aos, f64, false, false, 6),
        c(D3Q19, TRT, Push, soa, f64, true, true, 6),
        c(D3Q19, Collision::Srt, Push, aos, f32, true, false, 7),
        c(D3Q19, Collision::Srt, Aa, soa, f64, true, false, 7),
        c(D3Q19, TRT, Aa, aos, f32, true, true, 6),
        c(D3Q27, TRT, Pull, aos, f32, true, false, 5),
        c(D3Q15, TRT, Aa, soa, f64, true, true, 5),
    ];
    v[5].wide = true;
    v[10].wide = true;
    v
}

/// The shared random state with this file's velocity and noise amplitudes.
fn random_populations(p: &LbmProgram, seed: u64) -> Array4<f64> {
    lbm_support::random_populations(p, seed, 0.08, 0.1)
}

/// Tolerance after a few steps: a few hundred ulps of the populations' scale. Devices may
/// contract or reorder differently from the CPU; a misplaced population or a missing copy is off
/// by 1e-3 of the scale or more.
fn tolerance(dtype: Dtype) -> f64 {
    match dtype {
        Dtype::F32 => 2e-5,
        Dtype::F64 => 1e-12,
    }
}

fn cpu<T: Real>(p: &LbmProgram, init: &Array4<f64>, steps: usize) -> Array4<T> {
    let mut sim = Simulation::<T>::new(p.clone(), init).unwrap();
    sim.run(steps).unwrap();
    sim.populations()
}

/// The case on the device against the CPU; also checks that the comparison would see a missing
/// step, and (with `sabotage`) a time loop without its bounce-back or periodic copies.
fn check<T: Real + bytemuck::Pod>(
    b: &mut dyn Backend,
    case: &Case,
    n: usize,
    sabotage: bool,
    test: &str,
) {
    let name = case.name();
    let p = case.program();
    let init = random_populations(&p, 100 + n as u64);
    let config = case.config(n);
    let rtol = tolerance(case.dtype);
    let got = run_program::<T>(b, &p, &config, &init, case.steps)
        .unwrap_or_else(|e| panic!("{test} {name} {config}: {e}"));
    let v = compare_populations(&got, &cpu::<T>(&p, &init, case.steps), rtol);
    eprintln!(
        "{test} {name} {config}: max error {:.2e} over {} values",
        v.max_error, v.checked
    );
    assert!(v.passed && v.checked > 0, "{test} {name} {config}: {v:?}");
    // One step short must be seen.
    let v = compare_populations(&got, &cpu::<T>(&p, &init, case.steps - 1), rtol);
    assert!(!v.passed, "{test} {name}: a missing step went unnoticed");
    if !sabotage {
        return;
    }
    // So must a time loop without some of its copies, run by the same driver.
    let without = |keep: &dyn Fn(&Transfer) -> bool| {
        let mut q = p.clone();
        for phase in &mut q.cycle {
            phase.before.retain(|t| keep(t));
            phase.after.retain(|t| keep(t));
        }
        q
    };
    let bounce_back = without(&|t| !matches!(t, Transfer::Elements { .. }));
    let periodic = without(&|t| !matches!(t, Transfer::Boxes { .. }));
    assert!(
        bounce_back != p && periodic != p,
        "{name}: sabotage cases need walls"
    );
    let want = cpu::<T>(&p, &init, case.steps);
    for (what, q) in [
        ("bounce-back", bounce_back),
        ("periodic exchange", periodic),
    ] {
        let got = run_program::<T>(b, &q, &config, &init, case.steps).unwrap();
        let v = compare_populations(&got, &want, rtol);
        assert!(
            !v.passed,
            "{test} {name}: the run without the {what} copies matched"
        );
    }
}

fn open(kind: BackendKind, test: &str) -> Option<Box<dyn Backend>> {
    match kind.open(&DeviceSelector::First, &BackendOptions::default()) {
        Ok(b) => Some(b),
        Err(e @ (RuntimeError::NotAvailable { .. } | RuntimeError::NoDevice { .. })) => {
            skip_or_fail(kind.name(), test, &e.to_string());
            None
        }
        Err(e) => panic!("{test}: opening {kind} failed: {e}"),
    }
}

/// Every case on the backend's first device matches the CPU time loop, and the comparison fails
/// where it must.
fn time_loops_match_cpu(kind: BackendKind, test: &str) {
    let Some(mut b) = open(kind, test) else {
        return;
    };
    eprintln!("{test}: {}", b.info());
    let mut checked = 0;
    for (n, case) in cases().iter().enumerate() {
        if case.dtype == Dtype::F64 && !b.info().f64 {
            eprintln!("SKIPPED {test} {}: the device has no f64", case.name());
            continue;
        }
        // Sabotage one walled case of each streaming pattern.
        let sabotage = case.walls && matches!(n, 0 | 2 | 9);
        match case.dtype {
            Dtype::F32 => check::<f32>(&mut *b, case, n, sabotage, test),
            Dtype::F64 => check::<f64>(&mut *b, case, n, sabotage, test),
        }
        checked += 1;
    }
    assert!(checked >= 6, "{test}: only {checked} cases ran");

    // The element type must be the program's: a typed error, not a wrong result.
    let case = &cases()[0];
    let p = case.program();
    let init = random_populations(&p, 1);
    let e = run_program::<f32>(&mut *b, &p, &case.config(0), &init, 1).unwrap_err();
    assert!(
        matches!(
            e,
            LbmRunError::Dtype {
                program: Dtype::F64,
                element_bytes: 4
            }
        ),
        "{e}"
    );
}

#[test]
fn opencl_lbm_time_loops_match_cpu() {
    time_loops_match_cpu(BackendKind::OpenCl, "opencl_lbm_time_loops_match_cpu");
}

#[test]
fn wgpu_lbm_time_loops_match_cpu() {
    time_loops_match_cpu(BackendKind::Wgpu, "wgpu_lbm_time_loops_match_cpu");
}

#[test]
fn cuda_lbm_time_loops_match_cpu() {
    time_loops_match_cpu(BackendKind::Cuda, "cuda_lbm_time_loops_match_cpu");
}

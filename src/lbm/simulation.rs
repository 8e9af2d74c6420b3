//! A CPU driver of an [`LbmProgram`] on top of the reference executor: the oracle for GPU runs
//! and the engine of the physics tests. The mapping between populations and buffers
//! ([`LbmProgram::initial_buffers`], [`LbmProgram::populations`]) is the program's, so a GPU
//! runtime uploads and reads back exactly the same way.

use super::program::LbmProgram;
use super::LbmError;
use crate::ir::Domain;
use crate::reference::{self, FieldArray, Real};
use ndarray::{Array3, Array4};

/// Density and velocity per cell (`[z, y, x]` and `[z, y, x, d]`); NaN in wall cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Macroscopic {
    /// Density ρ = Σ f_i.
    pub rho: Array3<f64>,
    /// Velocity u = (Σ c_i f_i + F/2)/ρ (the Guo-corrected velocity when a force acts).
    pub u: Array4<f64>,
}

impl Macroscopic {
    /// Total mass `Σ ρ` and momentum `Σ ρu` over the fluid cells.
    pub fn totals(&self) -> (f64, [f64; 3]) {
        let mut mass = 0.0;
        let mut mom = [0.0; 3];
        for (idx, r) in self.rho.indexed_iter() {
            if r.is_nan() {
                continue;
            }
            mass += r;
            for (d, md) in mom.iter_mut().enumerate() {
                *md += r * self.u[[idx.0, idx.1, idx.2, d]];
            }
        }
        (mass, mom)
    }
}

impl LbmProgram {
    /// Calls `f(x, y, z)` for every fluid cell.
    pub fn for_each_fluid(&self, mut f: impl FnMut(usize, usize, usize)) {
        let [nx, ny, nz] = self.domain.size;
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    if !self.is_wall(x, y, z) {
                        f(x, y, z);
                    }
                }
            }
        }
    }

    /// The buffers to upload before time step 0, holding pre-collision populations `init`
    /// (`[z, y, x, q]`; values in wall cells ignored) as [`LbmProgram::initial`] says. Every other
    /// element (walls, ghosts, the second buffer) is the rest equilibrium at unit density.
    pub fn initial_buffers<T: Real>(
        &self,
        init: &Array4<f64>,
    ) -> Result<Vec<FieldArray<T>>, LbmError> {
        let [nx, ny, nz] = self.domain.size;
        let q = self.lattice.q();
        let expected = vec![nz, ny, nx, q];
        if init.shape() != expected.as_slice() {
            return Err(LbmError::InitShape {
                found: init.shape().to_vec(),
                expected,
            });
        }
        let rest = self.lattice.equilibrium(1.0, [0.0; 3]);
        let layout = self.layout();
        let mut buffers: Vec<FieldArray<T>> = self
            .buffers
            .iter()
            .map(|f| FieldArray::filled(f, &self.domain, T::zero()))
            .collect();
        for b in &mut buffers {
            for (e, v) in b.as_mut_slice().iter_mut().enumerate() {
                let i = if layout.stride_q == 1 {
                    e % q
                } else {
                    e / layout.stride_q
                };
                *v = T::from_f64(rest[i]);
            }
        }
        let state = self.initial;
        let data = buffers[state.buffer].as_mut_slice();
        self.for_each_fluid(|x, y, z| {
            for i in 0..q {
                data[self.element(state.kind, x, y, z, i)] = T::from_f64(init[[z, y, x, i]]);
            }
        });
        Ok(buffers)
    }

    /// Pre-collision populations `[z, y, x, q]` after `time` steps, read from `buffers` (as
    /// downloaded from any runtime) the way the pattern keeps them; NaN in wall cells.
    pub fn populations<T: Real>(&self, buffers: &[FieldArray<T>], time: usize) -> Array4<T> {
        let [nx, ny, nz] = self.domain.size;
        let q = self.lattice.q();
        let state = self.state_at(time);
        let data = buffers[state.buffer].as_slice();
        let mut out = Array4::from_elem((nz, ny, nx, q), T::nan());
        self.for_each_fluid(|x, y, z| {
            for i in 0..q {
                out[[z, y, x, i]] = data[self.element(state.kind, x, y, z, i)];
            }
        });
        out
    }

    /// Density and velocity of populations `[z, y, x, q]`.
    pub fn macroscopic<T: Real>(&self, populations: &Array4<T>) -> Macroscopic {
        let [nx, ny, nz] = self.domain.size;
        let force = self.spec.force;
        let mut rho = Array3::from_elem((nz, ny, nx), f64::NAN);
        let mut u = Array4::from_elem((nz, ny, nx, 3), f64::NAN);
        let mut f = vec![0.0; self.lattice.q()];
        self.for_each_fluid(|x, y, z| {
            for (i, v) in f.iter_mut().enumerate() {
                *v = populations[[z, y, x, i]].to_f64();
            }
            let (r, j) = self.lattice.moments(&f);
            rho[[z, y, x]] = r;
            for d in 0..3 {
                u[[z, y, x, d]] = (j[d] + force[d] / 2.0) / r;
            }
        });
        Macroscopic { rho, u }
    }
}

/// An LBM simulation running on the CPU reference.
#[derive(Debug, Clone)]
pub struct Simulation<T: Real> {
    program: LbmProgram,
    buffers: Vec<FieldArray<T>>,
    time: usize,
}

impl<T: Real> Simulation<T> {
    /// Starts from pre-collision populations `init` (`[z, y, x, q]`, values in wall cells ignored).
    pub fn new(program: LbmProgram, init: &Array4<f64>) -> Result<Simulation<T>, LbmError> {
        let buffers = program.initial_buffers(init)?;
        Ok(Simulation {
            program,
            buffers,
            time: 0,
        })
    }

    /// Starts from the equilibrium of `macro_at(x, y, z) = (ρ, u)` in every cell.
    pub fn from_equilibrium(
        program: LbmProgram,
        macro_at: impl Fn(usize, usize, usize) -> (f64, [f64; 3]),
    ) -> Result<Simulation<T>, LbmError> {
        let [nx, ny, nz] = program.domain.size;
        let q = program.lattice.q();
        let mut init = Array4::zeros((nz, ny, nx, q));
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    let (rho, u) = macro_at(x, y, z);
                    for (i, v) in program.lattice.equilibrium(rho, u).into_iter().enumerate() {
                        init[[z, y, x, i]] = v;
                    }
                }
            }
        }
        Simulation::new(program, &init)
    }

    /// The program being run.
    pub fn program(&self) -> &LbmProgram {
        &self.program
    }

    /// Time steps done.
    pub fn time(&self) -> usize {
        self.time
    }

    /// The raw buffers.
    pub fn buffers(&self) -> &[FieldArray<T>] {
        &self.buffers
    }

    /// One time step: the phase's copies and kernel.
    pub fn step(&mut self) -> Result<(), LbmError> {
        let phase = &self.program.cycle[self.time % self.program.cycle.len()];
        for t in &phase.before {
            t.apply(&mut self.buffers);
        }
        // The reference wants the kernel's arrays in field order: move the bound buffers out.
        let tiny = Domain {
            size: [0; 3],
            dims: self.program.domain.dims,
        };
        let mut bound: Vec<FieldArray<T>> = phase
            .bindings
            .iter()
            .map(|&b| {
                let placeholder = FieldArray::filled(&self.program.buffers[b], &tiny, T::zero());
                std::mem::replace(&mut self.buffers[b], placeholder)
            })
            .collect();
        let result = reference::run(
            &self.program.kernels[phase.kernel],
            &self.program.domain,
            &mut bound,
        );
        for (&b, arr) in phase.bindings.iter().zip(bound) {
            self.buffers[b] = arr;
        }
        result.map_err(|e| LbmError::Reference(e.to_string()))?;
        for t in &phase.after {
            t.apply(&mut self.buffers);
        }
        self.time += 1;
        Ok(())
    }

    /// `steps` time steps.
    pub fn run(&mut self, steps: usize) -> Result<(), LbmError> {
        for _ in 0..steps {
            self.step()?;
        }
        Ok(())
    }

    /// Pre-collision populations `[z, y, x, q]` at the current time; NaN in wall cells.
    pub fn populations(&self) -> Array4<T> {
        self.program.populations(&self.buffers, self.time)
    }

    /// Density and velocity at the current time.
    pub fn macroscopic(&self) -> Macroscopic {
        self.program.macroscopic(&self.populations())
    }

    /// Total mass and momentum `Σ ρ`, `Σ (j + F/2)` over the fluid cells.
    pub fn totals(&self) -> (f64, [f64; 3]) {
        self.macroscopic().totals()
    }
}

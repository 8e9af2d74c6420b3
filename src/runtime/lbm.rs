//! Runs the time loop of an LBM variant ([`LbmProgram`]) on a device through any [`Backend`]:
//! the phase's kernel launched with the phase's buffer bindings, and the host-side copies around
//! it (periodic ghost exchange, half-way bounce-back links).
//!
//! The copies ([`Transfer`]) are element index lists, which the IR (affine accesses only) cannot
//! express as a kernel; they run on the host: the buffer is downloaded once per run of consecutive
//! transfers on it, the copies are applied exactly as the CPU driver applies them, and the buffer
//! is uploaded again. That costs two transfers of the buffer per phase with copies, which is
//! nothing on the small domains where whole time loops are checked against the CPU
//! [`crate::lbm::Simulation`]; performance is measured on the bulk kernel alone
//! ([`super::measure`]), as every LBM benchmark does.

use super::measure::Verification;
use super::{Backend, BufferId, ProgramId, RuntimeError};
use crate::config::LaunchConfig;
use crate::ir::Dtype;
use crate::lbm::{LbmError, LbmProgram, Transfer};
use crate::reference::{FieldArray, Real};
use ndarray::Array4;

/// What can go wrong while running an LBM program on a device.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LbmRunError {
    /// A device operation failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The program or the initial populations were rejected.
    #[error(transparent)]
    Lbm(#[from] LbmError),
    /// The element type asked for is not the program's.
    #[error("the program is {program} but was run with {element_bytes}-byte elements")]
    Dtype {
        /// The program's element type.
        program: Dtype,
        /// The size of the element type asked for.
        element_bytes: usize,
    },
}

/// An LBM simulation whose kernels run on a device.
pub struct DeviceSimulation<'b, T: Real + bytemuck::Pod> {
    backend: &'b mut dyn Backend,
    program: LbmProgram,
    buffers: Vec<BufferId>,
    kernels: Vec<ProgramId>,
    /// Host copies of the buffers, used for the transfers and read-back.
    host: Vec<FieldArray<T>>,
    time: usize,
}

impl<'b, T: Real + bytemuck::Pod> DeviceSimulation<'b, T> {
    /// Compiles the program's kernels for `config`, allocates its buffers and uploads the
    /// pre-collision populations `init` (`[z, y, x, q]`, as [`LbmProgram::initial_buffers`]).
    pub fn new(
        backend: &'b mut dyn Backend,
        program: LbmProgram,
        config: &LaunchConfig,
        init: &Array4<f64>,
    ) -> Result<DeviceSimulation<'b, T>, LbmRunError> {
        if program.spec.dtype.size() != std::mem::size_of::<T>() {
            return Err(LbmRunError::Dtype {
                program: program.spec.dtype,
                element_bytes: std::mem::size_of::<T>(),
            });
        }
        let host: Vec<FieldArray<T>> = program.initial_buffers(init)?;
        let mut kernels = Vec::new();
        for k in &program.kernels {
            kernels.push(backend.compile(k, config, &program.domain)?);
        }
        let mut buffers = Vec::new();
        for h in &host {
            let id = backend.alloc(std::mem::size_of_val(h.as_slice()))?;
            backend.upload(id, bytemuck::cast_slice(h.as_slice()))?;
            buffers.push(id);
        }
        Ok(DeviceSimulation {
            backend,
            program,
            buffers,
            kernels,
            host,
            time: 0,
        })
    }

    /// The program being run.
    pub fn program(&self) -> &LbmProgram {
        &self.program
    }

    /// Time steps done.
    pub fn time(&self) -> usize {
        self.time
    }

    /// The emitted source of each kernel (`program.kernels` order).
    pub fn sources(&self) -> Vec<&str> {
        self.kernels
            .iter()
            .map(|k| self.backend.source(*k))
            .collect()
    }

    /// One time step: the phase's copies before, its kernel, its copies after.
    pub fn step(&mut self) -> Result<(), LbmRunError> {
        let DeviceSimulation {
            backend,
            program,
            buffers,
            kernels,
            host,
            time,
        } = self;
        let phase = &program.cycle[*time % program.cycle.len()];
        apply_transfers(&mut **backend, buffers, host, &phase.before)?;
        let bound: Vec<BufferId> = phase.bindings.iter().map(|b| buffers[*b]).collect();
        backend.launch(kernels[phase.kernel], &[bound], false)?;
        apply_transfers(&mut **backend, buffers, host, &phase.after)?;
        *time += 1;
        Ok(())
    }

    /// `steps` time steps.
    pub fn run(&mut self, steps: usize) -> Result<(), LbmRunError> {
        for _ in 0..steps {
            self.step()?;
        }
        Ok(())
    }

    /// Pre-collision populations `[z, y, x, q]` at the current time, read back from the device;
    /// NaN in wall cells (as [`crate::lbm::Simulation::populations`]).
    pub fn populations(&mut self) -> Result<Array4<T>, LbmRunError> {
        let b = self.program.state_at(self.time).buffer;
        self.backend.download(
            self.buffers[b],
            bytemuck::cast_slice_mut(self.host[b].as_mut_slice()),
        )?;
        Ok(self.program.populations(&self.host, self.time))
    }
}

/// Runs `transfers` in order; each run of consecutive transfers on one buffer costs one download
/// and one upload of that buffer.
fn apply_transfers<T: Real + bytemuck::Pod>(
    backend: &mut dyn Backend,
    buffers: &[BufferId],
    host: &mut [FieldArray<T>],
    transfers: &[Transfer],
) -> Result<(), RuntimeError> {
    let mut i = 0;
    while i < transfers.len() {
        let b = transfers[i].buffer();
        let end = transfers[i..]
            .iter()
            .position(|t| t.buffer() != b)
            .map_or(transfers.len(), |n| i + n);
        backend.download(buffers[b], bytemuck::cast_slice_mut(host[b].as_mut_slice()))?;
        for t in &transfers[i..end] {
            t.apply(host);
        }
        backend.upload(buffers[b], bytemuck::cast_slice(host[b].as_slice()))?;
        i = end;
    }
    Ok(())
}

/// Runs `program` for `steps` time steps from `init` on `backend` with every kernel launched
/// under `config`, and returns the populations `[z, y, x, q]` (NaN in wall cells).
pub fn run_program<T: Real + bytemuck::Pod>(
    backend: &mut dyn Backend,
    program: &LbmProgram,
    config: &LaunchConfig,
    init: &Array4<f64>,
    steps: usize,
) -> Result<Array4<T>, LbmRunError> {
    let mut sim = DeviceSimulation::<T>::new(backend, program.clone(), config, init)?;
    sim.run(steps)?;
    sim.populations()
}

/// Compares populations from a device with the CPU's: a wall cell (NaN in `want`) must be NaN in
/// `got`, every other value must satisfy `|got − want| ≤ rtol · max(|want|, scale)` with `scale`
/// the largest `|want|` (the populations of one cell scale with the lattice weights, which differ
/// by up to 64× in D3Q27, so a purely relative test would be harsh on the small ones).
pub fn compare_populations<T: Real>(got: &Array4<T>, want: &Array4<T>, rtol: f64) -> Verification {
    let mut v = Verification {
        passed: true,
        checked: 0,
        mismatches: 0,
        max_error: 0.0,
        tolerance: rtol,
        first_mismatch: None,
        sampled_rows: None,
    };
    if got.shape() != want.shape() {
        v.passed = false;
        v.first_mismatch = Some(format!(
            "shape {:?}, expected {:?}",
            got.shape(),
            want.shape()
        ));
        return v;
    }
    let scale = want
        .iter()
        .map(|w| Real::to_f64(*w).abs())
        .filter(|w| w.is_finite())
        .fold(f64::MIN_POSITIVE, f64::max);
    for ((idx, g), w) in got.indexed_iter().zip(want.iter()) {
        v.checked += 1;
        let (g, w) = (Real::to_f64(*g), Real::to_f64(*w));
        let ok = if w.is_nan() {
            g.is_nan()
        } else {
            let err = (g - w).abs() / w.abs().max(scale);
            if err.is_finite() {
                v.max_error = v.max_error.max(err);
            }
            err <= rtol
        };
        if !ok {
            v.passed = false;
            v.mismatches += 1;
            if v.first_mismatch.is_none() {
                let (z, y, x, q) = idx;
                v.first_mismatch = Some(format!(
                    "population {q} of cell (x, y, z) = ({x}, {y}, {z}): got {g}, expected {w}"
                ));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_flags_values_and_walls() {
        let mut want = Array4::<f64>::from_elem((1, 2, 2, 3), 0.25);
        want[[0, 0, 0, 0]] = f64::NAN;
        let mut got = want.clone();
        let v = compare_populations(&got, &want, 1e-10);
        assert!(v.passed && v.checked == 12 && v.max_error == 0.0);
        got[[0, 1, 0, 2]] = 0.25 + 1e-12;
        assert!(compare_populations(&got, &want, 1e-10).passed);
        got[[0, 1, 0, 2]] = 0.26;
        got[[0, 0, 0, 0]] = 0.25;
        let v = compare_populations(&got, &want, 1e-10);
        assert!(!v.passed);
        assert_eq!(v.mismatches, 2);
        let m = v.first_mismatch.unwrap();
        assert!(
            m.contains("population 0 of cell (x, y, z) = (0, 0, 0)"),
            "{m}"
        );
        let other = Array4::<f64>::zeros((1, 2, 2, 4));
        assert!(!compare_populations(&other, &want, 1.0).passed);
    }
}

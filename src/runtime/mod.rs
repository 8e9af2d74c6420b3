//! Backends that compile, run and time emitted kernels on devices, behind one [`Backend`] trait:
//! OpenCL (opencl3, any platform, libOpenCL loaded at run time), WebGPU (wgpu on Vulkan) and CUDA
//! (cudarc + NVRTC, cargo feature `cuda`, libcuda and libnvrtc loaded at run time).
//!
//! [`measure`] runs kernels the same way on every backend: seeded random inputs, warm-up launches,
//! timed launches alternating source and destination buffers (device timers, median reported),
//! then one launch on poisoned outputs that is checked element by element against the CPU
//! reference. [`lbm`] drives whole LBM time loops (kernels plus the copies between them).

pub mod lbm;
pub mod measure;
pub mod opencl;
mod require;
pub mod webgpu;

#[cfg(feature = "cuda")]
pub mod cuda;

pub use require::{require_devices, skip_or_fail, RequiredDevices, REQUIRE_DEVICES_ENV};

use crate::config::LaunchConfig;
use crate::emit::{EmitError, Language};
use crate::ir::{Domain, Kernel};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The device APIs stencilscope runs kernels through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// OpenCL through opencl3.
    OpenCl,
    /// WebGPU through wgpu (Vulkan).
    Wgpu,
    /// CUDA through cudarc and NVRTC.
    Cuda,
}

impl BackendKind {
    /// All backends, in listing order.
    pub const ALL: [BackendKind; 3] = [BackendKind::OpenCl, BackendKind::Wgpu, BackendKind::Cuda];

    /// Name as used on the command line and in `STENCILSCOPE_REQUIRE_DEVICES`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::OpenCl => "opencl",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Cuda => "cuda",
        }
    }

    /// The source language the backend compiles.
    pub fn language(self) -> Language {
        match self {
            BackendKind::OpenCl => Language::OpenCl,
            BackendKind::Wgpu => Language::Wgsl,
            BackendKind::Cuda => Language::Cuda,
        }
    }

    /// The devices of this backend; `NotAvailable` when its driver or loader is missing.
    pub fn devices(self) -> Result<Vec<DeviceInfo>, RuntimeError> {
        match self {
            BackendKind::OpenCl => opencl::devices(),
            BackendKind::Wgpu => webgpu::devices(),
            BackendKind::Cuda => cuda_devices(),
        }
    }

    /// Opens the device `selector` picks.
    pub fn open(
        self,
        selector: &DeviceSelector,
        options: &BackendOptions,
    ) -> Result<Box<dyn Backend>, RuntimeError> {
        match self {
            BackendKind::OpenCl => Ok(Box::new(opencl::OpenClBackend::open(selector)?)),
            BackendKind::Wgpu => Ok(Box::new(webgpu::WgpuBackend::open(selector, options)?)),
            BackendKind::Cuda => cuda_open(selector),
        }
    }
}

#[cfg(feature = "cuda")]
fn cuda_devices() -> Result<Vec<DeviceInfo>, RuntimeError> {
    cuda::devices()
}

#[cfg(not(feature = "cuda"))]
fn cuda_devices() -> Result<Vec<DeviceInfo>, RuntimeError> {
    Err(RuntimeError::NotAvailable {
        backend: BackendKind::Cuda,
        reason: "this binary was built without the `cuda` feature (cargo build --features cuda)"
            .into(),
    })
}

#[cfg(feature = "cuda")]
fn cuda_open(selector: &DeviceSelector) -> Result<Box<dyn Backend>, RuntimeError> {
    Ok(Box::new(cuda::CudaBackend::open(selector)?))
}

#[cfg(not(feature = "cuda"))]
fn cuda_open(_: &DeviceSelector) -> Result<Box<dyn Backend>, RuntimeError> {
    cuda_devices().map(|_| unreachable!("cuda_devices always fails without the feature"))
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// Options that change how a backend compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BackendOptions {
    /// wgpu: keep wgpu's runtime bounds checks on storage accesses. Off by default: the emitter's
    /// guards keep every access in range (verified against the reference on every run), and the
    /// checks cost time (measured numbers in `bench/results/`).
    pub wgpu_bounds_checks: bool,
    /// wgpu: use this many workgroups per dispatch dimension instead of the device's limit, to
    /// exercise the linearised dispatch of large grids on small domains (tests, diagnostics).
    pub wgpu_max_groups_per_dim: Option<u32>,
}

/// One device of one backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceInfo {
    /// The backend.
    pub backend: BackendKind,
    /// Index within the backend's list (what `--device N` selects).
    pub index: usize,
    /// Device name.
    pub name: String,
    /// Whether it is a GPU (the default selection prefers GPUs over CPU devices such as PoCL).
    pub gpu: bool,
    /// Platform, driver or API version, as the backend reports it.
    pub driver: String,
    /// Whether the device runs f64 kernels.
    pub f64: bool,
    /// Whether the device has timers for kernel execution.
    pub timers: bool,
    /// Largest number of threads per block.
    pub max_threads: u64,
    /// Largest block extent per dimension.
    pub max_block: [u64; 3],
    /// Largest single buffer in bytes (storage binding size for wgpu).
    pub max_buffer: u64,
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} #{}: {} ({}); f64 {}, timers {}, max threads/block {}, max block {:?}, max buffer {} MiB",
            self.backend,
            self.index,
            self.name,
            self.driver,
            if self.f64 { "yes" } else { "no" },
            if self.timers { "yes" } else { "no" },
            self.max_threads,
            self.max_block,
            self.max_buffer >> 20
        )
    }
}

/// Which device to open: by index, or the first whose name contains a substring (any case).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceSelector {
    /// The first GPU, or the first device when there is no GPU.
    #[default]
    First,
    /// The device with this index.
    Index(usize),
    /// The first device whose name contains this (case-insensitive).
    Name(String),
}

impl DeviceSelector {
    /// Parses `--device`: a number is an index, anything else a name substring.
    pub fn parse(s: &str) -> DeviceSelector {
        match s.trim().parse::<usize>() {
            Ok(i) => DeviceSelector::Index(i),
            Err(_) => DeviceSelector::Name(s.trim().to_string()),
        }
    }

    /// Picks from `devices`, or explains what exists.
    pub fn pick<'d>(
        &self,
        backend: BackendKind,
        devices: &'d [DeviceInfo],
    ) -> Result<&'d DeviceInfo, RuntimeError> {
        let found = match self {
            DeviceSelector::First => devices.iter().find(|d| d.gpu).or(devices.first()),
            DeviceSelector::Index(i) => devices.get(*i),
            DeviceSelector::Name(n) => {
                let n = n.to_lowercase();
                devices.iter().find(|d| d.name.to_lowercase().contains(&n))
            }
        };
        found.ok_or_else(|| RuntimeError::NoDevice {
            backend,
            selector: self.to_string(),
            available: if devices.is_empty() {
                "none".into()
            } else {
                devices
                    .iter()
                    .map(|d| format!("#{} {}", d.index, d.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        })
    }
}

impl fmt::Display for DeviceSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSelector::First => write!(f, "device (the first GPU, else the first device)"),
            DeviceSelector::Index(i) => write!(f, "device #{i}"),
            DeviceSelector::Name(n) => write!(f, "a device named like `{n}`"),
        }
    }
}

/// A device buffer, by index into the backend's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferId(pub usize);

/// A compiled kernel, by index into the backend's programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProgramId(pub usize);

/// What can go wrong on a device.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RuntimeError {
    /// The backend's driver or loader is missing, or lists no device.
    #[error("{backend} is not available: {reason}")]
    NotAvailable {
        /// The backend.
        backend: BackendKind,
        /// Why.
        reason: String,
    },
    /// No device matches the selector.
    #[error("{backend} has no {selector}; available: {available}")]
    NoDevice {
        /// The backend.
        backend: BackendKind,
        /// What was asked for.
        selector: String,
        /// What exists.
        available: String,
    },
    /// The kernel could not be emitted.
    #[error(transparent)]
    Emit(#[from] EmitError),
    /// A launch or allocation exceeds a device limit; rejected before it reaches the driver.
    #[error("{what} is {requested}, beyond the device's {limit} of {max}")]
    Limit {
        /// What exceeds it (e.g. "threads per block").
        what: String,
        /// The requested value.
        requested: u64,
        /// The limit's name as the API calls it.
        limit: &'static str,
        /// The limit's value.
        max: u64,
    },
    /// The device lacks a feature the kernel needs.
    #[error("{device} does not support {feature}")]
    Unsupported {
        /// Device name.
        device: String,
        /// The feature.
        feature: String,
    },
    /// The driver's compiler rejected the source.
    #[error("{backend} compiler rejected the kernel:\n{log}")]
    Compile {
        /// The backend.
        backend: BackendKind,
        /// Compiler output.
        log: String,
    },
    /// The driver refused a launch (e.g. `CL_OUT_OF_RESOURCES`).
    #[error("refused by the {backend} driver: {error}")]
    Refused {
        /// The backend.
        backend: BackendKind,
        /// The driver's error.
        error: String,
    },
    /// Another driver call failed.
    #[error("{backend} {operation} failed: {error}")]
    Driver {
        /// The backend.
        backend: BackendKind,
        /// What was being done.
        operation: &'static str,
        /// The driver's error.
        error: String,
    },
    /// A buffer or program handle or size that does not match.
    #[error("{0}")]
    Usage(String),
}

impl RuntimeError {
    /// Whether this error means the configuration was refused (by a limit check or the driver)
    /// rather than that the device or the program is broken.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            RuntimeError::Limit { .. }
                | RuntimeError::Refused { .. }
                | RuntimeError::Unsupported { .. }
        )
    }
}

/// One device, opened: allocate, upload, compile, launch with timing, download.
pub trait Backend {
    /// The device.
    fn info(&self) -> &DeviceInfo;

    /// Allocates a buffer of `bytes` bytes (contents undefined).
    fn alloc(&mut self, bytes: usize) -> Result<BufferId, RuntimeError>;

    /// Copies `data` to the start of `buffer` (waits until done).
    fn upload(&mut self, buffer: BufferId, data: &[u8]) -> Result<(), RuntimeError>;

    /// Copies the start of `buffer` into `out` (waits until done).
    fn download(&mut self, buffer: BufferId, out: &mut [u8]) -> Result<(), RuntimeError>;

    /// Copies the first `bytes` bytes of `src` to the start of `dst` on the device (waits until
    /// done): restores a pristine state between measurements without a trip over the host bus.
    fn copy_buffer(
        &mut self,
        src: BufferId,
        dst: BufferId,
        bytes: usize,
    ) -> Result<(), RuntimeError>;

    /// Emits and compiles `kernel` for `config` on `domain`, checking every device limit first.
    fn compile(
        &mut self,
        kernel: &Kernel,
        config: &LaunchConfig,
        domain: &Domain,
    ) -> Result<ProgramId, RuntimeError>;

    /// The source the last successful `compile` of `program` used.
    fn source(&self, program: ProgramId) -> &str;

    /// Launches `program` once per entry of `launches` (the buffers, one per field, in field
    /// order), back to back, and waits. With `timed`, returns each launch's device time in
    /// seconds, measured with the device's own timers; otherwise an empty list.
    fn launch(
        &mut self,
        program: ProgramId,
        launches: &[Vec<BufferId>],
        timed: bool,
    ) -> Result<Vec<f64>, RuntimeError>;
}

/// Every device of every backend, with the reason for backends that have none.
pub fn all_devices() -> Vec<(BackendKind, Result<Vec<DeviceInfo>, RuntimeError>)> {
    BackendKind::ALL.iter().map(|b| (*b, b.devices())).collect()
}

/// Checks `value ≤ max` for a named limit.
pub(crate) fn check_limit(
    what: impl Into<String>,
    requested: u64,
    limit: &'static str,
    max: u64,
) -> Result<(), RuntimeError> {
    if requested > max {
        Err(RuntimeError::Limit {
            what: what.into(),
            requested,
            limit,
            max,
        })
    } else {
        Ok(())
    }
}

/// Program `id` of a backend's list, or a usage error naming the backend.
pub(crate) fn program_of<'a, P>(
    programs: &'a [P],
    id: ProgramId,
    backend: &str,
) -> Result<&'a P, RuntimeError> {
    programs
        .get(id.0)
        .ok_or_else(|| RuntimeError::Usage(format!("no {backend} program #{}", id.0)))
}

/// Checks that a launch passes one buffer per field of the kernel.
pub(crate) fn check_buffer_count(fields: usize, given: usize) -> Result<(), RuntimeError> {
    if given != fields {
        return Err(RuntimeError::Usage(format!(
            "kernel takes {fields} buffers, {given} given"
        )));
    }
    Ok(())
}

/// Checks the arguments of `Backend::copy_buffer`: distinct buffers, both large enough.
pub(crate) fn check_copy(
    src: BufferId,
    dst: BufferId,
    bytes: usize,
    src_len: usize,
    dst_len: usize,
) -> Result<(), RuntimeError> {
    if src == dst {
        return Err(RuntimeError::Usage(format!(
            "copy of buffer #{} onto itself",
            src.0
        )));
    }
    if bytes > src_len || bytes > dst_len {
        return Err(RuntimeError::Usage(format!(
            "copy of {bytes} bytes from a buffer of {src_len} into one of {dst_len}"
        )));
    }
    Ok(())
}

/// A shared reference to `v[src]` and a mutable one to `v[dst]` (`src != dst`, both in range).
pub(crate) fn pair_mut<T>(v: &mut [T], src: usize, dst: usize) -> (&T, &mut T) {
    assert_ne!(src, dst, "pair_mut needs two distinct indices");
    if src < dst {
        let (a, b) = v.split_at_mut(dst);
        (&a[src], &mut b[0])
    } else {
        let (a, b) = v.split_at_mut(src);
        (&b[0], &mut a[dst])
    }
}

/// Checks block size against per-dimension and total maxima (names as the API spells them).
pub(crate) fn check_block(
    config: &LaunchConfig,
    max_block: [u64; 3],
    max_block_names: [&'static str; 3],
    max_threads: u64,
    max_threads_name: &'static str,
) -> Result<(), RuntimeError> {
    for d in 0..3 {
        check_limit(
            format!("block size in {}", ["x", "y", "z"][d]),
            config.block[d] as u64,
            max_block_names[d],
            max_block[d],
        )?;
    }
    check_limit(
        "threads per block",
        config.threads() as u64,
        max_threads_name,
        max_threads,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(i: usize, name: &str) -> DeviceInfo {
        DeviceInfo {
            backend: BackendKind::OpenCl,
            index: i,
            name: name.into(),
            gpu: name.contains("NVIDIA"),
            driver: String::new(),
            f64: true,
            timers: true,
            max_threads: 1024,
            max_block: [1024, 1024, 64],
            max_buffer: 1 << 30,
        }
    }

    #[test]
    fn selectors_pick_by_index_or_name() {
        let d = vec![dev(0, "cpu-haswell"), dev(1, "NVIDIA H100 80GB HBM3")];
        let b = BackendKind::OpenCl;
        assert_eq!(DeviceSelector::parse("1").pick(b, &d).unwrap().index, 1);
        assert_eq!(DeviceSelector::parse("h100").pick(b, &d).unwrap().index, 1);
        // The default prefers a GPU over a CPU device listed first.
        assert_eq!(DeviceSelector::First.pick(b, &d).unwrap().index, 1);
        assert_eq!(DeviceSelector::First.pick(b, &d[..1]).unwrap().index, 0);
        let e = DeviceSelector::parse("a100").pick(b, &d).unwrap_err();
        assert!(e.to_string().contains("#1 NVIDIA H100"), "{e}");
        assert!(DeviceSelector::parse("7").pick(b, &[]).is_err());
    }

    #[test]
    fn limits_name_themselves() {
        let c = LaunchConfig::new([64, 32, 1], [1; 3]);
        let e =
            check_block(&c, [1024, 1024, 64], ["X", "Y", "Z"], 1024, "MAX_THREADS").unwrap_err();
        assert!(e.is_refusal());
        assert_eq!(
            e.to_string(),
            "threads per block is 2048, beyond the device's MAX_THREADS of 1024"
        );
        let e = check_block(
            &LaunchConfig::new([1, 1, 128], [1; 3]),
            [1024, 1024, 64],
            ["X", "Y", "Z"],
            1024,
            "T",
        )
        .unwrap_err();
        assert!(e
            .to_string()
            .contains("block size in z is 128, beyond the device's Z of 64"));
    }
}

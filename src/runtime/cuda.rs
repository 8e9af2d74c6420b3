//! The CUDA backend (cargo feature `cuda`): cudarc's driver API and NVRTC, both loaded at run
//! time, so building needs no CUDA toolkit and a machine without a driver reports "not available".
//! Kernel times come from CUDA events recorded around each launch on one stream.

use super::{
    check_block, check_buffer_count, check_copy, check_limit, pair_mut, program_of, Backend,
    BackendKind, BufferId, DeviceInfo, DeviceSelector, ProgramId, RuntimeError,
};
use crate::config::LaunchConfig;
use crate::emit::{self, Options};
use crate::ir::{Domain, Kernel};
use cudarc::driver::sys::{CUdevice_attribute as A, CUevent_flags, CUfunction_attribute_enum};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig as CuLaunch, PushKernelArg,
};
use std::sync::Arc;

const B: BackendKind = BackendKind::Cuda;

fn driver_err(operation: &'static str) -> impl Fn(cudarc::driver::DriverError) -> RuntimeError {
    move |e| RuntimeError::Driver {
        backend: B,
        operation,
        error: e.to_string(),
    }
}

/// Fails unless libcuda can be loaded (cudarc panics on a missing library otherwise).
fn require_driver() -> Result<(), RuntimeError> {
    // SAFETY: only tries to dlopen the library.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(RuntimeError::NotAvailable {
            backend: B,
            reason: "libcuda.so could not be loaded (no NVIDIA driver)".into(),
        })
    }
}

fn info(ctx: &Arc<CudaContext>, index: usize) -> Result<DeviceInfo, RuntimeError> {
    let attr = |a| {
        ctx.attribute(a)
            .map(|v| v as u64)
            .map_err(driver_err("cuDeviceGetAttribute"))
    };
    let mut version = 0;
    // SAFETY: writes one int.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) };
    let (major, minor) = ctx
        .compute_capability()
        .map_err(driver_err("compute capability"))?;
    let mem = cudarc::driver::result::mem_get_info()
        .map(|(_, total)| total as u64)
        .unwrap_or(u64::MAX);
    Ok(DeviceInfo {
        backend: B,
        index,
        name: ctx.name().map_err(driver_err("cuDeviceGetName"))?,
        gpu: true,
        driver: format!(
            "CUDA driver API {}.{}, compute capability {major}.{minor}",
            version / 1000,
            (version % 1000) / 10
        ),
        f64: true,
        timers: true,
        max_threads: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_block: [
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_buffer: mem,
    })
}

/// Lists the CUDA devices.
pub fn devices() -> Result<Vec<DeviceInfo>, RuntimeError> {
    require_driver()?;
    let n = CudaContext::device_count().map_err(|e| RuntimeError::NotAvailable {
        backend: B,
        reason: format!("cuInit/cuDeviceGetCount failed: {e}"),
    })?;
    (0..n as usize)
        .map(|i| info(&CudaContext::new(i).map_err(driver_err("cuCtxCreate"))?, i))
        .collect()
}

struct CuProgram {
    source: String,
    function: CudaFunction,
    launch: CuLaunch,
    fields: usize,
}

/// NVRTC's single-precision semantics set to OpenCL's defaults, so that the CUDA twin of a kernel
/// computes (and costs) what the OpenCL kernel does: denormals flushed, division and square root
/// within a few ulps instead of correctly rounded (OpenCL C allows 2.5 and 3 ulps; NVIDIA's OpenCL
/// compiler uses the fast forms). With NVRTC's IEEE defaults the f32 AA LBM kernels (one division
/// per cell) took 23–26% longer through CUDA than through OpenCL on an H200; with these options
/// they run at OpenCL's speed (bench/results/h200/lbm.md). Double precision is unaffected.
pub const NVRTC_FLOAT_OPTIONS: [&str; 3] = ["--ftz=true", "--prec-div=false", "--prec-sqrt=false"];

/// NVRTC's options for a kernel of this backend: [`NVRTC_FLOAT_OPTIONS`] and the virtual
/// architecture `arch` (`compute_XY`); the counters twin compiles with the same.
pub fn nvrtc_options(arch: &str) -> Vec<String> {
    NVRTC_FLOAT_OPTIONS
        .iter()
        .map(|o| o.to_string())
        .chain([format!("--gpu-architecture={arch}")])
        .collect()
}

/// An opened CUDA device: primary context, one stream, buffers and programs.
pub struct CudaBackend {
    info: DeviceInfo,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Virtual architecture for NVRTC (PTX, JIT-compiled by the driver for the actual GPU).
    arch: String,
    max_grid: [u64; 3],
    buffers: Vec<CudaSlice<u8>>,
    programs: Vec<CuProgram>,
}

impl CudaBackend {
    /// Opens the device `selector` picks.
    pub fn open(selector: &DeviceSelector) -> Result<CudaBackend, RuntimeError> {
        let list = devices()?;
        let info = selector.pick(B, &list)?.clone();
        let ctx = CudaContext::new(info.index).map_err(driver_err("cuCtxCreate"))?;
        // One stream, no cross-stream use: cudarc's per-launch event bookkeeping is not needed and
        // would add events between timed launches.
        // SAFETY: all work runs on `stream`, in order.
        unsafe { ctx.disable_event_tracking() };
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver_err("compute capability"))?;
        let attr = |a| {
            ctx.attribute(a)
                .map(|v| v as u64)
                .map_err(driver_err("cuDeviceGetAttribute"))
        };
        let max_grid = [
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ];
        let stream = ctx.new_stream().map_err(driver_err("cuStreamCreate"))?;
        Ok(CudaBackend {
            info,
            ctx,
            stream,
            arch: format!("compute_{major}{minor}"),
            max_grid,
            buffers: Vec::new(),
            programs: Vec::new(),
        })
    }

    fn buffer(&self, b: BufferId) -> Result<&CudaSlice<u8>, RuntimeError> {
        self.buffers
            .get(b.0)
            .ok_or_else(|| RuntimeError::Usage(format!("no CUDA buffer #{}", b.0)))
    }
}

impl Backend for CudaBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&mut self, bytes: usize) -> Result<BufferId, RuntimeError> {
        // SAFETY: contents are undefined until uploaded, as the trait documents.
        let buf =
            unsafe { self.stream.alloc::<u8>(bytes.max(1)) }.map_err(driver_err("cuMemAlloc"))?;
        self.buffers.push(buf);
        Ok(BufferId(self.buffers.len() - 1))
    }

    fn upload(&mut self, buffer: BufferId, data: &[u8]) -> Result<(), RuntimeError> {
        let len = self.buffer(buffer)?.len();
        if data.len() > len {
            return Err(RuntimeError::Usage(format!(
                "upload of {} bytes into a buffer of {len}",
                data.len()
            )));
        }
        let buf = &mut self.buffers[buffer.0];
        let mut view = buf.slice_mut(0..data.len());
        self.stream
            .memcpy_htod(data, &mut view)
            .map_err(driver_err("cuMemcpyHtoD"))?;
        self.stream.synchronize().map_err(driver_err("upload"))
    }

    fn download(&mut self, buffer: BufferId, out: &mut [u8]) -> Result<(), RuntimeError> {
        let buf = self.buffer(buffer)?;
        if out.len() > buf.len() {
            return Err(RuntimeError::Usage(format!(
                "download of {} bytes from a buffer of {}",
                out.len(),
                buf.len()
            )));
        }
        let view = buf.slice(0..out.len());
        self.stream
            .memcpy_dtoh(&view, out)
            .map_err(driver_err("cuMemcpyDtoH"))?;
        self.stream.synchronize().map_err(driver_err("download"))
    }

    fn copy_buffer(
        &mut self,
        src: BufferId,
        dst: BufferId,
        bytes: usize,
    ) -> Result<(), RuntimeError> {
        check_copy(
            src,
            dst,
            bytes,
            self.buffer(src)?.len(),
            self.buffer(dst)?.len(),
        )?;
        if bytes == 0 {
            return Ok(());
        }
        let (s, d) = pair_mut(&mut self.buffers, src.0, dst.0);
        let from = s.slice(0..bytes);
        let mut to = d.slice_mut(0..bytes);
        self.stream
            .memcpy_dtod(&from, &mut to)
            .map_err(driver_err("cuMemcpyDtoD"))?;
        self.stream.synchronize().map_err(driver_err("copy"))
    }

    fn compile(
        &mut self,
        kernel: &Kernel,
        config: &LaunchConfig,
        domain: &Domain,
    ) -> Result<ProgramId, RuntimeError> {
        check_block(
            config,
            self.info.max_block,
            [
                "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X",
                "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y",
                "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z",
            ],
            self.info.max_threads,
            "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
        )?;
        let grid = config.grid(domain);
        for (d, name) in [
            "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X",
            "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y",
            "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z",
        ]
        .into_iter()
        .enumerate()
        {
            check_limit(
                format!("grid size in {}", ["x", "y", "z"][d]),
                grid[d] as u64,
                name,
                self.max_grid[d],
            )?;
        }
        // SAFETY: only tries to dlopen the library.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(RuntimeError::NotAvailable {
                backend: B,
                reason: "libnvrtc.so could not be loaded (install the CUDA NVRTC library or add its directory to LD_LIBRARY_PATH)".into(),
            });
        }
        let source = emit::cuda::write_string(kernel, config, domain, &Options::default())?;
        let opts = cudarc::nvrtc::CompileOptions {
            options: nvrtc_options(&self.arch),
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(&source, opts).map_err(|e| {
            RuntimeError::Compile {
                backend: B,
                log: match e {
                    cudarc::nvrtc::CompileError::CompileError { log, .. } => {
                        log.to_string_lossy().into_owned()
                    }
                    other => other.to_string(),
                },
            }
        })?;
        let module = self
            .ctx
            .load_module(ptx)
            .map_err(|e| RuntimeError::Refused {
                backend: B,
                error: format!("cuModuleLoadData: {e}"),
            })?;
        let function = module
            .load_function(&kernel.name)
            .map_err(driver_err("cuModuleGetFunction"))?;
        let max = function
            .get_attribute(CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
            .map_err(driver_err("cuFuncGetAttribute"))?;
        check_limit(
            "threads per block",
            config.threads() as u64,
            "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (of the compiled kernel)",
            max as u64,
        )?;
        let b = config.block.map(|v| v as u32);
        self.programs.push(CuProgram {
            source,
            function,
            launch: CuLaunch {
                grid_dim: (grid[0] as u32, grid[1] as u32, grid[2] as u32),
                block_dim: (b[0], b[1], b[2]),
                shared_mem_bytes: 0,
            },
            fields: kernel.fields.len(),
        });
        Ok(ProgramId(self.programs.len() - 1))
    }

    fn source(&self, program: ProgramId) -> &str {
        &self.programs[program.0].source
    }

    fn launch(
        &mut self,
        program: ProgramId,
        launches: &[Vec<BufferId>],
        timed: bool,
    ) -> Result<Vec<f64>, RuntimeError> {
        let p = program_of(&self.programs, program, "CUDA")?;
        let mut events = Vec::new();
        for bufs in launches {
            check_buffer_count(p.fields, bufs.len())?;
            let slices = bufs
                .iter()
                .map(|b| self.buffer(*b))
                .collect::<Result<Vec<_>, _>>()?;
            let start = if timed {
                let e = self
                    .ctx
                    .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(driver_err("cuEventCreate"))?;
                e.record(&self.stream)
                    .map_err(driver_err("cuEventRecord"))?;
                Some(e)
            } else {
                None
            };
            let mut args = self.stream.launch_builder(&p.function);
            for s in &slices {
                args.arg(*s);
            }
            // SAFETY: the emitted kernel takes exactly one pointer per field, in this order, and
            // its guards keep every access inside the buffers allocated for those fields.
            unsafe { args.launch(p.launch) }.map_err(|e| RuntimeError::Refused {
                backend: B,
                error: format!("cuLaunchKernel: {e}"),
            })?;
            if let Some(start) = start {
                let end = self
                    .ctx
                    .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(driver_err("cuEventCreate"))?;
                end.record(&self.stream)
                    .map_err(driver_err("cuEventRecord"))?;
                events.push((start, end));
            }
        }
        self.stream
            .synchronize()
            .map_err(|e| RuntimeError::Refused {
                backend: B,
                error: format!("kernel execution: {e}"),
            })?;
        events
            .iter()
            .map(|(s, e)| {
                s.elapsed_ms(e)
                    .map(|ms| ms as f64 * 1e-3)
                    .map_err(driver_err("cuEventElapsedTime"))
            })
            .collect()
    }
}

//! The OpenCL backend (opencl3). libOpenCL is loaded at run time, so a machine without an ICD
//! loader reports "not available" instead of failing to start. Devices of all platforms are
//! listed in platform order; kernel times come from profiling events (`CL_PROFILING_COMMAND_START`
//! to `_END`).

use super::{
    check_block, check_buffer_count, check_copy, check_limit, pair_mut, program_of, Backend,
    BackendKind, BufferId, DeviceInfo, DeviceSelector, ProgramId, RuntimeError,
};
use crate::config::LaunchConfig;
use crate::emit::{self, Options};
use crate::ir::{Domain, Dtype, Kernel};
use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_GPU};
use opencl3::kernel::{ExecuteKernel, Kernel as ClKernel};
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::platform::get_platforms;
use opencl3::program::Program;
use opencl3::types::CL_BLOCKING;
use std::ptr;
use std::sync::Mutex;

const B: BackendKind = BackendKind::OpenCl;

/// Serialises platform and device enumeration and context creation within the process: PoCL 3.1
/// crashes (in `clGetDeviceInfo`) when two threads initialise it at the same time.
static INIT: Mutex<()> = Mutex::new(());

fn init_lock() -> std::sync::MutexGuard<'static, ()> {
    // A panic while holding the lock leaves nothing inconsistent on our side.
    INIT.lock().unwrap_or_else(|p| p.into_inner())
}

fn driver_err(operation: &'static str) -> impl Fn(opencl3::error_codes::ClError) -> RuntimeError {
    move |e| RuntimeError::Driver {
        backend: B,
        operation,
        error: format!("{e} ({})", e.0),
    }
}

/// All OpenCL devices with their ids, platform by platform.
fn device_list() -> Result<Vec<(DeviceInfo, Device)>, RuntimeError> {
    let platforms = get_platforms().map_err(|e| RuntimeError::NotAvailable {
        backend: B,
        reason: if e.0 == -2000 {
            "libOpenCL.so could not be loaded (install an ICD loader such as ocl-icd-libopencl1 and a driver, e.g. pocl-opencl-icd)".into()
        } else {
            format!("clGetPlatformIDs failed: {e} ({})", e.0)
        },
    })?;
    let mut out = Vec::new();
    for p in platforms {
        let pname = p.name().unwrap_or_default();
        // A platform without devices reports CL_DEVICE_NOT_FOUND: skip it.
        let Ok(ids) = p.get_devices(CL_DEVICE_TYPE_ALL) else {
            continue;
        };
        for id in ids {
            let d = Device::new(id);
            let sizes = d.max_work_item_sizes().unwrap_or_default();
            let dim = |i: usize| sizes.get(i).copied().unwrap_or(1) as u64;
            let info = DeviceInfo {
                backend: B,
                index: out.len(),
                name: d.name().unwrap_or_default().trim().to_string(),
                gpu: d.dev_type().unwrap_or(0) & CL_DEVICE_TYPE_GPU != 0,
                driver: format!(
                    "{}, {}, driver {}",
                    pname.trim(),
                    d.version().unwrap_or_default().trim(),
                    d.driver_version().unwrap_or_default().trim()
                ),
                f64: d.double_fp_config().unwrap_or(0) != 0,
                timers: true,
                max_threads: d.max_work_group_size().unwrap_or(1) as u64,
                max_block: [dim(0), dim(1), dim(2)],
                max_buffer: d.max_mem_alloc_size().unwrap_or(0),
            };
            out.push((info, d));
        }
    }
    Ok(out)
}

/// Lists the OpenCL devices.
pub fn devices() -> Result<Vec<DeviceInfo>, RuntimeError> {
    let _guard = init_lock();
    Ok(device_list()?.into_iter().map(|(i, _)| i).collect())
}

struct ClProgram {
    source: String,
    kernel: ClKernel,
    global: [usize; 3],
    local: [usize; 3],
    fields: usize,
    _program: Program,
}

/// An opened OpenCL device: context, profiling queue, buffers and programs.
pub struct OpenClBackend {
    info: DeviceInfo,
    device: Device,
    context: Context,
    queue: CommandQueue,
    buffers: Vec<(Buffer<u8>, usize)>,
    programs: Vec<ClProgram>,
}

impl OpenClBackend {
    /// Opens the device `selector` picks.
    pub fn open(selector: &DeviceSelector) -> Result<OpenClBackend, RuntimeError> {
        let _guard = init_lock();
        let list = device_list()?;
        let infos: Vec<DeviceInfo> = list.iter().map(|(i, _)| i.clone()).collect();
        let info = selector.pick(B, &infos)?.clone();
        let device = list[info.index].1;
        let context = Context::from_device(&device).map_err(driver_err("clCreateContext"))?;
        let queue =
            CommandQueue::create_default_with_properties(&context, CL_QUEUE_PROFILING_ENABLE, 0)
                .map_err(driver_err("clCreateCommandQueueWithProperties"))?;
        Ok(OpenClBackend {
            info,
            device,
            context,
            queue,
            buffers: Vec::new(),
            programs: Vec::new(),
        })
    }

    fn buffer(&self, b: BufferId) -> Result<&(Buffer<u8>, usize), RuntimeError> {
        self.buffers
            .get(b.0)
            .ok_or_else(|| RuntimeError::Usage(format!("no OpenCL buffer #{}", b.0)))
    }
}

impl Backend for OpenClBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&mut self, bytes: usize) -> Result<BufferId, RuntimeError> {
        check_limit(
            "buffer size in bytes",
            bytes as u64,
            "CL_DEVICE_MAX_MEM_ALLOC_SIZE",
            self.info.max_buffer,
        )?;
        // SAFETY: no host pointer is passed; the buffer is only used through this context.
        let buf = unsafe {
            Buffer::<u8>::create(
                &self.context,
                CL_MEM_READ_WRITE,
                bytes.max(1),
                ptr::null_mut(),
            )
        }
        .map_err(driver_err("clCreateBuffer"))?;
        self.buffers.push((buf, bytes));
        Ok(BufferId(self.buffers.len() - 1))
    }

    fn upload(&mut self, buffer: BufferId, data: &[u8]) -> Result<(), RuntimeError> {
        let len = self.buffer(buffer)?.1;
        if data.len() > len {
            return Err(RuntimeError::Usage(format!(
                "upload of {} bytes into a buffer of {len}",
                data.len()
            )));
        }
        let buf = &mut self.buffers[buffer.0].0;
        // SAFETY: blocking write of `data.len()` bytes into a buffer at least that large.
        unsafe {
            self.queue
                .enqueue_write_buffer(buf, CL_BLOCKING, 0, data, &[])
                .map_err(driver_err("clEnqueueWriteBuffer"))?;
        }
        Ok(())
    }

    fn download(&mut self, buffer: BufferId, out: &mut [u8]) -> Result<(), RuntimeError> {
        let (buf, len) = self.buffer(buffer)?;
        if out.len() > *len {
            return Err(RuntimeError::Usage(format!(
                "download of {} bytes from a buffer of {len}",
                out.len()
            )));
        }
        // SAFETY: blocking read of `out.len()` bytes from a buffer at least that large.
        unsafe {
            self.queue
                .enqueue_read_buffer(buf, CL_BLOCKING, 0, out, &[])
                .map_err(driver_err("clEnqueueReadBuffer"))?;
        }
        Ok(())
    }

    fn copy_buffer(
        &mut self,
        src: BufferId,
        dst: BufferId,
        bytes: usize,
    ) -> Result<(), RuntimeError> {
        check_copy(src, dst, bytes, self.buffer(src)?.1, self.buffer(dst)?.1)?;
        if bytes == 0 {
            return Ok(());
        }
        let (s, d) = pair_mut(&mut self.buffers, src.0, dst.0);
        // SAFETY: both buffers hold at least `bytes` bytes (checked) and are distinct.
        unsafe {
            self.queue
                .enqueue_copy_buffer(&s.0, &mut d.0, 0, 0, bytes, &[])
                .map_err(driver_err("clEnqueueCopyBuffer"))?;
        }
        self.queue.finish().map_err(driver_err("clFinish"))
    }

    fn compile(
        &mut self,
        kernel: &Kernel,
        config: &LaunchConfig,
        domain: &Domain,
    ) -> Result<ProgramId, RuntimeError> {
        if kernel.dtype() == Dtype::F64 && !self.info.f64 {
            return Err(RuntimeError::Unsupported {
                device: self.info.name.clone(),
                feature: "f64 (cl_khr_fp64: CL_DEVICE_DOUBLE_FP_CONFIG is 0)".into(),
            });
        }
        check_block(
            config,
            self.info.max_block,
            [
                "CL_DEVICE_MAX_WORK_ITEM_SIZES[0]",
                "CL_DEVICE_MAX_WORK_ITEM_SIZES[1]",
                "CL_DEVICE_MAX_WORK_ITEM_SIZES[2]",
            ],
            self.info.max_threads,
            "CL_DEVICE_MAX_WORK_GROUP_SIZE",
        )?;
        let source = emit::opencl::write_string(kernel, config, domain, &Options::default())?;
        let program = Program::create_and_build_from_source(&self.context, &source, "")
            .map_err(|log| RuntimeError::Compile { backend: B, log })?;
        let entry = &kernel.name;
        let cl_kernel = ClKernel::create(&program, entry).map_err(driver_err("clCreateKernel"))?;
        let wg = cl_kernel
            .get_work_group_size(self.device.id())
            .map_err(driver_err("clGetKernelWorkGroupInfo"))?;
        check_limit(
            "threads per block",
            config.threads() as u64,
            "CL_KERNEL_WORK_GROUP_SIZE (of the compiled kernel)",
            wg as u64,
        )?;
        let grid = config.grid(domain);
        self.programs.push(ClProgram {
            source,
            kernel: cl_kernel,
            global: [0, 1, 2].map(|d| grid[d] * config.block[d]),
            local: config.block,
            fields: kernel.fields.len(),
            _program: program,
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
        let p = program_of(&self.programs, program, "OpenCL")?;
        let mut events = Vec::with_capacity(launches.len());
        for bufs in launches {
            check_buffer_count(p.fields, bufs.len())?;
            let mut exec = ExecuteKernel::new(&p.kernel);
            for b in bufs {
                let buf = &self.buffer(*b)?.0;
                // SAFETY: every argument of the emitted kernel is a global buffer pointer.
                unsafe {
                    exec.set_arg(buf);
                }
            }
            exec.set_global_work_sizes(&p.global)
                .set_local_work_sizes(&p.local);
            // SAFETY: arguments set above; sizes are multiples of the required work-group size.
            let ev = unsafe { exec.enqueue_nd_range(&self.queue) }.map_err(|e| {
                RuntimeError::Refused {
                    backend: B,
                    error: format!("clEnqueueNDRangeKernel: {e} ({})", e.0),
                }
            })?;
            events.push(ev);
        }
        self.queue.finish().map_err(|e| RuntimeError::Refused {
            backend: B,
            error: format!("clFinish after launch: {e} ({})", e.0),
        })?;
        if !timed {
            return Ok(Vec::new());
        }
        events
            .iter()
            .map(|ev| {
                let start = ev
                    .profiling_command_start()
                    .map_err(driver_err("clGetEventProfilingInfo"))?;
                let end = ev
                    .profiling_command_end()
                    .map_err(driver_err("clGetEventProfilingInfo"))?;
                Ok(end.saturating_sub(start) as f64 * 1e-9)
            })
            .collect()
    }
}

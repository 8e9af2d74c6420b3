//! The CUDA twin that `stencilscope counters` runs under ncu (feature `cuda`).
//!
//! Sequence: fill every field on the device (values in `[1, 2)`, no uploads, so that each of
//! ncu's application-replay passes starts fast and the same), evict L2, then per configuration:
//! the stencil kernel, the eviction kernel. The stencil source and compile options are exactly
//! those of `run --backend cuda` (NVRTC, `--gpu-architecture=compute_XY`); only the entry name
//! differs ([`super::entry_name`]). PTX is cached on disk so that replay passes compile once.

use super::{entry_name, CountersError, DeviceDesc, TwinInfo, TwinPlan, FLUSH_KERNEL};
use crate::emit::{self, Options};
use crate::ir::Dtype;
use crate::runtime::cuda::{nvrtc_options, NVRTC_FLOAT_OPTIONS};
use cudarc::driver::sys::{CUdevice_attribute as A, CUfunction_attribute_enum as F};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{CompileOptions, Ptx};
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;

/// Helper kernels: field initialisation and the L2 eviction read.
const HELPERS: &str = r#"
extern "C" __global__ void ssinit_f32(float* p, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = 1.0f + (float)(i % 1021ull) / 1021.0f;
}
extern "C" __global__ void ssinit_f64(double* p, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = 1.0 + (double)(i % 1021ull) / 1021.0;
}
// Reads n8 8-byte words; the store never happens (the buffer holds zeros) but keeps the loads
// alive. Plain integer loads: no vector types, which NVRTC would need headers for.
extern "C" __global__ void ssflush(const unsigned long long* __restrict__ p, unsigned long long n8,
                                   unsigned long long* out) {
    unsigned long long acc = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n8;
         i += (unsigned long long)gridDim.x * blockDim.x)
        acc ^= p[i];
    if (acc == 0x5bd1e9955bd1e995ull) out[0] = acc;
}
"#;

fn drv<T>(what: &str) -> impl Fn(T) -> CountersError + '_
where
    T: std::fmt::Display,
{
    move |e| CountersError::Twin(format!("{what}: {e}"))
}

/// Compiles `source` to PTX for `arch` with `run --backend cuda`'s options, or takes it from
/// `cache` when compiled before.
fn ptx_for(source: &str, arch: &str, name: &str, cache: &Path) -> Result<Ptx, CountersError> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    source.hash(&mut h);
    arch.hash(&mut h);
    let path = cache.join(format!("{name}-{:016x}.ptx", h.finish()));
    if let Ok(text) = std::fs::read_to_string(&path) {
        return Ok(Ptx::from_src(text));
    }
    let opts = CompileOptions {
        options: nvrtc_options(arch),
        ..Default::default()
    };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(source, opts).map_err(|e| {
        CountersError::Twin(match e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => {
                format!("NVRTC failed for {name}:\n{}", log.to_string_lossy())
            }
            other => format!("NVRTC failed for {name}: {other}"),
        })
    })?;
    // A cache that cannot be written only costs compile time in later passes.
    let _ = std::fs::write(&path, ptx.to_src());
    Ok(ptx)
}

fn function(ctx: &Arc<CudaContext>, ptx: Ptx, name: &str) -> Result<CudaFunction, CountersError> {
    let module = ctx.load_module(ptx).map_err(drv("cuModuleLoadData"))?;
    module
        .load_function(name)
        .map_err(drv("cuModuleGetFunction"))
}

/// Runs the plan on device 0 and writes its [`TwinInfo`].
pub fn run(plan: &TwinPlan) -> Result<TwinInfo, CountersError> {
    let step = match plan.step.as_deref() {
        None => None,
        Some("even") => Some(crate::lbm::Step::Even),
        Some("odd") => Some(crate::lbm::Step::Odd),
        Some(s) => return Err(CountersError::Twin(format!("unknown AA step `{s}`"))),
    };
    let mut def = crate::spec::load_definition_step(&plan.file, step)
        .map_err(|e| CountersError::Twin(e.to_string()))?;
    def.set_dtype(plan.dtype);
    let kernel = &def.kernel;
    std::fs::create_dir_all(&plan.ptx_cache).map_err(|source| CountersError::Io {
        path: plan.ptx_cache.clone(),
        source,
    })?;
    // SAFETY: only tries to dlopen the libraries.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(CountersError::Twin("libcuda.so could not be loaded".into()));
    }
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(CountersError::Twin(
            "libnvrtc.so could not be loaded (add its directory to LD_LIBRARY_PATH)".into(),
        ));
    }
    let ctx = CudaContext::new(0).map_err(drv("cuCtxCreate"))?;
    // SAFETY: one stream, used in order.
    unsafe { ctx.disable_event_tracking() };
    let stream: Arc<CudaStream> = ctx.new_stream().map_err(drv("cuStreamCreate"))?;
    let attr = |a| ctx.attribute(a).map_err(drv("cuDeviceGetAttribute"));
    let (major, minor) = ctx
        .compute_capability()
        .map_err(drv("compute capability"))?;
    let arch = format!("compute_{major}{minor}");
    let sms = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as usize;
    let l2 = attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize;
    let max_grid = [
        attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)? as usize,
        attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)? as usize,
        attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)? as usize,
    ];
    let mut version = 0;
    // SAFETY: writes one int.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) };

    if let Some(bytes) = plan.l2_fetch_bytes {
        use cudarc::driver::sys::{cuCtxSetLimit, CUlimit, CUresult};
        ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        // SAFETY: sets one limit of the current context.
        let r =
            unsafe { cuCtxSetLimit(CUlimit::CU_LIMIT_MAX_L2_FETCH_GRANULARITY, bytes as usize) };
        if r != CUresult::CUDA_SUCCESS {
            return Err(CountersError::Twin(format!(
                "cuCtxSetLimit (L2 fetch size {bytes} B): {r:?}"
            )));
        }
    }
    let helpers = ptx_for(HELPERS, &arch, "helpers", &plan.ptx_cache)?;
    let module = ctx.load_module(helpers).map_err(drv("cuModuleLoadData"))?;
    let load = |n: &str| module.load_function(n).map_err(drv("cuModuleGetFunction"));
    let init = load(match plan.dtype {
        Dtype::F32 => "ssinit_f32",
        Dtype::F64 => "ssinit_f64",
    })?;
    let flush = load(FLUSH_KERNEL)?;

    // Compile and check everything before the first profiled launch.
    let mut kernels = Vec::new();
    let mut local_bytes = Vec::new();
    let mut funcs = Vec::new();
    for config in &plan.configs {
        let name = entry_name(config);
        let grid = config.grid(&plan.domain);
        if let Some(d) = (0..3).find(|d| grid[*d] > max_grid[*d]) {
            return Err(CountersError::Twin(format!(
                "{config}: {} blocks in dimension {d}, more than the device's {}",
                grid[d], max_grid[d]
            )));
        }
        let opts = Options {
            entry_point: Some(name.clone()),
            ..Options::default()
        };
        let source = emit::cuda::write_string(kernel, config, &plan.domain, &opts)
            .map_err(|e| CountersError::Twin(format!("{config}: {e}")))?;
        let f = function(
            &ctx,
            ptx_for(&source, &arch, &name, &plan.ptx_cache)?,
            &name,
        )?;
        if let Some(c) = plan.carveout {
            f.set_attribute(
                F::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                c.min(100) as i32,
            )
            .map_err(drv("cuFuncSetAttribute (carve-out)"))?;
        }
        let regs = f
            .get_attribute(F::CU_FUNC_ATTRIBUTE_NUM_REGS)
            .map_err(drv("cuFuncGetAttribute"))?;
        let local = f
            .get_attribute(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
            .map_err(drv("cuFuncGetAttribute"))?;
        local_bytes.push((name.clone(), local.max(0) as usize));
        let b = config.block.map(|v| v as u32);
        let launch = LaunchConfig {
            grid_dim: (grid[0] as u32, grid[1] as u32, grid[2] as u32),
            block_dim: (b[0], b[1], b[2]),
            shared_mem_bytes: 0,
        };
        kernels.push((name, regs.max(0) as usize));
        funcs.push((f, launch));
    }

    let info = TwinInfo {
        device: DeviceDesc {
            name: ctx.name().map_err(drv("cuDeviceGetName"))?,
            compute_capability: format!("{major}.{minor}"),
            driver_api: format!("{}.{}", version / 1000, (version % 1000) / 10),
            sms,
            l2_bytes: l2,
        },
        flush_bytes: (plan.flush_factor.max(1) * l2).max(64 << 20) / 16 * 16,
        kernels,
        nvrtc_options: NVRTC_FLOAT_OPTIONS.iter().map(|o| o.to_string()).collect(),
        local_bytes,
    };
    let write_info = || -> Result<(), CountersError> {
        let text = serde_json::to_string_pretty(&info)?;
        std::fs::write(&plan.info, text).map_err(|source| CountersError::Io {
            path: plan.info.clone(),
            source,
        })
    };
    if plan.compile_only {
        write_info()?;
        return Ok(info);
    }

    // Fields: every one filled, inputs and outputs alike (outputs are overwritten anyway).
    let elem = plan.dtype.size();
    let mut fields: Vec<CudaSlice<u8>> = Vec::new();
    let wide = LaunchConfig {
        grid_dim: ((sms * 8) as u32, 1, 1),
        block_dim: (512, 1, 1),
        shared_mem_bytes: 0,
    };
    for f in &kernel.fields {
        let n = f.layout_for(&plan.domain).len();
        let buf = stream
            .alloc_zeros::<u8>((n * elem).max(16))
            .map_err(drv("cuMemAlloc"))?;
        let n64 = n as u64;
        let mut b = stream.launch_builder(&init);
        b.arg(&buf).arg(&n64);
        // SAFETY: the helper writes exactly n elements of the buffer's type.
        unsafe { b.launch(wide) }.map_err(drv("init launch"))?;
        fields.push(buf);
    }
    let flush_bytes = info.flush_bytes;
    let flush_buf = stream
        .alloc_zeros::<u8>(flush_bytes)
        .map_err(drv("cuMemAlloc (eviction buffer)"))?;
    let sink = stream.alloc_zeros::<u8>(16).map_err(drv("cuMemAlloc"))?;
    let n8 = (flush_bytes / 8) as u64;
    let evict = || -> Result<(), CountersError> {
        let mut b = stream.launch_builder(&flush);
        b.arg(&flush_buf).arg(&n8).arg(&sink);
        // SAFETY: reads n8 words of the eviction buffer; writes at most one word of `sink`.
        unsafe { b.launch(wide) }.map_err(drv("eviction launch"))?;
        stream.synchronize().map_err(drv("eviction kernel"))
    };
    stream.synchronize().map_err(drv("initialisation"))?;

    evict()?;
    for ((f, launch), (name, _)) in funcs.iter().zip(&info.kernels) {
        let mut b = stream.launch_builder(f);
        for buf in &fields {
            b.arg(buf);
        }
        // SAFETY: the emitted kernel takes one pointer per field, in field order, and its guards
        // keep every access inside the buffers allocated from the same layouts.
        unsafe { b.launch(*launch) }.map_err(|e| CountersError::Twin(format!("{name}: {e}")))?;
        stream
            .synchronize()
            .map_err(|e| CountersError::Twin(format!("{name}: {e}")))?;
        evict()?;
    }

    write_info()?;
    Ok(info)
}

//! The WebGPU backend (wgpu on Vulkan): NVIDIA's Vulkan driver on GPUs, lavapipe in CI.
//!
//! Every WGSL module is validated with naga by the emitter before wgpu sees it. Kernel times come
//! from timestamp queries written at the beginning and end of each launch's compute pass
//! (`Features::TIMESTAMP_QUERY`). wgpu reports errors through callbacks rather than return values;
//! this backend collects them and turns them into `RuntimeError`s, so nothing panics.
//!
//! Bounds checks: by default wgpu compiles shaders with runtime bounds checks. The emitter's guards
//! already keep every access in range (each run is verified against the CPU reference), so shaders
//! are created with `create_shader_module_trusted` and `ShaderRuntimeChecks::unchecked()` unless
//! `BackendOptions::wgpu_bounds_checks` asks for them. Measured on an H200 (bench/results/h200):
//! no systematic difference, because on Vulkan adapters with `robustBufferAccess2` (NVIDIA's)
//! wgpu-hal never lets naga check storage-buffer accesses and relies on the driver instead, which
//! these options do not switch off; on adapters without it, unchecked modules skip naga's clamping.

use super::{
    check_block, check_buffer_count, check_copy, check_limit, program_of, Backend, BackendKind,
    BackendOptions, BufferId, DeviceInfo, DeviceSelector, ProgramId, RuntimeError,
};
use crate::config::LaunchConfig;
use crate::emit::{self, Options};
use crate::ir::{Domain, Dtype, Kernel};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const B: BackendKind = BackendKind::Wgpu;

/// Bytes moved per staging copy, so that uploads and downloads of huge fields need no staging
/// buffer of their full size.
const CHUNK: u64 = 64 << 20;

fn instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    wgpu::Instance::new(desc)
}

fn adapters(instance: &wgpu::Instance) -> Vec<wgpu::Adapter> {
    pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN))
}

fn info_of(index: usize, a: &wgpu::Adapter) -> DeviceInfo {
    let i = a.get_info();
    let l = a.limits();
    let f = a.features();
    DeviceInfo {
        backend: B,
        index,
        name: i.name.clone(),
        gpu: matches!(
            i.device_type,
            wgpu::DeviceType::DiscreteGpu | wgpu::DeviceType::IntegratedGpu
        ),
        driver: format!(
            "Vulkan, {} {}, {:?}",
            i.driver, i.driver_info, i.device_type
        ),
        f64: f.contains(wgpu::Features::SHADER_F64),
        timers: f.contains(wgpu::Features::TIMESTAMP_QUERY),
        max_threads: l.max_compute_invocations_per_workgroup as u64,
        max_block: [
            l.max_compute_workgroup_size_x as u64,
            l.max_compute_workgroup_size_y as u64,
            l.max_compute_workgroup_size_z as u64,
        ],
        max_buffer: l.max_storage_buffer_binding_size.min(l.max_buffer_size),
    }
}

/// Lists the Vulkan adapters wgpu finds.
pub fn devices() -> Result<Vec<DeviceInfo>, RuntimeError> {
    let list = adapters(&instance());
    if list.is_empty() {
        return Err(RuntimeError::NotAvailable {
            backend: B,
            reason: "wgpu found no Vulkan adapter (install libvulkan1 and a driver, e.g. mesa-vulkan-drivers for lavapipe)".into(),
        });
    }
    Ok(list
        .iter()
        .enumerate()
        .map(|(i, a)| info_of(i, a))
        .collect())
}

struct WgpuProgram {
    source: String,
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    dispatch: [u32; 3],
    fields: usize,
    bind_groups: HashMap<Vec<usize>, wgpu::BindGroup>,
}

/// An opened wgpu device.
pub struct WgpuBackend {
    info: DeviceInfo,
    limits: wgpu::Limits,
    device: wgpu::Device,
    queue: wgpu::Queue,
    errors: Arc<Mutex<Vec<String>>>,
    checks: bool,
    max_groups: u32,
    buffers: Vec<(wgpu::Buffer, u64)>,
    programs: Vec<WgpuProgram>,
}

impl WgpuBackend {
    /// Opens the adapter `selector` picks, with f64 and timestamp queries where it has them.
    pub fn open(
        selector: &DeviceSelector,
        options: &BackendOptions,
    ) -> Result<WgpuBackend, RuntimeError> {
        let inst = instance();
        let list = adapters(&inst);
        let infos: Vec<DeviceInfo> = list
            .iter()
            .enumerate()
            .map(|(i, a)| info_of(i, a))
            .collect();
        let info = selector.pick(B, &infos)?.clone();
        let adapter = &list[info.index];
        let wanted = wgpu::Features::SHADER_F64 | wgpu::Features::TIMESTAMP_QUERY;
        let limits = adapter.limits();
        let desc = wgpu::DeviceDescriptor {
            label: Some("stencilscope"),
            required_features: adapter.features() & wanted,
            required_limits: limits.clone(),
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc)).map_err(|e| {
            RuntimeError::Driver {
                backend: B,
                operation: "request_device",
                error: e.to_string(),
            }
        })?;
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut v) = sink.lock() {
                v.push(e.to_string());
            }
        }));
        let lost = errors.clone();
        device.set_device_lost_callback(move |reason, msg| {
            if let Ok(mut v) = lost.lock() {
                v.push(format!("device lost ({reason:?}): {msg}"));
            }
        });
        let max_groups = options
            .wgpu_max_groups_per_dim
            .unwrap_or(limits.max_compute_workgroups_per_dimension)
            .min(limits.max_compute_workgroups_per_dimension);
        Ok(WgpuBackend {
            info,
            limits,
            device,
            queue,
            errors,
            checks: options.wgpu_bounds_checks,
            max_groups,
            buffers: Vec::new(),
            programs: Vec::new(),
        })
    }

    /// Turns errors wgpu reported since the last call into one `RuntimeError`.
    fn take_errors(&self, make: impl FnOnce(String) -> RuntimeError) -> Result<(), RuntimeError> {
        let mut v = self.errors.lock().map_err(|_| RuntimeError::Driver {
            backend: B,
            operation: "error collection",
            error: "a wgpu callback panicked".into(),
        })?;
        if v.is_empty() {
            Ok(())
        } else {
            let msg = v.join("; ");
            v.clear();
            Err(make(msg))
        }
    }

    fn wait(&self, operation: &'static str) -> Result<(), RuntimeError> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| RuntimeError::Driver {
                backend: B,
                operation,
                error: e.to_string(),
            })?;
        self.take_errors(|error| RuntimeError::Driver {
            backend: B,
            operation,
            error,
        })
    }

    fn buffer(&self, b: BufferId) -> Result<&(wgpu::Buffer, u64), RuntimeError> {
        self.buffers
            .get(b.0)
            .ok_or_else(|| RuntimeError::Usage(format!("no wgpu buffer #{}", b.0)))
    }

    /// Reads `bytes` bytes at the start of `src` through a mappable staging buffer.
    fn read_back(&self, src: &wgpu::Buffer, out: &mut [u8]) -> Result<(), RuntimeError> {
        let mut done = 0u64;
        let total = out.len() as u64;
        while done < total {
            let n = (total - done).min(CHUNK);
            let padded = n.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
            let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("staging"),
                size: padded,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut enc = self.device.create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(src, done, &staging, 0, padded);
            self.queue.submit([enc.finish()]);
            let (tx, rx) = std::sync::mpsc::channel();
            staging.map_async(wgpu::MapMode::Read, .., move |r| {
                let _ = tx.send(r);
            });
            self.wait("download")?;
            rx.recv()
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| e.to_string()))
                .map_err(|error| RuntimeError::Driver {
                    backend: B,
                    operation: "map for download",
                    error,
                })?;
            {
                let view = staging
                    .get_mapped_range(..)
                    .map_err(|e| RuntimeError::Driver {
                        backend: B,
                        operation: "map for download",
                        error: e.to_string(),
                    })?;
                out[done as usize..(done + n) as usize].copy_from_slice(&view[..n as usize]);
            }
            staging.unmap();
            done += n;
        }
        Ok(())
    }
}

impl Backend for WgpuBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&mut self, bytes: usize) -> Result<BufferId, RuntimeError> {
        let size = (bytes as u64)
            .max(4)
            .next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        check_limit(
            "buffer size in bytes",
            size,
            "max_buffer_size",
            self.limits.max_buffer_size,
        )?;
        let buf = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        self.take_errors(|error| RuntimeError::Driver {
            backend: B,
            operation: "create_buffer",
            error,
        })?;
        self.buffers.push((buf, bytes as u64));
        Ok(BufferId(self.buffers.len() - 1))
    }

    fn upload(&mut self, buffer: BufferId, data: &[u8]) -> Result<(), RuntimeError> {
        let (buf, len) = self.buffer(buffer)?;
        if data.len() as u64 > *len {
            return Err(RuntimeError::Usage(format!(
                "upload of {} bytes into a buffer of {len}",
                data.len()
            )));
        }
        for (i, chunk) in data.chunks(CHUNK as usize).enumerate() {
            let offset = i as u64 * CHUNK;
            if chunk.len() % 4 == 0 {
                self.queue.write_buffer(buf, offset, chunk);
            } else {
                let mut padded = chunk.to_vec();
                padded.resize(chunk.len().next_multiple_of(4), 0);
                self.queue.write_buffer(buf, offset, &padded);
            }
            self.queue.submit([]);
            self.wait("upload")?;
        }
        Ok(())
    }

    fn download(&mut self, buffer: BufferId, out: &mut [u8]) -> Result<(), RuntimeError> {
        let (buf, len) = self.buffer(buffer)?;
        if out.len() as u64 > *len {
            return Err(RuntimeError::Usage(format!(
                "download of {} bytes from a buffer of {len}",
                out.len()
            )));
        }
        self.read_back(buf, out)
    }

    fn copy_buffer(
        &mut self,
        src: BufferId,
        dst: BufferId,
        bytes: usize,
    ) -> Result<(), RuntimeError> {
        let (s, sl) = self.buffer(src)?;
        let (d, dl) = self.buffer(dst)?;
        check_copy(src, dst, bytes, *sl as usize, *dl as usize)?;
        if bytes == 0 {
            return Ok(());
        }
        // Buffers are allocated in multiples of COPY_BUFFER_ALIGNMENT, so the padded copy stays
        // inside both; the bytes past `bytes` belong to no field.
        let padded = (bytes as u64).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(s, 0, d, 0, padded);
        self.queue.submit([enc.finish()]);
        self.wait("copy")?;
        self.take_errors(|error| RuntimeError::Driver {
            backend: B,
            operation: "copy_buffer_to_buffer",
            error,
        })
    }

    fn compile(
        &mut self,
        kernel: &Kernel,
        config: &LaunchConfig,
        domain: &Domain,
    ) -> Result<ProgramId, RuntimeError> {
        if kernel.dtype() == Dtype::F64
            && !self.device.features().contains(wgpu::Features::SHADER_F64)
        {
            return Err(RuntimeError::Unsupported {
                device: self.info.name.clone(),
                feature: "f64 in shaders (wgpu::Features::SHADER_F64, Vulkan shaderFloat64)".into(),
            });
        }
        let l = &self.limits;
        check_block(
            config,
            [
                l.max_compute_workgroup_size_x as u64,
                l.max_compute_workgroup_size_y as u64,
                l.max_compute_workgroup_size_z as u64,
            ],
            [
                "max_compute_workgroup_size_x",
                "max_compute_workgroup_size_y",
                "max_compute_workgroup_size_z",
            ],
            l.max_compute_invocations_per_workgroup as u64,
            "max_compute_invocations_per_workgroup",
        )?;
        check_limit(
            "number of fields (storage buffers)",
            kernel.fields.len() as u64,
            "max_storage_buffers_per_shader_stage",
            l.max_storage_buffers_per_shader_stage as u64,
        )?;
        for f in &kernel.fields {
            let bytes = (f.layout_for(domain).len() * f.dtype.size()) as u64;
            check_limit(
                format!("field `{}` in bytes", f.name),
                bytes,
                "max_storage_buffer_binding_size",
                l.max_storage_buffer_binding_size,
            )?;
        }
        let options = Options {
            max_groups_per_dim: self.max_groups,
            ..Options::default()
        };
        let source = emit::wgsl::write_string(kernel, config, domain, &options)?;
        let dispatch = emit::wgsl::dispatch_size(config, domain, self.max_groups)?;
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(&kernel.name),
            source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
        };
        let module = if self.checks {
            self.device.create_shader_module(desc)
        } else {
            // SAFETY: the emitter guards every fold point so that all indices stay inside their
            // buffers (buffers are allocated from the same layouts); runs are verified against
            // the CPU reference, which would expose an out-of-range write.
            unsafe {
                self.device
                    .create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked())
            }
        };
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&kernel.name),
                layout: None,
                module: &module,
                entry_point: Some(&kernel.name),
                compilation_options: Default::default(),
                cache: None,
            });
        self.take_errors(|log| RuntimeError::Compile { backend: B, log })?;
        let layout = pipeline.get_bind_group_layout(0);
        self.programs.push(WgpuProgram {
            source,
            pipeline,
            layout,
            dispatch,
            fields: kernel.fields.len(),
            bind_groups: HashMap::new(),
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
        let fields = program_of(&self.programs, program, "wgpu")?.fields;
        if timed
            && !self
                .device
                .features()
                .contains(wgpu::Features::TIMESTAMP_QUERY)
        {
            return Err(RuntimeError::Unsupported {
                device: self.info.name.clone(),
                feature: "timestamp queries (wgpu::Features::TIMESTAMP_QUERY)".into(),
            });
        }
        let n = launches.len();
        if timed && 2 * n > wgpu::QUERY_SET_MAX_QUERIES as usize {
            return Err(RuntimeError::Usage(format!(
                "{n} timed launches in one call; at most {}",
                wgpu::QUERY_SET_MAX_QUERIES / 2
            )));
        }
        for bufs in launches {
            check_buffer_count(fields, bufs.len())?;
            let key: Vec<usize> = bufs.iter().map(|b| b.0).collect();
            if !self.programs[program.0].bind_groups.contains_key(&key) {
                let entries = bufs
                    .iter()
                    .enumerate()
                    .map(|(i, b)| {
                        Ok(wgpu::BindGroupEntry {
                            binding: i as u32,
                            resource: self.buffer(*b)?.0.as_entire_binding(),
                        })
                    })
                    .collect::<Result<Vec<_>, RuntimeError>>()?;
                let bg = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: &self.programs[program.0].layout,
                    entries: &entries,
                });
                self.take_errors(|error| RuntimeError::Refused { backend: B, error })?;
                self.programs[program.0].bind_groups.insert(key, bg);
            }
        }
        let p = &self.programs[program.0];
        let queries = timed.then(|| {
            let set = self.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: None,
                ty: wgpu::QueryType::Timestamp,
                count: 2 * n as u32,
            });
            let resolve = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: 16 * n as u64,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            (set, resolve)
        });
        let mut enc = self.device.create_command_encoder(&Default::default());
        for (i, bufs) in launches.iter().enumerate() {
            let key: Vec<usize> = bufs.iter().map(|b| b.0).collect();
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: queries.as_ref().map(|(set, _)| {
                    wgpu::ComputePassTimestampWrites {
                        query_set: set,
                        beginning_of_pass_write_index: Some(2 * i as u32),
                        end_of_pass_write_index: Some(2 * i as u32 + 1),
                    }
                }),
            });
            pass.set_pipeline(&p.pipeline);
            pass.set_bind_group(0, &p.bind_groups[&key], &[]);
            let [x, y, z] = p.dispatch;
            pass.dispatch_workgroups(x, y, z);
        }
        if let Some((set, resolve)) = &queries {
            enc.resolve_query_set(set, 0..2 * n as u32, resolve, 0);
        }
        self.queue.submit([enc.finish()]);
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| RuntimeError::Refused {
                backend: B,
                error: e.to_string(),
            })?;
        self.take_errors(|error| RuntimeError::Refused { backend: B, error })?;
        let Some((_, resolve)) = queries else {
            return Ok(Vec::new());
        };
        let mut raw = vec![0u8; 16 * n];
        self.read_back(&resolve, &mut raw)?;
        let ticks: Vec<u64> = raw
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect();
        let period = self.queue.get_timestamp_period() as f64 * 1e-9;
        Ok(ticks
            .chunks(2)
            .map(|t| t[1].wrapping_sub(t[0]) as f64 * period)
            .collect())
    }
}

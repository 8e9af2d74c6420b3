use super::{load_step, CliError, DtypeArg, StepArg};
use clap::Args;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use stencilscope::counters::{
    self, compare, flush_notes, ncu, sass, select_configs, summarize, CompareInput, CompiledOrders,
    ConfigSpec, CountersError, CountersSweep, TwinInfo, TwinPlan,
};
use stencilscope::ir::{Domain, Kernel};
use stencilscope::model::estimate_registers;
use stencilscope::report::{counters_html, counters_table};
use stencilscope::spec::load_machine;

/// Arguments of `stencilscope counters`.
#[derive(Debug, Args)]
pub struct CountersArgs {
    /// Stencil or LBM definition file (TOML).
    file: PathBuf,
    /// For an LBM file with AA streaming: which step's kernel (default: odd).
    #[arg(long, value_enum)]
    step: Option<StepArg>,
    /// Machine model for the estimates: a preset (v100, a100-40gb, h100-sxm, h200) or a file.
    #[arg(long)]
    machine: String,
    /// Domain, e.g. 256,256,256 (default: the file's).
    #[arg(long, value_parser = super::parse_domain)]
    domain: Option<Domain>,
    /// Element type, overriding the file's.
    #[arg(long, value_enum)]
    dtype: Option<DtypeArg>,
    /// Configurations: `top:K` (the model's best K), `sample:N` (seeded sample of the legal
    /// space) or a file (JSON list of {block, fold}, or lines `BX,BY,BZ FX,FY,FZ`); repeat to
    /// combine.
    #[arg(long, default_value = "sample:40")]
    configs: Vec<ConfigSpec>,
    /// Seed of `sample:N`.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Directory for the report (`NAME.json`, `NAME.html`) and the raw ncu output (`raw/`).
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// File stem of the outputs (default: `<kernel>-<dtype>`).
    #[arg(long)]
    name: Option<String>,
    /// The ncu executable (default: `$NCU`, then `ncu` on PATH, then the CUDA toolkit's).
    #[arg(long)]
    ncu: Option<PathBuf>,
    /// Size of the L2 eviction buffer in L2 sizes.
    #[arg(long, default_value_t = 4)]
    flush_factor: usize,
    /// Preferred shared-memory carve-out of the stencil kernels in percent of the largest
    /// (0: the largest L1, 100: the smallest); default: the driver's choice. Pair it with a
    /// machine file whose `l1_bytes` matches, for the estimate.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    carveout: Option<u32>,
    /// Largest L2 fetch from DRAM on a read miss, in bytes (`CU_LIMIT_MAX_L2_FETCH_GRANULARITY`:
    /// 32, 64 or 128; a hint the driver may clamp); default: the driver's (64 on the H100).
    #[arg(long, value_parser = parse_fetch_bytes)]
    l2_fetch_bytes: Option<u32>,
    /// Also collect this ncu section (e.g. LaunchStats: registers, shared-memory configuration);
    /// repeatable.
    #[arg(long)]
    ncu_section: Vec<String>,
    /// Analyse a saved ncu CSV (`raw/NAME.csv.gz` of an earlier sweep, or the CSV unpacked)
    /// instead of running ncu.
    #[arg(long)]
    from_csv: Option<PathBuf>,
    /// With `--from-csv`: the twin's info file of that sweep (`raw/NAME-twin.json`).
    #[arg(long, requires = "from_csv")]
    twin_info: Option<PathBuf>,
    /// With `--from-csv`: the report the profiling run wrote; its record of that run (ncu
    /// version and command, the command line, date, commit, carve-out) is kept.
    #[arg(long, requires = "from_csv")]
    original: Option<PathBuf>,
    /// The compiled code's issue orders (lines `KERNEL DTYPE BX,BY,BZ FX,FY,FZ NX,NY,NZ: F,I …`,
    /// each entry optionally `F,I@P` with its place among the SASS instructions, as a profiling
    /// run writes to `raw/NAME-compiled-order.txt` or `bench/compiled-order.py orders` for a
    /// sweep's SASS): the estimate of every configuration the file names follows the order its
    /// compiled twin issues loads and stores in, not the emitted one, and with the places takes
    /// the early write-backs of records stored back to back. A profiling run reads the orders
    /// from the SASS itself (with cuobjdump) unless this is given. Given more than once, each
    /// later file adds the configurations the earlier ones lack.
    #[arg(long, conflicts_with = "emitted_order")]
    compiled_order: Vec<PathBuf>,
    /// Estimate every configuration in the emitted order, even where the compiled order is
    /// known (a profiling run still writes `raw/NAME-compiled-order.txt`).
    #[arg(long)]
    emitted_order: bool,
    /// Print the selected configurations and stop (needs no ncu).
    #[arg(long, conflicts_with = "from_csv")]
    list: bool,
    /// Source revision recorded in the report (default: `$STENCILSCOPE_COMMIT`, else git's).
    #[arg(long)]
    commit: Option<String>,
}

/// Arguments of the hidden `stencilscope counters-twin` (what ncu profiles).
#[derive(Debug, Args)]
pub struct TwinArgs {
    /// The plan written by `stencilscope counters`.
    plan: PathBuf,
}

/// An L2 fetch size the driver's limit takes: 32, 64 or 128 bytes.
fn parse_fetch_bytes(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(v @ (32 | 64 | 128)) => Ok(v),
        _ => Err(format!(
            "`{s}` is not an L2 fetch size; use 32, 64 or 128 (bytes)"
        )),
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> CountersError + '_ {
    move |source| CountersError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn read(path: &Path) -> Result<String, CountersError> {
    std::fs::read_to_string(path).map_err(io(path))
}

fn write(path: &Path, text: &str) -> Result<(), CountersError> {
    std::fs::write(path, text).map_err(io(path))
}

/// A saved ncu CSV, gzipped (as a profiling run keeps it) or not: told by gzip's magic bytes.
fn read_csv(path: &Path) -> Result<String, CountersError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let invalid =
        |what: String| io(path)(std::io::Error::new(std::io::ErrorKind::InvalidData, what));
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return String::from_utf8(bytes)
            .map_err(|e| invalid(format!("not an ncu CSV (text) nor gzipped: {e}")));
    }
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .map_err(|e| invalid(format!("a damaged gzipped CSV: {e}")))?;
    Ok(text)
}

/// Writes the raw ncu CSV gzipped: the sweeps' CSVs are kept in the repository, where they
/// shrink about twentyfold.
fn write_csv_gz(path: &Path, text: &str) -> Result<(), CountersError> {
    let file = std::fs::File::create(path).map_err(io(path))?;
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::best());
    gz.write_all(text.as_bytes()).map_err(io(path))?;
    gz.finish().map_err(io(path))?;
    Ok(())
}

/// The driver's JIT cache, in `dir`, for a process that loads the twins: the compile-only pass
/// fills it and the profiled passes load the same cubins from it.
fn with_jit_cache<'c>(command: &'c mut Command, dir: &Path) -> &'c mut Command {
    command
        .env("CUDA_CACHE_PATH", dir)
        .env("CUDA_CACHE_MAXSIZE", (4u64 << 30).to_string())
        .env("CUDA_CACHE_DISABLE", "0")
}

/// Runs `ncu args…` (with the JIT cache in `jit`), output into `log`; an error carries the log's
/// last lines.
fn run_ncu(ncu: &Path, args: &[String], log: &Path, jit: &Path) -> Result<(), CountersError> {
    let file = std::fs::File::create(log).map_err(io(log))?;
    let err = file.try_clone().map_err(io(log))?;
    let command = format!("{} {}", ncu.display(), args.join(" "));
    let status = with_jit_cache(&mut Command::new(ncu), jit)
        .args(args)
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(err))
        .status()
        .map_err(io(ncu))?;
    let text = std::fs::read_to_string(log).unwrap_or_default();
    // ncu names a permission error in its output and may still exit 0, with no counters.
    if text.contains("ERR_NVGPUCTRPERM") {
        return Err(CountersError::NcuPermission {
            log: log.to_path_buf(),
        });
    }
    if status.success() {
        return Ok(());
    }
    let lines: Vec<&str> = text.lines().collect();
    Err(CountersError::NcuFailed {
        command,
        status: status.to_string(),
        tail: lines[lines.len().saturating_sub(25)..].join("\n"),
    })
}

/// Runs ncu and returns its standard output (for `--version`, `--query-metrics`, `--import`).
fn ncu_output(ncu: &Path, args: &[&str]) -> Result<String, CountersError> {
    let out = Command::new(ncu).args(args).output().map_err(io(ncu))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<&str> = text.lines().collect();
        Err(CountersError::NcuFailed {
            command: format!("{} {}", ncu.display(), args.join(" ")),
            status: out.status.to_string(),
            tail: lines[lines.len().saturating_sub(25)..].join("\n"),
        })
    }
}

fn commit(given: Option<&str>) -> Option<String> {
    given
        .map(str::to_string)
        .or_else(|| {
            std::env::var("STENCILSCOPE_COMMIT")
                .ok()
                .filter(|c| !c.is_empty())
        })
        .or_else(|| {
            let out = Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .stderr(Stdio::null())
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
                .filter(|c| !c.is_empty())
        })
}

/// What a profiling run leaves: the CSV and what is known about how it was made.
struct Profile {
    csv: String,
    twin: Option<TwinInfo>,
    /// The orders read from the twins' SASS (`raw/NAME-compiled-order.txt`).
    compiled_order: Option<PathBuf>,
    ncu_version: Option<String>,
    ncu_command: Option<String>,
    notes: Vec<String>,
}

/// Where a profiling run's programs and files are: this executable (the twin), ncu, the work
/// folder (removed at the end), the raw outputs and their file stem.
#[derive(Clone, Copy)]
struct RunPlaces<'a> {
    exe: &'a Path,
    ncu: &'a Path,
    work: &'a Path,
    raw: &'a Path,
    stem: &'a str,
}

/// The cuobjdump executable: `$CUOBJDUMP`, else on `PATH`, beside `ncu`, or in the CUDA
/// toolkit's default place.
fn locate_cuobjdump(ncu: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CUOBJDUMP").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(ncu.parent().map(Path::to_path_buf))
        .chain([PathBuf::from("/usr/local/cuda/bin")])
        .map(|d| d.join("cuobjdump"))
        .find(|c| c.is_file())
}

/// The compiled issue orders of the plan's configurations, read from the SASS the driver's JIT
/// makes of them: the twin compiles and loads every configuration once outside ncu, with the
/// JIT cache in `work/jit`; the cubins in it are disassembled with cuobjdump and every global
/// load and store matched to the emitted access it is (`counters::sass`). Writes
/// `raw/STEM-compiled-order.txt` and returns its path; where that is not possible, a note says
/// why and the estimates keep the emitted order.
fn read_compiled_orders(
    at: &RunPlaces,
    plan: &TwinPlan,
    kernel: &Kernel,
    notes: &mut Vec<String>,
) -> Result<Option<PathBuf>, CliError> {
    let RunPlaces {
        exe,
        ncu,
        work,
        raw,
        stem,
    } = *at;
    let Some(cuobjdump) = locate_cuobjdump(ncu) else {
        notes.push(
            "compiled issue order not read: cuobjdump (CUDA toolkit) not found on PATH, beside ncu or in /usr/local/cuda/bin (set $CUOBJDUMP); estimates in the emitted order".into(),
        );
        return Ok(None);
    };
    let jit = work.join("jit");
    let plan = TwinPlan {
        compile_only: true,
        info: work.join("compiled.json"),
        ..plan.clone()
    };
    let plan_path = work.join("compile-plan.json");
    write(
        &plan_path,
        &serde_json::to_string_pretty(&plan).map_err(CountersError::from)?,
    )?;
    let log = raw.join(format!("{stem}-jit.log"));
    let file = std::fs::File::create(&log).map_err(io(&log))?;
    let err = file.try_clone().map_err(io(&log))?;
    // A process of its own, so that the driver has written its cache when it exits.
    let status = with_jit_cache(&mut Command::new(exe), &jit)
        .arg("counters-twin")
        .arg(&plan_path)
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(err))
        .status()
        .map_err(io(exe))?;
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        return Err(CountersError::Twin(format!(
            "compiling the twins for their SASS failed ({status}): {}",
            text.trim()
        ))
        .into());
    }
    let info: TwinInfo = serde_json::from_str(&read(&plan.info)?).map_err(CountersError::from)?;
    let mut sass = std::collections::BTreeMap::new();
    let mut files = vec![jit.clone()];
    let mut images = 0;
    while let Some(p) = files.pop() {
        if p.is_dir() {
            for e in std::fs::read_dir(&p).map_err(io(&p))? {
                files.push(e.map_err(io(&p))?.path());
            }
            continue;
        }
        let blob = std::fs::read(&p).map_err(io(&p))?;
        for image in sass::elf_images(&blob) {
            let cubin = work.join(format!("image-{images}.cubin"));
            images += 1;
            write_bytes(&cubin, image)?;
            let out = Command::new(&cuobjdump)
                .arg("-sass")
                .arg(&cubin)
                .output()
                .map_err(io(&cuobjdump))?;
            // Not every cached image holds code (cuobjdump refuses those).
            if out.status.success() {
                sass.extend(sass::sass_functions(&String::from_utf8_lossy(&out.stdout)));
            }
        }
    }
    let header = format!(
        "the compiled issue orders of the twins, from cuobjdump -sass of the driver's JIT of their PTX (NVRTC options {} --gpu-architecture=compute_XY; {}, driver API {}); stencilscope counters",
        info.nvrtc_options.join(" "),
        info.device.name,
        info.device.driver_api
    );
    let file = sass::orders_file(kernel, &plan.domain, &plan.configs, &sass, &header)
        .map_err(|e| CountersError::Twin(e.to_string()))?;
    let path = raw.join(format!("{stem}-compiled-order.txt"));
    write(&path, &file.text)?;
    if !file.reloaded.is_empty() {
        let named: Vec<String> = file
            .reloaded
            .iter()
            .map(|(c, n)| format!("{c} ({n})"))
            .collect();
        notes.push(format!(
            "{} of {} configurations' compiled code loads some elements twice (registers short, ptxas loads again instead of spilling); their compiled orders and estimates count each load once: {}",
            file.reloaded.len(),
            plan.configs.len(),
            named.join(", ")
        ));
    }
    let unmatched = file.unmatched;
    if !unmatched.is_empty() {
        let (c, e) = &unmatched[0];
        notes.push(format!(
            "{} of {} configurations have no compiled issue order from the SASS (estimated in the emitted order), e.g. {c}: {e}",
            unmatched.len(),
            plan.configs.len()
        ));
    }
    Ok(Some(path))
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), CountersError> {
    std::fs::write(path, bytes).map_err(io(path))
}

fn profile(
    ncu: &Path,
    sections: &[String],
    plan_base: TwinPlan,
    kernel: &Kernel,
    raw: &Path,
    stem: &str,
    out: &mut impl Write,
) -> Result<Profile, CliError> {
    let version = ncu_output(ncu, &["--version"])?
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string());
    let mut notes = Vec::new();
    let available = match ncu_output(ncu, &["--query-metrics"]) {
        Ok(text) => {
            write(&raw.join(format!("{stem}-query-metrics.txt")), &text)?;
            Some(ncu::parse_query_metrics(&text))
        }
        Err(e) => {
            notes.push(format!(
                "ncu --query-metrics failed, metric names not checked: {e}"
            ));
            None
        }
    };
    let metrics = ncu::MetricSet::resolve(available.as_ref());
    if !metrics.unavailable.is_empty() {
        notes.push(format!(
            "not offered by this device's ncu, so not collected: {}",
            metrics.unavailable.join(", ")
        ));
    }
    if metrics.wavefronts.is_empty() {
        notes.push("no L1 wavefront metric offered by this device's ncu".into());
    }
    let work = std::env::temp_dir().join(format!("stencilscope-counters-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(io(&work))?;
    let plan = TwinPlan {
        ptx_cache: work.join("ptx"),
        info: work.join("twin.json"),
        ..plan_base
    };
    let plan_path = work.join("plan.json");
    write(
        &plan_path,
        &serde_json::to_string_pretty(&plan).map_err(CountersError::from)?,
    )?;
    let exe = std::env::current_exe()?;
    writeln!(
        out,
        "compiling {} configurations for their SASS…",
        plan.configs.len()
    )?;
    out.flush()?;
    let places = RunPlaces {
        exe: &exe,
        ncu,
        work: &work,
        raw,
        stem,
    };
    let compiled_order = read_compiled_orders(&places, &plan, kernel, &mut notes)?;
    let report = work.join("report");
    let mut args: Vec<String> = sections
        .iter()
        .flat_map(|s| ["--section".to_string(), s.clone()])
        .collect();
    args.extend(
        [
            "--replay-mode",
            "application",
            "--cache-control",
            "none",
            "--clock-control",
            "none",
            "--kernel-name",
            "regex:^(ssk_|ssflush)",
            "--metrics",
            &metrics.requested.join(","),
            "--export",
            &report.display().to_string(),
            "--force-overwrite",
            &exe.display().to_string(),
            "counters-twin",
            &plan_path.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let command = format!("{} {}", ncu.display(), args.join(" "));
    writeln!(
        out,
        "profiling {} configurations under ncu ({} metrics, application replay)…",
        plan.configs.len(),
        metrics.requested.len()
    )?;
    out.flush()?;
    let log = raw.join(format!("{stem}-ncu.log"));
    run_ncu(ncu, &args, &log, &work.join("jit"))?;
    let twin: TwinInfo = serde_json::from_str(&read(&plan.info)?).map_err(CountersError::from)?;
    // The profiled twins should be the cubins whose SASS gave the orders (the same JIT cache):
    // their registers tell.
    if compiled_order.is_some() {
        let compiled: Option<TwinInfo> = read(&work.join("compiled.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        if compiled.is_some_and(|c| c.kernels != twin.kernels) {
            notes.push(
                "the profiled kernels' registers differ from those of the kernels whose SASS gave the compiled orders (another JIT?); the orders may not be the profiled code's".into(),
            );
        }
    }
    write(
        &raw.join(format!("{stem}-twin.json")),
        &serde_json::to_string_pretty(&twin).map_err(CountersError::from)?,
    )?;
    let rep = format!("{}.ncu-rep", report.display());
    let csv = ncu_output(
        ncu,
        &[
            "--import",
            &rep,
            "--csv",
            "--page",
            "details",
            "--print-units",
            "base",
        ],
    )
    .or_else(|e| {
        // Older ncu versions without --print-units: the parser converts scaled units itself.
        notes.push(format!(
            "--print-units base refused ({e}); values converted from ncu's units"
        ));
        ncu_output(ncu, &["--import", &rep, "--csv", "--page", "details"])
    })?;
    // The report itself is kept beside the CSV (ncu --import reads it again); the rest of the
    // work directory (plan, PTX cache) goes.
    let kept = raw.join(format!("{stem}.ncu-rep"));
    std::fs::copy(&rep, &kept).map_err(io(&kept))?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(Profile {
        csv,
        twin: Some(twin),
        compiled_order,
        ncu_version: version,
        ncu_command: Some(command),
        notes,
    })
}

pub fn run(a: &CountersArgs, out: &mut impl Write) -> Result<(), CliError> {
    let def = load_step(&a.file, a.dtype, a.step)?;
    let kernel = &def.kernel;
    let domain = a.domain.or(def.domain).ok_or(CliError::NoDomain)?;
    if domain.dims != kernel.dims {
        return Err(CliError::Usage(format!(
            "the kernel is {}D but the domain {domain} is {}D",
            kernel.dims, domain.dims
        )));
    }
    let original: Option<CountersSweep> = match &a.original {
        Some(p) => Some(serde_json::from_str(&read(p)?).map_err(CountersError::from)?),
        None => None,
    };
    let fetch_bytes = a
        .l2_fetch_bytes
        .or(original.as_ref().and_then(|o| o.l2_fetch_bytes));
    let (machine, fetch_note) =
        counters::machine_for_fetch(&load_machine(&a.machine)?, fetch_bytes)?;
    let stem = a
        .name
        .clone()
        .unwrap_or_else(|| format!("{}-{:?}", kernel.name, kernel.dtype()).to_lowercase());
    let raw = a.out.join("raw");
    std::fs::create_dir_all(&raw).map_err(|e| CliError::Write {
        path: raw.clone(),
        source: e,
    })?;
    let profile = match &a.from_csv {
        Some(csv) => Profile {
            csv: read_csv(csv)?,
            twin: match &a.twin_info {
                Some(p) => Some(serde_json::from_str(&read(p)?).map_err(CountersError::from)?),
                None => None,
            },
            compiled_order: None,
            ncu_version: None,
            ncu_command: None,
            notes: vec![format!("analysed from the saved CSV {}", csv.display())],
        },
        None if a.list => {
            for c in select_configs(&a.configs, kernel, &domain, &machine, a.seed)? {
                writeln!(
                    out,
                    "{} {}",
                    c.block.map(|v| v.to_string()).join(","),
                    c.fold.map(|v| v.to_string()).join(",")
                )?;
            }
            return Ok(());
        }
        None => {
            // Before anything slow: without ncu there is nothing to do.
            let ncu = ncu::locate(a.ncu.as_deref(), std::env::var("PATH").ok().as_deref())?;
            let configs = select_configs(&a.configs, kernel, &domain, &machine, a.seed)?;
            if configs.is_empty() {
                return Err(CliError::Usage(
                    "--configs selected no configuration".into(),
                ));
            }
            let plan = TwinPlan {
                file: a.file.clone(),
                dtype: kernel.dtype(),
                step: a.step.map(|s| format!("{s:?}").to_lowercase()),
                domain,
                configs,
                flush_factor: a.flush_factor,
                carveout: a.carveout,
                l2_fetch_bytes: a.l2_fetch_bytes,
                compile_only: false,
                ptx_cache: PathBuf::new(),
                info: PathBuf::new(),
            };
            let p = profile(&ncu, &a.ncu_section, plan, kernel, &raw, &stem, out)?;
            write_csv_gz(&raw.join(format!("{stem}.csv.gz")), &p.csv)?;
            p
        }
    };
    let (launches, skipped) = ncu::parse_csv_lenient(&profile.csv)?;
    let paths: Vec<&PathBuf> = if a.compiled_order.is_empty() {
        profile.compiled_order.iter().collect()
    } else {
        a.compiled_order.iter().collect()
    };
    let orders = match paths.split_first() {
        Some((first, more)) if !a.emitted_order => {
            let mut o = CompiledOrders::read(first)?;
            for p in more {
                o = o.with_more(CompiledOrders::read(p)?);
            }
            Some(o)
        }
        _ => None,
    };
    let twin_regs: Vec<(String, usize)> = profile
        .twin
        .as_ref()
        .map(|t| t.kernels.clone())
        .unwrap_or_default();
    let fallback = |c: &stencilscope::config::LaunchConfig| {
        let entry = counters::entry_name(c);
        match twin_regs.iter().find(|(n, _)| *n == entry) {
            Some((_, r)) if *r > 0 => (*r, "CU_FUNC_ATTRIBUTE_NUM_REGS".to_string()),
            _ => (estimate_registers(kernel, c), "model estimate".to_string()),
        }
    };
    let (records, mut notes) = compare(
        &launches,
        &CompareInput {
            kernel,
            domain: &domain,
            machine: &machine,
            fallback_registers: &fallback,
            compiled_orders: orders.as_ref(),
        },
    )?;
    let (records, spill_note) = counters::attach_local_bytes(records, profile.twin.as_ref());
    notes.extend(spill_note);
    if orders.is_some() {
        let n = records.iter().filter(|r| r.compiled_order).count();
        notes.push(format!(
            "{n} of {} configurations estimated with the compiled issue order of {} (the others with the emitted order)",
            records.len(),
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" and, where it lacks them, ")
        ));
    }
    notes.extend(fetch_note);
    notes.extend(profile.notes);
    if !skipped.is_empty() {
        notes.push(format!(
            "{} CSV row(s) with another field count than the header were left out (first: line {})",
            skipped.len(),
            skipped[0]
        ));
    }
    let flush_bytes = profile.twin.as_ref().map(|t| t.flush_bytes);
    notes.extend(flush_notes(&records, flush_bytes));
    let device = profile.twin.as_ref().map(|t| t.device.clone()).or_else(|| {
        // The CSV's Device column is a name in some ncu versions, an index in others.
        launches
            .iter()
            .filter_map(|l| l.device.clone())
            .find(|d| d.parse::<u64>().is_err())
            .map(|name| counters::DeviceDesc {
                name,
                compute_capability: String::new(),
                driver_api: String::new(),
                sms: 0,
                l2_bytes: 0,
            })
    });
    let wavefront_metrics = records
        .iter()
        .map(|r| ncu::MetricSet::wavefronts_in(&r.counters))
        .find(|w| !w.is_empty())
        .unwrap_or_default();
    let summary = summarize(&records);
    let (min_load, min_store) = stencilscope::footprint::minimal_volumes(kernel);
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let commit = commit(a.commit.as_deref());
    let date = counters::utc_now();
    if let Some(o) = &original {
        notes.push(format!(
            "re-analysed on {date} at commit {} from the saved CSV of the run of {} (commit {}): {command}",
            commit.as_deref().unwrap_or("unknown"),
            o.date,
            o.commit.as_deref().unwrap_or("unknown")
        ));
    }
    let sweep = CountersSweep {
        format: counters::COUNTERS_FORMAT.into(),
        version: counters::COUNTERS_VERSION,
        kernel: kernel.name.clone(),
        dtype: kernel.dtype(),
        domain,
        updates: domain.points(),
        minimal: (min_load, min_store),
        machine: machine.name.clone(),
        device,
        ncu_version: profile
            .ncu_version
            .or_else(|| original.as_ref().and_then(|o| o.ncu_version.clone())),
        wavefront_metrics,
        ncu_command: profile
            .ncu_command
            .or_else(|| original.as_ref().and_then(|o| o.ncu_command.clone())),
        command: original
            .as_ref()
            .map(|o| o.command.clone())
            .unwrap_or(command),
        commit: original.as_ref().and_then(|o| o.commit.clone()).or(commit),
        date: original.as_ref().map(|o| o.date.clone()).unwrap_or(date),
        flush_bytes,
        carveout: a.carveout.or(original.as_ref().and_then(|o| o.carveout)),
        l2_fetch_bytes: fetch_bytes,
        shared_config_bytes: counters::shared_config(&records),
        records,
        summary,
        notes,
    };
    write!(out, "{}", counters_table(&sweep))?;
    for n in &sweep.notes {
        writeln!(out, "note: {n}")?;
    }
    let json = a.out.join(format!("{stem}.json"));
    write(
        &json,
        &serde_json::to_string_pretty(&sweep).map_err(CountersError::from)?,
    )?;
    let html = a.out.join(format!("{stem}.html"));
    write(&html, &counters_html(&sweep))?;
    writeln!(out, "wrote {} and {}", json.display(), html.display())?;
    Ok(())
}

/// The twin: what ncu profiles.
pub fn twin(a: &TwinArgs, out: &mut impl Write) -> Result<(), CliError> {
    let plan: TwinPlan = serde_json::from_str(&read(&a.plan)?).map_err(CountersError::from)?;
    #[cfg(feature = "cuda")]
    {
        let info = counters::twin::run(&plan)?;
        writeln!(
            out,
            "twin: {} kernels on {}",
            info.kernels.len(),
            info.device.name
        )?;
        Ok(())
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (plan, out);
        Err(CountersError::NoCudaFeature.into())
    }
}

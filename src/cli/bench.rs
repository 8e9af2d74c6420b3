use super::run::BackendArg;
use super::{CliError, DtypeArg};
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use stencilscope::bench::cache::{utc_now, Cache, Key, Record};
use stencilscope::bench::plan::{default_config, select, Selection, SpaceSpec};
use stencilscope::bench::summary::{
    best_fixed, summarize, Summary, SweepPlan, BENCH_VERSION, PLAN_FORMAT,
};
use stencilscope::bench::{measure_into, remaining, Ending};
use stencilscope::config::{LaunchConfig, SpaceOptions};
use stencilscope::ir::{Domain, Dtype, FieldRole, Kernel};
use stencilscope::model::Prediction;
use stencilscope::rank::{evaluate, rank_configs, RankOptions};
use stencilscope::reference::Real;
use stencilscope::report::{bench_html, bench_markdown, bench_text};
use stencilscope::runtime::measure::{MeasureOptions, SampleSpec, Session, Timing, VerifyScope};
use stencilscope::runtime::{Backend, BackendKind, BackendOptions, DeviceSelector};
use stencilscope::spec::load_machine;

/// Arguments of `stencilscope bench`: a sweep, or `bench summarize`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    sub: Option<BenchCommand>,
    #[command(flatten)]
    sweep: SweepArgs,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Summarise sweeps again from their plans and caches, with the current model (or another
    /// machine file), and compute the best fixed configuration across them.
    Summarize(SummarizeArgs),
}

/// What `--verify` compares.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum VerifyArg {
    /// Full for fields of up to 2^22 elements, sampled above.
    Auto,
    /// Every element of every written field.
    Full,
    /// Ghosts and padding everywhere, whole planes and random rows (see the README).
    Sampled,
}

/// Elements of the largest written field up to which `--verify auto` compares everything.
const AUTO_FULL_ELEMENTS: usize = 1 << 22;

#[derive(Debug, Args)]
struct SweepArgs {
    /// Stencil or LBM definition file (TOML).
    #[arg(required = true)]
    file: Option<PathBuf>,
    /// Machine preset (v100, a100-40gb, h100-sxm, h200) or machine file of the model.
    #[arg(long, required = true)]
    machine: Option<String>,
    /// Backend to measure on.
    #[arg(long, value_enum, required = true)]
    backend: Option<BackendArg>,
    /// Device: an index from `stencilscope devices`, or part of its name (default: the first GPU).
    #[arg(long)]
    device: Option<String>,
    /// Domain `nx,ny[,nz]` (default: the file's).
    #[arg(long, value_parser = super::parse_domain)]
    domain: Option<Domain>,
    /// Element type, overriding the file's.
    #[arg(long, value_enum)]
    dtype: Option<DtypeArg>,
    /// The model's best K, measured first.
    #[arg(long, default_value_t = 5)]
    top: usize,
    /// Measure a stratified sample of N more configurations (one from each of N strata of
    /// predicted rank).
    #[arg(long, conflicts_with = "all")]
    sample: Option<usize>,
    /// Measure every legal configuration of the space (the oracle).
    #[arg(long)]
    all: bool,
    /// Seed of the sample (and of the measuring order with --all).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Space: fewest threads per block.
    #[arg(long, default_value_t = SpaceOptions::default().min_threads)]
    min_threads: usize,
    /// Space: most threads per block.
    #[arg(long, default_value_t = SpaceOptions::default().max_threads)]
    max_threads: usize,
    /// Space: largest block extent in z.
    #[arg(long, default_value_t = SpaceOptions::default().max_bz)]
    max_bz: usize,
    /// Space: smallest block extent in x.
    #[arg(long, default_value_t = 1)]
    min_bx: usize,
    /// Space: folding factors, e.g. 1,2,4.
    #[arg(long, value_delimiter = ',', default_values_t = SpaceOptions::default().folds)]
    folds: Vec<usize>,
    /// Space: dimensions that fold, any of x, y, z (e.g. `yz`).
    #[arg(long, default_value = "xyz")]
    fold_dims: String,
    /// Timed launches per configuration (at least 10).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Untimed warm-up launches per configuration (at least).
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Milliseconds the warm-up keeps the device busy (at least): drivers clock down idle GPUs.
    #[arg(long, default_value_t = 100)]
    warmup_ms: u32,
    /// What verification compares.
    #[arg(long, value_enum, default_value = "auto")]
    verify: VerifyArg,
    /// Output folder (plan, cache, summary, HTML report).
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
    /// Name of the sweep's files (default: kernel-dtype-backend).
    #[arg(long)]
    name: Option<String>,
    /// Cache file (default: OUT/NAME.jsonl).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Stop starting configurations after this many seconds (rerun to resume).
    #[arg(long)]
    max_seconds: Option<f64>,
    /// Commit recorded in the results (default: $STENCILSCOPE_COMMIT, at run or build time).
    #[arg(long)]
    commit: Option<String>,
    /// Registers per thread for the model (default: estimated).
    #[arg(long)]
    registers: Option<usize>,
}

#[derive(Debug, Args)]
struct SummarizeArgs {
    /// Sweep plans (`NAME.sweep.json`); each one's cache is `NAME.jsonl` beside it.
    #[arg(required = true)]
    plans: Vec<PathBuf>,
    /// Machine model for the predictions (default: each sweep's own).
    #[arg(long)]
    machine: Option<String>,
    /// Output folder (default: beside each plan; `summary.json` and `summary.md` go to the first
    /// plan's folder).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(a: &BenchArgs, out: &mut impl Write) -> Result<(), CliError> {
    match &a.sub {
        Some(BenchCommand::Summarize(s)) => summarize_cmd(s, out),
        None => sweep(&a.sweep, out),
    }
}

fn commit(given: Option<&str>) -> String {
    given
        .map(str::to_string)
        .or_else(|| std::env::var("STENCILSCOPE_COMMIT").ok())
        .or_else(|| option_env!("STENCILSCOPE_COMMIT").map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|e| CliError::Write {
        path: path.to_path_buf(),
        source: e,
    })
}

fn write_json(path: &Path, v: &impl serde::Serialize) -> Result<(), CliError> {
    write_file(path, &(serde_json::to_string_pretty(v)? + "\n"))
}

fn space_spec(a: &SweepArgs) -> Result<SpaceSpec, CliError> {
    let mut fold_dims = [false; 3];
    for ch in a.fold_dims.chars() {
        match ch {
            'x' => fold_dims[0] = true,
            'y' => fold_dims[1] = true,
            'z' => fold_dims[2] = true,
            _ => {
                return Err(CliError::Usage(format!(
                    "--fold-dims `{}`: use the letters x, y and z",
                    a.fold_dims
                )))
            }
        }
    }
    if a.folds.is_empty() || a.folds.contains(&0) {
        return Err(CliError::Usage(
            "--folds needs positive factors, e.g. 1,2,4".into(),
        ));
    }
    Ok(SpaceSpec {
        options: SpaceOptions {
            min_threads: a.min_threads,
            max_threads: a.max_threads,
            max_bz: a.max_bz,
            folds: a.folds.clone(),
            ..SpaceOptions::default()
        },
        min_bx: a.min_bx,
        fold_dims,
    })
}

/// The model's predictions for `configs` (those it finds legal).
fn predictions(
    kernel: &Kernel,
    domain: &Domain,
    machine: &stencilscope::machine::MachineModel,
    configs: &[LaunchConfig],
    opts: &RankOptions,
) -> Result<HashMap<LaunchConfig, Prediction>, CliError> {
    let r = rank_configs(kernel, domain, machine, configs, opts)?;
    Ok(r.ranked
        .into_iter()
        .map(|x| (x.config, x.prediction))
        .collect())
}

fn latest(records: &[Record]) -> HashMap<Key, Record> {
    records.iter().map(|r| (r.key.clone(), r.clone())).collect()
}

fn scope_for(v: VerifyArg, kernel: &Kernel, domain: &Domain) -> VerifyScope {
    let largest = kernel
        .fields
        .iter()
        .filter(|f| f.role != FieldRole::Input)
        .map(|f| f.layout_for(domain).len())
        .max()
        .unwrap_or(0);
    match v {
        VerifyArg::Full => VerifyScope::Full,
        VerifyArg::Sampled => VerifyScope::Sampled(SampleSpec::default()),
        VerifyArg::Auto if largest <= AUTO_FULL_ELEMENTS => VerifyScope::Full,
        VerifyArg::Auto => VerifyScope::Sampled(SampleSpec::default()),
    }
}

/// Sets a flag on the first Ctrl-C (the current configuration finishes and is written); a second
/// Ctrl-C exits at once (the cache then has at most one torn line, dropped on resume).
fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    let set = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\ninterrupted: finishing the current configuration (Ctrl-C again to quit now)");
    });
    if let Err(e) = set {
        eprintln!("warning: cannot catch Ctrl-C ({e}); an interruption may leave a torn last line, which a resume drops");
    }
    flag
}

#[allow(clippy::too_many_arguments)]
fn measure_typed<T: Real + bytemuck::Pod>(
    backend: &mut dyn Backend,
    kernel: &Kernel,
    domain: &Domain,
    options: &MeasureOptions,
    scope: VerifyScope,
    plan: &SweepPlan,
    todo: &[LaunchConfig],
    cache: &mut Cache,
    stop: &dyn Fn() -> bool,
    bar: &ProgressBar,
) -> Result<Ending, CliError> {
    let mut session = Session::<T>::new(backend, kernel, domain, options, scope)?;
    let quiet = bar.is_hidden();
    let mut n = 0;
    let ending = measure_into(&mut session, plan, todo, cache, stop, |r| {
        n += 1;
        bar.inc(1);
        let what = match (r.passed_median(), &r.error) {
            (Some(m), _) => format!("{:.4} ms", m * 1e3),
            (None, Some(e)) => format!("{:?}: {}", r.status, e.lines().next().unwrap_or("")),
            (None, None) => format!("{:?}", r.status),
        };
        bar.set_message(format!("{}: {what}", r.key.config));
        // Without a terminal (logs of GPU runs), one line per configuration instead of the bar.
        if quiet {
            eprintln!("[{n}/{}] {}: {what}", todo.len(), r.key.config);
        }
    })?;
    Ok(ending)
}

fn sweep(a: &SweepArgs, out: &mut impl Write) -> Result<(), CliError> {
    let file = a.file.as_ref().expect("clap requires FILE");
    let machine_name = a.machine.as_deref().expect("clap requires --machine");
    let kind: BackendKind = a.backend.expect("clap requires --backend").into();
    if a.reps < 10 {
        return Err(CliError::Usage(format!(
            "--reps {} is too few; the median and spread need at least 10 timed launches",
            a.reps
        )));
    }
    let selection = match (a.all, a.sample) {
        (true, _) => Selection::All {
            top: a.top,
            seed: a.seed,
        },
        (false, Some(n)) => Selection::Sample {
            top: a.top,
            sample: n,
            seed: a.seed,
        },
        (false, None) => {
            return Err(CliError::Usage(
                "give --sample N (the model's top K plus a stratified sample) or --all (every legal configuration)".into(),
            ))
        }
    };
    let def = super::load(file, a.dtype)?;
    let kernel = def.kernel;
    let domain = a.domain.or(def.domain).ok_or(CliError::NoDomain)?;
    if domain.dims != kernel.dims {
        return Err(CliError::Usage(format!(
            "the kernel is {}D but the domain {domain} is {}D",
            kernel.dims, domain.dims
        )));
    }
    let machine = load_machine(machine_name)?;
    let space = space_spec(a)?;
    let opts = RankOptions {
        registers: a.registers,
        space: space.options.clone(),
        ..RankOptions::default()
    };
    let started = Instant::now();
    let configs = space.configs(&domain);
    let ranking = rank_configs(&kernel, &domain, &machine, &configs, &opts)?;
    let default = default_config(domain.dims);
    let mut predicted: HashMap<LaunchConfig, Prediction> = ranking
        .ranked
        .iter()
        .map(|r| (r.config, r.prediction.clone()))
        .collect();
    if let std::collections::hash_map::Entry::Vacant(slot) = predicted.entry(default) {
        match evaluate(&kernel, &domain, &machine, &default, &opts) {
            Ok(p) => {
                slot.insert(p);
            }
            Err(e) => writeln!(out, "note: the default {default} has no prediction: {e}")?,
        }
    }
    writeln!(
        out,
        "ranked {} configurations ({} legal) in {:.1} s",
        configs.len(),
        ranking.ranked.len(),
        started.elapsed().as_secs_f64()
    )?;
    let candidates = select(&ranking.ranked, selection, default);

    let mut backend = kind.open(
        &a.device
            .as_deref()
            .map(DeviceSelector::parse)
            .unwrap_or_default(),
        &BackendOptions::default(),
    )?;
    let info = backend.info().clone();
    let dtype = kernel.dtype();
    let name = a
        .name
        .clone()
        .unwrap_or_else(|| format!("{}-{dtype}-{kind}", kernel.name));
    std::fs::create_dir_all(&a.out).map_err(|e| CliError::Write {
        path: a.out.clone(),
        source: e,
    })?;
    let scope = scope_for(a.verify, &kernel, &domain);
    let plan = SweepPlan {
        format: PLAN_FORMAT.into(),
        version: BENCH_VERSION,
        name: name.clone(),
        file: file.clone(),
        kernel: kernel.name.clone(),
        dtype,
        domain,
        machine: machine_name.to_string(),
        backend: kind,
        device: info.name.clone(),
        driver: info.driver.clone(),
        selection,
        space,
        registers: a.registers,
        warmup: a.warmup,
        warmup_ms: a.warmup_ms,
        reps: a.reps,
        seed: a.seed,
        verify: scope,
        commit: commit(a.commit.as_deref()),
        date: utc_now(),
        space_legal: ranking.ranked.len(),
        space_illegal: ranking.refused.len(),
        candidates,
    };
    write_json(&a.out.join(format!("{name}.sweep.json")), &plan)?;
    let cache_path = a
        .cache
        .clone()
        .unwrap_or_else(|| a.out.join(format!("{name}.jsonl")));
    let mut cache = Cache::open(&cache_path)?;
    if cache.dropped_bytes() > 0 {
        writeln!(
            out,
            "dropped an incomplete last line ({} bytes) of {}: that configuration is measured again",
            cache.dropped_bytes(),
            cache_path.display()
        )?;
    }
    let todo = remaining(&plan, &cache);
    writeln!(
        out,
        "{}: {} candidates on {} ({}), {} already in {}, {} to measure; verification {}",
        name,
        plan.candidates.len(),
        info.name,
        kind,
        plan.candidates.len() - todo.len(),
        cache_path.display(),
        todo.len(),
        match scope {
            VerifyScope::Full => "of every element".to_string(),
            VerifyScope::Sampled(s) => format!(
                "sampled ({} random planes per axis, {} random rows)",
                s.random_planes, s.random_rows
            ),
        }
    )?;
    out.flush()?;
    let mut ending = Ending::Finished;
    let interrupted = interrupt_flag();
    if !todo.is_empty() {
        let bar = ProgressBar::new(todo.len() as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} ETA {eta_precise} {wide_msg}",
            )
            .expect("the template is valid")
            .progress_chars("=> "),
        );
        let t0 = Instant::now();
        let budget = a.max_seconds;
        let flag = interrupted.clone();
        let stop = move || {
            flag.load(Ordering::SeqCst) || budget.is_some_and(|b| t0.elapsed().as_secs_f64() >= b)
        };
        let options = MeasureOptions {
            timing: Some(Timing {
                warmup: a.warmup,
                warmup_ms: a.warmup_ms,
                reps: a.reps,
            }),
            verify: true,
            seed: a.seed,
        };
        ending = match dtype {
            Dtype::F32 => measure_typed::<f32>(
                &mut *backend,
                &kernel,
                &domain,
                &options,
                scope,
                &plan,
                &todo,
                &mut cache,
                &stop,
                &bar,
            )?,
            Dtype::F64 => measure_typed::<f64>(
                &mut *backend,
                &kernel,
                &domain,
                &options,
                scope,
                &plan,
                &todo,
                &mut cache,
                &stop,
                &bar,
            )?,
        };
        bar.finish();
        writeln!(out, "measured in {:.1} s", t0.elapsed().as_secs_f64())?;
    }
    let summary = summarize(&plan, machine_name, &predicted, &latest(cache.records()));
    write_outputs(&a.out, &summary)?;
    write!(out, "{}", bench_text(&summary))?;
    writeln!(
        out,
        "wrote {}",
        a.out
            .join(format!("{name}.{{sweep.json,jsonl,summary.json,html}}"))
            .display()
    )?;
    if ending == Ending::Stopped {
        writeln!(
            out,
            "stopped before the sweep was complete; the same command resumes it"
        )?;
        if interrupted.load(Ordering::SeqCst) {
            return Err(CliError::Interrupted);
        }
    }
    Ok(())
}

fn write_outputs(dir: &Path, s: &Summary) -> Result<(), CliError> {
    write_json(&dir.join(format!("{}.summary.json", s.name)), s)?;
    write_file(&dir.join(format!("{}.html", s.name)), &bench_html(s))
}

fn summarize_cmd(a: &SummarizeArgs, out: &mut impl Write) -> Result<(), CliError> {
    let mut summaries = Vec::new();
    let mut dirs = Vec::new();
    for p in &a.plans {
        let text = std::fs::read_to_string(p)
            .map_err(|e| CliError::Usage(format!("cannot read sweep plan {}: {e}", p.display())))?;
        let plan: SweepPlan = serde_json::from_str(&text)
            .map_err(|e| CliError::Usage(format!("{} is not a sweep plan: {e}", p.display())))?;
        if plan.format != PLAN_FORMAT || plan.version != BENCH_VERSION {
            return Err(CliError::Usage(format!(
                "{} is {} version {}, expected {PLAN_FORMAT} version {BENCH_VERSION}",
                p.display(),
                plan.format,
                plan.version
            )));
        }
        let mut def = super::load(&plan.file, None)?;
        def.set_dtype(plan.dtype);
        let machine_name = a.machine.clone().unwrap_or_else(|| plan.machine.clone());
        let machine = load_machine(&machine_name)?;
        let opts = RankOptions {
            registers: plan.registers,
            space: plan.space.options.clone(),
            ..RankOptions::default()
        };
        let configs: Vec<LaunchConfig> = plan.candidates.iter().map(|c| c.config).collect();
        let predicted = predictions(&def.kernel, &plan.domain, &machine, &configs, &opts)?;
        let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
        let cache = Cache::open(&dir.join(format!("{}.jsonl", plan.name)))?;
        summaries.push(summarize(
            &plan,
            &machine_name,
            &predicted,
            &latest(cache.records()),
        ));
        dirs.push(a.out.clone().unwrap_or(dir));
    }
    if let Some((c, mean)) = best_fixed(&mut summaries) {
        writeln!(
            out,
            "best fixed configuration over {} sweeps: {c} ({mean:.1}% of the oracle on average)",
            summaries.len()
        )?;
    }
    for (s, d) in summaries.iter().zip(&dirs) {
        std::fs::create_dir_all(d).map_err(|e| CliError::Write {
            path: d.clone(),
            source: e,
        })?;
        write_outputs(d, s)?;
        write!(out, "{}", bench_text(s))?;
    }
    let table = bench_markdown(&summaries);
    write!(out, "{table}")?;
    if let Some(d) = dirs.first() {
        write_json(&d.join("summary.json"), &summaries)?;
        write_file(&d.join("summary.md"), &table)?;
        writeln!(out, "wrote {}", d.join("summary.{json,md}").display())?;
    }
    Ok(())
}

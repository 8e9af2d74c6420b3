//! A sweep's plan (what was to be measured, and how) and its summary (how good the ranking was),
//! and the best fixed configuration across several sweeps.

use super::cache::{Key, Record};
use super::metrics::{geomean_rel_error, kendall_tau_b, pct_of_oracle, spearman};
use super::plan::{Candidate, Selection, SpaceSpec};
use crate::config::LaunchConfig;
use crate::footprint::DataVolumes;
use crate::ir::{Domain, Dtype};
use crate::machine::Occupancy;
use crate::model::{LevelTimes, Limiter, Prediction};
use crate::runtime::measure::{Status, VerifyScope};
use crate::runtime::BackendKind;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// Format name of a sweep plan file.
pub const PLAN_FORMAT: &str = "stencilscope-sweep";
/// Format name of a summary file.
pub const SUMMARY_FORMAT: &str = "stencilscope-bench-summary";
/// Bumped whenever either layout changes incompatibly.
pub const BENCH_VERSION: u32 = 1;

/// Everything about a sweep except its measurements (those are in the cache).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPlan {
    /// `PLAN_FORMAT`.
    pub format: String,
    /// `BENCH_VERSION`.
    pub version: u32,
    /// Name of the sweep (file stem of its outputs).
    pub name: String,
    /// The kernel definition file, as given.
    pub file: PathBuf,
    /// Kernel name.
    pub kernel: String,
    /// Element type.
    pub dtype: Dtype,
    /// The domain.
    pub domain: Domain,
    /// Machine model (preset name or file) the ranking used.
    pub machine: String,
    /// The backend.
    pub backend: BackendKind,
    /// Device name.
    pub device: String,
    /// Driver or platform version, as the backend reports it.
    pub driver: String,
    /// What to measure.
    pub selection: Selection,
    /// The space.
    pub space: SpaceSpec,
    /// Registers per thread given to the model (`None`: estimated).
    pub registers: Option<usize>,
    /// Untimed launches per configuration (at least).
    pub warmup: usize,
    /// Milliseconds of busy warm-up per configuration (at least; 0 in sweeps made before it).
    #[serde(default)]
    pub warmup_ms: u32,
    /// Timed launches per configuration.
    pub reps: usize,
    /// Seed of the random inputs.
    pub seed: u64,
    /// What verification compares.
    pub verify: VerifyScope,
    /// Commit of the code that measured.
    pub commit: String,
    /// When the sweep was planned (UTC).
    pub date: String,
    /// Legal configurations of the space (by the model's rules).
    pub space_legal: usize,
    /// Configurations of the space the model's rules exclude.
    pub space_illegal: usize,
    /// The configurations to measure, in order.
    pub candidates: Vec<Candidate>,
}

impl SweepPlan {
    /// The cache key of `config` in this sweep.
    pub fn key(&self, config: LaunchConfig) -> Key {
        Key {
            kernel: self.kernel.clone(),
            dtype: self.dtype,
            domain: self.domain,
            backend: self.backend,
            device: self.device.clone(),
            config,
        }
    }
}

/// A measured configuration with its prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The configuration.
    pub config: LaunchConfig,
    /// Position in the model's order of the sweep's candidates (1 = predicted fastest).
    pub rank: usize,
    /// Predicted seconds.
    pub predicted_s: f64,
    /// Measured median seconds.
    pub measured_s: f64,
    /// Fastest and slowest timed launch.
    pub min_s: f64,
    /// Slowest timed launch.
    pub max_s: f64,
    /// Predicted limiter.
    pub limiter: Limiter,
    /// The model's per-level times (the evidence behind `predicted_s`).
    pub times: LevelTimes,
    /// The model's data volumes per lattice update.
    pub volumes: DataVolumes,
    /// The model's factor for the partial last wave.
    pub wave_factor: f64,
    /// Blocks over the resident block slots (the waves the factor comes from).
    pub waves: f64,
    /// Registers per thread the model assumed.
    pub registers: usize,
    /// Resident blocks and warps per SM the model assumed (calibration groups by them).
    pub occupancy: Occupancy,
}

/// A configuration that did not yield a verified time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// The configuration.
    pub config: LaunchConfig,
    /// Refused, wrong or error (or "unmeasured", "unpredicted").
    pub status: String,
    /// The reason.
    pub reason: String,
}

/// The model's choice: its best-predicted candidate that ran and verified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// The configuration.
    pub config: LaunchConfig,
    /// Position in the model's order.
    pub rank: usize,
    /// Predicted seconds.
    pub predicted_s: f64,
    /// Measured median seconds.
    pub measured_s: f64,
    /// Better-predicted candidates passed over (refused by the device, failed, or unmeasured).
    pub skipped: Vec<Failure>,
}

/// A named configuration with its measured and predicted times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// The configuration.
    pub config: LaunchConfig,
    /// Measured median seconds.
    pub median_s: f64,
    /// Predicted seconds.
    pub predicted_s: f64,
    /// Position in the model's order.
    pub rank: usize,
}

impl Measured {
    fn of(p: &Point) -> Measured {
        Measured {
            config: p.config,
            median_s: p.measured_s,
            predicted_s: p.predicted_s,
            rank: p.rank,
        }
    }
}

/// How good the ranking was on one sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// `SUMMARY_FORMAT`.
    pub format: String,
    /// `BENCH_VERSION`.
    pub version: u32,
    /// Sweep name.
    pub name: String,
    /// Device name.
    pub device: String,
    /// Driver or platform version.
    pub driver: String,
    /// Commit of the code that measured.
    pub commit: String,
    /// When the sweep was planned (UTC).
    pub date: String,
    /// Kernel name.
    pub kernel: String,
    /// Element type.
    pub dtype: Dtype,
    /// The backend.
    pub backend: BackendKind,
    /// The domain.
    pub domain: Domain,
    /// Machine model of the predictions.
    pub machine: String,
    /// What was selected for measurement.
    pub selection: Selection,
    /// The space.
    pub space: SpaceSpec,
    /// What verification compared.
    pub verify: VerifyScope,
    /// Timed launches per configuration.
    pub reps: usize,
    /// Candidates planned.
    pub configs_planned: usize,
    /// Candidates measured and verified.
    pub configs_measured: usize,
    /// Candidates the device or driver refused.
    pub configs_refused: usize,
    /// Candidates that failed (wrong output, compiler or driver errors).
    pub configs_failed: usize,
    /// Whether every planned candidate has a result.
    pub complete: bool,
    /// The fastest measured configuration.
    pub oracle: Option<Measured>,
    /// The model's choice.
    pub model_top1: Option<Choice>,
    /// The fastest of the model's first five verified candidates.
    pub best_of_top5: Option<Measured>,
    /// The default configuration (see `plan::default_config`), where measured.
    pub default: Option<Measured>,
    /// Oracle time over the model's choice's time, in percent.
    pub pct_of_oracle_top1: Option<f64>,
    /// Oracle time over the best of the model's top five, in percent.
    pub pct_of_oracle_best_of_top5: Option<f64>,
    /// Spearman's rank correlation of predicted and measured times.
    pub spearman: Option<f64>,
    /// Kendall's τ-b of predicted and measured times.
    pub kendall_tau: Option<f64>,
    /// Geometric mean of |predicted − measured| / measured.
    pub geomean_rel_error: Option<f64>,
    /// Default time over the model's choice's time.
    pub speedup_over_default: Option<f64>,
    /// The single configuration best on average over the sweeps summarised together.
    pub best_fixed: Option<Measured>,
    /// Best fixed configuration's time over the model's choice's time (several sweeps only).
    pub speedup_over_best_fixed: Option<f64>,
    /// Measured configurations per predicted limiter.
    pub limiters: BTreeMap<String, usize>,
    /// Refused, failed, unmeasured and unpredicted candidates with the reason.
    pub failures: Vec<Failure>,
    /// Every measured configuration, in the model's order.
    pub points: Vec<Point>,
}

/// Summarises `plan` from the cache's `records` and the model's `predictions` of its candidates.
pub fn summarize(
    plan: &SweepPlan,
    machine: &str,
    predictions: &HashMap<LaunchConfig, Prediction>,
    records: &HashMap<Key, Record>,
) -> Summary {
    // Candidates in the model's order; those the model has no prediction for go last.
    let mut order: Vec<(&Candidate, Option<&Prediction>)> = plan
        .candidates
        .iter()
        .map(|c| (c, predictions.get(&c.config)))
        .collect();
    order.sort_by(|a, b| match (a.1, b.1) {
        (Some(p), Some(q)) => p
            .seconds
            .total_cmp(&q.seconds)
            .then(a.0.config.cmp(&b.0.config)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.0.config.cmp(&b.0.config),
    });
    let mut points = Vec::new();
    let mut failures = Vec::new();
    let (mut refused, mut failed, mut unmeasured) = (0, 0, 0);
    let mut top1: Option<Choice> = None;
    let mut skipped = Vec::new();
    for (i, (c, p)) in order.iter().enumerate() {
        let rank = i + 1;
        let failure = |status: &str, reason: String| Failure {
            config: c.config,
            status: status.into(),
            reason,
        };
        let f = match records.get(&plan.key(c.config)) {
            None => {
                unmeasured += 1;
                Some(failure(
                    "unmeasured",
                    "not measured (sweep interrupted)".into(),
                ))
            }
            Some(r) => match (r.status, r.passed_median(), p) {
                (Status::Refused, ..) => {
                    refused += 1;
                    Some(failure("refused", r.error.clone().unwrap_or_default()))
                }
                (_, Some(m), Some(p)) => {
                    let point = Point {
                        config: c.config,
                        rank,
                        predicted_s: p.seconds,
                        measured_s: m,
                        min_s: r.min_s.unwrap_or(m),
                        max_s: r.max_s.unwrap_or(m),
                        limiter: p.limiter,
                        times: p.times,
                        volumes: p.volumes,
                        wave_factor: p.wave_factor,
                        waves: p.waves,
                        registers: p.registers,
                        occupancy: p.occupancy,
                    };
                    if top1.is_none() {
                        top1 = Some(Choice {
                            config: c.config,
                            rank,
                            predicted_s: p.seconds,
                            measured_s: m,
                            skipped: std::mem::take(&mut skipped),
                        });
                    }
                    points.push(point);
                    None
                }
                (_, Some(_), None) => Some(failure(
                    "unpredicted",
                    "measured, but the model has no prediction (illegal by its rules)".into(),
                )),
                (status, None, _) => {
                    failed += 1;
                    let reason = match (&r.error, &r.verification) {
                        (Some(e), _) => e.clone(),
                        (None, Some(v)) if !v.passed => format!(
                            "{} of {} elements differ; first: {}",
                            v.mismatches,
                            v.checked,
                            v.first_mismatch.as_deref().unwrap_or("?")
                        ),
                        _ => "not verified".into(),
                    };
                    Some(failure(&format!("{status:?}").to_lowercase(), reason))
                }
            },
        };
        if let Some(f) = f {
            if top1.is_none() {
                skipped.push(f.clone());
            }
            failures.push(f);
        }
    }
    let oracle = points
        .iter()
        .min_by(|a, b| a.measured_s.total_cmp(&b.measured_s))
        .map(Measured::of);
    let best_of_top5 = points
        .iter()
        .take(5)
        .min_by(|a, b| a.measured_s.total_cmp(&b.measured_s))
        .map(Measured::of);
    let default_config = super::plan::default_config(plan.domain.dims);
    let default = points
        .iter()
        .find(|p| p.config == default_config)
        .map(Measured::of);
    let predicted: Vec<f64> = points.iter().map(|p| p.predicted_s).collect();
    let measured: Vec<f64> = points.iter().map(|p| p.measured_s).collect();
    let mut limiters = BTreeMap::new();
    for p in &points {
        *limiters.entry(p.limiter.to_string()).or_insert(0) += 1;
    }
    let oracle_s = oracle.as_ref().map(|o| o.median_s);
    Summary {
        format: SUMMARY_FORMAT.into(),
        version: BENCH_VERSION,
        name: plan.name.clone(),
        device: plan.device.clone(),
        driver: plan.driver.clone(),
        commit: plan.commit.clone(),
        date: plan.date.clone(),
        kernel: plan.kernel.clone(),
        dtype: plan.dtype,
        backend: plan.backend,
        domain: plan.domain,
        machine: machine.into(),
        selection: plan.selection,
        space: plan.space.clone(),
        verify: plan.verify,
        reps: plan.reps,
        configs_planned: plan.candidates.len(),
        configs_measured: points.len(),
        configs_refused: refused,
        configs_failed: failed,
        complete: unmeasured == 0,
        pct_of_oracle_top1: oracle_s
            .zip(top1.as_ref())
            .map(|(o, t)| pct_of_oracle(o, t.measured_s)),
        pct_of_oracle_best_of_top5: oracle_s
            .zip(best_of_top5.as_ref())
            .map(|(o, b)| pct_of_oracle(o, b.median_s)),
        speedup_over_default: default
            .as_ref()
            .zip(top1.as_ref())
            .map(|(d, t)| d.median_s / t.measured_s),
        spearman: spearman(&predicted, &measured),
        kendall_tau: kendall_tau_b(&predicted, &measured),
        geomean_rel_error: geomean_rel_error(&predicted, &measured),
        oracle,
        model_top1: top1,
        best_of_top5,
        default,
        best_fixed: None,
        speedup_over_best_fixed: None,
        limiters,
        failures,
        points,
    }
}

/// The best fixed configuration across sweeps (Cummins et al.'s baseline): of the configurations
/// measured and verified in every sweep, the one with the highest mean share of each sweep's
/// oracle performance. Sets `best_fixed` and `speedup_over_best_fixed` of every summary and
/// returns the configuration with its mean percent of oracle; `None` with fewer than two sweeps
/// or no configuration common to all.
pub fn best_fixed(summaries: &mut [Summary]) -> Option<(LaunchConfig, f64)> {
    if summaries.len() < 2 {
        return None;
    }
    let mut share: HashMap<LaunchConfig, (usize, f64)> = HashMap::new();
    for s in summaries.iter() {
        let Some(o) = &s.oracle else {
            return None;
        };
        for p in &s.points {
            let e = share.entry(p.config).or_insert((0, 0.0));
            e.0 += 1;
            e.1 += pct_of_oracle(o.median_s, p.measured_s);
        }
    }
    let n = summaries.len();
    let (config, mean) = share
        .into_iter()
        .filter(|(_, (count, _))| *count == n)
        .map(|(c, (_, total))| (c, total / n as f64))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))?;
    for s in summaries.iter_mut() {
        let p = s.points.iter().find(|p| p.config == config)?;
        s.best_fixed = Some(Measured::of(p));
        s.speedup_over_best_fixed = s.model_top1.as_ref().map(|t| p.measured_s / t.measured_s);
    }
    Some((config, mean))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::plan::Reason;
    use crate::runtime::measure::Verification;

    fn cfg(bx: usize) -> LaunchConfig {
        LaunchConfig::new([bx, 1, 1], [1, 1, 1])
    }

    fn prediction(seconds: f64) -> Prediction {
        Prediction::dram_bound(seconds)
    }

    fn plan(configs: &[LaunchConfig]) -> SweepPlan {
        SweepPlan {
            format: PLAN_FORMAT.into(),
            version: BENCH_VERSION,
            name: "t".into(),
            file: "k.toml".into(),
            kernel: "k".into(),
            dtype: Dtype::F32,
            domain: Domain::new2(64, 64),
            machine: "h200".into(),
            backend: BackendKind::OpenCl,
            device: "dev".into(),
            driver: "drv".into(),
            selection: Selection::All { top: 5, seed: 1 },
            space: SpaceSpec::default(),
            registers: None,
            warmup: 3,
            warmup_ms: 0,
            reps: 10,
            seed: 1,
            verify: VerifyScope::Full,
            commit: "abc".into(),
            date: "2026-01-01T00:00:00Z".into(),
            space_legal: configs.len(),
            space_illegal: 0,
            candidates: configs
                .iter()
                .map(|c| Candidate {
                    config: *c,
                    rank: None,
                    reason: Reason::All,
                })
                .collect(),
        }
    }

    fn record(plan: &SweepPlan, c: LaunchConfig, status: Status, median: f64) -> Record {
        Record {
            key: plan.key(c),
            status,
            error: (status == Status::Refused).then(|| "too many threads".to_string()),
            times: vec![median; 10],
            median_s: Some(median),
            min_s: Some(median * 0.99),
            max_s: Some(median * 1.01),
            verification: (status != Status::Refused).then(|| Verification {
                passed: status == Status::Passed,
                checked: 10,
                mismatches: usize::from(status != Status::Passed),
                max_error: 0.0,
                tolerance: 1e-4,
                first_mismatch: None,
                sampled_rows: None,
            }),
            date: "2026-01-01T00:00:00Z".into(),
        }
    }

    /// Six configurations; predicted times 1..6 in config order (bx = 32·k); the model's first
    /// pick is refused, the default (16,16,1) is one of them.
    fn sweep(measured: [f64; 6]) -> Summary {
        let configs: Vec<LaunchConfig> = [32, 64, 96, 128, 160]
            .iter()
            .map(|b| cfg(*b))
            .chain([LaunchConfig::new([16, 16, 1], [1, 1, 1])])
            .collect();
        let p = plan(&configs);
        let predictions: HashMap<LaunchConfig, Prediction> = configs
            .iter()
            .enumerate()
            .map(|(i, c)| (*c, prediction(i as f64 + 1.0)))
            .collect();
        let records: HashMap<Key, Record> = configs
            .iter()
            .zip(measured)
            .enumerate()
            .map(|(i, (c, m))| {
                let status = if i == 0 {
                    Status::Refused
                } else {
                    Status::Passed
                };
                (p.key(*c), record(&p, *c, status, m))
            })
            .collect();
        summarize(&p, "h200", &predictions, &records)
    }

    #[test]
    fn metrics_of_a_hand_made_sweep() {
        // Measured: refused, 2.0, 1.0, 4.0, 5.0, 8.0 (the default, predicted 6.0).
        let s = sweep([0.5, 2.0, 1.0, 4.0, 5.0, 8.0]);
        assert_eq!(s.configs_planned, 6);
        assert_eq!(s.configs_measured, 5);
        assert_eq!(s.configs_refused, 1);
        assert!(s.complete);
        // The refused first pick is skipped; the model's choice is rank 2 (measured 2.0).
        let t = s.model_top1.as_ref().unwrap();
        assert_eq!(t.config, cfg(64));
        assert_eq!((t.rank, t.predicted_s, t.measured_s), (2, 2.0, 2.0));
        assert_eq!(t.skipped.len(), 1);
        assert_eq!(t.skipped[0].status, "refused");
        // Oracle 1.0 (bx 96): top-1 reaches 50%; the best of the first five verified is 1.0.
        assert_eq!(s.oracle.as_ref().unwrap().config, cfg(96));
        assert_eq!(s.pct_of_oracle_top1, Some(50.0));
        assert_eq!(s.pct_of_oracle_best_of_top5, Some(100.0));
        // Default 8.0 against the choice's 2.0.
        assert_eq!(s.speedup_over_default, Some(4.0));
        // Predicted (2,3,4,5,6) against measured (2,1,4,5,8): one discordant pair of ten.
        assert!((s.kendall_tau.unwrap() - 0.8).abs() < 1e-12);
        assert!((s.spearman.unwrap() - 0.9).abs() < 1e-12);
        // Relative errors 0, ... → geometric mean 0.
        assert_eq!(s.geomean_rel_error, Some(0.0));
        assert_eq!(s.limiters["DRAM"], 5);
        assert_eq!(s.failures.len(), 1);
    }

    #[test]
    fn unmeasured_and_wrong_candidates_are_reported() {
        let configs = [cfg(32), cfg(64), cfg(128)];
        let p = plan(&configs);
        let predictions: HashMap<LaunchConfig, Prediction> = configs
            .iter()
            .enumerate()
            .map(|(i, c)| (*c, prediction(i as f64 + 1.0)))
            .collect();
        let mut records = HashMap::new();
        records.insert(p.key(cfg(32)), record(&p, cfg(32), Status::Wrong, 1.0));
        records.insert(p.key(cfg(128)), record(&p, cfg(128), Status::Passed, 3.0));
        let s = summarize(&p, "h200", &predictions, &records);
        assert!(!s.complete);
        assert_eq!((s.configs_measured, s.configs_failed), (1, 1));
        let t = s.model_top1.unwrap();
        assert_eq!(t.config, cfg(128));
        let why: Vec<&str> = t.skipped.iter().map(|f| f.status.as_str()).collect();
        assert_eq!(why, ["wrong", "unmeasured"]);
        assert!(t.skipped[0].reason.contains("1 of 10 elements differ"));
        // One point: correlations undefined, the default not measured.
        assert_eq!(s.spearman, None);
        assert_eq!(s.speedup_over_default, None);
    }

    #[test]
    fn best_fixed_is_best_on_average() {
        // Sweep A oracle bx 96 (1.0); sweep B oracle bx 128 (1.0).
        let a = sweep([0.5, 2.0, 1.0, 1.25, 5.0, 8.0]);
        let b = sweep([0.5, 1.5, 1.6, 1.0, 5.0, 8.0]);
        // Mean % of oracle: bx 64: (50 + 66.7)/2 = 58.3; bx 96: (100 + 62.5)/2 = 81.25;
        // bx 128: (80 + 100)/2 = 90 → bx 128.
        let mut s = vec![a, b];
        let (c, mean) = best_fixed(&mut s).unwrap();
        assert_eq!(c, cfg(128));
        assert!((mean - 90.0).abs() < 1e-9);
        // Model choice is bx 64 in both: 1.25/2.0 and 1.0/1.5.
        assert_eq!(s[0].speedup_over_best_fixed, Some(1.25 / 2.0));
        assert_eq!(s[1].speedup_over_best_fixed, Some(1.0 / 1.5));
        assert_eq!(s[1].best_fixed.as_ref().unwrap().config, cfg(128));
        assert!(best_fixed(&mut s[..1]).is_none());
    }
}

//! The benchmark harness: measure what the model ranked, on the same configurations, and say in
//! numbers how good the ranking was.
//!
//! A sweep is planned from a ranking ([`plan`]: the model's top K, the default configuration,
//! and a stratified sample of the rest or every legal configuration), measured configuration by
//! configuration through [`crate::runtime::measure::Session`] (compiled, warmed up, timed with
//! device timers, verified against the CPU reference), appended to a JSON-lines [`cache`] as it
//! goes, and summarised ([`summary`], [`metrics`]): percent of the oracle, rank correlations,
//! geometric mean relative error, speed-ups over the default and over the best fixed
//! configuration of several sweeps.

pub mod cache;
pub mod metrics;
pub mod plan;
pub mod summary;

use crate::config::LaunchConfig;
use crate::reference::Real;
use crate::runtime::measure::Session;
use cache::{utc_now, Cache, CacheError, Record};
use summary::SweepPlan;

/// How a sweep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Every configuration asked for was measured.
    Finished,
    /// `stop` said so before the next configuration (Ctrl-C, time budget).
    Stopped,
}

/// The candidates of `plan` that have no record in `cache` yet, in plan order.
pub fn remaining(plan: &SweepPlan, cache: &Cache) -> Vec<LaunchConfig> {
    plan.candidates
        .iter()
        .map(|c| c.config)
        .filter(|c| cache.get(&plan.key(*c)).is_none())
        .collect()
}

/// Measures `todo` one configuration at a time, appending each result to `cache` (flushed)
/// before the next starts. `stop` is asked before each configuration; `done` sees each record.
pub fn measure_into<T: Real + bytemuck::Pod>(
    session: &mut Session<'_, T>,
    plan: &SweepPlan,
    todo: &[LaunchConfig],
    cache: &mut Cache,
    stop: &dyn Fn() -> bool,
    mut done: impl FnMut(&Record),
) -> Result<Ending, CacheError> {
    for c in todo {
        if stop() {
            return Ok(Ending::Stopped);
        }
        let r = session.run(c);
        let record = Record::new(plan.key(*c), &r, utc_now());
        done(&record);
        cache.append(record)?;
    }
    Ok(Ending::Finished)
}

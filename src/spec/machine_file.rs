//! Machine files: every figure present, plausible, and with a stated source.

use super::error::{Location, SpecError};
use super::line_col;
use crate::machine::{preset_text, MachineModel, SetIndex};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use toml::Spanned;

/// Why a machine could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    /// Neither a preset nor a readable file.
    #[error(
        "unknown machine `{name}`: not a preset ({presets}) and not a readable file ({reason})"
    )]
    Unknown {
        /// What was asked for.
        name: String,
        /// The preset names.
        presets: String,
        /// Why it is not a file.
        reason: String,
    },
    /// The file is not valid TOML.
    #[error(transparent)]
    Syntax(#[from] SpecError),
    /// A required figure is missing.
    #[error("{file}: missing `{key}` ({what})")]
    Missing {
        /// The file.
        file: String,
        /// The key.
        key: &'static str,
        /// What it means.
        what: &'static str,
    },
    /// A figure that no GPU has.
    #[error("{loc}: `{key}` = {value} is not plausible ({valid})")]
    Absurd {
        /// Where.
        loc: Location,
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// What would be valid.
        valid: String,
    },
    /// A key the model does not know.
    #[error("{loc}: unknown key `{key}` in a machine file (known: {known})")]
    UnknownKey {
        /// Where.
        loc: Location,
        /// The key.
        key: String,
        /// Known keys.
        known: String,
    },
    /// A key the model no longer reads.
    #[error("{loc}: `{key}` is no longer read ({why}); remove it")]
    Retired {
        /// Where.
        loc: Location,
        /// The key.
        key: String,
        /// Why it went.
        why: &'static str,
    },
    /// A figure without a `[sources]` entry.
    #[error("{loc}: `{key}` has no entry in [sources] (say datasheet, measured or estimate)")]
    MissingSource {
        /// Where.
        loc: Location,
        /// The key.
        key: String,
    },
}

/// (key, meaning, minimum, maximum, integer?)
const FIGURES: [(&str, &str, f64, f64, bool); 26] = [
    ("sms", "streaming multiprocessors", 1.0, 1024.0, true),
    ("clock_ghz", "SM clock in GHz", 0.1, 10.0, false),
    ("warp_size", "threads per warp", 1.0, 128.0, true),
    (
        "fp32_flops_per_cycle_per_sm",
        "f32 flops per cycle per SM",
        1.0,
        8192.0,
        false,
    ),
    (
        "fp64_flops_per_cycle_per_sm",
        "f64 flops per cycle per SM",
        0.01,
        8192.0,
        false,
    ),
    (
        "l1_bytes",
        "usable L1 bytes per SM",
        1024.0,
        16.0 * 1048576.0,
        true,
    ),
    ("l2_bytes", "L2 bytes", 65536.0, 4096.0 * 1048576.0, true),
    (
        "l2_effective_bytes",
        "effective L2 bytes",
        65536.0,
        4096.0 * 1048576.0,
        true,
    ),
    ("sector_bytes", "sector size", 4.0, 512.0, true),
    ("line_bytes", "L1 line size", 4.0, 1024.0, true),
    (
        "l1_wavefronts_per_cycle_per_sm",
        "L1 wavefronts per cycle per SM",
        0.01,
        16.0,
        false,
    ),
    ("l2_bandwidth", "L2 bandwidth in B/s", 1e9, 1e15, false),
    ("dram_bandwidth", "DRAM bandwidth in B/s", 1e9, 1e15, false),
    ("dram_latency_ns", "DRAM latency in ns", 10.0, 1e5, false),
    (
        "max_threads_per_block",
        "largest block",
        32.0,
        65536.0,
        true,
    ),
    (
        "max_threads_per_sm",
        "resident threads per SM",
        32.0,
        65536.0,
        true,
    ),
    (
        "max_warps_per_sm",
        "resident warps per SM",
        1.0,
        4096.0,
        true,
    ),
    (
        "max_blocks_per_sm",
        "resident blocks per SM",
        1.0,
        4096.0,
        true,
    ),
    (
        "registers_per_sm",
        "registers per SM",
        1024.0,
        16.0 * 1048576.0,
        true,
    ),
    (
        "max_registers_per_thread",
        "registers per thread",
        16.0,
        65536.0,
        true,
    ),
    (
        "register_alloc_unit",
        "register allocation unit per warp",
        1.0,
        65536.0,
        true,
    ),
    (
        "shared_bytes_per_sm",
        "shared memory per SM",
        0.0,
        16.0 * 1048576.0,
        true,
    ),
    (
        "max_shared_bytes_per_block",
        "shared memory per block",
        0.0,
        16.0 * 1048576.0,
        true,
    ),
    (
        "shared_alloc_unit",
        "shared memory allocation unit",
        1.0,
        65536.0,
        true,
    ),
    (
        "reserved_shared_bytes_per_block",
        "reserved shared memory per block",
        0.0,
        1048576.0,
        true,
    ),
    (
        "launch_overhead_s",
        "launch overhead in seconds",
        0.0,
        1.0,
        false,
    ),
];

/// Figures a file may leave out, and the value they then take: (key, meaning, minimum, maximum,
/// integer?, default).
const OPTIONAL_FIGURES: [(&str, &str, f64, f64, bool, f64); 10] = [
    (
        "l1_conflict_ways",
        "L1 ways that lines spread over sets compete in, 0 for one fully associative LRU",
        0.0,
        4096.0,
        true,
        0.0,
    ),
    (
        "l2_fetch_bytes",
        "bytes L2 reads from DRAM on a read miss, 0 for one sector",
        0.0,
        1024.0,
        true,
        0.0,
    ),
    (
        "l1_shared_bytes",
        "bytes of the SM's L1 and shared memory together, 0 where not known",
        0.0,
        16777216.0,
        true,
        0.0,
    ),
    (
        "l2_store_weight",
        "the L2 room a written byte takes, in bytes of read data (1 where not measured)",
        1.0,
        8.0,
        false,
        1.0,
    ),
    (
        "l2_reuse_distance_scale",
        "the factor reuse distances take before l2_reuse_misses is read at them (1: none)",
        1.0,
        4.0,
        false,
        1.0,
    ),
    (
        "l1_queue_instructions",
        "warp instructions waiting in front of an SM's L1 at most, 0 where not known",
        0.0,
        4096.0,
        true,
        0.0,
    ),
    (
        "l2_latency_cycles",
        "cycles a load served by L2 takes, 0 where not known",
        0.0,
        100000.0,
        false,
        0.0,
    ),
    (
        "partial_sector_limit",
        "the sectors partly written at a time over the GPU above which L2 writes back early the pairs of stores steps apart of a kernel storing several arrays per point, and the sectors blocks beside each other write at one step (AoS records: at one fold point), 0 where not measured",
        0.0,
        1.0e9,
        false,
        0.0,
    ),
    (
        "neighbour_drift_share",
        "the share of a block's run between the pieces blocks beside each other write of one sector at one step (AoS records: at one fold point), 0 where not known",
        0.0,
        1.0,
        false,
        0.0,
    ),
    (
        "row_end_write_back_share",
        "the share of the row-end sectors blocks beside each other complete together at one step (tiles a sector wide or more) that L2 writes back early at the least, in a kernel storing several arrays it does not read, 0 where not measured",
        0.0,
        1.0,
        false,
        0.0,
    ),
];

/// The optional figure with the L1's measured set function: an array of line-address bit masks,
/// one per set-index bit (see [`SetIndex`]).
const SET_INDEX_KEY: &str = "l1_set_index_masks";

/// The optional figure with L2's measured misses by reuse distance: `[MiB, share]` pairs (see
/// [`MachineModel::l2_reuse_misses`]).
const REUSE_KEY: &str = "l2_reuse_misses";

/// The optional figure with the measured loss of partly written sectors: `[warps per block,
/// share]` pairs (see [`MachineModel::partial_store_loss`]).
const PARTIAL_STORE_KEY: &str = "partial_store_loss";

/// The optional figure with the same loss where the stores wait for all the loads, in the pairs of
/// [`PARTIAL_STORE_KEY`] (see [`MachineModel::partial_store_loss_after_loads`]).
const PARTIAL_AFTER_LOADS_KEY: &str = "partial_store_loss_after_loads";

/// The optional figure with the same loss where the stores also go out back to back, in the
/// pairs of [`PARTIAL_STORE_KEY`] (see [`MachineModel::partial_store_loss_back_to_back`]).
const PARTIAL_BACK_TO_BACK_KEY: &str = "partial_store_loss_back_to_back";

/// The optional figure with the measured warp interleaving seen from L1: `[L1 KiB, warps per SM,
/// lines per load, effective warps]` rows (see [`MachineModel::l1_interleave`]).
const INTERLEAVE_KEY: &str = "l1_interleave";

/// Keys the model once read and no longer does, with why: a file that still has one is told so.
const RETIRED_KEYS: [(&str, &str); 1] = [(
    "l1_interleave_one_block",
    "a block alone on its SM issues its first fold point with all its warps together, in \
     lockstep, where the table's probe measured warps in their steady state",
)];

/// The optional figure with the L1's ways at smaller L1 sizes: `[L1 KiB, ways]` pairs (see
/// [`MachineModel::l1_conflict_ways_by_l1`]).
const WAYS_BY_L1_KEY: &str = "l1_conflict_ways_by_l1";

/// The `[a, b, …]` elements (`N` each) of a non-empty array; `None` where `v` is anything else.
fn value_tuples<const N: usize>(v: &toml::Value) -> Option<Vec<[&toml::Value; N]>> {
    match v {
        toml::Value::Array(a) if !a.is_empty() => a
            .iter()
            .map(|t| {
                let t = t.as_array()?;
                (t.len() == N).then(|| std::array::from_fn(|i| &t[i]))
            })
            .collect(),
        _ => None,
    }
}

/// The optional table figure `key` (its value `v`): each row of `N` values read by `row` and the
/// rows together accepted by `accept`, else the error `absurd` saying what would be `valid`; like
/// every figure it needs a source (`sourced`). Empty where the file leaves it out.
fn table_figure<const N: usize, T>(
    v: Option<&Spanned<toml::Value>>,
    key: &str,
    valid: &str,
    row: impl Fn([&toml::Value; N]) -> Option<T>,
    accept: impl Fn(&[T]) -> bool,
    absurd: impl Fn(&str, &Spanned<toml::Value>, String) -> MachineError,
    sourced: impl Fn(&str, &Spanned<toml::Value>) -> Result<(), MachineError>,
) -> Result<Vec<T>, MachineError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let rows: Option<Vec<T>> =
        value_tuples(v.get_ref()).and_then(|t| t.into_iter().map(&row).collect());
    let rows = rows
        .filter(|r| accept(r))
        .ok_or_else(|| absurd(key, v, valid.into()))?;
    sourced(key, v)?;
    Ok(rows)
}

/// An integer or a float as a number.
fn as_number(x: &toml::Value) -> Option<f64> {
    x.as_float().or_else(|| x.as_integer().map(|i| i as f64))
}

/// Loads a preset by name (`h100-sxm`, …) or a machine file by path.
pub fn load_machine(name_or_path: &str) -> Result<MachineModel, MachineError> {
    if let Some(text) = preset_text(name_or_path) {
        return parse_machine(text, &format!("<preset {name_or_path}>"));
    }
    let path = Path::new(name_or_path);
    match std::fs::read_to_string(path) {
        Ok(text) => parse_machine(&text, name_or_path),
        Err(e) => Err(MachineError::Unknown {
            name: name_or_path.to_string(),
            presets: MachineModel::preset_names().join(", "),
            reason: e.to_string(),
        }),
    }
}

/// Parses the text of a machine file; `file` is used in messages.
pub fn parse_machine(text: &str, file: &str) -> Result<MachineModel, MachineError> {
    let loc = |offset: usize| {
        let (line, col) = line_col(text, offset);
        Location {
            file: file.to_string(),
            line,
            col,
        }
    };
    let table: BTreeMap<String, Spanned<toml::Value>> =
        toml::from_str(text).map_err(|e| SpecError::Syntax {
            loc: loc(e.span().map(|s| s.start).unwrap_or(0)),
            message: e.message().trim().replace('\n', "; "),
        })?;
    let known: BTreeSet<&str> = FIGURES
        .iter()
        .map(|f| f.0)
        .chain(OPTIONAL_FIGURES.iter().map(|f| f.0))
        .chain([
            "name",
            "description",
            "sources",
            SET_INDEX_KEY,
            PARTIAL_STORE_KEY,
            PARTIAL_AFTER_LOADS_KEY,
            PARTIAL_BACK_TO_BACK_KEY,
            REUSE_KEY,
            INTERLEAVE_KEY,
            WAYS_BY_L1_KEY,
        ])
        .collect();
    for (k, v) in &table {
        if let Some(&(key, why)) = RETIRED_KEYS.iter().find(|r| r.0 == k) {
            return Err(MachineError::Retired {
                loc: loc(v.span().start),
                key: key.into(),
                why,
            });
        }
        if !known.contains(k.as_str()) {
            return Err(MachineError::UnknownKey {
                loc: loc(v.span().start),
                key: k.clone(),
                known: known.iter().copied().collect::<Vec<_>>().join(", "),
            });
        }
    }
    // The value of `key` (written as `v`) is not plausible; `valid` says what would be.
    let absurd = |key: &str, v: &Spanned<toml::Value>, valid: String| MachineError::Absurd {
        loc: loc(v.span().start),
        key: key.into(),
        value: v.get_ref().to_string(),
        valid,
    };
    let string = |key: &'static str, what| -> Result<String, MachineError> {
        match table.get(key) {
            Some(v) => match v.get_ref() {
                toml::Value::String(s) => Ok(s.clone()),
                _ => Err(absurd(key, v, "a string".into())),
            },
            None => Err(MachineError::Missing {
                file: file.to_string(),
                key,
                what,
            }),
        }
    };
    let sources: BTreeMap<String, String> = match table.get("sources").map(|s| s.get_ref()) {
        Some(toml::Value::Table(t)) => t
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect(),
        _ => BTreeMap::new(),
    };
    // Every figure a file gives needs a source.
    let sourced = |key: &str, v: &Spanned<toml::Value>| -> Result<(), MachineError> {
        if sources.contains_key(key) {
            return Ok(());
        }
        Err(MachineError::MissingSource {
            loc: loc(v.span().start),
            key: key.into(),
        })
    };
    let mut values = BTreeMap::new();
    let required = FIGURES.map(|(k, w, lo, hi, int)| (k, w, lo, hi, int, None));
    let optional = OPTIONAL_FIGURES.map(|(k, w, lo, hi, int, d)| (k, w, lo, hi, int, Some(d)));
    for (key, what, min, max, integer, default) in required.into_iter().chain(optional) {
        let Some(v) = table.get(key) else {
            match default {
                Some(d) => {
                    values.insert(key, d);
                    continue;
                }
                None => {
                    return Err(MachineError::Missing {
                        file: file.to_string(),
                        key,
                        what,
                    })
                }
            }
        };
        let x = match v.get_ref() {
            toml::Value::Integer(i) => *i as f64,
            toml::Value::Float(f) if !integer => *f,
            _ => f64::NAN,
        };
        if !(x >= min && x <= max) {
            return Err(absurd(
                key,
                v,
                format!(
                    "{what}: {} from {min} to {max}",
                    if integer { "an integer" } else { "a number" }
                ),
            ));
        }
        sourced(key, v)?;
        values.insert(key, x);
    }
    let l1_set_index = match table.get(SET_INDEX_KEY) {
        None => SetIndex::default(),
        Some(v) => {
            let masks: Option<Vec<u64>> = match v.get_ref() {
                toml::Value::Array(a) => a
                    .iter()
                    .map(|x| x.as_integer().filter(|&i| i > 0).map(|i| i as u64))
                    .collect(),
                _ => None,
            };
            let masks = masks.ok_or_else(|| {
                absurd(SET_INDEX_KEY, v, "an array of positive integers (line-address bit masks, e.g. 0x4f601), one per set-index bit".into())
            })?;
            let index = SetIndex::new(&masks).map_err(|e| absurd(SET_INDEX_KEY, v, e))?;
            sourced(SET_INDEX_KEY, v)?;
            index
        }
    };
    // Both tables of partly written sectors lost: [warps per block, share] pairs.
    let share_table = |key: &str| {
        table_figure(
            table.get(key),
            key,
            "an array of [warps per block, share] pairs, warps rising from 1 to 32 and each \
             share from 0 to 1, e.g. [[1, 0.02], [8, 0.09], [32, 0.63]]",
            |[w, s]| {
                let w = w.as_integer().filter(|&w| (1..=32).contains(&w))?;
                let s = as_number(s).filter(|s| (0.0..=1.0).contains(s))?;
                Some((w as usize, s))
            },
            |p| p.windows(2).all(|w| w[0].0 < w[1].0),
            absurd,
            sourced,
        )
    };
    let partial_store_loss = share_table(PARTIAL_STORE_KEY)?;
    let partial_store_loss_after_loads = share_table(PARTIAL_AFTER_LOADS_KEY)?;
    let partial_store_loss_back_to_back = share_table(PARTIAL_BACK_TO_BACK_KEY)?;
    let l2_reuse_misses = table_figure(
        table.get(REUSE_KEY),
        REUSE_KEY,
        "an array of [MiB, share] pairs, at most 16, MiB rising from 0 up and each share from 0 \
         to 1, e.g. [[0, 0.0], [28, 0.08], [48, 0.97]]",
        |[d, s]| Some((as_number(d)?, as_number(s)?)),
        |p| crate::machine::reuse_curve_in_bytes(p).is_ok(),
        absurd,
        sourced,
    )?;
    // The interleave table: [L1 KiB, warps per SM, lines per load, effective warps] rows.
    let l1_interleave = table_figure(
        table.get(INTERLEAVE_KEY),
        INTERLEAVE_KEY,
        &format!(
            "an array of [L1 KiB, warps per SM, lines per load, effective warps] rows, rising \
             by L1, then warps, then lines, L1 from 1 to 16384 KiB, warps from 2 to 1024, \
             lines from 1 to 32 (at most {} distinct), effective warps above 0 and at most \
             the warps, e.g. [[28, 16, 8, 6.2], [224, 16, 8, 11.8], [224, 64, 8, 41.8]]",
            crate::footprint::INTERLEAVE_POINTS
        ),
        |[k, w, l, e]| {
            let k = k.as_integer().filter(|k| (1..=16384).contains(k))? as usize;
            let w = w.as_integer().filter(|w| (2..=1024).contains(w))? as usize;
            let l = as_number(l).filter(|l| (1.0..=32.0).contains(l))?;
            let e = as_number(e).filter(|&e| e > 0.0 && e <= w as f64)?;
            Some((k, w, l, e))
        },
        |t| {
            crate::machine::interleave_lines(t).len() <= crate::footprint::INTERLEAVE_POINTS
                && t.windows(2)
                    .all(|p| (p[0].0, p[0].1, p[0].2) < (p[1].0, p[1].1, p[1].2))
        },
        absurd,
        sourced,
    )?;
    let l1_conflict_ways_by_l1 = table_figure(
        table.get(WAYS_BY_L1_KEY),
        WAYS_BY_L1_KEY,
        "an array of [L1 KiB, ways] pairs, KiB rising from 1 to 16384 and ways from 0 to 4096, \
         e.g. [[28, 1], [60, 2], [92, 3]]",
        |[k, w]| {
            let k = k.as_integer().filter(|k| (1..=16384).contains(k))?;
            let w = w.as_integer().filter(|w| (0..=4096).contains(w))?;
            Some((k as usize, w as usize))
        },
        |p| p.windows(2).all(|w| w[0].0 < w[1].0),
        absurd,
        sourced,
    )?;
    let u = |k: &str| values[k] as usize;
    let f = |k: &str| values[k];
    let m = MachineModel {
        name: string("name", "short name")?,
        description: string("description", "device name")?,
        sms: u("sms"),
        clock_ghz: f("clock_ghz"),
        warp_size: u("warp_size"),
        fp32_flops_per_cycle_per_sm: f("fp32_flops_per_cycle_per_sm"),
        fp64_flops_per_cycle_per_sm: f("fp64_flops_per_cycle_per_sm"),
        l1_bytes: u("l1_bytes"),
        l1_conflict_ways: u("l1_conflict_ways"),
        l1_conflict_ways_by_l1,
        l1_set_index,
        l1_interleave,
        l1_shared_bytes: match u("l1_shared_bytes") {
            0 => None,
            b => Some(b),
        },
        l2_bytes: u("l2_bytes"),
        l2_effective_bytes: u("l2_effective_bytes"),
        l2_reuse_misses,
        l2_store_weight: f("l2_store_weight"),
        l2_reuse_distance_scale: f("l2_reuse_distance_scale"),
        sector_bytes: u("sector_bytes"),
        l2_fetch_bytes: match u("l2_fetch_bytes") {
            0 => u("sector_bytes"),
            b => b,
        },
        line_bytes: u("line_bytes"),
        partial_store_loss,
        partial_store_loss_after_loads,
        partial_store_loss_back_to_back,
        l1_wavefronts_per_cycle_per_sm: f("l1_wavefronts_per_cycle_per_sm"),
        l1_queue_instructions: u("l1_queue_instructions"),
        l2_latency_cycles: f("l2_latency_cycles"),
        partial_sector_limit: f("partial_sector_limit"),
        neighbour_drift_share: f("neighbour_drift_share"),
        row_end_write_back_share: f("row_end_write_back_share"),
        l2_bandwidth: f("l2_bandwidth"),
        dram_bandwidth: f("dram_bandwidth"),
        dram_latency_ns: f("dram_latency_ns"),
        max_threads_per_block: u("max_threads_per_block"),
        max_threads_per_sm: u("max_threads_per_sm"),
        max_warps_per_sm: u("max_warps_per_sm"),
        max_blocks_per_sm: u("max_blocks_per_sm"),
        registers_per_sm: u("registers_per_sm"),
        max_registers_per_thread: u("max_registers_per_thread"),
        register_alloc_unit: u("register_alloc_unit"),
        shared_bytes_per_sm: u("shared_bytes_per_sm"),
        max_shared_bytes_per_block: u("max_shared_bytes_per_block"),
        shared_alloc_unit: u("shared_alloc_unit"),
        reserved_shared_bytes_per_block: u("reserved_shared_bytes_per_block"),
        launch_overhead_s: f("launch_overhead_s"),
        sources,
    };
    // Relations between figures that no real GPU violates.
    let rel = |ok: bool, key: &str, valid: &str| -> Result<(), MachineError> {
        if ok {
            return Ok(());
        }
        Err(absurd(key, &table[key], valid.into()))
    };
    rel(
        m.l2_effective_bytes <= m.l2_bytes,
        "l2_effective_bytes",
        "at most l2_bytes",
    )?;
    rel(
        m.line_bytes.is_multiple_of(m.sector_bytes),
        "line_bytes",
        "a multiple of sector_bytes",
    )?;
    rel(
        m.can_fetch(m.l2_fetch_bytes),
        "l2_fetch_bytes",
        "sector_bytes times a power of two, at most line_bytes (e.g. 64 for 32-byte sectors)",
    )?;
    rel(
        m.max_threads_per_block <= m.max_threads_per_sm,
        "max_threads_per_block",
        "at most max_threads_per_sm",
    )?;
    rel(
        m.l1_shared_bytes
            .is_none_or(|b| b >= m.l1_bytes && b >= m.shared_bytes_per_sm),
        "l1_shared_bytes",
        "at least l1_bytes and shared_bytes_per_sm (the L1 and shared memory share it), or 0",
    )?;
    rel(
        m.max_shared_bytes_per_block <= m.shared_bytes_per_sm,
        "max_shared_bytes_per_block",
        "at most shared_bytes_per_sm",
    )?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` without the line of `key`'s source.
    fn without_source(text: &str, key: &str) -> String {
        let source = format!("{key} = \"");
        text.lines()
            .filter(|l| !l.starts_with(&source))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    /// Asserts that `text` is refused at line `at` of `m.toml` with a message that says `says`.
    fn assert_refused(text: &str, at: usize, says: &str, case: &str) {
        let e = parse_machine(text, "m.toml").unwrap_err();
        assert!(
            e.to_string().contains(says) && e.to_string().starts_with(&format!("m.toml:{at}:")),
            "{case}: {e}"
        );
    }

    /// Asserts that `text` is refused for `key`'s missing source.
    fn assert_needs_source(text: &str, key: &str) {
        let e = parse_machine(&without_source(text, key), "m.toml").unwrap_err();
        assert!(
            matches!(e, MachineError::MissingSource { .. }),
            "{key}: {e}"
        );
    }

    #[test]
    fn presets_load() {
        for name in MachineModel::preset_names() {
            let m = load_machine(name).unwrap();
            assert_eq!(m.name, name);
            assert!(m.l1_bandwidth() > m.l2_bandwidth, "{name}");
        }
        let h = load_machine("h100-sxm").unwrap();
        assert_eq!(h.sms, 132);
        assert!((h.peak_flops(8) - 128.0 * 132.0 * 1.98e9).abs() < 1.0);
        assert_eq!(h.l1_conflict_ways, 4);
        // A launch's L1 is what its shared-memory configuration leaves (0 where none is left).
        assert_eq!(h.l1_shared_bytes, Some(256 << 10));
        assert_eq!(h.l1_bytes_beside_shared(228 << 10), Some(28 << 10));
        assert_eq!(h.l1_bytes_beside_shared(32 << 10), Some(h.l1_bytes));
        assert_eq!(h.l1_bytes_beside_shared(256 << 10), None);
        // An optional figure left out takes its default (a fully associative L1).
        let text = preset_text("h100-sxm").unwrap();
        let without = text
            .lines()
            .filter(|l| !l.starts_with("l1_conflict_ways"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            parse_machine(&without, "m.toml").unwrap().l1_conflict_ways,
            0
        );
        // The measured set function: 512 sets, the same on both Hopper parts.
        assert_eq!(h.l1_set_index.sets(), 512);
        assert_eq!(load_machine("h200").unwrap().l1_set_index, h.l1_set_index);
        assert!(load_machine("v100").unwrap().l1_set_index.is_empty());
    }

    #[test]
    fn bad_set_index_masks_are_clear_errors() {
        let text = preset_text("h100-sxm").unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("l1_set_index_masks = ["))
            .unwrap();
        let at = format!(
            "m.toml:{}:",
            text.lines().position(|l| l == line).unwrap() + 1
        );
        let with = |masks: &str| {
            parse_machine(
                &text.replace(line, &format!("l1_set_index_masks = {masks}")),
                "m.toml",
            )
        };
        assert_eq!(with("[1, 2]").unwrap().l1_set_index.sets(), 4);
        for (bad, says) in [
            ("[1, 2, 3]", "XOR of earlier ones"),
            ("[1, 0]", "positive integers"),
            ("[1, -2]", "positive integers"),
            ("\"0x4f601\"", "positive integers"),
            ("[1.5]", "positive integers"),
        ] {
            let e = with(bad).unwrap_err();
            assert!(matches!(e, MachineError::Absurd { .. }), "{bad}: {e}");
            assert!(e.to_string().contains(says), "{bad}: {e}");
            assert!(e.to_string().starts_with(&at), "{bad}: {e}");
        }
        let many = format!(
            "[{}]",
            (0..17)
                .map(|b| (1u64 << b).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert!(with(&many).unwrap_err().to_string().contains("at most 16"));
        // Like every figure, it needs a source.
        assert_needs_source(text, "l1_set_index_masks");
    }

    #[test]
    fn bad_machines_are_clear_errors() {
        let text = preset_text("h100-sxm").unwrap();
        let e = load_machine("no-such-gpu").unwrap_err();
        assert!(e.to_string().contains("h100-sxm"), "{e}");
        let e = parse_machine(&text.replace("sms = 132\n", ""), "m.toml").unwrap_err();
        assert!(matches!(e, MachineError::Missing { key: "sms", .. }), "{e}");
        let e = parse_machine(&text.replace("sms = 132", "sms = -4"), "m.toml").unwrap_err();
        assert!(e.to_string().starts_with("m.toml:6:7"), "{e}");
        let e = parse_machine(
            &text.replace("dram_bandwidth = 2.9e12", "dram_bandwidth = 0.0"),
            "m.toml",
        )
        .unwrap_err();
        assert!(matches!(e, MachineError::Absurd { .. }), "{e}");
        let e = parse_machine(
            &text.replace(
                "l2_effective_bytes = 26214400",
                "l2_effective_bytes = 99999999",
            ),
            "m.toml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("at most l2_bytes"), "{e}");
        // The L1 and shared memory together hold each of them.
        let at = text
            .lines()
            .position(|l| l == "l1_shared_bytes = 262144")
            .unwrap()
            + 1;
        let t = text.replace("l1_shared_bytes = 262144", "l1_shared_bytes = 131072");
        assert_refused(&t, at, "at least l1_bytes", "l1_shared_bytes");
        let e = parse_machine(&text.replace("sms = \"datasheet\"\n", ""), "m.toml").unwrap_err();
        assert!(matches!(e, MachineError::MissingSource { .. }), "{e}");
        let e = parse_machine(
            &text.replace("l1_conflict_ways = 4", "l1_conflict_ways = 2.5"),
            "m.toml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("an integer from 0"), "{e}");
        let e = parse_machine(
            &text.replace("l2_fetch_bytes = 64", "l2_fetch_bytes = 96"),
            "m.toml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("times a power of two"), "{e}");
        // Without the figure, L2 fetches one sector.
        let m = parse_machine(
            &without_source(&text.replace("l2_fetch_bytes = 64\n", ""), "l2_fetch_bytes"),
            "m.toml",
        )
        .unwrap();
        assert_eq!(m.l2_fetch_bytes, 32);
        // The L1 queue and L2 latency of a waiting AoS warp: 0 without them (lockstep reuses),
        // a whole number of instructions.
        let bare = text
            .replace("l1_queue_instructions = 16\n", "")
            .replace("l2_latency_cycles = 270.0\n", "");
        let bare = without_source(
            &without_source(&bare, "l1_queue_instructions"),
            "l2_latency_cycles",
        );
        let m = parse_machine(&bare, "m.toml").unwrap();
        assert_eq!((m.l1_queue_instructions, m.l2_latency_cycles), (0, 0.0));
        let e = parse_machine(
            &text.replace("l1_queue_instructions = 16", "l1_queue_instructions = 1.5"),
            "m.toml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("l1_queue_instructions"), "{e}");
        assert!(e.to_string().contains("an integer from 0"), "{e}");
        // The L2 room of written data (1 to 8) and the scale of the reuse distances (1 to 4): 1
        // without the figure, with a source where given (from the preset as it was without
        // them, the step experiment file).
        let h100_step = include_str!("../../bench/counters/h100-step.toml");
        let plain = parse_machine(h100_step, "m.toml").unwrap();
        assert_eq!(
            (plain.l2_store_weight, plain.l2_reuse_distance_scale),
            (1.0, 1.0)
        );
        let weight: fn(&MachineModel) -> f64 = |m| m.l2_store_weight;
        let scale: fn(&MachineModel) -> f64 = |m| m.l2_reuse_distance_scale;
        for (key, range, get) in [
            ("l2_store_weight", "a number from 1 to 8", weight),
            ("l2_reuse_distance_scale", "a number from 1 to 4", scale),
        ] {
            let line = format!("{key} = 1.5");
            let given = h100_step
                .replace(
                    "sector_bytes = 32\n",
                    &format!("sector_bytes = 32\n{line}\n"),
                )
                .replace(
                    "sector_bytes = \"datasheet\"\n",
                    &format!("sector_bytes = \"datasheet\"\n{key} = \"measured\"\n"),
                );
            assert_eq!(get(&parse_machine(&given, "m.toml").unwrap()), 1.5);
            let at = given.lines().position(|l| l == line).unwrap() + 1;
            for bad in ["0.5", "9.0", "\"heavy\""] {
                let t = given.replace(&line, &format!("{key} = {bad}"));
                assert_refused(&t, at, range, bad);
            }
            assert_needs_source(&given, key);
        }
        // The limit on sectors partly written at a time (non-negative) and the drift between
        // neighbouring blocks' pieces (a share of the run): 0 without them, with a source.
        type Read = fn(&MachineModel) -> f64;
        let optional: [(&str, &str, f64, &[&str], Read); 3] = [
            (
                "partial_sector_limit",
                "42000.0",
                42000.0,
                &["-1.0", "\"many\""],
                |m| m.partial_sector_limit,
            ),
            (
                "neighbour_drift_share",
                "0.2",
                0.2,
                &["-0.1", "1.5", "\"long\""],
                |m| m.neighbour_drift_share,
            ),
            (
                "row_end_write_back_share",
                "0.3",
                0.3,
                &["-0.1", "1.5", "\"some\""],
                |m| m.row_end_write_back_share,
            ),
        ];
        for (key, given, value, bads, read) in optional {
            let line = format!("{key} = {given}");
            let bare = without_source(&text.replace(&format!("{line}\n"), ""), key);
            assert_eq!(read(&parse_machine(&bare, "m.toml").unwrap()), 0.0, "{key}");
            assert_eq!(
                read(&parse_machine(text, "m.toml").unwrap()),
                value,
                "{key}"
            );
            let at = text.lines().position(|l| l == line).unwrap() + 1;
            for bad in bads {
                let t = text.replace(&line, &format!("{key} = {bad}"));
                assert_refused(&t, at, key, bad);
            }
            assert_needs_source(text, key);
        }
        // The loss of partly written sectors (as copied, and with the stores after all the
        // loads): rising warps, shares from 0 to 1, with a source.
        for key in [
            "partial_store_loss",
            "partial_store_loss_after_loads",
            "partial_store_loss_back_to_back",
        ] {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{key} = [[")))
                .unwrap();
            let at = text.lines().position(|l| l == line).unwrap() + 1;
            for (bad, why) in [
                ("[[8, 0.1], [4, 0.2]]", "warps rising"),
                ("[[1, 1.5]]", "from 0 to 1"),
                ("[[0, 0.1]]", "from 1 to 32"),
                ("[[1, 0.1, 2]]", "pairs"),
                ("[]", "pairs"),
                ("0.3", "pairs"),
            ] {
                let t = text.replace(line, &format!("{key} = {bad}"));
                assert_refused(&t, at, why, bad);
            }
            assert_needs_source(text, key);
        }
        // The warps interleaved with a burst: rows rising by L1, warps and lines, with a source.
        {
            let key = "l1_interleave";
            let start = text.find(&format!("{key} = [\n")).unwrap();
            let block = &text[start..start + text[start..].find("\n]\n").unwrap() + 2];
            let at = text[..start].lines().count() + 1;
            for bad in [
            "[[224, 64, 8, 30], [224, 16, 8, 10]]",
            "[[224, 16, 8, 10], [224, 16, 4, 10]]",
            "[[224, 16, 8, 10], [28, 16, 8, 10]]",
            "[[224, 16, 8, 10], [224, 16, 8, 10]]",
            "[[0, 16, 8, 10]]",
            "[[224, 16, 0, 10]]",
            "[[224, 16, 8, 17]]",
            "[[224, 16, 8, 0]]",
            "[[224, 1, 8, 1]]",
            "[[16, 8, 10]]",
            "[]",
            "[[224, 16, 1, 9], [224, 16, 2, 9], [224, 16, 3, 9], [224, 16, 4, 9], [224, 16, 5, 9], [224, 16, 6, 9], [224, 16, 7, 9], [224, 16, 8, 9], [224, 16, 9, 9]]",
        ] {
            let t = text.replace(block, &format!("{key} = {bad}"));
            assert_refused(&t, at, "effective warps] rows", bad);
        }
            assert_needs_source(text, key);
        }
        // The ways of smaller L1s: [KiB, ways] pairs, KiB rising, with a source.
        let line = text
            .lines()
            .find(|l| l.starts_with("l1_conflict_ways_by_l1 = [["))
            .unwrap();
        let at = text.lines().position(|l| l == line).unwrap() + 1;
        for bad in [
            "[[60, 2], [28, 1]]",
            "[[28, 1], [28, 2]]",
            "[[0, 1]]",
            "[[28, -1]]",
            "[[28]]",
            "[]",
            "[[28, 1.5]]",
        ] {
            let t = text.replace(line, &format!("l1_conflict_ways_by_l1 = {bad}"));
            assert_refused(&t, at, "[L1 KiB, ways] pairs", bad);
        }
        assert_needs_source(text, "l1_conflict_ways_by_l1");
        // L2's misses by reuse distance (the h100-sxm preset carries them): MiB rising, shares
        // from 0 to 1, at most 16 points.
        let line = text
            .lines()
            .find(|l| l.starts_with("l2_reuse_misses = [["))
            .unwrap();
        let at = text.lines().position(|l| l == line).unwrap() + 1;
        for bad in [
            "[[10, 0.1], [5, 0.2]]",
            "[[0, 1.5]]",
            "[[-1, 0.5]]",
            "[[0, 0.1, 2]]",
            "[]",
            "[[0, \"a\"]]",
        ] {
            let t = text.replace(line, &format!("l2_reuse_misses = {bad}"));
            assert_refused(&t, at, "[MiB, share] pairs", bad);
        }
        // Both presets carry their measured curves; the steps they had are experiment files.
        for (preset, step) in [
            ("h200", include_str!("../../bench/counters/h200-step.toml")),
            ("h100-sxm", h100_step),
        ] {
            assert!(!load_machine(preset).unwrap().l2_reuse_curve().is_empty());
            assert!(parse_machine(step, "step.toml")
                .unwrap()
                .l2_reuse_curve()
                .is_empty());
        }
        let m = parse_machine(text, "m.toml").unwrap();
        assert_eq!(m.l2_reuse_misses.first(), Some(&(0.0, 0.0)));
        assert!(!m.l2_reuse_curve().is_empty());
        assert_eq!(m.l2_reuse_curve().share_at(64.0 * 1048576.0), Some(1.0));
        let e = parse_machine(&format!("smz = 3\n{text}"), "m.toml").unwrap_err();
        assert!(matches!(e, MachineError::UnknownKey { .. }), "{e}");
        // A retired key is named as such, with its line.
        let e = parse_machine(
            &format!("l1_interleave_one_block = [[248, 32, 32, 18.1]]\n{text}"),
            "m.toml",
        )
        .unwrap_err();
        assert!(matches!(e, MachineError::Retired { .. }), "{e}");
        assert!(e.to_string().starts_with("m.toml:1:"), "{e}");
        assert!(e.to_string().contains("no longer read"), "{e}");
        let e = parse_machine("sms = [", "m.toml").unwrap_err();
        assert!(e.to_string().starts_with("m.toml:1:"), "{e}");
    }
}

//! Nsight Compute (`ncu`): finding it, choosing the metrics it offers, and reading its CSV.
//!
//! The CSV comes from `ncu --import REPORT --csv --page details --print-units base`: one row per
//! kernel launch and metric (`"ID","Kernel Name",…,"Metric Name","Metric Unit","Metric Value"`).
//! The wide `--page raw` layout (one row per launch, one column per metric, a units row under the
//! header) is read too. Columns are found by their header names, never by position, and every
//! value is converted to base units (bytes, counts, seconds) whatever prefix ncu printed: without
//! `--print-units base`, ncu scales to `Kbyte`/`Mbyte`/`usecond` and groups digits with commas.

use super::CountersError;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bytes read from DRAM.
pub const DRAM_READ: &str = "dram__bytes_read.sum";
/// Bytes written to DRAM.
pub const DRAM_WRITE: &str = "dram__bytes_write.sum";
/// L2 sectors read by the L1/TEX units (L1 misses of loads), 32 B each.
pub const L2_READ_SECTORS: &str = "lts__t_sectors_srcunit_tex_op_read.sum";
/// L2 sectors written by the L1/TEX units (stores), 32 B each.
pub const L2_WRITE_SECTORS: &str = "lts__t_sectors_srcunit_tex_op_write.sum";
/// Sectors requested from L1 by global loads, 32 B each.
pub const L1_LOAD_SECTORS: &str = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
/// Registers per thread of the launch (a launch attribute: costs no replay pass), under its
/// metric name and under the name the details page gives it in the `LaunchStats` section.
pub const REGISTERS: &[&str] = &["launch__registers_per_thread", "Registers Per Thread"];
/// Shared-memory carve-out of the launch in bytes (L1 gets the rest of the SM's 256 KiB).
pub const SHARED_CONFIG: &[&str] = &[
    "launch__shared_mem_config_size",
    "Shared Memory Configuration Size",
];
/// Kernel duration.
pub const DURATION: &str = "gpu__time_duration.sum";

/// Data-stage wavefront metrics of global loads and stores, in order of preference; each entry
/// is summed. `mem_lg` counts local and global memory: the emitted kernels use no local memory
/// unless registers spill, which `launch__registers_per_thread` shows.
pub const WAVEFRONT_CANDIDATES: &[&[&str]] = &[
    &["l1tex__data_pipe_lsu_wavefronts_mem_lgds.sum"],
    &["l1tex__data_pipe_lsu_wavefronts_mem_lg.sum"],
    &[
        "l1tex__data_pipe_lsu_wavefronts_mem_lg_cmd_read.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_lg_cmd_write.sum",
    ],
    &["l1tex__data_pipe_lsu_wavefronts.sum"],
];

/// Cross-checks collected when the device offers them, for telling which model assumption
/// fails: L1 store sectors (should equal the L2 store sectors); L1 load sectors that missed
/// (should equal the L2 load sectors); warp-level load requests (instructions: fewer than the IR's
/// accesses when the compiler shares loads between a thread's folded points); local-memory
/// sectors (register spills); the wavefront split into reads and writes; L2 lookups that missed
/// for reads and writes, fills from DRAM, and sectors that crossed between the two L2 partitions
/// (`ltcfabric`); achieved occupancy.
pub const EXTRA_METRICS: &[&str] = &[
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_cmd_read.sum",
    "l1tex__data_pipe_lsu_wavefronts_cmd_write.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_lg_cmd_read.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_lg_cmd_write.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "lts__t_sectors_srcunit_tex_op_write_lookup_miss.sum",
    "lts__d_sectors_fill_device.sum",
    "lts__t_sectors_srcunit_ltcfabric.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
];

/// The metrics one sweep asks ncu for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MetricSet {
    /// Metrics summed into the L1 wavefront count (empty: not measured).
    pub wavefronts: Vec<String>,
    /// Every metric requested, in the order passed to `--metrics`.
    pub requested: Vec<String>,
    /// Metrics wanted but not offered by the device's ncu (left out of `requested`).
    pub unavailable: Vec<String>,
}

impl MetricSet {
    /// The metrics to request given the base names the device offers (`None`: unknown, so the
    /// first wavefront candidate and no extras are assumed).
    pub fn resolve(available: Option<&BTreeSet<String>>) -> MetricSet {
        // A listing without even the DRAM counters was not understood: trust nothing in it.
        let available = available.filter(|a| a.contains(base_name(DRAM_READ)));
        let has = |m: &str| available.is_none_or(|a| a.contains(base_name(m)));
        let wavefronts: Vec<String> = WAVEFRONT_CANDIDATES
            .iter()
            .find(|set| set.iter().all(|m| has(m)))
            .map(|set| set.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default();
        let mut requested: Vec<String> = [
            DRAM_READ,
            DRAM_WRITE,
            L2_READ_SECTORS,
            L2_WRITE_SECTORS,
            L1_LOAD_SECTORS,
            REGISTERS[0],
            SHARED_CONFIG[0],
            DURATION,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for m in wavefronts.iter() {
            if !requested.contains(m) {
                requested.push(m.clone());
            }
        }
        if available.is_some() {
            for m in EXTRA_METRICS {
                if has(m) && !requested.iter().any(|r| r == m) {
                    requested.push(m.to_string());
                }
            }
        }
        // ncu refuses the whole run for one unknown name: ask only for what is offered.
        let (requested, unavailable) = requested.into_iter().partition(|m| has(m));
        MetricSet {
            wavefronts,
            requested,
            unavailable,
        }
    }

    /// The wavefront metrics present in a profiled launch, by the same preference as
    /// [`MetricSet::resolve`] (for reading a CSV without knowing what was requested).
    pub fn wavefronts_in(metrics: &BTreeMap<String, f64>) -> Vec<String> {
        WAVEFRONT_CANDIDATES
            .iter()
            .find(|set| set.iter().all(|m| metrics.contains_key(*m)))
            .map(|set| set.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default()
    }
}

/// The first of `names` that `metrics` holds (a metric under its raw or its display name), with
/// the name it was found under.
pub fn lookup<'n>(metrics: &BTreeMap<String, f64>, names: &[&'n str]) -> Option<(&'n str, f64)> {
    names.iter().find_map(|n| metrics.get(*n).map(|v| (*n, *v)))
}

/// A metric's name without its roll-up suffix (`dram__bytes_read.sum` → `dram__bytes_read`).
pub fn base_name(metric: &str) -> &str {
    metric.split('.').next().unwrap_or(metric)
}

/// Finds the ncu executable: `explicit` if given (it must exist), else `$NCU`, else `ncu` on
/// `path` (the `PATH` variable's value), else the CUDA toolkit's default locations.
pub fn locate(explicit: Option<&Path>, path: Option<&str>) -> Result<PathBuf, CountersError> {
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(CountersError::NcuMissing {
                searched: p.display().to_string(),
            })
        };
    }
    let mut searched = Vec::new();
    if let Some(p) = std::env::var_os("NCU").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        searched.push(format!("$NCU={}", p.display()));
    }
    let dirs: Vec<PathBuf> = path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    let defaults = [
        PathBuf::from("/usr/local/cuda/bin"),
        PathBuf::from("/opt/nvidia/nsight-compute"),
    ];
    for d in dirs.iter().chain(defaults.iter()) {
        let c = d.join("ncu");
        if c.is_file() {
            return Ok(c);
        }
    }
    searched.push("ncu on PATH".into());
    searched.extend(defaults.iter().map(|d| d.join("ncu").display().to_string()));
    Err(CountersError::NcuMissing {
        searched: searched.join(", "),
    })
}

/// Base metric names in the output of `ncu --query-metrics`: the first word of each line that
/// looks like `unit__counter`.
pub fn parse_query_metrics(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| {
            w.contains("__")
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .map(str::to_string)
        .collect()
}

/// One profiled kernel launch: its metrics in base units.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProfiledLaunch {
    /// ncu's launch ID (launch order among profiled kernels).
    pub id: u64,
    /// The kernel function's name (without any parameter list).
    pub kernel: String,
    /// The device as ncu names it, where the CSV has the column.
    pub device: Option<String>,
    /// Metric values in base units (bytes, counts, seconds).
    pub metrics: BTreeMap<String, f64>,
    /// The base unit of each metric (`byte`, `sector`, `second`, … or empty).
    pub units: BTreeMap<String, String>,
}

/// Splits CSV text into records: quoted fields with commas and doubled quotes, CRLF or LF.
/// Lines outside quotes that start with `==` (ncu's own messages) are skipped.
pub fn csv_records(text: &str) -> Result<Vec<(usize, Vec<String>)>, CountersError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.starts_with("==") {
            continue;
        }
        let mut fields = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        let mut was_quoted = false;
        while let Some(c) = chars.next() {
            match (quoted, c) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    cur.push('"');
                    chars.next();
                }
                (true, '"') => quoted = false,
                (false, '"') if cur.trim().is_empty() && !was_quoted => {
                    cur.clear();
                    quoted = true;
                    was_quoted = true;
                }
                (false, ',') => {
                    fields.push(std::mem::take(&mut cur));
                    was_quoted = false;
                }
                (_, c) => cur.push(c),
            }
        }
        if quoted {
            return Err(CountersError::Csv {
                line: n + 1,
                message: "unterminated quoted field".into(),
            });
        }
        fields.push(cur);
        out.push((n + 1, fields));
    }
    Ok(out)
}

/// A number as ncu prints it: plain, with a decimal point, in exponent form, or with commas
/// grouping thousands (`1,234,567.5`). `None` for `n/a` and anything else.
pub fn parse_number(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if let Ok(v) = s.parse::<f64>() {
        return v.is_finite().then_some(v);
    }
    // Thousands separators: groups of exactly three digits after the first.
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (s, None),
    };
    let digits = int.strip_prefix('-').unwrap_or(int);
    let mut groups = digits.split(',');
    let first = groups.next()?;
    let ok = !first.is_empty()
        && first.len() <= 3
        && first.chars().all(|c| c.is_ascii_digit())
        && groups
            .clone()
            .all(|g| g.len() == 3 && g.chars().all(|c| c.is_ascii_digit()));
    if !ok || !int.contains(',') {
        return None;
    }
    let joined = format!(
        "{}{}",
        int.replace(',', ""),
        frac.map(|f| format!(".{f}")).unwrap_or_default()
    );
    joined.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The factor to base units and the base unit of one of ncu's units: `Kbyte` → (1e3, `byte`),
/// `usecond` → (1e-6, `second`), `Msector` → (1e6, `sector`), `register/thread` unchanged.
/// ncu's prefixes are decimal (a `Kbyte` is 1000 bytes); `KiB`-style binary ones are read too.
pub fn unit_scale(unit: &str) -> (f64, String) {
    let u = unit.trim();
    let time = [
        ("nsecond", 1e-9),
        ("usecond", 1e-6),
        ("msecond", 1e-3),
        ("second", 1.0),
        ("ns", 1e-9),
        ("us", 1e-6),
        ("ms", 1e-3),
    ];
    if let Some((_, f)) = time.iter().find(|(n, _)| *n == u) {
        return (*f, "second".into());
    }
    let short_bytes = [
        ("B", 1.0),
        ("KB", 1e3),
        ("MB", 1e6),
        ("GB", 1e9),
        ("TB", 1e12),
        ("KiB", 1024.0),
        ("MiB", 1048576.0),
        ("GiB", 1073741824.0),
    ];
    if let Some((_, f)) = short_bytes.iter().find(|(n, _)| *n == u) {
        return (*f, "byte".into());
    }
    let mut chars = u.chars();
    if let (Some(p), Some(next)) = (chars.next(), chars.clone().next()) {
        let factor = match p {
            'K' => Some(1e3),
            'M' => Some(1e6),
            'G' => Some(1e9),
            'T' => Some(1e12),
            _ => None,
        };
        if let Some(f) = factor {
            if next.is_ascii_lowercase() {
                return (f, chars.as_str().to_string());
            }
        }
    }
    (1.0, u.to_string())
}

/// Reads ncu's CSV (details or raw page) into one entry per profiled launch, sorted by ID; a row
/// whose field count differs from the header's is an error.
pub fn parse_csv(text: &str) -> Result<Vec<ProfiledLaunch>, CountersError> {
    let (launches, skipped) = parse_csv_lenient(text)?;
    match skipped.first() {
        Some(line) => Err(CountersError::Csv {
            line: *line,
            message: "the field count differs from the header's".into(),
        }),
        None => Ok(launches),
    }
}

/// As [`parse_csv`], but rows whose field count differs from the header's are left out and
/// their line numbers returned (rule results of ncu sections are not metrics).
pub fn parse_csv_lenient(text: &str) -> Result<(Vec<ProfiledLaunch>, Vec<usize>), CountersError> {
    let records = csv_records(text)?;
    let header_at = records
        .iter()
        .position(|(_, r)| r.iter().any(|f| f == "ID") && r.iter().any(|f| f == "Kernel Name"))
        .ok_or_else(|| CountersError::Csv {
            line: 0,
            message: "no header row with \"ID\" and \"Kernel Name\" (is this ncu --csv output?)"
                .into(),
        })?;
    let header = &records[header_at].1;
    let col = |name: &str| header.iter().position(|h| h == name);
    let id_col = col("ID").unwrap_or(0);
    let name_col = col("Kernel Name").unwrap_or(0);
    let device_col = col("Device");
    let rows = &records[header_at + 1..];
    let mut launches: BTreeMap<u64, ProfiledLaunch> = BTreeMap::new();
    let mut skipped = Vec::new();
    // The launch a row belongs to: `None` when its ID is not a number.
    let key = |line: usize,
               row: &[String]|
     -> Result<Option<(u64, String, Option<String>)>, CountersError> {
        if row.len() != header.len() {
            return Err(CountersError::Csv {
                line,
                message: format!("{} fields, the header has {}", row.len(), header.len()),
            });
        }
        let Some(id) = parse_number(&row[id_col]).filter(|v| *v >= 0.0 && v.fract() == 0.0) else {
            return Ok(None);
        };
        let kernel = row[name_col]
            .split('(')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        let device = device_col.map(|c| row[c].clone()).filter(|d| !d.is_empty());
        Ok(Some((id as u64, kernel, device)))
    };
    fn entry(
        launches: &mut BTreeMap<u64, ProfiledLaunch>,
        (id, kernel, device): (u64, String, Option<String>),
    ) -> &mut ProfiledLaunch {
        launches.entry(id).or_insert_with(|| ProfiledLaunch {
            id,
            kernel,
            device,
            metrics: BTreeMap::new(),
            units: BTreeMap::new(),
        })
    }
    if let (Some(mn), Some(mu), Some(mv)) =
        (col("Metric Name"), col("Metric Unit"), col("Metric Value"))
    {
        for (line, row) in rows {
            if row.len() != header.len() {
                skipped.push(*line);
                continue;
            }
            let Some(k) = key(*line, row)? else {
                return Err(CountersError::Csv {
                    line: *line,
                    message: format!("launch ID `{}` is not a number", row[id_col]),
                });
            };
            let l = entry(&mut launches, k);
            let (factor, unit) = unit_scale(&row[mu]);
            if let Some(v) = parse_number(&row[mv]) {
                l.metrics.insert(row[mn].clone(), v * factor);
                l.units.insert(row[mn].clone(), unit);
            }
        }
    } else {
        // Raw page: metric columns are those whose name looks like `unit__counter`; a row whose
        // ID is not a number is the units row.
        let metric_cols: Vec<usize> = (0..header.len())
            .filter(|c| header[*c].contains("__"))
            .collect();
        let mut units: Vec<String> = vec![String::new(); header.len()];
        for (line, row) in rows {
            if row.len() != header.len() {
                skipped.push(*line);
                continue;
            }
            if parse_number(&row[id_col]).is_none() {
                units = row.clone();
                continue;
            }
            let Some(k) = key(*line, row)? else { continue };
            let l = entry(&mut launches, k);
            for &c in &metric_cols {
                let (factor, unit) = unit_scale(&units[c]);
                if let Some(v) = parse_number(&row[c]) {
                    l.metrics.insert(header[c].clone(), v * factor);
                    l.units.insert(header[c].clone(), unit);
                }
            }
        }
    }
    if launches.is_empty() {
        return Err(match skipped.first() {
            Some(line) => CountersError::Csv {
                line: *line,
                message: "no row has the header's field count".into(),
            },
            None => CountersError::NoProfiledKernels,
        });
    }
    Ok((launches.into_values().collect(), skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_grouping_exponents_and_na() {
        assert_eq!(parse_number("134217728"), Some(134217728.0));
        assert_eq!(parse_number("134,217,728"), Some(134217728.0));
        assert_eq!(parse_number("1,234.5"), Some(1234.5));
        assert_eq!(parse_number("2.5e3"), Some(2500.0));
        assert_eq!(parse_number("n/a"), None);
        assert_eq!(parse_number("12,34"), None);
        assert_eq!(parse_number(""), None);
    }

    #[test]
    fn units_scale_to_base() {
        assert_eq!(unit_scale("Kbyte"), (1e3, "byte".into()));
        assert_eq!(unit_scale("Mbyte"), (1e6, "byte".into()));
        assert_eq!(unit_scale("byte"), (1.0, "byte".into()));
        assert_eq!(unit_scale("Msector"), (1e6, "sector".into()));
        assert_eq!(unit_scale("usecond"), (1e-6, "second".into()));
        assert_eq!(unit_scale("nsecond"), (1e-9, "second".into()));
        assert_eq!(unit_scale("MB"), (1e6, "byte".into()));
        assert_eq!(
            unit_scale("register/thread"),
            (1.0, "register/thread".into())
        );
        assert_eq!(unit_scale(""), (1.0, "".into()));
        // An upper-case word is not a prefix.
        assert_eq!(unit_scale("MHz").1, "MHz");
    }

    #[test]
    fn csv_quotes_commas_and_messages() {
        let r = csv_records("==PROF== Connected\n\"a\",\"b,c\",\"d\"\"e\"\n1,2,3\n").unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].1, vec!["a", "b,c", "d\"e"]);
        assert_eq!(r[1].1, vec!["1", "2", "3"]);
        assert!(csv_records("\"open\n").is_err());
    }

    #[test]
    fn details_page_in_scaled_units() {
        // What ncu prints without --print-units base: scaled units and grouped digits.
        let csv = "\"ID\",\"Kernel Name\",\"Device\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
            \"0\",\"ssk_32x4x1_1x1x1\",\"NVIDIA H200\",\"dram__bytes_read.sum\",\"Mbyte\",\"134.22\"\n\
            \"0\",\"ssk_32x4x1_1x1x1\",\"NVIDIA H200\",\"gpu__time_duration.sum\",\"usecond\",\"1,024.50\"\n\
            \"1\",\"ssflush(float const*)\",\"NVIDIA H200\",\"dram__bytes_write.sum\",\"Kbyte\",\"3,072\"\n";
        let l = parse_csv(csv).unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].kernel, "ssk_32x4x1_1x1x1");
        assert!((l[0].metrics["dram__bytes_read.sum"] - 134.22e6).abs() < 1e-3);
        assert!((l[0].metrics["gpu__time_duration.sum"] - 1024.5e-6).abs() < 1e-12);
        assert_eq!(l[1].kernel, "ssflush");
        assert_eq!(l[1].metrics["dram__bytes_write.sum"], 3.072e6);
        assert_eq!(l[1].device.as_deref(), Some("NVIDIA H200"));
    }

    #[test]
    fn raw_page_with_units_row() {
        let csv = "\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\",\"lts__t_sectors_srcunit_tex_op_read.sum\"\n\
            \"\",\"\",\"Kbyte\",\"sector\"\n\
            \"3\",\"ssk_64x2x1_1x1x2\",\"2,048\",\"100\"\n";
        let l = parse_csv(csv).unwrap();
        assert_eq!(l[0].id, 3);
        assert_eq!(l[0].metrics["dram__bytes_read.sum"], 2.048e6);
        assert_eq!(
            l[0].units["lts__t_sectors_srcunit_tex_op_read.sum"],
            "sector"
        );
    }

    #[test]
    fn bad_csv_is_an_error_not_a_panic() {
        assert!(matches!(
            parse_csv("hello\n"),
            Err(CountersError::Csv { .. })
        ));
        let short = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\"0\",\"k\"\n";
        assert!(matches!(
            parse_csv(short),
            Err(CountersError::Csv { line: 2, .. })
        ));
        let empty = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
        assert!(matches!(
            parse_csv(empty),
            Err(CountersError::NoProfiledKernels)
        ));
    }

    #[test]
    fn metric_resolution_prefers_total_wavefronts() {
        let avail: BTreeSet<String> = [
            "dram__bytes_read",
            "dram__bytes_write",
            "l1tex__data_pipe_lsu_wavefronts_mem_lg_cmd_read",
            "l1tex__data_pipe_lsu_wavefronts_mem_lg_cmd_write",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let m = MetricSet::resolve(Some(&avail));
        assert_eq!(m.wavefronts.len(), 2);
        assert!(m.requested.contains(&DRAM_WRITE.to_string()));
        // Offered names only; the rest is listed as unavailable.
        assert!(!m.requested.contains(&L2_READ_SECTORS.to_string()));
        assert!(m.unavailable.contains(&L2_READ_SECTORS.to_string()));
        let unknown = MetricSet::resolve(None);
        assert_eq!(unknown.wavefronts, vec![WAVEFRONT_CANDIDATES[0][0]]);
        assert!(unknown.unavailable.is_empty() && unknown.requested.len() == 9);
        // A listing without the DRAM counters is not trusted.
        let odd: BTreeSet<String> = ["foo__bar".to_string()].into_iter().collect();
        assert_eq!(MetricSet::resolve(Some(&odd)), unknown);
        let q = parse_query_metrics(
            "Device NVIDIA H200\nMetric Name    Metric Description\ndram__bytes    # of bytes\n  lts__t_sectors  sectors\n",
        );
        assert!(q.contains("dram__bytes") && q.contains("lts__t_sectors"));
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn missing_ncu_names_what_was_searched() {
        let e = locate(Some(Path::new("/nonexistent/ncu")), None).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ncu"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().display().to_string();
        // Only meaningful where no toolkit is installed in the default places.
        if !Path::new("/usr/local/cuda/bin/ncu").exists()
            && !Path::new("/opt/nvidia/nsight-compute/ncu").exists()
            && std::env::var_os("NCU").is_none()
        {
            assert!(matches!(
                locate(None, Some(&path)),
                Err(CountersError::NcuMissing { .. })
            ));
        }
        std::fs::write(dir.path().join("ncu"), "#!/bin/sh\n").unwrap();
        if std::env::var_os("NCU").is_none() {
            assert_eq!(locate(None, Some(&path)).unwrap(), dir.path().join("ncu"));
        }
    }
}

//! The JSON-lines cache of measurements: one line per configuration, appended and flushed as it
//! is measured, so that an interrupted sweep resumes where it stopped.
//!
//! A line is written with one `write_all` of the complete line and its newline, then flushed and
//! synced. An interruption can therefore leave at most one incomplete line, at the end, without
//! its newline: opening the cache drops it (truncating the file to the last complete line), and
//! that configuration is measured again. A complete line that does not parse is corruption from
//! elsewhere and is reported, never silently dropped.

use crate::config::LaunchConfig;
use crate::ir::{Domain, Dtype};
use crate::runtime::measure::{RunResult, Status, Verification};
use crate::runtime::BackendKind;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What identifies a measurement: a configuration of one kernel, dtype and domain on one device.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Key {
    /// Kernel name.
    pub kernel: String,
    /// Element type.
    pub dtype: Dtype,
    /// The domain.
    pub domain: Domain,
    /// The backend.
    pub backend: BackendKind,
    /// Device name.
    pub device: String,
    /// The configuration.
    pub config: LaunchConfig,
}

/// One measured configuration, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// What was measured.
    #[serde(flatten)]
    pub key: Key,
    /// Outcome.
    pub status: Status,
    /// The reason of a refusal or failure.
    pub error: Option<String>,
    /// Device time of each timed launch, seconds.
    pub times: Vec<f64>,
    /// Median launch time, seconds.
    pub median_s: Option<f64>,
    /// Fastest launch, seconds.
    pub min_s: Option<f64>,
    /// Slowest launch, seconds.
    pub max_s: Option<f64>,
    /// The comparison with the CPU reference.
    pub verification: Option<Verification>,
    /// When it was measured (UTC, RFC 3339).
    pub date: String,
}

impl Record {
    /// A record from a measurement.
    pub fn new(key: Key, r: &RunResult, date: String) -> Record {
        Record {
            key,
            status: r.status,
            error: r.error.clone(),
            times: r.times.clone(),
            median_s: r.median_s,
            min_s: r.min_s,
            max_s: r.max_s,
            verification: r.verification.clone(),
            date,
        }
    }

    /// The median time of a configuration that ran and was verified.
    pub fn passed_median(&self) -> Option<f64> {
        match self.status {
            Status::Passed if self.verification.as_ref().is_some_and(|v| v.passed) => self.median_s,
            _ => None,
        }
    }
}

/// Why the cache cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Reading, truncating or appending failed.
    #[error("cache {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A complete line that is not a record.
    #[error("cache {}, line {line}: not a measurement record ({message}); remove the line or the file to measure again", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The parser's message.
        message: String,
    },
}

/// An open cache: the records read so far and the file to append to.
#[derive(Debug)]
pub struct Cache {
    path: PathBuf,
    file: File,
    records: Vec<Record>,
    dropped_bytes: usize,
}

impl Cache {
    /// Opens (creating if needed) the cache at `path`, dropping an incomplete last line.
    pub fn open(path: &Path) -> Result<Cache, CacheError> {
        let io = |source| CacheError::Io {
            path: path.to_path_buf(),
            source,
        };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(e)),
        };
        // Everything after the last newline is an interrupted write.
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let mut records = Vec::new();
        for (i, line) in bytes[..complete].split(|b| *b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let r: Record = serde_json::from_slice(line).map_err(|e| CacheError::Corrupt {
                path: path.to_path_buf(),
                line: i + 1,
                message: e.to_string(),
            })?;
            records.push(r);
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        let dropped_bytes = bytes.len() - complete;
        if dropped_bytes > 0 {
            file.set_len(complete as u64).map_err(io)?;
        }
        Ok(Cache {
            path: path.to_path_buf(),
            file,
            records,
            dropped_bytes,
        })
    }

    /// Bytes of an incomplete last line dropped when opening.
    pub fn dropped_bytes(&self) -> usize {
        self.dropped_bytes
    }

    /// All records, in file order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The latest record for `key`.
    pub fn get(&self, key: &Key) -> Option<&Record> {
        self.records.iter().rev().find(|r| &r.key == key)
    }

    /// Appends one record as one line, flushed and synced before returning.
    pub fn append(&mut self, r: Record) -> Result<(), CacheError> {
        let io = |source| CacheError::Io {
            path: self.path.clone(),
            source,
        };
        let mut line = serde_json::to_vec(&r).map_err(|e| io(std::io::Error::other(e)))?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(io)?;
        self.file.flush().map_err(io)?;
        self.file.sync_data().map_err(io)?;
        self.records.push(r);
        Ok(())
    }
}

/// The current time, UTC, as RFC 3339 (`2026-11-21T06:15:00Z`).
pub fn utc_now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Seconds since 1970 as an RFC 3339 UTC date.
pub fn utc_from_unix(secs: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    humantime::format_rfc3339_seconds(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(bx: usize, median: f64) -> Record {
        Record {
            key: Key {
                kernel: "star3d_r1".into(),
                dtype: Dtype::F64,
                domain: Domain::new3(8, 8, 8),
                backend: BackendKind::OpenCl,
                device: "dev".into(),
                config: LaunchConfig::new([bx, 1, 1], [1, 1, 1]),
            },
            status: Status::Passed,
            error: None,
            times: vec![median; 10],
            median_s: Some(median),
            min_s: Some(median),
            max_s: Some(median),
            verification: None,
            date: utc_from_unix(0),
        }
    }

    #[test]
    fn dates() {
        assert_eq!(utc_from_unix(0), "1970-01-01T00:00:00Z");
        // 2000-02-29 12:34:56 UTC = 951827696 (leap day of a century leap year).
        assert_eq!(utc_from_unix(951_827_696), "2000-02-29T12:34:56Z");
        // 2026-11-21 06:15:00 UTC = 1795241700.
        assert_eq!(utc_from_unix(1_795_241_700), "2026-11-21T06:15:00Z");
    }

    #[test]
    fn appends_reopens_and_drops_a_torn_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        let mut c = Cache::open(&p).unwrap();
        assert!(c.records().is_empty());
        c.append(record(32, 1e-3)).unwrap();
        c.append(record(64, 2e-3)).unwrap();
        drop(c);
        // Simulate an interruption in the middle of the third line.
        let full = std::fs::read(&p).unwrap();
        let mut torn = full.clone();
        let third = serde_json::to_vec(&record(128, 3e-3)).unwrap();
        torn.extend_from_slice(&third[..third.len() / 2]);
        std::fs::write(&p, &torn).unwrap();
        let mut c = Cache::open(&p).unwrap();
        assert_eq!(c.records().len(), 2);
        assert_eq!(c.dropped_bytes(), third.len() / 2);
        assert_eq!(std::fs::read(&p).unwrap(), full);
        assert_eq!(c.get(&record(64, 0.0).key).unwrap().median_s, Some(2e-3));
        assert!(c.get(&record(128, 0.0).key).is_none());
        // Appending after the repair gives well-formed lines again.
        c.append(record(128, 3e-3)).unwrap();
        drop(c);
        let c = Cache::open(&p).unwrap();
        assert_eq!(c.records().len(), 3);
        assert_eq!(c.dropped_bytes(), 0);
        // Exact float round trip.
        assert_eq!(c.records()[2].times[0], 3e-3);
    }

    #[test]
    fn a_corrupt_complete_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        let good = serde_json::to_string(&record(32, 1e-3)).unwrap();
        std::fs::write(&p, format!("{good}\nnot json\n{good}\n")).unwrap();
        let e = Cache::open(&p).unwrap_err();
        assert!(matches!(e, CacheError::Corrupt { line: 2, .. }), "{e}");
        assert!(e.to_string().contains("line 2"));
    }

    #[test]
    fn only_verified_runs_count() {
        let mut r = record(32, 1e-3);
        assert_eq!(r.passed_median(), None, "unverified");
        r.verification = Some(Verification {
            passed: true,
            checked: 1,
            mismatches: 0,
            max_error: 0.0,
            tolerance: 1e-10,
            first_mismatch: None,
            sampled_rows: None,
        });
        assert_eq!(r.passed_median(), Some(1e-3));
        r.status = Status::Wrong;
        assert_eq!(r.passed_median(), None);
    }
}

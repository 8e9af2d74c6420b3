//! Which configurations a counter sweep profiles: the model's top K, a seeded sample of the legal
//! space, or a list from a file.

use super::CountersError;
use crate::config::{check_legal, enumerate, LaunchConfig};
use crate::ir::{Domain, Kernel};
use crate::machine::MachineModel;
use crate::model::estimate_registers;
use crate::rank::{rank, Pruning, RankOptions};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::path::{Path, PathBuf};

/// One `--configs` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSpec {
    /// The model's best K.
    Top(usize),
    /// N configurations drawn (seeded) from the legal space.
    Sample(usize),
    /// A file listing configurations.
    File(PathBuf),
}

impl std::str::FromStr for ConfigSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<ConfigSpec, String> {
        let count = |v: &str, what: &str| -> Result<usize, String> {
            v.trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("`{s}`: {what} needs a positive count, e.g. {what}:40"))
        };
        if let Some(v) = s.strip_prefix("top:") {
            Ok(ConfigSpec::Top(count(v, "top")?))
        } else if let Some(v) = s.strip_prefix("sample:") {
            Ok(ConfigSpec::Sample(count(v, "sample")?))
        } else if s.is_empty() {
            Err("give top:K, sample:N or a file of configurations".into())
        } else {
            Ok(ConfigSpec::File(PathBuf::from(s)))
        }
    }
}

/// Why the twin cannot launch `c` for `domain` on `machine`, if it cannot: the configuration's
/// own rules, the space's legality rules and CUDA's grid limit in y and z.
fn launchable(
    c: &LaunchConfig,
    kernel: &Kernel,
    domain: &Domain,
    machine: &MachineModel,
) -> Result<(), String> {
    c.check(kernel.dims).map_err(|e| e.to_string())?;
    check_legal(
        c,
        domain,
        machine.max_threads_per_block,
        RankOptions::default().max_extent,
    )
    .map_err(|e| format!("{e}; leave it out or use a larger domain"))?;
    let grid = c.grid(domain);
    if grid[1..].iter().any(|g| *g > 65535) {
        return Err(format!(
            "a grid of {}×{}×{} blocks exceeds CUDA's 65535 blocks in y and z",
            grid[0], grid[1], grid[2]
        ));
    }
    Ok(())
}

/// Whether `c` can run on `machine` for `domain`: [`launchable`], and a non-zero occupancy with
/// the model's register estimate.
fn runnable(c: &LaunchConfig, kernel: &Kernel, domain: &Domain, machine: &MachineModel) -> bool {
    launchable(c, kernel, domain, machine).is_ok()
        && machine
            .occupancy(c.threads(), estimate_registers(kernel, c), 0)
            .blocks_per_sm
            > 0
}

/// The configurations of all `specs`, each once, in the order they first appear.
pub fn select_configs(
    specs: &[ConfigSpec],
    kernel: &Kernel,
    domain: &Domain,
    machine: &MachineModel,
    seed: u64,
) -> Result<Vec<LaunchConfig>, CountersError> {
    let mut out: Vec<LaunchConfig> = Vec::new();
    let push = |c: LaunchConfig, out: &mut Vec<LaunchConfig>| {
        if !out.contains(&c) {
            out.push(c);
        }
    };
    for spec in specs {
        match spec {
            ConfigSpec::Top(k) => {
                // The top K only: pruning keeps them exact and spares the rest.
                let opts = RankOptions {
                    pruning: Some(Pruning {
                        margin: 1.0,
                        keep: *k,
                    }),
                    ..RankOptions::default()
                };
                let ranking = rank(kernel, domain, machine, &opts)?;
                for r in ranking.ranked.iter().take(*k) {
                    push(r.config, &mut out);
                }
            }
            ConfigSpec::Sample(n) => {
                let mut legal: Vec<LaunchConfig> = enumerate(domain, &RankOptions::default().space)
                    .into_iter()
                    .filter(|c| runnable(c, kernel, domain, machine))
                    .collect();
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
                legal.shuffle(&mut rng);
                legal.truncate(*n);
                legal.sort();
                for c in legal {
                    push(c, &mut out);
                }
            }
            ConfigSpec::File(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| CountersError::Io {
                    path: p.clone(),
                    source,
                })?;
                for (place, c) in config_list_places(&text, p)? {
                    // A listed configuration is run as it is, without the occupancy estimate
                    // (its registers decide): one the twin cannot launch is an error, not left
                    // out.
                    launchable(&c, kernel, domain, machine).map_err(|e| {
                        CountersError::BadConfigSpec(format!("{}, {place}: {c}: {e}", p.display()))
                    })?;
                    push(c, &mut out);
                }
            }
        }
    }
    Ok(out)
}

/// Reads a list of configurations: a JSON array of `{"block": [x,y,z], "fold": [x,y,z]}` (as
/// `rank --json` writes them), or text with one per line, `BX,BY,BZ [FX,FY,FZ]` or
/// `block 32x4x2 fold 1x1x2` (as printed); `#` starts a comment.
pub fn parse_config_list(text: &str, file: &Path) -> Result<Vec<LaunchConfig>, CountersError> {
    Ok(config_list_places(text, file)?
        .into_iter()
        .map(|(_, c)| c)
        .collect())
}

/// [`parse_config_list`] with where each configuration stands: `line N` of a text list, `entry
/// N` of a JSON array.
fn config_list_places(
    text: &str,
    file: &Path,
) -> Result<Vec<(String, LaunchConfig)>, CountersError> {
    let bad = |line: usize, msg: String| {
        CountersError::BadConfigSpec(format!("{}, line {line}: {msg}", file.display()))
    };
    if text.trim_start().starts_with('[') {
        return serde_json::from_str::<Vec<LaunchConfig>>(text)
            .map(|v| {
                v.into_iter()
                    .enumerate()
                    .map(|(i, c)| (format!("entry {}", i + 1), c))
                    .collect()
            })
            .map_err(|e| bad(e.line(), e.to_string()));
    }
    let three = |s: &str, line: usize| -> Result<[usize; 3], CountersError> {
        let v: Vec<usize> = s
            .split([',', 'x'])
            .map(|p| p.trim().parse::<usize>().ok().filter(|n| *n > 0))
            .collect::<Option<_>>()
            .ok_or_else(|| bad(line, format!("`{s}` is not a list of positive sizes")))?;
        match *v.as_slice() {
            [x, y] => Ok([x, y, 1]),
            [x, y, z] => Ok([x, y, z]),
            _ => Err(bad(line, format!("`{s}` needs 2 or 3 sizes"))),
        }
    };
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line
            .split_whitespace()
            .filter(|w| *w != "block" && *w != "fold")
            .collect();
        let c = match words.as_slice() {
            [b] => LaunchConfig::new(three(b, n + 1)?, [1, 1, 1]),
            [b, f] => LaunchConfig::new(three(b, n + 1)?, three(f, n + 1)?),
            _ => {
                return Err(bad(
                    n + 1,
                    format!("`{line}`: expected `BX,BY,BZ [FX,FY,FZ]`"),
                ))
            }
        };
        out.push((format!("line {}", n + 1), c));
    }
    if out.is_empty() {
        return Err(bad(0, "no configuration listed".into()));
    }
    Ok(out)
}

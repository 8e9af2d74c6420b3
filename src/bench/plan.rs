//! Which configurations a sweep measures, and in which order.

use crate::config::{enumerate, LaunchConfig, SpaceOptions};
use crate::ir::Domain;
use crate::rank::Ranked;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// The common default a user picks without a tuner: block (8,8,4) in 3D, (16,16,1) in 2D,
/// (256,1,1) in 1D, no folding (the baseline of `speedup_over_default`).
pub fn default_config(dims: usize) -> LaunchConfig {
    let block = match dims {
        3 => [8, 8, 4],
        2 => [16, 16, 1],
        _ => [256, 1, 1],
    };
    LaunchConfig::new(block, [1, 1, 1])
}

/// The space a sweep draws from: the ranking's enumeration, optionally narrowed (a documented
/// reduced space where measuring every configuration of the full one does not fit the time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpaceSpec {
    /// The enumeration (thread counts, z extent, folding factors).
    pub options: SpaceOptions,
    /// Smallest block extent in x.
    pub min_bx: usize,
    /// Whether folding is tried in x, y, z (a dimension without folding keeps factor 1).
    pub fold_dims: [bool; 3],
}

impl Default for SpaceSpec {
    fn default() -> SpaceSpec {
        SpaceSpec {
            options: SpaceOptions::default(),
            min_bx: 1,
            fold_dims: [true; 3],
        }
    }
}

impl SpaceSpec {
    /// The configurations of the space for `domain`, before legality checks.
    pub fn configs(&self, domain: &Domain) -> Vec<LaunchConfig> {
        enumerate(domain, &self.options)
            .into_iter()
            .filter(|c| c.block[0] >= self.min_bx)
            .filter(|c| (0..3).all(|d| self.fold_dims[d] || c.fold[d] == 1))
            .collect()
    }

    /// Whether this is the ranking's full default space.
    pub fn is_full(&self) -> bool {
        *self == SpaceSpec::default()
    }
}

/// Which configurations to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Selection {
    /// Every legal configuration of the space (the oracle).
    All {
        /// The first `top` by predicted rank are measured first (a partial sweep still has them).
        top: usize,
        /// Seed of the order of the rest.
        seed: u64,
    },
    /// The model's top `top` plus one random configuration from each of `sample` strata of the
    /// remaining predicted ranks.
    Sample {
        /// Top configurations by predicted rank.
        top: usize,
        /// Strata (one configuration each).
        sample: usize,
        /// Seed of the draw.
        seed: u64,
    },
}

/// Why a configuration is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Among the model's top K.
    Top,
    /// The default configuration (baseline).
    Default,
    /// Drawn from a stratum of predicted ranks.
    Sample,
    /// Part of the exhaustive sweep.
    All,
}

/// One configuration to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    /// The configuration.
    pub config: LaunchConfig,
    /// Its predicted rank in the space (`None` for a default outside the space).
    pub rank: Option<usize>,
    /// Why it is measured.
    pub reason: Reason,
}

/// The candidates in measurement order: the top K by predicted rank, then the default, then the
/// rest (`All`: every other legal configuration, in a seeded random order, so that a partial
/// sweep is a random sample; `Sample`: one per stratum, strata in a seeded random order).
/// `ranked` is the ranking of the space, best first; `default` is added even when it lies
/// outside the space.
pub fn select(ranked: &[Ranked], selection: Selection, default: LaunchConfig) -> Vec<Candidate> {
    let (top, seed) = match selection {
        Selection::All { top, seed } | Selection::Sample { top, seed, .. } => (top, seed),
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let top = top.min(ranked.len());
    let mut out: Vec<Candidate> = ranked[..top]
        .iter()
        .map(|r| Candidate {
            config: r.config,
            rank: Some(r.rank),
            reason: Reason::Top,
        })
        .collect();
    if !out.iter().any(|c| c.config == default) {
        out.push(Candidate {
            config: default,
            rank: ranked.iter().find(|r| r.config == default).map(|r| r.rank),
            reason: Reason::Default,
        });
    }
    let rest: Vec<&Ranked> = ranked[top..]
        .iter()
        .filter(|r| r.config != default)
        .collect();
    let mut more: Vec<Candidate> = match selection {
        Selection::All { .. } => rest
            .iter()
            .map(|r| Candidate {
                config: r.config,
                rank: Some(r.rank),
                reason: Reason::All,
            })
            .collect(),
        Selection::Sample { sample, .. } => {
            let n = sample.min(rest.len());
            (0..n)
                .map(|i| {
                    // Stratum i covers positions [i·len/n, (i+1)·len/n) of the remaining ranks.
                    let (a, b) = (i * rest.len() / n, (i + 1) * rest.len() / n);
                    let r = rest[rng.gen_range(a..b)];
                    Candidate {
                        config: r.config,
                        rank: Some(r.rank),
                        reason: Reason::Sample,
                    }
                })
                .collect()
        }
    };
    more.shuffle(&mut rng);
    out.extend(more);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Prediction;

    fn ranked(n: usize) -> Vec<Ranked> {
        let p = Prediction::dram_bound(1.0);
        (0..n)
            .map(|i| Ranked {
                rank: i + 1,
                config: LaunchConfig::new([32 * (i + 1), 1, 1], [1, 1, 1]),
                prediction: p.clone(),
            })
            .collect()
    }

    #[test]
    fn defaults_per_dimension() {
        assert_eq!(default_config(3).block, [8, 8, 4]);
        assert_eq!(default_config(2).block, [16, 16, 1]);
        assert_eq!(default_config(1).block, [256, 1, 1]);
        assert_eq!(default_config(3).fold, [1, 1, 1]);
    }

    #[test]
    fn stratified_sample_draws_one_per_stratum() {
        let r = ranked(103);
        let default = LaunchConfig::new([8, 8, 4], [1; 3]);
        let sel = Selection::Sample {
            top: 3,
            sample: 10,
            seed: 5,
        };
        let c = select(&r, sel, default);
        assert_eq!(c.len(), 3 + 1 + 10);
        assert_eq!(
            c[..3].iter().map(|c| c.rank).collect::<Vec<_>>(),
            vec![Some(1), Some(2), Some(3)]
        );
        assert_eq!(c[3].reason, Reason::Default);
        assert_eq!(c[3].rank, None);
        // 100 remaining ranks (4..=103) in 10 strata of 10: exactly one draw in each.
        let mut strata: Vec<usize> = c[4..].iter().map(|c| (c.rank.unwrap() - 4) / 10).collect();
        strata.sort_unstable();
        assert_eq!(strata, (0..10).collect::<Vec<_>>());
        // Seeded: the same seed gives the same draw, another seed (almost surely) another.
        assert_eq!(select(&r, sel, default), c);
        let other = Selection::Sample {
            top: 3,
            sample: 10,
            seed: 6,
        };
        assert_ne!(select(&r, other, default), c);
        // More strata than configurations: every remaining one, once.
        let all = select(
            &r[..8],
            Selection::Sample {
                top: 3,
                sample: 50,
                seed: 1,
            },
            default,
        );
        assert_eq!(all.len(), 3 + 1 + 5);
    }

    #[test]
    fn all_measures_everything_once_with_the_top_first() {
        let r = ranked(20);
        let default = r[10].config;
        let c = select(&r, Selection::All { top: 5, seed: 1 }, default);
        assert_eq!(c.len(), 20);
        assert!(c[..5].iter().all(|c| c.reason == Reason::Top));
        assert_eq!(c[5].config, default);
        assert_eq!(c[5].rank, Some(11));
        let mut ranks: Vec<usize> = c.iter().map(|c| c.rank.unwrap()).collect();
        ranks.sort_unstable();
        assert_eq!(ranks, (1..=20).collect::<Vec<_>>());
        // The rest is shuffled, not in rank order.
        let rest: Vec<usize> = c[6..].iter().map(|c| c.rank.unwrap()).collect();
        assert!(rest.windows(2).any(|w| w[0] > w[1]));
    }

    #[test]
    fn reduced_space_filters() {
        let d = Domain::new3(64, 64, 64);
        let full = SpaceSpec::default();
        assert!(full.is_full());
        let reduced = SpaceSpec {
            min_bx: 32,
            fold_dims: [false, true, true],
            ..SpaceSpec::default()
        };
        let a = full.configs(&d);
        let b = reduced.configs(&d);
        assert!(b.len() < a.len());
        assert!(b.iter().all(|c| c.block[0] >= 32 && c.fold[0] == 1));
        assert!(b.iter().any(|c| c.fold[1] == 2));
        assert!(b.iter().all(|c| a.contains(c)));
    }
}

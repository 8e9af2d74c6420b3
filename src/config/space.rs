//! The space of launch configurations for a kernel and domain, and its legality rules.

use super::LaunchConfig;
use crate::ir::Domain;
use serde::{Deserialize, Serialize};

/// Which configurations to enumerate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpaceOptions {
    /// Fewest threads per block.
    pub min_threads: usize,
    /// Most threads per block.
    pub max_threads: usize,
    /// Largest block extent in z.
    pub max_bz: usize,
    /// Folding factors tried per dimension.
    pub folds: Vec<usize>,
    /// Also try block widths that are multiples of 32 dividing the domain's x extent.
    pub x_multiples_of_32: bool,
}

impl Default for SpaceOptions {
    fn default() -> SpaceOptions {
        SpaceOptions {
            min_threads: 32,
            max_threads: 1024,
            max_bz: 64,
            folds: vec![1, 2, 4],
            x_multiples_of_32: true,
        }
    }
}

/// Why a configuration is not a candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case", tag = "rule")]
pub enum Illegal {
    /// More threads per block than allowed.
    #[error("{threads} threads per block exceed the limit of {limit}")]
    TooManyThreads {
        /// Threads of the block.
        threads: usize,
        /// The limit.
        limit: usize,
    },
    /// A block extent above the per-dimension maximum.
    #[error("block extent {extent} in dimension {dim} exceeds the limit of {limit}")]
    DimensionLimit {
        /// Dimension (0 = x).
        dim: usize,
        /// The extent.
        extent: usize,
        /// The limit.
        limit: usize,
    },
    /// Some fold iterations of every thread lie entirely outside the domain.
    #[error("folding {fold} in dimension {dim} overshoots the domain: block extent {block} × {fold} covers {tile} points but the domain has {n}")]
    FoldOvershoots {
        /// Dimension.
        dim: usize,
        /// Block extent.
        block: usize,
        /// Fold factor.
        fold: usize,
        /// Tile extent.
        tile: usize,
        /// Domain extent.
        n: usize,
    },
    /// Not even one block fits on an SM (registers, shared memory).
    #[error("no block fits on an SM (occupancy zero)")]
    ZeroOccupancy,
    /// The values a thread holds at once need more registers than a thread can have: the
    /// compiled kernel would spill to local memory, traffic the volumes do not contain.
    #[error("the estimated live values exceed 255 registers per thread (spills)")]
    RegisterSpill,
}

/// Checks the rules that depend only on the configuration, the domain and the block limits.
pub fn check_legal(
    c: &LaunchConfig,
    domain: &Domain,
    max_threads: usize,
    max_extent: [usize; 3],
) -> Result<(), Illegal> {
    if c.threads() > max_threads {
        return Err(Illegal::TooManyThreads {
            threads: c.threads(),
            limit: max_threads,
        });
    }
    for (dim, ((&block, &fold), (&limit, &n))) in c
        .block
        .iter()
        .zip(&c.fold)
        .zip(max_extent.iter().zip(&domain.size))
        .enumerate()
    {
        if block > limit {
            return Err(Illegal::DimensionLimit {
                dim,
                extent: block,
                limit,
            });
        }
        // With strided folding, iteration fold-1 of thread 0 starts at block·(fold-1).
        if fold > 1 && block * (fold - 1) >= n {
            return Err(Illegal::FoldOvershoots {
                dim,
                block,
                fold,
                tile: block * fold,
                n,
            });
        }
    }
    Ok(())
}

/// Every block shape and folding of the space, deterministic order, before legality checks.
pub fn enumerate(domain: &Domain, opts: &SpaceOptions) -> Vec<LaunchConfig> {
    let pow2: Vec<usize> = (0..=10).map(|e| 1usize << e).collect();
    let mut xs = pow2.clone();
    if opts.x_multiples_of_32 {
        for m in (96..=opts.max_threads).step_by(32) {
            if !m.is_power_of_two() && domain.size[0].is_multiple_of(m) {
                xs.push(m);
            }
        }
        xs.sort_unstable();
    }
    let zs: Vec<usize> = if domain.dims == 2 {
        vec![1]
    } else {
        pow2.iter().copied().filter(|z| *z <= opts.max_bz).collect()
    };
    let fz: Vec<usize> = if domain.dims == 2 {
        vec![1]
    } else {
        opts.folds.clone()
    };
    let mut out = Vec::new();
    for &bz in &zs {
        for &by in &pow2 {
            for &bx in &xs {
                let t = bx * by * bz;
                if t < opts.min_threads || t > opts.max_threads {
                    continue;
                }
                for &fz in &fz {
                    for &fy in &opts.folds {
                        for &fx in &opts.folds {
                            out.push(LaunchConfig::new([bx, by, bz], [fx, fy, fz]));
                        }
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_has_thousands_of_members_in_3d() {
        let d = Domain::new3(640, 512, 512);
        let all = enumerate(&d, &SpaceOptions::default());
        assert!(all.len() > 3000, "{}", all.len());
        assert!(all
            .iter()
            .all(|c| (32..=1024).contains(&c.threads()) && c.block[2] <= 64));
        // 160 and 320 divide 640: multiples of 32 in x are offered.
        assert!(all.iter().any(|c| c.block[0] == 160));
        assert!(!all.iter().any(|c| c.block[0] == 96));
        let two = enumerate(&Domain::new2(1000, 1000), &SpaceOptions::default());
        assert!(two.iter().all(|c| c.block[2] == 1 && c.fold[2] == 1));
    }

    #[test]
    fn legality_rules() {
        let d = Domain::new3(64, 64, 8);
        let ok = LaunchConfig::new([32, 4, 2], [1, 1, 2]);
        assert!(check_legal(&ok, &d, 1024, [1024, 1024, 64]).is_ok());
        let over = LaunchConfig::new([32, 4, 8], [1, 1, 2]);
        assert!(matches!(
            check_legal(&over, &d, 1024, [1024, 1024, 64]),
            Err(Illegal::FoldOvershoots { dim: 2, .. })
        ));
        let big = LaunchConfig::new([64, 32, 1], [1; 3]);
        assert!(matches!(
            check_legal(&big, &d, 1024, [1024, 1024, 64]),
            Err(Illegal::TooManyThreads { .. })
        ));
        let tall = LaunchConfig::new([1, 1, 128], [1; 3]);
        assert!(matches!(
            check_legal(&tall, &d, 1024, [1024, 1024, 64]),
            Err(Illegal::DimensionLimit { dim: 2, .. })
        ));
    }
}

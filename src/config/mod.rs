//! Launch configurations: block size and thread folding, and the space of them.

mod space;

pub use space::{check_legal, enumerate, Illegal, SpaceOptions};

use crate::ir::Domain;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A launch configuration. A block of `block` threads covers a tile of `block · fold` points;
/// folding is strided by the block size (thread `t` of a block computes `t + i·b`, `i < f`), so a
/// warp stays contiguous in x.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LaunchConfig {
    /// Threads per block in x, y, z.
    pub block: [usize; 3],
    /// Points per thread in x, y, z.
    pub fold: [usize; 3],
}

/// Why a configuration cannot describe a launch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A zero block or fold factor.
    #[error("{what} {values:?} has a zero entry; every entry must be at least 1")]
    Zero {
        /// "block" or "fold".
        what: &'static str,
        /// The values.
        values: [usize; 3],
    },
    /// A 2D kernel with a block or fold extent in z.
    #[error(
        "the kernel is 2D, so block z and fold z must be 1 (got block {block:?}, fold {fold:?})"
    )]
    ZIn2d {
        /// Block.
        block: [usize; 3],
        /// Fold.
        fold: [usize; 3],
    },
}

impl LaunchConfig {
    /// A configuration without folding.
    pub fn new(block: [usize; 3], fold: [usize; 3]) -> LaunchConfig {
        LaunchConfig { block, fold }
    }

    /// Checks the entries for a kernel of `dims` dimensions.
    pub fn check(&self, dims: usize) -> Result<(), ConfigError> {
        if self.block.contains(&0) {
            return Err(ConfigError::Zero {
                what: "block",
                values: self.block,
            });
        }
        if self.fold.contains(&0) {
            return Err(ConfigError::Zero {
                what: "fold",
                values: self.fold,
            });
        }
        if dims == 2 && (self.block[2] != 1 || self.fold[2] != 1) {
            return Err(ConfigError::ZIn2d {
                block: self.block,
                fold: self.fold,
            });
        }
        Ok(())
    }

    /// Threads per block.
    pub fn threads(&self) -> usize {
        self.block.iter().product()
    }

    /// Points per thread.
    pub fn points_per_thread(&self) -> usize {
        self.fold.iter().product()
    }

    /// Points covered by one block, per dimension.
    pub fn tile(&self) -> [usize; 3] {
        [
            self.block[0] * self.fold[0],
            self.block[1] * self.fold[1],
            self.block[2] * self.fold[2],
        ]
    }

    /// Blocks per dimension needed to cover `domain` (the last block may be partly outside: guards).
    pub fn grid(&self, domain: &Domain) -> [usize; 3] {
        let t = self.tile();
        [
            domain.size[0].div_ceil(t[0]),
            domain.size[1].div_ceil(t[1]),
            domain.size[2].div_ceil(t[2]),
        ]
    }

    /// Total number of blocks for `domain`.
    pub fn blocks(&self, domain: &Domain) -> usize {
        self.grid(domain).iter().product()
    }

    /// Whether any block reaches past the domain, so the kernel needs guards.
    pub fn needs_guards(&self, domain: &Domain) -> bool {
        let t = self.tile();
        (0..3).any(|d| !domain.size[d].is_multiple_of(t[d]))
    }
}

impl fmt::Display for LaunchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [bx, by, bz] = self.block;
        let [fx, fy, fz] = self.fold;
        write!(f, "block {bx}x{by}x{bz} fold {fx}x{fy}x{fz}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_and_grids() {
        let c = LaunchConfig::new([32, 4, 2], [1, 1, 2]);
        assert_eq!(c.threads(), 256);
        assert_eq!(c.tile(), [32, 4, 4]);
        let d = Domain::new3(100, 8, 9);
        assert_eq!(c.grid(&d), [4, 2, 3]);
        assert!(c.needs_guards(&d));
        assert!(!c.needs_guards(&Domain::new3(64, 8, 8)));
        assert!(c.check(3).is_ok());
        assert!(c.check(2).is_err());
        assert!(LaunchConfig::new([0, 1, 1], [1; 3]).check(3).is_err());
    }
}

//! The description of an LBM variant (lattice, collision, forcing, streaming, layout, dtype) and
//! its validation.

use super::lattice::LatticeKind;
use crate::ir::{Domain, Dtype, Layout};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The default TRT magic parameter Λ: 3/16 puts half-way bounce-back walls exactly half-way
/// between nodes for Poiseuille flow.
pub const DEFAULT_MAGIC: f64 = 3.0 / 16.0;

/// Collision operator.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Collision {
    /// Single relaxation time (BGK): every moment relaxes with ω = 1/τ.
    Srt,
    /// Two relaxation times: symmetric moments with ω⁺ = 1/τ, antisymmetric ones with ω⁻ chosen so
    /// that `Λ = (1/ω⁺ − 1/2)(1/ω⁻ − 1/2)`.
    Trt {
        /// The magic parameter Λ (> 0).
        magic: f64,
    },
}

impl fmt::Display for Collision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Collision::Srt => f.pad("SRT"),
            Collision::Trt { magic } => write!(f, "TRT (Λ = {magic})"),
        }
    }
}

/// Streaming pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Streaming {
    /// Two arrays; each cell gathers its populations from its neighbours, collides and stores
    /// them at home.
    Pull,
    /// Two arrays; each cell collides its own populations and scatters them to its neighbours.
    Push,
    /// One array updated in place (Bailey et al. 2009): an even step that collides locally and
    /// stores each population in its opposite slot, and an odd step that gathers from the
    /// neighbours' opposite slots and scatters back to the neighbours.
    Aa,
}

impl Streaming {
    /// Parses `pull`, `push` or `aa`.
    pub fn parse(s: &str) -> Option<Streaming> {
        match s.to_ascii_lowercase().as_str() {
            "pull" => Some(Streaming::Pull),
            "push" => Some(Streaming::Push),
            "aa" => Some(Streaming::Aa),
            _ => None,
        }
    }

    /// Number of population arrays.
    pub fn arrays(self) -> usize {
        match self {
            Streaming::Aa => 1,
            _ => 2,
        }
    }
}

impl fmt::Display for Streaming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Streaming::Pull => "pull",
            Streaming::Push => "push",
            Streaming::Aa => "aa",
        })
    }
}

/// What is wrong with an LBM description or with its use.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LbmError {
    /// An unknown lattice name.
    #[error("unknown lattice `{0}` (valid: D2Q9, D3Q15, D3Q19, D3Q27)")]
    UnknownLattice(String),
    /// An unknown collision name.
    #[error("unknown collision operator `{0}` (valid: srt (BGK), trt)")]
    UnknownCollision(String),
    /// An unknown streaming pattern.
    #[error("unknown streaming pattern `{0}` (valid: pull, push (two arrays), aa (one array, in place))")]
    UnknownStreaming(String),
    /// AA combined with push or pull.
    #[error("streaming `{0}`: the AA pattern is its own in-place pattern (even steps collide locally, odd steps gather and scatter); it has no push or pull variant. Use `aa`, or `pull`/`push` with two arrays")]
    AaWithDirection(String),
    /// τ at or below 1/2 (zero or negative viscosity).
    #[error("τ = {tau} must be greater than 1/2 (ν = (τ − 1/2)/3 would be {nu}); for example τ = 0.6 (ω = 1/τ must lie in (0, 2))")]
    TauTooSmall {
        /// The relaxation time given (or 1/ω).
        tau: f64,
        /// The viscosity it implies.
        nu: f64,
    },
    /// A non-finite or absurd number.
    #[error("`{key}` = {value} is not valid ({valid})")]
    BadNumber {
        /// Which setting.
        key: &'static str,
        /// The value.
        value: f64,
        /// What would be valid.
        valid: &'static str,
    },
    /// Both τ and ω given.
    #[error("give either `tau` or `omega` (= 1/τ), not both")]
    RelaxationTwice,
    /// Neither τ nor ω given.
    #[error("missing relaxation time: give `tau` (> 1/2, ν = (τ − 1/2)/3) or `omega` (= 1/τ, in (0, 2))")]
    MissingRelaxation,
    /// The magic parameter given for SRT.
    #[error(
        "the magic parameter Λ only applies to TRT collision; remove it or set collision = \"trt\""
    )]
    MagicWithSrt,
    /// A force vector of the wrong length, or with a z component in 2D.
    #[error("the force has {found} component(s) but {lattice} is {dims}D: give {dims} components")]
    ForceDims {
        /// The lattice.
        lattice: LatticeKind,
        /// Its dimensions.
        dims: usize,
        /// Components given.
        found: usize,
    },
    /// A domain whose dimensionality differs from the lattice's.
    #[error("{lattice} is {dims}D but the domain {domain} is {found}D; give {dims} sizes")]
    DomainDims {
        /// The lattice.
        lattice: LatticeKind,
        /// Its dimensions.
        dims: usize,
        /// The domain.
        domain: Domain,
        /// The domain's dimensions.
        found: usize,
    },
    /// A domain with an empty axis.
    #[error("domain {0} has an empty axis; every size must be at least 1")]
    EmptyDomain(Domain),
    /// A flag field for another domain.
    #[error("the flag field covers {found} but the domain is {expected}")]
    FlagDomain {
        /// The flags' domain.
        found: Domain,
        /// The program's domain.
        expected: Domain,
    },
    /// A flag value other than fluid or wall.
    #[error("flag value {value} at cell {cell:?} is not valid (0 = fluid, 1 = wall)")]
    BadFlag {
        /// The value.
        value: u8,
        /// The cell (x, y, z).
        cell: [usize; 3],
    },
    /// A step other than even/odd, or a step for a pattern without steps.
    #[error("{0}")]
    BadStep(String),
    /// Initial populations of the wrong shape.
    #[error("initial populations have shape {found:?} but the program needs {expected:?} ([z, y, x, q])")]
    InitShape {
        /// Shape given.
        found: Vec<usize>,
        /// Shape needed.
        expected: Vec<usize>,
    },
    /// The CPU reference refused a kernel (a bug: generated kernels are valid).
    #[error("the CPU reference failed: {0}")]
    Reference(String),
}

/// A complete LBM variant: everything needed to generate its kernels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LbmSpec {
    /// Base name of the generated kernels (an identifier).
    pub name: String,
    /// Velocity set.
    pub lattice: LatticeKind,
    /// Collision operator.
    pub collision: Collision,
    /// Relaxation time of the viscous (symmetric) moments; ν = (τ − 1/2)/3.
    pub tau: f64,
    /// Constant body force per unit volume (Guo forcing); all zero means no forcing terms.
    pub force: [f64; 3],
    /// Streaming pattern.
    pub streaming: Streaming,
    /// Memory layout of the population arrays.
    pub layout: Layout,
    /// Element type.
    pub dtype: Dtype,
    /// Ghost layers of the population arrays (at least 1, the reach of the streaming). More
    /// than one aligns rows on GPUs: with 32 bytes of ghosts in x (8 f32 or 4 f64) and a row
    /// pitch (`nx + 2·ghost + padding`) that is a multiple of as many elements, every interior
    /// row starts on a 32-byte sector.
    #[serde(default = "one")]
    pub ghost: usize,
    /// Extra elements at the end of each x row of the population arrays.
    #[serde(default)]
    pub padding: usize,
}

fn one() -> usize {
    1
}

/// The largest `ghost` and `padding` accepted (far beyond any alignment need).
pub const MAX_GHOST_OR_PADDING: usize = 64;

/// Checks a `ghost` or `padding` count (as given, so that a negative one is reported as such).
pub(crate) fn check_count(key: &'static str, value: i64) -> Result<(), LbmError> {
    let (lo, valid) = match key {
        "ghost" => (1, "1 to 64 layers (streaming reaches one cell; 8 for f32 or 4 for f64 align rows to 32 bytes)"),
        _ => (0, "0 to 64 elements per row"),
    };
    if (lo..=MAX_GHOST_OR_PADDING as i64).contains(&value) {
        Ok(())
    } else {
        Err(LbmError::BadNumber {
            key,
            value: value as f64,
            valid,
        })
    }
}

impl LbmSpec {
    /// A spec with SRT collision, no force, pull streaming, SoA and f64.
    pub fn new(name: &str, lattice: LatticeKind, tau: f64) -> LbmSpec {
        LbmSpec {
            name: name.to_string(),
            lattice,
            collision: Collision::Srt,
            tau,
            force: [0.0; 3],
            streaming: Streaming::Pull,
            layout: Layout::Fzyx,
            dtype: Dtype::F64,
            ghost: 1,
            padding: 0,
        }
    }

    /// Checks every value; the kernel and program builders call it.
    pub fn validate(&self) -> Result<(), LbmError> {
        if !self.tau.is_finite() {
            return Err(LbmError::BadNumber {
                key: "tau",
                value: self.tau,
                valid: "a finite number greater than 1/2",
            });
        }
        if self.tau <= 0.5 {
            return Err(LbmError::TauTooSmall {
                tau: self.tau,
                nu: (self.tau - 0.5) / 3.0,
            });
        }
        if let Collision::Trt { magic } = self.collision {
            if !(magic.is_finite() && magic > 0.0) {
                return Err(LbmError::BadNumber {
                    key: "magic",
                    value: magic,
                    valid: "a finite number greater than 0, e.g. 3/16 = 0.1875",
                });
            }
        }
        for &f in &self.force {
            // Lattice units: a force of order 1 per cell and step is far beyond any stable run,
            // and larger ones would overflow the folded constants.
            if !(f.is_finite() && f.abs() < 1.0) {
                return Err(LbmError::BadNumber {
                    key: "force",
                    value: f,
                    valid: "finite components below 1 in magnitude (lattice units; typical runs use 1e-6 to 1e-4)",
                });
            }
        }
        check_count("ghost", self.ghost as i64)?;
        check_count("padding", self.padding as i64)?;
        let dims = self.lattice.dims();
        if dims == 2 && self.force[2] != 0.0 {
            return Err(LbmError::ForceDims {
                lattice: self.lattice,
                dims,
                found: 3,
            });
        }
        Ok(())
    }

    /// Checks that `domain` suits the lattice.
    pub fn check_domain(&self, domain: &Domain) -> Result<(), LbmError> {
        let dims = self.lattice.dims();
        if domain.dims != dims {
            return Err(LbmError::DomainDims {
                lattice: self.lattice,
                dims,
                domain: *domain,
                found: domain.dims,
            });
        }
        if domain.size.contains(&0) {
            return Err(LbmError::EmptyDomain(*domain));
        }
        Ok(())
    }

    /// ω⁺ = 1/τ, the relaxation rate of the symmetric moments (ω for SRT).
    pub fn omega_plus(&self) -> f64 {
        1.0 / self.tau
    }

    /// ω⁻, the relaxation rate of the antisymmetric moments (ω for SRT).
    pub fn omega_minus(&self) -> f64 {
        match self.collision {
            Collision::Srt => self.omega_plus(),
            Collision::Trt { magic } => 1.0 / (magic / (self.tau - 0.5) + 0.5),
        }
    }

    /// Kinematic viscosity in lattice units, ν = (τ − 1/2)/3.
    pub fn viscosity(&self) -> f64 {
        (self.tau - 0.5) / 3.0
    }

    /// Whether the kernels carry forcing terms.
    pub fn has_force(&self) -> bool {
        self.force.iter().any(|f| *f != 0.0)
    }

    /// One line for humans: lattice, collision, τ, ν, force, streaming, layout, dtype.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} {} τ = {} (ω⁺ = {:.6}, ω⁻ = {:.6}, ν = {:.6}), {} streaming, {}, {}",
            self.lattice,
            self.collision,
            self.tau,
            self.omega_plus(),
            self.omega_minus(),
            self.viscosity(),
            self.streaming,
            self.layout,
            self.dtype
        );
        if self.ghost != 1 || self.padding != 0 {
            s += &format!(
                ", {} ghost layers, row padding {}",
                self.ghost, self.padding
            );
        }
        if self.has_force() {
            let dims = self.lattice.dims();
            s += &format!(", Guo body force {:?}", &self.force[..dims]);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        let mut s = LbmSpec::new("k", LatticeKind::D3Q19, 0.6);
        assert!(s.validate().is_ok());
        assert!((s.viscosity() - 0.1 / 3.0).abs() < 1e-15);
        s.tau = 0.5;
        assert!(matches!(s.validate(), Err(LbmError::TauTooSmall { .. })));
        s.tau = f64::NAN;
        assert!(matches!(s.validate(), Err(LbmError::BadNumber { .. })));
        s.tau = 1.0;
        s.collision = Collision::Trt { magic: 0.0 };
        assert!(matches!(
            s.validate(),
            Err(LbmError::BadNumber { key: "magic", .. })
        ));
        s.collision = Collision::Trt {
            magic: DEFAULT_MAGIC,
        };
        // Λ = (τ − 1/2)(1/ω⁻ − 1/2)
        let lam = (s.tau - 0.5) * (1.0 / s.omega_minus() - 0.5);
        assert!((lam - DEFAULT_MAGIC).abs() < 1e-15);
        assert!(matches!(
            s.check_domain(&Domain::new2(4, 4)),
            Err(LbmError::DomainDims { .. })
        ));
        s.force = [2.0, 0.0, 0.0];
        assert!(matches!(
            s.validate(),
            Err(LbmError::BadNumber { key: "force", .. })
        ));
        let mut s2 = LbmSpec::new("k", LatticeKind::D2Q9, 0.6);
        s2.force = [0.0, 0.0, 1e-5];
        assert!(matches!(s2.validate(), Err(LbmError::ForceDims { .. })));
        assert!(matches!(
            s2.check_domain(&Domain::new3(4, 4, 4)),
            Err(LbmError::DomainDims { .. })
        ));
    }
}

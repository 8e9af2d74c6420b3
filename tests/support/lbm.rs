//! Random LBM states shared by the LBM test files.

use ndarray::Array4;
use rand::{Rng, SeedableRng};
use stencilscope::lbm::LbmProgram;

/// Equilibrium at random density (0.9–1.1) and velocity (each component within ±`u_max`), times
/// random factors within 1 ± `noise` (non-equilibrium parts), so that every population of every
/// cell differs and a misplaced one shows.
pub fn random_populations(p: &LbmProgram, seed: u64, u_max: f64, noise: f64) -> Array4<f64> {
    let [nx, ny, nz] = p.domain.size;
    let q = p.lattice.q();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut init = Array4::zeros((nz, ny, nx, q));
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let rho = rng.gen_range(0.9..1.1);
                let mut u = [0.0; 3];
                for ud in u.iter_mut().take(p.domain.dims) {
                    *ud = rng.gen_range(-u_max..u_max);
                }
                for (i, f) in p.lattice.equilibrium(rho, u).into_iter().enumerate() {
                    init[[z, y, x, i]] = f * rng.gen_range(1.0 - noise..1.0 + noise);
                }
            }
        }
    }
    init
}

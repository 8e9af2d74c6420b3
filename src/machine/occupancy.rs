//! Occupancy as a small exact program (the rules of NVIDIA's occupancy calculator).

use super::MachineModel;
use serde::{Deserialize, Serialize};

/// Which resource bounds the resident blocks per SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OccupancyLimiter {
    /// The block is larger than the device allows, or needs more registers/shared memory than exist.
    Illegal,
    /// The hardware's resident block limit.
    Blocks,
    /// Resident warps (threads) per SM.
    Warps,
    /// The register file.
    Registers,
    /// Shared memory.
    SharedMemory,
}

/// Resident blocks and warps per SM for one block shape and resource use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occupancy {
    /// Resident blocks per SM (0 when the launch is impossible).
    pub blocks_per_sm: usize,
    /// Resident warps per SM.
    pub warps_per_sm: usize,
    /// What limits `blocks_per_sm`.
    pub limiter: OccupancyLimiter,
}

impl Occupancy {
    /// Fraction of the SM's warp slots in use.
    pub fn fraction(&self, m: &MachineModel) -> f64 {
        self.warps_per_sm as f64 / m.max_warps_per_sm as f64
    }
}

impl MachineModel {
    /// Occupancy of blocks of `threads` threads using `regs_per_thread` registers and
    /// `shared_bytes` of shared memory each.
    pub fn occupancy(
        &self,
        threads: usize,
        regs_per_thread: usize,
        shared_bytes: usize,
    ) -> Occupancy {
        let illegal = Occupancy {
            blocks_per_sm: 0,
            warps_per_sm: 0,
            limiter: OccupancyLimiter::Illegal,
        };
        if threads == 0
            || threads > self.max_threads_per_block
            || regs_per_thread > self.max_registers_per_thread
            || shared_bytes > self.max_shared_bytes_per_block
        {
            return illegal;
        }
        let warps_per_block = threads.div_ceil(self.warp_size);
        let by_blocks = self.max_blocks_per_sm;
        let by_warps = (self
            .max_warps_per_sm
            .min(self.max_threads_per_sm / self.warp_size))
            / warps_per_block;
        let by_regs = if regs_per_thread == 0 {
            usize::MAX
        } else {
            let per_warp =
                (regs_per_thread * self.warp_size).next_multiple_of(self.register_alloc_unit);
            (self.registers_per_sm / per_warp) / warps_per_block
        };
        let by_shared = if shared_bytes == 0 {
            usize::MAX
        } else {
            let per_block = shared_bytes.next_multiple_of(self.shared_alloc_unit)
                + self.reserved_shared_bytes_per_block;
            self.shared_bytes_per_sm / per_block
        };
        let candidates = [
            (by_blocks, OccupancyLimiter::Blocks),
            (by_warps, OccupancyLimiter::Warps),
            (by_regs, OccupancyLimiter::Registers),
            (by_shared, OccupancyLimiter::SharedMemory),
        ];
        let (blocks, limiter) = candidates
            .into_iter()
            .min_by_key(|(b, _)| *b)
            .expect("four candidates");
        if blocks == 0 {
            return illegal;
        }
        Occupancy {
            blocks_per_sm: blocks,
            warps_per_sm: blocks * warps_per_block,
            limiter,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load_machine;

    fn h100() -> MachineModel {
        load_machine("h100-sxm").unwrap()
    }

    #[test]
    fn hand_computed_h100_cases() {
        let m = h100();
        // 1024 threads at 64 registers: a warp needs 64*32 = 2048 registers, the SM has 65536,
        // so 32 warps fit = exactly one block of 32 warps.
        let o = m.occupancy(1024, 64, 0);
        assert_eq!((o.blocks_per_sm, o.warps_per_sm), (1, 32));
        assert_eq!(o.limiter, OccupancyLimiter::Registers);
        // 256 threads at 32 registers: 8 warps/block; warps allow 64/8 = 8 blocks, registers
        // 65536/(32*32)/8 = 8 blocks: 8 resident blocks, 64 warps (full occupancy).
        let o = m.occupancy(256, 32, 0);
        assert_eq!((o.blocks_per_sm, o.warps_per_sm), (8, 64));
        // 32 threads, few registers: the 32-block limit binds (32 warps, half occupancy).
        let o = m.occupancy(32, 16, 0);
        assert_eq!(o.blocks_per_sm, 32);
        assert_eq!(o.limiter, OccupancyLimiter::Blocks);
        assert!((o.fraction(&m) - 0.5).abs() < 1e-12);
        // 255 registers round up to 8192 per warp: 8 warps per SM; a 128-thread block has 4.
        let o = m.occupancy(128, 255, 0);
        assert_eq!(o.blocks_per_sm, 2);
        // 100 KiB shared per block: (102400 + 1024) fits twice in 228 KiB.
        let o = m.occupancy(128, 32, 100 * 1024);
        assert_eq!(o.blocks_per_sm, 2);
        assert_eq!(o.limiter, OccupancyLimiter::SharedMemory);
        // Illegal: too many threads, too many registers.
        assert_eq!(m.occupancy(2048, 32, 0).limiter, OccupancyLimiter::Illegal);
        assert_eq!(m.occupancy(1024, 128, 0).blocks_per_sm, 0);
    }
}

//! The memory program of a launch: every field's buffer, and the warp instructions each thread
//! issues, as absolute byte-address expressions. Shared by the footprint visitor and the cache
//! simulator, so that both count the same accesses.

use super::FootprintError;
use crate::address::{byte_address, AffineExpr, LoadSharing, Var};
use crate::config::LaunchConfig;
use crate::ir::{Access, AccessKind, Domain, FieldLayout, Kernel, Layout};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Distance between the base addresses of two fields' buffers (1 TiB): far apart and 256-byte
/// aligned, as separate allocations are.
pub const FIELD_SPACING: i64 = 1 << 40;

/// Instructions between consecutive stores of a fold point, on average, up to which they go out
/// back to back: the D3Q19 AoS twins with the float options issue their 19 stores as 19
/// consecutive instructions (1.0), without them spread among the collision's arithmetic (4.4);
/// one FMA between stores (2.0) already loses twice as many records
/// (`bench/results/h100/counters/l2-traffic/storegap.md`).
pub const BACK_TO_BACK_GAP: f64 = 1.5;

/// One memory instruction of the per-point program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instruction {
    /// Field index.
    pub field: usize,
    /// Load or store.
    pub kind: AccessKind,
    /// The IR access.
    pub access: Access,
    /// Absolute byte address (field base included), affine in thread, block and fold indices.
    pub address: AffineExpr,
}

/// A register spill of the compiled code: one local-memory load or store of the thread's stack
/// (`LDL`/`STL`), which the emitted source does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalAccess {
    /// Store (`STL`) or load (`LDL`).
    pub store: bool,
    /// Byte offset in the thread's stack frame (a multiple of 4).
    pub offset: u32,
    /// Bytes per thread: 4, 8 or 16.
    pub bytes: u32,
    /// Entries of the compiled order (global loads and stores) the thread issues before it.
    pub position: usize,
}

impl LocalAccess {
    /// The stack words (4 bytes each) it touches.
    pub fn words(&self) -> std::ops::Range<u32> {
        self.offset / 4..(self.offset + self.bytes) / 4
    }
}

/// Buffers and instructions of one kernel under one launch configuration and domain.
#[derive(Debug, Clone)]
pub struct MemoryProgram {
    /// Layout of every field.
    pub layouts: Vec<FieldLayout>,
    /// Storage layout (SoA/AoS) of every field.
    pub storage: Vec<Layout>,
    /// Base byte address of every field's buffer.
    pub bases: Vec<i64>,
    /// The instructions of one lattice point, in issue order: each distinct (access, kind) once, in
    /// the order of first appearance (a compiler loads a repeated element once).
    pub instructions: Vec<Instruction>,
    /// Per fold point (in [`MemoryProgram::fold_points`] order) and instruction: whether the thread
    /// issues it there. A load of an element an earlier fold point of the thread loaded is not
    /// issued again: the emitters keep it in a temporary (see [`LoadSharing`]).
    pub issued: Vec<bool>,
    /// The plan of shared loads `issued` comes from (kept: rank's register estimate reuses it).
    pub sharing: LoadSharing,
    /// The launch configuration.
    pub config: LaunchConfig,
    /// The domain.
    pub domain: Domain,
    /// The order the compiled code issues the thread's instructions in, where known (see
    /// [`MemoryProgram::with_compiled_order`]); `None`: the emitted order.
    pub compiled_order: Option<Vec<(usize, usize)>>,
    /// The compiled code's stack accesses (register spills) in issue order, placed among the
    /// entries of `compiled_order` (see [`MemoryProgram::with_local_accesses`]); empty: none
    /// known.
    pub local: Vec<LocalAccess>,
    /// Whether every store needs every load (`Kernel::stores_need_every_load`): the stores go
    /// out once all the loads are back.
    pub stores_need_every_load: bool,
    /// The share of the fold points storing several words whose stores the compiled code
    /// issues back to back, as consecutive instructions (see
    /// [`MemoryProgram::with_store_places`]); `None` where the places are not known.
    pub stores_back_to_back: Option<f64>,
    /// How much of a fold point's compiled instructions its stores span, on average over the
    /// fold points that store several words: first to last store place over the instructions per
    /// fold point (the places' whole range over the fold points), from
    /// [`MemoryProgram::with_store_places`]; `None` where the places are not known. Near 1 a
    /// thread keeps a record partly written throughout its run.
    pub store_span_share: Option<f64>,
}

impl MemoryProgram {
    /// Builds and checks the program; every inconsistency is a typed error, never a panic.
    pub fn new(
        kernel: &Kernel,
        domain: &Domain,
        config: &LaunchConfig,
    ) -> Result<MemoryProgram, FootprintError> {
        config.check(kernel.dims)?;
        if domain.dims != kernel.dims {
            return Err(FootprintError::DomainDims {
                kernel: kernel.dims,
                domain: domain.dims,
            });
        }
        if domain.size.contains(&0) {
            return Err(FootprintError::EmptyDomain(*domain));
        }
        let layouts: Vec<FieldLayout> =
            kernel.fields.iter().map(|f| f.layout_for(domain)).collect();
        for (f, l) in kernel.fields.iter().zip(&layouts) {
            let bytes = l.len() as u128 * l.elem_size as u128;
            if bytes >= FIELD_SPACING as u128 {
                return Err(FootprintError::FieldTooLarge {
                    field: f.name.clone(),
                    bytes,
                });
            }
        }
        let accesses = kernel.accesses();
        let mut instructions: Vec<Instruction> = Vec::with_capacity(accesses.len());
        for &(access, kind) in &accesses {
            if instructions
                .iter()
                .any(|i| i.access == access && i.kind == kind)
            {
                continue;
            }
            let Some(field) = kernel.fields.get(access.field) else {
                return Err(FootprintError::UnknownField(access.field));
            };
            let l = &layouts[access.field];
            if access.index >= l.components {
                return Err(FootprintError::BadComponent {
                    field: field.name.clone(),
                    index: access.index,
                });
            }
            for d in 0..3 {
                if access.offset[d].unsigned_abs() as usize > l.ghost[d] {
                    return Err(FootprintError::OffsetBeyondGhost {
                        field: field.name.clone(),
                        offset: access.offset,
                        ghost: field.ghost,
                    });
                }
            }
            let base = (access.field as i64 + 1) * FIELD_SPACING;
            instructions.push(Instruction {
                field: access.field,
                kind,
                access,
                address: byte_address(l, &access, config).offset(base),
            });
        }
        if instructions.is_empty() {
            return Err(FootprintError::NoAccesses);
        }
        let sharing = LoadSharing::of_accesses(&accesses, &layouts, config, domain);
        // The sharing slot of every load instruction, looked up once rather than per fold point.
        let slots: Vec<Option<usize>> = instructions
            .iter()
            .map(|ins| match ins.kind {
                AccessKind::Load => sharing.slot(&ins.access),
                AccessKind::Store => None,
            })
            .collect();
        let mut issued = Vec::with_capacity(sharing.points.len() * instructions.len());
        for p in 0..sharing.points.len() {
            for slot in &slots {
                issued.push(slot.is_none_or(|s| sharing.source(p, s).is_none()));
            }
        }
        Ok(MemoryProgram {
            bases: (0..layouts.len())
                .map(|f| (f as i64 + 1) * FIELD_SPACING)
                .collect(),
            storage: kernel.fields.iter().map(|f| f.layout).collect(),
            layouts,
            instructions,
            issued,
            sharing,
            config: *config,
            domain: *domain,
            compiled_order: None,
            local: Vec::new(),
            stores_need_every_load: kernel.stores_need_every_load(),
            stores_back_to_back: None,
            store_span_share: None,
        })
    }

    /// The program issued in `order`, `(fold point index, instruction)` pairs as the compiled
    /// code issues them: ptxas spreads a fold point's loads over about twice their number,
    /// interleaves neighbouring fold points and permutes the loads within one
    /// (`bench/compiled-order.py`). The order must name every issued instruction once and
    /// nothing else.
    pub fn with_compiled_order(
        mut self,
        order: Vec<(usize, usize)>,
    ) -> Result<MemoryProgram, FootprintError> {
        let n = self.instructions.len();
        let folds = self.issued.len().checked_div(n).unwrap_or(0);
        let mut seen = vec![false; self.issued.len()];
        for (i, &(f, ins)) in order.iter().enumerate() {
            let what = if f >= folds || ins >= n {
                Some(format!(
                    "names fold point {f}, instruction {ins}, but the program has {folds} fold \
                     points of {n} instructions"
                ))
            } else if !self.issues(f, ins) {
                Some(format!(
                    "names fold point {f}, instruction {ins}, which the thread does not issue (a \
                     register holds that load)"
                ))
            } else if std::mem::replace(&mut seen[f * n + ins], true) {
                Some(format!("names fold point {f}, instruction {ins} twice"))
            } else {
                None
            };
            if let Some(what) = what {
                return Err(FootprintError::CompiledOrder(format!(
                    "entry {}: {what}",
                    i + 1
                )));
            }
        }
        let issued = self.issued.iter().filter(|&&b| b).count();
        if order.len() != issued {
            return Err(FootprintError::CompiledOrder(format!(
                "{} entries, but the thread issues {issued} instructions",
                order.len()
            )));
        }
        self.compiled_order = Some(order);
        // Stack accesses and store places belong to the order this one replaces.
        self.local.clear();
        self.stores_back_to_back = None;
        self.store_span_share = None;
        Ok(self)
    }

    /// The program with the places of its compiled order's entries among the compiled code's
    /// instructions (SASS, from 0; the order must be set first, one place per entry, rising),
    /// which give [`MemoryProgram::stores_back_to_back`]: a fold point's stores go out back to
    /// back where consecutive ones lie at most [`BACK_TO_BACK_GAP`] instructions apart on
    /// average. How far apart a thread's stores go out sets how many of its partly written
    /// AoS records L2 writes back early (`bench/l2-traffic.py`, set `storegap`).
    pub fn with_store_places(mut self, places: &[usize]) -> Result<MemoryProgram, FootprintError> {
        let Some(order) = &self.compiled_order else {
            return Err(FootprintError::CompiledOrder(
                "instruction places need the compiled order they belong to".into(),
            ));
        };
        if places.len() != order.len() {
            return Err(FootprintError::CompiledOrder(format!(
                "{} instruction places for an order of {} entries",
                places.len(),
                order.len()
            )));
        }
        if let Some(i) = places.windows(2).position(|w| w[1] <= w[0]) {
            return Err(FootprintError::CompiledOrder(format!(
                "entry {} lies at instruction {}, not after entry {}'s {}",
                i + 2,
                places[i + 1],
                i + 1,
                places[i]
            )));
        }
        let spans = self.store_spans(Some(places));
        let several: Vec<&(usize, usize, usize)> = spans.iter().filter(|s| s.2 > 1).collect();
        let together = several
            .iter()
            .filter(|&&&(first, last, n)| {
                (last - first) as f64 <= BACK_TO_BACK_GAP * (n - 1) as f64
            })
            .count();
        let per_point = (places[places.len() - 1] - places[0] + 1) as f64
            / self.config.points_per_thread() as f64;
        self.store_span_share = (!several.is_empty()).then(|| {
            several.iter().map(|s| (s.1 - s.0) as f64).sum::<f64>()
                / several.len() as f64
                / per_point
        });
        self.stores_back_to_back = Some(if several.is_empty() {
            0.0
        } else {
            together as f64 / several.len() as f64
        });
        Ok(self)
    }

    /// Per fold point that stores in the compiled order, the first and last place of its stores
    /// and their count, by first place: places among the compiled instructions where `places`
    /// gives them (one per entry of the order), else positions in the order. Empty without a
    /// compiled order.
    pub fn store_spans(&self, places: Option<&[usize]>) -> Vec<(usize, usize, usize)> {
        let Some(order) = &self.compiled_order else {
            return Vec::new();
        };
        let mut spans: HashMap<usize, (usize, usize, usize)> = HashMap::new();
        for (q, &(f, ins)) in order.iter().enumerate() {
            if self.instructions[ins].kind == AccessKind::Store {
                let at = places.map_or(q, |p| p[q]);
                spans
                    .entry(f)
                    .and_modify(|s| (s.1, s.2) = (at, s.2 + 1))
                    .or_insert((at, at, 1));
            }
        }
        let mut spans: Vec<(usize, usize, usize)> = spans.into_values().collect();
        spans.sort_unstable();
        spans
    }

    /// The program with the compiled code's stack accesses (register spills, from its SASS), in
    /// issue order among the entries of its compiled order, which must be set first. Each must
    /// move 4, 8 or 16 bytes at an offset aligned to its size, and their positions must not fall
    /// back or pass the order's end.
    pub fn with_local_accesses(
        mut self,
        local: Vec<LocalAccess>,
    ) -> Result<MemoryProgram, FootprintError> {
        if local.is_empty() {
            self.local = local;
            return Ok(self);
        }
        let Some(order) = &self.compiled_order else {
            return Err(FootprintError::CompiledOrder(
                "stack accesses need the compiled order they are placed in".into(),
            ));
        };
        let mut at = 0;
        for (i, a) in local.iter().enumerate() {
            let what = if ![4, 8, 16].contains(&a.bytes) || a.offset % a.bytes != 0 {
                Some(format!(
                    "moves {} bytes at stack offset {}: not 4, 8 or 16 bytes at an offset \
                     aligned to them",
                    a.bytes, a.offset
                ))
            } else if a.position < at || a.position > order.len() {
                Some(format!(
                    "comes after {} entries of the order, but the one before it after {at} and \
                     the order has {}",
                    a.position,
                    order.len()
                ))
            } else {
                None
            };
            if let Some(what) = what {
                return Err(FootprintError::CompiledOrder(format!(
                    "stack access {}: {what}",
                    i + 1
                )));
            }
            at = a.position;
        }
        self.local = local;
        Ok(self)
    }

    /// Whether instruction `ins` is issued at the fold point of index `point`.
    pub fn issues(&self, point: usize, ins: usize) -> bool {
        self.issued[point * self.instructions.len() + ins]
    }

    /// What a thread issues, in order: `(fold point index, instruction)`, leaving out the loads
    /// a register holds; the compiled order where the program has one.
    pub fn issued_sequence(&self) -> Box<dyn Iterator<Item = (usize, usize)> + '_> {
        if let Some(order) = &self.compiled_order {
            return Box::new(order.iter().copied());
        }
        Box::new(self.emitted_sequence())
    }

    /// What a thread issues in the emitted order: fold point after fold point, each in
    /// instruction order.
    pub fn emitted_sequence(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let n = self.instructions.len();
        let folds = self.issued.len().checked_div(n).unwrap_or(0);
        (0..folds)
            .flat_map(move |fi| (0..n).map(move |i| (fi, i)))
            .filter(|&(fi, i)| self.issues(fi, i))
    }

    /// Lattice updates of one sweep.
    pub fn updates(&self) -> f64 {
        self.domain.points() as f64
    }

    /// Fold points of one thread in issue order: `(i, j, k)` with `i` fastest.
    pub fn fold_points(&self) -> impl Iterator<Item = [usize; 3]> + '_ {
        let [fx, fy, fz] = self.config.fold;
        (0..fz).flat_map(move |k| (0..fy).flat_map(move |j| (0..fx).map(move |i| [i, j, k])))
    }

    /// Variable values of thread `t` of block `b` at fold point `p`.
    pub fn vars(t: [usize; 3], b: [usize; 3], p: [usize; 3]) -> [i64; 9] {
        let mut v = [0i64; 9];
        for d in 0..3 {
            let (tv, bv, fv) = Var::of_dim(d);
            v[tv.slot()] = t[d] as i64;
            v[bv.slot()] = b[d] as i64;
            v[fv.slot()] = p[d] as i64;
        }
        v
    }

    /// Thread index of linear id `l` within a block.
    pub fn thread(&self, l: usize) -> [usize; 3] {
        let [bx, by, _] = self.config.block;
        [l % bx, (l / bx) % by, l / (bx * by)]
    }

    /// Whether thread `t` of block `b` at fold point `p` updates a point inside the domain.
    pub fn active(&self, t: [usize; 3], b: [usize; 3], p: [usize; 3]) -> bool {
        let tile = self.config.tile();
        (0..3).all(|d| b[d] * tile[d] + t[d] + p[d] * self.config.block[d] < self.domain.size[d])
    }

    /// Whether a point stores into several arrays far apart: more than one store instruction,
    /// every one into a field laid out as a structure of arrays (D3Q19 SoA's 19 populations; an
    /// AoS record's words lie side by side, a stencil stores one array).
    pub fn stores_several_arrays(&self) -> bool {
        let mut n = 0;
        for i in self
            .instructions
            .iter()
            .filter(|i| i.kind == AccessKind::Store)
        {
            if self.storage[i.field] != Layout::Fzyx {
                return false;
            }
            n += 1;
        }
        n > 1
    }

    /// Whether a point's stores go to several cells (a push kernel writes each population to
    /// the neighbour it streams to): every stored sector then gets its pieces from several
    /// threads, at other steps and in other blocks.
    pub fn stores_scattered(&self) -> bool {
        let mut offsets = self
            .instructions
            .iter()
            .filter(|i| i.kind == AccessKind::Store)
            .map(|i| i.access.offset);
        let first = offsets.next();
        offsets.any(|o| Some(o) != first)
    }

    /// Bytes of a tile's row in the widest field it stores (the tile's width times the element).
    pub fn stored_row_bytes(&self) -> usize {
        let elem = self
            .instructions
            .iter()
            .filter(|i| i.kind == AccessKind::Store)
            .map(|i| self.layouts[i.field].elem_size)
            .max()
            .unwrap_or(0);
        self.config.block[0] * self.config.fold[0] * elem
    }

    /// Whether the kernel stores in place (`stores_in_place`) and a tile's row spans a sector or
    /// more: the sectors a block writes are those it read, not its neighbours', so L2's windows
    /// hold them already. (Tiles narrower than a sector share each sector with the blocks beside
    /// them; counted so, the H200's narrow AA tiles move away from the counters:
    /// `bench/prototypes/README.md`, "The written data's room in place".)
    pub fn stores_in_place_whole(&self, sector_bytes: usize) -> bool {
        self.stores_in_place() && self.stored_row_bytes() >= sector_bytes
    }

    /// Whether the kernel stores in place: every store goes to an address one of its loads
    /// reads (the AA pattern: a thread writes the slots it read, in other orders), so every
    /// sector it writes, it has read.
    pub fn stores_in_place(&self) -> bool {
        let mut stores = self
            .instructions
            .iter()
            .filter(|i| i.kind == AccessKind::Store)
            .peekable();
        stores.peek().is_some()
            && stores.all(|s| {
                self.instructions.iter().any(|l| {
                    l.kind == AccessKind::Load && l.field == s.field && l.address == s.address
                })
            })
    }
}

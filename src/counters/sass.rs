//! The compiled issue order read from a twin's SASS (issue 8).
//!
//! ptxas does not issue a thread's loads fold point after fold point: it spreads each fold
//! point's loads over about 1.6 times their number and interleaves the next fold points'. The
//! order the compiled twin issues its global loads and stores in is read here from
//! `cuobjdump -sass` of the cubin the driver's JIT made (the twin loads PTX, so the JIT cache
//! holds it: [`elf_images`]), by matching every `LDG`/`STG` to the emitted access it is:
//!
//! - Address registers are followed as values `(root, constant)`: `IADD3 Rd, Ra, imm` and
//!   `MOV Rd, Ra` keep `Ra`'s root and add to its constant; any other write starts a new root.
//!   So loads through registers the compiler derived from one pointer share a base. Values
//!   also survive a spill (`STL`, then `LDL`) and the XOR swap of an address pair's words, and
//!   a pure operation on the same values (an output pointer computed again from the kernel
//!   parameter before each fold point's stores) gives the same root.
//! - Each base is matched by the one byte shift that maps all its offsets onto emitted element
//!   offsets (`base_X + OFF` in the twin's source) that no earlier base took; bases with most
//!   accesses first. A base of one access takes an earlier base's shift where exactly one fits
//!   (the same address computed again). Where no single shift fits, the configuration stays
//!   unmatched ([`SassOrderError`]) and its estimate keeps the emitted order.
//!
//! `bench/compiled-order.py` is the same matcher for the SASS files of a whole sweep.

use super::{CompiledOrder, CompiledOrders};
use crate::config::LaunchConfig;
use crate::emit::{self, EmitError, Options};
use crate::footprint::LocalAccess;
use crate::ir::{Domain, Kernel};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Why a configuration's SASS gave no compiled order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SassOrderError {
    /// The SASS holds no function of that name.
    #[error("the SASS holds no function `{0}`")]
    NoFunction(String),
    /// The source names one element offset for two accesses of a kind.
    #[error(
        "the source reads or writes element offset {0} twice; the SASS cannot tell them apart"
    )]
    AmbiguousSource(i64),
    /// No single shift maps a base's accesses onto emitted ones.
    #[error("{accesses} {kind} through one address register match {fits} shifts of the emitted offsets, not one")]
    NoShift {
        /// `loads` or `stores`.
        kind: &'static str,
        /// The base's accesses.
        accesses: usize,
        /// How many shifts fit.
        fits: usize,
    },
    /// The matched accesses are not every emitted one, once each.
    #[error("the SASS issues {found} global loads and stores matching {distinct} emitted ones, the source {expected}")]
    Count {
        /// Accesses in the SASS.
        found: usize,
        /// Distinct emitted accesses they matched.
        distinct: usize,
        /// Accesses in the source.
        expected: usize,
    },
}

/// One global load or store of the SASS: the address register's root and the byte offset from
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Access {
    store: bool,
    root: usize,
    offset: i64,
    /// The instruction's place in the function (from 0).
    place: usize,
}

/// The ELF images (cubins) inside a file of the driver's JIT cache, each to the end of its
/// furthest header table or section.
pub fn elf_images(blob: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = find(blob, b"\x7fELF", 0);
    while let Some(a) = at {
        let u = |o: usize, n: usize| -> Option<u64> {
            let b = blob.get(a + o..a + o + n)?;
            Some(b.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x)))
        };
        let image = (|| {
            let (phoff, phent, phnum) = (u(0x20, 8)?, u(0x36, 2)?, u(0x38, 2)?);
            let (shoff, shent, shnum) = (u(0x28, 8)?, u(0x3A, 2)?, u(0x3C, 2)?);
            let mut end = (phoff + phent * phnum).max(shoff + shent * shnum);
            for k in 0..shnum {
                let h = (shoff + k * shent) as usize;
                // SHT_NOBITS (8) takes no room in the file.
                if u(h + 4, 4)? != 8 {
                    end = end.max(u(h + 0x18, 8)? + u(h + 0x20, 8)?);
                }
            }
            blob.get(a..a.checked_add(usize::try_from(end).ok()?)?)
        })();
        match image {
            Some(img) => {
                out.push(img);
                at = find(blob, b"\x7fELF", a + img.len().max(4));
            }
            None => at = find(blob, b"\x7fELF", a + 4),
        }
    }
    out
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The functions of `cuobjdump -sass` output: name and instruction texts (without the
/// `/*addr*/` prefix and the `;`).
pub fn sass_functions(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("Function : ") {
            let name = name.trim().to_string();
            out.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        let Some(name) = &current else { continue };
        // `/*0080*/  LDG.E.64 R2, desc[UR4][R4.64] ;  /* 0x... */`
        let Some(rest) = t.strip_prefix("/*") else {
            continue;
        };
        let Some((addr, ins)) = rest.split_once("*/") else {
            continue;
        };
        if addr.len() < 4 || !addr.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let Some((ins, _)) = ins.split_once(';') else {
            continue;
        };
        let ins = ins.trim();
        if !ins.is_empty() {
            out.get_mut(name)
                .expect("entry made above")
                .push(ins.to_string());
        }
    }
    out
}

fn is_reg(s: &str) -> bool {
    s.strip_prefix('R')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn is_pred(s: &str) -> bool {
    let s = s.strip_prefix('!').unwrap_or(s);
    s == "PT"
        || s.strip_prefix('P')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn imm(s: &str) -> Option<i64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let v = i64::from_str_radix(s.strip_prefix("0x")?, 16).ok()?;
    Some(if neg { -v } else { v })
}

/// The stack slot (byte offset from `R1`, the stack pointer) and width in registers of a
/// local load or store (`STL.64 [R1+0x230], R4`, `LDL.LU R10, [R1+0x54]`).
fn local_slot(op: &str, rest: &str) -> Option<(i64, usize)> {
    if !(op.starts_with("LDL") || op.starts_with("STL")) {
        return None;
    }
    let width = if op.contains(".128") {
        4
    } else if op.contains(".64") {
        2
    } else {
        1
    };
    let addr = rest.split_once('[')?.1.split_once(']')?.0.trim();
    let off = match addr.strip_prefix("R1") {
        Some("") => 0,
        Some(o) => imm(o.strip_prefix('+').unwrap_or(o))?,
        None => return None,
    };
    Some((off, width))
}

/// Register `r` plus `k` (`R4`, 1 → `R5`), for the words of a 64- or 128-bit access.
fn reg_plus(r: &str, k: usize) -> Option<String> {
    let n: usize = r.strip_prefix('R')?.parse().ok()?;
    Some(format!("R{}", n + k))
}

/// A register's value as the matcher follows it: the XOR of terms `(root, constant)` (one term
/// for any value an address is made of; two while the compiler swaps a register pair by XORs).
type Value = Vec<(usize, i64)>;

/// The values of the registers and stack slots the matcher has seen, and a source of new roots.
#[derive(Default)]
struct Values {
    regs: HashMap<String, Value>,
    stack: HashMap<i64, Value>,
    /// The value of each pure operation seen, by its opcode and operands' values.
    numbered: HashMap<String, Value>,
    roots: usize,
}

impl Values {
    /// A value of a root of its own (an input, or what the matcher does not follow).
    fn fresh(&mut self) -> Value {
        self.roots += 1;
        vec![(self.roots, 0)]
    }

    /// Register `r`'s value (a root of its own where nothing wrote it yet).
    fn reg(&mut self, r: &str) -> Value {
        if let Some(v) = self.regs.get(r) {
            return v.clone();
        }
        let v = self.fresh();
        self.regs.insert(r.to_string(), v.clone());
        v
    }
}

/// The global loads and stores of a function's instructions, in SASS order, and its stack
/// accesses (register spills) placed among them.
///
/// Besides `IADD3`/`MOV` (and `IMAD.MOV.U32 Rd, RZ, RZ, Ra`), values are followed through the
/// stack (an address register spilled by `STL` and loaded back by `LDL` keeps its value) and
/// through `LOP3.LUT … 0x3c` (XOR), which the compiler uses to swap the words of an address
/// pair. A pure operation on values seen before gives the root it gave then (value numbering),
/// so that a pointer the compiler computes anew from the kernel parameter is the same base.
fn memory_accesses(instructions: &[String]) -> (Vec<Access>, Vec<LocalAccess>) {
    let mut out = Vec::new();
    let mut local = Vec::new();
    let mut vals = Values::default();
    for (place, ins) in instructions.iter().enumerate() {
        // A guard predicate (`@P0`, `@!PT`) does not change what the instruction does.
        let guarded = ins.starts_with('@');
        let ins = match ins.strip_prefix('@') {
            Some(r) => r.split_once(char::is_whitespace).map_or("", |(_, i)| i),
            None => ins.as_str(),
        }
        .trim();
        let (op, rest) = ins.split_once(char::is_whitespace).unwrap_or((ins, ""));
        let args: Vec<String> = rest
            .split(',')
            .map(|a| a.trim().replace(".reuse", ""))
            .collect();
        // Spills: an address register stored to the stack and loaded back keeps its value.
        if let Some((slot, width)) = local_slot(op, rest) {
            // The stack pointer's offsets are never negative; one that were would be no slot.
            if let Ok(offset) = u32::try_from(slot) {
                local.push(LocalAccess {
                    store: op.starts_with("STL"),
                    offset,
                    bytes: 4 * width as u32,
                    position: out.len(),
                });
            }
            let first = args.first().map(String::as_str).unwrap_or("");
            for k in 0..width {
                let at = slot + 4 * k as i64;
                if op.starts_with("STL") {
                    if let Some(r) = args.get(1).and_then(|a| reg_plus(a, k)) {
                        let v = vals.reg(&r);
                        vals.stack.insert(at, v);
                    }
                } else if let Some(r) = reg_plus(first, k) {
                    let v = match vals.stack.get(&at) {
                        Some(v) => v.clone(),
                        None => vals.fresh(),
                    };
                    vals.regs.insert(r, v);
                }
            }
            continue;
        }
        let (load, store) = (op.starts_with("LDG"), op.starts_with("STG"));
        if load || store {
            // `[R4.64+0x19a720]` or `[R4.64]`, after the descriptor's `desc[UR4]`.
            let addr = rest
                .rsplit_once('[')
                .and_then(|(_, a)| a.split_once(']'))
                .map(|(a, _)| a);
            if let Some((reg, off)) = addr.and_then(|a| {
                let (r, o) = a.split_once(".64")?;
                let o = o.strip_prefix('+').unwrap_or(o);
                Some((r, if o.is_empty() { 0 } else { imm(o)? }))
            }) {
                let mut v = vals.reg(reg);
                if v.len() != 1 {
                    // Not a value the matcher can follow: a base of its own.
                    v = vals.fresh();
                }
                let (root, c) = v[0];
                out.push(Access {
                    store,
                    root,
                    offset: c + off,
                    place,
                });
            }
        }
        let dest = args.first().filter(|a| is_reg(a)).cloned();
        let Some(dest) = dest.filter(|_| !store) else {
            continue;
        };
        let srcs: Vec<&str> = args[1..]
            .iter()
            .map(String::as_str)
            .filter(|a| !is_pred(a) && *a != "RZ")
            .collect();
        let regs: Vec<&str> = srcs.iter().copied().filter(|a| is_reg(a)).collect();
        let imms: Vec<i64> = srcs.iter().filter_map(|a| imm(a)).collect();
        let v = if op == "IADD3"
            && regs.len() == 1
            && imms.len() <= 1
            && srcs.len() == regs.len() + imms.len()
        {
            match vals.reg(regs[0])[..] {
                [(root, c)] => vec![(root, c + imms.first().copied().unwrap_or(0))],
                _ => vals.fresh(),
            }
        } else if op == "MOV" && regs.len() == 1 && srcs.len() == 1 {
            vals.reg(regs[0])
        } else if op == "IMAD.MOV.U32"
            && regs.len() == 1
            && args.get(1..3).is_some_and(|z| z.iter().all(|a| a == "RZ"))
        {
            // A move by multiply-add: RZ · RZ + Ra.
            vals.reg(regs[0])
        } else if op == "LOP3.LUT" && regs.len() == 2 && srcs.len() == 3 && srcs[2] == "0x3c" {
            // a ^ b: terms present in one of the two.
            let (a, b) = (vals.reg(regs[0]), vals.reg(regs[1]));
            let mut x: Value = a.iter().filter(|t| !b.contains(t)).copied().collect();
            x.extend(b.iter().filter(|t| !a.contains(t)).copied());
            x.sort_unstable();
            if x.is_empty() {
                vals.fresh()
            } else {
                x
            }
        } else if let Some(key) = numbered_key(op, &args[1..], guarded, &mut vals) {
            // The same pure operation on the same values again (ptxas computes an output
            // pointer anew from the kernel parameter before a fold point's stores): the same
            // root, so that all of them are one base.
            match vals.numbered.get(&key) {
                Some(v) => v.clone(),
                None => {
                    let v = vals.fresh();
                    vals.numbered.insert(key, v.clone());
                    v
                }
            }
        } else {
            vals.fresh()
        };
        vals.regs.insert(dest, v);
    }
    (out, local)
}

/// Operations whose result follows from their operands alone.
const PURE: &[&str] = &[
    "IMAD",
    "IMAD.WIDE",
    "IMAD.WIDE.U32",
    "IMAD.SHL.U32",
    "IMAD.IADD",
    "IMAD.MOV.U32",
    "IMAD.HI.U32",
    "IADD3",
    "LEA",
    "LEA.HI",
    "SHF.L.U32",
    "SHF.R.U32.HI",
    "SHF.R.S32.HI",
    "LOP3.LUT",
    "LDC",
    "LDC.64",
    "S2R",
    "VIADD",
    "IMNMX",
    "SEL",
];

/// Special registers that hold one value for a thread's whole run.
const STEADY: &[&str] = &[
    "SR_TID.X",
    "SR_TID.Y",
    "SR_TID.Z",
    "SR_CTAID.X",
    "SR_CTAID.Y",
    "SR_CTAID.Z",
];

/// The key of a pure operation's result, its opcode and its operands' values; `None` where an
/// operand is not a value the matcher knows at this point (a predicate, a uniform register, a
/// special register that changes) or the instruction is guarded (it may not have run).
fn numbered_key(op: &str, srcs: &[String], guarded: bool, vals: &mut Values) -> Option<String> {
    if guarded || !PURE.contains(&op) {
        return None;
    }
    let mut key = op.to_string();
    for a in srcs {
        key.push('|');
        if is_reg(a) {
            key.push_str(&format!("{:?}", vals.reg(a)));
        } else if a == "RZ" || imm(a).is_some() || STEADY.contains(&a.as_str()) || is_const(a) {
            key.push_str(a);
        } else {
            return None;
        }
    }
    Some(key)
}

/// A constant bank operand with an immediate address (`c[0x0][0x218]`, a kernel parameter).
fn is_const(s: &str) -> bool {
    s.strip_prefix("c[")
        .and_then(|r| r.strip_suffix(']'))
        .and_then(|r| r.split_once("]["))
        .is_some_and(|(b, o)| imm(b).is_some() && imm(o).is_some())
}

/// The emitted accesses of a twin's source: element offset → `(fold point, instruction)`, loads
/// and stores apart. Loads are `ld_F_N = fld_X[base_X + OFF]`; stores `fld_X[base_X + OFF] =`,
/// numbered after the program's loads (as [`MemoryProgram`](crate::footprint::MemoryProgram)
/// orders its instructions), in the order of their first appearance in each fold point.
type Table = HashMap<i64, (usize, usize)>;

fn source_accesses(source: &str) -> Result<(Table, Table), SassOrderError> {
    let (mut loads, mut stores) = (Table::new(), Table::new());
    let mut store_lines: Vec<(usize, i64)> = Vec::new();
    let mut fold = 0usize;
    let mut seen_fold = false;
    for line in source.lines() {
        let t = line.trim();
        if t.starts_with("// fold point") {
            if seen_fold {
                fold += 1;
            }
            seen_fold = true;
            continue;
        }
        let Some(open) = t.find("fld_") else { continue };
        let after = &t[open..];
        let Some(off) = after
            .split_once("[base_")
            .and_then(|(_, r)| r.split_once(" + "))
            .and_then(|(_, r)| r.split_once(']'))
            .and_then(|(n, _)| n.trim().parse::<i64>().ok())
        else {
            continue;
        };
        let tail = after.split_once(']').map_or("", |(_, r)| r).trim_start();
        if tail.starts_with('=') && !tail.starts_with("==") {
            store_lines.push((fold, off));
            continue;
        }
        // `double ld_0_2 = fld_u[...]` or `ld_0_0 = fld_u[...]`.
        let lhs = t[..open].trim_end().strip_suffix('=').map(str::trim_end);
        let Some(name) = lhs.and_then(|l| l.rsplit(' ').next()) else {
            continue;
        };
        let Some((f, n)) = name
            .strip_prefix("ld_")
            .and_then(|r| r.split_once('_'))
            .and_then(|(f, n)| Some((f.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
        else {
            continue;
        };
        if loads.insert(off, (f, n)).is_some() {
            return Err(SassOrderError::AmbiguousSource(off));
        }
    }
    let first = loads.values().filter(|(f, _)| *f == 0).count();
    let mut q = HashMap::new();
    for (f, off) in store_lines {
        let k = q.entry(f).or_insert(0usize);
        if stores.insert(off, (f, first + *k)).is_some() {
            return Err(SassOrderError::AmbiguousSource(off));
        }
        *k += 1;
    }
    Ok((loads, stores))
}

/// Per base, the byte shift that maps its offsets onto the element offsets of `table`.
fn base_shifts(
    accesses: &[Access],
    table: &Table,
    elem: i64,
    kind: &'static str,
) -> Result<HashMap<usize, i64>, SassOrderError> {
    let mut by_base: Vec<(usize, Vec<i64>)> = Vec::new();
    for a in accesses {
        match by_base.iter_mut().find(|(r, _)| *r == a.root) {
            // The same address again: a load the compiler issues twice (see `compiled_order`).
            Some((_, v)) if v.contains(&a.offset) => {}
            Some((_, v)) => v.push(a.offset),
            None => by_base.push((a.root, vec![a.offset])),
        }
    }
    // Most accesses first; equal counts in order of first appearance (a stable sort).
    by_base.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    let mut shift: HashMap<usize, i64> = HashMap::new();
    let mut used: HashSet<i64> = HashSet::new();
    let mut keys: Vec<i64> = table.keys().copied().collect();
    keys.sort_unstable();
    for (root, offs) in &by_base {
        let mapped = |cand: i64| -> Option<Vec<i64>> {
            let mut ks = Vec::with_capacity(offs.len());
            for o in offs {
                let e = o + cand;
                if e.rem_euclid(elem) != 0 {
                    return None;
                }
                let k = e.div_euclid(elem);
                if !table.contains_key(&k) || used.contains(&k) || ks.contains(&k) {
                    return None;
                }
                ks.push(k);
            }
            Some(ks)
        };
        // The shifts that put the first access on an emitted offset (ascending and distinct, as
        // the sorted keys are).
        let every: Vec<i64> = keys.iter().map(|t| t * elem - offs[0]).collect();
        let mut earlier: Vec<i64> = shift.values().copied().collect();
        earlier.sort_unstable();
        earlier.dedup();
        let sets: Vec<&[i64]> = if offs.len() > 1 {
            vec![&every]
        } else {
            vec![&earlier, &every]
        };
        let mut fits: Vec<(i64, Vec<i64>)> = Vec::new();
        for cands in sets {
            fits = cands
                .iter()
                .filter_map(|&c| mapped(c).map(|k| (c, k)))
                .collect();
            if fits.len() == 1 {
                break;
            }
        }
        if fits.len() != 1 {
            return Err(SassOrderError::NoShift {
                kind,
                accesses: offs.len(),
                fits: fits.len(),
            });
        }
        let (c, ks) = fits.pop().expect("one fit");
        shift.insert(*root, c);
        used.extend(ks);
    }
    Ok(shift)
}

/// The compiled order of function `function` in `sass` (`cuobjdump -sass` output), as the
/// `(fold point, instruction)` pairs of the twin's `source` (the emitted CUDA C), for elements
/// of `elem_bytes` bytes; with the stack accesses placed among them.
pub fn compiled_order(
    source: &str,
    sass: &BTreeMap<String, Vec<String>>,
    function: &str,
    elem_bytes: usize,
) -> Result<CompiledOrder, SassOrderError> {
    let ins = sass
        .get(function)
        .ok_or_else(|| SassOrderError::NoFunction(function.to_string()))?;
    let (loads, stores) = source_accesses(source)?;
    let (mem, local) = memory_accesses(ins);
    let elem = elem_bytes as i64;
    let (l, s): (Vec<Access>, Vec<Access>) = mem.iter().partition(|a| !a.store);
    let dl = base_shifts(&l, &loads, elem, "loads")?;
    let ds = base_shifts(&s, &stores, elem, "stores")?;
    // Where registers are short, ptxas may load a read-only element again instead of spilling
    // it: the order keeps its first load (the visitor issues each element once).
    let mut out = Vec::with_capacity(mem.len());
    let mut places = Vec::with_capacity(mem.len());
    let mut seen = HashSet::new();
    let mut kept_before = Vec::with_capacity(mem.len() + 1);
    let mut unmatched = 0;
    for a in &mem {
        kept_before.push(out.len());
        let (table, d) = if a.store {
            (&stores, &ds)
        } else {
            (&loads, &dl)
        };
        let e = a.offset + d[&a.root];
        match (e.rem_euclid(elem) == 0)
            .then(|| table.get(&e.div_euclid(elem)))
            .flatten()
        {
            Some(step) if seen.insert(*step) => {
                out.push(*step);
                places.push(a.place);
            }
            Some(_) => {}
            None => unmatched += 1,
        }
    }
    kept_before.push(out.len());
    let expected = loads.len() + stores.len();
    if unmatched > 0 || out.len() != expected {
        return Err(SassOrderError::Count {
            found: mem.len(),
            distinct: out.len(),
            expected,
        });
    }
    let reloads = mem.len() - out.len();
    let local = local
        .into_iter()
        .map(|a| LocalAccess {
            position: kept_before[a.position],
            ..a
        })
        .collect();
    Ok(CompiledOrder {
        steps: out,
        local,
        reloads,
        places,
    })
}

/// The orders file of a sweep's twins, and what did not go into it.
#[derive(Debug, Clone, Default)]
pub struct OrdersFile {
    /// The file's text.
    pub text: String,
    /// The configurations left unmatched, with why.
    pub unmatched: Vec<(LaunchConfig, SassOrderError)>,
    /// The configurations whose compiled code loads some elements twice, and how many loads
    /// the file leaves out ([`CompiledOrder::reloads`]).
    pub reloaded: Vec<(LaunchConfig, usize)>,
}

/// The compiled orders of the twins of `configs` (of `kernel` on `domain`) in the format
/// [`CompiledOrders`] reads, from the functions of their SASS (each
/// under its entry name, [`entry_name`](super::entry_name)).
pub fn orders_file(
    kernel: &Kernel,
    domain: &Domain,
    configs: &[LaunchConfig],
    sass: &BTreeMap<String, Vec<String>>,
    header: &str,
) -> Result<OrdersFile, EmitError> {
    let mut out = OrdersFile {
        text: format!("# {header}\n"),
        ..OrdersFile::default()
    };
    for config in configs {
        let name = super::entry_name(config);
        let opts = Options {
            entry_point: Some(name.clone()),
            ..Options::default()
        };
        let source = emit::cuda::write_string(kernel, config, domain, &opts)?;
        match compiled_order(&source, sass, &name, kernel.dtype().size()) {
            Ok(order) => {
                out.text
                    .push_str(&CompiledOrders::line(kernel, config, domain, &order));
                out.text.push('\n');
                if order.reloads > 0 {
                    out.reloaded.push((*config, order.reloads));
                }
            }
            Err(e) => out.unmatched.push((*config, e)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "\
    const int base_u = 1*tx;
    const int base_v = 1*tx;
    // fold point (i, j, k) = (0, 0, 0)
    double ld_0_0;
    {
        ld_0_0 = fld_u[base_u + 100];
        double ld_0_1 = fld_u[base_u + 101];
        fld_v[base_v + 100] = ld_0_0 + ld_0_1;
    }
    // fold point (i, j, k) = (0, 1, 0)
    {
        double ld_1_1 = fld_u[base_u + 201];
        fld_v[base_v + 200] = ld_0_0 + ld_1_1;
    }
";

    fn sass(body: &str) -> BTreeMap<String, Vec<String>> {
        sass_functions(&format!(
            "\t\tFunction : ssk_t\n{}",
            body.lines()
                .enumerate()
                .map(|(i, l)| format!("        /*{:04x}*/  {l} ;  /* 0x00 */\n", i * 16))
                .collect::<String>()
        ))
    }

    #[test]
    fn loads_and_stores_follow_their_address_registers() {
        // The pointer R4 plus 8 x offset; R6 = R4 + 0x320 is the same base 800 bytes on, so
        // its load at +0x8 is element 101; the second fold point's load comes first.
        let s = sass(
            "IMAD.WIDE R4, R0, 0x8, R4\n\
             LDG.E.64.CONSTANT R8, desc[UR4][R4.64+0x648]\n\
             IADD3 R6, R4, 0x320, RZ\n\
             LDG.E.64.CONSTANT R10, desc[UR4][R4.64+0x320]\n\
             @P0 LDG.E.64.CONSTANT R12, desc[UR4][R6.64+0x8]\n\
             IMAD.WIDE R2, R0, 0x8, R2\n\
             STG.E.64 desc[UR4][R2.64+0x320], R10\n\
             STG.E.64 desc[UR4][R2.64+0x640], R12",
        );
        let order = compiled_order(SOURCE, &s, "ssk_t", 8).unwrap();
        assert_eq!(order.steps, vec![(1, 1), (0, 0), (0, 1), (0, 2), (1, 2)]);
        // Each access at its place among the function's instructions.
        assert_eq!(order.places, vec![1, 3, 4, 6, 7]);
        assert!(order.local.is_empty());
        assert_eq!(order.reloads, 0);
    }

    #[test]
    fn a_load_issued_twice_keeps_its_first_place() {
        // Element 100 is loaded again after a spill of 4 bytes (registers short): the order
        // keeps the first load, counts the second, and the stack accesses keep their places
        // among the loads that stay.
        let s = sass(
            "IMAD.WIDE R4, R0, 0x8, R4\n\
             LDG.E.64.CONSTANT R8, desc[UR4][R4.64+0x648]\n\
             LDG.E.64.CONSTANT R10, desc[UR4][R4.64+0x320]\n\
             LDG.E.64.CONSTANT R14, desc[UR4][R4.64+0x320]\n\
             STL [R1+0x4], R9\n\
             LDG.E.64.CONSTANT R12, desc[UR4][R4.64+0x328]\n\
             IMAD.WIDE R2, R0, 0x8, R2\n\
             STG.E.64 desc[UR4][R2.64+0x320], R10\n\
             STG.E.64 desc[UR4][R2.64+0x640], R12",
        );
        let order = compiled_order(SOURCE, &s, "ssk_t", 8).unwrap();
        assert_eq!(order.steps, vec![(1, 1), (0, 0), (0, 1), (0, 2), (1, 2)]);
        assert_eq!(order.reloads, 1);
        assert_eq!(
            order.local,
            vec![LocalAccess {
                store: true,
                offset: 4,
                bytes: 4,
                position: 2,
            }]
        );
    }

    #[test]
    fn spilled_and_xor_swapped_address_registers_keep_their_values() {
        // R6 = R4 + 0x320 goes to the stack and comes back as R8; R11 takes R4's low word and
        // the XOR swap R11 ^= R10, R10 ^= R11, R11 ^= R10 leaves it in R10.
        let s = sass(
            "IMAD.WIDE R4, R0, 0x8, R4\n\
             IADD3 R6, R4, 0x320, RZ\n\
             STL.64 [R1+0x10], R6\n\
             LDG.E.64.CONSTANT R12, desc[UR4][R4.64+0x648]\n\
             IMAD R6, R0, 0x3, RZ\n\
             LDL.LU.64 R8, [R1+0x10]\n\
             LDG.E.64.CONSTANT R14, desc[UR4][R8.64]\n\
             MOV R11, R4\n\
             IADD3.X R10, RZ, R5, RZ, P0, !PT\n\
             LOP3.LUT R11, R11, R10, RZ, 0x3c, !PT\n\
             LOP3.LUT R10, R11, R10, RZ, 0x3c, !PT\n\
             LOP3.LUT R11, R11, R10, RZ, 0x3c, !PT\n\
             LDG.E.64.CONSTANT R16, desc[UR4][R10.64+0x328]\n\
             STG.E.64 desc[UR4][R2.64+0x320], R10\n\
             STG.E.64 desc[UR4][R2.64+0x640], R12",
        );
        // One base: the pointer's, at 0x648, 0x320 and 0x328.
        let (mem, local) = memory_accesses(&s["ssk_t"]);
        let loads: Vec<Access> = mem.into_iter().filter(|a| !a.store).collect();
        assert!(loads.iter().all(|a| a.root == loads[0].root), "{loads:?}");
        assert_eq!(
            loads.iter().map(|a| a.offset).collect::<Vec<_>>(),
            vec![0x648, 0x320, 0x328]
        );
        let order = compiled_order(SOURCE, &s, "ssk_t", 8).unwrap();
        assert_eq!(order.steps, vec![(1, 1), (0, 0), (0, 1), (0, 2), (1, 2)]);
        // The spill itself: 8 bytes stored after the first load, loaded back after it too.
        let spill = |store, position| LocalAccess {
            store,
            offset: 0x10,
            bytes: 8,
            position,
        };
        assert_eq!(local, vec![spill(true, 0), spill(false, 1)]);
        assert_eq!(order.local, local);
    }

    #[test]
    fn a_pointer_computed_anew_from_the_same_values_is_one_base() {
        // The output pointer is computed from the kernel parameter before each fold point's
        // store (LDC, IMAD.WIDE), the second time moved by IMAD.MOV.U32: one base with both
        // stores, where two bases of one store each fit two shifts apiece. A guarded or
        // uniform-register operand keeps a root of its own.
        let body = |second: &str| {
            sass(&format!(
                "IMAD.WIDE R4, R0, 0x8, R4\n\
                 LDG.E.64.CONSTANT R8, desc[UR4][R4.64+0x648]\n\
                 LDG.E.64.CONSTANT R10, desc[UR4][R4.64+0x320]\n\
                 LDG.E.64.CONSTANT R12, desc[UR4][R4.64+0x328]\n\
                 LDC.64 R6, c[0x0][0x218]\n\
                 IMAD.WIDE R6, R0, 0x8, R6\n\
                 STG.E.64 desc[UR4][R6.64+0x320], R10\n\
                 {second}\n\
                 IMAD.WIDE R2, R0, 0x8, R2\n\
                 IMAD.MOV.U32 R14, RZ, RZ, R2\n\
                 STG.E.64 desc[UR4][R14.64+0x640], R12"
            ))
        };
        let s = body("LDC.64 R2, c[0x0][0x218]");
        let order = compiled_order(SOURCE, &s, "ssk_t", 8).unwrap();
        assert_eq!(order.steps, vec![(1, 1), (0, 0), (0, 1), (0, 2), (1, 2)]);
        let (mem, _) = memory_accesses(&s["ssk_t"]);
        let stores: Vec<&Access> = mem.iter().filter(|a| a.store).collect();
        assert_eq!(stores[0].root, stores[1].root);
        for other in ["@P0 LDC.64 R2, c[0x0][0x218]", "LDC.64 R2, c[0x0][UR4]"] {
            let e = compiled_order(SOURCE, &body(other), "ssk_t", 8).unwrap_err();
            assert!(
                matches!(e, SassOrderError::NoShift { kind: "stores", .. }),
                "{other}: {e}"
            );
        }
    }

    #[test]
    fn an_access_the_source_lacks_leaves_the_configuration_unmatched() {
        let s = sass(
            "LDG.E.64 R8, desc[UR4][R4.64+0x648]\n\
             LDG.E.64 R10, desc[UR4][R4.64+0x320]\n\
             LDG.E.64 R12, desc[UR4][R4.64+0x328]\n\
             LDG.E.64 R14, desc[UR4][R4.64+0x330]\n\
             STG.E.64 desc[UR4][R2.64+0x320], R10\n\
             STG.E.64 desc[UR4][R2.64+0x640], R12",
        );
        let e = compiled_order(SOURCE, &s, "ssk_t", 8).unwrap_err();
        assert!(
            matches!(e, SassOrderError::NoShift { kind: "loads", .. }),
            "{e}"
        );
        assert_eq!(
            compiled_order(SOURCE, &s, "ssk_other", 8).unwrap_err(),
            SassOrderError::NoFunction("ssk_other".into())
        );
    }

    #[test]
    fn elf_images_end_at_their_furthest_section() {
        // A minimal ELF64 header: no program headers, two section headers at 0x40 (64 bytes
        // each), the second a PROGBITS section at 0xC0 of 0x10 bytes: the image is 0xD0 long.
        let mut elf = vec![0u8; 0xD0];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[0x28] = 0x40; // e_shoff
        elf[0x3A] = 64; // e_shentsize
        elf[0x3C] = 2; // e_shnum
        let h = 0x40 + 64;
        elf[h + 4] = 1; // SHT_PROGBITS
        elf[h + 0x18] = 0xC0; // sh_offset
        elf[h + 0x20] = 0x10; // sh_size
        let mut blob = b"cache entry header".to_vec();
        blob.extend_from_slice(&elf);
        blob.extend_from_slice(b"trailer");
        let images = elf_images(&blob);
        assert_eq!(images.len(), 1);
        assert_eq!(images[0], &elf[..]);
        assert!(elf_images(b"no image here").is_empty());
    }
}

//! Compiled issue orders: the order in which the compiled CUDA twins issue each thread's loads and
//! stores, recovered from their SASS by `bench/compiled-order.py` (issue 8). ptxas spreads a fold
//! point's loads over about twice their number and interleaves neighbouring fold points; with the
//! order, the estimate's L1 clock follows the compiled code instead of the emitted source.
//!
//! File format, one configuration per line (`#` comments and blank lines ignored):
//!
//! ```text
//! KERNEL DTYPE BX,BY,BZ FX,FY,FZ NX,NY,NZ: F,I F,I ...
//! ```
//!
//! the kernel's name and element type, the block, the fold and the domain, then every issued
//! `(fold point index, instruction index)` pair in issue order (the indices of
//! [`MemoryProgram`](crate::footprint::MemoryProgram)), each optionally with its place among the
//! compiled code's instructions, `F,I@P` (from 0; on every pair of a line or on none): how far
//! apart the stores go out sets how many partly written records L2 loses
//! ([`MemoryProgram::with_store_places`](crate::footprint::MemoryProgram::with_store_places)).
//! Where the compiled code spills registers,
//! its stack accesses stand among them in issue order: `s@OFFSET:BYTES` for a store (`STL`),
//! `l@OFFSET:BYTES` for a load (`LDL`), the byte offset in the thread's stack frame and the bytes
//! per thread (4, 8 or 16); see [`LocalAccess`].

use super::CountersError;
use crate::config::LaunchConfig;
use crate::footprint::{LocalAccess, MemoryProgram};
use crate::ir::{Domain, Kernel};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What a line of the file is for: kernel, element type, block, fold, domain.
type OrderKey = (String, String, [usize; 3], [usize; 3], [usize; 3]);

/// The compiled code's issue order of one thread: its global loads and stores, and its stack
/// accesses (register spills) placed among them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompiledOrder {
    /// `(fold point index, instruction index)` of every global access, in issue order.
    pub steps: Vec<(usize, usize)>,
    /// The stack accesses, in issue order (positions in `steps`).
    pub local: Vec<LocalAccess>,
    /// Global loads the compiled code issues a second time (ptxas loads a read-only element
    /// again instead of spilling it); `steps` keeps each first load. Not in the file.
    pub reloads: usize,
    /// Each step's place among the compiled code's instructions (from 0), where known; empty:
    /// not known.
    pub places: Vec<usize>,
}

/// The compiled issue orders of a file, by kernel, element type, configuration and domain.
#[derive(Debug, Clone, Default)]
pub struct CompiledOrders {
    orders: HashMap<OrderKey, CompiledOrder>,
    path: PathBuf,
}

impl CompiledOrders {
    /// Parses the text of the file at `path` (the path is for messages).
    pub fn parse(text: &str, path: &Path) -> Result<CompiledOrders, CountersError> {
        let bad = |line: usize, message: String| CountersError::CompiledOrders {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut orders = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((head, order)) = line.split_once(':') else {
                return Err(bad(i + 1, "no `:` between the configuration and the order; expected `KERNEL DTYPE BX,BY,BZ FX,FY,FZ NX,NY,NZ: F,I F,I ...`".into()));
            };
            let words: Vec<&str> = head.split_whitespace().collect();
            let [kernel, dtype, block, fold, domain] = words[..] else {
                return Err(bad(
                    i + 1,
                    format!(
                        "`{head}` is not `KERNEL DTYPE BX,BY,BZ FX,FY,FZ NX,NY,NZ` (5 words, found {})",
                        words.len()
                    ),
                ));
            };
            let triple = |what: &str, s: &str| -> Result<[usize; 3], CountersError> {
                let v: Option<Vec<usize>> = s.split(',').map(|p| p.parse().ok()).collect();
                match v.as_deref() {
                    Some(&[x, y, z]) if x > 0 && y > 0 && z > 0 => Ok([x, y, z]),
                    _ => Err(bad(
                        i + 1,
                        format!("{what} `{s}` is not three positive integers X,Y,Z"),
                    )),
                }
            };
            let key = (
                kernel.to_string(),
                dtype.to_lowercase(),
                triple("block", block)?,
                triple("fold", fold)?,
                triple("domain", domain)?,
            );
            let mut parsed = CompiledOrder::default();
            for (k, pair) in order.split_whitespace().enumerate() {
                if let Some(local) = stack_access(pair, parsed.steps.len()) {
                    parsed.local.push(local);
                    continue;
                }
                let (pair_only, place) = match pair.split_once('@') {
                    Some((p, at)) => (p, Some(at.parse::<usize>().ok())),
                    None => (pair, None),
                };
                let step = pair_only
                    .split_once(',')
                    .and_then(|(f, n)| Some((f.parse().ok()?, n.parse().ok()?)));
                let (Some(step), Some(Some(_)) | None) = (step, place) else {
                    return Err(bad(
                        i + 1,
                        format!(
                            "entry {} `{pair}` is neither `F,I` or `F,I@P` (fold point and \
                             instruction indices, and the place among the compiled \
                             instructions) nor a stack access `s@OFFSET:BYTES` or \
                             `l@OFFSET:BYTES`",
                            k + 1
                        ),
                    ));
                };
                if !parsed.steps.is_empty() && place.is_some() == parsed.places.is_empty() {
                    return Err(bad(
                        i + 1,
                        format!(
                            "entry {} `{pair}`: a line gives the place `@P` on every `F,I` \
                             entry or on none",
                            k + 1
                        ),
                    ));
                }
                parsed.steps.push(step);
                if let Some(Some(at)) = place {
                    parsed.places.push(at);
                }
            }
            if parsed.steps.is_empty() {
                return Err(bad(i + 1, "the order after `:` is empty".into()));
            }
            if orders.insert(key, parsed).is_some() {
                return Err(bad(i + 1, format!("a second order for `{}`", head.trim())));
            }
        }
        Ok(CompiledOrders {
            orders,
            path: path.to_path_buf(),
        })
    }

    /// These orders with those of `more` for the configurations these lack (a file of orders
    /// read again later, for twins whose SASS the first could not match).
    pub fn with_more(mut self, more: CompiledOrders) -> CompiledOrders {
        for (key, order) in more.orders {
            self.orders.entry(key).or_insert(order);
        }
        self
    }

    /// Reads and parses the file at `path`.
    pub fn read(path: &Path) -> Result<CompiledOrders, CountersError> {
        let text = std::fs::read_to_string(path).map_err(|source| CountersError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// The order of `kernel` (by name and element type) launched with `config` on `domain`.
    pub fn get(
        &self,
        kernel: &Kernel,
        config: &LaunchConfig,
        domain: &Domain,
    ) -> Option<&CompiledOrder> {
        let dtype = format!("{:?}", kernel.dtype()).to_lowercase();
        self.orders.get(&(
            kernel.name.clone(),
            dtype,
            config.block,
            config.fold,
            domain.size,
        ))
    }

    /// `prog` (of `kernel`) issued in the order the file gives for its configuration and domain,
    /// and whether the file names them (else `prog` as it was).
    pub fn apply(
        &self,
        kernel: &Kernel,
        prog: MemoryProgram,
    ) -> Result<(MemoryProgram, bool), CountersError> {
        let Some(order) = self.get(kernel, &prog.config, &prog.domain) else {
            return Ok((prog, false));
        };
        let config = prog.config;
        let prog = prog
            .with_compiled_order(order.steps.clone())
            .and_then(|p| p.with_local_accesses(order.local.clone()))
            .and_then(|p| {
                if order.places.is_empty() {
                    Ok(p)
                } else {
                    p.with_store_places(&order.places)
                }
            })
            .map_err(|source| CountersError::CompiledOrderMismatch {
                path: self.path.clone(),
                configuration: format!("{config} ({})", super::entry_name(&config)),
                source,
            })?;
        Ok((prog, true))
    }

    /// The file's line for the `order` of `kernel` launched with `config` on `domain`.
    pub fn line(
        kernel: &Kernel,
        config: &LaunchConfig,
        domain: &Domain,
        order: &CompiledOrder,
    ) -> String {
        let triple = |v: [usize; 3]| v.map(|x| x.to_string()).join(",");
        let mut steps = Vec::with_capacity(order.steps.len() + order.local.len());
        let mut local = order.local.iter().peekable();
        for (i, (f, n)) in order.steps.iter().enumerate() {
            while let Some(a) = local.next_if(|a| a.position == i) {
                steps.push(stack_token(a));
            }
            steps.push(match order.places.get(i) {
                Some(at) => format!("{f},{n}@{at}"),
                None => format!("{f},{n}"),
            });
        }
        steps.extend(local.map(stack_token));
        format!(
            "{} {} {} {} {}: {}",
            kernel.name,
            format!("{:?}", kernel.dtype()).to_lowercase(),
            triple(config.block),
            triple(config.fold),
            triple(domain.size),
            steps.join(" ")
        )
    }

    /// Configurations whose compiled code spills (has stack accesses).
    pub fn spilling(&self) -> usize {
        self.orders.values().filter(|o| !o.local.is_empty()).count()
    }

    /// The file the orders came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Configurations in the file.
    pub fn len(&self) -> usize {
        self.orders.len()
    }

    /// Whether the file holds no configuration.
    pub fn is_empty(&self) -> bool {
        self.orders.is_empty()
    }
}

/// A stack access's token: `s@OFFSET:BYTES` or `l@OFFSET:BYTES`.
fn stack_token(a: &LocalAccess) -> String {
    format!(
        "{}@{}:{}",
        if a.store { 's' } else { 'l' },
        a.offset,
        a.bytes
    )
}

/// The stack access a token names, placed after `position` global accesses (`None`: not one).
fn stack_access(token: &str, position: usize) -> Option<LocalAccess> {
    let (kind, rest) = token.split_once('@')?;
    let store = match kind {
        "s" => true,
        "l" => false,
        _ => return None,
    };
    let (offset, bytes) = rest.split_once(':')?;
    Some(LocalAccess {
        store,
        offset: offset.parse().ok()?,
        bytes: bytes.parse().ok()?,
        position,
    })
}

//! Function size for the SQTT_INSTRUMENT_FUNCTIONS threshold: an instruction count, or the
//! weighted cost model (docs/format.md section 2, "Which functions get entry/exit markers").

use sqtt_config::FunctionThreshold;

use std::collections::{HashMap, HashSet};

use crate::llvm::{Block, Value};

/// Weight of one instruction in the cost model (`cost:N`), or 0/1 in count mode (`N`).
fn weight(i: Value, weighted: bool, is_sqtt: &dyn Fn(Value) -> bool) -> u64 {
    if i.is_phi() || i.is_alloca() || i.is_unreachable() || is_sqtt(i) {
        return 0;
    }
    if let Some(f) = i.called_function() {
        let n = f.name_ref();
        if n.starts_with("llvm.dbg.") {
            return 0;
        }
        if !weighted {
            // The count skips PHIs, allocas, debug intrinsics and `unreachable` only
            // (so does AMD's pass): lifetime markers count here, weigh nothing below.
            return 1;
        }
        if n.starts_with("llvm.lifetime.") {
            return 0;
        }
        if n.starts_with("llvm.amdgcn.mfma")
            || n.starts_with("llvm.amdgcn.wmma")
            || n.starts_with("llvm.amdgcn.smfmac")
        {
            return 16;
        }
        if n.starts_with("llvm.amdgcn.ds.") {
            return 4;
        }
        return 1;
    }
    if !weighted {
        return 1;
    }
    let pointer = if i.is_load() {
        Some(i.operand(0))
    } else if i.is_store() {
        Some(i.operand(1))
    } else {
        None
    };
    // LDS is cheap; every other load or store goes out to memory (global and flat, but also
    // constant, scratch and buffer-resource pointers), as AMD's pass weighs them.
    match pointer.map(|p| p.pointer_address_space()) {
        None => 1,
        Some(Some(crate::target::addrspace::LOCAL)) => 4,
        Some(_) => 10,
    }
}

/// The size of a function under a threshold's measure.
pub fn function_size(
    f: Value,
    threshold: FunctionThreshold,
    is_sqtt: &dyn Fn(Value) -> bool,
) -> u64 {
    let weighted = matches!(threshold, FunctionThreshold::Cost(_));
    f.blocks()
        .into_iter()
        .flat_map(|b| b.instructions())
        .map(|i| weight(i, weighted, is_sqtt))
        .sum()
}

/// Whether a function of this size gets markers.
pub fn above(size: u64, threshold: FunctionThreshold) -> bool {
    match threshold {
        FunctionThreshold::Off => false,
        FunctionThreshold::Count(n) | FunctionThreshold::Cost(n) => size > u64::from(n),
    }
}

/// Proves that a function's size after optimisation stays at or below the threshold, so that the
/// late phase would remove its markers whether or not the function survives (then its
/// post-optimisation size decides) or is inlined away (then its size now decides).
///
/// A function grows through optimisation by what is inlined into it, by loop unrolling, by
/// devirtualised calls and by memory intrinsics turned into loads and stores; otherwise only by
/// the little code that simplification duplicates (jump threading, SLP vectorisation's element
/// shuffles). The bound is the function's size plus the bounds of the functions it calls, with
/// no bound through a loop, a call through a pointer, recursion or a memory intrinsic; it must
/// stay at or below the threshold when doubled, a margin for the duplication.
pub struct SizeBound<'a> {
    threshold: FunctionThreshold,
    is_sqtt: &'a dyn Fn(Value) -> bool,
    memo: HashMap<Value, Option<u64>>,
}

impl<'a> SizeBound<'a> {
    pub fn new(threshold: FunctionThreshold, is_sqtt: &'a dyn Fn(Value) -> bool) -> Self {
        SizeBound {
            threshold,
            is_sqtt,
            memo: HashMap::new(),
        }
    }

    /// Whether the function certainly ends at or below the threshold.
    pub fn stays_small(&mut self, f: Value) -> bool {
        self.bound(f).is_some()
    }

    /// The function's bound, or None when there is none at or below the threshold's half.
    fn bound(&mut self, f: Value) -> Option<u64> {
        if let Some(b) = self.memo.get(&f) {
            return *b;
        }
        // Recursion meets this None.
        self.memo.insert(f, None);
        let b = self.compute(f);
        self.memo.insert(f, b);
        b
    }

    fn compute(&mut self, f: Value) -> Option<u64> {
        if has_cycle(f) {
            return None;
        }
        let mut total = function_size(f, self.threshold, self.is_sqtt);
        for bb in f.blocks() {
            for i in bb.instructions() {
                if i.is_invoke_or_callbr() {
                    return None;
                }
                if !i.is_call() {
                    continue;
                }
                match i.called_function() {
                    Some(g) if g.is_declaration() => {
                        let n = g.name_ref();
                        if n.starts_with("llvm.memcpy")
                            || n.starts_with("llvm.memmove")
                            || n.starts_with("llvm.memset")
                        {
                            return None;
                        }
                    }
                    Some(g) => total = total.saturating_add(self.bound(g)?),
                    None if i.called_inline_asm().is_some() => {}
                    None => return None,
                }
                if above(total.saturating_mul(2), self.threshold) {
                    return None;
                }
            }
        }
        (!above(total.saturating_mul(2), self.threshold)).then_some(total)
    }
}

/// Whether a function's control flow has a cycle (a loop, however it is written).
fn has_cycle(f: Value) -> bool {
    let Some(entry) = f.entry_block() else {
        return false;
    };
    // Iterative depth-first search; a successor still on the stack closes a cycle.
    let mut on_stack: HashSet<Block> = HashSet::new();
    let mut done: HashSet<Block> = HashSet::new();
    let mut stack: Vec<(Block, Vec<Block>)> = vec![(entry, successors(entry))];
    on_stack.insert(entry);
    while let Some((b, next)) = stack.last_mut() {
        match next.pop() {
            Some(s) if on_stack.contains(&s) => return true,
            Some(s) if done.contains(&s) => {}
            Some(s) => {
                on_stack.insert(s);
                stack.push((s, successors(s)));
            }
            None => {
                let b = *b;
                on_stack.remove(&b);
                done.insert(b);
                stack.pop();
            }
        }
    }
    false
}

fn successors(b: Block) -> Vec<Block> {
    b.terminator().map(|t| t.successors()).unwrap_or_default()
}

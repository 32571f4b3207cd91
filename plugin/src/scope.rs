//! Scope filtering: one check per function, computed in the entry block from the hardware ID
//! registers, and a branch around every run of consecutive markers.
//!
//! ```text
//!   entry:       %sqtt.in_scope = ((cu_mask >> cu) & (simd_mask >> simd) & ...) & 1
//!   ...          br i1 %sqtt.in_scope, label %sqtt.trace, label %sqtt.skip
//!   sqtt.trace:  <marker>; <marker>; ...; br label %sqtt.skip
//!   sqtt.skip:   <the instruction the markers were placed before> ...
//! ```
//!
//! A marker placed where only what markers leave behind (sentinel calls about to be replaced,
//! debug and lifetime intrinsics, the plugin's own instructions) separates it from the previous
//! check's `sqtt.skip` head joins that check's block: one branch for the run, as upstream's pass
//! coalesces adjacent markers, instead of one each.

use std::collections::HashMap;

use sqtt_config::Scope;

use sqtt_markers::sentinel;

use crate::compat;
use crate::emit::HEADER_M0_TRACE_ASM;
use crate::llvm::{insert_block_after, Block, Builder, Module, Value};
use crate::target::{HwRegField, Target};

/// The per-function cached scope-check values, and the check blocks made so far.
pub struct ScopeChecks {
    scope: Scope,
    cache: HashMap<Value, Option<Value>>,
    /// `sqtt.skip` block -> its `sqtt.trace` block, for markers that can join the check.
    traces: HashMap<Block, Block>,
}

impl ScopeChecks {
    pub fn new(scope: Scope) -> ScopeChecks {
        ScopeChecks {
            scope,
            cache: HashMap::new(),
            traces: HashMap::new(),
        }
    }

    /// A builder for a marker before `at`, entered only when `in_scope` holds: at the end of
    /// the previous check's `sqtt.trace` block when only marker leftovers stand between that
    /// check and `at` ([`is_marker_leftover`]), else in a new check ([`guard_before`]).
    /// Returns the builder and whether it joined an existing check.
    pub fn guard(&mut self, m: Module, at: Value, in_scope: Value) -> (Builder, bool) {
        let block = at.parent_block();
        if let Some(trace) = self.traces.get(&block).copied() {
            let mut cur = block.instructions().into_iter();
            let clear = cur
                .by_ref()
                .take_while(|i| *i != at)
                .all(|i| is_marker_leftover(m, i));
            if clear {
                if let Some(br) = trace.terminator().filter(|br| br.successor(0) == block) {
                    let b = m.builder();
                    b.position_before(br);
                    return (b, true);
                }
            }
        }
        let (b, _) = guard_before(m, at, in_scope);
        self.traces.insert(at.parent_block(), b.insertion_block());
        (b, false)
    }

    /// The fields a target filters on with these masks.
    fn active_fields(&self, target: &Target) -> Vec<(HwRegField, u32)> {
        let l = target.hw_id_layout();
        [
            (l.cu, self.scope.cu),
            (l.simd, self.scope.simd),
            (l.wave, self.scope.wave),
            (l.wg, self.scope.wg),
        ]
        .into_iter()
        .filter(|(f, mask)| Scope::filters(*mask, f.bits))
        .collect()
    }

    /// The function's in-scope value, if [`ScopeChecks::in_scope`] built one.
    pub fn cached(&self, function: Value) -> Option<Value> {
        self.cache.get(&function).copied().flatten()
    }

    /// The function's `i1` in-scope value, built once at the top of its entry block.
    pub fn in_scope(&mut self, m: Module, function: Value, target: &Target) -> Option<Value> {
        if let Some(v) = self.cache.get(&function) {
            return *v;
        }
        let fields = self.active_fields(target);
        let v = if fields.is_empty() {
            None
        } else {
            let entry = function.entry_block()?;
            let at = entry.first_insertion_point()?;
            let b = m.builder();
            b.position_before(at);
            b.set_debug_loc(None);
            let i32t = m.i32();
            let getreg_ty = m.fn_type(i32t, &[i32t]);
            let getreg = m.declare(compat::S_GETREG, getreg_ty);
            let mut acc: Option<Value> = None;
            for (field, mask) in fields {
                let id = b.call(getreg_ty, getreg, &[m.const_i32(field.imm())]);
                let bit = b.lshr(m.const_i32(mask), id);
                acc = Some(match acc {
                    None => bit,
                    Some(a) => b.and(a, bit),
                });
            }
            let one = b.and(acc?, m.const_i32(1));
            Some(b.icmp_ne(one, m.const_i32(0)))
        };
        self.cache.insert(function, v);
        v
    }
}

/// What a marker leaves in the code besides its records, and so may stand between two markers
/// that share one scope check: the plugin's own instructions (a sync pin, an early marker not yet
/// replaced), sentinel calls and markers.hpp records about to be replaced, debug and lifetime
/// intrinsics. None of them defines a value a later marker could read.
pub fn is_marker_leftover(m: Module, i: Value) -> bool {
    if crate::is_sqtt_instruction(m, i) {
        return true;
    }
    if let Some(f) = i.called_function() {
        let n = f.name_ref();
        return sentinel::ALL.contains(&n)
            || n.starts_with("llvm.dbg.")
            || n.starts_with("llvm.lifetime.");
    }
    i.called_inline_asm().as_deref() == Some(HEADER_M0_TRACE_ASM) && !i.has_uses()
}

/// Splits the block before `at` and returns a builder positioned in a new `sqtt.trace` block
/// that is entered only when `in_scope` holds; the code from `at` on continues in `sqtt.skip`.
/// Returns the skip block's first instruction (`at`).
pub fn guard_before(m: Module, at: Value, in_scope: Value) -> (Builder, Value) {
    let head = at.parent_block();
    let skip = at.split_block_before("sqtt.skip");
    // splitBasicBlock ended `head` with `br label %sqtt.skip`; replace it with the guard.
    if let Some(br) = head.terminator() {
        // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
        unsafe { br.erase() };
    }
    let trace = insert_block_after(head, "sqtt.trace");
    let b = m.builder();
    b.position_at_end(head);
    b.cond_br(in_scope, trace, skip);
    b.position_at_end(trace);
    let br = b.br(skip);
    b.position_before(br);
    (b, at)
}

//! Scope filtering: one check per function, computed in the entry block from the hardware ID
//! registers, and a check at every marker.
//!
//! ```text
//!   entry:  %sqtt.in_scope = ((cu_mask >> cu) & (simd_mask >> simd) & ...) & 1    (an i32)
//!   ...     asm "s_cmp_eq_u32 $1, 0; s_cbranch_scc1 .Lsqtt_skipN; <records>; .Lsqtt_skipN:"
//! ```
//!
//! A marker checks the value inside its own inline asm ([`crate::emit::Emitter::marker`]), so
//! markers add no basic blocks: every block is one more SelectionDAG and more work for the
//! divergence analyses, and the branch around each run of markers in the CFG made the scope
//! filter cost a tenth of the compile time of a large file. A marker placed where only what
//! markers leave behind ([`crate::tags::is_marker_leftover`]) separates it from the previous marker's checked
//! records joins that asm: one check for the run, as upstream's pass coalesces adjacent markers. Address traces
//! ([`crate::address`]), whose lane loops are CFG, keep a branch around their region
//! ([`guard_before`]) on the `i1` form of the value.

use std::collections::HashMap;

use sqtt_config::Scope;

use crate::compat;
use crate::llvm::{insert_block_after, Builder, Module, Value};
use crate::target::{HwRegField, Target};

/// The per-function cached scope-check values.
pub struct ScopeChecks {
    scope: Scope,
    /// function -> its `i32` in-scope word (0 or 1), if it filters.
    words: HashMap<Value, Option<Value>>,
    /// function -> its `i1` in-scope value, made from the word when a branch needs it.
    conds: HashMap<Value, Value>,
}

impl ScopeChecks {
    pub fn new(scope: Scope) -> ScopeChecks {
        ScopeChecks {
            scope,
            words: HashMap::new(),
            conds: HashMap::new(),
        }
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

    /// The function's `i1` in-scope value, if [`ScopeChecks::in_scope`] built one (the
    /// condition of the branches around address traces).
    pub fn cached(&self, function: Value) -> Option<Value> {
        self.conds.get(&function).copied()
    }

    /// The function's `i1` in-scope value, right after its word ([`ScopeChecks::in_scope_word`]).
    pub fn in_scope(&mut self, m: Module, function: Value, target: &Target) -> Option<Value> {
        if let Some(c) = self.conds.get(&function) {
            return Some(*c);
        }
        let word = self.in_scope_word(m, function, target)?;
        let b = m.builder();
        b.position_before(word.next()?);
        b.set_debug_loc(None);
        let c = b.icmp_ne(word, m.const_i32(0));
        self.conds.insert(function, c);
        Some(c)
    }

    /// The function's in-scope word, an `i32` that is 1 when the wave's hardware IDs pass the
    /// filter and 0 else, built once at the top of its entry block; `None` when nothing is
    /// filtered on this target.
    pub fn in_scope_word(&mut self, m: Module, function: Value, target: &Target) -> Option<Value> {
        if let Some(v) = self.words.get(&function) {
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
            Some(b.and(acc?, m.const_i32(1)))
        };
        self.words.insert(function, v);
        v
    }
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

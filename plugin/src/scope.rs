//! Scope filtering: one check per function, computed in the entry block from the hardware ID
//! registers, and a branch around every marker.
//!
//! ```text
//!   entry:       %sqtt.in_scope = ((cu_mask >> cu) & (simd_mask >> simd) & ...) & 1
//!   ...          br i1 %sqtt.in_scope, label %sqtt.trace, label %sqtt.skip
//!   sqtt.trace:  <marker>; br label %sqtt.skip
//!   sqtt.skip:   <the instruction the marker was placed before> ...
//! ```

use std::collections::HashMap;

use sqtt_config::Scope;

use crate::compat;
use crate::llvm::{insert_block_after, Builder, Module, Value};
use crate::target::{HwRegField, Target};

/// The per-function cached scope-check values.
pub struct ScopeChecks {
    scope: Scope,
    cache: HashMap<Value, Option<Value>>,
}

impl ScopeChecks {
    pub fn new(scope: Scope) -> ScopeChecks {
        ScopeChecks {
            scope,
            cache: HashMap::new(),
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

/// Splits the block before `at` and returns a builder positioned in a new `sqtt.trace` block
/// that is entered only when `in_scope` holds; the code from `at` on continues in `sqtt.skip`.
/// Returns the skip block's first instruction (`at`).
pub fn guard_before(m: Module, at: Value, in_scope: Value) -> (Builder, Value) {
    let head = at.parent_block();
    let skip = at.split_block_before("sqtt.skip");
    // splitBasicBlock ended `head` with `br label %sqtt.skip`; replace it with the guard.
    if let Some(br) = head.terminator() {
        br.erase();
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

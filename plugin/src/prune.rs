//! Early markers whose fate is already settled, removed during optimisation.
//!
//! The early phase puts entry/exit placeholders in every eligible function, because the
//! threshold is applied after optimisation: to a function's post-optimisation size while it
//! exists, to its pre-optimisation size once it has been inlined away. A function at or below the
//! threshold before optimisation that no longer has a definition will therefore lose its markers
//! in the late phase, inlined copies included, whatever happens next: such a marker is dead
//! weight. Left in place, tens of thousands of them (every inlined copy of every small helper)
//! travel through the inliner and the scalar optimisers as side-effecting calls, which doubled
//! the time of the IR pipeline on a rocPRIM translation unit. This pass (a function pass after
//! each instruction combiner, by then the inliner has run on the function's callees) removes
//! them as soon as their function is gone (no definition, or dead: see [`is_gone`]), so a caller
//! is optimised, and inlined further, without them. It removes exactly what the late phase would: the tag names the function only when the
//! pre-optimisation size is at or below the threshold (see [`crate::ledger::MARKER_TAG_MD`]).

use std::collections::HashMap;

use crate::ledger;
use crate::llvm::Value;

/// Removes the settled early markers of a function. Returns whether anything was removed.
pub fn run(f: Value) -> bool {
    let m = f.parent_module();
    let tag_kind = crate::tags::tag_kinds(m).0;
    // Placeholders of one function share one uniqued tag node: one lookup per node.
    let mut settled: HashMap<crate::compat::sys::prelude::LLVMValueRef, bool> = HashMap::new();
    let mut doomed: Vec<Value> = Vec::new();
    f.for_each_instruction(|inst| {
        let Some(node) = inst.metadata(tag_kind) else {
            return;
        };
        let gone = *settled.entry(node).or_insert_with(|| {
            let items = inst.metadata_items(tag_kind).unwrap_or_default();
            ledger::removable_if_gone(&items)
                .is_some_and(|name| m.function(name).is_none_or(is_gone))
        });
        if gone {
            doomed.push(inst);
        }
    });
    for inst in &doomed {
        // SAFETY: collected above, each once; nothing uses these handles afterwards.
        unsafe { inst.erase() };
    }
    !doomed.is_empty()
}

/// Whether a function is gone for the late phase: no definition, or a dead one (nothing uses it
/// and its linkage lets it go: LLVM 15 erases such a callee right after inlining its last call,
/// newer inliners leave it to the end of the call-graph walk, and global DCE removes it before
/// the late phase in any case).
fn is_gone(f: Value) -> bool {
    f.is_declaration() || (!f.has_uses() && f.is_discardable_if_unused())
}

//! How the pass knows its own work in the code: the metadata it tags its instructions with, the
//! header records it reads, and what markers leave behind. Every instrumentation module asks
//! here (it sits below them all, on [`crate::ledger`] and [`crate::llvm`] only).

use sqtt_markers::sentinel;

use crate::ledger;
use crate::llvm::{Module, Value};

/// Metadata kind that tags every marker the plugin creates.
pub const MARKER_MD: &str = "sqtt.marker";

/// The metadata kinds of the pass's tags in a context, looked up once per context.
pub(crate) fn tag_kinds(m: Module) -> (u32, u32) {
    thread_local! {
        static KINDS: std::cell::Cell<(usize, u32, u32)> = const { std::cell::Cell::new((0, 0, 0)) };
    }
    KINDS.with(|k| {
        let (ctx, tag, marker) = k.get();
        if ctx == m.context_key() {
            return (tag, marker);
        }
        let v = (m.md_kind(ledger::MARKER_TAG_MD), m.md_kind(MARKER_MD));
        k.set((m.context_key(), v.0, v.1));
        v
    })
}

/// Whether an instruction is one the pass made: a marker or its boundary (`!sqtt.marker`), or a
/// bare early marker (known by its asm text, [`ledger::read_tag`]).
pub(crate) fn is_sqtt_instruction(m: Module, i: Value) -> bool {
    i.metadata(tag_kinds(m).1).is_some() || ledger::read_tag(i).is_some()
}

/// What a marker leaves in the code besides its records, and so may stand between two markers
/// that share one scope check: the plugin's own instructions (a sync pin, an early marker not yet
/// replaced), sentinel calls and header records about to be replaced, debug and lifetime
/// intrinsics. None of them defines a value a later marker could read.
pub fn is_marker_leftover(m: Module, i: Value) -> bool {
    if is_sqtt_instruction(m, i) {
        return true;
    }
    if let Some(f) = i.called_function() {
        let n = f.name_ref();
        return sentinel::ALL.contains(&n)
            || n.starts_with("llvm.dbg.")
            || n.starts_with("llvm.lifetime.");
    }
    header_record_value(i).is_some() && !i.has_uses()
}

/// The intrinsics of the two trace instructions (LLVM 19+; an older LLVM keeps a call of either
/// as an unknown intrinsic, which the plugin replaces before code generation).
const TTRACEDATA: &str = "llvm.amdgcn.s.ttracedata";
const TTRACEDATA_IMM: &str = "llvm.amdgcn.s.ttracedata.imm";

/// The value a header's record writes, if `i` is one. The plugin's own records can take these
/// forms too: callers leave out what [`crate::emit::Emitter::is_plugin_marker`] says the plugin made.
pub fn header_record_value(i: Value) -> Option<Value> {
    let value = match i.called_inline_asm() {
        Some(text) => match (text, i.num_args()) {
            (sqtt_markers::HEADER_RECORD_ASM, 2) | (sqtt_markers::LEGACY_HEADER_RECORD_ASM, 1) => {
                i.arg(0)
            }
            _ => return None,
        },
        None => match i.called_function()?.name_ref() {
            TTRACEDATA | TTRACEDATA_IMM if i.num_args() == 1 => i.arg(0),
            _ => return None,
        },
    };
    // A non-constant is made wave-uniform before the asm; the marker sequence does that itself.
    let readfirstlane = value
        .called_function()
        .is_some_and(|f| f.name_ref().starts_with("llvm.amdgcn.readfirstlane"));
    Some(if readfirstlane { value.arg(0) } else { value })
}

//! Numeric markers the headers write themselves: markers.hpp's `sqtt_marker_enter(uint32_t)` ...,
//! the ID markers of amd_sqtt_marker/sqtt_marker.h, ours and AMD's own. They work without the
//! plugin; with it they get the same treatment as named ones: the SQTT_MEM_BARRIER boundary, the
//! scope check, and `s_ttracedata_imm` for small constant values on gfx10+.
//!
//! A header's record ([`header_record_value`]) is one of:
//! - the asm statement of sqtt_m0_record.h ([`sqtt_markers::HEADER_RECORD_ASM`]), which AMD's
//!   later header writes too;
//! - markers.hpp's earlier asm with M0 as an input ([`sqtt_markers::LEGACY_HEADER_RECORD_ASM`]);
//! - a call of `llvm.amdgcn.s.ttracedata` or `.imm` the plugin did not make: AMD's header on LLVM
//!   19+ (all its ID markers, or those off gfx12 in the version that writes the asm on gfx12),
//!   or code calling the builtins itself.

use crate::emit::{Emitter, Record};
use crate::llvm::{Module, Value};
use crate::named::{place_marker, target_of, At};
use crate::scope::ScopeChecks;

/// The intrinsics of the two trace instructions (LLVM 19+; an older LLVM keeps a call of either
/// as an unknown intrinsic, which the plugin replaces before code generation).
const TTRACEDATA: &str = "llvm.amdgcn.s.ttracedata";
const TTRACEDATA_IMM: &str = "llvm.amdgcn.s.ttracedata.imm";

/// The value a header's record writes, if `i` is one. The plugin's own records can take these
/// forms too: callers leave out what [`Emitter::is_plugin_marker`] says the plugin made.
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

fn is_header_sched_barrier(emitter: &Emitter, i: Option<Value>) -> Option<Value> {
    let i = i?;
    let f = i.called_function()?;
    (f.name_ref() == "llvm.amdgcn.sched.barrier" && !emitter.is_plugin_marker(i)).then_some(i)
}

pub fn wrap_numeric_markers(
    m: Module,
    emitter: &Emitter,
    scopes: &mut ScopeChecks,
) -> Result<(), String> {
    for f in m.functions() {
        if f.is_declaration() {
            continue;
        }
        let found: Vec<(Value, Value)> = f
            .blocks()
            .into_iter()
            .flat_map(|b| b.instructions())
            .filter(|i| !emitter.is_plugin_marker(*i))
            .filter_map(|i| header_record_value(i).map(|v| (i, v)))
            .collect();
        if found.is_empty() {
            continue;
        }
        let target = target_of(f)?;
        for (call, value) in found {
            // Exits are indistinguishable from the pass's own and take the packed form; other
            // numeric values stay legacy.
            let record = match value.const_int_value() {
                Some(v) if v as u32 == sqtt_markers::encoding::EXIT_VALUE => {
                    Record::Const(v as u32)
                }
                Some(v) => Record::UserValue(v as u32),
                None => Record::Dynamic(value),
            };
            // The header's own sched_barriers are replaced by the plugin's marker sequence. They
            // go first, so that the marker takes the header call's place exactly as a named
            // marker takes its sentinel's: `place_marker` looks for a workgroup sync right after
            // `call`, not after the instruction that follows it.
            let before = is_header_sched_barrier(emitter, call.prev());
            let after = is_header_sched_barrier(emitter, call.next());
            for dead in [before, after].into_iter().flatten() {
                // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
                unsafe { dead.erase() };
            }
            place_marker(
                m,
                emitter,
                scopes,
                f,
                &target,
                At::Replacing(call),
                &[record],
            );
            if call.has_uses() {
                // The asm's M0 output (stored and dropped at -O0) is the value it wrote.
                call.replace_uses_with(call.arg(0));
            }
            // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
            unsafe { call.erase() };
        }
    }
    Ok(())
}

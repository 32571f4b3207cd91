//! Numeric markers the headers write themselves: markers.hpp's `sqtt_marker_enter(uint32_t)` ...,
//! the ID markers of amd_sqtt_marker/sqtt_marker.h, ours and AMD's own. They work without the
//! plugin; with it they get the same treatment as named ones: the SQTT_MEM_BARRIER boundary, the
//! scope check, and `s_ttracedata_imm` for small constant values on gfx10+.
//!
//! A header's record ([`crate::tags::header_record_value`]) is one of:
//! - the asm statement of sqtt_m0_record.h ([`sqtt_markers::HEADER_RECORD_ASM`]), which AMD's
//!   later header writes too;
//! - markers.hpp's earlier asm with M0 as an input ([`sqtt_markers::LEGACY_HEADER_RECORD_ASM`]);
//! - a call of `llvm.amdgcn.s.ttracedata` or `.imm` the plugin did not make: AMD's header on LLVM
//!   19+ (all its ID markers, or those off gfx12 in the version that writes the asm on gfx12),
//!   or code calling the builtins itself.

use crate::emit::{Emitter, Record};
use crate::llvm::{Module, Value};
use crate::place::{place_marker, target_of, At};
use crate::scope::ScopeChecks;
use crate::tags::header_record_value;

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

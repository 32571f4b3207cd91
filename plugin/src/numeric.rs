//! Numeric markers from markers.hpp (`sqtt_marker_enter(uint32_t)` ...): they work without the
//! plugin; with it they get the same treatment as named ones: the SQTT_MEM_BARRIER boundary,
//! the scope check, and `s_ttracedata_imm` for small constant values on gfx10+.

use crate::emit::{Emitter, Record, HEADER_M0_TRACE_ASM};
use crate::llvm::{Module, Value};
use crate::named::{place_marker, target_of, At};
use crate::scope::ScopeChecks;

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
        let found: Vec<Value> = f
            .blocks()
            .into_iter()
            .flat_map(|b| b.instructions())
            .filter(|i| {
                i.called_inline_asm() == Some(HEADER_M0_TRACE_ASM) && !emitter.is_plugin_marker(*i)
            })
            .collect();
        if found.is_empty() {
            continue;
        }
        let target = target_of(f)?;
        for call in found {
            let value = call.arg(0);
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
            // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
            unsafe { call.erase() };
        }
    }
    Ok(())
}

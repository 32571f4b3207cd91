//! Named markers: calls of the `__sqtt_named_marker_*` sentinels become marker sequences.
//!
//! IDs come from the ledger (from 1, deduplicated per kind); an exit directly followed by an
//! enter in the same block ([`fusable`]) becomes one fused `(id << 2) | 3` record.

use sqtt_markers::encoding::{self, EXIT_VALUE};
use sqtt_markers::funcmap::name_problem;
use sqtt_markers::sentinel;

use sqtt_config::Settings;

use crate::emit::{Emitter, Record};
use crate::ledger::{FinalIds, NamedKind};
use crate::llvm::{Module, Value};
use crate::place::{place_marker, target_of, At};
use crate::scope::ScopeChecks;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sentinel {
    Enter,
    Exit,
    Point,
    Data,
}

impl Sentinel {
    /// The sentinel a callee stands for: a declaration (never a definition: a C function
    /// that happens to be called `sqtt_marker_enter` and has a body is the user's) named by
    /// either spelling.
    pub fn of(callee: Value) -> Option<Sentinel> {
        if !callee.is_declaration() {
            return None;
        }
        Some(match callee.name_ref() {
            sentinel::ENTER | sentinel::C_ENTER => Sentinel::Enter,
            sentinel::EXIT | sentinel::C_EXIT => Sentinel::Exit,
            sentinel::POINT | sentinel::C_POINT => Sentinel::Point,
            sentinel::DATA | sentinel::C_DATA => Sentinel::Data,
            _ => return None,
        })
    }

    fn user_api(self) -> &'static str {
        match self {
            Sentinel::Enter => "sqtt_marker_enter",
            Sentinel::Exit => "sqtt_marker_exit",
            Sentinel::Point => "sqtt_marker_point",
            Sentinel::Data => "sqtt_marker_data",
        }
    }
}

/// Deletes the sentinel declarations no call uses any more: LLVM 22 at -O0 otherwise writes
/// them into the object as undefined (hidden) symbols, which the device link refuses.
pub fn drop_unused_sentinels(m: Module) {
    for f in m.functions() {
        if Sentinel::of(f).is_some() && !f.has_uses() {
            // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
            unsafe { f.delete_function() };
        }
    }
}

pub struct Call {
    pub inst: Value,
    pub kind: Sentinel,
    pub name: String,
}

/// Resolves the name argument of a sentinel call: a constant string, directly or through the
/// alloca a not-optimised always-inline wrapper stores it in.
pub fn resolve_name(arg: Value) -> Option<String> {
    let mut v = arg.strip_pointer_casts();
    for _ in 0..4 {
        if let Some(s) = v.global_c_string() {
            return Some(s);
        }
        if !v.is_load() {
            return None;
        }
        let slot = v.operand(0).strip_pointer_casts();
        if !slot.is_alloca() {
            return None;
        }
        // The last store into the slot before the load, in the same block.
        let mut cur = v.prev();
        let mut found = None;
        while let Some(i) = cur {
            if i.is_store() && i.operand(1).strip_pointer_casts() == slot {
                found = Some(i.operand(0));
                break;
            }
            cur = i.prev();
        }
        v = found?.strip_pointer_casts();
    }
    None
}

/// Instructions that may stand between an exit and an enter that are still "adjacent": debug
/// intrinsics, and side-effect-free work or stores into allocas (what an unoptimised wrapper
/// does to pass the name).
pub fn is_transparent(i: Value) -> bool {
    if let Some(f) = i.called_function() {
        let n = f.name_ref();
        return n.starts_with("llvm.dbg.") || n.starts_with("llvm.lifetime.");
    }
    if i.is_store() {
        return i.operand(1).strip_pointer_casts().is_alloca();
    }
    !i.may_have_side_effects()
}

/// The barrier intrinsics the pass knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarrierOp {
    /// `s_barrier` (`__syncthreads`).
    Full,
    /// `s_barrier_signal` (gfx12).
    Signal,
    /// `s_barrier_wait` (gfx12).
    Wait,
}

pub fn is_barrier_intrinsic(i: Value) -> Option<BarrierOp> {
    let callee = i.called_function()?;
    let n = callee.name_ref();
    if n == "llvm.amdgcn.s.barrier" {
        Some(BarrierOp::Full)
    } else if n.starts_with("llvm.amdgcn.s.barrier.signal") {
        Some(BarrierOp::Signal)
    } else if n.starts_with("llvm.amdgcn.s.barrier.wait") {
        Some(BarrierOp::Wait)
    } else {
        None
    }
}

pub fn collect(m: Module, f: Value) -> Result<Vec<Vec<Call>>, String> {
    let mut blocks = Vec::new();
    for bb in f.blocks() {
        let mut calls = Vec::new();
        for inst in bb.instructions() {
            let Some(callee) = inst.called_function() else {
                continue;
            };
            let Some(kind) = Sentinel::of(callee) else {
                continue;
            };
            let name = resolve_name(inst.arg(0)).ok_or_else(|| {
                format!(
                    "sqtt: {}() in {} needs a string literal as its name: the name must be \
                     known at compile time",
                    kind.user_api(),
                    f.name()
                )
            })?;
            if let Some(problem) = name_problem(&name) {
                return Err(format!(
                    "sqtt: {}({name:?}) in {}: {problem}",
                    kind.user_api(),
                    f.name()
                ));
            }
            calls.push(Call { inst, kind, name });
        }
        let _ = m;
        if !calls.is_empty() {
            blocks.push(calls);
        }
    }
    Ok(blocks)
}

/// Whether an exit and the enter after it are directly adjacent, and so fuse into one
/// `(id << 2) | 3` record (docs/format.md section 1, "directly followed"; AMD's pass fuses only
/// a call directly followed by the other). Only what leaves no machine code may stand between:
/// debug and lifetime intrinsics (so `-g` does not change the code), and the instructions that
/// hand the enter its name (at -O0: a cast of the name's stack slot, the store of the string
/// into it and the load from it). Any other instruction between them, even one without side
/// effects, is work the exit has to be timed before: the two stay separate markers.
pub fn fusable(exit: Value, enter: Value) -> bool {
    let passing = name_passing(exit, enter);
    let mut cur = exit.next();
    while let Some(i) = cur {
        if i == enter {
            return true;
        }
        let no_code = i.called_function().is_some_and(|f| {
            let n = f.name_ref();
            n.starts_with("llvm.dbg.") || n.starts_with("llvm.lifetime.")
        });
        if !no_code && !passing.contains(&i) {
            return false;
        }
        cur = i.next();
    }
    false
}

/// The instructions between `after` and the sentinel call `call` that only pass the call its
/// name: the load of the name from a stack slot, the store of the string constant into that
/// slot, and the pointer casts of the slot or the name.
fn name_passing(after: Value, call: Value) -> Vec<Value> {
    let between = |i: Value| {
        let mut cur = after.next();
        while let Some(n) = cur {
            if n == call {
                return false;
            }
            if n == i {
                return true;
            }
            cur = n.next();
        }
        false
    };
    let mut out = Vec::new();
    let mut v = call.arg(0);
    for _ in 0..8 {
        if !v.is_instruction() || !between(v) {
            break;
        }
        if v.is_load() {
            out.push(v);
            let slot = v.operand(0);
            let mut cur = v.prev();
            while let Some(i) = cur {
                if i == after {
                    break;
                }
                if i.is_store() && i.operand(1) == slot {
                    if i.operand(0)
                        .strip_pointer_casts()
                        .global_c_string()
                        .is_some()
                    {
                        out.push(i);
                    }
                    break;
                }
                cur = i.prev();
            }
            v = slot;
        } else if v.strip_pointer_casts() != v {
            out.push(v);
            v = v.operand(0);
        } else {
            break;
        }
    }
    out
}

/// The sentinel calls of a module with their names, per function and block, read before any
/// marker is placed: at -O0 a name reaches its sentinel through an alloca store and load, which a
/// scope-check split of the block in between would hide from [`resolve_name`].
pub struct Collected(Vec<(Value, Vec<Vec<Call>>)>);

pub fn collect_module(m: Module) -> Result<Collected, String> {
    let mut out = Vec::new();
    for f in m.functions() {
        if f.is_declaration() {
            continue;
        }
        let blocks = collect(m, f)?;
        if !blocks.is_empty() {
            out.push((f, blocks));
        }
    }
    Ok(Collected(out))
}

impl Collected {
    /// Numbers the named markers of one function as [`resolve`] will meet them, without placing
    /// anything: at -O0 AMD's pass gives a function's named markers their IDs before its address
    /// traces and its own function ID ([`crate::late`]).
    pub fn number_function(
        &self,
        f: Value,
        ids: &mut FinalIds,
        settings: &Settings,
    ) -> Result<(), String> {
        for (g, blocks) in &self.0 {
            if *g != f {
                continue;
            }
            for calls in blocks {
                let mut i = 0;
                while i < calls.len() {
                    i += step(ids, settings, *g, calls, i)?.consumed;
                }
            }
        }
        Ok(())
    }
}

/// One marker made of the sentinel calls of a block from `calls[i]` on: its records, the call
/// it takes the place of, and how many calls it consumes (two for a fused exit+enter).
struct Step {
    records: Vec<Record>,
    at: Value,
    consumed: usize,
}

/// The marker starting at `calls[i]`, its IDs taken from (or added to) `ids`.
fn step(
    ids: &mut FinalIds,
    settings: &Settings,
    f: Value,
    calls: &[Call],
    i: usize,
) -> Result<Step, String> {
    let c = &calls[i];
    if c.kind == Sentinel::Exit {
        if let Some(next) = calls
            .get(i + 1)
            .filter(|n| n.kind == Sentinel::Enter && fusable(c.inst, n.inst))
        {
            ids.named(NamedKind::Scope, &c.name);
            let id = ids.named(NamedKind::Scope, &next.name);
            return Ok(Step {
                records: vec![Record::Const(encoding::exit_enter(id))],
                at: next.inst,
                consumed: 2,
            });
        }
    }
    let records = match c.kind {
        Sentinel::Enter => vec![Record::Const(encoding::enter(
            ids.named(NamedKind::Scope, &c.name),
        ))],
        Sentinel::Exit => {
            ids.named(NamedKind::Scope, &c.name);
            vec![Record::Const(EXIT_VALUE)]
        }
        Sentinel::Point => vec![Record::Const(encoding::point(
            ids.named(NamedKind::Point, &c.name),
        ))],
        Sentinel::Data => {
            if settings.clock_packing() {
                return Err(format!(
                    "sqtt: sqtt_marker_data({:?}) in {} carries a payload record, which \
                     SQTT_SHADER_CLOCK_BITS={} (clock packing) does not allow; set \
                     SQTT_SHADER_CLOCK_BITS=0 or use sqtt_marker_point",
                    c.name,
                    f.name(),
                    settings.shader_clock_bits
                ));
            }
            let id = ids.named(NamedKind::Data, &c.name);
            vec![
                Record::Const(encoding::point(id)),
                Record::Payload(c.inst.arg(1)),
            ]
        }
    };
    Ok(Step {
        records,
        at: c.inst,
        consumed: 1,
    })
}

/// Replaces every collected sentinel call. Returns an error message for the user.
pub fn resolve(
    emitter: &Emitter,
    ids: &mut FinalIds,
    scopes: &mut ScopeChecks,
    collected: Collected,
) -> Result<(), String> {
    let m = emitter.module;
    for (f, blocks) in collected.0 {
        let target = target_of(f)?;
        for calls in blocks {
            let mut i = 0;
            while i < calls.len() {
                let s = step(ids, emitter.settings, f, &calls, i)?;
                place_marker(
                    m,
                    emitter,
                    scopes,
                    f,
                    &target,
                    At::Replacing(s.at),
                    &s.records,
                );
                for c in &calls[i..i + s.consumed] {
                    // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
                    unsafe { c.inst.erase() };
                }
                i += s.consumed;
            }
        }
    }
    Ok(())
}

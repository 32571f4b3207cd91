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
use crate::scope::ScopeChecks;
use crate::target::Target;

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
fn is_transparent(i: Value) -> bool {
    if let Some(f) = i.called_function() {
        let n = f.name_ref();
        return n.starts_with("llvm.dbg.") || n.starts_with("llvm.lifetime.");
    }
    if i.is_store() {
        return i.operand(1).strip_pointer_casts().is_alloca();
    }
    !i.may_have_side_effects()
}

/// [`is_transparent`] for the other instrumentation modules.
pub fn is_transparent_pub(i: Value) -> bool {
    is_transparent(i)
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

/// Whether only transparent instructions lie between two instructions of one block.
pub fn adjacent(first: Value, second: Value) -> bool {
    let mut cur = first.next();
    while let Some(i) = cur {
        if i == second {
            return true;
        }
        if !is_transparent(i) {
            return false;
        }
        cur = i.next();
    }
    false
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

/// Where a marker goes: before an instruction that stays, or in the place of one the caller
/// erases afterwards (a sentinel call, a bare early marker, a markers.hpp record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    Before(Value),
    /// Directly after an instruction (never a terminator): before whatever follows it when the
    /// marker is placed, so markers placed earlier before that next instruction come after it.
    After(Value),
    Replacing(Value),
}

impl At {
    pub fn inst(self) -> Value {
        match self {
            At::Before(v) | At::Replacing(v) => v,
            At::After(v) => v
                .next()
                .expect("an instruction followed by its block's terminator"),
        }
    }
}

/// Emits a marker at `at`, behind the function's scope check when filtering is on (in the
/// marker's own asm, [`Emitter::marker`]). Its sched_barriers keep it in place, also right
/// before a workgroup sync.
pub fn place_marker(
    m: Module,
    emitter: &Emitter,
    scopes: &mut ScopeChecks,
    f: Value,
    target: &Target,
    at: At,
    records: &[Record],
) {
    // A marker after an instruction is attributed to it (the memory operation it times).
    let loc = match at {
        At::After(v) => v.debug_loc(),
        _ => at.inst().debug_loc(),
    };
    let in_scope = scopes.in_scope_word(m, f, target);
    let at = at.inst();
    let b = m.builder();
    b.position_before(at);
    b.set_debug_loc(loc);
    emitter.marker(&b, at, target, records, in_scope);
}

thread_local! {
    static TARGETS: std::cell::RefCell<std::collections::HashMap<Value, Target>> = Default::default();
}

/// The target of a function from its `target-cpu` attribute; functions without one (linked in
/// from the device libraries) take the module's. Cached for one run of the pass.
pub fn target_of(f: Value) -> Result<Target, String> {
    if let Some(t) = TARGETS.with(|c| c.borrow().get(&f).cloned()) {
        return Ok(t);
    }
    let t = target_of_uncached(f)?;
    TARGETS.with(|c| c.borrow_mut().insert(f, t.clone()));
    Ok(t)
}

/// Forgets the cached targets: a finished module's functions may be freed and their addresses
/// reused.
pub fn clear_target_cache() {
    TARGETS.with(|c| c.borrow_mut().clear());
}

fn target_of_uncached(f: Value) -> Result<Target, String> {
    let cpu = f
        .string_attribute("target-cpu")
        .or_else(|| module_target_cpu(f))
        .unwrap_or_default();
    let features = f
        .string_attribute("target-features")
        .or_else(|| module_function_with_cpu(f).and_then(|g| g.string_attribute("target-features")))
        .unwrap_or_default();
    Target::from_cpu(&cpu, &features).ok_or_else(|| {
        format!(
            "sqtt: function {} has target-cpu {cpu:?}, which the sqtt plugin does not know \
             (expected a gfx9, gfx10, gfx11 or gfx12 processor such as gfx90a or gfx1100)",
            f.name()
        )
    })
}

/// The first function of `f`'s module that names its target.
fn module_function_with_cpu(f: Value) -> Option<Value> {
    let mut cur = f.first_function_of_module();
    while let Some(g) = cur {
        if g.string_attribute("target-cpu").is_some() {
            return Some(g);
        }
        cur = g.next_function();
    }
    None
}

fn module_target_cpu(f: Value) -> Option<String> {
    module_function_with_cpu(f)?.string_attribute("target-cpu")
}

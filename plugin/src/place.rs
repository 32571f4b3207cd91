//! Where markers go and how one is placed: [`At`] an instruction, the [`Placement`]s the
//! instrumentation modules plan before any is placed, [`place_marker`], and the target of a
//! function ([`target_of`]) every placement asks for.

use crate::emit::{Emitter, Record};
use crate::llvm::{Module, Value};
use crate::scope::ScopeChecks;
use crate::target::Target;

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

/// A marker to place before an instruction.
pub struct Placement {
    pub function: Value,
    pub at: At,
    pub records: Vec<Record>,
}

impl Placement {
    /// A marker right before `at`, which stays.
    pub fn new(function: Value, at: Value, records: Vec<Record>) -> Placement {
        Placement {
            function,
            at: At::Before(at),
            records,
        }
    }

    /// A marker directly after `at`, which stays (never a terminator).
    pub fn after(function: Value, at: Value, records: Vec<Record>) -> Placement {
        Placement {
            function,
            at: At::After(at),
            records,
        }
    }

    /// A marker in the place of `at`, which is erased once every marker is placed.
    pub fn replacing(function: Value, at: Value, records: Vec<Record>) -> Placement {
        Placement {
            function,
            at: At::Replacing(at),
            records,
        }
    }
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

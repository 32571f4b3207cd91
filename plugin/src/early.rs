//! The early phase (before the inliner; at -O0 the first step of the only phase).
//!
//! - force-inlines the wrappers around the named-marker sentinels, so that their names resolve;
//! - resolves named enter/exit/point markers to bare, tagged markers (exit+enter fused);
//! - with `SQTT_INSTRUMENT_FUNCTIONS`, puts bare entry/exit markers in eligible non-kernel
//!   device functions, recording their pre-optimisation size;
//! - writes the ledger into the module.
//!
//! Bare markers are `asm sideeffect "; sqtt marker KEY ROLE"` calls: they travel with the code
//! through inlining and are replaced by real marker sequences in the late phase.

use sqtt_config::Settings;

use crate::ledger::{placeholder_asm, EarlyKind, EarlyLedger, Role};
use crate::llvm::{MdItem, Module, Value};
use crate::named::{collect, fusable, resolve_name, Sentinel};
use crate::size::{above, function_size, SizeBound};
use crate::tags::is_sqtt_instruction;
use crate::{funcmap_emit, options};

/// Function metadata naming the ledger entry of an instrumented function.
pub const FUNC_ID_MD: &str = "sqtt.func.id";

/// Device-library and runtime internals that are never instrumented.
const EXCLUDED_PREFIXES: &[&str] = &[
    "__ockl_",
    "__ocml_",
    "__oclc_",
    "__llvm_",
    "__hip_",
    "_ZN17__HIP_Coordinates",
    "llvm.",
];

/// Whether a (possibly mangled) name is a reserved identifier (`__x`, `ns::__x`, `__ns::x`):
/// the compiler's, runtime's and device libraries' own functions.
fn is_reserved_name(name: &str) -> bool {
    if name.starts_with("__") {
        return true;
    }
    let Some(rest) = name.strip_prefix("_Z") else {
        return false;
    };
    let rest = rest.trim_start_matches(['L', 'N', 'K']);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with("__")
}

/// C math functions that the HIP headers define as device wrappers around the device libraries
/// (`sinf` -> `__ocml_sin_f32`): runtime code, not the user's.
const MATH_WRAPPERS: &[&str] = &[
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cbrt",
    "ceil",
    "copysign",
    "cos",
    "cosh",
    "cospi",
    "erf",
    "erfc",
    "erfinv",
    "erfcinv",
    "exp",
    "exp10",
    "exp2",
    "expm1",
    "fabs",
    "fdim",
    "floor",
    "fma",
    "fmax",
    "fmin",
    "fmod",
    "frexp",
    "hypot",
    "ilogb",
    "isfinite",
    "isinf",
    "isnan",
    "j0",
    "j1",
    "jn",
    "ldexp",
    "lgamma",
    "llrint",
    "llround",
    "log",
    "log10",
    "log1p",
    "log2",
    "logb",
    "lrint",
    "lround",
    "modf",
    "nan",
    "nearbyint",
    "nextafter",
    "norm",
    "norm3d",
    "norm4d",
    "normcdf",
    "normcdfinv",
    "pow",
    "powi",
    "rcbrt",
    "remainder",
    "remquo",
    "rhypot",
    "rint",
    "rnorm",
    "rnorm3d",
    "rnorm4d",
    "round",
    "rsqrt",
    "scalbln",
    "scalbn",
    "signbit",
    "sin",
    "sincos",
    "sincospi",
    "sinh",
    "sinpi",
    "sqrt",
    "tan",
    "tanh",
    "tgamma",
    "trunc",
    "y0",
    "y1",
    "yn",
    "abs",
    "labs",
    "llabs",
    "max",
    "min",
    "fmaf",
    "saturate",
];

/// The unqualified name of a mangled `_Z<len><name>...` / `_ZL<len><name>...` function.
fn simple_mangled_name(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("_Z")?;
    let rest = rest.strip_prefix('L').unwrap_or(rest);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let len: usize = rest[..digits].parse().ok()?;
    rest.get(digits..digits + len)
}

fn is_math_wrapper(name: &str) -> bool {
    let simple = simple_mangled_name(name).unwrap_or(name);
    let base = simple
        .strip_suffix('f')
        .filter(|b| MATH_WRAPPERS.contains(b));
    MATH_WRAPPERS.contains(&simple) || base.is_some()
}

/// A device-library or runtime function (never instrumented).
pub fn is_library_function(f: Value) -> bool {
    let name = f.name();
    EXCLUDED_PREFIXES.iter().any(|p| name.starts_with(p))
        || is_math_wrapper(&name)
        || is_reserved_name(&name)
        || name.contains("sqtt_marker_")
        || name.contains("__sqtt")
}

pub fn is_eligible_function(f: Value) -> bool {
    if f.is_declaration() || f.is_kernel() {
        return false;
    }
    !f.name().is_empty() && !is_library_function(f)
}

/// Inlines every call of functions whose sentinel names come from their parameters.
fn inline_marker_wrappers(m: Module) {
    for _round in 0..4 {
        let mut inlined = false;
        for w in m.functions() {
            if w.is_declaration() || w.is_kernel() {
                continue;
            }
            let forwards = w
                .blocks()
                .into_iter()
                .flat_map(|b| b.instructions())
                .any(|i| {
                    i.called_function()
                        .is_some_and(|c| Sentinel::of(c).is_some())
                        && resolve_name(i.arg(0)).is_none()
                });
            if !forwards {
                continue;
            }
            for user in w.users() {
                if user.is_call() && user.called_function() == Some(w) {
                    inlined |= user.inline_call();
                }
            }
        }
        if !inlined {
            break;
        }
    }
}

fn bare_marker(m: Module, ledger: &EarlyLedger, at: Value, key: u64, role: Role) {
    bare_marker_with_payload(m, ledger, at, key, role, None, None)
}

/// A bare marker; a data marker carries its payload as the call's operand.
fn bare_marker_with_payload(
    m: Module,
    ledger: &EarlyLedger,
    at: Value,
    key: u64,
    role: Role,
    payload: Option<Value>,
    removable_if_gone: Option<&str>,
) {
    let b = m.builder();
    b.position_before(at);
    b.set_debug_loc(at.debug_loc());
    let call = match payload {
        None => {
            let ty = m.fn_type(m.void(), &[]);
            let asm = m.inline_asm(ty, &placeholder_asm(key, role), "");
            b.call(ty, asm, &[])
        }
        Some(v) => {
            let i32t = m.i32();
            let v = if v.type_of() == i32t {
                v
            } else {
                b.zext_or_bitcast(v, i32t)
            };
            let ty = m.fn_type(m.void(), &[i32t]);
            let asm = m.inline_asm(ty, &placeholder_asm(key, role), "{m0}");
            b.call(ty, asm, &[v])
        }
    };
    if let Some(function) = removable_if_gone {
        ledger.tag_removable(m, call, function);
    }
}

/// Resolves named enter/exit/point markers whose names are known now. Data markers and names
/// that only resolve after inlining are left to the late phase.
fn resolve_named(m: Module, ledger: &mut EarlyLedger, settings: &Settings, f: Value) {
    let Ok(blocks) = collect(m, f) else {
        return;
    };
    for calls in blocks {
        let mut i = 0;
        while i < calls.len() {
            let c = &calls[i];
            match c.kind {
                Sentinel::Exit
                    if calls
                        .get(i + 1)
                        .is_some_and(|n| n.kind == Sentinel::Enter && fusable(c.inst, n.inst)) =>
                {
                    let next = &calls[i + 1];
                    ledger.named(EarlyKind::Scope, &c.name);
                    let key = ledger.named(EarlyKind::Scope, &next.name);
                    bare_marker(m, ledger, next.inst, key, Role::ExitEnter);
                    // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
                    unsafe { c.inst.erase() };
                    // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
                    unsafe { next.inst.erase() };
                    i += 2;
                    continue;
                }
                Sentinel::Enter | Sentinel::Exit => {
                    let key = ledger.named(EarlyKind::Scope, &c.name);
                    let role = if c.kind == Sentinel::Enter {
                        Role::Enter
                    } else {
                        Role::Exit
                    };
                    bare_marker(m, ledger, c.inst, key, role);
                    // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
                    unsafe { c.inst.erase() };
                }
                Sentinel::Point => {
                    let key = ledger.named(EarlyKind::Point, &c.name);
                    bare_marker(m, ledger, c.inst, key, Role::Point);
                    // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
                    unsafe { c.inst.erase() };
                }
                Sentinel::Data => {
                    if settings.clock_packing() {
                        // Left to the late phase, which reports it as an error.
                        i += 1;
                        continue;
                    }
                    let key = ledger.named(EarlyKind::Data, &c.name);
                    bare_marker_with_payload(
                        m,
                        ledger,
                        c.inst,
                        key,
                        Role::Point,
                        Some(c.inst.arg(1)),
                        None,
                    );
                    // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
                    unsafe { c.inst.erase() };
                }
            }
            i += 1;
        }
    }
}

fn instrument_function(m: Module, ledger: &mut EarlyLedger, settings: &Settings, f: Value) {
    let size = function_size(f, settings.instrument_functions, &|i| {
        is_sqtt_instruction(m, i)
    });
    let Some(entry) = f.entry_block().and_then(|b| b.first_insertion_point()) else {
        return;
    };
    let rets: Vec<Value> = f
        .blocks()
        .into_iter()
        .filter_map(|b| b.terminator())
        .filter(|t| t.is_return())
        .collect();
    if rets.is_empty() {
        // A function that never returns cannot pop its scope.
        return;
    }
    let name = f.name();
    let key = ledger.function(&name, funcmap_emit::definition_site(f), size);
    // `!sqtt.func.id !{key}`: which ledger entry the function's markers belong to.
    f.set_global_metadata(m.md_kind(FUNC_ID_MD), m.md_node_ref(&[MdItem::Int(key)]));
    // A function at or below the threshold now whose definition is gone by the late phase
    // (inlined away) loses its markers there, inlined copies included: the tag says so, so that
    // they can go as soon as the function does (crate::prune). Not when the late phase runs at
    // the device link, where another translation unit may still define the function.
    let removable = (!above(size, settings.instrument_functions) && !options::deferred_to_link())
        .then_some(name.as_str());
    bare_marker_with_payload(m, ledger, entry, key, Role::Enter, None, removable);
    for r in rets {
        bare_marker_with_payload(m, ledger, r, key, Role::Exit, None, removable);
    }
}

/// Whether the early step resolves the named markers whose names are known, or leaves them to
/// the late phase.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NamedMarkers {
    /// The early phase proper (before the inliner): resolved names are compacted with the
    /// function IDs, ahead of the barrier and memory IDs.
    Resolve,
    /// Only the late phase runs (-O0, `opt -passes=sqtt`): the names are resolved late, and so
    /// numbered after the barrier and memory IDs (docs/format.md section 2, item 4).
    LeaveToLate,
}

pub fn run(m: Module, settings: &Settings) {
    run_with(m, settings, NamedMarkers::Resolve)
}

pub fn run_with(m: Module, settings: &Settings, named: NamedMarkers) {
    let mut ledger = EarlyLedger::new(m);
    inline_marker_wrappers(m);
    // Functions first: their markers go in before named markers are resolved, so that an entry
    // marker precedes a named enter at the top of a function.
    if settings.instrument_functions.is_on() {
        let is_sqtt = |i| is_sqtt_instruction(m, i);
        let mut bound = SizeBound::new(settings.instrument_functions, &is_sqtt);
        for f in m.functions() {
            // A function that cannot end above the threshold would lose its markers in the
            // late phase whatever happens to it: none are placed, which is what the late phase
            // would leave, without the optimiser carrying them meanwhile.
            if is_eligible_function(f) && !bound.stays_small(f) {
                instrument_function(m, &mut ledger, settings, f);
            }
        }
    }
    if named == NamedMarkers::Resolve {
        for f in m.functions() {
            if !f.is_declaration() {
                resolve_named(m, &mut ledger, settings, f);
            }
        }
    }
    ledger.write(m);
}

#[cfg(test)]
mod tests {
    #[test]
    fn reserved_names() {
        for n in [
            "__ockl_get_local_id",
            "__atomic_work_item_fence",
            "_Z10__shfl_xorfii",
            "_ZN17__HIP_CoordinatesI15__HIP_ThreadIdxE1xE",
            "_ZL5__foov",
        ] {
            assert!(super::is_reserved_name(n), "{n}");
        }
        for n in [
            "_Z5heavyPfi",
            "_ZN3app6kernelEv",
            "my_c_function",
            "_ZL6helperv",
        ] {
            assert!(!super::is_reserved_name(n), "{n}");
        }
    }
}

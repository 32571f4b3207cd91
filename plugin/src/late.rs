//! The late phase (after all IR optimisation; at -O0 after the early step), as a checklist:
//! [`run`] names each step, and the decisions the steps carry out are made over plain data in
//! [`crate::plan`].
//!
//! 1. reads the early ledger; settles the function threshold on the post-optimisation size (or
//!    the stored pre-optimisation size of functions inlined away) and removes the markers of
//!    functions below it, inlined copies included;
//! 2. numbers: after the early phase, the surviving early IDs compacted by emission count, so the
//!    most frequent ones fit `s_ttracedata_imm`, then the barrier and memory IDs; when only the
//!    late phase runs (-O0), everything in AMD's -O0 order ([`plan::late_only_order`]);
//! 3. plans every marker's place on the code as it is, then places them (scope check,
//!    boundaries); numeric and named markers, address traces; writes the funcmap.

use std::collections::HashMap;

use sqtt_config::Settings;

use crate::address::{self, FunctionTraces};
use crate::barriers::{self, BarrierIds};
use crate::early;
use crate::emit::{Emitter, Record};
use crate::funcmap_emit;
use crate::ledger::{self, EarlyEntry, EarlyKind, FinalIds, Role};
use crate::llvm::{Module, Value};
use crate::memory::{self, MemoryIds};
use crate::named;
use crate::numeric;
use crate::place::{place_marker, target_of, Placement};
use crate::plan::{self, IdStep, Identity, LateOnlyFunction};
use crate::scope::ScopeChecks;
use crate::size::function_size;
use crate::tags;

pub fn run(m: Module, settings: &Settings) -> Result<(), String> {
    let late_only = !ledger::has_early_ledger(m);
    if late_only {
        // -O0, `opt -passes=sqtt`: functions are instrumented here, named markers below.
        early::run_with(m, settings, early::NamedMarkers::LeaveToLate);
    }
    // Read before any marker placement splits their blocks.
    let named_calls = named::collect_module(m)?;
    let entries = take_ledger(m);
    let mut markers = early_markers(m);
    let below = settle_threshold(m, settings, &entries);
    drop_markers_below(&mut markers, &below);
    let mut ids = FinalIds::new();
    let mut address_traces = Vec::new();
    let numbered = if late_only {
        let traces = &mut address_traces;
        number_late_only(
            m,
            settings,
            &mut ids,
            &named_calls,
            &entries,
            &below,
            traces,
        )?
    } else {
        number_after_early(settings, &mut ids, &entries, &below, &markers)
    };
    let placements = plan_placements(m, settings, &entries, &markers, &numbered);
    let emitter = Emitter::new(m, settings);
    let mut scopes = ScopeChecks::new(settings.scope);
    place_all(m, &emitter, &mut scopes, &placements)?;
    erase_early_markers(&markers);
    numeric::wrap_numeric_markers(m, &emitter, &mut scopes)?;
    named::resolve(&emitter, &mut ids, &mut scopes, named_calls)?;
    if !late_only {
        number_address_traces(m, settings, &mut ids, &mut address_traces)?;
    }
    for traces in &address_traces {
        address::emit(m, &emitter, &mut scopes, traces);
    }
    drop_repeated_waits(m, &emitter, &scopes);
    write_funcmap(m, settings, &emitter, &ids);
    named::drop_unused_sentinels(m);
    Ok(())
}

/// A bare marker the early phase left (an entry, exit or point of a ledger entry).
struct EarlyMarker {
    function: Value,
    inst: Value,
    key: u64,
    role: Role,
}

fn early_markers(m: Module) -> Vec<EarlyMarker> {
    let mut out = Vec::new();
    for f in m.functions() {
        for bb in f.blocks() {
            for inst in bb.instructions() {
                if let Some((key, role)) = ledger::read_tag(inst) {
                    out.push(EarlyMarker {
                        function: f,
                        inst,
                        key,
                        role,
                    });
                }
            }
        }
    }
    out
}

/// The early ledger's entries; the ledger leaves the module.
fn take_ledger(m: Module) -> Vec<EarlyEntry> {
    let entries = ledger::read_early(m);
    m.erase_named_md(ledger::EARLY_LEDGER_MD);
    entries
}

/// The keys of the functions at or below the threshold ([`plan::below_threshold`]), measured on
/// the code as it is now.
fn settle_threshold(m: Module, settings: &Settings, entries: &[EarlyEntry]) -> Vec<u64> {
    let threshold = settings.instrument_functions;
    let is_sqtt = |i| tags::is_sqtt_instruction(m, i);
    let size_now = |name: &str| {
        m.function(name)
            .filter(|f| !f.is_declaration())
            .map(|f| function_size(f, threshold, &is_sqtt))
    };
    plan::below_threshold(entries, &size_now, threshold)
}

/// Erases the markers of functions below the threshold, inlined copies included.
fn drop_markers_below(markers: &mut Vec<EarlyMarker>, below: &[u64]) {
    markers.retain(|mk| {
        let drop = below.contains(&mk.key);
        if drop {
            // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
            unsafe { mk.inst.erase() };
        }
        !drop
    });
}

/// The IDs the placements need: the early markers' (functions, named markers resolved early), by
/// identity, and those of the barrier and memory points.
#[derive(Default)]
struct Numbered {
    early: HashMap<Identity, u32>,
    barriers: Option<BarrierIds>,
    memory: Option<MemoryIds>,
}

/// After the early phase: its entries compacted ([`plan::compact`]), then the system IDs.
fn number_after_early(
    settings: &Settings,
    ids: &mut FinalIds,
    entries: &[EarlyEntry],
    below: &[u64],
    markers: &[EarlyMarker],
) -> Numbered {
    let emitted: Vec<u64> = markers
        .iter()
        .filter(|mk| mk.role.emits_id())
        .map(|mk| mk.key)
        .collect();
    let early = plan::compact(entries, below, &emitted, ids);
    let (barriers, memory) = plan::system_ids(settings, ids);
    Numbered {
        early,
        barriers,
        memory,
    }
}

/// When only the late phase runs (-O0): the steps of [`plan::late_only_order`]. Address traces
/// are numbered into `address_traces`, to be written later.
fn number_late_only(
    m: Module,
    settings: &Settings,
    ids: &mut FinalIds,
    named_calls: &named::Collected,
    entries: &[EarlyEntry],
    below: &[u64],
    address_traces: &mut Vec<FunctionTraces>,
) -> Result<Numbered, String> {
    let defined: Vec<Value> = m
        .functions()
        .into_iter()
        .filter(|f| !f.is_declaration())
        .collect();
    let names: Vec<String> = defined.iter().map(|f| f.name()).collect();
    let functions: Vec<LateOnlyFunction> = defined
        .iter()
        .zip(&names)
        .map(|(f, name)| LateOnlyFunction {
            name,
            traces_addresses: own_markers(settings, *f).addresses,
        })
        .collect();
    let kept = plan::kept_functions(entries, below);
    let mut numbered = Numbered::default();
    for step in plan::late_only_order(&functions, &kept) {
        match step {
            IdStep::System => {
                (numbered.barriers, numbered.memory) = plan::system_ids(settings, ids)
            }
            IdStep::Named(i) => named_calls.number_function(defined[i], ids, settings)?,
            IdStep::Addresses(i) => {
                let f = defined[i];
                let traces = address::number(m, ids, settings.trace_addresses, f, target_of(f)?);
                address_traces.push(traces);
            }
            IdStep::Function(i) => {
                let name = &names[i];
                let loc = kept
                    .iter()
                    .find(|e| e.name == *name)
                    .and_then(|e| e.source_loc.clone());
                let id = ids.function(name, loc);
                numbered
                    .early
                    .insert((EarlyKind::Function, name.clone()), id);
            }
        }
    }
    Ok(numbered)
}

/// The pass's own markers a function gets ([`plan::function_markers`]).
fn own_markers(settings: &Settings, f: Value) -> plan::FunctionMarkers {
    let declaration = f.is_declaration();
    let library = !declaration && early::is_library_function(f);
    plan::function_markers(settings, declaration, library)
}

/// Where every marker goes, decided on the code as it is now, before any is placed: the early
/// markers in their own places, then function by function the barrier and memory points.
fn plan_placements(
    m: Module,
    settings: &Settings,
    entries: &[EarlyEntry],
    markers: &[EarlyMarker],
    numbered: &Numbered,
) -> Vec<Placement> {
    let identity = plan::identities(entries);
    let mut placements: Vec<Placement> = Vec::new();
    for mk in markers {
        let Some(&id) = identity.get(&mk.key).and_then(|i| numbered.early.get(i)) else {
            continue;
        };
        let mut records = vec![Record::Const(plan::early_marker_value(mk.role, id))];
        if mk.inst.num_args() > 0 {
            // A data marker: its payload follows the header.
            records.push(Record::Payload(mk.inst.arg(0)));
        }
        placements.push(Placement::replacing(mk.function, mk.inst, records));
    }
    for f in m.functions() {
        let wants = own_markers(settings, f);
        if let (true, Some(b)) = (wants.barriers, numbered.barriers) {
            barriers::placements(f, b, &mut placements);
        }
        if let (true, Some(cfg), Some(mids)) =
            (wants.memory, settings.instrument_memory, numbered.memory)
        {
            memory::placements(m, f, cfg, mids, &mut placements);
        }
    }
    placements
}

fn place_all(
    m: Module,
    emitter: &Emitter,
    scopes: &mut ScopeChecks,
    placements: &[Placement],
) -> Result<(), String> {
    for p in placements {
        let target = target_of(p.function)?;
        place_marker(m, emitter, scopes, p.function, &target, p.at, &p.records);
    }
    Ok(())
}

fn erase_early_markers(markers: &[EarlyMarker]) {
    for mk in markers {
        // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
        unsafe { mk.inst.erase() };
    }
}

/// After the early phase, address traces are numbered as they are written, after every other ID.
fn number_address_traces(
    m: Module,
    settings: &Settings,
    ids: &mut FinalIds,
    address_traces: &mut Vec<FunctionTraces>,
) -> Result<(), String> {
    for f in m.functions() {
        if own_markers(settings, f).addresses {
            let traces = address::number(m, ids, settings.trace_addresses, f, target_of(f)?);
            address_traces.push(traces);
        }
    }
    Ok(())
}

fn drop_repeated_waits(m: Module, emitter: &Emitter, scopes: &ScopeChecks) {
    for f in m.functions() {
        // A function the pass placed nothing in may have no known target: nothing to drop.
        if let (false, Ok(target)) = (f.is_declaration(), target_of(f)) {
            emitter.drop_repeated_waits(f, &target, scopes.cached(f));
        }
    }
}

/// The funcmap, with the `M:` row when the module's target packs the shader clock into headers.
fn write_funcmap(m: Module, settings: &Settings, emitter: &Emitter, ids: &FinalIds) {
    let packing_target = m
        .functions()
        .into_iter()
        .filter(|f| !f.is_declaration())
        .find_map(|f| target_of(f).ok())
        .is_some_and(|t| emitter.packing(&t));
    funcmap_emit::emit(m, ids, plan::clock_layout(settings, packing_target));
}

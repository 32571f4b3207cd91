//! The late phase (after all IR optimisation; at -O0 after the early step).
//!
//! 1. reads the early ledger; applies the function threshold to the post-optimisation size (or
//!    the stored pre-optimisation size of functions inlined away) and removes the markers of
//!    functions below it, inlined copies included;
//! 2. compacts the surviving early IDs by emission count (ties by original order), so the most
//!    frequent ones fit `s_ttracedata_imm`; then allocates barrier, memory, late named and
//!    address-trace IDs from the same counter. When only the late phase runs (-O0), the IDs go
//!    in AMD's -O0 order instead ([`number_late_only`]);
//! 3. places every marker (scope check, boundaries) and writes the funcmap.

use std::collections::HashMap;

use sqtt_config::Settings;
use sqtt_markers::encoding::{self, EXIT_VALUE};

use crate::address;
use crate::barriers::{self, BarrierIds};
use crate::early;
use crate::emit::{Emitter, Record};
use crate::funcmap_emit;
use crate::ledger::{self, EarlyKind, FinalIds, Role};
use crate::llvm::{Module, Value};
use crate::memory::{self, MemoryIds};
use crate::named::{self, place_marker, target_of, At};
use crate::numeric;
use crate::scope::ScopeChecks;
use crate::size::{above, function_size};

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

/// Identity of an early entry across translation units: functions and named markers of the
/// same name are one marker.
type Identity = (EarlyKind, String);

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

pub fn run(m: Module, settings: &Settings) -> Result<(), String> {
    // Only the late phase runs (-O0, `opt -passes=sqtt`): functions are instrumented here, named
    // markers below, and the IDs go in AMD's -O0 order ([`number_late_only`]).
    let late_only = !ledger::has_early_ledger(m);
    if late_only {
        early::run_with(m, settings, early::NamedMarkers::LeaveToLate);
    }
    // Named markers the early step left (data markers; at -O0 all of them), read before any
    // marker placement splits their blocks; numbered after the system IDs.
    let named_calls = named::collect_module(m)?;
    let entries = ledger::read_early(m);
    m.erase_named_md(ledger::EARLY_LEDGER_MD);
    let mut markers = early_markers(m);

    // 1. The threshold, module-wide.
    let threshold = settings.instrument_functions;
    let mut below: Vec<u64> = Vec::new();
    for e in entries.iter().filter(|e| e.kind == EarlyKind::Function) {
        let size = match m.function(&e.name).filter(|f| !f.is_declaration()) {
            Some(f) => function_size(f, threshold, &|i| crate::is_sqtt_instruction(m, i)),
            None => e.pre_size,
        };
        if !above(size, threshold) {
            below.push(e.key);
        }
    }
    markers.retain(|mk| {
        let drop = below.contains(&mk.key);
        if drop {
            // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
            unsafe { mk.inst.erase() };
        }
        !drop
    });

    let by_key: HashMap<u64, &ledger::EarlyEntry> = entries.iter().map(|e| (e.key, e)).collect();
    let identity =
        |key: u64| -> Option<Identity> { by_key.get(&key).map(|e| (e.kind, e.name.clone())) };
    // 2. The IDs.
    let mut ids = FinalIds::new();
    // Address traces numbered ahead of their code (late-only), or as they are written.
    let mut address_traces = Vec::new();
    let SystemAndEarlyIds {
        early: final_id,
        barriers: barrier_ids,
        memory: memory_ids,
    } = if late_only {
        let kept: Vec<&ledger::EarlyEntry> = entries
            .iter()
            .filter(|e| e.kind == EarlyKind::Function && !below.contains(&e.key))
            .collect();
        number_late_only(
            m,
            settings,
            &mut ids,
            &named_calls,
            &kept,
            &mut address_traces,
        )?
    } else {
        let early = compact(&entries, &below, &markers, &identity, &mut ids);
        let (barriers, memory) = system_ids(settings, &mut ids);
        SystemAndEarlyIds {
            early,
            barriers,
            memory,
        }
    };

    // 3. Where every marker goes, decided on the code as it is now, before any is placed.
    let mut placements: Vec<Placement> = Vec::new();
    for mk in &markers {
        let Some(id) = identity(mk.key).and_then(|i| final_id.get(&i).copied()) else {
            continue;
        };
        let value = match mk.role {
            Role::Enter => encoding::enter(id),
            Role::Exit => EXIT_VALUE,
            Role::ExitEnter => encoding::exit_enter(id),
            Role::Point => encoding::point(id),
        };
        let mut records = vec![Record::Const(value)];
        if mk.inst.num_args() > 0 {
            // A data marker: its payload follows the header.
            records.push(Record::Payload(mk.inst.arg(0)));
        }
        placements.push(Placement::replacing(mk.function, mk.inst, records));
    }
    for f in m.functions() {
        if f.is_declaration() {
            continue;
        }
        if let Some(b) = barrier_ids {
            barriers::placements(f, b, &mut placements);
        }
        if let (Some(cfg), Some(mids)) = (settings.instrument_memory, memory_ids) {
            if !early::is_library_function(f) {
                memory::placements(m, f, cfg, mids, &mut placements);
            }
        }
    }

    let emitter = Emitter::new(m, settings);
    let mut scopes = ScopeChecks::new(settings.scope);
    for p in &placements {
        let target = target_of(p.function)?;
        place_marker(
            m,
            &emitter,
            &mut scopes,
            p.function,
            &target,
            p.at,
            &p.records,
        );
    }
    for mk in &markers {
        // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
        unsafe { mk.inst.erase() };
    }
    numeric::wrap_numeric_markers(m, &emitter, &mut scopes)?;
    named::resolve(&emitter, &mut ids, &mut scopes, named_calls)?;
    if !late_only {
        for f in m
            .functions()
            .into_iter()
            .filter(|f| traces_addresses(settings, *f))
        {
            let traces = address::number(m, &mut ids, settings.trace_addresses, f, target_of(f)?);
            address_traces.push(traces);
        }
    }
    for traces in &address_traces {
        address::emit(m, &emitter, &mut scopes, traces);
    }
    for f in m.functions() {
        // A function the pass placed nothing in may have no known target: nothing to drop.
        if let (false, Ok(target)) = (f.is_declaration(), target_of(f)) {
            emitter.drop_repeated_waits(f, &target, scopes.cached(f));
        }
    }
    // The M: row, when the module's target packs the shader clock into headers.
    let packing_target = m
        .functions()
        .into_iter()
        .filter(|f| !f.is_declaration())
        .find_map(|f| target_of(f).ok())
        .is_some_and(|t| emitter.packing(&t));
    let layout = packing_target.then_some(sqtt_markers::ClockLayout {
        shader_clock_bits: settings.shader_clock_bits,
        shader_clock_shift: settings.shader_clock_shift,
    });
    funcmap_emit::emit(m, &ids, layout);
    named::drop_unused_sentinels(m);
    Ok(())
}

/// The IDs the placements need: the early markers' (functions, named markers resolved early), by
/// identity, and those of the barrier and memory points.
struct SystemAndEarlyIds {
    early: HashMap<Identity, u32>,
    barriers: Option<BarrierIds>,
    memory: Option<MemoryIds>,
}

/// Compaction by emission count: the final IDs of the early functions and named markers that
/// survived the threshold, the most frequent first (ties by the order the early phase recorded
/// them), from 1.
fn compact(
    entries: &[ledger::EarlyEntry],
    below: &[u64],
    markers: &[EarlyMarker],
    identity: &dyn Fn(u64) -> Option<Identity>,
    ids: &mut FinalIds,
) -> HashMap<Identity, u32> {
    let by_key: HashMap<u64, &ledger::EarlyEntry> = entries.iter().map(|e| (e.key, e)).collect();
    let mut counts: HashMap<Identity, (usize, u64)> = HashMap::new();
    for e in entries {
        if e.kind != EarlyKind::Function || !below.contains(&e.key) {
            let slot = counts.entry((e.kind, e.name.clone())).or_insert((0, e.key));
            slot.1 = slot.1.min(e.key);
        }
    }
    for mk in markers {
        if mk.role.emits_id() {
            if let Some(slot) = identity(mk.key).and_then(|id| counts.get_mut(&id)) {
                slot.0 += 1;
            }
        }
    }
    // A function above the threshold keeps its row even when none of its markers is left (its
    // code was optimised away): an ID after every emitted one, as AMD's pass gives it, so that
    // the two funcmaps agree row for row.
    let mut order: Vec<(Identity, usize, u64)> = counts
        .into_iter()
        .map(|(id, (count, first))| (id, count, first))
        .collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    let mut final_id: HashMap<Identity, u32> = HashMap::new();
    // The funcmap lists early-resolved names in ledger order, as AMD's pass does.
    let rank = |key: &u64| {
        entries
            .iter()
            .position(|e| e.key == *key)
            .unwrap_or(usize::MAX)
    };
    for ((kind, name), _, first) in &order {
        let id = match kind {
            EarlyKind::Function => {
                let loc = by_key.get(first).and_then(|e| e.source_loc.clone());
                ids.function(name, loc)
            }
            EarlyKind::Scope => ids.named_early(ledger::NamedKind::Scope, name, rank(first)),
            EarlyKind::Point => ids.named_early(ledger::NamedKind::Point, name, rank(first)),
            EarlyKind::Data => ids.named_early(ledger::NamedKind::Data, name, rank(first)),
        };
        final_id.insert((*kind, name.clone()), id);
    }
    final_id
}

/// Whether a function's memory operations get address traces (not the device libraries').
fn traces_addresses(settings: &Settings, f: Value) -> bool {
    settings.trace_addresses.is_on() && !f.is_declaration() && !early::is_library_function(f)
}

/// The barrier IDs, then the memory IDs, of the settings that ask for them.
fn system_ids(settings: &Settings, ids: &mut FinalIds) -> (Option<BarrierIds>, Option<MemoryIds>) {
    let barrier_ids = settings.instrument_barriers.then(|| BarrierIds {
        signal: ids.system_point("barrier_signal", None, 0),
        wait: ids.system_point("barrier_wait", None, 0),
        barrier: ids.system_point("barrier", None, 0),
    });
    let memory_ids = settings.instrument_memory.map(|_| MemoryIds {
        load: ids.system_point("vmem_load", None, 0),
        store: ids.system_point("vmem_store", None, 0),
    });
    (barrier_ids, memory_ids)
}

/// The IDs when only the late phase runs (-O0), in the order of AMD's pass there: the barrier and
/// memory IDs first, then function by function in module order the function's named markers as
/// met, its address traces in code order, and its own ID when it is above the threshold
/// (`kept`). Address traces are numbered into `address_traces`, to be written later.
fn number_late_only(
    m: Module,
    settings: &Settings,
    ids: &mut FinalIds,
    named_calls: &named::Collected,
    kept: &[&ledger::EarlyEntry],
    address_traces: &mut Vec<address::FunctionTraces>,
) -> Result<SystemAndEarlyIds, String> {
    let (barriers, memory) = system_ids(settings, ids);
    let mut final_id: HashMap<Identity, u32> = HashMap::new();
    for f in m.functions() {
        if f.is_declaration() {
            continue;
        }
        named_calls.number_function(f, ids, settings)?;
        if traces_addresses(settings, f) {
            let traces = address::number(m, ids, settings.trace_addresses, f, target_of(f)?);
            address_traces.push(traces);
        }
        let name = f.name();
        if let Some(e) = kept.iter().find(|e| e.name == name) {
            final_id.insert(
                (EarlyKind::Function, name.clone()),
                ids.function(&name, e.source_loc.clone()),
            );
        }
    }
    Ok(SystemAndEarlyIds {
        early: final_id,
        barriers,
        memory,
    })
}

//! What the late phase decides, over plain data (keys, names, counts, flags, sizes): which
//! functions fall below the threshold, the order IDs are given in (compaction after the early
//! phase, AMD's -O0 order when only the late phase runs), and which markers a function gets.
//! [`crate::late`] gathers the facts from the module and carries the decisions out.

use std::collections::HashMap;

use sqtt_config::{FunctionThreshold, Settings};
use sqtt_markers::encoding::{self, EXIT_VALUE};
use sqtt_markers::ClockLayout;

use crate::barriers::BarrierIds;
use crate::ledger::{EarlyEntry, EarlyKind, FinalIds, NamedKind, Role};
use crate::memory::MemoryIds;
use crate::size::above;

/// Identity of an early entry across translation units: functions and named markers of the
/// same name are one marker.
pub type Identity = (EarlyKind, String);

/// The identity of every early entry, by key.
pub fn identities(entries: &[EarlyEntry]) -> HashMap<u64, Identity> {
    entries
        .iter()
        .map(|e| (e.key, (e.kind, e.name.clone())))
        .collect()
}

/// The keys of the ledger's functions at or below the threshold: measured by `size_now` (the
/// size after optimisation, `None` for a function inlined away), else by the size the early
/// phase recorded.
pub fn below_threshold(
    entries: &[EarlyEntry],
    size_now: &dyn Fn(&str) -> Option<u64>,
    threshold: FunctionThreshold,
) -> Vec<u64> {
    entries
        .iter()
        .filter(|e| e.kind == EarlyKind::Function)
        .filter(|e| !above(size_now(&e.name).unwrap_or(e.pre_size), threshold))
        .map(|e| e.key)
        .collect()
}

/// The ledger's functions above the threshold.
pub fn kept_functions<'e>(entries: &'e [EarlyEntry], below: &[u64]) -> Vec<&'e EarlyEntry> {
    entries
        .iter()
        .filter(|e| e.kind == EarlyKind::Function && !below.contains(&e.key))
        .collect()
}

/// The order compaction gives the early entries that survived the threshold: by how many of
/// their markers carry the ID (`emitted`, the keys of the markers left, exits excluded), the
/// most first, ties by the order the early phase recorded them (the identity's first key). A
/// function above the threshold with no marker left (its code was optimised away) keeps its
/// row, after every emitted one, as AMD's pass gives it. Each identity comes with its first key.
pub fn compaction_order(
    entries: &[EarlyEntry],
    below: &[u64],
    emitted: &[u64],
) -> Vec<(Identity, u64)> {
    let identity = identities(entries);
    let mut counts: HashMap<Identity, (usize, u64)> = HashMap::new();
    for e in entries {
        if e.kind != EarlyKind::Function || !below.contains(&e.key) {
            let slot = counts.entry((e.kind, e.name.clone())).or_insert((0, e.key));
            slot.1 = slot.1.min(e.key);
        }
    }
    for key in emitted {
        if let Some(slot) = identity.get(key).and_then(|id| counts.get_mut(id)) {
            slot.0 += 1;
        }
    }
    let mut order: Vec<(Identity, usize, u64)> = counts
        .into_iter()
        .map(|(id, (count, first))| (id, count, first))
        .collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    order
        .into_iter()
        .map(|(id, _, first)| (id, first))
        .collect()
}

/// The final IDs of the early entries, from the next free ID in compaction order
/// ([`compaction_order`]). A function's row takes the source location of its first entry; the
/// funcmap lists early-resolved names in ledger order, as AMD's pass does.
pub fn compact(
    entries: &[EarlyEntry],
    below: &[u64],
    emitted: &[u64],
    ids: &mut FinalIds,
) -> HashMap<Identity, u32> {
    let mut final_id = HashMap::new();
    for ((kind, name), first) in compaction_order(entries, below, emitted) {
        let rank = entries
            .iter()
            .position(|e| e.key == first)
            .unwrap_or(usize::MAX);
        let id = match kind {
            EarlyKind::Function => ids.function(&name, entries[rank].source_loc.clone()),
            EarlyKind::Scope => ids.named_early(NamedKind::Scope, &name, rank),
            EarlyKind::Point => ids.named_early(NamedKind::Point, &name, rank),
            EarlyKind::Data => ids.named_early(NamedKind::Data, &name, rank),
        };
        final_id.insert((kind, name), id);
    }
    final_id
}

/// The IDs of the pass's own points the settings ask for: the barrier IDs, then the memory IDs.
pub fn system_ids(
    settings: &Settings,
    ids: &mut FinalIds,
) -> (Option<BarrierIds>, Option<MemoryIds>) {
    let barriers = settings.instrument_barriers.then(|| BarrierIds {
        signal: ids.system_point("barrier_signal", None, 0),
        wait: ids.system_point("barrier_wait", None, 0),
        barrier: ids.system_point("barrier", None, 0),
    });
    let memory = settings.instrument_memory.map(|_| MemoryIds {
        load: ids.system_point("vmem_load", None, 0),
        store: ids.system_point("vmem_store", None, 0),
    });
    (barriers, memory)
}

/// One step of the -O0 numbering ([`late_only_order`]); the numbers index the module's defined
/// functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdStep {
    /// The barrier and memory IDs ([`system_ids`]).
    System,
    /// The function's named markers, as met.
    Named(usize),
    /// The function's address traces, in code order.
    Addresses(usize),
    /// The function's own ID.
    Function(usize),
}

/// A defined function as the -O0 numbering sees it.
pub struct LateOnlyFunction<'a> {
    pub name: &'a str,
    pub traces_addresses: bool,
}

/// The order IDs are given in when only the late phase runs (-O0), AMD's order there: the
/// system IDs first, then function by function in module order its named markers, its address
/// traces (when it has them) and its own ID (when it is above the threshold, one of `kept`).
pub fn late_only_order(functions: &[LateOnlyFunction], kept: &[&EarlyEntry]) -> Vec<IdStep> {
    let mut steps = vec![IdStep::System];
    for (i, f) in functions.iter().enumerate() {
        steps.push(IdStep::Named(i));
        if f.traces_addresses {
            steps.push(IdStep::Addresses(i));
        }
        if kept.iter().any(|e| e.name == f.name) {
            steps.push(IdStep::Function(i));
        }
    }
    steps
}

/// The markers the pass adds to a function besides those the early phase and the sources ask
/// for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionMarkers {
    pub barriers: bool,
    pub memory: bool,
    pub addresses: bool,
}

/// Which of the pass's own markers a function gets: none in a declaration; the device libraries'
/// functions only barrier markers (their memory operations are not the program's).
pub fn function_markers(settings: &Settings, declaration: bool, library: bool) -> FunctionMarkers {
    let own_code = !declaration && !library;
    FunctionMarkers {
        barriers: !declaration && settings.instrument_barriers,
        memory: own_code && settings.instrument_memory.is_some(),
        addresses: own_code && settings.trace_addresses.is_on(),
    }
}

/// The value a bare early marker of `role` becomes with its final ID.
pub fn early_marker_value(role: Role, id: u32) -> u32 {
    match role {
        Role::Enter => encoding::enter(id),
        Role::Exit => EXIT_VALUE,
        Role::ExitEnter => encoding::exit_enter(id),
        Role::Point => encoding::point(id),
    }
}

/// The funcmap's `M:` row: the clock layout when the module's target packs the shader clock
/// into headers.
pub fn clock_layout(settings: &Settings, packing_target: bool) -> Option<ClockLayout> {
    packing_target.then_some(ClockLayout {
        shader_clock_bits: settings.shader_clock_bits,
        shader_clock_shift: settings.shader_clock_shift,
    })
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use sqtt_config::{AddressTrace, MemoryGrouping};

    fn function(key: u64, name: &str, pre_size: u64) -> EarlyEntry {
        EarlyEntry {
            key,
            kind: EarlyKind::Function,
            name: name.into(),
            source_loc: Some(format!("k.hip:{key}")),
            pre_size,
        }
    }

    fn named(key: u64, kind: EarlyKind, name: &str) -> EarlyEntry {
        EarlyEntry {
            key,
            kind,
            name: name.into(),
            source_loc: None,
            pre_size: 0,
        }
    }

    fn names(order: &[(Identity, u64)]) -> Vec<&str> {
        order.iter().map(|((_, n), _)| n.as_str()).collect()
    }

    // --- the threshold ---------------------------------------------------------------------

    /// A surviving function is measured after optimisation, one inlined away by its recorded
    /// size: `shrunk` was big and is small now, `gone` is gone and was small, `grown` is big now.
    #[test]
    fn threshold_measures_the_code_now_else_the_recorded_size() {
        let entries = [
            function(1, "shrunk", 100),
            function(2, "gone", 3),
            function(3, "grown", 2),
            function(4, "gone_big", 40),
        ];
        let now = |n: &str| match n {
            "shrunk" => Some(5),
            "grown" => Some(50),
            _ => None,
        };
        assert_eq!(
            below_threshold(&entries, &now, FunctionThreshold::Count(10)),
            [1, 2]
        );
    }

    /// `N` and `cost:N` keep functions of more than N: N itself is below.
    #[test]
    fn threshold_is_strictly_more_than_n() {
        let entries = [function(1, "ten", 10), function(2, "eleven", 11)];
        let none = |_: &str| None;
        for t in [FunctionThreshold::Count(10), FunctionThreshold::Cost(10)] {
            assert_eq!(below_threshold(&entries, &none, t), [1], "{t:?}");
        }
    }

    /// Off: every function is below, so none keeps its markers.
    #[test]
    fn threshold_off_drops_every_function() {
        let entries = [function(1, "a", 1_000_000), function(2, "b", 0)];
        let now = |_: &str| Some(1_000_000);
        assert_eq!(
            below_threshold(&entries, &now, FunctionThreshold::Off),
            [1, 2]
        );
    }

    /// Named markers are not functions: the threshold never drops them.
    #[test]
    fn threshold_ignores_named_markers() {
        let entries = [
            named(1, EarlyKind::Scope, "loop"),
            named(2, EarlyKind::Point, "here"),
            function(3, "small", 1),
        ];
        let none = |_: &str| None;
        assert_eq!(
            below_threshold(&entries, &none, FunctionThreshold::Count(5)),
            [3]
        );
        let kept: Vec<u64> = kept_functions(&entries, &[3])
            .iter()
            .map(|e| e.key)
            .collect();
        assert!(kept.is_empty());
        let kept: Vec<u64> = kept_functions(&entries, &[])
            .iter()
            .map(|e| e.key)
            .collect();
        assert_eq!(kept, [3]);
    }

    // --- compaction (after the early phase) --------------------------------------------------

    /// The entry with the most markers left gets the first ID.
    #[test]
    fn compaction_puts_the_most_frequent_first() {
        let entries = [
            function(1, "a", 50),
            function(2, "b", 50),
            named(3, EarlyKind::Scope, "s"),
        ];
        let order = compaction_order(&entries, &[], &[1, 2, 2, 3, 2, 3]);
        assert_eq!(names(&order), ["b", "s", "a"]);
    }

    /// Equal counts keep the order the early phase recorded (the first key).
    #[test]
    fn compaction_ties_go_by_ledger_order() {
        let entries = [function(5, "late", 50), function(2, "early", 50)];
        let order = compaction_order(&entries, &[], &[5, 2]);
        assert_eq!(names(&order), ["early", "late"]);
    }

    /// Exits carry no ID: only the other roles count toward compaction (late.rs passes the keys
    /// of markers whose role emits the ID).
    #[test]
    fn only_id_carrying_roles_count() {
        assert!(Role::Enter.emits_id());
        assert!(Role::ExitEnter.emits_id());
        assert!(Role::Point.emits_id());
        assert!(!Role::Exit.emits_id());
    }

    /// A function below the threshold gets no ID; one above it with no marker left keeps its row
    /// after every emitted one.
    #[test]
    fn compaction_drops_below_and_keeps_markerless_functions_last() {
        let entries = [
            function(1, "small", 2),
            function(2, "vanished", 90),
            function(3, "hot", 90),
            named(4, EarlyKind::Point, "p"),
        ];
        let mut ids = FinalIds::new();
        let ids_of = compact(&entries, &[1], &[3, 3, 4], &mut ids);
        let id = |kind, n: &str| ids_of.get(&(kind, n.to_string())).copied();
        assert_eq!(id(EarlyKind::Function, "hot"), Some(1));
        assert_eq!(id(EarlyKind::Point, "p"), Some(2));
        assert_eq!(id(EarlyKind::Function, "vanished"), Some(3));
        assert_eq!(id(EarlyKind::Function, "small"), None);
        assert_eq!(ids_of.len(), 3);
    }

    /// One function in two translation units (a device link) is one row: its markers count
    /// together, and its row takes the location of its first entry.
    #[test]
    fn compaction_merges_one_name_across_translation_units() {
        let entries = [
            function(10, "shared", 90),
            function(5, "other", 90),
            function(3, "shared", 90),
        ];
        let mut ids = FinalIds::new();
        let ids_of = compact(&entries, &[], &[10, 3, 5], &mut ids);
        assert_eq!(ids_of[&(EarlyKind::Function, "shared".into())], 1);
        assert_eq!(ids_of[&(EarlyKind::Function, "other".into())], 2);
        let text = ids.funcmap(Vec::new()).to_string();
        assert_eq!(text, "F:1:shared@k.hip:3\nF:2:other@k.hip:5\n");
    }

    /// Named markers resolved early take compacted IDs but keep the ledger's order in the
    /// funcmap, as AMD's pass writes them.
    #[test]
    fn compacted_named_markers_keep_ledger_order_in_the_funcmap() {
        let entries = [
            named(1, EarlyKind::Point, "cold"),
            named(2, EarlyKind::Scope, "hot"),
        ];
        let mut ids = FinalIds::new();
        let ids_of = compact(&entries, &[], &[2, 2, 1], &mut ids);
        assert_eq!(ids_of[&(EarlyKind::Scope, "hot".into())], 1);
        assert_eq!(ids_of[&(EarlyKind::Point, "cold".into())], 2);
        assert_eq!(ids.funcmap(Vec::new()).to_string(), "P:2:cold\nU:1:hot\n");
    }

    // --- the ID order ------------------------------------------------------------------------

    fn settings(barriers: bool, memory: bool) -> Settings {
        Settings {
            instrument_barriers: barriers,
            instrument_memory: memory.then_some(MemoryGrouping {
                ops_per_marker: 1,
                max_gap: 0,
            }),
            ..Settings::default()
        }
    }

    /// At -O2 the compacted early IDs come first, then barrier_signal, barrier_wait, barrier,
    /// vmem_load and vmem_store.
    #[test]
    fn optimised_order_is_early_ids_then_system_ids() {
        let entries = [function(1, "f", 90), function(2, "g", 90)];
        let mut ids = FinalIds::new();
        let early = compact(&entries, &[], &[2, 1, 2], &mut ids);
        let (b, m) = system_ids(&settings(true, true), &mut ids);
        assert_eq!(early[&(EarlyKind::Function, "g".into())], 1);
        assert_eq!(early[&(EarlyKind::Function, "f".into())], 2);
        let b = b.expect("barrier IDs");
        assert_eq!((b.signal, b.wait, b.barrier), (3, 4, 5));
        let m = m.expect("memory IDs");
        assert_eq!((m.load, m.store), (6, 7));
    }

    /// Only the points the settings ask for take IDs.
    #[test]
    fn system_ids_only_for_what_is_on() {
        let mut ids = FinalIds::new();
        let (b, m) = system_ids(&settings(false, true), &mut ids);
        assert!(b.is_none());
        let m = m.expect("memory IDs");
        assert_eq!((m.load, m.store), (1, 2));
        let mut ids = FinalIds::new();
        let (b, m) = system_ids(&settings(false, false), &mut ids);
        assert!(b.is_none() && m.is_none());
        assert_eq!(ids.function("next", None), 1);
    }

    /// At -O0 (AMD's order): system IDs first, then per function in module order its named
    /// markers, its address traces and its own ID when it is kept.
    #[test]
    fn late_only_order_is_amds() {
        let entries = [function(1, "f", 90), function(2, "g", 1)];
        let kept = kept_functions(&entries, &[2]);
        let functions = [
            LateOnlyFunction {
                name: "kernel",
                traces_addresses: false,
            },
            LateOnlyFunction {
                name: "f",
                traces_addresses: true,
            },
            LateOnlyFunction {
                name: "g",
                traces_addresses: false,
            },
        ];
        assert_eq!(
            late_only_order(&functions, &kept),
            [
                IdStep::System,
                IdStep::Named(0),
                IdStep::Named(1),
                IdStep::Addresses(1),
                IdStep::Function(1),
                IdStep::Named(2),
            ]
        );
    }

    /// With nothing defined only the system step is left.
    #[test]
    fn late_only_order_of_an_empty_module() {
        assert_eq!(late_only_order(&[], &[]), [IdStep::System]);
    }

    // --- placement decisions -----------------------------------------------------------------

    /// Declarations get nothing; the device libraries' functions barrier markers only.
    #[test]
    fn which_markers_a_function_gets() {
        let mut s = settings(true, true);
        let all = FunctionMarkers {
            barriers: true,
            memory: true,
            addresses: false,
        };
        assert_eq!(function_markers(&s, false, false), all);
        let library = FunctionMarkers {
            barriers: true,
            memory: false,
            addresses: false,
        };
        assert_eq!(function_markers(&s, false, true), library);
        let nothing = FunctionMarkers {
            barriers: false,
            memory: false,
            addresses: false,
        };
        assert_eq!(function_markers(&s, true, false), nothing);
        s.instrument_memory = None;
        s.trace_addresses = AddressTrace {
            memory: true,
            lds: false,
        };
        let traced = FunctionMarkers {
            barriers: true,
            memory: false,
            addresses: true,
        };
        assert_eq!(function_markers(&s, false, false), traced);
        assert!(!function_markers(&s, false, true).addresses);
    }

    /// `(id << 2) | flags`: enter 2, exit-previous 1 (an exit has no ID), point 0.
    #[test]
    fn early_marker_values() {
        assert_eq!(early_marker_value(Role::Enter, 5), 22);
        assert_eq!(early_marker_value(Role::Exit, 5), 1);
        assert_eq!(early_marker_value(Role::ExitEnter, 5), 23);
        assert_eq!(early_marker_value(Role::Point, 5), 20);
    }

    /// The `M:` row only on a target that packs the clock, with the settings' layout.
    #[test]
    fn clock_layout_only_when_packing() {
        let s = Settings {
            shader_clock_bits: 8,
            shader_clock_shift: 6,
            ..Settings::default()
        };
        assert_eq!(clock_layout(&s, false), None);
        assert_eq!(
            clock_layout(&s, true),
            Some(ClockLayout {
                shader_clock_bits: 8,
                shader_clock_shift: 6,
            })
        );
    }
}

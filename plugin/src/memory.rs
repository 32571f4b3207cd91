//! Memory operation markers (`SQTT_INSTRUMENT_MEMORY=N:M`): loads and stores through any
//! pointer but LDS and scratch ones (global, flat, constant, buffer), global/flat atomic and
//! buffer intrinsics (atomics count as stores). Operations of one kind form groups of
//! up to N with gaps of at most M instructions; a load/store change always ends a group. Each
//! group gets one `vmem_load` / `vmem_store` point marker directly after its last operation (as
//! AMD's pass places it: the marker's time is when the group has been issued).

use sqtt_config::MemoryGrouping;
use sqtt_markers::encoding;

use crate::emit::Record;
use crate::llvm::{Module, Value};
use crate::place::Placement;
use crate::target::addrspace;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemKind {
    Load,
    Store,
}

#[derive(Clone, Copy)]
pub struct MemoryIds {
    pub load: u32,
    pub store: u32,
}

/// Whether an access through `ptr` goes to memory: every address space but LDS (3) and scratch
/// (5), as docs/format.md section 1 says and AMD's pass counts. Constant memory (4, 6) is
/// included: a `__constant__` table read at a per-lane index is a vector load like a global one,
/// and buffer pointers (7, 8, 9) become buffer instructions.
fn is_vmem_space(ptr: Value) -> bool {
    ptr.pointer_address_space()
        .is_some_and(|space| space != addrspace::LOCAL && space != addrspace::PRIVATE)
}

/// The kind of a vector memory operation, if `i` is one.
pub fn classify(i: Value) -> Option<MemKind> {
    if i.is_load() {
        return is_vmem_space(i.operand(0)).then_some(MemKind::Load);
    }
    if i.is_store() {
        return is_vmem_space(i.operand(1)).then_some(MemKind::Store);
    }
    if i.is_atomic_rmw() || i.is_cmpxchg() {
        return is_vmem_space(i.operand(0)).then_some(MemKind::Store);
    }
    let callee = i.called_function()?;
    let name = callee.name_ref();
    let rest = name.strip_prefix("llvm.amdgcn.")?;
    let buffer = [
        "raw.buffer.",
        "struct.buffer.",
        "raw.ptr.buffer.",
        "struct.ptr.buffer.",
        "raw.tbuffer.",
        "struct.tbuffer.",
        "raw.ptr.tbuffer.",
        "struct.ptr.tbuffer.",
        "buffer.",
    ]
    .iter()
    .find_map(|p| rest.strip_prefix(p));
    if let Some(op) = buffer {
        if op.starts_with("load") {
            return Some(MemKind::Load);
        }
        if op.starts_with("store") || op.starts_with("atomic") {
            return Some(MemKind::Store);
        }
        return None;
    }
    if rest.starts_with("global.atomic.") || rest.starts_with("flat.atomic.") {
        return Some(MemKind::Store);
    }
    if rest.starts_with("global.load.") {
        return Some(MemKind::Load);
    }
    None
}

/// Where a block's memory markers go: after which of its counted instructions (`ops`, the
/// kind of each, `None` for one that is no memory operation; debug intrinsics and the pass's own
/// instructions are not counted), and of which kind. Operations of one kind form groups of up
/// to `ops_per_marker` with gaps of at most `max_gap` instructions; a change of kind ends a
/// group, and so does the end of the block.
pub fn group_ends(ops: &[Option<MemKind>], cfg: MemoryGrouping) -> Vec<(usize, MemKind)> {
    // The open group: its kind, how many operations it has, and where its last one is.
    let mut group: Option<(MemKind, u32, usize)> = None;
    let mut ends = Vec::new();
    for (index, kind) in ops.iter().enumerate() {
        let Some(kind) = *kind else { continue };
        match group.as_mut() {
            Some((k, count, last)) if *k == kind && index - *last - 1 <= cfg.max_gap as usize => {
                *count += 1;
                *last = index;
            }
            _ => {
                if let Some((k, _, last)) = group.take() {
                    ends.push((last, k));
                }
                group = Some((kind, 1, index));
            }
        }
        if let Some((k, count, last)) = group {
            if count == cfg.ops_per_marker {
                ends.push((last, k));
                group = None;
            }
        }
    }
    ends.extend(group.map(|(k, _, last)| (last, k)));
    ends
}

pub fn placements(
    m: Module,
    f: Value,
    cfg: MemoryGrouping,
    ids: MemoryIds,
    out: &mut Vec<Placement>,
) {
    let marker = |kind: MemKind| {
        let id = match kind {
            MemKind::Load => ids.load,
            MemKind::Store => ids.store,
        };
        vec![Record::Const(encoding::point(id))]
    };
    for bb in f.blocks() {
        // Debug intrinsics and the pass's own markers do not count toward gaps.
        let counted: Vec<Value> = bb
            .instructions()
            .into_iter()
            .filter(|i| {
                !crate::tags::is_sqtt_instruction(m, *i)
                    && !i
                        .called_function()
                        .is_some_and(|c| c.name_ref().starts_with("llvm.dbg."))
            })
            .collect();
        let kinds: Vec<Option<MemKind>> = counted.iter().map(|i| classify(*i)).collect();
        for (at, kind) in group_ends(&kinds, cfg) {
            out.push(Placement::after(f, counted[at], marker(kind)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Option<MemKind> = Some(MemKind::Load);
    const S: Option<MemKind> = Some(MemKind::Store);
    const X: Option<MemKind> = None;

    fn grouping(ops_per_marker: u32, max_gap: u32) -> MemoryGrouping {
        MemoryGrouping {
            ops_per_marker,
            max_gap,
        }
    }

    /// A group closes at N operations; what is left closes at the end of the block.
    #[test]
    fn a_group_closes_at_n_operations() {
        assert_eq!(
            group_ends(&[L, L, L], grouping(2, 5)),
            [(1, MemKind::Load), (2, MemKind::Load)]
        );
        assert_eq!(
            group_ends(&[S, X, S], grouping(1, 5)),
            [(0, MemKind::Store), (2, MemKind::Store)]
        );
    }

    /// A gap of M instructions joins; one more ends the group.
    #[test]
    fn a_gap_of_more_than_m_ends_a_group() {
        assert_eq!(group_ends(&[L, X, L], grouping(4, 1)), [(2, MemKind::Load)]);
        assert_eq!(
            group_ends(&[L, X, X, L], grouping(4, 1)),
            [(0, MemKind::Load), (3, MemKind::Load)]
        );
        assert_eq!(
            group_ends(&[L, L, X, L], grouping(8, 0)),
            [(1, MemKind::Load), (3, MemKind::Load)]
        );
    }

    /// A load after stores (or the other way) starts a new group, whatever the gap.
    #[test]
    fn a_change_of_kind_ends_a_group() {
        assert_eq!(
            group_ends(&[L, S, S, L], grouping(4, 5)),
            [(0, MemKind::Load), (2, MemKind::Store), (3, MemKind::Load)]
        );
    }

    /// No memory operation, no marker.
    #[test]
    fn no_operations_no_markers() {
        assert!(group_ends(&[X, X, X], grouping(1, 0)).is_empty());
        assert!(group_ends(&[], grouping(1, 0)).is_empty());
    }
}

//! Memory operation markers (`SQTT_INSTRUMENT_MEMORY=N:M`): loads and stores through any
//! pointer but LDS and scratch ones (global, flat, constant, buffer), global/flat atomic and
//! buffer intrinsics (atomics count as stores). Operations of one kind form groups of
//! up to N with gaps of at most M instructions; a load/store change always ends a group. Each
//! group gets one `vmem_load` / `vmem_store` point marker directly after its last operation (as
//! AMD's pass places it: the marker's time is when the group has been issued).

use sqtt_config::MemoryGrouping;
use sqtt_markers::encoding;

use crate::emit::Record;
use crate::late::Placement;
use crate::llvm::{Module, Value};
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

struct Group {
    kind: MemKind,
    last: Value,
    count: u32,
    last_index: usize,
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
        let mut group: Option<Group> = None;
        let mut index = 0usize;
        for i in bb.instructions() {
            // Debug intrinsics and the pass's own markers do not count toward gaps.
            if crate::is_sqtt_instruction(m, i)
                || i.called_function()
                    .is_some_and(|c| c.name_ref().starts_with("llvm.dbg."))
            {
                continue;
            }
            index += 1;
            let Some(kind) = classify(i) else { continue };
            let joins = group.as_ref().is_some_and(|g| {
                g.kind == kind && index - g.last_index - 1 <= cfg.max_gap as usize
            });
            if joins {
                let g = group.as_mut().expect("group");
                g.count += 1;
                g.last = i;
                g.last_index = index;
            } else {
                if let Some(g) = group.take() {
                    out.push(Placement::after(f, g.last, marker(g.kind)));
                }
                group = Some(Group {
                    kind,
                    last: i,
                    count: 1,
                    last_index: index,
                });
            }
            if group
                .as_ref()
                .is_some_and(|g| g.count == cfg.ops_per_marker)
            {
                let g = group.take().expect("group");
                out.push(Placement::after(f, g.last, marker(g.kind)));
            }
        }
        if let Some(g) = group.take() {
            out.push(Placement::after(f, g.last, marker(g.kind)));
        }
    }
}

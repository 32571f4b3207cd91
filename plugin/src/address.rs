//! Address tracing (`SQTT_TRACE_ADDRESSES=memory|lds|memory,lds`): before every qualifying
//! memory operation, a header point marker with a per-operation ID, the EXEC mask, and the
//! per-lane addresses from a `v_readlane` loop over all lanes (a second loop for struct-buffer
//! vindex). The decoder filters lanes by EXEC.
//!
//! | category          | lane payload            | fixed payload             |
//! |-------------------|-------------------------|---------------------------|
//! | flat/global (0/1) | address lo, hi          |                           |
//! | LDS (3)           | address (32-bit)        |                           |
//! | raw buffer        | voffset                 | rsrc lo, rsrc hi, soffset |
//! | struct buffer     | voffset, then vindex    | rsrc lo, rsrc hi, soffset |
//! | ds_(b)permute     | index (byte offset)     |                           |

use sqtt_config::AddressTrace;
use sqtt_markers::addr_trace::{Access, Kind, Layout};
use sqtt_markers::encoding;

use crate::compat;
use crate::emit::{Emitter, Record};
use crate::ledger::FinalIds;
use crate::llvm::{self, insert_block_after, Builder, Module, Value};
use crate::scope::ScopeChecks;
use crate::target::{addrspace, Target};

/// What is traced for one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Category {
    Load,
    Store,
    Atomic,
    LdsLoad,
    LdsStore,
    LdsAtomic,
    Buffer(BufferOp),
    StructBuffer(BufferOp),
    Permute,
    BPermute,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BufferOp {
    Load,
    Store,
    Atomic,
}

impl Category {
    /// The funcmap kind (name and payload layout, shared with the trace tools).
    fn kind(self) -> Kind {
        use BufferOp as B;
        let (layout, access) = match self {
            Category::Load => (Layout::Memory, Access::Load),
            Category::Store => (Layout::Memory, Access::Store),
            Category::Atomic => (Layout::Memory, Access::Atomic),
            Category::LdsLoad => (Layout::Lds, Access::Load),
            Category::LdsStore => (Layout::Lds, Access::Store),
            Category::LdsAtomic => (Layout::Lds, Access::Atomic),
            Category::Buffer(op) | Category::StructBuffer(op) => {
                let layout = if matches!(self, Category::Buffer(_)) {
                    Layout::Buffer
                } else {
                    Layout::StructBuffer
                };
                let access = match op {
                    B::Load => Access::Load,
                    B::Store => Access::Store,
                    B::Atomic => Access::Atomic,
                };
                (layout, access)
            }
            Category::Permute => (Layout::Permute, Access::Permute),
            Category::BPermute => (Layout::Permute, Access::BPermute),
        };
        Kind::new(layout, access)
    }
}

/// An operation to trace and where its operands are.
struct TracedOp {
    inst: Value,
    category: Category,
    /// Pointer (flat/global/LDS), or the index (permutes), or voffset (buffers).
    lane_value: Value,
    /// Buffer operations: resource, soffset, and for struct buffers vindex.
    rsrc: Option<Value>,
    soffset: Option<Value>,
    vindex: Option<Value>,
}

fn classify(i: Value, which: AddressTrace) -> Option<TracedOp> {
    let op = |category, lane_value| TracedOp {
        inst: i,
        category,
        lane_value,
        rsrc: None,
        soffset: None,
        vindex: None,
    };
    let by_space = |ptr: Value, global: Category, lds: Category| match ptr.pointer_address_space() {
        Some(addrspace::FLAT | addrspace::GLOBAL) if which.memory => Some(op(global, ptr)),
        Some(addrspace::LOCAL) if which.lds => Some(op(lds, ptr)),
        _ => None,
    };
    if i.is_load() {
        return by_space(i.operand(0), Category::Load, Category::LdsLoad);
    }
    if i.is_store() {
        return by_space(i.operand(1), Category::Store, Category::LdsStore);
    }
    if i.is_atomic_rmw() || i.is_cmpxchg() {
        return by_space(i.operand(0), Category::Atomic, Category::LdsAtomic);
    }
    let callee = i.called_function()?;
    let name = callee.name_ref();
    let rest = name.strip_prefix("llvm.amdgcn.")?;
    if rest == "ds.permute" && which.lds {
        return Some(op(Category::Permute, i.arg(0)));
    }
    if (rest == "ds.bpermute" || rest.starts_with("ds.bpermute.fi")) && which.lds {
        return Some(op(Category::BPermute, i.arg(0)));
    }
    if !which.memory {
        return None;
    }
    let (is_struct, tail) = if let Some(t) = rest
        .strip_prefix("raw.ptr.buffer.")
        .or_else(|| rest.strip_prefix("raw.buffer."))
    {
        (false, t)
    } else if let Some(t) = rest
        .strip_prefix("struct.ptr.buffer.")
        .or_else(|| rest.strip_prefix("struct.buffer."))
    {
        (true, t)
    } else {
        return None;
    };
    // `*.buffer.load.lds` writes LDS with another operand layout.
    let bop = if tail.starts_with("load.lds") {
        return None;
    } else if tail.starts_with("load") {
        BufferOp::Load
    } else if tail.starts_with("store") {
        BufferOp::Store
    } else if tail.starts_with("atomic") {
        BufferOp::Atomic
    } else {
        return None;
    };
    // The resource is the first `<4 x i32>` or `ptr addrspace(8)` operand; vindex (struct),
    // voffset and soffset follow it in every load/store/atomic/cmpswap variant.
    let rsrc_index = (0..i.num_args()).find(|k| {
        let a = i.arg(*k);
        a.is_v4i32() || a.pointer_address_space() == Some(addrspace::BUFFER_RESOURCE)
    })?;
    let next = |n: u32| (rsrc_index + n < i.num_args()).then(|| i.arg(rsrc_index + n));
    let (vindex, voffset, soffset) = if is_struct {
        (next(1), next(2)?, next(3)?)
    } else {
        (None, next(1)?, next(2)?)
    };
    Some(TracedOp {
        inst: i,
        category: if is_struct {
            Category::StructBuffer(bop)
        } else {
            Category::Buffer(bop)
        },
        lane_value: voffset,
        rsrc: Some(i.arg(rsrc_index)),
        soffset: Some(soffset),
        vindex,
    })
}

/// `file:line -> outer_file:line ...` of an instruction's debug location.
fn source_chain(i: Value) -> Option<String> {
    let mut loc = i.debug_loc()?;
    let mut parts = Vec::new();
    for _ in 0..32 {
        let file = llvm::di_file_name(loc, true);
        let base = file.rsplit('/').next().unwrap_or(&file).to_string();
        parts.push(format!("{base}:{}", llvm::debug_loc_line(loc)));
        match llvm::debug_loc_inlined_at(loc) {
            Some(outer) => loc = outer,
            None => break,
        }
    }
    Some(parts.join(" -> "))
}

/// The operations of one function to trace, in code order, each with its header's ID.
pub struct FunctionTraces {
    function: Value,
    target: Target,
    ops: Vec<(TracedOp, u32)>,
}

/// Finds the operations of `f` to trace and gives each an ID (code order), without emitting
/// anything: at -O0 the IDs are made before the function's own ([`crate::late`]), the code later.
pub fn number(
    m: Module,
    ids: &mut FinalIds,
    which: AddressTrace,
    f: Value,
    target: Target,
) -> FunctionTraces {
    let ops: Vec<(TracedOp, u32)> = f
        .blocks()
        .into_iter()
        .flat_map(|b| b.instructions())
        .filter(|i| !crate::tags::is_sqtt_instruction(m, *i))
        .filter_map(|i| classify(i, which))
        .map(|op| {
            let kind = op.category.kind();
            let id = ids.system_point(
                kind.name(),
                source_chain(op.inst),
                kind.payload_records(target.wave_size),
            );
            ids.wave_size = Some(target.wave_size);
            (op, id)
        })
        .collect();
    FunctionTraces {
        function: f,
        target,
        ops,
    }
}

/// Writes the address traces of a function numbered by [`number`].
pub fn emit(m: Module, emitter: &Emitter, scopes: &mut ScopeChecks, traces: &FunctionTraces) {
    for (op, id) in &traces.ops {
        emit_block(m, emitter, scopes, traces.function, &traces.target, op, *id);
    }
}

/// Emits the header, EXEC, fixed words and lane loops before the operation.
fn emit_block(
    m: Module,
    emitter: &Emitter,
    scopes: &mut ScopeChecks,
    f: Value,
    target: &Target,
    op: &TracedOp,
    id: u32,
) {
    let loc = op.inst.debug_loc();
    let in_scope = scopes.in_scope(m, f, target);
    // The region: a block whose terminator continues at the operation.
    let (b, guarded) = match in_scope {
        Some(cond) => (crate::scope::guard_before(m, op.inst, cond).0, true),
        None => {
            let head = op.inst.parent_block();
            op.inst.split_block_before("sqtt.addr.cont");
            let b = m.builder();
            b.position_before(head.terminator().expect("split leaves a branch"));
            (b, false)
        }
    };
    b.set_debug_loc(loc);
    if !guarded {
        emitter.sched_barrier(&b);
    }
    emitter.boundary(&b, target);
    emitter.record(&b, target, Record::Const(encoding::point(id)));
    emitter.exec_records(&b, target);

    let i32t = m.i32();
    // Values computed before the loops: lane words as i32 halves, fixed words made uniform.
    let (lane_lo, lane_hi) = match op.category {
        Category::Load | Category::Store | Category::Atomic => {
            let a = b.ptr_to_int(op.lane_value, m.i64());
            let lo = b.trunc(a, i32t);
            let hi = b.trunc(b.lshr(a, crate::llvm::const_i64(m, 32)), i32t);
            (lo, Some(hi))
        }
        Category::LdsLoad | Category::LdsStore | Category::LdsAtomic => {
            (b.ptr_to_int(op.lane_value, i32t), None)
        }
        _ => (as_i32(&b, m, op.lane_value), None),
    };
    if let Some(rsrc) = op.rsrc {
        let (lo, hi) = if rsrc.is_v4i32() {
            (
                b.extract_element(rsrc, m.const_i32(0)),
                b.extract_element(rsrc, m.const_i32(1)),
            )
        } else {
            let wide = b.ptr_to_int(rsrc, m.i128());
            let lo = b.trunc(wide, i32t);
            let hi = b.trunc(b.lshr(wide, crate::llvm::const_int(m.i128(), 32)), i32t);
            (lo, hi)
        };
        for v in [lo, hi, as_i32(&b, m, op.soffset.expect("buffer soffset"))] {
            emitter.record(&b, target, Record::Payload(v));
        }
    }
    let after = lane_loop(m, emitter, &b, target, lane_lo, lane_hi);
    let after = match op.vindex {
        Some(vindex) => {
            let vi = as_i32(&after, m, vindex);
            lane_loop(m, emitter, &after, target, vi, None)
        }
        None => after,
    };
    emitter.boundary(&after, target);
    if !guarded {
        emitter.sched_barrier(&after);
    }
}

fn as_i32(b: &Builder, m: Module, v: Value) -> Value {
    if v.is_int_of(32) {
        v
    } else {
        b.zext_or_bitcast(v, m.i32())
    }
}

/// A `for lane in 0..wave_size` loop writing `readlane(lo, lane)` (and `hi`) into the trace,
/// never unrolled. `b` sits before a block's final branch; returns a builder at the same place
/// in the loop's exit block.
fn lane_loop(
    m: Module,
    emitter: &Emitter,
    b: &Builder,
    target: &Target,
    lo: Value,
    hi: Option<Value>,
) -> Builder {
    let i32t = m.i32();
    let pre = b.insertion_block();
    let term = pre.terminator().expect("region ends with a branch");
    let cont = term.successor(0);
    let body = insert_block_after(pre, "sqtt.lanes");
    let exit = insert_block_after(body, "sqtt.lanes.end");
    // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
    unsafe { term.erase() };
    let bp = m.builder();
    bp.position_at_end(pre);
    bp.br(body);

    let lb = m.builder();
    lb.position_at_end(body);
    lb.set_debug_loc(b.debug_loc());
    let lane = lb.phi(i32t);
    lane.add_incoming(m.const_i32(0), pre);
    let rl_ty = m.fn_type(i32t, &[i32t, i32t]);
    let readlane = m.declare(compat::READLANE_I32, rl_ty);
    for v in std::iter::once(lo).chain(hi) {
        let word = lb.call(rl_ty, readlane, &[v, lane]);
        emitter.m0_record_raw(&lb, target, word);
    }
    let next = lb.add(lane, m.const_i32(1));
    lane.add_incoming(next, body);
    let more = lb.icmp_ult(next, m.const_i32(target.wave_size));
    let latch = lb.cond_br(more, body, exit);
    latch.disable_unroll();

    let eb = m.builder();
    eb.position_at_end(exit);
    let br = eb.br(cont);
    eb.position_before(br);
    eb.set_debug_loc(b.debug_loc());
    eb
}

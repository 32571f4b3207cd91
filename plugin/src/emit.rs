//! IR-building helpers: one marker sequence (reorder boundaries around `s_ttracedata`).
//!
//! A record is `s_ttracedata_imm <v>` for small values on gfx10+ (the
//! `llvm.amdgcn.s.ttracedata.imm` intrinsic where LLVM has it, inline asm before LLVM 19), or
//! else goes through M0 as one unit, on every target and every LLVM:
//!
//! ```text
//!   s_mov_b32 m0, <value>      ; an immediate, or an SGPR holding a wave-uniform value
//!   s_nop N                    ; Target::m0_trace_nop: 0, or 3 on gfx12
//!   s_ttracedata
//! ```
//!
//! The three instructions are one `asm sideeffect` with M0 as its output and the value as an `i`
//! or `s` input: alone, the text the headers write too (`sqtt_markers::HEADER_RECORD_ASM`, N an
//! `i` operand, as AMD's pass writes it), behind a scope check one asm with the check and every
//! record of the marker (`checked_asm`, N in the text). The `llvm.amdgcn.s.ttracedata` intrinsic (LLVM 19+) is not used for this: the
//! backend writes M0 wherever it likes (`s_movk_i32 m0` or `s_add_i32 m0, ...` several
//! instructions earlier, a `v_readfirstlane_b32` or an `s_ttracedata_imm` in between) and relies
//! on its hazard recognizer for the gfx9 wait, so the sequence would not be one unit; llc-22 shows
//! all of this on gfx90a, gfx1030, gfx1100 and gfx1200. Nor is an M0 input constraint used (what
//! LLVM < 19 had before): the compiler then writes M0 with `v_readfirstlane_b32 m0` or puts
//! `s_waitcnt` between the write and the nop.

use sqtt_config::{MemBarrier, Settings};
use sqtt_markers::encoding::fits_imm;

use crate::compat::{self, sys, MarkerFence};
use std::cell::RefCell;
use std::collections::HashMap;

use crate::llvm::{Block, Builder, Module, Value};
use crate::target::{ShaderClockRead, Target};

/// Metadata kind that also tags a payload record (one that is no marker header: a data marker's
/// value, an address trace's words), as AMD's pass tags its own.
pub const RAW_PAYLOAD_MD: &str = "sqtt.raw_payload";

/// Asm text of one M0 record of a scope-checked asm ([`checked_asm`]) whose value is operand
/// `$n` (an immediate or an SGPR).
fn m0_trace_asm(target: &Target, n: usize) -> String {
    format!(
        "s_mov_b32 m0, ${n}\n\ts_nop {}\n\ts_ttracedata",
        target.m0_trace_nop()
    )
}

/// The constraint of an M0 record's value: a constant is an immediate (`s_mov_b32 m0, 20`),
/// anything else must already be wave-uniform and is passed in an SGPR.
fn m0_value_constraint(value: Value) -> &'static str {
    if value.const_int_value().is_some() {
        "i"
    } else {
        "s"
    }
}

/// One record of a marker sequence.
#[derive(Clone, Copy)]
pub enum Record {
    /// A marker header (or exit) the pass made: on gfx12 with clock packing it carries the
    /// shader clock in its high bits.
    Const(u32),
    /// A numeric enter/point value from markers.hpp: always kept in its legacy form, so that
    /// arbitrary user data is never read as a packed header.
    UserValue(u32),
    /// A numeric marker's value known only at run time; made wave-uniform with readfirstlane.
    Dynamic(Value),
    /// A payload record (a data marker's value, an address trace's fixed words): an immediate
    /// when it is a constant, else made wave-uniform with readfirstlane.
    Payload(Value),
}

pub struct Emitter<'s> {
    pub module: Module,
    pub settings: &'s Settings,
    marker_md: u32,
    raw_payload_md: u32,
    /// The scope-checked record asms made so far, and what they write: a later marker of the
    /// same run joins one ([`Emitter::marker`]).
    checked: RefCell<HashMap<Value, Vec<Operand>>>,
}

impl<'s> Emitter<'s> {
    pub fn new(module: Module, settings: &'s Settings) -> Emitter<'s> {
        Emitter {
            module,
            settings,
            marker_md: module.md_kind(crate::tags::MARKER_MD),
            raw_payload_md: module.md_kind(RAW_PAYLOAD_MD),
            checked: RefCell::new(HashMap::new()),
        }
    }

    fn tag(&self, v: Value) -> Value {
        v.set_metadata(self.marker_md, self.module.empty_md());
        v
    }

    /// Whether an instruction is a marker the plugin made.
    pub fn is_plugin_marker(&self, v: Value) -> bool {
        v.metadata(self.marker_md).is_some()
    }

    pub fn sched_barrier(&self, b: &Builder) {
        let m = self.module;
        let ty = m.fn_type(m.void(), &[m.i32()]);
        let f = m.declare("llvm.amdgcn.sched.barrier", ty);
        self.tag(b.call(ty, f, &[m.const_i32(0)]));
    }

    /// The `SQTT_MEM_BARRIER` boundary.
    pub fn boundary(&self, b: &Builder, target: &Target) {
        let m = self.module;
        match self.settings.mem_barrier {
            MemBarrier::None => {}
            MemBarrier::Asm => {
                let ty = m.fn_type(m.void(), &[]);
                let asm = m.inline_asm(ty, "", "~{memory}");
                self.tag(b.call(ty, asm, &[]));
            }
            MemBarrier::Fence => match compat::MARKER_FENCE {
                MarkerFence::WorkgroupLocalMmra => {
                    let fence = self.tag(b.scoped_fence("workgroup"));
                    fence.set_mmra(compat::MMRA_SYNCHRONIZE_AS, "local");
                }
                MarkerFence::WavefrontAndLdsWait => {
                    self.tag(b.scoped_fence("wavefront"));
                    let ty = m.fn_type(m.void(), &[]);
                    // No `~{memory}`: the fence orders memory, and the clobber would cost a
                    // register-name lookup per asm ([`checked_asm`]).
                    let asm = m.inline_asm(ty, target.lds_wait_asm(), "");
                    self.tag(b.call(ty, asm, &[]));
                }
            },
        }
    }

    /// Drops the LDS waits of the LLVM < 19 fence form ([`MarkerFence::WavefrontAndLdsWait`])
    /// where no LDS operation can be outstanding, as the LDS-only fence does on LLVM 19+
    /// (docs/format.md section 1, "The sequence around a marker"; its `s_waitcnt lgkmcnt(0)`
    /// appears only after such an operation; llc-22 shows this on gfx90a, gfx1030, gfx1100 and
    /// gfx1200). So a marker's trailing wait goes (only
    /// marker work ran since its leading one), as do the leading waits of the later markers of a
    /// run and of markers with no LDS operation before them since the last wait or the kernel's
    /// start. A dropped wait leaves its wavefront fence, which still keeps memory operations
    /// from moving across the boundary in IR and MIR.
    ///
    /// `in_scope` is the function's scope-check value, if it has one: a marker's wait runs only
    /// when it holds, and then every check of the function passes, so the analysis does not
    /// follow the branches taken when it fails.
    pub fn drop_repeated_waits(&self, f: Value, target: &Target, in_scope: Option<Value>) {
        if self.settings.mem_barrier != MemBarrier::Fence
            || compat::MARKER_FENCE != MarkerFence::WavefrontAndLdsWait
        {
            return;
        }
        let wait = target.lds_wait_asm();
        let is_wait = |i: Value| self.is_plugin_marker(i) && i.called_inline_asm() == Some(wait);
        let pending_at_start = self.lds_pending_at_block_starts(f, &is_wait, in_scope);
        for bb in f.blocks() {
            let mut pending = pending_at_start.get(&bb).copied().unwrap_or(Pending::Some);
            for i in bb.instructions() {
                if is_wait(i) && pending == Pending::None {
                    // SAFETY: nothing uses this handle (or a name borrowed from it) after this.
                    unsafe { i.erase() };
                    continue;
                }
                pending = self.lds_step(pending, i, &is_wait);
            }
        }
    }

    /// What is in flight after `i`, given what was before it.
    fn lds_step(&self, pending: Pending, i: Value, is_wait: &dyn Fn(Value) -> bool) -> Pending {
        if is_wait(i) || drains_lds(i) {
            return Pending::None;
        }
        if let Pending::Load(load) = pending {
            if reads_for_certain(i, load) {
                return Pending::None;
            }
        }
        if self.is_plugin_marker(i) || !may_issue_lds(i) {
            return pending;
        }
        match pending {
            Pending::None if i.is_load() => Pending::Load(i),
            _ => Pending::Some,
        }
    }

    /// Per block, which LDS operations may be in flight when it starts ([`Pending`]): a kernel
    /// starts with none, a device function's caller may leave some. A forward may-analysis to
    /// its least fixpoint; dropping waits where nothing is pending leaves it valid.
    fn lds_pending_at_block_starts(
        &self,
        f: Value,
        is_wait: &dyn Fn(Value) -> bool,
        in_scope: Option<Value>,
    ) -> HashMap<Block, Pending> {
        let blocks = f.blocks();
        let mut at_start: HashMap<Block, Pending> =
            blocks.iter().map(|b| (*b, Pending::None)).collect();
        if let (Some(entry), false) = (blocks.first(), f.is_kernel()) {
            at_start.insert(*entry, Pending::Some);
        }
        let mut at_end: HashMap<Block, Pending> = HashMap::new();
        let mut changed = true;
        while changed {
            changed = false;
            for bb in &blocks {
                let mut pending = at_start[bb];
                for i in bb.instructions() {
                    pending = self.lds_step(pending, i, is_wait);
                }
                if at_end.insert(*bb, pending) == Some(pending) || pending == Pending::None {
                    continue;
                }
                let Some(term) = bb.terminator() else {
                    continue;
                };
                let mut successors = term.successors();
                if in_scope.is_some()
                    && term.num_operands() == 3
                    && Some(term.operand(0)) == in_scope
                {
                    successors.truncate(1); // the out-of-scope edge
                }
                for s in successors {
                    if let Some(slot) = at_start.get_mut(&s) {
                        let joined = slot.join(pending);
                        if joined != *slot {
                            *slot = joined;
                            changed = true;
                        }
                    }
                }
            }
        }
        at_start
    }

    /// One `s_ttracedata` / `s_ttracedata_imm` record.
    pub fn record(&self, b: &Builder, target: &Target, rec: Record) -> Value {
        let m = self.module;
        match self.operand(b, target, rec) {
            Operand::Imm(v) => match compat::TTRACEDATA_IMM_INTRINSIC {
                Some(name) => {
                    let ty = m.fn_type(m.void(), &[m.i16()]);
                    let f = m.declare(name, ty);
                    let imm = crate::llvm::const_int(m.i16(), u64::from(v));
                    self.tag(b.call(ty, f, &[imm]))
                }
                None => {
                    let ty = m.fn_type(m.void(), &[]);
                    let asm = m.inline_asm(ty, &format!("s_ttracedata_imm 0x{v:x}"), "");
                    self.tag(b.call(ty, asm, &[]))
                }
            },
            Operand::M0(value) => {
                let call = self.m0_record(b, target, value);
                if matches!(rec, Record::Payload(_)) {
                    call.set_metadata(self.raw_payload_md, m.empty_md());
                }
                call
            }
        }
    }

    /// What a record writes: an `s_ttracedata_imm` immediate, or the value M0 carries (a
    /// constant, or a wave-uniform value built here before the record).
    fn operand(&self, b: &Builder, target: &Target, rec: Record) -> Operand {
        let m = self.module;
        match rec {
            Record::Const(v) if self.packing(target) => {
                Operand::M0(self.packed_header(b, target, v))
            }
            Record::Const(v) | Record::UserValue(v)
                if fits_imm(v) && target.has_ttracedata_imm() && !self.packing(target) =>
            {
                Operand::Imm(v)
            }
            Record::Const(v) | Record::UserValue(v) => Operand::M0(m.const_i32(v)),
            // A constant payload is an immediate (`s_mov_b32 m0, 42`): one SALU instruction
            // less than an SGPR made from it.
            Record::Payload(v) if v.const_int_value().is_some() => {
                Operand::M0(m.const_i32(v.const_int_value().unwrap_or(0) as u32))
            }
            Record::Dynamic(v) | Record::Payload(v) => {
                let i32t = m.i32();
                let v = if v.type_of() == i32t {
                    v
                } else {
                    b.zext_or_bitcast(v, i32t)
                };
                let rfl_ty = m.fn_type(i32t, &[i32t]);
                let rfl = m.declare(crate::compat::READFIRSTLANE_I32, rfl_ty);
                Operand::M0(b.call(rfl_ty, rfl, &[v]))
            }
        }
    }

    /// Records behind the scope check, as one asm ([`checked_asm`]): `in_scope` is the
    /// function's in-scope word (0 or 1, an SGPR input). The values the records need are
    /// computed before it, by every wave; only the records are skipped.
    fn checked_records(
        &self,
        b: &Builder,
        target: &Target,
        operands: Vec<Operand>,
        in_scope: Value,
    ) -> Value {
        let m = self.module;
        let (text, constraints) = checked_asm(target, &operands);
        let mut args = vec![in_scope];
        args.extend(operands.iter().filter_map(|o| match o {
            Operand::M0(v) => Some(*v),
            Operand::Imm(_) => None,
        }));
        let i32t = m.i32();
        let params = vec![i32t; args.len()];
        let ret = if constraints.starts_with("={m0}") {
            m.struct_of(&[i32t, m.i1()])
        } else {
            m.i1()
        };
        let ty = m.fn_type(ret, &params);
        let asm = m.inline_asm(ty, &text, &constraints);
        let call = self.tag(b.call(ty, asm, &args));
        self.checked.borrow_mut().insert(call, operands);
        call
    }

    /// The scope-checked record asm a marker before `at` can join: the previous one in the
    /// block, with only marker leftovers ([`crate::tags::is_marker_leftover`]) in between.
    fn joinable(&self, at: Value) -> Option<Value> {
        let checked = self.checked.borrow();
        let mut cur = at.prev();
        while let Some(i) = cur {
            if checked.contains_key(&i) {
                return Some(i);
            }
            if !crate::tags::is_marker_leftover(self.module, i) {
                return None;
            }
            cur = i.prev();
        }
        None
    }

    /// The EXEC mask, low then high word, through M0 (`s_mov_b32 m0, exec_lo` ...). M0 is the
    /// asm's output so the compiler knows it is overwritten.
    pub fn exec_records(&self, b: &Builder, target: &Target) -> Value {
        let m = self.module;
        let ty = m.fn_type(m.i32(), &[m.i32()]);
        let asm = m.inline_asm(
            ty,
            "s_mov_b32 m0, exec_lo\ns_nop $1\ns_ttracedata\n\
             s_mov_b32 m0, exec_hi\ns_nop $1\ns_ttracedata",
            "={m0},i",
        );
        let call = self.tag(b.call(ty, asm, &[m.const_i32(target.m0_trace_nop())]));
        call.set_metadata(self.raw_payload_md, m.empty_md());
        call
    }

    /// A payload record of a value already uniform (a readlane result).
    pub fn m0_record_raw(&self, b: &Builder, target: &Target, value: Value) -> Value {
        let call = self.m0_record(b, target, value);
        call.set_metadata(self.raw_payload_md, self.module.empty_md());
        call
    }

    /// One M0 record as a single asm: the headers' text ([`sqtt_markers::HEADER_RECORD_ASM`]),
    /// the value an immediate or an SGPR ([`m0_value_constraint`]), the nop count an immediate.
    fn m0_record(&self, b: &Builder, target: &Target, value: Value) -> Value {
        let m = self.module;
        let i32t = m.i32();
        let ty = m.fn_type(i32t, &[i32t, i32t]);
        let constraints = format!("={{m0}},{},i", m0_value_constraint(value));
        let asm = m.inline_asm(ty, sqtt_markers::HEADER_RECORD_ASM, &constraints);
        let nop = m.const_i32(target.m0_trace_nop());
        self.tag(b.call(ty, asm, &[value, nop]))
    }

    /// `(clock_window << (32 - bits)) | header`: the shader clock bits `[shift, shift + bits)`
    /// sampled at issue (docs/format.md, section 5).
    fn packed_header(&self, b: &Builder, target: &Target, header: u32) -> Value {
        let m = self.module;
        let bits = self.settings.shader_clock_bits;
        let shift = self.settings.shader_clock_shift;
        let i32t = m.i32();
        let window = if target.shader_clock_read() == Some(ShaderClockRead::Cycles64) {
            // s_get_shader_cycles_u64: the whole counter; take the window from its low word.
            let ty = m.fn_type(m.i64(), &[]);
            let asm = m.inline_asm(ty, "s_get_shader_cycles_u64 $0", "=s");
            let cycles = self.tag(b.call(ty, asm, &[]));
            let lo = b.trunc(cycles, i32t);
            let shifted = b.lshr(lo, m.const_i32(shift));
            b.and(shifted, m.const_i32(((1u64 << bits) - 1) as u32))
        } else {
            // s_getreg_b32 hwreg(HW_REG_SHADER_CYCLES_LO, shift, bits): the window, right-aligned.
            let field = crate::target::HwRegField {
                reg: crate::target::HW_REG_SHADER_CYCLES_LO,
                offset: shift,
                bits,
            };
            let ty = m.fn_type(i32t, &[i32t]);
            let getreg = m.declare(crate::compat::S_GETREG, ty);
            b.call(ty, getreg, &[m.const_i32(field.imm())])
        };
        let high = b.shl(window, m.const_i32(32 - bits));
        let id_mask = self.packed_id_mask();
        b.or(high, m.const_i32(header & id_mask))
    }

    /// The header bits below the clock field.
    fn packed_id_mask(&self) -> u32 {
        let bits = self.settings.shader_clock_bits;
        ((1u64 << (32 - bits)) - 1) as u32
    }

    /// Whether gfx12 clock packing applies on this target.
    pub fn packing(&self, target: &Target) -> bool {
        self.settings.clock_packing() && target.supports_clock_packing()
    }

    /// A whole marker before `at` (`b` is positioned there): sched_barrier, boundary, the
    /// records, boundary, sched_barrier. With `in_scope` (the function's in-scope word,
    /// [`crate::scope::ScopeChecks::in_scope_word`]) the records are one asm that checks it first
    /// and jumps past them in a wave out of scope, so the marker adds no basic block; the
    /// boundaries run in every wave. A marker right after another one's checked records, with
    /// only marker leftovers between, adds its records to that asm instead (one check and one
    /// pair of boundaries for the run).
    pub fn marker(
        &self,
        b: &Builder,
        at: Value,
        target: &Target,
        records: &[Record],
        in_scope: Option<Value>,
    ) {
        let Some(word) = in_scope else {
            self.sched_barrier(b);
            self.boundary(b, target);
            for r in records {
                self.record(b, target, *r);
            }
            self.boundary(b, target);
            self.sched_barrier(b);
            return;
        };
        if let Some(prev) = self.joinable(at) {
            let m = self.module;
            let pb = m.builder();
            pb.position_before(prev);
            pb.set_debug_loc(prev.debug_loc());
            let mut operands = self.checked.borrow_mut().remove(&prev).unwrap_or_default();
            operands.extend(records.iter().map(|r| self.operand(&pb, target, *r)));
            self.checked_records(&pb, target, operands, word);
            // SAFETY: nothing uses this handle (or a name borrowed from it) after this; its
            // M0 result has no uses.
            unsafe { prev.erase() };
            return;
        }
        self.sched_barrier(b);
        self.boundary(b, target);
        let operands = records
            .iter()
            .map(|r| self.operand(b, target, *r))
            .collect();
        self.checked_records(b, target, operands, word);
        self.boundary(b, target);
        self.sched_barrier(b);
    }
}

/// What one record writes.
#[derive(Clone, Copy)]
enum Operand {
    /// `s_ttracedata_imm` with this value.
    Imm(u32),
    /// `s_mov_b32 m0, <value>` / `s_nop N` / `s_ttracedata`.
    M0(Value),
}

/// The label a scope check jumps to: local (`.L`), made unique per asm statement by LLVM's
/// `${:uid}` operand modifier, so that copies of the asm (tail duplication) get labels of their
/// own.
pub const SCOPE_SKIP_LABEL: &str = ".Lsqtt_skip${:uid}";

/// Asm text and constraints of a marker's records behind the scope check:
///
/// ```text
///   s_cmp_eq_u32 $k, 0                  ; $k: the in-scope word
///   s_cbranch_scc1 .Lsqtt_skip${:uid}
///   s_mov_b32 m0, $j / s_nop N / s_ttracedata    or    s_ttracedata_imm 0x..
///   ...
/// .Lsqtt_skip${:uid}:
/// ```
///
/// The outputs are M0 when a record writes it (`={m0}`) and SCC (`={scc}`, an `i1`), both
/// unused; the inputs are the word (`s`), then each M0 value, an immediate (`i`) or an SGPR
/// (`s`). SCC is an output rather than a `~{scc}` clobber, and no `~{memory}` is added, for
/// compile time: LLVM resolves a named-register clobber by comparing the name with every
/// register of every class, in ISel, once per asm (3 000 asms with `~{scc}`: llc-22 6.9 s,
/// llc-15 1.2 s more than with `={scc}`, nearly all in `strlen`), while an `i1` output finds
/// SCC's class right away. `asm sideeffect` alone already keeps memory operations in order in IR and MIR.
fn checked_asm(target: &Target, operands: &[Operand]) -> (String, String) {
    let writes_m0 = operands.iter().any(|o| matches!(o, Operand::M0(_)));
    let first = usize::from(writes_m0) + 1;
    let mut constraints: Vec<&str> = Vec::new();
    if writes_m0 {
        constraints.push("={m0}");
    }
    constraints.push("={scc}");
    constraints.push("s");
    let mut lines = vec![
        format!("s_cmp_eq_u32 ${first}, 0"),
        format!("s_cbranch_scc1 {SCOPE_SKIP_LABEL}"),
    ];
    let mut next = first + 1;
    for o in operands {
        match o {
            Operand::Imm(v) => lines.push(format!("s_ttracedata_imm 0x{v:x}")),
            Operand::M0(v) => {
                constraints.push(m0_value_constraint(*v));
                lines.push(m0_trace_asm(target, next));
                next += 1;
            }
        }
    }
    let text = format!("{}\n{SCOPE_SKIP_LABEL}:", lines.join("\n\t"));
    (text, constraints.join(","))
}

/// Whether an instruction may issue an LDS operation, the only memory the marker fence orders
/// (`amdgpu-synchronize-as` `local`): an LDS or flat access, or a call other than the pure
/// intrinsics around markers. Global, constant and scratch accesses do not count (the LLVM
/// 19+ fence, tagged LDS-only, does not wait for them either).
fn may_issue_lds(i: Value) -> bool {
    if let Some(f) = i.called_function() {
        return !is_lds_free_intrinsic(f.name_ref());
    }
    if i.is_call() {
        return true; // inline asm or an indirect call
    }
    use crate::target::addrspace::{FLAT, LOCAL};
    let pointer = if i.is_load() {
        i.operand(0)
    } else if i.is_store() {
        i.operand(1)
    } else if i.is_atomic_rmw() || i.is_cmpxchg() {
        i.operand(0)
    } else {
        return false;
    };
    matches!(pointer.pointer_address_space(), Some(FLAT | LOCAL) | None)
}

/// Intrinsics known to issue no LDS operation: the AMDGPU ones a marker or ordinary index and
/// pointer arithmetic uses, and the target-independent ones other than memory transfers and
/// masked or vector-predicated accesses. Others (`ds_*`, `ds_bpermute`, `s_sendmsg`, buffer
/// and global-to-LDS loads ...) and every non-intrinsic call count as issuing one.
fn is_lds_free_intrinsic(name: &str) -> bool {
    const AMDGPU: &[&str] = &[
        "readfirstlane",
        "readlane",
        "s.getreg",
        "workitem.id",
        "workgroup.id",
        "mbcnt",
        "dispatch.ptr",
        "dispatch.id",
        "implicitarg.ptr",
        "kernarg.segment.ptr",
        "queue.ptr",
        "sched.barrier",
        "ballot",
        "icmp",
        "fcmp",
        "ubfe",
        "sbfe",
        "fmed3",
        "rcp",
        "rsq",
        "sqrt",
        "ldexp",
        "frexp",
        "fract",
        "class",
        "mul.u24",
        "mul.i24",
        "mulhi",
        "wavefrontsize",
    ];
    if let Some(rest) = name.strip_prefix("llvm.amdgcn.") {
        return AMDGPU.iter().any(|p| rest.starts_with(p));
    }
    let Some(rest) = name.strip_prefix("llvm.") else {
        return false;
    };
    ![
        "mem", "masked", "vp.", "load", "store", "gather", "scatter", "prefetch",
    ]
    .iter()
    .any(|p| rest.starts_with(p) || rest.contains(&format!(".{p}")))
}

/// A fence of workgroup scope or wider that is not one of the plugin's: codegen waits for every
/// LDS operation there (`s_waitcnt lgkmcnt(0)`, `s_wait_dscnt 0` on gfx12), so none is in flight
/// after it.
fn drains_lds(i: Value) -> bool {
    i.is_fence() && i.is_workgroup_fence()
}

/// The LDS operations that may be in flight at a point.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pending {
    None,
    /// Exactly one, this LDS load, since the last point where none was: an instruction that
    /// reads its result waits for it, and with it for everything issued before it.
    Load(Value),
    /// Some, of which no single use proves completion.
    Some,
}

impl Pending {
    /// Where two paths meet.
    fn join(self, other: Pending) -> Pending {
        match (self, other) {
            (Pending::None, x) | (x, Pending::None) => x,
            (a, b) if a == b => a,
            _ => Pending::Some,
        }
    }
}

/// Whether `i` surely reads `load`'s register in machine code, so that codegen waits for the
/// load first: an arithmetic or comparison use, a stored value or a call argument. (Casts and
/// PHIs may be free, so they do not count.)
fn reads_for_certain(i: Value, load: Value) -> bool {
    use sys::LLVMOpcode::*;
    let reads = matches!(
        i.opcode(),
        LLVMAdd
            | LLVMFAdd
            | LLVMSub
            | LLVMFSub
            | LLVMMul
            | LLVMFMul
            | LLVMUDiv
            | LLVMSDiv
            | LLVMFDiv
            | LLVMURem
            | LLVMSRem
            | LLVMShl
            | LLVMLShr
            | LLVMAShr
            | LLVMAnd
            | LLVMOr
            | LLVMXor
            | LLVMICmp
            | LLVMFCmp
            | LLVMStore
            | LLVMCall
    );
    reads && (0..i.num_operands()).any(|k| i.operand(k) == load)
}

//! IR-building helpers: one marker sequence (reorder boundaries around `s_ttracedata`).
//!
//! LLVM 15-18 have no `llvm.amdgcn.s.ttracedata` intrinsics usable here, so markers are inline
//! asm: `s_ttracedata_imm <v>` for small values on gfx10+, otherwise the value goes through M0
//! (`{m0}` input: the compiler writes `s_mov_b32 m0, v`) followed by `s_nop 0` (the gfx9 SALU
//! M0-write hazard, which the compiler cannot see through asm) and `s_ttracedata`.

use sqtt_config::{MemBarrier, Settings};
use sqtt_markers::encoding::fits_imm;

use crate::compat;
use crate::llvm::{Builder, Module, Value};
use crate::target::Target;

/// Metadata kind that tags every marker the plugin creates.
pub const MARKER_MD: &str = "sqtt.marker";

/// Asm text of an M0-based trace record (used by markers.hpp as well).
pub const M0_TRACE_ASM: &str = "s_nop 0\n\ts_ttracedata";

/// One record of a marker sequence.
#[derive(Clone, Copy)]
pub enum Record {
    /// A marker header (or exit) the pass made: on gfx12 with clock packing it carries the
    /// shader clock in its high bits.
    Const(u32),
    /// A numeric enter/point value from markers.hpp: always kept in its legacy form, so that
    /// arbitrary user data is never read as a packed header.
    UserValue(u32),
    /// A runtime value (payload); made wave-uniform with readfirstlane.
    Dynamic(Value),
}

pub struct Emitter<'s> {
    pub module: Module,
    pub settings: &'s Settings,
    marker_md: u32,
}

impl<'s> Emitter<'s> {
    pub fn new(module: Module, settings: &'s Settings) -> Emitter<'s> {
        Emitter {
            module,
            settings,
            marker_md: module.md_kind(MARKER_MD),
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
            MemBarrier::Fence => {
                // The designed fence is `syncscope("workgroup") acq_rel` tagged with the MMRA
                // `amdgpu-synchronize-as: local`, so codegen only waits for LDS. LLVM < 19 has
                // no MMRA: a plain workgroup fence would wait for global memory and, on gfx10+ in
                // WGP mode, invalidate the L0 cache at every marker. The same effect without
                // that cost: an IR fence the optimisers respect (wavefront scope emits no code)
                // and an explicit LDS wait, an asm with side effects that the machine scheduler
                // cannot move across.
                self.tag(b.scoped_fence(compat::MARKER_FENCE_SCOPE));
                let ty = m.fn_type(m.void(), &[]);
                let asm = m.inline_asm(ty, target.lds_wait_asm(), "~{memory}");
                self.tag(b.call(ty, asm, &[]));
            }
        }
    }

    /// One `s_ttracedata` / `s_ttracedata_imm` record.
    pub fn record(&self, b: &Builder, target: &Target, rec: Record) -> Value {
        let m = self.module;
        match rec {
            Record::Const(v) if self.packing(target) => {
                let packed = self.packed_header(b, target, v);
                self.m0_record(b, packed)
            }
            Record::Const(v) | Record::UserValue(v)
                if fits_imm(v) && target.has_ttracedata_imm() && !self.packing(target) =>
            {
                let ty = m.fn_type(m.void(), &[]);
                let asm = m.inline_asm(ty, &format!("s_ttracedata_imm 0x{v:x}"), "");
                self.tag(b.call(ty, asm, &[]))
            }
            Record::Const(v) | Record::UserValue(v) => self.m0_record(b, m.const_i32(v)),
            Record::Dynamic(v) => {
                let i32t = m.i32();
                let v = if v.type_of() == i32t {
                    v
                } else {
                    b.zext_or_bitcast(v, i32t)
                };
                let rfl_ty = m.fn_type(i32t, &[i32t]);
                let rfl = m.declare(crate::compat::READFIRSTLANE_I32, rfl_ty);
                let uniform = b.call(rfl_ty, rfl, &[v]);
                self.m0_record(b, uniform)
            }
        }
    }

    /// The EXEC mask, low then high word, through M0 (`s_mov_b32 m0, exec_lo` ...). M0 is the
    /// asm's output so the compiler knows it is overwritten.
    pub fn exec_records(&self, b: &Builder) -> Value {
        let m = self.module;
        let ty = m.fn_type(m.i32(), &[]);
        let asm = m.inline_asm(
            ty,
            "s_mov_b32 m0, exec_lo\n\ts_nop 0\n\ts_ttracedata\n\ts_mov_b32 m0, exec_hi\n\ts_nop 0\n\ts_ttracedata",
            "={m0}",
        );
        self.tag(b.call(ty, asm, &[]))
    }

    /// A record of a value already uniform (a readlane result).
    pub fn m0_record_raw(&self, b: &Builder, value: Value) -> Value {
        self.m0_record(b, value)
    }

    fn m0_record(&self, b: &Builder, value: Value) -> Value {
        let m = self.module;
        let ty = m.fn_type(m.void(), &[m.i32()]);
        let asm = m.inline_asm(ty, M0_TRACE_ASM, "{m0}");
        self.tag(b.call(ty, asm, &[value]))
    }

    /// `(clock_window << (32 - bits)) | header`: the shader clock bits `[shift, shift + bits)`
    /// sampled at issue (docs/format.md, section 5).
    fn packed_header(&self, b: &Builder, target: &Target, header: u32) -> Value {
        let m = self.module;
        let bits = self.settings.shader_clock_bits;
        let shift = self.settings.shader_clock_shift;
        let i32t = m.i32();
        let window = if target.cpu == "gfx1250" {
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

    /// A whole marker: boundaries, then the records, then boundaries. `guarded` markers sit in a
    /// scope-check block, whose branch already orders them, so they get no sched_barrier.
    pub fn marker(&self, b: &Builder, target: &Target, records: &[Record], guarded: bool) {
        if !guarded {
            self.sched_barrier(b);
        }
        self.boundary(b, target);
        for r in records {
            self.record(b, target, *r);
        }
        self.boundary(b, target);
        if !guarded {
            self.sched_barrier(b);
        }
    }
}

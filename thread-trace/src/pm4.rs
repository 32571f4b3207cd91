//! PM4 type-3 packets: the few the thread-trace programs use, a builder, and a reader that names
//! each packet in one line.

use crate::gpu::Generation;
use crate::regs::{self, SH_START, UCONFIG_START};

/// Type-3 opcodes.
pub mod op {
    pub const ATOMIC_MEM: u32 = 0x1E;
    pub const PRED_EXEC: u32 = 0x23;
    pub const WAIT_REG_MEM: u32 = 0x3C;
    pub const COPY_DATA: u32 = 0x40;
    pub const EVENT_WRITE: u32 = 0x46;
    pub const ACQUIRE_MEM: u32 = 0x58;
    pub const SET_SH_REG: u32 = 0x76;
    pub const SET_UCONFIG_REG: u32 = 0x79;
}

/// EVENT_WRITE event types.
pub mod event {
    /// Wait for the compute work before it to finish (EVENT_INDEX 4).
    pub const CS_PARTIAL_FLUSH: u32 = 0x07;
    /// Have every engine write out what it holds of its trace.
    pub const THREAD_TRACE_FINISH: u32 = 0x37;
}

/// WAIT_REG_MEM compare functions.
pub mod func {
    pub const EQUAL: u32 = 3;
    pub const NOT_EQUAL: u32 = 4;
}

/// COPY_DATA control bits: source = performance-counter register path (how Mesa reads the trace
/// registers), destination = memory through L2, and the write confirmed before the CP goes on.
pub mod copy {
    pub const SRC_PERF: u32 = 4;
    pub const DST_TC_L2: u32 = 2 << 8;
    pub const WR_CONFIRM: u32 = 1 << 20;
}

/// The header of a type-3 packet of `op` with `body` dwords after it.
pub fn header(op: u32, body: usize) -> u32 {
    (3 << 30) | (((body as u32 - 1) & 0x3FFF) << 16) | ((op & 0xFF) << 8)
}

/// Words of PM4 packets under construction.
#[derive(Debug, Default, Clone)]
pub struct Builder {
    pub words: Vec<u32>,
}

impl Builder {
    pub fn packet(&mut self, op: u32, body: &[u32]) {
        self.words.push(header(op, body.len()));
        self.words.extend_from_slice(body);
    }

    /// SET_UCONFIG_REG of one register at dword address `reg`.
    pub fn set_uconfig(&mut self, reg: u32, value: u32) {
        self.packet(op::SET_UCONFIG_REG, &[reg - UCONFIG_START, value]);
    }

    /// SET_SH_REG of one register at dword address `reg`.
    pub fn set_sh(&mut self, reg: u32, value: u32) {
        self.packet(op::SET_SH_REG, &[reg - SH_START, value]);
    }

    pub fn event_write(&mut self, event_type: u32, index: u32) {
        self.packet(
            op::EVENT_WRITE,
            &[(event_type & 0x3F) | ((index & 0xF) << 8)],
        );
    }

    /// Waits until `(register & mask) <function> reference`, polling every 4 clocks.
    pub fn wait_reg(&mut self, function: u32, reg: u32, reference: u32, mask: u32) {
        // Memory space 0 (a register), operation 0 (wait), engine 0 (ME).
        self.packet(
            op::WAIT_REG_MEM,
            &[function & 7, reg, 0, reference, mask, 4],
        );
    }

    /// Copies the register at dword `reg` to memory at byte `address`, confirmed.
    pub fn copy_reg_to_mem(&mut self, reg: u32, address: u64) {
        let control = copy::SRC_PERF | copy::DST_TC_L2 | copy::WR_CONFIRM;
        self.packet(
            op::COPY_DATA,
            &[control, reg, 0, address as u32, (address >> 32) as u32],
        );
    }

    /// Makes every cache coherent with memory: instruction, scalar and vector caches invalidated
    /// and L2 written back and invalidated, over the whole address space.
    pub fn acquire_mem(&mut self, family: Generation) {
        match family {
            Generation::Gfx6 | Generation::Gfx7 | Generation::Gfx8 | Generation::Gfx9 => {
                // CP_COHER_CNTL: TC_WB_ACTION_ENA (18), TCL1_ACTION_ENA (22), TC_ACTION_ENA (23),
                // SH_KCACHE_ACTION_ENA (27), SH_ICACHE_ACTION_ENA (29).
                let coher = (1 << 18) | (1 << 22) | (1 << 23) | (1 << 27) | (1 << 29);
                self.packet(
                    op::ACQUIRE_MEM,
                    &[coher, 0xFFFF_FFFF, 0x00FF_FFFF, 0, 0, 0xA],
                );
            }
            Generation::Gfx10 | Generation::Gfx11 | Generation::Gfx12 => {
                // GCR_CNTL: GLI_INV (1), GLM_WB (4), GLM_INV (5), GLK_WB (6), GLK_INV (7),
                // GLV_INV (8), GL1_INV (9), GL2_INV (14), GL2_WB (15).
                let gcr = 1
                    | (1 << 4)
                    | (1 << 5)
                    | (1 << 6)
                    | (1 << 7)
                    | (1 << 8)
                    | (1 << 9)
                    | (1 << 14)
                    | (1 << 15);
                self.packet(
                    op::ACQUIRE_MEM,
                    &[0, 0xFFFF_FFFF, 0x01FF_FFFF, 0, 0, 0xA, gcr],
                );
            }
        }
    }

    /// Runs the packets `body` adds on the dies of `xcc_mask` only (PRED_EXEC).
    pub fn on_dies(&mut self, xcc_mask: u32, body: impl FnOnce(&mut Builder)) {
        let at = self.words.len();
        self.packet(op::PRED_EXEC, &[0]);
        let start = self.words.len();
        body(self);
        let n = (self.words.len() - start) as u32;
        self.words[at + 1] = ((xcc_mask & 0xFF) << 24) | (n & 0x3FFF);
    }
}

/// One packet read back from a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The word index of its header.
    pub at: usize,
    pub opcode: u32,
    pub body: Vec<u32>,
}

/// The packets of `words`, as far as they are whole type-3 packets; the index of the first word
/// that is not one is `Err`.
pub fn read(words: &[u32]) -> Result<Vec<Packet>, usize> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let h = words[i];
        if h >> 30 != 3 {
            return Err(i);
        }
        let n = (((h >> 16) & 0x3FFF) + 1) as usize;
        if i + 1 + n > words.len() {
            return Err(i);
        }
        out.push(Packet {
            at: i,
            opcode: (h >> 8) & 0xFF,
            body: words[i + 1..i + 1 + n].to_vec(),
        });
        i += 1 + n;
    }
    Ok(out)
}

fn reg_name(family: Generation, addr: u32) -> String {
    regs::name_at(family, addr).map_or_else(|| format!("reg {addr:#06x}"), str::to_string)
}

/// A one-line description of `p` as `family`'s programs use it.
pub fn describe(family: Generation, p: &Packet) -> String {
    let b = &p.body;
    let w = |i: usize| b.get(i).copied().unwrap_or(0);
    match p.opcode {
        op::SET_UCONFIG_REG | op::SET_SH_REG => {
            let (kind, start) = if p.opcode == op::SET_SH_REG {
                ("SET_SH_REG", SH_START)
            } else {
                ("SET_UCONFIG_REG", UCONFIG_START)
            };
            let addr = start + w(0);
            let mut s = format!("{kind} {} = {:#010x}", reg_name(family, addr), w(1));
            if addr == 0xC200 {
                let v = w(1);
                if v & regs::grbm::SE_BROADCAST != 0 {
                    s.push_str(" (broadcast)");
                } else {
                    let se = regs::grbm::se_index(family).get(v);
                    let sa = regs::grbm::SA_INDEX.get(v);
                    s.push_str(&format!(" (engine {se}, array {sa})"));
                }
            }
            s
        }
        op::PRED_EXEC => {
            format!(
                "PRED_EXEC dies {:#04x}, next {} dwords",
                w(0) >> 24,
                w(0) & 0x3FFF
            )
        }
        op::EVENT_WRITE => {
            let name = match w(0) & 0x3F {
                event::THREAD_TRACE_FINISH => "THREAD_TRACE_FINISH",
                event::CS_PARTIAL_FLUSH => "CS_PARTIAL_FLUSH",
                _ => "event",
            };
            format!(
                "EVENT_WRITE {name} ({:#x}, index {})",
                w(0) & 0x3F,
                (w(0) >> 8) & 0xF
            )
        }
        op::WAIT_REG_MEM => {
            let f = match w(0) & 7 {
                func::EQUAL => "==",
                func::NOT_EQUAL => "!=",
                _ => "?",
            };
            format!(
                "WAIT_REG_MEM until ({} & {:#010x}) {f} {:#x}, poll {}",
                reg_name(family, w(1)),
                w(4),
                w(3),
                w(5)
            )
        }
        op::COPY_DATA => {
            let dst = (u64::from(w(4)) << 32) | u64::from(w(3));
            let confirm = if w(0) & copy::WR_CONFIRM != 0 {
                ", write confirmed"
            } else {
                ""
            };
            format!(
                "COPY_DATA {} -> memory {dst:#x}{confirm}",
                reg_name(family, w(1))
            )
        }
        op::ACQUIRE_MEM => {
            let cntl = if family == Generation::Gfx9 {
                w(0)
            } else {
                w(6)
            };
            format!("ACQUIRE_MEM whole address space, caches {cntl:#x}")
        }
        op::ATOMIC_MEM => "ATOMIC_MEM".to_string(),
        other => format!("PKT3 opcode {other:#04x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_round_trips() {
        let mut b = Builder::default();
        b.set_uconfig(0xC200, regs::grbm::BROADCAST);
        b.on_dies(0b10, |b| b.set_sh(0x2E1E, 1));
        b.event_write(event::THREAD_TRACE_FINISH, 0);
        let ps = read(&b.words).unwrap();
        assert_eq!(ps.len(), 4);
        assert_eq!(ps[0].body, vec![0x200, 0xE000_0000]);
        assert_eq!(ps[1].opcode, op::PRED_EXEC);
        assert_eq!(ps[1].body[0], (2 << 24) | 3);
        assert_eq!(ps[2].body, vec![0x21E, 1]);
        assert!(describe(Generation::Gfx11, &ps[0]).contains("GRBM_GFX_INDEX"));
        assert_eq!(read(&[0x1234]), Err(0));
        assert_eq!(read(&[header(op::COPY_DATA, 5), 0]), Err(0));
    }
}

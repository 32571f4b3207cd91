//! Barrier markers (`SQTT_INSTRUMENT_BARRIERS=1`), placed as docs/settings.md's table says:
//!
//! | pattern                              | marker                      |
//! |--------------------------------------|-----------------------------|
//! | `s_barrier`                          | `barrier` before it         |
//! | `s_barrier_signal` alone             | `barrier_signal` after it   |
//! | `s_barrier_wait` alone               | `barrier_wait` before it    |
//! | signal then wait (same block)        | one `barrier` between them  |

use sqtt_markers::encoding;

use crate::emit::Record;
use crate::llvm::Value;
use crate::named::{adjacent, is_barrier_intrinsic, BarrierOp};
use crate::place::Placement;

/// The IDs of the three barrier markers.
#[derive(Clone, Copy)]
pub struct BarrierIds {
    pub signal: u32,
    pub wait: u32,
    pub barrier: u32,
}

pub fn placements(f: Value, ids: BarrierIds, out: &mut Vec<Placement>) {
    let point = |id| vec![Record::Const(encoding::point(id))];
    for bb in f.blocks() {
        let insts = bb.instructions();
        let mut i = 0;
        while i < insts.len() {
            let inst = insts[i];
            match is_barrier_intrinsic(inst) {
                Some(BarrierOp::Full) => out.push(Placement::new(f, inst, point(ids.barrier))),
                Some(BarrierOp::Signal) => {
                    let paired_wait = insts[i + 1..]
                        .iter()
                        .copied()
                        .find(|n| {
                            is_barrier_intrinsic(*n).is_some()
                                || !crate::named::is_transparent_pub(*n)
                        })
                        .filter(|n| {
                            is_barrier_intrinsic(*n) == Some(BarrierOp::Wait) && adjacent(inst, *n)
                        });
                    match paired_wait {
                        Some(wait) => {
                            out.push(Placement::new(f, wait, point(ids.barrier)));
                            i = insts.iter().position(|x| *x == wait).unwrap_or(i) + 1;
                            continue;
                        }
                        None => {
                            if let Some(next) = inst.next() {
                                out.push(Placement::new(f, next, point(ids.signal)));
                            }
                        }
                    }
                }
                Some(BarrierOp::Wait) => out.push(Placement::new(f, inst, point(ids.wait))),
                None => {}
            }
            i += 1;
        }
    }
}

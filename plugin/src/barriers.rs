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
use crate::named::{is_barrier_intrinsic, is_transparent, BarrierOp};
use crate::place::Placement;

/// The IDs of the three barrier markers.
#[derive(Clone, Copy)]
pub struct BarrierIds {
    pub signal: u32,
    pub wait: u32,
    pub barrier: u32,
}

/// An instruction of a block as the barrier table sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    Barrier(BarrierOp),
    /// What may stand between a signal and its wait ([`crate::named::is_transparent`]).
    Transparent,
    Other,
}

impl Seen {
    fn of(i: Value) -> Seen {
        match is_barrier_intrinsic(i) {
            Some(op) => Seen::Barrier(op),
            None if is_transparent(i) => Seen::Transparent,
            None => Seen::Other,
        }
    }
}

/// The marker a barrier pattern gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Barrier,
    Signal,
    Wait,
}

/// The barrier markers of a block, by the table above: each goes before the instruction at its
/// index. A signal pairs with the wait after it when only transparent instructions stand
/// between; a signal alone is marked before the instruction after it.
pub fn marks(insts: &[Seen]) -> Vec<(usize, Mark)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < insts.len() {
        match insts[i] {
            Seen::Barrier(BarrierOp::Full) => out.push((i, Mark::Barrier)),
            Seen::Barrier(BarrierOp::Signal) => {
                let next = (i + 1..insts.len()).find(|&n| insts[n] != Seen::Transparent);
                if let Some(wait) = next.filter(|&n| insts[n] == Seen::Barrier(BarrierOp::Wait)) {
                    out.push((wait, Mark::Barrier));
                    i = wait + 1;
                    continue;
                }
                if i + 1 < insts.len() {
                    out.push((i + 1, Mark::Signal));
                }
            }
            Seen::Barrier(BarrierOp::Wait) => out.push((i, Mark::Wait)),
            Seen::Transparent | Seen::Other => {}
        }
        i += 1;
    }
    out
}

pub fn placements(f: Value, ids: BarrierIds, out: &mut Vec<Placement>) {
    for bb in f.blocks() {
        let insts = bb.instructions();
        let seen: Vec<Seen> = insts.iter().map(|i| Seen::of(*i)).collect();
        for (at, mark) in marks(&seen) {
            let id = match mark {
                Mark::Barrier => ids.barrier,
                Mark::Signal => ids.signal,
                Mark::Wait => ids.wait,
            };
            out.push(Placement::new(
                f,
                insts[at],
                vec![Record::Const(encoding::point(id))],
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: Seen = Seen::Barrier(BarrierOp::Full);
    const SIGNAL: Seen = Seen::Barrier(BarrierOp::Signal);
    const WAIT: Seen = Seen::Barrier(BarrierOp::Wait);
    const T: Seen = Seen::Transparent;
    const O: Seen = Seen::Other;

    /// `s_barrier`: `barrier` before it; `s_barrier_wait` alone: `barrier_wait` before it.
    #[test]
    fn full_barrier_and_lone_wait_are_marked_before() {
        assert_eq!(marks(&[O, FULL, O]), [(1, Mark::Barrier)]);
        assert_eq!(marks(&[WAIT, O]), [(0, Mark::Wait)]);
    }

    /// A signal and the wait after it, with only transparent instructions between, are one
    /// `barrier` before the wait.
    #[test]
    fn signal_then_wait_is_one_barrier() {
        assert_eq!(marks(&[SIGNAL, T, T, WAIT, O]), [(3, Mark::Barrier)]);
        assert_eq!(marks(&[SIGNAL, WAIT, O]), [(1, Mark::Barrier)]);
    }

    /// Work between them separates them: `barrier_signal` after the signal, `barrier_wait`
    /// before the wait.
    #[test]
    fn signal_and_wait_apart_are_two_markers() {
        assert_eq!(
            marks(&[SIGNAL, T, O, WAIT]),
            [(1, Mark::Signal), (3, Mark::Wait)]
        );
    }

    /// A second signal before the wait: the first is alone, the second pairs.
    #[test]
    fn only_the_last_signal_pairs() {
        assert_eq!(
            marks(&[SIGNAL, SIGNAL, WAIT, O]),
            [(1, Mark::Signal), (2, Mark::Barrier)]
        );
    }
}

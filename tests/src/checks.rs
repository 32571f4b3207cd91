//! FileCheck-style checking for the fixture suites: every check of every arch runs and is
//! named, and the test fails at the end with the list of those that failed (as LLVM's lit
//! reports each failing CHECK line), rather than at the first.

use std::fmt::{Debug, Display};
use std::path::Path;

use crate::toolchain::{
    bad_marker_encodings, count_matching, dump_funcmap, marker_trace, objdump_instructions,
    stderr_tail,
};

/// Named checks collected over a test; [`Checks::finish`] fails with every failed one.
#[derive(Default)]
pub struct Checks {
    passed: usize,
    failed: Vec<String>,
}

impl Checks {
    pub fn new() -> Self {
        Self::default()
    }

    /// A check that holds when `ok`; `detail` says what was found when it does not.
    pub fn check(&mut self, name: impl Display, ok: bool, detail: impl FnOnce() -> String) {
        if ok {
            self.passed += 1;
        } else {
            self.failed.push(format!("{name}: {}", detail()));
        }
    }

    /// `got == want`.
    pub fn eq<T: PartialEq + Debug>(&mut self, name: impl Display, got: T, want: T) {
        let ok = got == want;
        self.check(name, ok, || format!("expected {want:?}, got {got:?}"));
    }

    /// A step that must succeed for the checks after it (a compile): records the failure and
    /// returns `None`.
    pub fn step<T>(&mut self, name: impl Display, r: Result<T, String>) -> Option<T> {
        match r {
            Ok(v) => {
                self.passed += 1;
                Some(v)
            }
            Err(e) => {
                self.failed.push(format!("{name}: {e}"));
                None
            }
        }
    }

    /// A command that must succeed for the checks after it: records its failure with the tail
    /// of its stderr and returns whether it ran.
    pub fn ran(&mut self, name: impl Display, o: &std::process::Output) -> bool {
        let r = if o.status.success() {
            Ok(())
        } else {
            Err(stderr_tail(o))
        };
        self.step(name, r).is_some()
    }

    /// The exact `.sqtt_funcmap` rows of a code object or relocatable object (NULs dropped).
    pub fn funcmap(&mut self, name: impl Display, object: &Path, want: &str) {
        let dir = object.parent().expect("object in a directory");
        match dump_funcmap(object, dir) {
            Some(bytes) => {
                let got: String = String::from_utf8_lossy(&bytes).replace('\0', "");
                self.eq(
                    format!("{name}: funcmap"),
                    got.trim_end_matches('\n'),
                    want.trim_end_matches('\n'),
                );
            }
            None => self.check(format!("{name}: funcmap"), false, || {
                format!(
                    "llvm-objcopy found no .sqtt_funcmap in {}",
                    object.display()
                )
            }),
        }
    }

    /// The disassembled code object holds exactly the markers `want` (in any order: the block
    /// layout of guarded markers varies), each with its generation's encoding.
    pub fn disassembled_markers(
        &mut self,
        name: impl Display,
        dis: &str,
        cpu: &str,
        want: &[&str],
    ) {
        let got = sorted(marker_trace(&objdump_instructions(dis)));
        let want = sorted(want.iter().map(|s| s.to_string()).collect());
        self.eq(
            format!("{name}: disassembled markers (any order)"),
            got,
            want,
        );
        let bad = bad_marker_encodings(dis, cpu);
        self.check(format!("{name}: marker encodings"), bad.is_empty(), || {
            format!("wrong encodings for {cpu}: {bad:?}")
        });
    }

    /// Fails the test with every failed check; also when nothing was checked at all.
    pub fn finish(self) {
        assert!(
            self.failed.is_empty(),
            "{} of {} checks failed:\n  {}",
            self.failed.len(),
            self.failed.len() + self.passed,
            self.failed.join("\n  ")
        );
        assert!(self.passed > 0, "no check ran");
        eprintln!("{} checks passed", self.passed);
    }
}

/// A list sorted, for comparisons in any order.
pub fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Whether `cpu` is a GFX9 target (gfx90a, gfx942, gfx950, ...): wave64, markers through M0
/// with the `s_nop` hazard, no `s_ttracedata_imm`.
pub fn is_gfx9(cpu: &str) -> bool {
    cpu.starts_with("gfx9")
}

/// Whether `cpu` is a GFX12 target (split barriers, separate LDS counter, clock packing).
pub fn is_gfx12(cpu: &str) -> bool {
    cpu.starts_with("gfx12")
}

/// How many scope checks read the target's hardware-ID field: `hwreg(HW_REG_HW_ID, 8, 4)` on gfx9,
/// the HW_ID1 field `hwreg(HW_REG_HW_ID1, 10, 4)` elsewhere (LLVM 22 prints gfx12's as
/// `HW_REG_WAVE_HW_ID1`).
pub fn scope_checks(insts: &[String], cpu: &str) -> usize {
    if is_gfx9(cpu) {
        count_matching(insts, "s_getreg_b32 s*, hwreg(HW_REG_HW_ID, 8, 4)")
    } else {
        count_matching(insts, "s_getreg_b32 s*, hwreg(HW_REG_HW_ID1, 10, 4)")
            + count_matching(insts, "s_getreg_b32 s*, hwreg(HW_REG_WAVE_HW_ID1, 10, 4)")
    }
}

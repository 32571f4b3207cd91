//! The IR fixtures of tests/fixtures/ir through the LLVM a lane provides, in the way of LLVM's
//! FileCheck tests: each `.ll` retargeted to every arch of the lane (`SQTT_TEST_ARCHES`, else the
//! host's), run through `opt -load-pass-plugin=<plugin> -passes=sqtt` and `llc
//! -verify-machineinstrs`, and the IR, the assembly, the object's `.sqtt_funcmap` and its
//! disassembly checked: exact marker sequences, scope checks with each generation's hwreg field,
//! the fence boundary's waits, barrier forms, fused records, address-trace payload counts and
//! gfx12 clock packing. Every check of every arch runs; a test fails with the list of those
//! that failed.

use std::path::PathBuf;
use std::process::Command;

use sqtt_e2e::checks::{is_gfx12, is_gfx9, scope_checks, sorted, Checks};
use sqtt_e2e::kernels::outer_mid_val_trace;
use sqtt_e2e::toolchain::*;

/// Arches of the host's LLVM 15 when no lane names its own.
const HOST_ARCHES: &[&str] = &["gfx90a", "gfx940", "gfx1030", "gfx1100"];

fn arches() -> Vec<String> {
    lane_arches(HOST_ARCHES)
}

fn fixture(name: &str) -> String {
    let path = repo_root().join("tests/fixtures/ir").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture with every `"target-cpu"="..."` attribute naming `cpu`.
fn retarget(ir: &str, cpu: &str) -> String {
    const KEY: &str = "\"target-cpu\"=\"";
    let mut out = String::new();
    let mut rest = ir;
    while let Some(at) = rest.find(KEY) {
        out.push_str(&rest[..at + KEY.len()]);
        out.push_str(cpu);
        rest = &rest[at + KEY.len()..];
        rest = &rest[rest.find('"').expect("closing quote of target-cpu")..];
    }
    out + rest
}

/// One fixture through opt with the plugin and llc, for one arch.
struct Build {
    _dir: tempfile::TempDir,
    /// The IR opt printed.
    ir: String,
    /// llc's assembly listing.
    asm: String,
    /// Its instructions (see [`all_instructions`]).
    insts: Vec<String>,
    /// llc's object (a relocatable ELF with `.sqtt_funcmap`).
    obj: PathBuf,
}

fn tail(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

/// `opt -passes=sqtt` under `env` (and no other `SQTT_*` variable), then `llc` to assembly (with
/// the machine verifier) and to an object.
fn build(name: &str, cpu: &str, env: &[(&str, &str)]) -> Result<Build, String> {
    build_with(name, cpu, "sqtt", env)
}

/// [`build`] through the opt pipeline `passes` (`sqtt` alone, or a whole `default<O2>` whose
/// extension points run the plugin's phases).
fn build_with(name: &str, cpu: &str, passes: &str, env: &[(&str, &str)]) -> Result<Build, String> {
    let out = opt_passes(&retarget(&fixture(name), cpu), passes, env);
    if !out.status.success() {
        return Err(format!(
            "opt -passes={passes} failed:\n{}",
            tail(&out.stderr)
        ));
    }
    let ir = String::from_utf8_lossy(&out.stdout).into_owned();
    let dir = workdir();
    let ll = dir.path().join("out.ll");
    std::fs::write(&ll, &ir).unwrap();
    let s = dir.path().join("out.s");
    let obj = dir.path().join("out.o");
    let llc = |args: &[&str], out: &PathBuf| {
        run(Command::new(llvm_tool("llc"))
            .arg("-mtriple=amdgcn-amd-amdhsa")
            .arg(format!("-mcpu={cpu}"))
            .args(args)
            .arg(&ll)
            .arg("-o")
            .arg(out))
    };
    for (args, file) in [
        (&["-verify-machineinstrs"][..], &s),
        (&["-filetype=obj"][..], &obj),
    ] {
        let o = llc(args, file);
        if !o.status.success() {
            return Err(format!("llc {args:?} failed:\n{}", tail(&o.stderr)));
        }
    }
    let asm = std::fs::read_to_string(&s).unwrap();
    Ok(Build {
        _dir: dir,
        ir,
        insts: all_instructions(&asm),
        asm,
        obj,
    })
}

const NAMED_FUNCMAP: &str = "K:ir_kernel
U:1:outer
P:2:mid
P:3:val
R:3:extra_payload_count=1";

const BARRIER_FUNCMAP: &str = "K:barrier_kernel
U:1:phase1
U:2:phase2
P:3:sync";

/// Lines of the listing with a cache invalidation (`global_inv`, `buffer_wbinvl1`, `buffer_gl0_inv`,
/// ...): a marker's fence must never add one.
fn cache_invalidations(asm: &str) -> Vec<&str> {
    asm.lines()
        .filter(|l| {
            [
                "global_inv",
                "buffer_inv",
                "global_wbinvl1",
                "buffer_wbinvl1",
            ]
            .iter()
            .any(|p| l.contains(p))
                || l.contains("buffer_gl0_inv")
                || l.contains("buffer_gl1_inv")
        })
        .collect()
}

/// Named and numeric markers, no scope filter: the exact marker sequence, the fence boundary of
/// the LLVM under test, no cache invalidation, the funcmap, the disassembled markers.
#[test]
fn named_markers_unfiltered() {
    let mut c = Checks::new();
    for cpu in arches() {
        let n = format!("{cpu} named_markers unfiltered");
        let want = outer_mid_val_trace(&cpu, false);
        let Some(b) = c.step(
            &n,
            build("named_markers.ll", &cpu, &[("SQTT_SCOPE_CU", "-1")]),
        ) else {
            continue;
        };
        c.eq(
            format!("{n}: markers"),
            marker_trace(&b.insts),
            want.iter().map(|s| s.to_string()).collect(),
        );
        c.eq(
            format!("{n}: no scope check"),
            count_matching(&b.insts, "s_getreg_b32*"),
            0,
        );
        if llvm_major() >= 19 {
            // LLVM 19+: the spec's fence, tagged local-only (LLVM 19-21 spell the key amdgpu-as).
            c.check(
                format!("{n}: MMRA-tagged workgroup fence"),
                b.ir.contains("fence syncscope(\"workgroup\") acq_rel, !mmra"),
                || "no `fence syncscope(\"workgroup\") acq_rel, !mmra` in the IR".into(),
            );
        } else if is_gfx12(&cpu) {
            // The fixture has no LDS operation, so the LLVM < 19 fence keeps no LDS wait (gfx12
            // counts LDS apart from scalar loads; marker_cost.rs covers a marker after LDS).
            c.eq(
                format!("{n}: no LDS wait with no LDS operation in flight"),
                count_matching(&b.insts, "s_wait_dscnt*"),
                0,
            );
        } else {
            c.check(
                format!("{n}: LDS wait of the fence boundary"),
                b.insts.iter().any(|i| i.contains("s_waitcnt lgkmcnt(0)")),
                || "no s_waitcnt lgkmcnt(0)".into(),
            );
        }
        c.eq(
            format!("{n}: no cache invalidation"),
            cache_invalidations(&b.asm),
            vec![],
        );
        c.funcmap(&n, &b.obj, NAMED_FUNCMAP);
        c.disassembled_markers(&n, &disassemble(&b.obj, &cpu), &cpu, &want);
    }
    c.finish();
}

/// Default settings (CU filter 0x3): one scope check with the target's hwreg field, every
/// marker (in any order: the guarded blocks may be laid out differently), the funcmap.
#[test]
fn named_markers_filtered() {
    let mut c = Checks::new();
    for cpu in arches() {
        let n = format!("{cpu} named_markers filtered");
        let Some(b) = c.step(&n, build("named_markers.ll", &cpu, &[])) else {
            continue;
        };
        c.eq(
            format!("{n}: one scope check"),
            scope_checks(&b.insts, &cpu),
            1,
        );
        let want = outer_mid_val_trace(&cpu, false)
            .iter()
            .map(|s| s.to_string())
            .collect();
        c.eq(
            format!("{n}: markers (any order)"),
            sorted(marker_trace(&b.insts)),
            sorted(want),
        );
        c.funcmap(&n, &b.obj, NAMED_FUNCMAP);
    }
    c.finish();
}

/// What may sit between the pinned `sched_barrier` (the last one before the barrier: each
/// marker has one on either side) and the barrier in the listing: scalar ALU work and the
/// barrier's own counter waits. Returns `Ok` when the barrier instruction `bar` follows the last
/// sched_barrier with only those in between.
fn between_sched_barrier_and(asm: &str, bar: &str) -> Result<(), String> {
    const ALLOWED: [&str; 8] = [
        "s_and",
        "s_or",
        "s_xor",
        "s_andn2",
        "s_mov",
        "s_cmp",
        "s_cselect",
        "s_wait",
    ];
    let mut on = false;
    let mut bad: Option<String> = None;
    for line in asm.lines() {
        let t = line.trim();
        if t.starts_with("; sched_barrier mask(0x00000000)") {
            on = true;
            bad = None;
            continue;
        }
        if !on || t.is_empty() || t.starts_with(';') {
            continue;
        }
        let code = t.split(';').next().unwrap().trim();
        if code == bar {
            return match bad {
                None => Ok(()),
                Some(b) => Err(format!("`{b}` between the sched_barrier and `{bar}`")),
            };
        }
        let op = code.split_whitespace().next().unwrap_or("");
        if bad.is_none() && !ALLOWED.iter().any(|p| op.starts_with(p)) {
            bad = Some(code.to_string());
        }
    }
    Err(if on {
        format!("no `{bar}` after the sched_barrier")
    } else {
        "no sched_barrier".into()
    })
}

/// A marker right before a workgroup barrier (`s_barrier`; split into signal/wait on gfx12) and a
/// fused exit+enter: one fused record, the pinned sched_barrier right before the barrier in the
/// IR and in the ISA, the funcmap.
#[test]
fn barrier_sync() {
    let mut c = Checks::new();
    for cpu in arches() {
        let n = format!("{cpu} barrier_sync");
        let Some(b) = c.step(&n, build("barrier_sync.ll", &cpu, &[])) else {
            continue;
        };
        // exit phase1 (1) fused with enter phase2 (2): 2<<2 | 3 = 11.
        let fused = if is_gfx9(&cpu) {
            "m0:11+nop"
        } else {
            "imm:0xb"
        };
        let bar = if is_gfx12(&cpu) {
            "s_barrier_signal -1"
        } else {
            "s_barrier"
        };
        let trace = marker_trace(&b.insts);
        c.eq(
            format!("{n}: one fused exit+enter record ({fused})"),
            trace.iter().filter(|r| *r == fused).count(),
            1,
        );
        let lines: Vec<&str> = b.ir.lines().collect();
        c.check(
            format!("{n}: IR sched_barrier pinned right before the barrier"),
            lines.windows(2).any(|w| {
                w[0].contains("call void @llvm.amdgcn.sched.barrier(i32 0)")
                    && w[1].contains("call void @llvm.amdgcn.s.barrier()")
            }),
            || "no sched.barrier call directly followed by s.barrier".into(),
        );
        let between = between_sched_barrier_and(&b.asm, bar);
        c.check(
            format!("{n}: ISA sched_barrier then (scalar ALU and counter waits only) {bar}"),
            between.is_ok(),
            || between.unwrap_err(),
        );
        if is_gfx12(&cpu) {
            c.eq(
                format!("{n}: gfx12 barrier wait"),
                count_matching(&b.insts, "s_barrier_wait -1"),
                1,
            );
        }
        c.funcmap(&n, &b.obj, BARRIER_FUNCMAP);
    }
    c.finish();
}

/// A payload marker under gfx12 clock packing is a compile error naming the marker, not a crash.
#[test]
fn payload_marker_under_clock_packing_is_an_error() {
    let gfx12: Vec<String> = arches().into_iter().filter(|a| is_gfx12(a)).collect();
    if gfx12.is_empty() {
        eprintln!("no gfx12 arch in this lane: nothing to check");
        return;
    }
    let mut c = Checks::new();
    for cpu in gfx12 {
        let out = opt_sqtt(
            &retarget(&fixture("named_markers.ll"), &cpu),
            &[("SQTT_SHADER_CLOCK_BITS", "8")],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        c.check(
            format!("{cpu} data marker with SQTT_SHADER_CLOCK_BITS=8: rejected"),
            !out.status.success() && err.contains("carries a payload record"),
            || {
                format!(
                    "expected a failure with `carries a payload record`, got {} and:\n{err}",
                    out.status
                )
            },
        );
    }
    c.finish();
}

/// Address tracing (`SQTT_TRACE_ADDRESSES=memory,lds`): the readlane loop, no cache invalidation,
/// and one header per traced operation with the payload counts of docs/format.md (wave64: 130
/// global, 66 LDS; wave32: 66 / 34).
#[test]
fn address_trace() {
    let mut c = Checks::new();
    for cpu in arches() {
        let n = format!("{cpu} address_trace");
        let env = [
            ("SQTT_SCOPE_CU", "-1"),
            ("SQTT_TRACE_ADDRESSES", "memory,lds"),
        ];
        let Some(b) = c.step(&n, build("address_trace.ll", &cpu, &env)) else {
            continue;
        };
        let (wave, global, lds) = if is_gfx9(&cpu) {
            (64, 130, 66)
        } else {
            (32, 66, 34)
        };
        c.check(
            format!("{n}: readlane loop"),
            count_matching(&b.insts, "v_readlane_b32 *") > 0,
            || "no v_readlane_b32".into(),
        );
        c.eq(
            format!("{n}: no cache invalidation"),
            cache_invalidations(&b.asm),
            vec![],
        );
        c.funcmap(
            &n,
            &b.obj,
            &format!(
                "K:addr_kernel\nW:{wave}\n\
             P:1:addr_trace_load\nR:1:extra_payload_count={global}\n\
             P:2:addr_trace_lds_store\nR:2:extra_payload_count={lds}\n\
             P:3:addr_trace_lds_load\nR:3:extra_payload_count={lds}\n\
             P:4:addr_trace_store\nR:4:extra_payload_count={global}\n\
             P:5:addr_trace_atomic\nR:5:extra_payload_count={global}"
            ),
        );
    }
    c.finish();
}

/// gfx12 shader-clock packing (`SQTT_SHADER_CLOCK_BITS=8`, shift 4): every header of
/// barrier_sync.ll reads `hwreg(HW_REG_SHADER_CYCLES_LO, 4, 8)` (gfx1250: the whole counter with
/// `s_get_shader_cycles_u64`), no `s_ttracedata_imm`, the funcmap starts with the `M:` row;
/// elsewhere packing is off (no clock read, no `M:` row).
#[test]
fn clock_packing() {
    let mut c = Checks::new();
    for cpu in arches() {
        let n = format!("{cpu} clock packing");
        let env = [("SQTT_SCOPE_CU", "-1"), ("SQTT_SHADER_CLOCK_BITS", "8")];
        let Some(b) = c.step(&n, build("barrier_sync.ll", &cpu, &env)) else {
            continue;
        };
        let read = match cpu.as_str() {
            "gfx1200" | "gfx1201" => Some("s_getreg_b32 s*, hwreg(HW_REG_SHADER_CYCLES_LO, 4, 8)"),
            "gfx1250" => Some("s_get_shader_cycles_u64 s[*]"),
            _ => None,
        };
        match read {
            Some(read) => {
                c.eq(
                    format!("{n}: clock read in every header ({read})"),
                    count_matching(&b.insts, read),
                    4,
                );
                c.eq(
                    format!("{n}: no s_ttracedata_imm"),
                    count_matching(&b.insts, "s_ttracedata_imm*"),
                    0,
                );
                c.funcmap(
                    &n,
                    &b.obj,
                    &format!("M:shader_clock_bits=8;shader_clock_shift=4\n{BARRIER_FUNCMAP}"),
                );
            }
            None => {
                c.check(
                    format!("{n}: off on {cpu}"),
                    !b.asm.to_lowercase().contains("shader_cycles"),
                    || "the listing reads SHADER_CYCLES".into(),
                );
                c.funcmap(&n, &b.obj, BARRIER_FUNCMAP);
            }
        }
    }
    c.finish();
}

/// Markers on both sides of a branch through the whole `default<O2>` pipeline: the early phase,
/// the inliner, SimplifyCFG (which hoists identical leading calls of two sides into their
/// predecessor, sinks identical trailing ones into the successor, and drops the metadata it does
/// not know of the merged call), then the late phase. Every named point and both inlined helpers'
/// enter and exit markers are written, once each; the funcmap lists them. With one asm text for
/// every placeholder (identity in metadata only), both kernels lost all their markers.
#[test]
fn markers_on_both_sides_of_a_branch_survive() {
    const FUNCMAP: &str = "F:1:helper_a
F:2:helper_b
K:branch_kernel
K:helper_kernel
P:3:then_first
P:4:then_last
P:5:else_first
P:6:else_last";
    let env = [
        ("SQTT_INSTRUMENT_FUNCTIONS", "1"),
        ("SQTT_SCOPE_CU", "-1"),
        ("SQTT_MEM_BARRIER", "none"),
    ];
    let mut c = Checks::new();
    for cpu in arches() {
        let n = format!("{cpu} branch_markers");
        let Some(b) = c.step(
            &n,
            build_with("branch_markers.ll", &cpu, "default<O2>", &env),
        ) else {
            continue;
        };
        c.check(
            format!("{n}: no placeholder left"),
            !b.ir.contains("sqtt marker"),
            || "an early placeholder reached the output".into(),
        );
        // Points (id << 2) once each; helpers: enter ((id << 2) | 2) and an exit (1) on each side.
        for (kernel, want) in [
            ("branch_kernel", vec!["12", "16", "20", "24"]),
            ("helper_kernel", vec!["1", "1", "10", "6"]),
        ] {
            let got = trace_record_values(&function_instructions(&b.asm, kernel));
            let want = want.iter().map(|v| v.to_string()).collect();
            c.eq(format!("{n}: {kernel} records"), sorted(got), sorted(want));
        }
        c.funcmap(&n, &b.obj, FUNCMAP);
    }
    c.finish();
}

/// The plugin registers at the hooks clang's pipelines use: `default<O0>` runs `sqtt`,
/// `default<O2>` runs `sqtt-early`, `sqtt-prune` (after instruction combining) and `sqtt`. Checked with the plugin's own registration
/// (LLVM 19+): through the llvm-plugin crate (LLVM 15-18) every pass prints as
/// `{anonymous}::Pass<ModuleIR>`, so the pipeline text cannot name them (the hipcc suites show
/// those hooks at work).
#[test]
fn pipeline_hooks() {
    if llvm_major() < 19 {
        eprintln!(
            "LLVM {}: the pipeline does not print the plugin's pass names",
            llvm_major()
        );
        return;
    }
    let dir = workdir();
    let ll = dir.path().join("in.ll");
    std::fs::write(&ll, fixture("named_markers.ll")).unwrap();
    let mut c = Checks::new();
    for (level, want) in [
        ("O0", vec!["sqtt"]),
        ("O2", vec!["sqtt-early", "sqtt-prune", "sqtt"]),
    ] {
        // opt 19 exits 1 after printing (it re-parses its own dump): only the text counts.
        let out = run(Command::new(llvm_tool("opt"))
            .arg(format!("-load-pass-plugin={}", plugin_path().display()))
            .arg(format!("-passes=default<{level}>"))
            .args(["-print-pipeline-passes", "-disable-output"])
            .arg(&ll));
        let text = String::from_utf8_lossy(&out.stdout);
        // The plugin's passes in order of first appearance (`sqtt-prune` runs after every
        // instruction combiner, inside nested function pipelines).
        let mut got: Vec<&str> = Vec::new();
        for p in text.trim().split([',', '(', ')']) {
            if ["sqtt", "sqtt-early", "sqtt-prune"].contains(&p) && !got.contains(&p) {
                got.push(p);
            }
        }
        c.eq(format!("default<{level}> pipeline"), got, want);
    }
    c.finish();
}

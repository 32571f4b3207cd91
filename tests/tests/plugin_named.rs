//! The plugin on named and numeric markers, loaded by hand into the real hipcc
//! (`-fpass-plugin`), asserting on the ISA it produces and the funcmap it records.

use sqtt_e2e::kernels::{MY_KERNEL as KERNEL, MY_KERNEL_FUNCMAP as KERNEL_FUNCMAP};
use sqtt_e2e::toolchain::*;

/// No scope check, no reorder boundary: the bare marker sequences.
const BARE: &[(&str, &str)] = &[("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")];

fn kernel_insts(arch: &str, env: &[(&str, &str)], extra: &[&str]) -> Vec<String> {
    let dir = workdir();
    let asm = device_asm(dir.path(), KERNEL, arch, env, extra);
    function_instructions(&asm, "_Z9my_kernelPfi")
}

fn m0_marker(value: &str) -> [String; 3] {
    [
        format!("s_mov_b32 m0, {value}"),
        "s_nop 0".into(),
        "s_ttracedata".into(),
    ]
}

fn assert_seq(insts: &[String], seq: &[&str]) {
    assert!(
        contains_sequence(insts, seq),
        "sequence {seq:?} not found in:\n{}",
        insts.join("\n")
    );
}

#[test]
fn gfx90a_markers_go_through_m0_with_the_hazard_nop() {
    let insts = kernel_insts("gfx90a", BARE, &[]);
    for v in ["6", "11", "1", "16"] {
        let seq = m0_marker(v);
        let seq: Vec<&str> = seq.iter().map(String::as_str).collect();
        let framed = [&["sched_barrier"][..], &seq, &["sched_barrier"]].concat();
        assert_seq(&insts, &framed);
    }
    // data marker: header then the wave-uniform payload, both through M0.
    assert_seq(
        &insts,
        &[
            "s_mov_b32 m0, 12",
            "s_nop 0",
            "s_ttracedata",
            "v_readfirstlane_b32 s*, v*",
            "s_mov_b32 m0, s*",
            "s_nop 0",
            "s_ttracedata",
        ],
    );
    assert_eq!(count_matching(&insts, "s_ttracedata"), 6);
    assert_eq!(count_matching(&insts, "s_ttracedata_imm*"), 0);
}

#[test]
fn rdna_small_ids_use_ttracedata_imm() {
    for arch in ["gfx1030", "gfx1100"] {
        let insts = kernel_insts(arch, BARE, &[]);
        for seq in [
            &["sched_barrier", "s_ttracedata_imm 0x6", "sched_barrier"][..],
            &["sched_barrier", "s_ttracedata_imm 0xb", "sched_barrier"],
            &["sched_barrier", "s_ttracedata_imm 0x1", "sched_barrier"],
            &["sched_barrier", "s_ttracedata_imm 0x10", "sched_barrier"],
        ] {
            assert_seq(&insts, seq);
        }
        // The data marker: the header, then the payload made uniform in an SGPR (the scheduler
        // may hoist the readfirstlane above the header) and written through M0 as one unit.
        let payload = ["s_mov_b32 m0, s*", "s_nop 0", "s_ttracedata"];
        assert!(
            contains_sequence(&insts, &[&["s_ttracedata_imm 0xc"][..], &payload].concat())
                || contains_sequence(
                    &insts,
                    &[
                        &["s_ttracedata_imm 0xc", "v_readfirstlane_b32 s*, v*"][..],
                        &payload
                    ]
                    .concat()
                ),
            "{arch}: data marker not found in:\n{}",
            insts.join("\n")
        );
        assert_eq!(
            count_matching(&insts, "v_readfirstlane_b32 s*, v*"),
            1,
            "{arch}"
        );
        assert_eq!(count_matching(&insts, "s_ttracedata_imm*"), 5, "{arch}");
        assert_eq!(count_matching(&insts, "s_ttracedata"), 1, "{arch}");
    }
}

#[test]
fn funcmap_rows_are_exact_at_every_optimisation_level() {
    for opt in ["-O0", "-O1", "-O2", "-O3"] {
        let dir = workdir();
        let asm = device_asm(dir.path(), KERNEL, "gfx90a", BARE, &[opt]);
        assert_eq!(
            funcmap_from_asm(&asm).as_deref(),
            Some(KERNEL_FUNCMAP),
            "{opt}"
        );
        let insts = function_instructions(&asm, "_Z9my_kernelPfi");
        assert_eq!(
            count_matching(&insts, "s_ttracedata"),
            6,
            "{opt}:\n{}",
            insts.join("\n")
        );
    }
}

#[test]
fn built_binary_carries_funcmap_and_markers_for_every_arch() {
    let dir = workdir();
    let src = dir.path().join("k.hip");
    std::fs::write(&src, format!("{KERNEL}\nint main() {{ return 0; }}\n")).unwrap();
    let exe = dir.path().join("k");
    let mut c = hipcc_with_plugin("gfx90a");
    c.args(arch_args("gfx1030"))
        .args(arch_args("gfx1100"))
        .envs(BARE.iter().copied())
        .arg(&src)
        .arg("-o")
        .arg(&exe);
    run_ok(&mut c);
    for arch in ["gfx90a", "gfx1030", "gfx1100"] {
        let co = extract_code_object(&exe, arch, dir.path());
        let bytes = dump_funcmap(&co, dir.path()).expect("code object has .sqtt_funcmap");
        assert_eq!(bytes, format!("{KERNEL_FUNCMAP}\0").into_bytes(), "{arch}");
        let insts = objdump_instructions(&disassemble(&co, arch));
        if arch == "gfx90a" {
            assert_seq(&insts, &["s_mov_b32 m0, 6", "s_nop 0", "s_ttracedata"]);
        } else {
            assert!(
                insts.iter().any(|i| i == "s_ttracedata_imm 0x6"),
                "{arch}: {insts:?}"
            );
        }
    }
}

#[test]
fn compile_only_and_debug_info() {
    let dir = workdir();
    let src = dir.path().join("k.hip");
    std::fs::write(&src, KERNEL).unwrap();
    let obj = dir.path().join("k.o");
    let mut c = hipcc_with_plugin("gfx90a");
    c.args(arch_args("gfx1030"))
        .envs(BARE.iter().copied())
        .args(["-c", "-g"])
        .arg(&src)
        .arg("-o")
        .arg(&obj);
    run_ok(&mut c);
    for arch in ["gfx90a", "gfx1030"] {
        let co = extract_code_object(&obj, arch, dir.path());
        let text = String::from_utf8(dump_funcmap(&co, dir.path()).unwrap()).unwrap();
        let line = KERNEL
            .lines()
            .position(|l| l.contains("__global__"))
            .unwrap()
            + 1;
        let want = KERNEL_FUNCMAP.replace(
            "K:_Z9my_kernelPfi",
            &format!("K:_Z9my_kernelPfi@k.hip:{line}"),
        );
        assert_eq!(text, format!("{want}\0"), "{arch}");
    }
}

#[test]
fn ids_above_63_fall_back_to_m0_on_rdna() {
    let mut src = String::from(
        "#include <hip/hip_runtime.h>\n#include \"markers.hpp\"\n__global__ void k(int *p) {\n",
    );
    for i in 1..=65 {
        src.push_str(&format!("  sqtt_marker_enter(\"s{i}\"); p[{i}] = {i}; sqtt_marker_exit(\"s{i}\");\n  p[0] = {i};\n"));
    }
    src.push_str("}\n");
    let dir = workdir();
    let asm = device_asm(dir.path(), &src, "gfx1030", BARE, &[]);
    let insts = function_instructions(&asm, "_Z1kPi");
    // ID 63: (63 << 2) | 2 = 0xfe still fits; ID 64: 0x102 does not.
    assert_seq(&insts, &["s_ttracedata_imm 0xfe"]);
    assert_seq(&insts, &["s_mov_b32 m0, 0x102", "s_nop 0", "s_ttracedata"]);
    assert_eq!(count_matching(&insts, "s_ttracedata_imm 0x1"), 65);
}

#[test]
fn mem_barrier_modes() {
    // fence (default): before LLVM 19 a wavefront fence and an explicit LDS wait only where an
    // LDS operation may be in flight, which in this kernel is nowhere (marker_cost.rs has one);
    // from 19 the MMRA-tagged workgroup fence, whose waits the memory legalizer decides
    // (docs/format.md). Never a cache invalidation.
    for arch in ["gfx90a", "gfx1030"] {
        let insts = kernel_insts(arch, &[("SQTT_SCOPE_CU", "-1")], &[]);
        let marker: &[&str] = if arch == "gfx90a" {
            &["s_mov_b32 m0, 16", "s_nop 0", "s_ttracedata"]
        } else {
            &["s_ttracedata_imm 0x10"]
        };
        assert_seq(&insts, marker);
        if llvm_major() < 19 {
            let at = (0..insts.len())
                .find(|i| {
                    contains_sequence(&insts[*i..*i + marker.len().min(insts.len() - i)], marker)
                })
                .unwrap();
            let after = insts[at + marker.len()..]
                .iter()
                .find(|i| *i != "sched_barrier")
                .map(String::as_str);
            assert_ne!(
                after,
                Some("s_waitcnt lgkmcnt(0)"),
                "{arch}:\n{}",
                insts.join("\n")
            );
        }
        for inv in [
            "buffer_gl0_inv",
            "buffer_gl1_inv",
            "buffer_wbinvl1*",
            "global_inv",
        ] {
            assert_eq!(count_matching(&insts, inv), 0, "{arch} {inv}");
        }
    }
    for (mode, synonyms) in [
        ("fence", &["2", "on", "hw"][..]),
        ("asm", &["1", "compiler", "clobber"]),
        ("none", &["0", "off"]),
    ] {
        let dir = workdir();
        let ir = device_asm(
            dir.path(),
            KERNEL,
            "gfx1030",
            &[("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", mode)],
            &["-emit-llvm"],
        );
        // The marker fence: wavefront scope before LLVM 19, workgroup with the MMRA tag from 19.
        let fence = if llvm_major() >= 19 {
            "fence syncscope(\"workgroup\") acq_rel, !mmra"
        } else {
            "fence syncscope(\"wavefront\") acq_rel"
        };
        let fences = ir.matches(fence).count();
        let clobbers = ir.matches("asm sideeffect \"\", \"~{memory}\"").count();
        match mode {
            // Before LLVM 19 the waits this kernel cannot need (it has no LDS) are left out:
            // the wavefront fence alone keeps the compiler ordering.
            "fence" => assert_eq!((fences, clobbers), (10, 0), "{mode}"),
            "asm" => assert_eq!((fences, clobbers), (0, 10), "{mode}"),
            _ => assert_eq!((fences, clobbers), (0, 0), "{mode}"),
        }
        for syn in synonyms {
            let dir = workdir();
            let other = device_asm(
                dir.path(),
                KERNEL,
                "gfx1030",
                &[("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", syn)],
                &["-emit-llvm"],
            );
            assert_eq!(
                without_paths(&other),
                without_paths(&ir),
                "SQTT_MEM_BARRIER={syn} differs from {mode}"
            );
        }
    }
}

#[test]
fn scope_check_is_computed_once_from_the_hw_id_registers() {
    // Default SQTT_SCOPE_CU=0x3: filtering on.
    let insts = kernel_insts("gfx90a", &[("SQTT_MEM_BARRIER", "none")], &[]);
    assert_eq!(
        count_matching(&insts, "s_getreg_b32 s*, hwreg(HW_REG_HW_ID, 8, 4)"),
        1,
        "{insts:?}"
    );
    assert_eq!(count_matching(&insts, "s_ttracedata"), 6);
    // The check is in each run's asm (`s_cmp_eq_u32` / `s_cbranch_scc1` past its records), and
    // each run has the two pins of one unguarded marker: no more than unguarded markers have.
    let checks = count_matching(&insts, "s_cbranch_scc1*");
    assert!((1..=6).contains(&checks), "{checks} checks: {insts:?}");
    let unguarded = kernel_insts(
        "gfx90a",
        &[("SQTT_MEM_BARRIER", "none"), ("SQTT_SCOPE_CU", "-1")],
        &[],
    );
    assert_eq!(count_matching(&unguarded, "s_getreg_b32*"), 0);
    assert_eq!(count_matching(&unguarded, "s_cbranch_scc1*"), 0);
    assert_eq!(
        count_matching(&insts, "sched_barrier"),
        2 * checks,
        "{insts:?}"
    );
    assert_eq!(count_matching(&unguarded, "s_ttracedata"), 6);
    assert!(
        2 * checks <= count_matching(&unguarded, "sched_barrier"),
        "{checks} runs, unguarded: {unguarded:?}"
    );

    let insts = kernel_insts(
        "gfx1100",
        &[
            ("SQTT_MEM_BARRIER", "none"),
            ("SQTT_SCOPE_SIMD", "0x1"),
            ("SQTT_SCOPE_WG", "0x1"),
            ("SQTT_SCOPE_WAVE", "0xff"),
        ],
        &[],
    );
    for reg in [
        "hwreg(HW_REG_HW_ID1, 10, 4)",
        "hwreg(HW_REG_HW_ID1, 8, 2)",
        "hwreg(HW_REG_HW_ID1, 0, 5)",
        "hwreg(HW_REG_HW_ID2, 16, 5)",
    ] {
        assert_eq!(
            count_matching(&insts, &format!("s_getreg_b32 s*, {reg}")),
            1,
            "{reg}: {insts:?}"
        );
    }
    // Masks covering every unit filter nothing.
    let insts = kernel_insts(
        "gfx1100",
        &[("SQTT_SCOPE_CU", "0xffff"), ("SQTT_MEM_BARRIER", "none")],
        &[],
    );
    assert_eq!(count_matching(&insts, "s_getreg_b32*"), 0);
    assert_eq!(count_matching(&insts, "sched_barrier"), 10);
}

#[test]
fn marker_before_a_workgroup_sync_is_pinned() {
    let src = r#"
#include <hip/hip_runtime.h>
#include "markers.hpp"
__global__ void k(int *p) {
  __shared__ int s[64];
  s[threadIdx.x] = p[threadIdx.x];
  sqtt_marker_enter("wait");
  __syncthreads();
  sqtt_marker_exit("wait");
  p[threadIdx.x] = s[63 - threadIdx.x];
}
"#;
    let dir = workdir();
    let ir = device_asm(dir.path(), src, "gfx90a", &[], &["-emit-llvm"]);
    // The enter marker sits right before the __syncthreads() fence: its trailing pin comes
    // right before the sync's release fence, and its checked record (the scope check is in the
    // asm, no block split) right before that pin's boundary.
    let lines: Vec<&str> = ir.lines().map(str::trim).collect();
    let release = lines
        .iter()
        .position(|l| *l == "fence syncscope(\"workgroup\") release")
        .unwrap_or_else(|| panic!("no workgroup release fence: {ir}"));
    assert!(
        lines[release - 1].starts_with("call void @llvm.amdgcn.sched.barrier(i32 0)"),
        "no pin right before the sync: {ir}"
    );
    let record = lines[..release]
        .iter()
        .rposition(|l| l.contains("s_ttracedata"))
        .unwrap_or_else(|| panic!("no record before the sync: {ir}"));
    assert!(
        lines[record].contains("s_cbranch_scc1"),
        "the record is not under its scope check: {ir}"
    );
    assert!(
        lines[record + 1..release - 1]
            .iter()
            .all(|l| l.contains("!sqtt.marker")),
        "only the marker's own boundary between its record and the pin: {ir}"
    );
    assert!(!ir.contains("sqtt.skip"), "{ir}");
}

/// IR text without the lines that name the (temporary) source path.
/// The IR without what depends on the file's path or the command line: the module ID, the source
/// file name, and the compilation-unit ID that hipcc 7.x's clang appends to `__hip_cuid_`,
/// `__hip_fatbin_` and `__hip_gpubin_handle_` (a hash of the input path and the options, so
/// `-fpass-plugin` or another temporary directory changes it; in these tests hipcc 5.2.3's clang
/// 15 emits none of them).
fn without_paths(ir: &str) -> String {
    ir.lines()
        .filter(|l| !l.starts_with("; ModuleID") && !l.starts_with("source_filename"))
        .map(without_cuid)
        .collect::<Vec<_>>()
        .join("\n")
}

fn without_cuid(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = ["__hip_cuid_", "__hip_fatbin_", "__hip_gpubin_handle_"]
        .iter()
        .filter_map(|p| rest.find(p).map(|i| (i, p.len())))
        .min()
        .map(|(i, n)| i + n)
    {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let hex = rest
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(rest.len());
        let ident_continues = rest[hex..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if hex > 0 && !ident_continues {
            out.push_str("CUID");
            rest = &rest[hex..];
        }
    }
    out.push_str(rest);
    out
}

fn hipcc_failure(src: &str, env: &[(&str, &str)]) -> String {
    let dir = workdir();
    let file = dir.path().join("k.hip");
    std::fs::write(&file, src).unwrap();
    let mut c = hipcc_with_plugin("gfx90a");
    c.args(["--cuda-device-only", "-c"])
        .arg(&file)
        .arg("-o")
        .arg(dir.path().join("k.o"));
    c.envs(env.iter().copied());
    let out = run(&mut c);
    assert!(!out.status.success(), "compile should fail with {env:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn hand_loaded_plugin_reports_bad_settings_as_compile_errors() {
    let err = hipcc_failure(KERNEL, &[("SQTT_INSTRUMENT_MEMORY", "2")]);
    assert!(
        err.contains(
            "error: sqtt: environment variable SQTT_INSTRUMENT_MEMORY has the invalid value \"2\""
        ),
        "{err}"
    );
    assert!(err.contains("N:M"), "{err}");
    let err = hipcc_failure(KERNEL, &[("SQTT_SCOPE_CU", "0xQ")]);
    assert!(
        err.contains("SQTT_SCOPE_CU") && err.contains("hex bitmask"),
        "{err}"
    );
    let err = hipcc_failure(KERNEL, &[("SQTT_SHADER_CLOCK_BITS", "12")]);
    assert!(
        err.contains("sqtt_marker_data(\"work_value\")")
            && err.contains("SQTT_SHADER_CLOCK_BITS=12"),
        "{err}"
    );
}

#[test]
fn a_name_that_is_not_a_literal_is_a_compile_error() {
    let src = r#"
#include <hip/hip_runtime.h>
#include "markers.hpp"
__global__ void k(int *p) {
  const char *names[2] = {"a", "b"};
  sqtt_marker_enter(names[p[0] & 1]);
  p[1] = 1;
}
"#;
    let err = hipcc_failure(src, &[]);
    assert!(
        err.contains("sqtt_marker_enter() in _Z1kPi needs a string literal"),
        "{err}"
    );
}

#[test]
fn host_code_is_untouched() {
    let dir = workdir();
    let file = dir.path().join("k.hip");
    std::fs::write(&file, KERNEL).unwrap();
    let with = dir.path().join("with.ll");
    let without = dir.path().join("without.ll");
    let mut c = hipcc_with_plugin("gfx90a");
    c.args(["--cuda-host-only", "-S", "-emit-llvm"])
        .arg(&file)
        .arg("-o")
        .arg(&with);
    run_ok(&mut c);
    let mut c = plain_hipcc("gfx90a");
    c.arg("-DSQTT_ENABLED=1")
        .arg(format!("-I{}", markers_include().display()));
    c.args(["--cuda-host-only", "-S", "-emit-llvm"])
        .arg(&file)
        .arg("-o")
        .arg(&without);
    run_ok(&mut c);
    let strip = |p: &std::path::Path| without_paths(&std::fs::read_to_string(p).unwrap());
    assert_eq!(strip(&with), strip(&without));
}

#[test]
fn without_the_plugin_named_markers_fail_to_link_and_numeric_ones_work() {
    let dir = workdir();
    let file = dir.path().join("k.hip");
    std::fs::write(&file, format!("{KERNEL}\nint main() {{ return 0; }}\n")).unwrap();
    let mut c = plain_hipcc("gfx90a");
    c.arg("-DSQTT_ENABLED=1")
        .arg(format!("-I{}", markers_include().display()));
    c.arg(&file).arg("-o").arg(dir.path().join("k"));
    let out = run(&mut c);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("undefined hidden symbol: __sqtt_named_marker_enter"),
        "{err}"
    );

    let numeric = r#"
#include <hip/hip_runtime.h>
#include "markers.hpp"
__global__ void k(int *p) { sqtt_marker_enter(5u); p[0] = 1; sqtt_marker_point(7u); sqtt_marker_exit(5u); }
"#;
    std::fs::write(&file, numeric).unwrap();
    let asm_path = dir.path().join("k.s");
    let mut c = plain_hipcc("gfx90a");
    c.arg("-DSQTT_ENABLED=1")
        .arg(format!("-I{}", markers_include().display()));
    c.args(["--cuda-device-only", "-S"])
        .arg(&file)
        .arg("-o")
        .arg(&asm_path);
    run_ok(&mut c);
    let insts = function_instructions(&std::fs::read_to_string(&asm_path).unwrap(), "_Z1kPi");
    for v in ["22", "28", "1"] {
        assert_seq(
            &insts,
            &[
                "sched_barrier",
                &format!("s_mov_b32 m0, {v}"),
                "s_nop 0",
                "s_ttracedata",
                "sched_barrier",
            ],
        );
    }
}

#[test]
fn disabled_markers_compile_to_nothing() {
    let dir = workdir();
    let file = dir.path().join("k.hip");
    let bare = KERNEL
        .lines()
        .filter(|l| !l.contains("sqtt_marker"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut asm = Vec::new();
    for (name, src, define) in [
        ("with", KERNEL.to_string(), None),
        ("with0", KERNEL.to_string(), Some("-DSQTT_ENABLED=0")),
        ("bare", bare, None),
    ] {
        std::fs::write(&file, &src).unwrap();
        let out = dir.path().join(format!("{name}.s"));
        let mut c = plain_hipcc("gfx90a");
        c.arg(format!("-I{}", markers_include().display()));
        if let Some(d) = define {
            c.arg(d);
        }
        c.args(["--cuda-device-only", "-S"])
            .arg(&file)
            .arg("-o")
            .arg(&out);
        run_ok(&mut c);
        asm.push(function_instructions(
            &std::fs::read_to_string(&out).unwrap(),
            "_Z9my_kernelPfi",
        ));
    }
    assert_eq!(asm[0], asm[2]);
    assert_eq!(asm[1], asm[2]);
    assert_eq!(count_matching(&asm[0], "s_ttracedata*"), 0);
}

#[test]
fn numeric_markers_get_the_plugin_treatment() {
    let src = r#"
#include <hip/hip_runtime.h>
#include "markers.hpp"
__global__ void k(int *p) { sqtt_marker_enter(5u); p[0] = 1; sqtt_marker_exit(5u); }
"#;
    let dir = workdir();
    let asm = device_asm(dir.path(), src, "gfx1030", BARE, &[]);
    let insts = function_instructions(&asm, "_Z1kPi");
    assert_seq(
        &insts,
        &["sched_barrier", "s_ttracedata_imm 0x16", "sched_barrier"],
    );
    assert_seq(
        &insts,
        &["sched_barrier", "s_ttracedata_imm 0x1", "sched_barrier"],
    );
    assert_eq!(funcmap_from_asm(&asm).as_deref(), Some("K:_Z1kPi\n"));
}

#[test]
fn opt_runs_the_pass_by_name() {
    let ir = r#"
target triple = "amdgcn-amd-amdhsa"
@.str = private unnamed_addr addrspace(4) constant [4 x i8] c"abc\00"
declare void @__sqtt_named_marker_point(ptr)
define amdgpu_kernel void @k() #0 {
  call void @__sqtt_named_marker_point(ptr addrspacecast (ptr addrspace(4) @.str to ptr))
  ret void
}
attributes #0 = { "target-cpu"="gfx1030" }
"#;
    let out = opt_sqtt_ok(ir, &[("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")]);
    assert!(out.contains(&imm_record_ir(4)), "{out}");
    assert!(out.contains("c\"K:k\\0AP:1:abc\\0A\\00\""), "{out}");
    assert!(out.contains("section \".sqtt_funcmap\""), "{out}");
    assert!(out.contains("@llvm.used"), "{out}");
    assert!(
        !out.contains("__sqtt_named_marker_point(ptr addrspacecast"),
        "{out}"
    );
}

/// Every row group of a real compile, as AMD's pass lays them out: functions by ID, kernels,
/// named markers (each `R:` row right after its marker), barrier and memory points; every row
/// ends in a newline and a NUL ends the section. The exact bytes of the code object's section,
/// at -O0 (late phase only: AMD's -O0 order) and -O3 (early names compacted).
#[test]
fn funcmap_bytes_follow_amds_layout_in_a_real_code_object() {
    const SRC: &str = r#"#include <hip/hip_runtime.h>
#include "markers.hpp"

__device__ __noinline__ float helper(float *p, int n) {
  float s = 0;
  for (int k = 0; k < n; ++k) s += p[k] * p[k + 1];
  return s;
}

__global__ void first(float *data, int n) {
  sqtt_marker_enter("phase");
  float v = helper(data, n);
  __syncthreads();
  sqtt_marker_data("value", static_cast<uint32_t>(n));
  sqtt_marker_exit("phase");
  data[threadIdx.x] = v;
}

__global__ void second(float *d) {
  sqtt_marker_point("tick");
  d[0] = 1.0f;
}
"#;
    let env = [
        ("SQTT_SCOPE_CU", "-1"),
        ("SQTT_INSTRUMENT_FUNCTIONS", "5"),
        ("SQTT_INSTRUMENT_BARRIERS", "1"),
        ("SQTT_INSTRUMENT_MEMORY", "1:0"),
    ];
    let kernels = "K:_Z5firstPfi@k.hip:10\nK:_Z6secondPf@k.hip:19\n";
    // -O0: AMD's order there, the system IDs first, then `helper` (first in the module), then
    // the kernels' names.
    let o0 = format!(
        "F:6:_Z6helperPfi@k.hip:4\n{kernels}U:7:phase\nP:8:value\nR:8:extra_payload_count=1\n\
         P:9:tick\nP:1:barrier_signal\nP:2:barrier_wait\nP:3:barrier\nP:4:vmem_load\n\
         P:5:vmem_store\n\0"
    );
    let head = format!("F:1:_Z6helperPfi@k.hip:4\n{kernels}");
    let o3 = format!(
        "{head}U:2:phase\nP:3:value\nR:3:extra_payload_count=1\nP:4:tick\n\
         P:5:barrier_signal\nP:6:barrier_wait\nP:7:barrier\nP:8:vmem_load\nP:9:vmem_store\n\0"
    );
    for (opt, want) in [("-O0", o0), ("-O3", o3)] {
        let dir = workdir();
        let src = dir.path().join("k.hip");
        std::fs::write(&src, SRC).unwrap();
        let obj = dir.path().join("k.o");
        let mut c = hipcc_with_plugin("gfx90a");
        c.envs(env)
            .args(["-c", "-g", opt])
            .arg(&src)
            .arg("-o")
            .arg(&obj);
        run_ok(&mut c);
        let co = extract_code_object(&obj, "gfx90a", dir.path());
        let bytes = dump_funcmap(&co, dir.path()).expect("code object has .sqtt_funcmap");
        assert_eq!(String::from_utf8_lossy(&bytes), want, "{opt}");
    }
}

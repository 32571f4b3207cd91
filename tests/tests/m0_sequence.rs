//! The M0 sequence is one unit on every target (issue 12, item 1): every `s_ttracedata` in the
//! machine code is directly preceded by `s_nop N` (N = 0, or 3 on gfx12), and that directly by
//! `s_mov_b32 m0, <value>`, for named, numeric, payload, EXEC and address-lane records alike.
//!
//! IR in, ISA out: `opt -passes=sqtt` and `llc -filetype=obj` of the LLVM under test
//! (`SQTT_TEST_LLVM_SUFFIX`, default `-15`, with the plugin built for it in `SQTT_PLUGIN`), read
//! back with its llvm-objdump, so no asm comment line can sit in between. Targets the llc does not
//! know (gfx12 before LLVM 18) are left out, and the test says so. LLVM 15 is also checked through
//! the real hipcc.

use sqtt_e2e::toolchain::*;

/// One target of each generation, and the gfx12 parts with their clock-packing variants.
const TARGETS: &[&str] = &[
    "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1200", "gfx1201", "gfx1250",
];

/// The targets of [`TARGETS`] this llc knows; gfx9, gfx10 and gfx11 are known to every LLVM the
/// plugin supports.
fn known_targets() -> Vec<&'static str> {
    let yes = llc_known_cpus(TARGETS);
    for need in ["gfx90a", "gfx1030", "gfx1100"] {
        assert!(
            yes.contains(&need),
            "{} does not know {need}",
            llvm_tool("llc")
        );
    }
    yes
}

/// A kernel with every kind of record: 70 named points (IDs above 63 go through M0 on RDNA too),
/// a named enter/exit, a data marker (header + payload), a numeric markers.hpp record too large
/// for `s_ttracedata_imm`, and a global load and store for address tracing (EXEC + lane loop).
fn kernel(cpu: &str) -> String {
    let mut globals = String::new();
    let mut points = String::new();
    for i in 0..70 {
        let name = format!("p{i}");
        globals.push_str(&format!(
            "@.p{i} = private unnamed_addr addrspace(4) constant [{} x i8] c\"{name}\\00\"\n",
            name.len() + 1
        ));
        points.push_str(&format!(
            "  call void @__sqtt_named_marker_point(ptr addrspacecast (ptr addrspace(4) @.p{i} to ptr))\n"
        ));
    }
    format!(
        r#"target triple = "amdgcn-amd-amdhsa"
@.s = private unnamed_addr addrspace(4) constant [6 x i8] c"outer\00"
@.d = private unnamed_addr addrspace(4) constant [4 x i8] c"val\00"
{globals}
declare void @__sqtt_named_marker_enter(ptr)
declare void @__sqtt_named_marker_exit(ptr)
declare void @__sqtt_named_marker_point(ptr)
declare void @__sqtt_named_marker_data(ptr, i32)
declare void @llvm.amdgcn.sched.barrier(i32)
declare i32 @llvm.amdgcn.workitem.id.x()

define amdgpu_kernel void @k(ptr addrspace(1) %out) #0 {{
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  call void @__sqtt_named_marker_enter(ptr addrspacecast (ptr addrspace(4) @.s to ptr))
  %idx = zext i32 %tid to i64
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %idx
  %v = load i32, ptr addrspace(1) %p, align 4
  call void @__sqtt_named_marker_data(ptr addrspacecast (ptr addrspace(4) @.d to ptr), i32 %v)
{points}  %w = add i32 %v, %tid
  store i32 %w, ptr addrspace(1) %p, align 4
  call void @llvm.amdgcn.sched.barrier(i32 0)
  call void asm sideeffect "s_nop 0\0A\09s_ttracedata", "{{m0}}"(i32 300)
  call void @llvm.amdgcn.sched.barrier(i32 0)
  call void @__sqtt_named_marker_exit(ptr addrspacecast (ptr addrspace(4) @.s to ptr))
  ret void
}}
attributes #0 = {{ "target-cpu"="{cpu}" }}
"#
    )
}

/// opt with the plugin, llc to an object, llvm-objdump: the instructions.
fn isa(cpu: &str, env: &[(&str, &str)]) -> Vec<String> {
    llc_objdump(&opt_sqtt_ok(&kernel(cpu), env), cpu)
}

fn is_sgpr(v: &str) -> bool {
    v.strip_prefix('s')
        .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
}

/// Asserts every record kind is there, through M0.
fn check_kinds(values: &[String], what: &str) {
    let has = |f: &dyn Fn(&str) -> bool| values.iter().any(|v| f(v));
    assert!(
        has(&|v| v == "exec_lo") && has(&|v| v == "exec_hi"),
        "{what}: EXEC records {values:?}"
    );
    assert!(
        has(&|v| v == "0x12c" || v == "300"),
        "{what}: numeric 300 {values:?}"
    );
    // The payload, and address lo/hi in the lane loops (never unrolled) of the load and store.
    let sgprs = values.iter().filter(|v| is_sgpr(v)).count();
    assert!(
        sgprs >= 5,
        "{what}: {sgprs} SGPR records, want the payload and 2 x 2 lanes"
    );
    // Named points with IDs above 63: `(id << 2)` is 0x100 or more.
    let named = values
        .iter()
        .filter_map(|v| {
            v.strip_prefix("0x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
        })
        .filter(|v| *v >= 0x100 && *v & 3 == 0 && *v != 0x12c)
        .count();
    assert!(named >= 1, "{what}: named records through M0 {values:?}");
}

#[test]
fn every_m0_record_is_mov_nop_ttracedata_from_llc() {
    for cpu in known_targets() {
        for (label, env) in [
            ("unfiltered", vec![("SQTT_SCOPE_CU", "-1")]),
            ("scope check", vec![]),
        ] {
            let mut env = env;
            env.push(("SQTT_TRACE_ADDRESSES", "memory"));
            let what = format!("{cpu} {label}");
            let insts = isa(cpu, &env);
            let values = m0_values(&insts, nop_of(cpu), &what);
            check_kinds(&values, &what);
        }
    }
}

/// gfx12 clock packing: every pass-made header is a runtime value (clock | id) in an SGPR.
#[test]
fn packed_gfx12_headers_keep_the_sequence() {
    for cpu in known_targets()
        .into_iter()
        // gfx1250 packs its headers from LLVM 22 (s_get_shader_cycles_u64).
        .filter(|c| matches!(*c, "gfx1200" | "gfx1201") || (*c == "gfx1250" && llvm_major() >= 22))
    {
        // No payload markers under packing: named markers only, and the numeric record.
        let ir = kernel(cpu)
            .lines()
            .filter(|l| !l.contains("@__sqtt_named_marker_data(ptr addrspacecast"))
            .collect::<Vec<_>>()
            .join("\n");
        let out = opt_sqtt_ok(
            &ir,
            &[("SQTT_SHADER_CLOCK_BITS", "12"), ("SQTT_SCOPE_CU", "-1")],
        );
        let insts = llc_objdump(&out, cpu);
        let values = m0_values(&insts, 3, cpu);
        // 70 points, enter, exit, the numeric record.
        assert_eq!(values.len(), 73, "{cpu}: {values:?}");
        assert_eq!(
            values.iter().filter(|v| is_sgpr(v)).count(),
            72,
            "{cpu}: {values:?}"
        );
    }
}

const HIP: &str = r#"#include <hip/hip_runtime.h>
#include "markers.hpp"
__global__ void k(int *out) {
  int i = threadIdx.x;
  sqtt_marker_enter("outer");
  int v = out[i];
  sqtt_marker_data("val", v);
  sqtt_marker_point(300u); // (300 << 2) = 0x4b0
  out[i] = v + i;
  sqtt_marker_exit("outer");
}
"#;

/// LLVM 15 through the real hipcc (-O3 and -O0), where the M0 input constraint used to let the
/// compiler write M0 with v_readfirstlane_b32 or put s_waitcnt in the sequence.
#[test]
fn every_m0_record_is_mov_nop_ttracedata_through_hipcc() {
    if llvm_major() != 15 {
        eprintln!("hipcc drives clang-15: checked on the LLVM 15 lane only");
        return;
    }
    for arch in ["gfx90a", "gfx1030", "gfx1100"] {
        for opt in ["-O3", "-O0"] {
            let dir = workdir();
            let src = dir.path().join("k.hip");
            std::fs::write(&src, HIP).unwrap();
            let obj = dir.path().join("k.o");
            let mut c = hipcc_with_plugin(arch);
            c.args(["-c", opt])
                .arg(&src)
                .arg("-o")
                .arg(&obj)
                .env("SQTT_TRACE_ADDRESSES", "memory")
                .env("SQTT_SCOPE_CU", "-1");
            run_ok(&mut c);
            let what = format!("{arch} {opt}");
            let co = extract_code_object(&obj, arch, dir.path());
            let insts = objdump_instructions(&disassemble(&co, arch));
            let values = m0_values(&insts, 0, &what);
            assert!(values.iter().any(|v| v == "exec_lo"), "{what}: {values:?}");
            // At -O0 the numeric value reaches the asm through an alloca: a runtime SGPR record.
            if opt != "-O0" {
                assert!(values.iter().any(|v| v == "0x4b0"), "{what}: {values:?}");
            }
            assert!(
                values.iter().filter(|v| is_sgpr(v)).count() >= 5,
                "{what}: {values:?}"
            );
        }
    }
}

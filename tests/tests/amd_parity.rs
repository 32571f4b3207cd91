//! What AMD's suites (`amd/sqtt-marker` in ROCm's LLVM) found different, issue 30:
//!
//! 1. the headers' numeric (ID) markers are one `s_mov_b32 m0` / `s_nop N` / `s_ttracedata`
//!    statement with the generation's N, right without the plugin (and still rewritten by it);
//! 2. the ID markers of AMD's own header (`-I` to it instead of ours) get the plugin's scope check
//!    and boundary: from the header itself when `SQTT_TEST_AMD_HEADER_INCLUDE` names a directory
//!    holding it (opt-in: it is never part of this repository), and from the IR it produces;
//! 3. `SQTT_INSTRUMENT_MEMORY=none` is off;
//! 4. at -O0 (only the late phase) the IDs go in AMD's order there: barrier and memory IDs, then
//!    function by function its named markers, its address traces and its own ID.
//!
//! On the lane's hipcc and LLVM (`SQTT_TEST_ARCHES`; gfx90a, gfx1030 and gfx1100 on the host).

use std::path::Path;
use std::process::Command;

use sqtt_e2e::toolchain::*;

/// No scope filter, no boundary: bare records.
const BARE: &[(&str, &str)] = &[("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")];

/// The `s_ttracedata` / `s_ttracedata_imm` lines of an assembly listing that no scope check
/// skips (outside every `s_cbranch_scc1 .Lsqtt_skipN` ... `.Lsqtt_skipN:`), and how many are
/// inside one.
fn records_by_scope_check(asm: &str) -> (Vec<String>, usize) {
    let mut open: Option<String> = None;
    let (mut outside, mut inside) = (Vec::new(), 0);
    for line in asm.lines() {
        let code = line.split(';').next().unwrap_or("").trim();
        if let Some(label) = code.strip_prefix("s_cbranch_scc1 ") {
            if label.starts_with(".Lsqtt_skip") {
                open = Some(format!("{label}:"));
            }
        } else if open.as_deref() == Some(code) {
            open = None;
        } else if code == "s_ttracedata" || code.starts_with("s_ttracedata_imm") {
            match open {
                Some(_) => inside += 1,
                None => outside.push(code.to_string()),
            }
        }
    }
    (outside, inside)
}

/// llc's assembly listing of IR for `cpu`.
fn llc_asm(ir: &str, cpu: &str) -> String {
    let dir = workdir();
    let ll = dir.path().join("k.ll");
    std::fs::write(&ll, ir).unwrap();
    run_ok(
        Command::new(llvm_tool("llc"))
            .args(["-mtriple=amdgcn-amd-amdhsa", "-o", "-"])
            .arg(format!("-mcpu={cpu}"))
            .arg(&ll),
    )
}

/// The arches of the lane that the LLVM under test compiles HIP for.
fn arches() -> Vec<String> {
    lane_arches(&["gfx90a", "gfx1030", "gfx1100"])
}

// --- 1. The headers' numeric markers ------------------------------------------------------------

/// Numeric markers around a store: the exit's M0 write used to be scheduled before the store
/// (gfx1030 -O3), outside the header's asm.
const NUMERIC_HIP: &str = r#"#include <hip/hip_runtime.h>
#include "markers.hpp"
__global__ void k(int *out) {
  int i = threadIdx.x;
  sqtt_marker_enter(5u);
  int v = out[i];
  sqtt_marker_point((uint32_t)v);
  out[i] = v + 1;
  sqtt_marker_exit(5u);
}
"#;

/// Our AMD API header's ID markers, in C.
const AMD_API_C: &str = "#include <amd_sqtt_marker/sqtt_marker.h>\n\
void ids(unsigned *p) {\n  amd_sqtt_marker_enter_id(9);\n  unsigned v = *p;\n  \
sqtt_marker_point_id(v);\n  *p = v + 1;\n  sqtt_marker_exit_id(9);\n}\n";

/// The HIP kernel's code object built by hipcc without the plugin; its instructions.
fn numeric_without_plugin(arch: &str, opt: &str) -> Vec<String> {
    let dir = workdir();
    let src = dir.path().join("k.hip");
    std::fs::write(&src, NUMERIC_HIP).unwrap();
    let obj = dir.path().join("k.o");
    run_ok(
        plain_hipcc(arch)
            .args(["-DSQTT_ENABLED=1", "-c", opt])
            .arg(format!("-I{}", markers_include().display()))
            .arg(&src)
            .arg("-o")
            .arg(&obj),
    );
    let co = extract_code_object(&obj, toolchain_arch(arch), dir.path());
    objdump_instructions(&disassemble(&co, toolchain_arch(arch)))
}

/// `clang -x c` for a device, no plugin: the output (`-S`, or `-S -emit-llvm`).
fn c_without_plugin(src: &str, arch: &str, opt: &str, extra: &[&str]) -> String {
    let dir = workdir();
    let file = dir.path().join("ids.c");
    std::fs::write(&file, src).unwrap();
    run_ok(
        Command::new(llvm_tool("clang"))
            .args(["-x", "c", "-std=c11", "-ffreestanding", "-nogpulib"])
            .args(["-Wall", "-Wextra", "-Werror", "-DAMD_SQTT_MARKER_ENABLE=1"])
            .arg("--target=amdgcn-amd-amdhsa")
            .arg(format!("-mcpu={}", toolchain_arch(arch)))
            .arg(opt)
            .arg(format!("-I{}", markers_include().display()))
            .args(extra)
            .args(["-S", "-o", "-"])
            .arg(&file),
    )
}

#[test]
fn numeric_markers_are_one_record_with_the_generations_nop_without_the_plugin() {
    for arch in arches() {
        let nop = nop_of(&arch);
        for opt in ["-O3", "-O0"] {
            let what = format!("markers.hpp {arch} {opt}");
            let insts = numeric_without_plugin(&arch, opt);
            let values = m0_values(&insts, nop, &what);
            assert_eq!(values.len(), 3, "{what}: {values:?}");
            if opt == "-O3" {
                // Constants are immediates, the loaded value an SGPR.
                assert_eq!(values[0], "22", "{what}: {values:?}");
                assert!(values[1].starts_with('s'), "{what}: {values:?}");
                assert_eq!(values[2], "1", "{what}: {values:?}");
            }
        }
        for opt in ["-O2", "-O0"] {
            let what = format!("sqtt_marker.h {arch} {opt}");
            let asm = c_without_plugin(AMD_API_C, &arch, opt, &[]);
            let values = m0_values(&function_instructions(&asm, "ids"), nop, &what);
            assert_eq!(values.len(), 3, "{what}: {values:?}");
            if opt == "-O2" {
                assert_eq!(
                    (values[0].as_str(), values[2].as_str()),
                    ("38", "1"),
                    "{what}"
                );
            }
            // The IR form the plugin (and AMD's pass) knows a header record by: one statement,
            // M0 its output, the nop count an operand (AMD's header.c, ENABLED).
            let ir = c_without_plugin(AMD_API_C, &arch, opt, &["-emit-llvm"]);
            let statement =
                "call i32 asm sideeffect \"s_mov_b32 m0, $1\\0As_nop $2\\0As_ttracedata\"";
            let records: Vec<&str> = ir.lines().filter(|l| l.contains(statement)).collect();
            assert_eq!(records.len(), 3, "{what}:\n{ir}");
            for r in records {
                assert!(
                    r.contains(&format!(", i32 {nop})")),
                    "{what}: not s_nop {nop}: {r}"
                );
            }
        }
    }
}

#[test]
fn numeric_markers_with_the_plugin_get_the_scope_check() {
    for arch in arches() {
        for opt in ["-O3", "-O0"] {
            let what = format!("{arch} {opt}");
            let dir = workdir();
            // The default scope filter (CUs 0 and 1).
            let asm = device_asm(dir.path(), NUMERIC_HIP, &arch, &[], &[opt]);
            let (outside, inside) = records_by_scope_check(&asm);
            assert!(outside.is_empty(), "{what}: unchecked {outside:?}:\n{asm}");
            assert_eq!(inside, 3, "{what}:\n{asm}");
            // Unfiltered: the enter and exit take s_ttracedata_imm on gfx10+ at -O3.
            let asm = device_asm(dir.path(), NUMERIC_HIP, &arch, BARE, &[opt]);
            let insts = function_instructions(&asm, "_Z1kPi");
            let values = trace_record_values(&insts);
            assert_eq!(values.len(), 3, "{what}: {values:?}");
            if opt == "-O3" {
                assert_eq!(values[0], "22", "{what}: {values:?}");
            }
        }
    }
}

// --- 2. AMD's own header ------------------------------------------------------------------------

/// AMD's header's ID markers as LLVM IR: the `llvm.amdgcn.s.ttracedata` calls of its ID markers
/// (off gfx12; LLVM 15 parses the unknown intrinsic, which the plugin replaces), the asm its later
/// version writes (a constant, and a value through readfirstlane), and a bare `.imm` call.
fn amd_header_ir(cpu: &str) -> String {
    let nop = nop_of(cpu);
    format!(
        r#"target triple = "amdgcn-amd-amdhsa"
declare void @llvm.amdgcn.sched.barrier(i32)
declare void @llvm.amdgcn.s.ttracedata(i32)
declare void @llvm.amdgcn.s.ttracedata.imm(i16)
declare i32 @llvm.amdgcn.readfirstlane(i32)
define amdgpu_kernel void @k(ptr addrspace(1) %p) #0 {{
  call void @llvm.amdgcn.sched.barrier(i32 0)
  call void @llvm.amdgcn.s.ttracedata(i32 38)
  call void @llvm.amdgcn.sched.barrier(i32 0)
  %v = load i32, ptr addrspace(1) %p, align 4
  call void @llvm.amdgcn.sched.barrier(i32 0)
  %r = call i32 @llvm.amdgcn.readfirstlane(i32 %v)
  %m = call i32 asm sideeffect "s_mov_b32 m0, $1\0As_nop $2\0As_ttracedata", "={{m0}},s,i"(i32 %r, i32 {nop})
  call void @llvm.amdgcn.sched.barrier(i32 0)
  %w = add i32 %v, 1
  store i32 %w, ptr addrspace(1) %p, align 4
  call void @llvm.amdgcn.sched.barrier(i32 0)
  %c = call i32 asm sideeffect "s_mov_b32 m0, $1\0As_nop $2\0As_ttracedata", "={{m0}},i,i"(i32 16, i32 {nop})
  call void @llvm.amdgcn.sched.barrier(i32 0)
  call void @llvm.amdgcn.s.ttracedata.imm(i16 1)
  ret void
}}
attributes #0 = {{ "target-cpu"="{cpu}" }}
"#
    )
}

#[test]
fn amd_header_records_in_ir_get_the_scope_check_and_boundary() {
    for cpu in llc_known_cpus(&["gfx90a", "gfx1030", "gfx1100", "gfx1201"]) {
        // The default settings: scope filter and fence boundary.
        let out = opt_sqtt_ok(&amd_header_ir(cpu), &[]);
        for form in [
            "call void @llvm.amdgcn.s.ttracedata(i32",
            "\"={m0},s,i\"(i32 %r",
            "\"={m0},i,i\"(i32 16",
        ] {
            assert!(!out.contains(form), "{cpu}: {form} left as it was:\n{out}");
        }
        let asm = llc_asm(&out, cpu);
        let (outside, inside) = records_by_scope_check(&asm);
        assert!(outside.is_empty(), "{cpu}: unchecked {outside:?}:\n{asm}");
        assert_eq!(inside, 4, "{cpu}:\n{asm}");
        // Unfiltered: the values, small constants as s_ttracedata_imm on gfx10+.
        let insts =
            function_instructions(&llc_asm(&opt_sqtt_ok(&amd_header_ir(cpu), BARE), cpu), "k");
        assert_eq!(
            trace_record_values(&insts),
            ["38", "s*", "16", "1"],
            "{cpu}:\n{}",
            insts.join("\n")
        );
        // The boundary before and after each run of markers (the `16` and the exit share one),
        // the fence of LLVM 19+ or its wavefront form.
        let fences = out.matches("fence syncscope(").count();
        assert_eq!(fences, 6, "{cpu}:\n{out}");
    }
}

/// AMD's header, from the directory `SQTT_TEST_AMD_HEADER_INCLUDE` names (holding
/// `amd_sqtt_marker/sqtt_marker.h`), its ID markers called from C and HIP: each is behind the
/// plugin's scope check. Which spellings it offers (`amd_sqtt_marker_enter_id` or
/// `sqtt_marker_enter_id`) is read from the header.
#[test]
fn amd_own_header_id_markers_get_the_scope_check() {
    let Some(include) = std::env::var_os("SQTT_TEST_AMD_HEADER_INCLUDE") else {
        eprintln!("SQTT_TEST_AMD_HEADER_INCLUDE is not set: AMD's own header not checked");
        return;
    };
    let include = Path::new(&include);
    let header = include.join("amd_sqtt_marker/sqtt_marker.h");
    let text = std::fs::read_to_string(&header)
        .unwrap_or_else(|e| panic!("SQTT_TEST_AMD_HEADER_INCLUDE: {}: {e}", header.display()));
    let (enter, point, exit) = if text.contains("void sqtt_marker_enter_id(") {
        (
            "sqtt_marker_enter_id(9)",
            "sqtt_marker_point_id(v)",
            "sqtt_marker_exit_id(9)",
        )
    } else {
        (
            "amd_sqtt_marker_enter_id(9)",
            "amd_sqtt_marker_point_id(v)",
            "amd_sqtt_marker_exit()",
        )
    };
    let body = format!("  {enter};\n  unsigned v = *p;\n  {point};\n  *p = v + 1;\n  {exit};\n");
    let c_src =
        format!("#include <amd_sqtt_marker/sqtt_marker.h>\nvoid ids(unsigned *p) {{\n{body}}}\n");
    let hip_src = format!(
        "#include <hip/hip_runtime.h>\n#include <amd_sqtt_marker/sqtt_marker.h>\n\
         __global__ void ids(unsigned *p) {{\n{body}}}\n"
    );
    for arch in arches() {
        let dir = workdir();
        let c_file = dir.path().join("ids.c");
        std::fs::write(&c_file, &c_src).unwrap();
        let hip_file = dir.path().join("ids.hip");
        std::fs::write(&hip_file, &hip_src).unwrap();
        let mut c = Command::new(llvm_tool("clang"));
        c.args(["-x", "c", "-std=c11", "-ffreestanding", "-nogpulib", "-O2"])
            .arg("--target=amdgcn-amd-amdhsa")
            .arg(format!("-mcpu={}", toolchain_arch(&arch)))
            .arg(&c_file);
        let mut hip = plain_hipcc(&arch);
        hip.args(["--cuda-device-only", "-O3"]).arg(&hip_file);
        for (what, cmd) in [("C", &mut c), ("HIP", &mut hip)] {
            for (k, _) in std::env::vars_os() {
                if k.to_string_lossy().starts_with("SQTT_") {
                    cmd.env_remove(k);
                }
            }
            let out = run(cmd
                .arg("-DAMD_SQTT_MARKER_ENABLE=1")
                .arg(format!("-I{}", include.display()))
                .arg(format!("-fpass-plugin={}", plugin_path().display()))
                .args(["-S", "-o", "-"]));
            let err = String::from_utf8_lossy(&out.stderr);
            // An LLVM without the builtin refuses it (HIP) or calls an undeclared function (C).
            if llvm_major() < 19 && err.contains("__builtin_amdgcn_s_ttracedata") {
                eprintln!(
                    "{arch} {what}: AMD's header needs __builtin_amdgcn_s_ttracedata, which LLVM {} lacks",
                    llvm_major()
                );
                continue;
            }
            assert!(out.status.success(), "{arch} {what}: {err}");
            let asm = String::from_utf8_lossy(&out.stdout);
            let (outside, inside) = records_by_scope_check(&asm);
            assert!(
                outside.is_empty(),
                "{arch} {what}: unchecked {outside:?}:\n{asm}"
            );
            assert_eq!(inside, 3, "{arch} {what}:\n{asm}");
        }
    }
}

// --- 3. SQTT_INSTRUMENT_MEMORY=none ---------------------------------------------------------------

const MEMORY_IR: &str = r#"target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @k(ptr addrspace(1) %p) #0 {
  %v = load i32, ptr addrspace(1) %p, align 4
  %w = add i32 %v, 1
  store i32 %w, ptr addrspace(1) %p, align 4
  ret void
}
attributes #0 = { "target-cpu"="gfx90a" }
"#;

#[test]
fn instrument_memory_none_is_off_for_the_plugin() {
    // The variable, with address traces (which `none` does not conflict with).
    let out = opt_sqtt_ok(
        MEMORY_IR,
        &[
            ("SQTT_INSTRUMENT_MEMORY", "none"),
            ("SQTT_TRACE_ADDRESSES", "memory"),
            ("SQTT_SCOPE_CU", "-1"),
        ],
    );
    assert!(
        out.contains("addr_trace_load") && !out.contains("vmem_"),
        "{out}"
    );
    // The plugin option over a variable that turns it on (AMD's automatic.ll, DISABLED), on
    // clang: `-fplugin` makes `-mllvm` see the plugin's options on every LLVM.
    let dir = workdir();
    let src = dir.path().join("m.c");
    std::fs::write(&src, "void f(unsigned *p) { *p += 1; }\n").unwrap();
    let mut c = Command::new(llvm_tool("clang"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SQTT_") {
            c.env_remove(k);
        }
    }
    let plugin = plugin_path();
    let out = run(c
        .env("SQTT_INSTRUMENT_MEMORY", "1:0")
        .args([
            "-x",
            "c",
            "-nogpulib",
            "-O2",
            "--target=amdgcn-amd-amdhsa",
            "-mcpu=gfx1030",
        ])
        .arg(format!("-fplugin={}", plugin.display()))
        .arg(format!("-fpass-plugin={}", plugin.display()))
        .args([
            "-mllvm",
            "-sqtt-marker-instrument-memory=none",
            "-S",
            "-o",
            "-",
        ])
        .arg(&src));
    let (asm, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success() && err.is_empty(), "{err}");
    assert!(
        !asm.contains("s_ttracedata") && !asm.contains("vmem_"),
        "{asm}"
    );
    // Through hipcc.
    for arch in arches() {
        let dir = workdir();
        let asm = device_asm(
            dir.path(),
            "#include <hip/hip_runtime.h>\n__global__ void k(int *p) { p[threadIdx.x] += 1; }\n",
            &arch,
            &[("SQTT_INSTRUMENT_MEMORY", "NONE")],
            &["-O3"],
        );
        let map = funcmap_from_asm(&asm).unwrap_or_default();
        assert!(
            map.contains("K:_Z1kPi") && !map.contains("vmem_"),
            "{arch}: {map}"
        );
    }
}

// --- 4. IDs at -O0 --------------------------------------------------------------------------------

/// A device function with a named scope, called by a kernel with a barrier, named markers and
/// memory operations.
const O0_HIP: &str = r#"#include <hip/hip_runtime.h>
#include "markers.hpp"
__device__ __attribute__((noinline)) float body(float *p, int n) {
  sqtt_marker_enter("body");
  float r = 0;
  for (int i = 0; i < n; i++) r += p[i] * p[(i * 7) % n];
  sqtt_marker_exit("body");
  return r;
}
__global__ void k(float *out, float *in, int n) {
  sqtt_marker_point("start");
  float v = body(in, n);
  __syncthreads();
  sqtt_marker_data("value", (uint32_t)n);
  out[threadIdx.x] = v;
}
"#;

#[test]
fn ids_at_o0_go_in_amds_order() {
    for arch in arches() {
        let dir = workdir();
        let env = [
            ("SQTT_INSTRUMENT_FUNCTIONS", "1"),
            ("SQTT_INSTRUMENT_BARRIERS", "1"),
            ("SQTT_INSTRUMENT_MEMORY", "1:0"),
            ("SQTT_SCOPE_CU", "-1"),
        ];
        let asm = device_asm(dir.path(), O0_HIP, &arch, &env, &["-O0"]);
        // `body` is first in the module: its name, then its own ID; then the kernel's names.
        let want = "F:7:_Z4bodyPfi@k.hip:3\nK:_Z1kPfS_i@k.hip:10\nU:6:body\nP:8:start\nP:9:value\n\
             R:9:extra_payload_count=1\nP:1:barrier_signal\nP:2:barrier_wait\nP:3:barrier\n\
             P:4:vmem_load\nP:5:vmem_store\n";
        let map = funcmap_from_asm(&asm).unwrap_or_default();
        assert_eq!(
            map.lines()
                .map(|l| l.split('@').next().unwrap())
                .collect::<Vec<_>>(),
            want.lines()
                .map(|l| l.split('@').next().unwrap())
                .collect::<Vec<_>>(),
            "{arch}"
        );
    }
}

/// `opt -passes=sqtt` (only the late phase, as at -O0) with address traces: per function its
/// named markers, its traced operations in code order, then its own ID.
#[test]
fn ids_of_the_late_phase_alone_interleave_names_address_traces_and_functions() {
    let ir = r#"target triple = "amdgcn-amd-amdhsa"
@.hp = private unnamed_addr addrspace(4) constant [3 x i8] c"hp\00"
@.ks = private unnamed_addr addrspace(4) constant [3 x i8] c"ks\00"
declare void @__sqtt_named_marker_enter(ptr)
declare void @__sqtt_named_marker_exit(ptr)
declare void @__sqtt_named_marker_point(ptr)
define void @helper(ptr addrspace(1) %p) #0 {
  call void @__sqtt_named_marker_point(ptr addrspacecast (ptr addrspace(4) @.hp to ptr))
  %v = load i32, ptr addrspace(1) %p, align 4
  %a = mul i32 %v, 3
  %b = xor i32 %a, 7
  store i32 %b, ptr addrspace(1) %p, align 4
  ret void
}
define amdgpu_kernel void @k(ptr addrspace(1) %p) #0 {
  call void @__sqtt_named_marker_enter(ptr addrspacecast (ptr addrspace(4) @.ks to ptr))
  call void @helper(ptr addrspace(1) %p)
  %v = load i32, ptr addrspace(1) %p, align 4
  call void @__sqtt_named_marker_exit(ptr addrspacecast (ptr addrspace(4) @.ks to ptr))
  ret void
}
attributes #0 = { "target-cpu"="gfx1030" }
"#;
    let out = opt_sqtt_ok(
        ir,
        &[
            ("SQTT_INSTRUMENT_FUNCTIONS", "1"),
            ("SQTT_TRACE_ADDRESSES", "memory"),
            ("SQTT_SCOPE_CU", "-1"),
        ],
    );
    let map = out
        .lines()
        .find(|l| l.contains(".sqtt_func_id_map"))
        .unwrap_or_else(|| panic!("no funcmap:\n{out}"));
    let want = "c\"F:4:helper\\0AK:k\\0AP:1:hp\\0AU:5:ks\\0AW:32\\0A\
                P:2:addr_trace_load\\0AR:2:extra_payload_count=66\\0A\
                P:3:addr_trace_store\\0AR:3:extra_payload_count=66\\0A\
                P:6:addr_trace_load\\0AR:6:extra_payload_count=66\\0A\\00\"";
    assert!(map.contains(want), "{map}");
}

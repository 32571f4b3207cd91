//! Address tracing on the real toolchain: funcmap rows, readlane loops and payload counts.

use std::process::Command;

use sqtt_e2e::toolchain::*;

const KERNEL: &str = r#"#include <hip/hip_runtime.h>
__global__ void k(float *out, const float *in, int *cnt) {
  __shared__ float s[256];
  int i = threadIdx.x;
  s[i] = in[i];
  __syncthreads();
  out[i] = s[255 - i];
  atomicAdd(cnt, 1);
}
"#;

const NO_SCOPE: [(&str, &str); 2] = [("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")];

fn compile(arch: &str, which: &str, extra: &[&str]) -> String {
    let dir = workdir();
    let mut env: Vec<(&str, &str)> = NO_SCOPE.to_vec();
    env.push(("SQTT_TRACE_ADDRESSES", which));
    device_asm(dir.path(), KERNEL, arch, &env, extra)
}

#[test]
fn every_category_gets_a_row_with_its_payload_count() {
    for (arch, wave, global, lds) in [("gfx90a", 64, 130, 66), ("gfx1100", 32, 66, 34)] {
        let asm = compile(arch, "memory,lds", &["-g"]);
        let map = funcmap_from_asm(&asm).unwrap();
        let want = format!(
            "K:_Z1kPfPKfPi@k.hip:2\nW:{wave}\n\
             P:1:addr_trace_load@k.hip:5\nR:1:extra_payload_count={global}\n\
             P:2:addr_trace_lds_store@k.hip:5\nR:2:extra_payload_count={lds}\n\
             P:3:addr_trace_lds_load@k.hip:7\nR:3:extra_payload_count={lds}\n\
             P:4:addr_trace_store@k.hip:7\nR:4:extra_payload_count={global}\n\
             P:5:addr_trace_atomic@amd_hip_atomic.h:*-> k.hip:8\n\
             R:5:extra_payload_count={global}\n"
        );
        let got: Vec<&str> = map.lines().collect();
        let want: Vec<&str> = want.lines().collect();
        assert_eq!(got.len(), want.len(), "{arch}:\n{map}");
        for (g, w) in got.iter().zip(&want) {
            assert!(matches(g, w), "{arch}: row {g:?} is not {w:?}\n{map}");
        }
    }
}

#[test]
fn only_the_selected_categories_are_traced() {
    let map = funcmap_from_asm(&compile("gfx90a", "lds", &[])).unwrap();
    assert!(
        map.contains("addr_trace_lds_store") && !map.contains("addr_trace_load"),
        "{map}"
    );
    let map = funcmap_from_asm(&compile("gfx90a", "memory", &[])).unwrap();
    assert!(
        map.contains("addr_trace_load") && !map.contains("addr_trace_lds"),
        "{map}"
    );
}

#[test]
fn isa_is_header_exec_then_a_readlane_loop() {
    for arch in ["gfx90a", "gfx1100"] {
        let insts = function_instructions(&compile(arch, "memory,lds", &[]), "_Z1kPfPKfPi");
        let exec = [
            "s_mov_b32 m0, exec_lo",
            "s_nop 0",
            "s_ttracedata",
            "s_mov_b32 m0, exec_hi",
            "s_nop 0",
            "s_ttracedata",
        ];
        assert_eq!(
            insts
                .windows(exec.len())
                .filter(|w| w.iter().zip(&exec).all(|(a, b)| a == b))
                .count(),
            5,
            "{arch}: one EXEC pair per traced op:\n{}",
            insts.join("\n")
        );
        // Loops are not unrolled: one readlane per lane word of each op: 2 for each 64-bit op,
        // 1 for the two LDS ops. The atomic's address is uniform; LLVM 15 reads it from an SGPR
        // instead of with readlanes, LLVM 18 does not.
        let readlanes = count_matching(&insts, "v_readlane_b32 s*, v*, s*");
        assert!(
            readlanes == 6 || readlanes == 8,
            "{arch}: {readlanes} readlanes:\n{}",
            insts.join("\n")
        );
        // Each lane word: readlane into an SGPR (the scheduler groups the loop's readlanes),
        // then the M0 unit from that SGPR.
        assert_seq_any(&insts, &["s_mov_b32 m0, s*", "s_nop 0", "s_ttracedata"]);
        // Markers add no cache invalidation: the kernel's own (the __syncthreads acquire) stay
        // as many as without the plugin.
        let plain = plain_device_insts(arch);
        for inv in [
            "buffer_gl0_inv",
            "buffer_gl1_inv",
            "buffer_wbinvl1*",
            "global_inv*",
        ] {
            assert_eq!(
                count_matching(&insts, inv),
                count_matching(&plain, inv),
                "{arch}: {inv}"
            );
        }
    }
    // The header of ID 1 on gfx1100 fits s_ttracedata_imm.
    let insts = function_instructions(&compile("gfx1100", "memory", &[]), "_Z1kPfPKfPi");
    assert_seq_any(&insts, &["s_ttracedata_imm 0x4", "s_mov_b32 m0, exec_lo"]);
}

fn plain_device_insts(arch: &str) -> Vec<String> {
    let dir = workdir();
    let src = dir.path().join("k.hip");
    std::fs::write(&src, KERNEL).unwrap();
    let out = dir.path().join("k.s");
    run_ok(
        plain_hipcc(arch)
            .args(["--cuda-device-only", "-S"])
            .arg(&src)
            .arg("-o")
            .arg(&out),
    );
    function_instructions(&std::fs::read_to_string(out).unwrap(), "_Z1kPfPKfPi")
}

fn assert_seq_any(insts: &[String], seq: &[&str]) {
    assert!(
        contains_sequence(insts, seq),
        "{seq:?} not in\n{}",
        insts.join("\n")
    );
}

#[test]
fn scope_filtering_wraps_the_block() {
    let dir = workdir();
    let asm = device_asm(
        dir.path(),
        KERNEL,
        "gfx90a",
        &[("SQTT_TRACE_ADDRESSES", "memory")],
        &[],
    );
    let insts = function_instructions(&asm, "_Z1kPfPKfPi");
    assert_eq!(
        count_matching(&insts, "s_getreg_b32 s*, hwreg(HW_REG_HW_ID, 8, 4)"),
        1
    );
    assert_eq!(count_matching(&insts, "sched_barrier"), 0);
}

/// Buffer intrinsics (raw, struct, atomics, cmpswap), `buffer.load.lds` and scratch excluded,
/// permutes; IR in, IR and ISA out.
#[test]
fn buffer_and_permute_operations() {
    let ir = r#"
target triple = "amdgcn-amd-amdhsa"
declare float @llvm.amdgcn.raw.buffer.load.f32(<4 x i32>, i32, i32, i32)
declare void @llvm.amdgcn.struct.buffer.store.f32(float, <4 x i32>, i32, i32, i32, i32)
declare i32 @llvm.amdgcn.raw.buffer.atomic.cmpswap.i32(i32, i32, <4 x i32>, i32, i32, i32)
declare i32 @llvm.amdgcn.ds.bpermute(i32, i32)
declare i32 @llvm.amdgcn.ds.permute(i32, i32)
define amdgpu_kernel void @k(<4 x i32> %rsrc, i32 %soff, ptr addrspace(1) %out) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %voff = shl i32 %tid, 2
  %v = call float @llvm.amdgcn.raw.buffer.load.f32(<4 x i32> %rsrc, i32 %voff, i32 %soff, i32 0)
  call void @llvm.amdgcn.struct.buffer.store.f32(float %v, <4 x i32> %rsrc, i32 %tid, i32 %voff, i32 %soff, i32 0)
  %c = call i32 @llvm.amdgcn.raw.buffer.atomic.cmpswap.i32(i32 1, i32 0, <4 x i32> %rsrc, i32 %voff, i32 %soff, i32 0)
  %b = call i32 @llvm.amdgcn.ds.bpermute(i32 %voff, i32 %c)
  %p = call i32 @llvm.amdgcn.ds.permute(i32 %voff, i32 %b)
  %slot = alloca i32, addrspace(5)
  store volatile i32 %p, ptr addrspace(5) %slot
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
attributes #0 = { "target-cpu"="gfx90a" }
"#;
    let dir = workdir();
    let input = dir.path().join("in.ll");
    std::fs::write(&input, ir).unwrap();
    let opt = |extra_env: &[(&str, &str)]| {
        run_ok(
            Command::new(llvm_tool("opt"))
                .envs(NO_SCOPE.iter().copied())
                .envs(extra_env.iter().copied())
                .arg(format!("-load-pass-plugin={}", plugin_path().display()))
                .args(["-passes=sqtt", "-S"])
                .arg(&input),
        )
    };
    let out = opt(&[("SQTT_TRACE_ADDRESSES", "memory,lds")]);
    let funcmap = out
        .lines()
        .find(|l| l.contains("section \".sqtt_funcmap\""))
        .unwrap_or_else(|| panic!("no funcmap:\n{out}"));
    for row in [
        "W:64",
        "P:1:addr_trace_buffer_load",
        "P:2:addr_trace_struct_buffer_store",
        "P:3:addr_trace_buffer_atomic",
        "P:4:addr_trace_ds_bpermute",
        "P:5:addr_trace_ds_permute",
        "R:1:extra_payload_count=69",
        "R:2:extra_payload_count=133",
        "R:3:extra_payload_count=69",
        "R:4:extra_payload_count=66",
        "R:5:extra_payload_count=66",
    ] {
        assert!(
            funcmap.contains(&format!("{row}\\0")),
            "{row} missing: {funcmap}"
        );
    }
    assert!(!funcmap.contains("P:6"), "scratch is not traced: {funcmap}");
    // One loop per op, two for the struct buffer; each marked never to unroll.
    assert!(out.matches("br i1").count() >= 6, "{out}");
    assert_eq!(out.matches("!llvm.loop").count(), 6, "{out}");
    assert!(out.contains("!\"llvm.loop.unroll.disable\""), "{out}");
    // rsrc words come from the descriptor.
    assert!(
        out.contains("extractelement <4 x i32> %rsrc, i32 0"),
        "{out}"
    );
    assert!(
        out.contains("extractelement <4 x i32> %rsrc, i32 1"),
        "{out}"
    );

    // And it still compiles to ISA with the same loops.
    let ll = dir.path().join("out.ll");
    std::fs::write(&ll, &out).unwrap();
    let asm = run_ok(
        Command::new(llvm_tool("llc"))
            .args([
                "-mtriple=amdgcn-amd-amdhsa",
                "-mcpu=gfx90a",
                "-verify-machineinstrs",
                "-o",
                "-",
            ])
            .arg(&ll),
    );
    let insts = function_instructions(&asm, "k");
    assert_eq!(
        count_matching(&insts, "v_readlane_b32 s*, v*, s*"),
        6,
        "{}",
        insts.join("\n")
    );
    assert_eq!(count_matching(&insts, "s_mov_b32 m0, exec_lo"), 5);
}

#[test]
fn addresses_and_memory_markers_do_not_mix() {
    let dir = workdir();
    let file = dir.path().join("k.hip");
    std::fs::write(&file, KERNEL).unwrap();
    let mut c = hipcc_with_plugin("gfx90a");
    c.env("SQTT_TRACE_ADDRESSES", "memory")
        .env("SQTT_INSTRUMENT_MEMORY", "1:0")
        .args(["--cuda-device-only", "-c"])
        .arg(&file)
        .arg("-o")
        .arg(dir.path().join("k.o"));
    let out = run(&mut c);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "SQTT_TRACE_ADDRESSES=memory and SQTT_INSTRUMENT_MEMORY=1:0 are mutually exclusive"
        ),
        "{err}"
    );
}

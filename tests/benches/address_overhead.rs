//! Benchmark (prints a table, asserts nothing): for each address-trace category, the static
//! instructions that tracing adds per traced operation on gfx90a and gfx1100, beside the
//! number of trace records (tokens) the operation writes at run time (docs/format.md, section 4).
//!
//! `cargo bench -p sqtt-e2e --bench address_overhead` (build the plugin first).

use std::process::Command;

use sqtt_e2e::toolchain::*;

/// (category, IR body over %pg (global ptr), %pl (LDS ptr), %r (<4 x i32>), %o / %t (i32),
/// records per lane, fixed records)
const CASES: &[(&str, &str, u32, u32)] = &[
    ("memory load", "%v = load volatile i32, ptr addrspace(1) %pg\n  store volatile i32 %v, ptr addrspace(5) %s", 2, 0),
    ("memory store", "store volatile i32 %o, ptr addrspace(1) %pg", 2, 0),
    ("memory atomic", "%v = atomicrmw add ptr addrspace(1) %pg, i32 1 monotonic\n  store volatile i32 %v, ptr addrspace(5) %s", 2, 0),
    ("lds load", "%v = load volatile i32, ptr addrspace(3) %pl\n  store volatile i32 %v, ptr addrspace(5) %s", 1, 0),
    ("lds store", "store volatile i32 %o, ptr addrspace(3) %pl", 1, 0),
    ("lds atomic", "%v = atomicrmw add ptr addrspace(3) %pl, i32 1 monotonic\n  store volatile i32 %v, ptr addrspace(5) %s", 1, 0),
    ("buffer", "%v = call i32 @llvm.amdgcn.raw.buffer.load.i32(<4 x i32> %r, i32 %o, i32 %so, i32 0)\n  store volatile i32 %v, ptr addrspace(5) %s", 1, 3),
    ("struct buffer", "%v = call i32 @llvm.amdgcn.struct.buffer.load.i32(<4 x i32> %r, i32 %t, i32 %o, i32 %so, i32 0)\n  store volatile i32 %v, ptr addrspace(5) %s", 2, 3),
    ("ds_bpermute", "%v = call i32 @llvm.amdgcn.ds.bpermute(i32 %o, i32 %t)\n  store volatile i32 %v, ptr addrspace(5) %s", 1, 0),
];

fn module(body: &str, cpu: &str) -> String {
    format!(
        r#"target triple = "amdgcn-amd-amdhsa"
@lds = internal addrspace(3) global [256 x i32] undef
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.raw.buffer.load.i32(<4 x i32>, i32, i32, i32)
declare i32 @llvm.amdgcn.struct.buffer.load.i32(<4 x i32>, i32, i32, i32, i32)
declare i32 @llvm.amdgcn.ds.bpermute(i32, i32)
define amdgpu_kernel void @k(ptr addrspace(1) %p, <4 x i32> %r, i32 %so) #0 {{
  %s = alloca i32, addrspace(5)
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %o = shl i32 %t, 2
  %pg = getelementptr i32, ptr addrspace(1) %p, i32 %t
  %pl = getelementptr [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %t
  {body}
  ret void
}}
attributes #0 = {{ "target-cpu"="{cpu}" }}
"#
    )
}

fn instructions(ir: &str, cpu: &str, trace: bool) -> Vec<String> {
    let dir = workdir();
    let input = dir.path().join("in.ll");
    std::fs::write(&input, ir).unwrap();
    let mut opt = Command::new(llvm_tool("opt"));
    opt.env("SQTT_SCOPE_CU", "-1")
        .env("SQTT_MEM_BARRIER", "none");
    if trace {
        opt.env("SQTT_TRACE_ADDRESSES", "memory,lds");
    }
    let out_ll = dir.path().join("out.ll");
    run_ok(
        opt.arg(format!("-load-pass-plugin={}", plugin_path().display()))
            .args(["-passes=sqtt", "-S", "-o"])
            .arg(&out_ll)
            .arg(&input),
    );
    let asm = run_ok(
        Command::new(llvm_tool("llc"))
            .args([
                "-O3",
                "-mtriple=amdgcn-amd-amdhsa",
                &format!("-mcpu={cpu}"),
                "-o",
                "-",
            ])
            .arg(&out_ll),
    );
    function_instructions(&asm, "k")
}

fn main() {
    println!(
        "Static instructions added per traced operation (SQTT_MEM_BARRIER=none, no scope check)"
    );
    println!(
        "{:<15} {:>7} {:>22} {:>20} {:>20}",
        "category", "arch", "records written (spec)", "static insts added", "static s_ttracedata"
    );
    for cpu in ["gfx90a", "gfx1100"] {
        let wave = sqtt_gfx::Generation::of_name(cpu)
            .unwrap()
            .default_wave_size();
        for (name, body, per_lane, fixed) in CASES {
            let ir = module(body, cpu);
            let base = instructions(&ir, cpu, false);
            let traced = instructions(&ir, cpu, true);
            // 1 header + EXEC lo/hi + fixed words + one word per lane and lane word.
            let tokens = 1 + 2 + fixed + per_lane * wave;
            let traces = count_matching(&traced, "s_ttracedata*");
            println!(
                "{:<15} {:>7} {:>22} {:>20} {:>20}",
                name,
                cpu,
                tokens,
                traced.len() as i64 - base.len() as i64,
                traces
            );
        }
    }
}

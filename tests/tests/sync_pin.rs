//! The sync pin of numeric markers (issue 12, item 2): under the scope filter, a marker directly
//! before a workgroup sync ends with a `sched_barrier` right before it, so that the sync stays
//! the first instruction after the marker; a marker with other work before the sync is pinned
//! before that work. Numeric markers (markers.hpp's `sched_barrier` / M0 record asm /
//! `sched_barrier`) used to look one instruction too far. The scope check is in the record's
//! asm (no `sqtt.trace` block), so the marker is pinned on both sides as without the filter.

use sqtt_e2e::toolchain::*;

/// A kernel with one numeric marker (value 300, markers.hpp's shape) followed by `after`.
fn kernel(after: &str) -> String {
    format!(
        r#"target triple = "amdgcn-amd-amdhsa"
declare void @llvm.amdgcn.s.barrier()
declare void @llvm.amdgcn.sched.barrier(i32)
define amdgpu_kernel void @k(ptr addrspace(1) %p) #0 {{
  store i32 1, ptr addrspace(1) %p
  call void @llvm.amdgcn.sched.barrier(i32 0)
  %m0 = call i32 asm sideeffect "s_mov_b32 m0, $1\0As_nop $2\0As_ttracedata", "={{m0}},i,i"(i32 300, i32 0)
  call void @llvm.amdgcn.sched.barrier(i32 0)
{after}
  ret void
}}
attributes #0 = {{ "target-cpu"="gfx90a" }}
"#
    )
}

/// The instruction after each `sched.barrier` call the pass left, and how many there are.
fn pins(ir: &str) -> Vec<String> {
    let lines: Vec<&str> = ir.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|w| w[0].starts_with("call void @llvm.amdgcn.sched.barrier(i32 0)"))
        .map(|w| w[1].to_string())
        .collect()
}

/// Default settings: the CU scope filter is on, so the record checks the scope in its asm.
fn run(after: &str) -> String {
    let ir = opt_sqtt_ok(&kernel(after), &[]);
    assert!(
        ir.contains("s_cbranch_scc1 .Lsqtt_skip${:uid}") && !ir.contains("sqtt.skip"),
        "no scope check in the record's asm:\n{ir}"
    );
    assert!(
        ir.contains("\"={m0},={scc},s,i\"(i32 %") && ir.contains(", i32 300)"),
        "the numeric marker was not replaced:\n{ir}"
    );
    ir
}

/// What follows the marker's last pin.
fn last_pin(ir: &str) -> String {
    let p = pins(ir);
    assert_eq!(
        p.len(),
        2,
        "not one pin on either side of the marker:\n{ir}"
    );
    p[1].clone()
}

#[test]
fn numeric_marker_directly_before_s_barrier_is_pinned() {
    let ir = run("  call void @llvm.amdgcn.s.barrier()");
    assert_eq!(last_pin(&ir), "call void @llvm.amdgcn.s.barrier()", "{ir}");
}

#[test]
fn numeric_marker_with_a_store_before_the_barrier_is_pinned_before_the_store() {
    let ir = run("  store i32 2, ptr addrspace(1) %p\n  call void @llvm.amdgcn.s.barrier()");
    assert_eq!(
        last_pin(&ir),
        "store i32 2, ptr addrspace(1) %p, align 4",
        "{ir}"
    );
}

#[test]
fn numeric_marker_before_syncthreads_is_pinned_to_its_fence() {
    let ir = run(concat!(
        "  fence syncscope(\"workgroup\") release\n",
        "  call void @llvm.amdgcn.s.barrier()\n",
        "  fence syncscope(\"workgroup\") acquire"
    ));
    assert_eq!(
        last_pin(&ir),
        "fence syncscope(\"workgroup\") release",
        "{ir}"
    );
}

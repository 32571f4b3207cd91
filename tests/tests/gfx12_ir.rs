//! gfx12 in IR (opt runs the pass on any target-cpu; the ISA of these targets is checked in the
//! LLVM 18 lane, whose llc knows them): shader-clock packing of pass-made headers and bare
//! exits, the `M:` row, the no-clock layout at bits=0, gfx12 barrier signal/wait placement.

use sqtt_e2e::toolchain::*;

const KERNEL: &str = r#"
target triple = "amdgcn-amd-amdhsa"
@.s = private unnamed_addr addrspace(4) constant [2 x i8] c"s\00"
declare void @__sqtt_named_marker_enter(ptr)
declare void @__sqtt_named_marker_exit(ptr)
declare void @llvm.amdgcn.s.barrier.signal(i32)
declare void @llvm.amdgcn.s.barrier.wait(i16)
declare void @llvm.amdgcn.sched.barrier(i32)
define amdgpu_kernel void @k(ptr addrspace(1) %p) #0 {
  call void @__sqtt_named_marker_enter(ptr addrspacecast (ptr addrspace(4) @.s to ptr))
  store i32 1, ptr addrspace(1) %p
  call void @llvm.amdgcn.s.barrier.signal(i32 -1)
  call void @llvm.amdgcn.s.barrier.wait(i16 -1)
  call void @llvm.amdgcn.s.barrier.signal(i32 -1)
  store i32 2, ptr addrspace(1) %p
  call void @llvm.amdgcn.s.barrier.wait(i16 -1)
  call void @llvm.amdgcn.sched.barrier(i32 0)
  call void asm sideeffect "s_nop 0\0A\09s_ttracedata", "{m0}"(i32 20)
  call void @llvm.amdgcn.sched.barrier(i32 0)
  call void @llvm.amdgcn.sched.barrier(i32 0)
  call void asm sideeffect "s_nop 0\0A\09s_ttracedata", "{m0}"(i32 1)
  call void @llvm.amdgcn.sched.barrier(i32 0)
  call void @__sqtt_named_marker_exit(ptr addrspacecast (ptr addrspace(4) @.s to ptr))
  ret void
}
attributes #0 = { "target-cpu"="CPU" }
"#;

fn opt(cpu: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let mut all = vec![
        ("SQTT_SCOPE_CU", "-1"),
        ("SQTT_MEM_BARRIER", "none"),
        ("SQTT_INSTRUMENT_BARRIERS", "1"),
    ];
    all.extend_from_slice(env);
    let out = opt_sqtt(&KERNEL.replace("CPU", cpu), &all);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The constant each packed header ORs onto the shifted clock, in order.
fn packed_headers(ir: &str, shift_left: u32) -> Vec<u32> {
    let lines: Vec<&str> = ir.lines().map(str::trim).collect();
    let mut out = Vec::new();
    for w in lines.windows(2) {
        if w[0].contains("= shl i32 %") && w[0].ends_with(&format!(", {shift_left}")) {
            let v = w[1].rsplit(", ").next().unwrap().parse().unwrap();
            out.push(v);
        }
    }
    out
}

#[test]
fn gfx1201_packs_the_clock_into_pass_made_headers_and_exits() {
    let (ok, ir, err) = opt("gfx1201", &[("SQTT_SHADER_CLOCK_BITS", "12")]);
    assert!(ok, "{err}");
    // s_getreg_b32 hwreg(HW_REG_SHADER_CYCLES_LO, 4, 12): (12-1)<<11 | 4<<6 | 29.
    let imm = (11 << 11) | (4 << 6) | 29;
    assert_eq!(
        ir.matches(&format!("@llvm.amdgcn.s.getreg(i32 {imm})"))
            .count(),
        6,
        "{ir}"
    );
    // Only the late phase runs (as at -O0), so the name is resolved after the barrier IDs:
    // enter s (4), barrier between the pair (3), barrier_signal after the lone signal (1),
    // barrier_wait before the lone wait (2), the numeric exit, the named exit.
    assert_eq!(packed_headers(&ir, 20), [18, 12, 4, 8, 1, 1], "{ir}");
    // The numeric point keeps its legacy value, through M0 (no imm while packing).
    assert!(ir.contains("\"={m0},i,i\"(i32 20, i32 3)"), "{ir}");
    assert!(!ir.contains("s_ttracedata_imm"), "{ir}");
    assert!(!ir.contains("s.ttracedata.imm"), "{ir}");
    assert!(
        ir.contains("c\"M:shader_clock_bits=12;shader_clock_shift=4\\0AK:k\\0AU:4:s\\0AP:1:barrier_signal\\0AP:2:barrier_wait\\0AP:3:barrier\\0A\\00\""),
        "{ir}"
    );
}

#[test]
fn shift_and_bits_are_honoured() {
    let (ok, ir, err) = opt(
        "gfx1200",
        &[
            ("SQTT_SHADER_CLOCK_BITS", "8"),
            ("SQTT_SHADER_CLOCK_SHIFT", "6"),
        ],
    );
    assert!(ok, "{err}");
    let imm = (7 << 11) | (6 << 6) | 29;
    assert!(
        ir.contains(&format!("@llvm.amdgcn.s.getreg(i32 {imm})")),
        "{ir}"
    );
    assert_eq!(packed_headers(&ir, 24).len(), 6, "{ir}");
    assert!(
        ir.contains("M:shader_clock_bits=8;shader_clock_shift=6"),
        "{ir}"
    );
}

/// Every gfx12 target numbered after gfx1201 (gfx1202, gfx1250, gfx1251) packs the clock read by
/// `s_get_shader_cycles_u64`, AMD's pass's rule, where the assembler knows the instruction
/// (LLVM 22); before that their headers stay unpacked. IR from opt, then the ISA from llc for the
/// targets the llc under test knows (no LLVM here knows gfx1202 yet: its ISA is not checked).
#[test]
fn gfx12_after_1201_reads_the_64_bit_shader_cycles() {
    for cpu in ["gfx1202", "gfx1250", "gfx1251"] {
        let (ok, ir, err) = opt(cpu, &[("SQTT_SHADER_CLOCK_BITS", "12")]);
        assert!(ok, "{cpu}: {err}");
        assert!(!ir.contains("s.getreg"), "{cpu}: {ir}");
        if llvm_major() < 22 {
            // Before LLVM 22 the assembler rejects s_get_shader_cycles_u64 (llc-21: "invalid
            // instruction"): the headers stay unpacked, as on targets without a clock.
            assert!(!ir.contains("s_get_shader_cycles_u64"), "{cpu}: {ir}");
            assert!(!ir.contains("M:shader_clock"), "{cpu}: {ir}");
            continue;
        }
        assert_eq!(
            ir.matches("asm sideeffect \"s_get_shader_cycles_u64 $0\", \"=s\"()")
                .count(),
            6,
            "{cpu}: {ir}"
        );
        assert!(
            ir.contains("M:shader_clock_bits=12;shader_clock_shift=4"),
            "{cpu}: {ir}"
        );
        // The window: bits 4-15 of the low word, in the top 12 bits of the header.
        assert_eq!(packed_headers(&ir, 20), [18, 12, 4, 8, 1, 1], "{cpu}: {ir}");
        for known in llc_known_cpus(&[cpu]) {
            let insts = llc_objdump(&ir, known);
            let reads = count_matching(&insts, "s_get_shader_cycles_u64*");
            assert_eq!(reads, 6, "{cpu}:\n{}", insts.join("\n"));
            assert_eq!(count_matching(&insts, "s_ttracedata_imm*"), 0, "{cpu}");
        }
    }
}

#[test]
fn bits_zero_is_the_no_clock_layout_with_imm() {
    let (ok, ir, err) = opt("gfx1201", &[]);
    assert!(ok, "{err}");
    assert!(!ir.contains("s.getreg"), "{ir}");
    assert!(!ir.contains("M:shader_clock"), "{ir}");
    // barrier_signal 1, barrier_wait 2, barrier 3, enter s 4, numeric 20, exit.
    for v in [0x4, 0x8, 0xc, 0x12, 0x14, 0x1] {
        let form = imm_record_ir(v);
        assert!(ir.contains(&form), "{form}: {ir}");
    }
}

#[test]
fn targets_without_a_shader_clock_ignore_the_setting() {
    let (ok, ir, err) = opt("gfx1100", &[("SQTT_SHADER_CLOCK_BITS", "12")]);
    assert!(ok, "{err}");
    assert!(
        !ir.contains("s.getreg") && !ir.contains("M:shader_clock"),
        "{ir}"
    );
}

#[test]
fn a_payload_marker_meeting_packing_is_an_error() {
    let ir = r#"
target triple = "amdgcn-amd-amdhsa"
@.d = private unnamed_addr addrspace(4) constant [6 x i8] c"value\00"
declare void @__sqtt_named_marker_data(ptr, i32)
define amdgpu_kernel void @k(i32 %v) #0 {
  call void @__sqtt_named_marker_data(ptr addrspacecast (ptr addrspace(4) @.d to ptr), i32 %v)
  ret void
}
attributes #0 = { "target-cpu"="gfx1201" }
"#;
    let out = opt_sqtt(ir, &[("SQTT_SHADER_CLOCK_BITS", "12")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sqtt_marker_data(\"value\")") && err.contains("SQTT_SHADER_CLOCK_BITS=12"),
        "{err}"
    );
}

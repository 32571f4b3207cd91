//! sqtt-gfx's table against the LLVM under test (`SQTT_TEST_LLVM_SUFFIX`): every gfx processor
//! its llc lists has a row of the generation its name says, and the plugin instruments a named
//! marker on every gfx9-or-later one, in the record form its generation has; older ones are
//! refused with an error naming the processor.

use sqtt_e2e::toolchain::*;
use sqtt_gfx::{Generation, Target};

const KERNEL: &str = r#"
target triple = "amdgcn-amd-amdhsa"
@.s = private unnamed_addr addrspace(4) constant [2 x i8] c"s\00"
declare void @__sqtt_named_marker_enter(ptr)
declare void @__sqtt_named_marker_exit(ptr)
define amdgpu_kernel void @k(ptr addrspace(1) %p) #0 {
  call void @__sqtt_named_marker_enter(ptr addrspacecast (ptr addrspace(4) @.s to ptr))
  store i32 1, ptr addrspace(1) %p
  call void @__sqtt_named_marker_exit(ptr addrspacecast (ptr addrspace(4) @.s to ptr))
  ret void
}
attributes #0 = { "target-cpu"="CPU" }
"#;

const ENV: &[(&str, &str)] = &[("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")];

/// The gfx processors llc lists (generic targets aside), with the major their name gives.
fn llc_gfx() -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = llc_cpus()
        .into_iter()
        .filter(|c| c.starts_with("gfx") && !c.contains("generic"))
        .map(|c| {
            let major = c[3..c.len() - 2].parse().expect(&c);
            (c, major)
        })
        .collect();
    out.sort();
    out.dedup();
    assert!(out.iter().any(|(c, _)| c == "gfx90a"), "{out:?}");
    out
}

#[test]
fn every_processor_llc_knows_has_a_row_of_its_generation() {
    let mut missing = Vec::new();
    for (cpu, major) in llc_gfx() {
        let Some(want) = Generation::of_major(major) else {
            eprintln!("{cpu}: gfx{major} is no generation the project knows; not checked");
            continue;
        };
        match Target::lookup(&cpu) {
            Some(row) => assert_eq!(row.generation, want, "{cpu}"),
            None => missing.push(cpu),
        }
    }
    assert!(
        missing.is_empty(),
        "{} knows {missing:?}, which gfx/src/table.rs lacks",
        llvm_tool("llc")
    );
}

#[test]
fn the_plugin_instruments_every_gfx9_or_later_processor_in_its_generations_form() {
    for (cpu, _) in llc_gfx() {
        let Some(row) = Target::lookup(&cpu) else {
            continue;
        };
        let out = opt_sqtt(&KERNEL.replace("CPU", &cpu), ENV);
        let ir = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        if !row.generation.is_instrumented() {
            assert!(!out.status.success(), "{cpu}: {ir}");
            assert!(
                err.contains(&format!("target-cpu \"{cpu}\"")) && err.contains("gfx90a"),
                "{cpu}: {err}"
            );
            continue;
        }
        assert!(out.status.success(), "{cpu}: {err}");
        let imm: Vec<u32> = ir.lines().filter_map(imm_record_value).collect();
        let record = "\"s_mov_b32 m0, $1\\0As_nop $2\\0As_ttracedata\", \"={m0},i,i\"";
        let m0 = ir.matches(record).count();
        if row.generation.has_ttracedata_imm() {
            assert_eq!((imm.as_slice(), m0), (&[6, 1][..], 0), "{cpu}: {ir}");
        } else {
            assert_eq!((imm.len(), m0), (0, 2), "{cpu}: {ir}");
            let nop = row.generation.m0_trace_nop();
            assert!(
                ir.contains(&format!("{record}(i32 6, i32 {nop})")),
                "{cpu}: {ir}"
            );
        }
    }
}

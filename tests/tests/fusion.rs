//! Exit+enter fusion: an exit directly followed by an enter in the same block becomes one
//! `(id << 2) | 3` record; anything that is work between them keeps two markers, so the exit is
//! timed where the code left the scope. IR in, `opt` with the plugin (the late phase alone, as at
//! -O0, and both phases), the IR and the ISA from `llc` checked.

use sqtt_e2e::toolchain::*;

const ENV: &[(&str, &str)] = &[("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")];

/// A kernel: enter a, a store, exit a, BETWEEN, enter b (named by NAME), a store using USE, exit
/// b.
fn kernel(cpu: &str, between: &str, name: &str, after: &str) -> String {
    format!(
        r#"target triple = "amdgcn-amd-amdhsa"
@.a = private unnamed_addr addrspace(4) constant [2 x i8] c"a\00"
@.b = private unnamed_addr addrspace(4) constant [2 x i8] c"b\00"
declare void @__sqtt_named_marker_enter(ptr)
declare void @__sqtt_named_marker_exit(ptr)

define amdgpu_kernel void @k(ptr addrspace(1) %out, i32 %n) #0 {{
  %slot = alloca ptr, align 8, addrspace(5)
  %x.slot = alloca i32, align 4, addrspace(5)
  call void @__sqtt_named_marker_enter(ptr addrspacecast (ptr addrspace(4) @.a to ptr))
  store volatile i32 1, ptr addrspace(1) %out, align 4
  call void @__sqtt_named_marker_exit(ptr addrspacecast (ptr addrspace(4) @.a to ptr))
{between}
  call void @__sqtt_named_marker_enter({name})
{after}
  call void @__sqtt_named_marker_exit(ptr addrspacecast (ptr addrspace(4) @.b to ptr))
  ret void
}}
attributes #0 = {{ "target-cpu"="{cpu}" }}
"#
    )
}

const B: &str = "ptr addrspacecast (ptr addrspace(4) @.b to ptr)";
const STORE2: &str = "  store volatile i32 2, ptr addrspace(1) %out, align 4";

struct Case {
    what: &'static str,
    between: &'static str,
    name: &'static str,
    after: &'static str,
    fused: bool,
}

const CASES: &[Case] = &[
    Case {
        what: "directly adjacent",
        between: "",
        name: B,
        after: STORE2,
        fused: true,
    },
    Case {
        what: "the enter's name passed through a stack slot (what -O0 code does)",
        between: "  %s = addrspacecast ptr addrspace(5) %slot to ptr\n  \
                  store ptr addrspacecast (ptr addrspace(4) @.b to ptr), ptr %s, align 8\n  \
                  %name = load ptr, ptr %s, align 8",
        name: "ptr %name",
        after: STORE2,
        fused: true,
    },
    Case {
        what: "side-effect-free arithmetic between",
        between: "  %x = mul i32 %n, 3",
        name: B,
        after: "  store volatile i32 %x, ptr addrspace(1) %out, align 4",
        fused: false,
    },
    Case {
        what: "a store of user data into a stack slot between (-O0 `int x = n * 3;`)",
        between: "  %m = mul i32 %n, 3\n  store i32 %m, ptr addrspace(5) %x.slot, align 4",
        name: B,
        after: "  %l = load i32, ptr addrspace(5) %x.slot, align 4\n  \
                store volatile i32 %l, ptr addrspace(1) %out, align 4",
        fused: false,
    },
];

/// `opt -passes=PASSES` with the plugin.
fn opt(ir: &str, passes: &str) -> String {
    let o = opt_passes(ir, passes, ENV);
    assert!(
        o.status.success(),
        "opt failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The marker values of a disassembly, in order: `s_ttracedata_imm V`, or the `s_mov_b32 m0, V`
/// two instructions before an `s_ttracedata`.
fn marker_values(insts: &[String]) -> Vec<u32> {
    let mut out = Vec::new();
    for (i, inst) in insts.iter().enumerate() {
        if let Some(v) = inst.strip_prefix("s_ttracedata_imm 0x") {
            out.push(u32::from_str_radix(v.trim(), 16).unwrap());
        } else if inst == "s_ttracedata" {
            let v = insts[i - 2].strip_prefix("s_mov_b32 m0, ").unwrap();
            out.push(v.trim().parse().unwrap());
        }
    }
    out
}

#[test]
fn only_directly_adjacent_exit_and_enter_fuse() {
    for case in CASES {
        // enter a = 1<<2|2; then either exit+enter b = 2<<2|3, or exit = 1 and enter b = 2<<2|2;
        // exit b = 1.
        let want: Vec<u32> = if case.fused {
            vec![6, 11, 1]
        } else {
            vec![6, 1, 10, 1]
        };
        for passes in ["sqtt", "sqtt-early,sqtt"] {
            // IR: the late phase's records on gfx1030 (all fit s_ttracedata_imm).
            let ir = opt(
                &kernel("gfx1030", case.between, case.name, case.after),
                passes,
            );
            let got: Vec<u32> = ir.lines().filter_map(imm_record_value).collect();
            assert_eq!(got, want, "{}, {passes}:\n{ir}", case.what);
            assert!(!ir.contains("call void @__sqtt_named_marker_"), "{ir}");
            // ISA: the same values in machine code, through M0 on gfx90a.
            for cpu in ["gfx1030", "gfx90a"] {
                let ir = opt(&kernel(cpu, case.between, case.name, case.after), passes);
                let insts = llc_objdump(&ir, cpu);
                assert_eq!(
                    marker_values(&insts),
                    want,
                    "{}, {passes}, {cpu}:\n{}",
                    case.what,
                    insts.join("\n")
                );
            }
        }
    }
}

//! What a marker costs in real ISA (hipcc with the plugin, then llvm-objdump), with the scope
//! filter on and the default `SQTT_MEM_BARRIER=fence`:
//! - a run of consecutive markers shares one scope check: one conditional branch, and no branch
//!   or wait between its records;
//! - the check is inside the markers' asm (`s_cmp_eq_u32 sN, 0` / `s_cbranch_scc1` straight to
//!   the instruction after the run's records), so the kernel has exactly the basic blocks it has
//!   without the plugin;
//! - the fence's LDS wait appears only where an LDS operation may be in flight, and there it
//!   still comes between that operation and the marker (the ordering the fence is for);
//! - so against the same kernel built without the plugin, the markers add one branch per check
//!   and one wait in all;
//! - helpers that end at or below the function threshold leave the kernel's code exactly as
//!   without the plugin.

use sqtt_e2e::toolchain::*;

const KERNEL: &str = r#"
#include <hip/hip_runtime.h>
#include "markers.hpp"

__global__ void cost_kernel(int *out) {
  __shared__ int lds[256];
  int t = threadIdx.x;
  sqtt_marker_enter("run");
  sqtt_marker_point("run_b");
  sqtt_marker_point("run_c");
  lds[t] = out[t];
  sqtt_marker_point("after_lds_store");
  int v = lds[255 - t];
  out[t] = v + 1;
  sqtt_marker_exit("run");
}
"#;

const SYMBOL: &str = "_Z11cost_kernelPi";

fn kernel_isa(arch: &str, with_plugin: bool) -> Vec<String> {
    let scope = [("SQTT_SCOPE_CU", "0x1"), ("SQTT_SCOPE_SIMD", "0x1")];
    compiled_kernel(KERNEL, SYMBOL, arch, with_plugin.then_some(&scope[..]))
}

/// The instructions of kernel `symbol` in `source` built with hipcc -O3, with the plugin and
/// the settings `env`, or (`None`) without the plugin.
fn compiled_kernel(
    source: &str,
    symbol: &str,
    arch: &str,
    env: Option<&[(&str, &str)]>,
) -> Vec<String> {
    let mut out: Vec<String> = kernel_disassembly(source, symbol, arch, env)
        .iter()
        .flat_map(|l| objdump_instructions(l))
        .collect();
    // The alignment padding after s_endpgm.
    while out
        .last()
        .is_some_and(|i| i == "s_nop 0" || i == "s_code_end")
    {
        out.pop();
    }
    assert!(!out.is_empty(), "{symbol} has no instructions");
    out
}

/// The hipcc -O3 command for `source` in `dir` ([`compiled_kernel`]'s settings).
fn kernel_command(
    dir: &std::path::Path,
    source: &str,
    arch: &str,
    env: Option<&[(&str, &str)]>,
) -> std::process::Command {
    let src = dir.join("k.hip");
    std::fs::write(&src, source).unwrap();
    let mut c = if env.is_some() {
        hipcc_with_plugin(arch)
    } else {
        let mut c = plain_hipcc(arch);
        c.arg(format!("-I{}", markers_include().display()));
        c
    };
    c.args(["-O3", "--cuda-device-only", "--no-gpu-bundle-output"])
        .arg(&src);
    for (k, v) in env.unwrap_or_default() {
        c.env(k, v);
    }
    c
}

/// The llvm-objdump lines of kernel `symbol` (addresses and branch targets included), from its
/// label to the next one.
fn kernel_disassembly(
    source: &str,
    symbol: &str,
    arch: &str,
    env: Option<&[(&str, &str)]>,
) -> Vec<String> {
    let dir = workdir();
    let co = dir.path().join(format!("k-{arch}.o"));
    let mut c = kernel_command(dir.path(), source, arch, env);
    c.arg("-c").arg("-o").arg(&co);
    run_ok(&mut c);
    let dis = disassemble(&co, toolchain_arch(arch));
    let mut inside = false;
    let mut out = Vec::new();
    for line in dis.lines() {
        let t = line.trim();
        if t.ends_with(':') && t.contains('<') {
            inside = t.contains(&format!("<{symbol}>"));
            continue;
        }
        if inside && !objdump_instructions(line).is_empty() {
            out.push(line.to_string());
        }
    }
    assert!(!out.is_empty(), "{symbol} not found in:\n{dis}");
    out
}

/// The basic blocks of the assembly listing of `source` (one kernel): its `.LBB` labels and
/// `; %bb.` comments.
fn listing_blocks(source: &str, arch: &str, env: Option<&[(&str, &str)]>) -> usize {
    let dir = workdir();
    let s = dir.path().join(format!("k-{arch}.s"));
    let mut c = kernel_command(dir.path(), source, arch, env);
    c.arg("-S").arg("-o").arg(&s);
    run_ok(&mut c);
    let listing = std::fs::read_to_string(&s).unwrap();
    listing
        .lines()
        .filter(|l| l.starts_with(".LBB") || l.starts_with("; %bb."))
        .count()
}

/// An objdump line's address, and its branch target if it has one (`<sym+0x48>`), as offsets.
fn address_and_target(line: &str) -> (u64, Option<u64>) {
    let hex = |t: &str| u64::from_str_radix(t, 16).unwrap_or_else(|e| panic!("{t}: {e}"));
    let comment = line.split("//").nth(1).expect("an address comment");
    let addr = hex(comment.trim().split(':').next().unwrap().trim());
    let target = comment
        .split("+0x")
        .nth(1)
        .map(|t| t.trim_end_matches(|c: char| c == '>' || c.is_whitespace()));
    // The target is relative to the symbol; the address is absolute: the caller aligns them.
    (addr, target.map(hex))
}

fn is_record(i: &str) -> bool {
    i.starts_with("s_ttracedata")
}

fn is_branch(i: &str) -> bool {
    i.starts_with("s_cbranch") || i.starts_with("s_branch")
}

fn is_lds_wait(i: &str) -> bool {
    (i.starts_with("s_waitcnt") && i.contains("lgkmcnt(0)")) || i == "s_wait_dscnt 0x0"
}

fn is_lds_store(i: &str) -> bool {
    i.starts_with("ds_write") || i.starts_with("ds_store")
}

fn arches() -> Vec<&'static str> {
    if llvm_major() >= 19 {
        vec!["gfx90a", "gfx1100"]
    } else {
        vec!["gfx90a", "gfx1030"]
    }
}

#[test]
fn a_run_of_markers_shares_one_scope_check() {
    for arch in arches() {
        let isa = kernel_isa(arch, true);
        let records: Vec<usize> = (0..isa.len()).filter(|i| is_record(&isa[*i])).collect();
        assert_eq!(records.len(), 5, "{arch}:\n{}", isa.join("\n"));
        // enter run, point run_b, point run_c: one block, nothing between but their records.
        let run = &isa[records[0]..=records[2]];
        assert!(
            !run.iter().any(|i| is_branch(i) || is_lds_wait(i)),
            "{arch}: a branch or wait inside the run:\n{}",
            run.join("\n")
        );
        // Entered through one conditional branch.
        assert!(
            isa[..records[0]]
                .iter()
                .rev()
                .take(6)
                .any(|i| i.starts_with("s_cbranch")),
            "{arch}: no scope check before the run:\n{}",
            isa.join("\n")
        );
        // Three checks in all (the run, after_lds_store, the exit): the plain kernel has no
        // branch.
        let plain = kernel_isa(arch, false);
        let branches = |v: &[String]| v.iter().filter(|i| is_branch(i)).count();
        assert_eq!(
            branches(&isa) - branches(&plain),
            3,
            "{arch}:\n{}",
            isa.join("\n")
        );
    }
}

/// The scope check lives in the records' asm: no basic block more than without the plugin (the
/// CFG form added two per run of markers), and each record follows its run's
/// `s_cmp_eq_u32 sN, 0` / `s_cbranch_scc1`, whose target is the instruction right after the
/// run's last record.
#[test]
fn the_scope_check_adds_no_basic_block() {
    for arch in arches() {
        let scope = [("SQTT_SCOPE_CU", "0x1"), ("SQTT_SCOPE_SIMD", "0x1")];
        assert_eq!(
            listing_blocks(KERNEL, arch, Some(&scope)),
            listing_blocks(KERNEL, arch, None),
            "{arch}: basic blocks with the plugin, without"
        );
        let lines = kernel_disassembly(KERNEL, SYMBOL, arch, Some(&scope));
        let insts: Vec<String> = lines
            .iter()
            .map(|l| objdump_instructions(l).remove(0))
            .collect();
        let base = address_and_target(&lines[0]).0;
        let mut runs = 0;
        let mut i = 0;
        while i < insts.len() {
            if !is_record(&insts[i]) {
                i += 1;
                continue;
            }
            // The run: records and their M0 writes and nops, up to the next other instruction.
            let start = i;
            let mut end = i;
            while end < insts.len()
                && (is_record(&insts[end])
                    || insts[end].starts_with("s_mov_b32 m0,")
                    || insts[end].starts_with("s_nop"))
            {
                end += 1;
            }
            let first = insts[..start]
                .iter()
                .rposition(|x| !x.starts_with("s_mov_b32 m0,") && !x.starts_with("s_nop"))
                .unwrap();
            let listing = insts.join("\n");
            assert!(
                first >= 1
                    && insts[first].starts_with("s_cbranch_scc1")
                    && insts[first - 1].starts_with("s_cmp_eq_u32 s")
                    && insts[first - 1].ends_with(", 0"),
                "{arch}: the run at {start} is not behind its check:\n{listing}"
            );
            let target = address_and_target(&lines[first])
                .1
                .expect("a branch target");
            let after = address_and_target(&lines[end]).0 - base;
            assert_eq!(
                target, after,
                "{arch}: the check of the run at {start} does not jump past it:\n{listing}"
            );
            runs += 1;
            i = end;
        }
        assert_eq!(runs, 3, "{arch}:\n{}", insts.join("\n"));
    }
}

#[test]
fn the_lds_wait_is_only_where_an_lds_operation_may_be_in_flight() {
    for arch in arches() {
        let isa = kernel_isa(arch, true);
        let records: Vec<usize> = (0..isa.len()).filter(|i| is_record(&isa[*i])).collect();
        assert_eq!(records.len(), 5, "{arch}:\n{}", isa.join("\n"));
        // The marker after the LDS store is ordered after it: a wait between the two.
        let store = isa[..records[3]]
            .iter()
            .rposition(|i| is_lds_store(i))
            .unwrap_or_else(|| {
                panic!(
                    "{arch}: no LDS store before the marker:\n{}",
                    isa.join("\n")
                )
            });
        assert!(
            isa[store..records[3]].iter().any(|i| is_lds_wait(i)),
            "{arch}: the marker after the LDS store does not wait for it:\n{}",
            isa[store..=records[3]].join("\n")
        );
        // One wait more than the plain kernel's, that one.
        let plain = kernel_isa(arch, false);
        let waits = |v: &[String]| v.iter().filter(|i| is_lds_wait(i)).count();
        assert!(
            waits(&isa) <= waits(&plain) + 1,
            "{arch}: {} LDS waits with markers, {} without:\n{}",
            waits(&isa),
            waits(&plain),
            isa.join("\n")
        );
    }
}

/// Every feature on (functions, barriers, memory groups, a payload, the scope filter, the
/// default fence): no asm the plugin makes names a clobber. LLVM resolves `~{scc}`, `~{m0}` or
/// `~{memory}` by comparing the name with every register of every class, in ISel, per asm:
/// most of what the markers cost llc (ci/bench-pass.sh). SCC and M0 are outputs instead.
#[test]
fn the_markers_asm_names_no_clobber() {
    const SOURCE: &str = r#"
#include <hip/hip_runtime.h>
#include "markers.hpp"

__global__ void busy_kernel(int *out, const int *in) {
  __shared__ int lds[256];
  int t = threadIdx.x;
  sqtt_marker_enter("load");
  lds[t] = in[t];
  __syncthreads();
  sqtt_marker_data("value", lds[255 - t]);
  out[t] = lds[255 - t] + in[t + 256];
  sqtt_marker_exit("load");
}
"#;
    let env = [
        ("SQTT_SCOPE_CU", "0x1"),
        ("SQTT_SCOPE_SIMD", "0x1"),
        ("SQTT_INSTRUMENT_FUNCTIONS", "1"),
        ("SQTT_INSTRUMENT_BARRIERS", "1"),
        ("SQTT_INSTRUMENT_MEMORY", "2:5"),
    ];
    for arch in arches() {
        let dir = workdir();
        let ll = dir.path().join("k.ll");
        let mut c = kernel_command(dir.path(), SOURCE, arch, Some(&env));
        c.args(["-S", "-emit-llvm", "-o"]).arg(&ll);
        run_ok(&mut c);
        let ir = std::fs::read_to_string(&ll).unwrap();
        let asms: Vec<&str> = ir
            .lines()
            .filter(|l| l.contains("asm sideeffect") && l.contains("!sqtt.marker"))
            .collect();
        let checks = asms.iter().filter(|l| l.contains("s_cbranch_scc1")).count();
        assert!(checks >= 4, "{arch}: {checks} scope-checked asms:\n{ir}");
        for l in &asms {
            assert!(!l.contains("~{"), "{arch}: a clobber in\n{l}");
            if l.contains("s_cbranch_scc1") {
                assert!(l.contains("={scc}"), "{arch}: SCC is not an output in\n{l}");
            }
            if l.contains("s_mov_b32 m0") {
                assert!(l.contains("\"={m0}"), "{arch}: M0 is not an output in\n{l}");
            }
        }
    }
}

/// Helpers that end at or below the function threshold get no markers, and the placeholders the
/// early phase would give them must not change the code meanwhile: a leaf (its size settled
/// before optimisation) gets none, a helper with a loop loses them as soon as it is inlined away.
/// Each sits between a store and the store that overwrites it; a side-effecting placeholder
/// there keeps the first (dead) store alive through the IR optimiser.
const SMALL_HELPERS: &str = r#"
#include <hip/hip_runtime.h>

__device__ int scale(int a, int b) { return a * b + 1; }

template <typename T> __device__ T spread(T n) {
  T s = 0;
  for (T i = 0; i < n; ++i)
    s += i ^ n;
  return s;
}

__global__ void small_helpers(int *out, int n) {
  int t = threadIdx.x;
  out[t] = n;
  int v = scale(n, t);
  out[t] = v;
  out[t + 64] = n;
  out[t + 64] = spread(v & 7);
}
"#;

#[test]
fn helpers_below_the_threshold_leave_the_code_as_without_the_plugin() {
    for arch in arches() {
        let plain = compiled_kernel(SMALL_HELPERS, "_Z13small_helpersPii", arch, None);
        let env = [("SQTT_INSTRUMENT_FUNCTIONS", "cost:200")];
        let isa = compiled_kernel(SMALL_HELPERS, "_Z13small_helpersPii", arch, Some(&env));
        assert_eq!(
            isa,
            plain,
            "{arch}: with the plugin:\n{}\n\nwithout:\n{}",
            isa.join("\n"),
            plain.join("\n")
        );
    }
}

/// The same for plain C device code through `clang` (every LLVM a lane has): a helper with a
/// loop, inlined away, must not keep the dead store before its call.
const C_HELPER: &str = r#"
static int spread(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i)
    s += i ^ n;
  return s;
}
__attribute__((noinline)) void entry(int *out, int n) {
  out[0] = n;
  out[0] = spread(n & 7);
}
"#;

/// The IR stores of `entry` built by clang -O3 for gfx1030, with the plugin (and `env`) or not.
fn c_entry_stores(with_plugin: bool) -> usize {
    let dir = workdir();
    let src = dir.path().join("h.c");
    std::fs::write(&src, C_HELPER).unwrap();
    let out = dir.path().join("h.ll");
    let mut c = std::process::Command::new(llvm_tool("clang"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SQTT_") {
            c.env_remove(k);
        }
    }
    c.args(["-x", "c", "-nogpulib", "-O3", "--target=amdgcn-amd-amdhsa"])
        .arg(format!("-mcpu={}", toolchain_arch("gfx1030")))
        .args(["-S", "-emit-llvm"])
        .arg(&src)
        .arg("-o")
        .arg(&out);
    if with_plugin {
        c.arg(format!("-fpass-plugin={}", plugin_path().display()))
            .env("SQTT_INSTRUMENT_FUNCTIONS", "cost:200");
    }
    run_ok(&mut c);
    let ir = std::fs::read_to_string(&out).unwrap();
    let body = ir
        .split("define ")
        .find(|f| f.contains("@entry("))
        .unwrap_or_else(|| panic!("no @entry in:\n{ir}"));
    body.lines()
        .take_while(|l| *l != "}")
        .filter(|l| l.trim_start().starts_with("store "))
        .count()
}

#[test]
fn a_small_helper_inlined_away_leaves_no_placeholder_behind() {
    assert_eq!(c_entry_stores(true), c_entry_stores(false));
}

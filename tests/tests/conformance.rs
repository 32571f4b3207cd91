//! Conformance suite of the automatic instrumentation (docs/format.md): table-driven cases of kernel
//! source + settings + expectations on the ISA, the funcmap or the error printed, each compiled
//! by the real hipcc with the plugin for the listed arches and optimisation levels.

use std::process::Command;

use sqtt_e2e::toolchain::*;
use sqtt_markers::Funcmap;

/// What a case expects.
enum Expect {
    /// These instructions appear consecutively in the kernel or function named (`a|b`: the first
    /// of these symbols the output defines, for runtime functions whose mangled name changed
    /// between HIP versions).
    Seq(&'static str, &'static [&'static str]),
    /// So many instructions of the function match the pattern.
    Count(&'static str, &'static str, usize),
    /// The funcmap has exactly these rows.
    Funcmap(&'static str),
    /// The funcmap has this row.
    Row(&'static str),
    /// The funcmap has no row containing this.
    NoRow(&'static str),
    /// The compile fails with this in stderr.
    Error(&'static str),
    /// These `KIND:name` markers exist and their IDs increase in this order.
    IdOrder(&'static [&'static str]),
}

struct Case {
    name: &'static str,
    source: &'static str,
    env: &'static [(&'static str, &'static str)],
    arches: &'static [&'static str],
    opts: &'static [&'static str],
    expect: &'static [Expect],
}

const HEADER: &str = "#include <hip/hip_runtime.h>\n#include \"markers.hpp\"\n";

const ONE_SCOPE: &str = r#"
__global__ void k(int *p) {
  sqtt_marker_enter("s");
  p[threadIdx.x] = 1;
  sqtt_marker_exit("s");
}
"#;

const FUNCTIONS: &str = r#"
__device__ float tiny(float x) { return x + 1.0f; }
__device__ __attribute__((noinline)) float heavy(float *p, int n) {
  float r = 0;
  for (int i = 0; i < n; i++) r += p[i] * p[i + 1] / (p[i + 2] + 1.0f);
  return r;
}
__device__ float inlined_medium(float *p, int i) {
  float a = p[i], b = p[i + 1], c = p[i + 2], d = p[i + 3];
  return a * b + c * d - a / (b + 1.0f) + c / (d + 2.0f);
}
__global__ void k(float *out, float *in, int n) {
  int i = threadIdx.x;
  out[i] = heavy(in, n) + tiny(in[i]) + inlined_medium(in, i);
}
"#;

const COST: &str = r#"
__device__ float loads(float *p, int i) { return p[i] + p[i + 64] + p[i + 128]; }
__global__ void k(float *out, float *in) { out[threadIdx.x] = loads(in, threadIdx.x); }
"#;

const BARRIER: &str = r#"
__global__ void k(int *p) {
  __shared__ int s[64];
  s[threadIdx.x] = p[threadIdx.x];
  __syncthreads();
  p[threadIdx.x] = s[63 - threadIdx.x];
}
"#;

const EVERYTHING: &str = r#"
__device__ __attribute__((noinline)) float body(float *p, int n) {
  float r = 0;
  for (int i = 0; i < n; i++) r += p[i] * p[(i * 7) % n] + p[(i * 5) % n] / (p[(i * 3) % n] + 1.0f);
  return r;
}
__global__ void k(float *out, float *in, int n) {
  __shared__ float s[256];
  sqtt_marker_enter("load");
  s[threadIdx.x] = in[threadIdx.x];
  sqtt_marker_exit("load");
  sqtt_marker_enter("wait");
  __syncthreads();
  sqtt_marker_exit("wait");
  sqtt_marker_point("compute");
  float v = body(in, n) + s[255 - threadIdx.x];
  sqtt_marker_data("value", (uint32_t)n);
  out[threadIdx.x] = v;
}
"#;

const FREQUENT: &str = r#"
__device__ __attribute__((noinline)) float once(float *p, int n) {
  float r = 0;
  for (int i = 0; i < n; i++) r += p[i] / (p[i + 1] + 3.0f);
  return r;
}
__device__ float often(float *p, int i) {
  float a = p[i], b = p[i + 1], c = p[i + 2];
  return a * b + b * c + c / (a + 1.0f) + a / (c + 2.0f);
}
__global__ void k(float *out, float *in, int n) {
  int i = threadIdx.x;
  out[i] = once(in, n) + often(in, i) + often(in, i + 4) + often(in, i + 8);
}
"#;

const MATH: &str = r#"
__global__ void k(float *p) { p[threadIdx.x] = sinf(p[threadIdx.x]) + expf(p[threadIdx.x + 1]); }
"#;

const NO_SCOPE: &[(&str, &str)] = &[("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")];

/// One setting on top of [`NO_SCOPE`]: the bare marker sequences of the IR tests below.
fn bare_with<'a>(setting: &'a str, value: &'a str) -> [(&'a str, &'a str); 3] {
    [(setting, value), NO_SCOPE[0], NO_SCOPE[1]]
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "none mode, small ID, no scope check: one s_ttracedata_imm between sched_barriers",
            source: ONE_SCOPE,
            env: NO_SCOPE,
            arches: &["gfx1030", "gfx1100"],
            opts: &["-O0", "-O3"],
            expect: &[
                Expect::Seq("_Z1kPi", &["sched_barrier", "s_ttracedata_imm 0x6", "sched_barrier"]),
                Expect::Seq("_Z1kPi", &["sched_barrier", "s_ttracedata_imm 0x1", "sched_barrier"]),
                Expect::Count("_Z1kPi", "s_ttracedata*", 2),
                Expect::Count("_Z1kPi", "s_mov_b32 m0*", 0),
                Expect::Funcmap("K:_Z1kPi\nU:1:s\n"),
            ],
        },
        Case {
            name: "gfx9 has no s_ttracedata_imm: M0, s_nop 0, s_ttracedata",
            source: ONE_SCOPE,
            env: NO_SCOPE,
            arches: &["gfx90a", "gfx940"],
            opts: &["-O3"],
            expect: &[
                Expect::Seq("_Z1kPi", &["sched_barrier", "s_mov_b32 m0, 6", "s_nop 0", "s_ttracedata", "sched_barrier"]),
                Expect::Seq("_Z1kPi", &["s_mov_b32 m0, 1", "s_nop 0", "s_ttracedata"]),
                Expect::Count("_Z1kPi", "s_ttracedata_imm*", 0),
            ],
        },
        Case {
            name: "gfx9 at -O0: the M0 sequence is one unit, the constant an immediate",
            source: ONE_SCOPE,
            env: NO_SCOPE,
            arches: &["gfx90a", "gfx940"],
            opts: &["-O0"],
            expect: &[
                Expect::Seq("_Z1kPi", &["s_mov_b32 m0, 6", "s_nop 0", "s_ttracedata"]),
                Expect::Seq("_Z1kPi", &["s_mov_b32 m0, 1", "s_nop 0", "s_ttracedata"]),
                Expect::Count("_Z1kPi", "s_ttracedata", 2),
                Expect::Count("_Z1kPi", "s_ttracedata_imm*", 0),
            ],
        },
        Case {
            name: "function threshold: instruction count; kernels get K: rows only; small functions none",
            source: FUNCTIONS,
            env: &[("SQTT_INSTRUMENT_FUNCTIONS", "10"), ("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")],
            arches: &["gfx90a", "gfx1100"],
            opts: &["-O0", "-O3"],
            expect: &[
                Expect::Row("K:_Z1kPfS_i"),
                Expect::Row(":_Z5heavyPfi"),
                Expect::Row(":_Z14inlined_mediumPfi"),
                Expect::NoRow("tiny"),
                Expect::NoRow("F:_Z1kPfS_i"),
            ],
        },
        Case {
            name: "a pure exit is s_ttracedata_imm 0x1 on RDNA whatever the function ID",
            source: FUNCTIONS,
            env: &[("SQTT_INSTRUMENT_FUNCTIONS", "10"), ("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")],
            arches: &["gfx1030"],
            opts: &["-O3"],
            expect: &[
                Expect::Seq("_Z5heavyPfi", &["sched_barrier", "s_ttracedata_imm 0x1", "sched_barrier"]),
                Expect::Count("_Z5heavyPfi", "s_ttracedata_imm 0x*", 2),
            ],
        },
        Case {
            name: "cost model: global loads weigh 10, so cost:20 instruments what count 10 does not",
            source: COST,
            env: &[("SQTT_INSTRUMENT_FUNCTIONS", "cost:20"), ("SQTT_SCOPE_CU", "-1")],
            arches: &["gfx90a"],
            opts: &["-O0", "-O3"],
            expect: &[Expect::Row("F:1:_Z5loadsPfi")],
        },
        Case {
            name: "count model on the same code stays below a threshold the cost model passes",
            source: COST,
            env: &[("SQTT_INSTRUMENT_FUNCTIONS", "40"), ("SQTT_SCOPE_CU", "-1")],
            arches: &["gfx90a"],
            opts: &["-O3"],
            expect: &[Expect::Funcmap("K:_Z1kPfS_\n")],
        },
        Case {
            name: "__syncthreads gets the barrier point marker right before s_barrier",
            source: BARRIER,
            env: &[("SQTT_INSTRUMENT_BARRIERS", "1"), ("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")],
            arches: &["gfx1030", "gfx90a"],
            opts: &["-O3"],
            expect: &[
                Expect::Funcmap("K:_Z1kPi\nP:1:barrier_signal\nP:2:barrier_wait\nP:3:barrier\n"),
                Expect::Count("_Z1kPi", "s_barrier", 1),
            ],
        },
        Case {
            name: "at -O0 __syncthreads is a call: the barrier marker sits in the runtime's function",
            source: BARRIER,
            env: &[("SQTT_INSTRUMENT_BARRIERS", "1"), ("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")],
            arches: &["gfx90a"],
            opts: &["-O0"],
            expect: &[
                Expect::Funcmap("K:_Z1kPi\nP:1:barrier_signal\nP:2:barrier_wait\nP:3:barrier\n"),
                // HIP 5.2's runtime function; HIP 6.4 (hipcc 7.0.2) dropped the scope argument.
                Expect::Seq("_ZL20__work_group_barrierj14__memory_scope|_ZL20__work_group_barrierj", &["s_mov_b32 m0, 12", "s_nop 0", "s_ttracedata", "*", "s_barrier"]),
            ],
        },
        Case {
            name: "barrier marker on RDNA: imm point 3 directly before s_barrier",
            source: BARRIER,
            env: &[("SQTT_INSTRUMENT_BARRIERS", "1"), ("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")],
            arches: &["gfx1030"],
            opts: &["-O3"],
            expect: &[Expect::Seq("_Z1kPi", &["s_ttracedata_imm 0xc", "sched_barrier", "*", "s_barrier"])],
        },
        Case {
            name: "memory markers: vmem_load / vmem_store after barrier IDs",
            source: BARRIER,
            env: &[("SQTT_INSTRUMENT_BARRIERS", "1"), ("SQTT_INSTRUMENT_MEMORY", "1:0"), ("SQTT_SCOPE_CU", "-1")],
            arches: &["gfx90a"],
            opts: &["-O3"],
            expect: &[
                Expect::Funcmap("K:_Z1kPi\nP:1:barrier_signal\nP:2:barrier_wait\nP:3:barrier\nP:4:vmem_load\nP:5:vmem_store\n"),
                // Each marker after the last operation of its group (as AMD's pass places it).
                Expect::Seq("_Z1kPi", &["global_load_dword*", "*", "s_mov_b32 m0, 16", "s_nop 0", "s_ttracedata", "*", "s_barrier"]),
                Expect::Seq("_Z1kPi", &["global_store_dword*", "*", "s_mov_b32 m0, 20", "s_nop 0", "s_ttracedata"]),
                Expect::Count("_Z1kPi", "s_ttracedata", 3),
            ],
        },
        Case {
            name: "scope filtering on by default (CU 0x3): one s_getreg, each marker checks it in its asm",
            source: ONE_SCOPE,
            env: &[],
            arches: &["gfx90a", "gfx1100"],
            opts: &["-O0", "-O3"],
            expect: &[
                Expect::Count("_Z1kPi", "s_getreg_b32 s*, hwreg(HW_REG_HW_ID*", 1),
                Expect::Count("_Z1kPi", "s_cmp_eq_u32 s*, 0", 2),
                Expect::Count("_Z1kPi", "s_cbranch_scc1 .Lsqtt_skip*", 2),
                Expect::Count("_Z1kPi", "sched_barrier", 4),
            ],
        },
        Case {
            name: "compaction: the function emitted most often gets the smallest ID",
            source: FREQUENT,
            env: &[("SQTT_INSTRUMENT_FUNCTIONS", "10"), ("SQTT_SCOPE_CU", "-1")],
            arches: &["gfx1100"],
            opts: &["-O3"],
            expect: &[Expect::Row("F:1:_Z5oftenPfi"), Expect::Row("F:2:_Z4oncePfi")],
        },
        Case {
            name: "device-library internals are never instrumented",
            source: MATH,
            env: &[("SQTT_INSTRUMENT_FUNCTIONS", "1"), ("SQTT_SCOPE_CU", "-1")],
            arches: &["gfx90a"],
            opts: &["-O0", "-O3"],
            expect: &[Expect::NoRow("__ocml"), Expect::NoRow("__ockl"), Expect::NoRow("sinf"), Expect::NoRow("F:")],
        },
        Case {
            name: "everything together: IDs in the spec's order and a valid funcmap",
            source: EVERYTHING,
            env: &[
                ("SQTT_INSTRUMENT_FUNCTIONS", "cost:50"),
                ("SQTT_INSTRUMENT_BARRIERS", "1"),
                ("SQTT_INSTRUMENT_MEMORY", "2:5"),
                ("SQTT_SCOPE_CU", "0x1"),
                ("SQTT_SCOPE_SIMD", "0x1"),
            ],
            arches: &["gfx90a", "gfx1030", "gfx1100", "gfx940"],
            opts: &["-O3"],
            expect: &[
                Expect::Row(":_Z4bodyPfi"),
                Expect::Row("R:"),
                // Names resolved by the early phase are compacted with the functions, ahead of
                // the system IDs.
                Expect::IdOrder(&["U:load", "U:wait", "P:compute", "P:value", "P:barrier_signal", "P:barrier_wait", "P:barrier", "P:vmem_load", "P:vmem_store"]),
                Expect::IdOrder(&["F:_Z4bodyPfi", "P:barrier_signal"]),
            ],
        },
        Case {
            name: "everything together at -O0: only the late phase runs, so the IDs go in AMD's -O0 order (barrier and memory IDs, then function by function its names and its own ID)",
            source: EVERYTHING,
            env: &[
                ("SQTT_INSTRUMENT_FUNCTIONS", "cost:50"),
                ("SQTT_INSTRUMENT_BARRIERS", "1"),
                ("SQTT_INSTRUMENT_MEMORY", "2:5"),
                ("SQTT_SCOPE_CU", "0x1"),
                ("SQTT_SCOPE_SIMD", "0x1"),
            ],
            arches: &["gfx90a", "gfx1030", "gfx1100", "gfx940"],
            opts: &["-O0"],
            expect: &[
                Expect::Row(":_Z4bodyPfi"),
                Expect::Row("R:"),
                // `body` comes first in the module: its ID, then the kernel's names.
                Expect::IdOrder(&["P:barrier_signal", "P:barrier_wait", "P:barrier", "P:vmem_load", "P:vmem_store", "F:_Z4bodyPfi", "U:load", "U:wait", "P:compute", "P:value"]),
            ],
        },
        Case {
            name: "SQTT_TRACE_ADDRESSES with SQTT_INSTRUMENT_MEMORY is an error",
            source: ONE_SCOPE,
            env: &[("SQTT_TRACE_ADDRESSES", "memory"), ("SQTT_INSTRUMENT_MEMORY", "2:5")],
            arches: &["gfx90a"],
            opts: &["-O3"],
            expect: &[Expect::Error("SQTT_TRACE_ADDRESSES=memory and SQTT_INSTRUMENT_MEMORY=2:5 are mutually exclusive")],
        },
        Case {
            name: "a bad threshold is an error naming the variable",
            source: ONE_SCOPE,
            env: &[("SQTT_INSTRUMENT_FUNCTIONS", "cost:lots")],
            arches: &["gfx1030"],
            opts: &["-O0"],
            expect: &[Expect::Error("SQTT_INSTRUMENT_FUNCTIONS has the invalid value \"cost:lots\"")],
        },
    ]
}

fn run_case(case: &Case, arch: &str, opt: &str) -> Result<(), String> {
    let dir = workdir();
    let src = dir.path().join("k.hip");
    std::fs::write(&src, format!("{HEADER}{}", case.source)).unwrap();
    let out = dir.path().join("k.s");
    let mut c: Command = hipcc_with_plugin(arch);
    c.args(["--cuda-device-only", "-S", opt])
        .arg(&src)
        .arg("-o")
        .arg(&out);
    c.envs(case.env.iter().copied());
    let res = run(&mut c);
    let stderr = String::from_utf8_lossy(&res.stderr).into_owned();
    let errors: Vec<&str> = case
        .expect
        .iter()
        .filter_map(|e| match e {
            Expect::Error(s) => Some(*s),
            _ => None,
        })
        .collect();
    if !errors.is_empty() {
        if res.status.success() {
            return Err("expected the compile to fail".into());
        }
        for e in errors {
            if !stderr.contains(e) {
                return Err(format!("stderr lacks {e:?}:\n{stderr}"));
            }
        }
        return Ok(());
    }
    if !res.status.success() {
        return Err(format!("compile failed:\n{stderr}"));
    }
    let asm = std::fs::read_to_string(&out).unwrap();
    let map_text = funcmap_from_asm(&asm).ok_or("no .sqtt_funcmap in the output")?;
    let map = Funcmap::parse_str(&map_text).map_err(|e| e.to_string())?;
    let problems = map.validate();
    if !problems.is_empty() {
        return Err(format!("funcmap invalid: {problems:?}\n{map_text}"));
    }
    let rows: Vec<&str> = map_text.lines().collect();
    for e in case.expect {
        match e {
            Expect::Seq(f, seq) => {
                let f = defined_symbol(&asm, f);
                let insts = function_instructions(&asm, f);
                if !contains_any_gap_sequence(&insts, seq) {
                    return Err(format!(
                        "{f}: sequence {seq:?} not found in\n{}",
                        insts.join("\n")
                    ));
                }
            }
            Expect::Count(f, pat, n) => {
                let f = defined_symbol(&asm, f);
                let insts = function_instructions(&asm, f);
                let got = count_matching(&insts, pat);
                if got != *n {
                    return Err(format!(
                        "{f}: {got} instructions match {pat:?}, expected {n}:\n{}",
                        insts.join("\n")
                    ));
                }
            }
            Expect::Funcmap(want) => {
                if map_text != *want {
                    return Err(format!("funcmap is\n{map_text}\nexpected\n{want}"));
                }
            }
            Expect::Row(part) => {
                if !rows.iter().any(|r| r.contains(part)) {
                    return Err(format!("no funcmap row contains {part:?}:\n{map_text}"));
                }
            }
            Expect::NoRow(part) => {
                // "F:name" means an F: row of that function, whatever its ID.
                let hit = |r: &&str| match part.strip_prefix("F:") {
                    Some(name) if !name.is_empty() => {
                        r.starts_with("F:")
                            && r.split(':')
                                .nth(2)
                                .is_some_and(|n| n.split('@').next() == Some(name))
                    }
                    _ => r.contains(part),
                };
                if rows.iter().any(hit) {
                    return Err(format!("a funcmap row contains {part:?}:\n{map_text}"));
                }
            }
            Expect::IdOrder(names) => {
                let mut last = 0;
                for n in names.iter() {
                    let (kind, name) = n.split_once(':').unwrap();
                    let id = map
                        .entries
                        .iter()
                        .find(|e| e.kind.prefix().to_string() == kind && e.name == name)
                        .and_then(|e| e.id)
                        .ok_or_else(|| format!("no {n} in\n{map_text}"))?;
                    if id <= last {
                        return Err(format!("{n} has ID {id}, not above {last}:\n{map_text}"));
                    }
                    last = id;
                }
            }
            Expect::Error(_) => unreachable!(),
        }
    }
    Ok(())
}

/// The first of the `|`-separated symbols that the assembly defines (the last one when none is).
fn defined_symbol<'a>(asm: &str, names: &'a str) -> &'a str {
    let mut last = names;
    for n in names.split('|') {
        last = n;
        if asm
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{n}:")))
        {
            return n;
        }
    }
    last
}

/// Like [`contains_sequence`], where a lone `*` element stands for any number of instructions.
fn contains_any_gap_sequence(insts: &[String], seq: &[&str]) -> bool {
    fn at(insts: &[String], seq: &[&str]) -> bool {
        match seq.split_first() {
            None => true,
            Some((&"*", rest)) => (0..=insts.len()).any(|k| at(&insts[k..], rest)),
            Some((p, rest)) => !insts.is_empty() && matches(&insts[0], p) && at(&insts[1..], rest),
        }
    }
    (0..insts.len()).any(|start| at(&insts[start..], seq))
}

#[test]
fn conformance_suite() {
    let cases = cases();
    let jobs: Vec<(usize, &str, &str)> = cases
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            c.arches
                .iter()
                .flat_map(move |a| c.opts.iter().map(move |o| (i, *a, *o)))
        })
        .collect();
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let j = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(&(i, arch, opt)) = jobs.get(j) else {
                    break;
                };
                if let Err(e) = run_case(&cases[i], arch, opt) {
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("[{}] {arch} {opt}: {e}", cases[i].name));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        jobs.len(),
        failures.join("\n\n")
    );
    eprintln!("conformance: {} cases passed", jobs.len());
}

/// The memory example of docs/settings.md: N=2, M=5 over load load store load load load gives four
/// markers: vmem_load (loads 1-2), vmem_store (store 3), vmem_load (loads 4-5), vmem_load (6).
#[test]
fn memory_grouping_matches_the_spec_example() {
    let ir = r#"
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @k(ptr addrspace(1) %p) #0 {
  %a = load volatile i32, ptr addrspace(1) %p
  %b = load volatile i32, ptr addrspace(1) %p
  store volatile i32 %a, ptr addrspace(1) %p
  %c = load volatile i32, ptr addrspace(1) %p
  %d = load volatile i32, ptr addrspace(1) %p
  %e = load volatile i32, ptr addrspace(1) %p
  %s = add i32 %b, %c
  %t = add i32 %d, %e
  %u = add i32 %s, %t
  store i32 %u, ptr addrspace(3) null
  ret void
}
attributes #0 = { "target-cpu"="gfx1030" }
"#;
    let out = opt_sqtt_ok(ir, &bare_with("SQTT_INSTRUMENT_MEMORY", "2:5"));
    let events: Vec<String> = out
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            if let Some(v) = imm_record_value(l) {
                Some(format!("marker 0x{v:x}"))
            } else if l.contains("= load") {
                Some("load".into())
            } else if l.starts_with("store") {
                Some(if l.contains("addrspace(3)") {
                    "lds store".into()
                } else {
                    "store".into()
                })
            } else {
                None
            }
        })
        .collect();
    // vmem_load = ID 1 (point 0x4), vmem_store = ID 2 (point 0x8).
    // Each group's marker directly after its last operation.
    assert_eq!(
        events,
        [
            "load",
            "load",
            "marker 0x4",
            "store",
            "marker 0x8",
            "load",
            "load",
            "marker 0x4",
            "load",
            "marker 0x4",
            "lds store"
        ],
        "{out}"
    );
    assert!(
        out.contains("c\"K:k\\0AP:1:vmem_load\\0AP:2:vmem_store\\0A\\00\""),
        "{out}"
    );
    // The same order in machine code: each marker right after its group's last operation, also
    // behind the scope check (gfx90a, the default SQTT_SCOPE_CU), where it sits in its own block.
    for (cpu, env) in [
        (
            "gfx1030",
            &[("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")][..],
        ),
        ("gfx90a", &[][..]),
    ] {
        let mut env = env.to_vec();
        env.push(("SQTT_INSTRUMENT_MEMORY", "2:5"));
        let out = opt_sqtt_ok(&ir.replace("gfx1030", cpu), &env);
        let insts = llc_objdump(&out, cpu);
        let isa: Vec<String> = insts
            .iter()
            .filter_map(|i| {
                let mut words = i.split([' ', ',']).filter(|w| !w.is_empty());
                match words.next()? {
                    "global_load_dword" => Some("load".into()),
                    "global_store_dword" => Some("store".into()),
                    "ds_write_b32" => Some("lds store".into()),
                    "s_ttracedata_imm" => Some(format!("marker {}", words.next()?)),
                    "s_mov_b32" if words.next()? == "m0" => {
                        let v: u32 = words.next()?.parse().ok()?;
                        Some(format!("marker 0x{v:x}"))
                    }
                    _ => None,
                }
            })
            .collect();
        assert_eq!(
            isa,
            [
                "load",
                "load",
                "marker 0x4",
                "store",
                "marker 0x8",
                "load",
                "load",
                "marker 0x4",
                "load",
                "marker 0x4",
                "lds store"
            ],
            "{cpu}:\n{}",
            insts.join("\n")
        );
    }
}

/// What a memory operation is: loads through global, flat, constant and buffer pointers get
/// `vmem_load` markers, LDS and scratch ones none (one operation per marker, so each marked load
/// is a record of its own; a scratch and an LDS load stand between them).
#[test]
fn memory_markers_cover_every_space_but_lds_and_scratch() {
    let ir = r#"target triple = "amdgcn-amd-amdhsa"
@table = addrspace(4) constant [4 x i32] [i32 1, i32 2, i32 3, i32 4]
@lds = internal addrspace(3) global i32 undef
define amdgpu_kernel void @k(ptr addrspace(1) %g, ptr %f, ptr addrspace(7) %rsrc, i32 %i) #0 {
  %s = alloca i32, align 4, addrspace(5)
  %a = load volatile i32, ptr addrspace(1) %g
  %b = load volatile i32, ptr addrspace(5) %s
  %c = load volatile i32, ptr %f
  %d = load volatile i32, ptr addrspace(3) @lds
  %t = getelementptr [4 x i32], ptr addrspace(4) @table, i32 0, i32 %i
  %e = load volatile i32, ptr addrspace(4) %t
  %x = load volatile i32, ptr addrspace(7) %rsrc
  ret void
}
attributes #0 = { "target-cpu"="gfx1030" }
"#;
    let out = opt_sqtt_ok(ir, &bare_with("SQTT_INSTRUMENT_MEMORY", "1:0"));
    // vmem_load is ID 1: point value 4, after %a, %c, %e and %x.
    assert!(out.contains("P:1:vmem_load"), "{out}");
    assert_eq!(out.matches(&imm_record_ir(4)).count(), 4, "{out}");
    for (load, marked) in [
        ("%a", true),
        ("%b", false),
        ("%c", true),
        ("%d", false),
        ("%e", true),
    ] {
        let line = out
            .lines()
            .position(|l| l.trim_start().starts_with(&format!("{load} = load")))
            .unwrap_or_else(|| panic!("no {load} in\n{out}"));
        let next_records = out
            .lines()
            .skip(line + 1)
            .take(2) // sched_barrier, record
            .any(|l| l.contains(&imm_record_ir(4)));
        assert_eq!(next_records, marked, "{load}:\n{out}");
    }
}

/// A gap larger than M ends a group even with fewer than N operations in it.
#[test]
fn memory_gap_breaks_groups() {
    let mut body = String::from("  %a = load i32, ptr addrspace(1) %p\n");
    for i in 0..6 {
        body.push_str(&format!("  %x{i} = add i32 %a, {i}\n"));
    }
    body.push_str(
        "  %b = load i32, ptr addrspace(1) %p\n  %c = load i32, ptr addrspace(1) %p\n  ret void\n",
    );
    let ir = format!(
        "target triple = \"amdgcn-amd-amdhsa\"\ndefine amdgpu_kernel void @k(ptr addrspace(1) %p) #0 {{\n{body}}}\nattributes #0 = {{ \"target-cpu\"=\"gfx1030\" }}\n"
    );
    let out = opt_sqtt_ok(&ir, &bare_with("SQTT_INSTRUMENT_MEMORY", "4:5"));
    // Gap of 6 > 5 after the first load: two groups, [a] and [b, c].
    assert_eq!(out.matches(&imm_record_ir(4)).count(), 2, "{out}");
}

/// The size a threshold is compared with, as the spec and AMD's pass measure it: the count (`N`)
/// skips PHIs, allocas, debug intrinsics and `unreachable` only, so lifetime markers count; the
/// cost (`cost:N`) weighs every load and store outside LDS 10, constant and scratch memory
/// included, and lifetime markers 0. The function below is 5 by count (two lifetime markers, a
/// store, a load, the return) and 21 by cost (10 + 10 + 1).
#[test]
fn function_size_counts_as_the_spec_and_amds_pass() {
    // LLVM 22 dropped the size operand of the lifetime intrinsics.
    let (start, end) = if llvm_major() >= 22 {
        (
            "call void @llvm.lifetime.start.p5(ptr addrspace(5) %a)",
            "call void @llvm.lifetime.end.p5(ptr addrspace(5) %a)",
        )
    } else {
        (
            "call void @llvm.lifetime.start.p5(i64 4, ptr addrspace(5) %a)",
            "call void @llvm.lifetime.end.p5(i64 4, ptr addrspace(5) %a)",
        )
    };
    let decls = if llvm_major() >= 22 {
        "declare void @llvm.lifetime.start.p5(ptr addrspace(5) nocapture)\ndeclare void @llvm.lifetime.end.p5(ptr addrspace(5) nocapture)"
    } else {
        "declare void @llvm.lifetime.start.p5(i64 immarg, ptr addrspace(5) nocapture)\ndeclare void @llvm.lifetime.end.p5(i64 immarg, ptr addrspace(5) nocapture)"
    };
    let ir = format!(
        r#"target triple = "amdgcn-amd-amdhsa"
@c = addrspace(4) constant i32 7
define internal void @sized(i32 %x) #0 {{
  %a = alloca i32, align 4, addrspace(5)
  {start}
  store volatile i32 %x, ptr addrspace(5) %a
  %v = load volatile i32, ptr addrspace(4) @c
  {end}
  ret void
}}
define amdgpu_kernel void @k(i32 %x) #0 {{
  call void @sized(i32 %x)
  ret void
}}
{decls}
attributes #0 = {{ "target-cpu"="gfx1030" }}
"#
    );
    for (threshold, instrumented) in [
        ("4", true),
        ("5", false),
        ("cost:20", true),
        ("cost:21", false),
    ] {
        let env = bare_with("SQTT_INSTRUMENT_FUNCTIONS", threshold);
        let out = opt_sqtt_ok(&ir, &env);
        assert_eq!(
            out.contains("F:1:sized"),
            instrumented,
            "SQTT_INSTRUMENT_FUNCTIONS={threshold}:\n{out}"
        );
    }
}

/// `define internal void @NAME(ptr addrspace(1) %p, i32 %x)` of 24 instructions before its
/// return (12 adds, 12 stores): above a count threshold of 20.
fn big_function(name: &str) -> String {
    let body: String = (0..12)
        .map(|i| {
            format!("  %v{i} = add i32 %x, {i}\n  store volatile i32 %v{i}, ptr addrspace(1) %p\n")
        })
        .collect();
    format!("define internal void @{name}(ptr addrspace(1) %p, i32 %x) #0 {{\n{body}  ret void\n}}")
}

/// A function above the threshold whose only call is optimised away (a constant condition) has
/// no marker left, but keeps its `F:` row with the ID after every emitted one, as AMD's pass
/// writes it; a function at or below the threshold gets none.
#[test]
fn a_function_above_the_threshold_keeps_its_row_when_its_code_is_gone() {
    let (big, used) = (big_function("big"), big_function("used"));
    let ir = format!(
        r#"target triple = "amdgcn-amd-amdhsa"
{big}
{used}
define internal void @small(ptr addrspace(1) %p) #0 {{
  store volatile i32 1, ptr addrspace(1) %p
  ret void
}}
define amdgpu_kernel void @k(ptr addrspace(1) %p) #0 {{
  %never = icmp eq i32 0, 1
  br i1 %never, label %dead, label %live
dead:
  call void @big(ptr addrspace(1) %p, i32 7)
  call void @small(ptr addrspace(1) %p)
  br label %live
live:
  call void @used(ptr addrspace(1) %p, i32 3)
  ret void
}}
attributes #0 = {{ "target-cpu"="gfx1030" }}
"#
    );
    let env = bare_with("SQTT_INSTRUMENT_FUNCTIONS", "20");
    let out = opt_passes(&ir, "default<O2>", &env);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ir = String::from_utf8_lossy(&out.stdout);
    assert!(ir.contains(r#"c"F:1:used\0AF:2:big\0AK:k\0A\00""#), "{ir}");
    assert!(ir.contains(&imm_record_ir(6)), "{ir}");
    assert!(!ir.contains(&imm_record_ir(10)), "{ir}");
}

/// The two phases in IR: the early phase leaves tagged bare markers, `!sqtt.func.id` and the
/// `!sqtt.markers.early` ledger; the late phase reads them back, applies the threshold to the
/// (now smaller) function and writes the funcmap.
#[test]
fn early_ledger_and_late_phase_in_ir() {
    let big = big_function("big");
    let ir = format!(
        r#"target triple = "amdgcn-amd-amdhsa"
{big}
define amdgpu_kernel void @k(ptr addrspace(1) %p) #0 {{
  call void @big(ptr addrspace(1) %p, i32 7)
  ret void
}}
attributes #0 = {{ "target-cpu"="gfx1030" }}
"#
    );
    let env = bare_with("SQTT_INSTRUMENT_FUNCTIONS", "20");
    let dir = workdir();
    let input = dir.path().join("in.ll");
    std::fs::write(&input, &ir).unwrap();
    let early = run_ok(
        Command::new(llvm_tool("opt"))
            .envs(env)
            .arg(format!("-load-pass-plugin={}", plugin_path().display()))
            .args(["-passes=sqtt-early", "-S"])
            .arg(&input),
    );
    assert!(
        early.contains("define internal void @big(ptr addrspace(1) %p, i32 %x) #0 !sqtt.func.id"),
        "{early}"
    );
    assert_eq!(
        early.matches("asm sideeffect \"; sqtt marker ").count(),
        2,
        "{early}"
    );
    assert!(early.contains("!sqtt.markers.early = !{"), "{early}");
    assert!(early.contains("!\"F\", !\"big\""), "{early}");
    // 24 instructions + ret: above 20, instrumented.
    let late = opt_sqtt_ok(&early, &env);
    assert!(late.contains("c\"F:1:big\\0AK:k\\0A\\00\""), "{late}");
    assert!(late.contains(&imm_record_ir(6)), "{late}");
    assert!(late.contains(&imm_record_ir(1)), "{late}");
    assert!(
        !late.contains("sqtt.markers.early") && !late.contains("; sqtt marker"),
        "{late}"
    );
    // With a threshold above the function's size its markers go, and so does its F: row.
    let late = opt_sqtt_ok(
        &early,
        &[("SQTT_INSTRUMENT_FUNCTIONS", "30"), ("SQTT_SCOPE_CU", "-1")],
    );
    assert!(late.contains("c\"K:k\\0A\\00\""), "{late}");
    assert!(!late.contains("ttracedata"), "{late}");
}

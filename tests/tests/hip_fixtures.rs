//! The HIP fixtures of tests/fixtures/hip through the lane's real hipcc with the plugin loaded by
//! hand (`-fpass-plugin`), on every arch of the lane (`SQTT_TEST_ARCHES`, else the host's) at -O0
//! and -O3: exact marker sequences in the assembly, the exact `.sqtt_funcmap` of the device code
//! object and its disassembled markers and encodings; the runtime kernel linked with the device
//! libraries; every feature at once under the machine verifier; a multi-arch host object whose
//! code objects all carry the funcmap. Every check of every arch runs; a test fails with the
//! list of those that failed.

use std::path::{Path, PathBuf};

use sqtt_e2e::checks::{is_gfx9, scope_checks, sorted, Checks};
use sqtt_e2e::kernels::outer_mid_val_trace;
use sqtt_e2e::toolchain::*;

/// Arches of the host's hipcc 5.2.3 (clang 15) when no lane names its own.
const HOST_ARCHES: &[&str] = &["gfx90a", "gfx1030", "gfx1100"];

fn arches() -> Vec<String> {
    lane_arches(HOST_ARCHES)
}

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/hip").join(name)
}

/// hipcc with the plugin on one fixture for one arch: `--cuda-device-only OPT ARGS... -o out`,
/// under `env` (and no other `SQTT_*` variable).
fn hipcc_device(
    src: &str,
    arch: &str,
    opt: &str,
    env: &[(&str, &str)],
    args: &[&str],
    out: &Path,
) -> Result<(), String> {
    let o = run(hipcc_with_plugin(arch)
        .args(["--cuda-device-only", opt])
        .args(args)
        .arg(fixture(src))
        .arg("-o")
        .arg(out)
        .envs(env.iter().copied()));
    if o.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&o.stderr);
        let lines: Vec<&str> = err.lines().collect();
        Err(format!(
            "hipcc {args:?} failed:\n{}",
            lines[lines.len().saturating_sub(8)..].join("\n")
        ))
    }
}

const UNFILTERED: &[(&str, &str)] = &[("SQTT_SCOPE_CU", "-1")];
const CODE_OBJECT: &[&str] = &["-c", "--no-gpu-bundle-output"];

fn words(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const MARKERS_FUNCMAP: &str = "K:lane_kernel
U:1:outer
P:2:mid
P:3:val
R:3:extra_payload_count=1";

/// Named markers of every kind and a numeric one: unfiltered, the exact sequence and no scope
/// check; with default settings, one scope check and every marker; the code object's funcmap
/// and disassembled markers.
#[test]
fn markers() {
    let mut c = Checks::new();
    let dir = workdir();
    for cpu in arches() {
        for opt in ["-O0", "-O3"] {
            let n = format!("{cpu} {opt} markers.hip");
            let want = outer_mid_val_trace(&cpu, opt == "-O0");
            let s = dir.path().join(format!("{cpu}{opt}-unfiltered.s"));
            if c.step(
                format!("{n} unfiltered: hipcc -S"),
                hipcc_device("markers.hip", &cpu, opt, UNFILTERED, &["-S"], &s),
            )
            .is_some()
            {
                let insts = all_instructions(&std::fs::read_to_string(&s).unwrap());
                c.eq(
                    format!("{n} unfiltered: markers"),
                    marker_trace(&insts),
                    words(&want),
                );
                // No hwreg read but, at -O0 on LLVM 15, the flat aperture
                // (`hwreg(HW_REG_SH_MEM_BASES, 0, 16)`) of the kernel's own stack accesses.
                c.eq(
                    format!("{n} unfiltered: no scope check"),
                    count_matching(&insts, "s_getreg_b32*")
                        - count_matching(
                            &insts,
                            "s_getreg_b32 s*, hwreg(HW_REG_SH_MEM_BASES, 0, 16)",
                        ),
                    0,
                );
            }
            let s = dir.path().join(format!("{cpu}{opt}.s"));
            if c.step(
                format!("{n} filtered: hipcc -S"),
                hipcc_device("markers.hip", &cpu, opt, &[], &["-S"], &s),
            )
            .is_some()
            {
                let insts = all_instructions(&std::fs::read_to_string(&s).unwrap());
                c.eq(
                    format!("{n} filtered: markers (any order)"),
                    sorted(marker_trace(&insts)),
                    sorted(words(&want)),
                );
                c.eq(
                    format!("{n} filtered: one scope check"),
                    scope_checks(&insts, &cpu),
                    1,
                );
            }
            let co = dir.path().join(format!("{cpu}{opt}.co"));
            if c.step(
                format!("{n}: hipcc -c"),
                hipcc_device("markers.hip", &cpu, opt, &[], CODE_OBJECT, &co),
            )
            .is_some()
            {
                c.funcmap(&n, &co, MARKERS_FUNCMAP);
                c.disassembled_markers(&n, &disassemble(&co, &cpu), &cpu, &want);
            }
        }
    }
    c.finish();
}

const RUNTIME_FUNCMAP: &str = "K:_Z19lane_runtime_kernelPfi
U:1:outer
P:2:index
R:2:extra_payload_count=1";

/// runtime.hip's records: enter outer (6), the data header of index (8) and its payload, exit.
fn runtime_trace(cpu: &str) -> Vec<&'static str> {
    if is_gfx9(cpu) {
        vec!["m0:6+nop", "m0:8+nop", "m0:dyn+nop", "m0:1+nop"]
    } else {
        vec!["imm:0x6", "imm:0x8", "m0:dyn+nop", "imm:0x1"]
    }
}

/// Real HIP headers and a device-library call (sqrtf): the exact markers, the library linked,
/// the funcmap and the disassembled markers.
#[test]
fn runtime() {
    let mut c = Checks::new();
    let dir = workdir();
    for cpu in arches() {
        for opt in ["-O0", "-O3"] {
            let n = format!("{cpu} {opt} runtime.hip");
            let want = runtime_trace(&cpu);
            let s = dir.path().join(format!("{cpu}{opt}.s"));
            if c.step(
                format!("{n} unfiltered: hipcc -S"),
                hipcc_device("runtime.hip", &cpu, opt, UNFILTERED, &["-S"], &s),
            )
            .is_some()
            {
                let asm = std::fs::read_to_string(&s).unwrap();
                c.eq(
                    format!("{n} unfiltered: markers"),
                    marker_trace(&all_instructions(&asm)),
                    words(&want),
                );
                c.check(
                    format!("{n}: device libs linked (sqrt)"),
                    asm.contains("v_sqrt_f32") || asm.contains("__ocml_sqrt"),
                    || "neither v_sqrt_f32 nor __ocml_sqrt in the listing".into(),
                );
            }
            let co = dir.path().join(format!("{cpu}{opt}.co"));
            if c.step(
                format!("{n}: hipcc -c"),
                hipcc_device("runtime.hip", &cpu, opt, &[], CODE_OBJECT, &co),
            )
            .is_some()
            {
                c.funcmap(&n, &co, RUNTIME_FUNCMAP);
                c.disassembled_markers(&n, &disassemble(&co, &cpu), &cpu, &want);
            }
        }
    }
    c.finish();
}

/// Checks that the funcmap of `co` has a row matching each entry: alternatives of
/// [`matches`] patterns (`*` for the IDs).
fn funcmap_rows(c: &mut Checks, name: &str, co: &Path, want: &[&[&str]]) {
    let Some(bytes) = dump_funcmap(co, co.parent().unwrap()) else {
        c.check(name, false, || {
            format!("no .sqtt_funcmap in {}", co.display())
        });
        return;
    };
    let text = String::from_utf8_lossy(&bytes).replace('\0', "");
    for alternatives in want {
        c.check(
            format!("{name}: funcmap row {alternatives:?}"),
            text.lines()
                .any(|row| alternatives.iter().any(|p| matches(row, p))),
            || format!("no such row in\n{text}"),
        );
    }
}

/// Every feature at once on features.hip under `-mllvm -verify-machineinstrs`: functions,
/// barriers and memory (`SQTT_INSTRUMENT_MEMORY=2:5`), or functions, barriers and address
/// tracing (`SQTT_TRACE_ADDRESSES=memory,lds`); the funcmap has the rows each feature adds.
#[test]
fn every_feature_under_the_verifier() {
    let mut c = Checks::new();
    let dir = workdir();
    let args = [
        "-c",
        "--no-gpu-bundle-output",
        "-mllvm",
        "-verify-machineinstrs",
    ];
    for cpu in arches() {
        let wave = if is_gfx9(&cpu) { "W:64" } else { "W:32" };
        for opt in ["-O0", "-O3"] {
            let n = format!("{cpu} {opt} features.hip");
            let co = dir.path().join(format!("{cpu}{opt}-mem.co"));
            let env = [
                ("SQTT_INSTRUMENT_FUNCTIONS", "1"),
                ("SQTT_INSTRUMENT_BARRIERS", "1"),
                ("SQTT_INSTRUMENT_MEMORY", "2:5"),
            ];
            let m = format!("{n} functions+barriers+memory");
            if c.step(
                format!("{m}: compile"),
                hipcc_device("features.hip", &cpu, opt, &env, &args, &co),
            )
            .is_some()
            {
                funcmap_rows(
                    &mut c,
                    &m,
                    &co,
                    &[
                        &["K:_Z20lane_features_kernelPKfPfPii"],
                        &["F:*:_Z5scalefi"],
                        &["U:*:load"],
                        &["P:*:barrier"],
                        &["P:*:vmem_load"],
                        &["P:*:vmem_store"],
                    ],
                );
            }
            let co = dir.path().join(format!("{cpu}{opt}-addr.co"));
            let env = [
                ("SQTT_INSTRUMENT_FUNCTIONS", "1"),
                ("SQTT_INSTRUMENT_BARRIERS", "1"),
                ("SQTT_TRACE_ADDRESSES", "memory,lds"),
            ];
            // At -O0 the __shared__ accesses stay flat (no address-space inference): traced as memory.
            let lds: &[&str] = if opt == "-O0" {
                &["P:*:addr_trace_store"]
            } else {
                &["P:*:addr_trace_lds_store", "P:*:addr_trace_lds_load"]
            };
            let a = format!("{n} functions+barriers+addresses");
            if c.step(
                format!("{a}: compile"),
                hipcc_device("features.hip", &cpu, opt, &env, &args, &co),
            )
            .is_some()
            {
                funcmap_rows(
                    &mut c,
                    &a,
                    &co,
                    &[
                        &[wave],
                        &["K:_Z20lane_features_kernelPKfPfPii"],
                        &["P:*:addr_trace_load"],
                        lds,
                        &["P:*:addr_trace_atomic"],
                        &["R:*:extra_payload_count=*"],
                    ],
                );
            }
        }
    }
    c.finish();
}

/// A host object for the lane's multi-arch set (`SQTT_TEST_MULTI_ARCH`, else every arch): each
/// arch's code object, unbundled with clang-offload-bundler, carries the funcmap.
#[test]
fn multi_arch_host_object() {
    let fat = test_multi_arch(&arches());
    let dir = workdir();
    let obj = dir.path().join("fat.o");
    let mut cmd = hipcc_with_plugin(&fat[0]);
    for a in &fat[1..] {
        cmd.args(arch_args(a));
    }
    run_ok(
        cmd.arg("-c")
            .arg(fixture("runtime.hip"))
            .arg("-o")
            .arg(&obj),
    );
    let mut c = Checks::new();
    for cpu in &fat {
        let cpu = toolchain_arch(cpu);
        let sub = dir.path().join(cpu);
        std::fs::create_dir_all(&sub).unwrap();
        let co = extract_code_object(&obj, cpu, &sub);
        c.funcmap(
            format!("{} -c: {cpu} code object", fat.join("+")),
            &co,
            RUNTIME_FUNCMAP,
        );
    }
    c.finish();
}

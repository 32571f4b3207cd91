//! The cost report (`sqtt-hipcc --check --cost`) against the compiler's own figures: clang's
//! `-Rpass-analysis=kernel-resource-usage` remarks (SGPRs, VGPRs, AGPRs, scratch, occupancy,
//! LDS per kernel) for instrumented and plain builds of the README kernel, an address-trace
//! kernel and the rocPRIM corpus on the lane's targets, and a sweep of kernels through llc that
//! pins every occupancy limit; instructions and trace instructions against llvm-objdump's
//! disassembly; `--baseline` and the `--max-*` limits as a CI gate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sqtt_codeobj::cost::report::{CostReport, KernelReport};
use sqtt_e2e::driver::sqtt_hipcc;
use sqtt_e2e::toolchain::*;

use sqtt_e2e::kernels::EVERY_FEATURE as EVERYTHING;

fn arches() -> Vec<String> {
    let default: &[&str] = if llvm_major() >= 19 {
        &["gfx942", "gfx1100", "gfx1201"]
    } else {
        &["gfx90a", "gfx1030", "gfx1100"]
    };
    lane_arches(default)
}

/// One kernel's `kernel-resource-usage` remarks.
#[derive(Debug, Clone, Default, PartialEq)]
struct Remark {
    name: String,
    sgprs: u32,
    vgprs: u32,
    agprs: u32,
    scratch: u32,
    occupancy: u32,
    lds: Option<u32>,
}

/// The remarks of a compile's stderr, one per function (kernels have an LDS line).
fn remarks(stderr: &str) -> Vec<Remark> {
    let mut out: Vec<Remark> = Vec::new();
    for line in stderr.lines() {
        let Some(rest) = line.split("remark: ").nth(1) else {
            continue;
        };
        // "<file>:<line>:<col>: SGPRs: 11 [-Rpass-analysis=kernel-resource-usage]"
        let rest = rest.trim_end_matches(" [-Rpass-analysis=kernel-resource-usage]");
        let Some((key, value)) = rest.rsplit_once(": ") else {
            continue;
        };
        let key = key.rsplit(": ").next().unwrap_or(key).trim();
        if key == "Function Name" {
            out.push(Remark {
                name: value.trim().to_string(),
                ..Remark::default()
            });
            continue;
        }
        let (Some(r), Ok(n)) = (out.last_mut(), value.trim().parse::<u32>()) else {
            continue;
        };
        match key {
            "SGPRs" | "TotalSGPRs" => r.sgprs = n,
            "VGPRs" => r.vgprs = n,
            "AGPRs" => r.agprs = n,
            "ScratchSize [bytes/lane]" => r.scratch = n,
            "Occupancy [waves/SIMD]" => r.occupancy = n,
            "LDS Size [bytes/block]" => r.lds = Some(n),
            _ => {}
        }
    }
    out
}

/// Runs `sqtt-hipcc --check --cost --json ARGS`.
fn cost_report(args: &[&str]) -> (CostReport, Output) {
    let out = run(Command::new(sqtt_hipcc())
        .args(["--check", "--cost", "--json"])
        .args(args));
    let text = String::from_utf8_lossy(&out.stdout);
    let report: CostReport = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr)));
    (report, out)
}

fn kernels(report: &CostReport) -> Vec<&KernelReport> {
    report
        .files
        .iter()
        .flat_map(|f| &f.code_objects)
        .flat_map(|c| &c.kernels)
        .collect()
}

/// Where the report and the remarks differ, one line each; every kernel must have both.
fn differences(what: &str, report: &CostReport, remarks: &[Remark]) -> Vec<String> {
    let mut out = Vec::new();
    let ks = kernels(report);
    let kernel_remarks: Vec<&Remark> = remarks.iter().filter(|r| r.lds.is_some()).collect();
    let errors: Vec<&String> = report
        .files
        .iter()
        .flat_map(|f| {
            f.error
                .iter()
                .chain(f.code_objects.iter().flat_map(|c| &c.error))
        })
        .collect();
    assert!(
        !ks.is_empty(),
        "{what}: no kernel in the report: {errors:?}"
    );
    for r in &kernel_remarks {
        let Some(k) = ks.iter().find(|k| k.name == r.name) else {
            out.push(format!("{what}: {} has remarks but no report", r.name));
            continue;
        };
        let f = &k.figures;
        // With AGPRs in use the metadata has the architectural VGPRs only rounded up to 4
        // (gfx90a and later CDNA), or the larger of the two files (gfx908); LLVM 20+ names them
        // exactly in a symbol. The report says which in a note.
        let inexact = r.agprs > 0 && !k.notes.is_empty();
        let vgprs_ok = f.vgprs == r.vgprs
            || (inexact && (f.vgprs == r.vgprs.div_ceil(4) * 4 || f.vgprs == r.vgprs.max(r.agprs)));
        let got = (
            f.sgprs,
            f.agprs,
            f.scratch_bytes,
            f.occupancy,
            Some(f.lds_bytes),
        );
        let want = (r.sgprs, r.agprs, r.scratch, Some(r.occupancy), r.lds);
        if got != want || !vgprs_ok {
            out.push(format!(
                "{what}: {}: report (SGPRs, AGPRs, scratch, occupancy, LDS) {got:?} VGPRs {}, \
                 remarks {want:?} VGPRs {}",
                r.name, f.vgprs, r.vgprs
            ));
        }
    }
    for k in &ks {
        if !kernel_remarks.iter().any(|r| r.name == k.name) {
            out.push(format!("{what}: {} reported without remarks", k.name));
        }
    }
    out
}

/// Instructions and trace instructions per function symbol of a code object, counted in
/// llvm-objdump's disassembly (the instructions whose address lies in the symbol's range).
fn objdump_counts(code_object: &Path, arch: &str) -> BTreeMap<String, (u64, u64)> {
    let data = std::fs::read(code_object).unwrap();
    let file = object::File::parse(&*data).unwrap();
    use object::{Object, ObjectSymbol};
    let ranges: Vec<(String, u64, u64)> = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .map(|s| {
            (
                s.name().unwrap().to_string(),
                s.address(),
                s.address() + s.size(),
            )
        })
        .collect();
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for line in disassemble(code_object, arch).lines() {
        // "	s_nop 0                      // 000000001700: BF800000"
        let Some((code, comment)) = line.split_once("//") else {
            continue;
        };
        let Some(addr) = comment
            .trim()
            .split(':')
            .next()
            .and_then(|a| u64::from_str_radix(a.trim(), 16).ok())
        else {
            continue;
        };
        let trace = code.trim_start().starts_with("s_ttracedata");
        for (name, start, end) in &ranges {
            if (*start..*end).contains(&addr) {
                let e = out.entry(name.clone()).or_default();
                e.0 += 1;
                e.1 += u64::from(trace);
            }
        }
    }
    out
}

/// The report's instruction and trace counts (kernel and callees) against llvm-objdump's.
fn count_differences(
    what: &str,
    report: &CostReport,
    code_object: &Path,
    arch: &str,
) -> Vec<String> {
    let counts = objdump_counts(code_object, arch);
    let mut out = Vec::new();
    for k in kernels(report) {
        let (mut n, mut t) = (0, 0);
        for f in std::iter::once(&k.name).chain(&k.callees) {
            let (a, b) = counts.get(f).copied().unwrap_or_default();
            n += a;
            t += b;
        }
        if (k.figures.instructions, k.figures.trace_instructions) != (Some(n), Some(t)) {
            out.push(format!(
                "{what}: {}: {:?} instructions, {:?} trace; llvm-objdump {n}, {t}",
                k.name, k.figures.instructions, k.figures.trace_instructions
            ));
        }
    }
    let co = &report.files[0].code_objects[0];
    let all: (u64, u64) = counts.values().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    if (co.totals.instructions, co.totals.trace_instructions) != (Some(all.0), Some(all.1)) {
        out.push(format!(
            "{what}: code object {:?}/{:?}, llvm-objdump {all:?}",
            co.totals.instructions, co.totals.trace_instructions
        ));
    }
    out
}

/// A device-only code object of `src` for `arch` and the compile's remarks; `plugin`: with the
/// plugin and `env`.
fn device_build(
    dir: &Path,
    src: &Path,
    arch: &str,
    plugin: bool,
    env: &[(&str, &str)],
    tag: &str,
) -> (PathBuf, Vec<Remark>) {
    let out = dir.join(format!("{tag}-{arch}.co"));
    let mut c = if plugin {
        hipcc_with_plugin(arch)
    } else {
        plain_hipcc(arch)
    };
    c.envs(env.iter().copied())
        .arg(format!("-I{}", markers_include().display()))
        .args([
            "-std=c++17",
            "-O3",
            "--cuda-device-only",
            "-c",
            "--no-gpu-bundle-output",
            "-Wno-unused-result",
            "-Rpass-analysis=kernel-resource-usage",
        ])
        .arg(src)
        .arg("-o")
        .arg(&out);
    let o = run(&mut c);
    assert!(o.status.success(), "{c:?}: {}", stderr_tail(&o));
    (out, remarks(&String::from_utf8_lossy(&o.stderr)))
}

/// Builds `src` plain and instrumented for every arch, checks both reports against the remarks
/// and the disassembly, and returns the instrumented reports (with the plain build as baseline).
fn checked_pair(
    src: &Path,
    env: &[(&str, &str)],
    tag: &str,
    arches: &[String],
) -> Vec<(String, CostReport)> {
    let dir = workdir();
    let mut wrong = Vec::new();
    let mut reports = Vec::new();
    for arch in arches.iter().cloned() {
        let (plain, plain_remarks) =
            device_build(dir.path(), src, &arch, false, &[], &format!("{tag}-plain"));
        let (inst, inst_remarks) = device_build(dir.path(), src, &arch, true, env, tag);
        let p = plain.to_str().unwrap();
        let i = inst.to_str().unwrap();
        let (plain_report, _) = cost_report(&[p]);
        let (report, out) = cost_report(&["--baseline", p, i]);
        assert!(out.status.success(), "{}", stderr_tail(&out));
        wrong.extend(differences(
            &format!("{tag} {arch} plain"),
            &plain_report,
            &plain_remarks,
        ));
        wrong.extend(differences(
            &format!("{tag} {arch}"),
            &report,
            &inst_remarks,
        ));
        wrong.extend(count_differences(
            &format!("{tag} {arch} plain"),
            &plain_report,
            &plain,
            &arch,
        ));
        wrong.extend(count_differences(
            &format!("{tag} {arch}"),
            &report,
            &inst,
            &arch,
        ));
        for k in kernels(&report) {
            let base = k
                .baseline
                .as_ref()
                .expect("every kernel has its plain build");
            let plain_k = kernels(&plain_report)
                .into_iter()
                .find(|p| p.name == k.name)
                .unwrap();
            assert_eq!(*base, plain_k.figures, "{tag} {arch} {}", k.name);
            assert_eq!(k.delta, Some(k.figures.minus(base)));
        }
        reports.push((arch, report));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    reports
}

#[test]
fn readme_kernel_equals_the_compiler_remarks() {
    let src = repo_root().join("examples/my_kernel.hip");
    for (arch, report) in checked_pair(&src, &[], "readme", &arches()) {
        let k = &kernels(&report)[0];
        // Enter load_phase; exit it fused with the enter of compute_phase; the data point and
        // its payload; the exit of compute_phase; the point.
        let m = &k.markers;
        assert_eq!(
            (m.user, m.point, m.exits, m.runtime),
            (2, 2, 1, 1),
            "{arch}: {m:?}"
        );
        assert_eq!(k.figures.trace_instructions, Some(6), "{arch}");
        let d = k.delta.as_ref().unwrap();
        assert!(
            d.code_bytes > 0 && d.instructions.unwrap() > 0,
            "{arch}: {d:?}"
        );
    }
}

/// A matrix-vector product four wide: its loads and store address-traced. The traces keep the
/// loop's loaded vectors and addresses live across their readlane loops, so VGPRs rise on every
/// target (LLVM 15: +6 on gfx90a, +1 on gfx1030 and gfx1100; LLVM 21: +6 on gfx942, +9 on
/// gfx1100 and gfx1201).
const ADDRESS_KERNEL: &str = r#"
#include <hip/hip_runtime.h>
__global__ void matvec4(const float4 *a, const float4 *x, float *y, int n4) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  float4 acc = {0, 0, 0, 0};
  for (int k = 0; k < n4; k += 2) {
    float4 p = a[row * n4 + k], q = x[k], r = a[row * n4 + k + 1], s = x[k + 1];
    acc.x += p.x * q.x + r.x * s.x; acc.y += p.y * q.y + r.y * s.y;
    acc.z += p.z * q.z + r.z * s.z; acc.w += p.w * q.w + r.w * s.w;
  }
  y[row] = acc.x + acc.y + acc.z + acc.w;
}
"#;

#[test]
fn address_trace_kernel_equals_the_compiler_remarks() {
    let dir = workdir();
    let src = dir.path().join("matvec4.hip");
    std::fs::write(&src, ADDRESS_KERNEL).unwrap();
    let env = [("SQTT_TRACE_ADDRESSES", "memory,lds")];
    for (arch, report) in checked_pair(&src, &env, "address", &arches()) {
        let k = &kernels(&report)[0];
        let (f, base) = (&k.figures, k.baseline.as_ref().unwrap());
        assert!(f.vgprs > base.vgprs, "{arch}: {f:?} against {base:?}");
        // Four loads in the loop and the store at least (the loop may be unrolled or peeled);
        // each block writes EXEC and its lanes' addresses (in a loop): run-time values.
        let m = &k.markers;
        assert!(
            m.address >= 5 && m.runtime >= 2 * m.address,
            "{arch}: {m:?}"
        );
    }
}

#[test]
fn rocprim_corpus_equals_the_compiler_remarks() {
    let src = repo_root().join("tests/corpus/rocprim_scan_reduce.hip");
    // Debian's rocPRIM: 5.3 with bookworm's hipcc predates gfx11 (its DPP broadcasts do not
    // assemble there); sid's 6.4 (the sid lane installs librocprim-dev) predates gfx950 (its
    // atomics have no gfx950 case).
    assert!(
        Path::new("/usr/include/rocprim/rocprim.hpp").exists(),
        "rocPRIM's headers are not installed (librocprim-dev)"
    );
    let arches: Vec<String> = arches()
        .into_iter()
        .filter(|a| {
            if llvm_major() >= 19 {
                a != "gfx950"
            } else {
                sqtt_gfx::Generation::of_name(a) < Some(sqtt_gfx::Generation::Gfx11)
            }
        })
        .collect();
    for (arch, report) in checked_pair(&src, EVERYTHING, "rocprim", &arches) {
        let ks = kernels(&report);
        assert!(ks.len() >= 4, "{arch}: {} kernels", ks.len());
        let traced: u64 = ks.iter().filter_map(|k| k.figures.trace_instructions).sum();
        assert!(traced > 50, "{arch}: {traced} trace instructions");
    }
}

const CALLS: &str = r#"
#include <hip/hip_runtime.h>
__device__ __attribute__((noinline)) float helper(float x, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s = s * x + 1.0f;
  return s;
}
__global__ void caller(float *data, int n) {
  data[threadIdx.x] = helper(data[threadIdx.x], n);
}
__global__ void lone(float *data) { data[threadIdx.x] += 1.0f; }
"#;

#[test]
fn callee_counts_equal_the_disassembly() {
    let dir = workdir();
    let src = dir.path().join("calls.hip");
    std::fs::write(&src, CALLS).unwrap();
    let arch = arches().remove(0);
    let (co, rem) = device_build(
        dir.path(),
        &src,
        &arch,
        true,
        &[("SQTT_INSTRUMENT_FUNCTIONS", "1")],
        "calls",
    );
    let (report, _) = cost_report(&[co.to_str().unwrap()]);
    let wrong = [
        differences("calls", &report, &rem),
        count_differences("calls", &report, &co, &arch),
    ]
    .concat();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let ks = kernels(&report);
    let caller = ks.iter().find(|k| k.name.contains("caller")).unwrap();
    let lone = ks.iter().find(|k| k.name.contains("lone")).unwrap();
    assert_eq!(caller.callees.len(), 1, "{:?}", caller.callees);
    assert!(caller.callees[0].contains("helper"));
    assert!(lone.callees.is_empty());
    // The helper's enter marker is in the caller's code through the call.
    assert_eq!(caller.markers.function, 1, "{:?}", caller.markers);
    assert_eq!(lone.markers.function, 0);
}

/// Kernels whose resources pin each occupancy limit (an asm clobber fixes the VGPRs, AGPRs and
/// SGPRs; an LDS array, the work-group size, wave64 and CU mode vary), through the lane's llc,
/// against its remarks: the occupancy rules of this LLVM for every target the table has figures
/// for and llc knows.
#[test]
fn occupancy_sweep_equals_llc_remarks() {
    let major = llvm_major();
    let cpus: Vec<&str> = llc_known_cpus(&[
        "gfx900", "gfx906", "gfx908", "gfx90a", "gfx940", "gfx942", "gfx950", "gfx1010", "gfx1030",
        "gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200", "gfx1201",
    ]);
    assert!(cpus.len() >= 5, "llc knows {cpus:?}");
    let dir = workdir();
    let mut wrong = Vec::new();
    let mut seed = 0x2545_f491_u64;
    let mut pick = |choices: &[u32]| {
        // xorshift: the same kernels every run.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        choices[(seed % choices.len() as u64) as usize]
    };
    for cpu in &cpus {
        let target = sqtt_gfx::Target::lookup(cpu).unwrap();
        let gen10 = target.generation >= sqtt_gfx::Generation::Gfx10;
        let agprs =
            matches!(target.resources.map(|r| r.agprs), Some(a) if a != sqtt_gfx::AgprFile::None);
        let max_lds = target.resources.unwrap().lds_bytes_per_cu;
        let mut ir = format!(
            "target triple = \"amdgcn-amd-amdhsa\"\n!llvm.ident = !{{!0}}\n!0 = !{{!\"clang version {major}.0.0\"}}\n"
        );
        for i in 0..60 {
            let v = pick(&[
                1, 5, 16, 17, 24, 25, 33, 41, 49, 65, 73, 85, 97, 104, 129, 168, 256,
            ]);
            let a = if agprs {
                pick(&[0, 0, 1, 16, 33, 128])
            } else {
                0
            };
            let s = pick(&[1, 30, 79, 81, 85, 90, 96, 100]);
            let lds = pick(&[
                0, 1, 2048, 4096, 8192, 10000, 16384, 20000, 32769, 40000, 65536,
            ])
            .min(max_lds);
            let wg = pick(&[32, 64, 65, 128, 256, 257, 512, 1024]);
            let mut features = Vec::new();
            if gen10 && pick(&[0, 1]) == 1 {
                features.push("+wavefrontsize64");
            }
            if gen10 && pick(&[0, 0, 1]) == 1 {
                features.push("+cumode");
            }
            let mut body = String::new();
            if lds > 0 {
                ir += &format!(
                    "@lds{i} = internal addrspace(3) global [{lds} x i8] undef, align 1\n"
                );
                body += &format!("  store volatile i8 0, ptr addrspace(3) @lds{i}\n");
            }
            body += &format!("  call void asm sideeffect \"\", \"~{{v{}}}\"()\n", v - 1);
            if a > 0 {
                body += &format!("  call void asm sideeffect \"\", \"~{{a{}}}\"()\n", a - 1);
            }
            body += &format!("  call void asm sideeffect \"\", \"~{{s{}}}\"()\n", s - 1);
            let mut attrs = format!("\"amdgpu-flat-work-group-size\"=\"1,{wg}\"");
            if !features.is_empty() {
                attrs += &format!(" \"target-features\"=\"{}\"", features.join(","));
            }
            ir += &format!(
                "define amdgpu_kernel void @k{i}() #{i} {{\n{body}  ret void\n}}\nattributes #{i} = {{ {attrs} }}\n"
            );
        }
        let ll = dir.path().join(format!("sweep-{cpu}.ll"));
        let obj = dir.path().join(format!("sweep-{cpu}.o"));
        std::fs::write(&ll, &ir).unwrap();
        let o = run(Command::new(llvm_tool("llc"))
            .args([
                "-mtriple=amdgcn-amd-amdhsa",
                &format!("-mcpu={cpu}"),
                "-filetype=obj",
            ])
            .arg("-pass-remarks-analysis=kernel-resource-usage")
            .arg(&ll)
            .arg("-o")
            .arg(&obj));
        assert!(o.status.success(), "llc {cpu}: {}", stderr_tail(&o));
        let (report, _) = cost_report(&[obj.to_str().unwrap()]);
        assert_eq!(report.files[0].code_objects[0].llvm_major, Some(major));
        wrong.extend(differences(
            &format!("llc-{major} {cpu}"),
            &report,
            &remarks(&String::from_utf8_lossy(&o.stderr)),
        ));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The limits: exit 1 naming the kernel and the limit when exceeded, 0 within them, 2 for a
/// value that is no number or a limit without a baseline; text and CSV give the same kernels.
#[test]
fn limits_make_a_ci_gate() {
    let dir = workdir();
    let src = repo_root().join("examples/my_kernel.hip");
    let arch = arches().remove(0);
    let (plain, _) = device_build(dir.path(), &src, &arch, false, &[], "plain");
    let (inst, _) = device_build(dir.path(), &src, &arch, true, &[], "inst");
    let gate = |extra: &[&str]| {
        run(Command::new(sqtt_hipcc())
            .args(["--check", "--cost", "--baseline"])
            .arg(&plain)
            .args(extra)
            .arg(&inst))
    };
    let o = gate(&["--max-code-growth", "0"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("_Z9my_kernelPfi") && err.contains("--max-code-growth 0"),
        "{err}"
    );
    let o = gate(&[
        "--max-code-growth",
        "1000",
        "--max-occupancy-drop",
        "8",
        "--max-added-vgprs",
        "64",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr_tail(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("_Z9my_kernelPfi") && text.contains("waves/SIMD"),
        "{text}"
    );

    let o = gate(&["--max-added-vgprs", "lots"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--max-added-vgprs") && err.contains("lots"),
        "{err}"
    );
    let o = run(Command::new(sqtt_hipcc())
        .args(["--check", "--cost", "--max-occupancy-drop", "1"])
        .arg(&inst));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("needs --baseline"));

    let csv = run_ok(
        Command::new(sqtt_hipcc())
            .args(["--check", "--cost", "--csv", "--baseline"])
            .arg(&plain)
            .arg(&inst),
    );
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header.len(), row.len());
    let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(col("kernel"), "_Z9my_kernelPfi");
    assert!(
        col("baseline_code_bytes").parse::<u64>().unwrap() < col("code_bytes").parse().unwrap()
    );
    assert_eq!(col("trace_instructions"), "6");
}

/// A metadata note that does not parse: exit 1 naming the file and the note, never a panic.
#[test]
fn a_corrupt_metadata_note_fails() {
    let dir = workdir();
    let src = repo_root().join("examples/my_kernel.hip");
    let arch = arches().remove(0);
    let (co, _) = device_build(dir.path(), &src, &arch, false, &[], "corrupt");
    let mut bytes = std::fs::read(&co).unwrap();
    // The msgpack string header of the key "amdhsa.kernels" becomes 0xc1, which msgpack never
    // uses.
    let at = bytes
        .windows(14)
        .position(|w| w == b"amdhsa.kernels")
        .expect("the metadata note");
    bytes[at - 1] = 0xc1;
    let bad = dir.path().join("bad.co");
    std::fs::write(&bad, &bytes).unwrap();
    let o = run(Command::new(sqtt_hipcc())
        .args(["--check", "--cost"])
        .arg(&bad));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("bad.co") && err.contains("AMDGPU metadata note"),
        "{err}"
    );
}

/// `sqtt funcmap --cost` is the same report.
#[test]
fn sqtt_funcmap_cost_is_the_same_report() {
    let dir = workdir();
    let src = repo_root().join("examples/my_kernel.hip");
    let arch = arches().remove(0);
    let (co, _) = device_build(dir.path(), &src, &arch, true, &[], "same");
    let a = run_ok(
        Command::new(sqtt_hipcc())
            .args(["--check", "--cost", "--json"])
            .arg(&co),
    );
    let b = run_ok(
        Command::new(sqtt_e2e::driver::sqtt_tool())
            .args(["funcmap", "--cost", "--json"])
            .arg(&co),
    );
    assert_eq!(a, b);
}

//! What holds on every toolchain a lane provides, built through `sqtt-hipcc` with the lane's real
//! hipcc and asserted on real outputs: -O0 to -O3, `-g`, `-fgpu-rdc` with IDs unique across
//! translation units, and several `--offload-arch` at once. Each build is checked twice: by
//! `sqtt-hipcc --check --json`, and independently by the exact `.sqtt_funcmap` bytes and the
//! disassembled markers of every code object (llvm-objcopy, clang-offload-bundler,
//! llvm-objdump of the toolchain under test).
//!
//! Arches: `SQTT_TEST_ARCHES` (the lane's row of ci/lanes.tsv; the lane scripts set it), else
//! bookworm's gfx90a gfx1030 gfx1100; the multi-arch binary holds `SQTT_TEST_MULTI_ARCH`, else
//! all of them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use sqtt_e2e::driver::driver;
use sqtt_e2e::kernels::{MY_KERNEL, MY_KERNEL_FUNCMAP as FUNCMAP};
use sqtt_e2e::toolchain::*;

/// [`MY_KERNEL`] as a program.
fn kernel_program() -> String {
    format!("{MY_KERNEL}int main() {{ return 0; }}\n")
}

/// The headers of [`MY_KERNEL`]'s markers, in program order (docs/format.md, section 1): enter 1,
/// exit 1 fused with enter 2, the data header 3, exit, point 4.
const HEADERS: [u32; 5] = [(1 << 2) | 2, (2 << 2) | 3, 3 << 2, 1, 4 << 2];

/// No scope check, no reorder boundary: only the marker records themselves.
const BARE: &[(&str, &str)] = &[("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")];

fn arches() -> Vec<String> {
    test_arches(&["gfx90a", "gfx1030", "gfx1100"])
}

/// No multi-arch entry in the lane's row: one binary of all its arches.
fn multi_arches() -> Vec<String> {
    test_multi_arch(&arches())
}

/// `sqtt-hipcc` on the lane's hipcc and plugin, in `dir`, with [`BARE`] settings.
fn wrapper(dir: &Path) -> Command {
    let mut c = sqtt_e2e::driver::wrapper(dir);
    c.envs(BARE.iter().copied());
    c
}

fn build(dir: &Path, arches: &[String], args: &[&str]) {
    let mut c = wrapper(dir);
    for a in arches {
        c.args(arch_args(a));
    }
    c.args(args);
    run_ok(&mut c);
}

/// `sqtt-hipcc --check FILE --json` with requirements; must pass. Returns the code objects by
/// arch.
fn check_json(dir: &Path, file: &str, requires: &[&str]) -> BTreeMap<String, serde_json::Value> {
    let mut c = driver(dir);
    c.args(["--check", file, "--json"]);
    for r in requires {
        c.args(["--require", r]);
    }
    let out = run(&mut c);
    assert_eq!(
        out.status.code(),
        Some(0),
        "sqtt-hipcc --check {file}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["files"][0]["code_objects"]
        .as_array()
        .expect("code_objects")
        .iter()
        .map(|co| (co["arch"].as_str().unwrap().to_string(), co.clone()))
        .collect()
}

/// (kind, id, name) of a code object's entries in `--check --json`, those with an ID.
fn json_entries(co: &serde_json::Value) -> Vec<(String, u64, String)> {
    co["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            Some((
                e["kind"].as_str()?.to_string(),
                e["id"].as_u64()?,
                e["name"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// The gfx9 generation writes every record through M0; gfx10 and later write small headers with
/// `s_ttracedata_imm`.
fn is_gfx9(arch: &str) -> bool {
    sqtt_gfx::Generation::of_name(toolchain_arch(arch)) == Some(sqtt_gfx::Generation::Gfx9)
}

/// The marker headers in a code object's disassembly, in code order (immediates of
/// `s_ttracedata_imm`, constants moved into M0 directly before the nop and `s_ttracedata`),
/// and the number of `s_ttracedata` records through M0.
fn disassembled_headers(co: &Path, arch: &str) -> (Vec<u32>, usize) {
    let insts = objdump_instructions(&disassemble(co, toolchain_arch(arch)));
    let mut headers = Vec::new();
    let mut m0_records = 0;
    for (i, inst) in insts.iter().enumerate() {
        if let Some(v) = inst.strip_prefix("s_ttracedata_imm ") {
            let v = v.trim_start_matches("0x");
            headers.push(u32::from_str_radix(v, 16).unwrap_or_else(|_| panic!("{inst}")));
        } else if inst == "s_ttracedata" {
            m0_records += 1;
            assert!(
                i >= 2
                    && matches(&insts[i - 1], "s_nop *")
                    && insts[i - 2].starts_with("s_mov_b32 m0, "),
                "{arch}: s_ttracedata not directly after s_mov_b32 m0 / s_nop: {:?}",
                &insts[i.saturating_sub(3)..=i]
            );
            let value = insts[i - 2].trim_start_matches("s_mov_b32 m0, ");
            let parsed = match value.strip_prefix("0x") {
                Some(h) => u32::from_str_radix(h, 16).ok(),
                None => value.parse().ok(),
            };
            if let Some(v) = parsed {
                headers.push(v);
            }
        }
    }
    (headers, m0_records)
}

/// The code object of `arch` in `binary` carries exactly `funcmap` and the markers of
/// [`MY_KERNEL`] with `headers`.
fn assert_code_object(binary: &Path, arch: &str, dir: &Path, funcmap: &str, what: &str) {
    let co = extract_code_object(binary, toolchain_arch(arch), dir);
    let bytes = dump_funcmap(&co, dir).unwrap_or_else(|| panic!("{what} {arch}: no .sqtt_funcmap"));
    assert_eq!(
        String::from_utf8_lossy(&bytes),
        format!("{funcmap}\0"),
        "{what} {arch}: the funcmap bytes"
    );
    let (headers, m0_records) = disassembled_headers(&co, arch);
    assert_eq!(
        headers, HEADERS,
        "{what} {arch}: the marker headers in code order"
    );
    // gfx9: five headers and the payload through M0; later: only the payload.
    let want_m0 = if is_gfx9(arch) { 6 } else { 1 };
    assert_eq!(m0_records, want_m0, "{what} {arch}: records through M0");
}

/// One optimisation level (and maybe `-g`) on every arch of the lane: one program per arch,
/// built and linked through sqtt-hipcc.
fn level(opts: &[&str]) {
    let d = workdir();
    let dir = d.path();
    std::fs::write(dir.join("k.hip"), kernel_program()).unwrap();
    let debug = opts.contains(&"-g");
    let line = MY_KERNEL
        .lines()
        .position(|l| l.contains("__global__"))
        .unwrap()
        + 1;
    let funcmap = if debug {
        FUNCMAP.replace(
            "K:_Z9my_kernelPfi",
            &format!("K:_Z9my_kernelPfi@k.hip:{line}"),
        )
    } else {
        FUNCMAP.to_string()
    };
    for arch in arches() {
        let what = format!("{} {}", opts.join(" "), arch);
        let app = format!("app-{arch}");
        let mut args = opts.to_vec();
        args.extend(["k.hip", "-o", &app]);
        build(dir, std::slice::from_ref(&arch), &args);
        let cos = check_json(
            dir,
            &app,
            &["kernel:my_kernel", "user:load_phase", "point:store_begin"],
        );
        let co = cos
            .get(toolchain_arch(&arch))
            .unwrap_or_else(|| panic!("{what}: --check lists no {arch} code object: {cos:?}"));
        let mut entries = json_entries(co);
        entries.sort_by_key(|e| e.1);
        let names: Vec<(u64, &str)> = entries.iter().map(|e| (e.1, e.2.as_str())).collect();
        assert_eq!(
            names,
            [
                (1, "load_phase"),
                (2, "compute_phase"),
                (3, "work_value"),
                (4, "store_begin")
            ],
            "{what}: --check --json entries"
        );
        assert_code_object(&dir.join(&app), &arch, dir, &funcmap, &what);
    }
}

#[test]
fn o0_on_every_arch() {
    level(&["-O0"]);
}

#[test]
fn o1_on_every_arch() {
    level(&["-O1"]);
}

#[test]
fn o2_on_every_arch() {
    level(&["-O2"]);
}

#[test]
fn o3_on_every_arch() {
    level(&["-O3"]);
}

#[test]
fn debug_info_at_o0_and_o2_adds_source_locations_only() {
    level(&["-O0", "-g"]);
    level(&["-O2", "-g"]);
}

#[test]
fn several_offload_arches_in_one_binary() {
    let d = workdir();
    let dir = d.path();
    std::fs::write(dir.join("k.hip"), kernel_program()).unwrap();
    let arches = multi_arches();
    assert!(
        arches.len() >= 2,
        "a multi-arch binary needs two arches: {arches:?}"
    );
    build(dir, &arches, &["-O3", "k.hip", "-o", "fat"]);
    let cos = check_json(dir, "fat", &["kernel:my_kernel", "user:compute_phase"]);
    let want: BTreeSet<&str> = arches.iter().map(|a| toolchain_arch(a)).collect();
    let got: BTreeSet<&str> = cos.keys().map(String::as_str).collect();
    assert_eq!(got, want, "--check lists one code object per arch");
    for arch in &arches {
        assert_code_object(&dir.join("fat"), arch, dir, FUNCMAP, "multi-arch");
    }
}

/// Two translation units linked with `-fgpu-rdc`, compiled apart and in one step: every name
/// has one ID, no two names share one, and the disassembled markers use exactly those IDs.
#[test]
fn rdc_ids_are_unique_across_translation_units() {
    let d = workdir();
    let dir = d.path();
    let tu = |kernel: &str, scope: &str, main: bool| {
        format!(
            "#include <hip/hip_runtime.h>\n#include \"markers.hpp\"\n\
             __global__ void {kernel}(float *p) {{ sqtt_marker_enter(\"{scope}\"); p[0] += 1; \
             sqtt_marker_exit(\"{scope}\"); sqtt_marker_point(\"shared_point\"); p[1] = 2; }}\n{}",
            if main {
                "int main() { return 0; }\n"
            } else {
                ""
            }
        )
    };
    std::fs::write(dir.join("a.hip"), tu("ka", "alpha", true)).unwrap();
    std::fs::write(dir.join("b.hip"), tu("kb", "beta", false)).unwrap();
    let arches = multi_arches();
    for f in ["a.hip", "b.hip"] {
        build(dir, &arches, &["-O2", "-fgpu-rdc", "-c", f]);
    }
    build(dir, &arches, &["-fgpu-rdc", "a.o", "b.o", "-o", "app"]);
    build(
        dir,
        &arches,
        &["-O2", "-fgpu-rdc", "a.hip", "b.hip", "-o", "app1"],
    );
    for app in ["app", "app1"] {
        let cos = check_json(
            dir,
            app,
            &[
                "kernel:ka",
                "kernel:kb",
                "user:alpha",
                "user:beta",
                "point:shared_point",
            ],
        );
        for arch in &arches {
            let what = format!("-fgpu-rdc {app} {arch}");
            let co = cos
                .get(toolchain_arch(arch))
                .unwrap_or_else(|| panic!("{what}: no code object in --check"));
            let entries = json_entries(co);
            let mut by_name: BTreeMap<(String, String), BTreeSet<u64>> = BTreeMap::new();
            let mut by_id: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
            for (kind, id, name) in &entries {
                by_name
                    .entry((kind.clone(), name.clone()))
                    .or_default()
                    .insert(*id);
                by_id.entry(*id).or_default().insert(name.clone());
            }
            for (name, ids) in &by_name {
                assert_eq!(
                    ids.len(),
                    1,
                    "{what}: {name:?} has IDs {ids:?}: {entries:?}"
                );
            }
            for (id, names) in &by_id {
                assert_eq!(names.len(), 1, "{what}: ID {id} names {names:?}");
            }
            let id = |name: &str| -> u32 {
                entries
                    .iter()
                    .find(|e| e.2 == name)
                    .map(|e| e.1 as u32)
                    .unwrap_or_else(|| panic!("{what}: no {name} in {entries:?}"))
            };
            // The funcmap bytes hold the same rows.
            let co_file = extract_code_object(&dir.join(app), toolchain_arch(arch), dir);
            let text = String::from_utf8(dump_funcmap(&co_file, dir).expect("funcmap")).unwrap();
            for row in [
                format!("U:{}:alpha", id("alpha")),
                format!("U:{}:beta", id("beta")),
                format!("P:{}:shared_point", id("shared_point")),
            ] {
                assert_eq!(
                    text.split(['\n', '\0']).filter(|r| *r == row).count(),
                    1,
                    "{what}: row {row} once in {text:?}"
                );
            }
            // Each kernel's markers: enter, exit, the shared point, with those IDs.
            let (mut headers, _) = disassembled_headers(&co_file, arch);
            headers.sort();
            let mut want = vec![
                (id("alpha") << 2) | 2,
                1,
                id("shared_point") << 2,
                (id("beta") << 2) | 2,
                1,
                id("shared_point") << 2,
            ];
            want.sort();
            assert_eq!(headers, want, "{what}: the disassembled marker headers");
        }
    }
}

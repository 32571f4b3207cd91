//! Robustness on code nobody here wrote: Debian's rocPRIM and rocRAND headers compiled with
//! every feature on. The LLVM verifier runs on the instrumented device IR and on the machine
//! code (`-verify-machineinstrs`); nothing may crash and every funcmap must be valid.
//! `ci/corpus.sh` compiles the larger corpus the same way and prints the counts.

use std::path::Path;
use std::process::Command;

use sqtt_e2e::toolchain::*;
use sqtt_markers::Funcmap;

use sqtt_e2e::kernels::EVERY_FEATURE as EVERYTHING;

const ADDRESSES: &[(&str, &str)] = &[
    ("SQTT_INSTRUMENT_FUNCTIONS", "10"),
    ("SQTT_INSTRUMENT_BARRIERS", "1"),
    ("SQTT_TRACE_ADDRESSES", "memory,lds"),
];

/// Compiles one corpus file; returns (kernels, marker rows, s_ttracedata count).
fn compile_checked(file: &str, arch: &str, env: &[(&str, &str)]) -> (usize, usize, usize) {
    let src = repo_root().join("tests/corpus").join(file);
    let dir = workdir();
    // Instrumented device IR, through the verifier.
    let bc = dir.path().join("k.bc");
    let mut c = hipcc_with_plugin(arch);
    c.envs(env.iter().copied())
        .args([
            "-std=c++17",
            "--cuda-device-only",
            "-c",
            "-emit-llvm",
            "-Wno-unused-result",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&bc);
    run_ok(&mut c);
    run_ok(
        Command::new(llvm_tool("opt"))
            .args(["-passes=verify", "-disable-output"])
            .arg(&bc),
    );
    // Machine code with the machine verifier.
    let obj = dir.path().join("k.co");
    let mut c = hipcc_with_plugin(arch);
    c.envs(env.iter().copied())
        .args([
            "-std=c++17",
            "--cuda-device-only",
            "-c",
            "-Wno-unused-result",
            "-mllvm",
            "-verify-machineinstrs",
        ])
        .arg("--no-gpu-bundle-output")
        .arg(&src)
        .arg("-o")
        .arg(&obj);
    run_ok(&mut c);
    let bytes =
        dump_funcmap(&obj, dir.path()).unwrap_or_else(|| panic!("{file} {arch}: no .sqtt_funcmap"));
    let map = Funcmap::parse(&bytes).unwrap();
    assert!(
        map.validate().is_empty(),
        "{file} {arch}: {:?}",
        map.validate()
    );
    let kernels = map.kernels().count();
    let markers = map.entries.len() - kernels;
    let traces = count_matching(
        &objdump_instructions(&disassemble(Path::new(&obj), arch)),
        "s_ttracedata*",
    );
    eprintln!("corpus: {file} {arch}: {kernels} kernels, {markers} marker rows, {traces} trace instructions");
    (kernels, markers, traces)
}

#[test]
fn rocrand_generators_with_every_feature() {
    for arch in ["gfx90a", "gfx1030"] {
        let (kernels, markers, traces) =
            compile_checked("rocrand_generators.hip", arch, EVERYTHING);
        assert_eq!(kernels, 1);
        assert!(markers >= 5 && traces > 10, "{markers} {traces}");
        let (_, markers, _) = compile_checked("rocrand_generators.hip", arch, ADDRESSES);
        assert!(markers > 3);
    }
}

#[test]
fn rocprim_scan_reduce_with_every_feature() {
    let (kernels, markers, traces) =
        compile_checked("rocprim_scan_reduce.hip", "gfx90a", EVERYTHING);
    assert!(kernels >= 4, "{kernels}");
    assert!(markers >= 5 && traces > 50, "{markers} {traces}");
}

/// The whole corpus on two arches (slow: about a minute and a half per rocPRIM build);
/// `ci/corpus.sh` runs it and prints the counts.
#[test]
#[ignore = "slow; run by ci/corpus.sh"]
fn full_corpus() {
    let mut totals = (0, 0, 0);
    for file in [
        "rocprim_algorithms.hip",
        "rocprim_scan_reduce.hip",
        "rocrand_generators.hip",
    ] {
        for arch in ["gfx90a", "gfx1030"] {
            for env in [EVERYTHING, ADDRESSES] {
                let (k, m, t) = compile_checked(file, arch, env);
                totals = (totals.0 + k, totals.1 + m, totals.2 + t);
            }
        }
    }
    eprintln!(
        "corpus total: {} kernels, {} marker rows, {} trace instructions, verifier clean",
        totals.0, totals.1, totals.2
    );
}

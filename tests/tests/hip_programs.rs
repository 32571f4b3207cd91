//! Whole HIP programs through the lane's real hipcc (tests/fixtures/hip/program.hip: HIP headers,
//! `sqrtf` from the device libraries, a host `main`): per arch and for the lane's multi-arch set,
//! hipcc compiles and links it, it runs (no GPU here: it prints `no device`, exit 0) and every
//! code object disassembles; where `-fpass-plugin` goes; the plugin's work surviving the new
//! offload driver and `-fgpu-rdc`; `sqtt-hipcc` building the multi-arch program with the exact
//! funcmap in each code object and `--check` passing; on gfx1250, `s_get_shader_cycles_u64`
//! assembling. Arches: `SQTT_TEST_ARCHES` / `SQTT_TEST_MULTI_ARCH`, else the host's.

use std::path::{Path, PathBuf};
use std::process::Command;

use sqtt_e2e::checks::Checks;
use sqtt_e2e::driver::{driver, wrapper};
use sqtt_e2e::toolchain::*;

/// Arches of the host's hipcc 5.2.3 (clang 15) when no lane names its own.
const HOST_ARCHES: &[&str] = &["gfx90a", "gfx1030", "gfx1100"];

fn arches() -> Vec<String> {
    lane_arches(HOST_ARCHES)
}

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/hip").join(name)
}

const PROGRAM_FUNCMAP: &str = "K:_Z19lane_program_kernelPfi
U:1:compute";

/// Runs a built program: without a GPU it prints `no device`, with one `ran`; exit 0 either way.
fn runs(c: &mut Checks, name: &str, program: &Path) {
    let o = run(&mut Command::new(program));
    let out = String::from_utf8_lossy(&o.stdout);
    let first = out.lines().next().unwrap_or("");
    c.check(
        format!("{name}: the program runs"),
        o.status.success() && (first == "no device" || first == "ran"),
        || {
            format!(
                "{} with stdout {out:?} stderr {:?}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            )
        },
    );
}

/// hipcc compiles and links program.hip (without the plugin) for one arch and for the multi-arch
/// set; the program runs; each arch's code object disassembles (`v_sqrt_f32`, `s_endpgm`).
#[test]
fn hipcc_builds_and_runs_the_program() {
    let arches = arches();
    let mut sets: Vec<Vec<String>> = arches.iter().map(|a| vec![a.clone()]).collect();
    sets.push(test_multi_arch(&arches));
    let dir = workdir();
    let mut c = Checks::new();
    for set in sets {
        let n = format!("hipcc {}", set.join("+"));
        let prog = dir.path().join(format!("program-{}", set.join("+")));
        let mut cmd = plain_hipcc(&set[0]);
        for a in &set[1..] {
            cmd.args(arch_args(a));
        }
        let o = run(cmd
            .arg(format!("-I{}", markers_include().display()))
            .arg(fixture("program.hip"))
            .arg("-o")
            .arg(&prog));
        if !c.ran(format!("{n}: compile and link"), &o) {
            continue;
        }
        runs(&mut c, &n, &prog);
        for a in &set {
            let sub = dir.path().join(format!("{}-{a}", set.join("+")));
            std::fs::create_dir_all(&sub).unwrap();
            let insts = objdump_instructions(&disassemble(&extract_code_object(&prog, a, &sub), a));
            c.check(
                format!("{n}: the {a} code object disassembles (v_sqrt_f32, s_endpgm)"),
                count_matching(&insts, "v_sqrt_f32*") + count_matching(&insts, "s_endpgm") > 0,
                || {
                    format!(
                        "{} instructions, neither v_sqrt_f32 nor s_endpgm",
                        insts.len()
                    )
                },
            );
        }
    }
    c.finish();
}

/// `-fpass-plugin` reaches the device cc1 that emits the code object: hipcc keeps clang's old
/// offload driver by default (no clang-linker-wrapper, which would generate code without the
/// plugin).
#[test]
fn pass_plugin_reaches_the_device_compile() {
    let dir = workdir();
    let arch = &arches()[0];
    let o = run(plain_hipcc(arch)
        .args(["-###", "-fpass-plugin=/nonexistent/plugin.so", "-c"])
        .arg(fixture("program.hip"))
        .arg("-o")
        .arg(dir.path().join("pp.o")));
    assert!(o.status.success(), "hipcc -###: {}", stderr_tail(&o));
    let text =
        String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    let device: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"-cc1\" \"-triple\" \"amdgcn"))
        .collect();
    assert!(
        device
            .iter()
            .any(|l| l.contains("\"-emit-obj\"")
                && l.contains("-fpass-plugin=/nonexistent/plugin.so")),
        "no device cc1 line with -emit-obj and -fpass-plugin:\n{}",
        device.join("\n")
    );
    assert!(
        !text.contains("clang-linker-wrapper"),
        "clang-linker-wrapper runs by default:\n{text}"
    );
}

/// The plugin's work is IR (markers as inline asm, the funcmap a global), so it survives the
/// other ways hipcc generates code: the new offload driver (the device cc1 emits bitcode,
/// clang-linker-wrapper generates the code) and `-fgpu-rdc` (lld's LTO). The code object, taken
/// out with `llvm-objdump --offloading`, has the funcmap and both markers.
#[test]
fn new_offload_driver_and_rdc_keep_the_markers() {
    if llvm_major() < 21 {
        // Checked with hipcc 7.x (LLVM 21+, the sid and experimental lanes): LLVM 15's
        // llvm-objdump --offloading writes no code object out of either linked program.
        eprintln!("LLVM {}: not checked here", llvm_major());
        return;
    }
    let arch = arches()[0].clone();
    let mut c = Checks::new();
    for mode in ["--offload-new-driver", "-fgpu-rdc"] {
        let n = format!("hipcc {mode} {arch} program");
        let dir = workdir();
        let prog = dir.path().join("program");
        let o = run(hipcc_with_plugin(&arch)
            .env("SQTT_SCOPE_CU", "-1")
            .arg(mode)
            .arg(fixture("program.hip"))
            .arg("-o")
            .arg(&prog));
        if !c.ran(format!("{n}: hipcc"), &o) {
            continue;
        }
        // The new driver's bundle names the target hip-amdgcn-..., the old one hipv4-amdgcn-...
        run(Command::new(llvm_tool("llvm-objdump"))
            .arg("--offloading")
            .arg(&prog)
            .current_dir(dir.path()));
        let suffix = format!("amdgcn-amd-amdhsa--{arch}");
        let co = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                let f = p.file_name().unwrap().to_string_lossy();
                f.starts_with("program.") && f.ends_with(&suffix)
            });
        let Some(co) = c.step(
            format!("{n}: extract the {arch} code object"),
            co.ok_or_else(|| "llvm-objdump --offloading wrote none".to_string()),
        ) else {
            continue;
        };
        c.funcmap(&n, &co, PROGRAM_FUNCMAP);
        let insts = objdump_instructions(&disassemble(&co, &arch));
        c.eq(
            format!("{n}: markers in the code object"),
            count_matching(&insts, "s_ttracedata*"),
            2,
        );
    }
    c.finish();
}

/// `sqtt-hipcc` builds and links the program for the lane's multi-arch set; it runs; `sqtt-hipcc
/// --check` passes on it; each arch's code object has the exact funcmap. When the host's
/// `target/debug/sqtt-hipcc` is there (a chroot lane runs on a newer glibc), it checks the
/// program too.
#[test]
fn wrapper_builds_the_multi_arch_program() {
    let fat = test_multi_arch(&arches());
    let dir = workdir();
    let prog = dir.path().join("wrapped-program");
    let mut cmd = wrapper(dir.path());
    for a in &fat {
        cmd.args(arch_args(a));
    }
    let o = run(cmd
        .arg(format!("-I{}", markers_include().display()))
        .arg(fixture("program.hip"))
        .arg("-o")
        .arg(&prog));
    assert!(o.status.success(), "sqtt-hipcc: {}", stderr_tail(&o));
    let mut c = Checks::new();
    let n = format!("sqtt-hipcc {}", fat.join("+"));
    runs(&mut c, &n, &prog);
    let check = run(driver(dir.path()).arg("--check").arg(&prog));
    c.check(
        format!("{n}: sqtt-hipcc --check"),
        check.status.success(),
        || stderr_tail(&check),
    );
    for a in &fat {
        let a = toolchain_arch(a);
        let sub = dir.path().join(a);
        std::fs::create_dir_all(&sub).unwrap();
        c.funcmap(
            format!("{n}: {a} code object"),
            &extract_code_object(&prog, a, &sub),
            PROGRAM_FUNCMAP,
        );
    }
    let host = repo_root().join("target/debug/sqtt-hipcc");
    if host.exists() && host != sqtt_e2e::driver::sqtt_hipcc() {
        let o = run(Command::new(&host).arg("--check").arg(&prog));
        c.check(
            format!("{n}: the host-built sqtt-hipcc --check"),
            o.status.success(),
            || stderr_tail(&o),
        );
    }
    c.finish();
}

/// gfx1250's 64-bit shader clock: `s_get_shader_cycles_u64 s[N:N+1]` in a kernel's inline
/// assembly assembles and disassembles back (lanes with gfx1250 only).
#[test]
fn gfx1250_assembles_shader_cycles_u64() {
    if !arches().iter().any(|a| a == "gfx1250") {
        eprintln!("no gfx1250 in this lane: nothing to check");
        return;
    }
    let dir = workdir();
    let co = dir.path().join("cycles.co");
    run_ok(
        plain_hipcc("gfx1250")
            .args(["--cuda-device-only", "-c", "--no-gpu-bundle-output", "-O3"])
            .arg(fixture("cycles_u64.hip"))
            .arg("-o")
            .arg(&co),
    );
    let insts = objdump_instructions(&disassemble(&co, "gfx1250"));
    assert_eq!(
        count_matching(&insts, "s_get_shader_cycles_u64 s[*:*]"),
        1,
        "{insts:#?}"
    );
}

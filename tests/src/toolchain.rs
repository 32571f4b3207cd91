//! Helpers for the end-to-end tests: the real hipcc, clang, llvm-objdump and friends, the built
//! plugin, and temporary work directories.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::SystemTime;

/// The workspace root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The cargo target directory the tests run from.
pub fn target_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CARGO_TARGET_DIR") {
        let d = PathBuf::from(d);
        return if d.is_absolute() {
            d
        } else {
            repo_root().join(d)
        };
    }
    // target/<profile>/deps/<test binary>
    let exe = std::env::current_exe().expect("current exe");
    exe.ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "target"))
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repo_root().join("target"))
}

/// The directory of the profile the tests run in (`target/<profile>`), where cargo puts the
/// binaries it builds.
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    // .../target/<profile>/deps/test-xxxx
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| target_dir().join("debug"))
}

/// The newest modification time of a file, or of the files below a directory.
fn newest_mtime(dir: &Path) -> SystemTime {
    if dir.is_file() {
        return dir
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
    }
    let mut newest = SystemTime::UNIX_EPOCH;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            let t = if p.is_dir() {
                newest_mtime(&p)
            } else {
                e.metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH)
            };
            newest = newest.max(t);
        }
    }
    newest
}

/// The plugin shared object: `SQTT_PLUGIN`, or the one cargo built next to these tests. Panics
/// with the command to run when it is missing or older than its sources (cargo test does not
/// build cdylibs).
pub fn plugin_path() -> PathBuf {
    if let Some(p) = std::env::var_os("SQTT_PLUGIN") {
        return PathBuf::from(p);
    }
    let so = profile_dir().join("libsqtt_plugin.so");
    let built = so
        .metadata()
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| {
            panic!(
                "{} is missing: run `cargo build -p sqtt-plugin` first (ci/test.sh does)",
                so.display()
            )
        });
    // The sources of this build, from cargo's dep-info (a file compiled only for another LLVM,
    // such as registration/own.rs, does not make it stale); the source trees without one.
    let sources: Vec<PathBuf> = match std::fs::read_to_string(so.with_extension("d")) {
        Ok(d) => d
            .lines()
            .next()
            .and_then(|l| l.split_once(": "))
            .map(|(_, deps)| deps.split_whitespace().map(PathBuf::from).collect())
            .unwrap_or_default(),
        Err(_) => ["plugin/src", "plugin/shim", "markers/src", "config/src"]
            .iter()
            .map(|s| repo_root().join(s))
            .collect(),
    };
    for src in &sources {
        assert!(
            newest_mtime(src) <= built,
            "{} is older than {}: run `cargo build -p sqtt-plugin` first (ci/test.sh does)",
            so.display(),
            src.display()
        );
    }
    so
}

/// Directory of markers.hpp.
pub fn markers_include() -> PathBuf {
    repo_root().join("markers/include")
}

/// The real hipcc (`SQTT_TEST_HIPCC` or `hipcc` on PATH).
pub fn hipcc() -> PathBuf {
    std::env::var_os("SQTT_TEST_HIPCC")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("hipcc"))
}

/// A tool of the LLVM the tests run against (`llvm-objdump-15`, ...): `SQTT_TEST_LLVM_SUFFIX`
/// picks the version (default `-15`).
pub fn llvm_tool(name: &str) -> String {
    let suffix = std::env::var("SQTT_TEST_LLVM_SUFFIX").unwrap_or_else(|_| "-15".into());
    format!("{name}{suffix}")
}

/// A device library directory that has `oclc_isa_version_1100.bc`: `SQTT_DEVICE_LIB_PATH` when a
/// lane sets it (ci/llvm16-lane.sh's generated one, or the real rocm-device-libs of hipcc 7.x in
/// the sid chroot, which live in clang's resource directory), else a copy of Debian bookworm's
/// (hipcc 5.2.3's, which lack gfx11) with the gfx11 files generated, made once under the target
/// directory and reused by every later test run.
pub fn device_lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(d) = std::env::var_os("SQTT_DEVICE_LIB_PATH").map(PathBuf::from) {
            assert!(
                d.join("oclc_isa_version_1100.bc").exists(),
                "SQTT_DEVICE_LIB_PATH={} has no oclc_isa_version_1100.bc",
                d.display()
            );
            return d;
        }
        let dir = target_dir().join(format!("e2e-devlibs{}", llvm_tool("")));
        if dir.join("oclc_isa_version_1102.bc").exists() {
            return dir;
        }
        let src = [
            "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
            "/usr/lib/amdgcn/bitcode",
        ]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("oclc_isa_version_1030.bc").exists())
        .expect("ROCm device libs (rocm-device-libs) are not installed");
        // Built aside and renamed into place, so that test processes running at once never
        // see half a directory.
        let tmp = target_dir().join(format!("e2e-devlibs-tmp-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        for e in std::fs::read_dir(&src).unwrap().flatten() {
            std::fs::copy(e.path(), tmp.join(e.file_name())).unwrap();
        }
        for (gfx, num) in [("1100", "11000"), ("1101", "11001"), ("1102", "11002")] {
            let out = tmp.join(format!("oclc_isa_version_{gfx}.bc"));
            let script = format!(
                "{} {}/oclc_isa_version_1030.bc -o - | sed 's/i32 10300/i32 {num}/' | {} -o {}",
                llvm_tool("llvm-dis"),
                src.display(),
                llvm_tool("llvm-as"),
                out.display()
            );
            let st = Command::new("sh").arg("-c").arg(&script).status().unwrap();
            assert!(st.success(), "making {}", out.display());
        }
        if std::fs::rename(&tmp, &dir).is_err() {
            // Another test process got there first.
            let _ = std::fs::remove_dir_all(&tmp);
        }
        dir
    })
}

/// The LLVM major the tests run against: `SQTT_LLVM_MAJOR` (the lanes set it), else the number in
/// `SQTT_TEST_LLVM_SUFFIX`, else 15 (bookworm's hipcc 5.2.3).
pub fn llvm_major() -> u32 {
    std::env::var("SQTT_LLVM_MAJOR")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .or_else(|| {
            std::env::var("SQTT_TEST_LLVM_SUFFIX")
                .ok()
                .and_then(|s| s.trim_start_matches('-').parse().ok())
        })
        .unwrap_or(15)
}

/// The arch to ask the toolchain for. The tests name gfx940 for MI300 because hipcc 5.2.3's clang
/// 15 does not know gfx942; LLVM 20 and later dropped gfx940 (gfx942 is the same GFX940-family
/// target).
pub fn toolchain_arch(arch: &str) -> &str {
    if arch == "gfx940" && llvm_major() >= 20 {
        "gfx942"
    } else {
        arch
    }
}

/// Extra hipcc arguments that an arch needs on this machine.
pub fn arch_args(arch: &str) -> Vec<String> {
    let arch = toolchain_arch(arch);
    let mut v = vec![format!("--offload-arch={arch}")];
    if sqtt_gfx::Generation::of_name(arch) == Some(sqtt_gfx::Generation::Gfx11) {
        v.push(format!(
            "--rocm-device-lib-path={}",
            device_lib_dir().display()
        ));
    }
    v
}

/// A fresh temporary directory that lives as long as the value.
pub fn workdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("sqtt-e2e-")
        .tempdir()
        .expect("temp dir")
}

/// Runs a command, returning its output.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Runs a command that must succeed; returns stdout.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A hipcc command with the plugin loaded by hand and markers enabled, with a clean SQTT_*
/// environment (the test sets what it needs).
pub fn hipcc_with_plugin(arch: &str) -> Command {
    let mut c = plain_hipcc(arch);
    c.arg("-DSQTT_ENABLED=1")
        .arg(format!("-I{}", markers_include().display()))
        .arg(format!("-fpass-plugin={}", plugin_path().display()));
    c
}

/// hipcc for one arch with every `SQTT_*` variable removed from its environment.
pub fn plain_hipcc(arch: &str) -> Command {
    let mut c = Command::new(hipcc());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SQTT_") && k != "SQTT_PLUGIN" {
            c.env_remove(k);
        }
    }
    c.args(arch_args(arch));
    c
}

/// Device assembly of `src` for `arch`: `--cuda-device-only -S`.
pub fn device_asm(
    dir: &Path,
    src: &str,
    arch: &str,
    env: &[(&str, &str)],
    extra: &[&str],
) -> String {
    let file = dir.join("k.hip");
    std::fs::write(&file, src).unwrap();
    let out = dir.join(format!("k-{arch}.s"));
    let mut c = hipcc_with_plugin(arch);
    c.args(["--cuda-device-only", "-S"])
        .args(extra)
        .arg(&file)
        .arg("-o")
        .arg(&out);
    for (k, v) in env {
        c.env(k, v);
    }
    run_ok(&mut c);
    std::fs::read_to_string(&out).unwrap()
}

/// The instructions of one function in an assembly listing (no comments, labels or directives).
pub fn function_instructions(asm: &str, symbol: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in asm.lines() {
        let t = line.trim();
        if t.starts_with(&format!("{symbol}:")) {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if t.starts_with(".Lfunc_end") {
            break;
        }
        if t.starts_with("; sched_barrier") {
            out.push("sched_barrier".to_string());
            continue;
        }
        let code = t.split(';').next().unwrap_or("").trim();
        if code.is_empty() || code.starts_with('.') || code.ends_with(':') {
            continue;
        }
        out.push(code.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    out
}

/// All instructions of an assembly listing.
pub fn all_instructions(asm: &str) -> Vec<String> {
    asm.lines()
        .map(|l| l.trim().split(';').next().unwrap_or("").trim().to_string())
        .filter(|c| {
            !c.is_empty() && !c.starts_with('.') && !c.ends_with(':') && !c.starts_with("//")
        })
        .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// Whether an instruction matches a pattern, where `*` stands for any run of characters.
pub fn matches(inst: &str, pattern: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return inst == pattern;
    }
    let mut rest = match inst.strip_prefix(parts[0]) {
        Some(r) => r,
        None => return false,
    };
    for (i, part) in parts[1..].iter().enumerate() {
        let last = i == parts.len() - 2;
        if last {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(pos) => rest = &rest[pos + part.len()..],
            None => return false,
        }
    }
    true
}

/// Whether `seq` occurs as consecutive instructions in `insts`.
pub fn contains_sequence(insts: &[String], seq: &[&str]) -> bool {
    insts
        .windows(seq.len())
        .any(|w| w.iter().zip(seq).all(|(a, b)| matches(a, b)))
}

/// How many instructions match a pattern.
pub fn count_matching(insts: &[String], pattern: &str) -> usize {
    insts.iter().filter(|i| matches(i, pattern)).count()
}

/// The `.sqtt_funcmap` rows of an assembly listing (`.asciz` of the section).
pub fn funcmap_from_asm(asm: &str) -> Option<String> {
    let mut in_section = false;
    for line in asm.lines() {
        let t = line.trim();
        if t.starts_with(".section") {
            in_section = t.contains(".sqtt_funcmap");
            continue;
        }
        if in_section {
            if let Some(rest) = t.strip_prefix(".asciz") {
                let s = rest.trim().trim_matches('"');
                return Some(s.replace("\\n", "\n"));
            }
        }
    }
    None
}

/// Extracts the device code object of `arch` from a host binary or object with the real tools
/// (llvm-objcopy and clang-offload-bundler), independent of the project's own reader.
pub fn extract_code_object(binary: &Path, arch: &str, dir: &Path) -> PathBuf {
    let fatbin = dir.join("fatbin.bin");
    run_ok(
        Command::new(llvm_tool("llvm-objcopy"))
            .arg(format!("--dump-section=.hip_fatbin={}", fatbin.display()))
            .arg(binary)
            .arg(dir.join("objcopy-discard")),
    );
    let out = dir.join(format!("co-{arch}"));
    run_ok(
        Command::new(llvm_tool("clang-offload-bundler"))
            .args(["--unbundle", "--type=o"])
            .arg(format!("--input={}", fatbin.display()))
            .arg(format!("--targets=hipv4-amdgcn-amd-amdhsa--{arch}"))
            .arg(format!("--output={}", out.display())),
    );
    out
}

/// The `.sqtt_funcmap` bytes of a code object, dumped by llvm-objcopy.
pub fn dump_funcmap(code_object: &Path, dir: &Path) -> Option<Vec<u8>> {
    let out = dir.join("funcmap.bin");
    let st = run(Command::new(llvm_tool("llvm-objcopy"))
        .arg(format!("--dump-section=.sqtt_funcmap={}", out.display()))
        .arg(code_object)
        .arg(dir.join("objcopy-discard2")));
    if !st.status.success() {
        return None;
    }
    std::fs::read(out).ok()
}

/// Disassembly of a code object.
pub fn disassemble(code_object: &Path, arch: &str) -> String {
    run_ok(
        Command::new(llvm_tool("llvm-objdump"))
            .arg("-d")
            .arg(format!("--mcpu={arch}"))
            .arg(code_object),
    )
}

/// Instruction mnemonics+operands of an llvm-objdump listing.
pub fn objdump_instructions(dis: &str) -> Vec<String> {
    dis.lines()
        .filter_map(|l| {
            let t = l.trim();
            // "s_mov_b32 m0, 6                 // 000000001020: BEFC0086"
            if t.is_empty()
                || t.ends_with(':')
                || t.starts_with("Disassembly")
                || t.contains("file format")
            {
                return None;
            }
            let code = t.split("//").next().unwrap_or("").trim();
            (!code.is_empty()).then(|| code.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .collect()
}

/// Runs the pass on LLVM IR with `opt -passes=sqtt` under the given `SQTT_*` variables (and no
/// others from the test's environment).
pub fn opt_sqtt(ir: &str, env: &[(&str, &str)]) -> Output {
    opt_passes(ir, "sqtt", env)
}

/// Runs `opt -passes=PASSES -S` with the plugin loaded on LLVM IR, under the given `SQTT_*`
/// variables (and no others from the test's environment).
pub fn opt_passes(ir: &str, passes: &str, env: &[(&str, &str)]) -> Output {
    let dir = workdir();
    let input = dir.path().join("in.ll");
    std::fs::write(&input, ir).unwrap();
    let mut c = Command::new(llvm_tool("opt"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SQTT_") && k != "SQTT_PLUGIN" {
            c.env_remove(k);
        }
    }
    c.envs(env.iter().copied())
        .arg(format!("-load-pass-plugin={}", plugin_path().display()))
        .arg(format!("-passes={passes}"))
        .arg("-S")
        .arg(&input);
    run(&mut c)
}

/// The trace records of a disassembly (see [`objdump_instructions`]), in order: the immediate of
/// `s_ttracedata_imm` in decimal, or the value last moved into M0 before an `s_ttracedata`
/// (`s*` for a register).
pub fn trace_record_values(insts: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut m0 = String::from("?");
    for i in insts {
        if let Some(v) = i.strip_prefix("s_mov_b32 m0, ") {
            m0 = if v.starts_with('s') {
                "s*".into()
            } else {
                v.to_string()
            };
        } else if let Some(v) = i.strip_prefix("s_ttracedata_imm ") {
            let v = v.trim_start_matches("0x");
            out.push(u32::from_str_radix(v, 16).unwrap().to_string());
        } else if i == "s_ttracedata" {
            out.push(m0.clone());
        }
    }
    out
}

/// [`opt_sqtt`] that must succeed; returns the IR it printed.
pub fn opt_sqtt_ok(ir: &str, env: &[(&str, &str)]) -> String {
    let out = opt_sqtt(ir, env);
    assert!(
        out.status.success(),
        "opt failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// How an `s_ttracedata_imm <v>` record the pass made reads in IR on the LLVM under test: the
/// real intrinsic from LLVM 19, an `asm sideeffect` before (which has no such intrinsic).
pub fn imm_record_ir(v: u32) -> String {
    if llvm_major() >= 19 {
        format!("call void @llvm.amdgcn.s.ttracedata.imm(i16 {v})")
    } else {
        format!("call void asm sideeffect \"s_ttracedata_imm 0x{v:x}\", \"\"()")
    }
}

/// The value of an `s_ttracedata_imm` record in a line of IR (either form of [`imm_record_ir`]).
pub fn imm_record_value(line: &str) -> Option<u32> {
    let line = line.trim();
    if let Some(rest) = line.strip_prefix("call void @llvm.amdgcn.s.ttracedata.imm(i16 ") {
        return rest.split(')').next()?.trim().parse().ok();
    }
    let rest = line.strip_prefix("call void asm sideeffect \"s_ttracedata_imm 0x")?;
    u32::from_str_radix(rest.split('"').next()?, 16).ok()
}

/// Those of `cpus` that the llc under test knows (`llc -mcpu=help`); says which it leaves out.
pub fn llc_known_cpus<'a>(cpus: &[&'a str]) -> Vec<&'a str> {
    let known = llc_cpus();
    let (yes, no): (Vec<&str>, Vec<&str>) =
        cpus.iter().partition(|c| known.iter().any(|k| k == *c));
    if !no.is_empty() {
        eprintln!(
            "{} does not know {no:?}: not checked here",
            llvm_tool("llc")
        );
    }
    yes
}

/// The AMDGPU processors the llc under test lists (`-mcpu=help`, the lines before its
/// "Available features" heading).
pub fn llc_cpus() -> Vec<String> {
    let out = run(Command::new(llvm_tool("llc")).args(["-march=amdgcn", "-mcpu=help"]));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    text.lines()
        .take_while(|l| !l.starts_with("Available features"))
        .filter(|l| l.contains(" - "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// `llc -filetype=obj` of IR for a target, disassembled with the llvm-objdump under test.
pub fn llc_objdump(ir: &str, cpu: &str) -> Vec<String> {
    let dir = workdir();
    let ll = dir.path().join("k.ll");
    std::fs::write(&ll, ir).unwrap();
    let obj = dir.path().join("k.o");
    run_ok(
        Command::new(llvm_tool("llc"))
            .args(["-mtriple=amdgcn-amd-amdhsa", "-filetype=obj"])
            .arg(format!("-mcpu={cpu}"))
            .arg(&ll)
            .arg("-o")
            .arg(&obj),
    );
    objdump_instructions(&disassemble(&obj, cpu))
}

/// The last lines of a command's stderr, for a failure message.
pub fn stderr_tail(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

/// [`test_arches`] as this toolchain spells them ([`toolchain_arch`]: gfx940 is gfx942 from
/// LLVM 20).
pub fn lane_arches(default: &[&str]) -> Vec<String> {
    test_arches(default)
        .iter()
        .map(|a| toolchain_arch(a).to_string())
        .collect()
}

/// The arches a lane names in `SQTT_TEST_ARCHES` (its row of ci/lanes.tsv, set by the lane
/// scripts; `A+B` entries, the multi-arch binary, left out), else `default` (the host's).
pub fn test_arches(default: &[&str]) -> Vec<String> {
    match std::env::var("SQTT_TEST_ARCHES") {
        Ok(v) => {
            let a: Vec<String> = v
                .split_whitespace()
                .filter(|a| !a.contains('+') && *a != "-")
                .map(String::from)
                .collect();
            // A lane that sets no arch has lost its row of ci/lanes.tsv: never fall back.
            assert!(!a.is_empty(), "SQTT_TEST_ARCHES={v:?} names no arch");
            a
        }
        Err(_) => default.iter().map(|a| a.to_string()).collect(),
    }
}

/// The arches of the lane's one multi-arch binary (`SQTT_TEST_MULTI_ARCH`), else `default`.
pub fn test_multi_arch(default: &[String]) -> Vec<String> {
    match std::env::var("SQTT_TEST_MULTI_ARCH") {
        Ok(v) if !v.trim().is_empty() => v.split_whitespace().map(String::from).collect(),
        _ => default.to_vec(),
    }
}

/// The marker records of an instruction list ([`all_instructions`] of an assembly listing or
/// [`objdump_instructions`] of a disassembly), in order, one word each:
/// - `imm:0x<hex>` for `s_ttracedata_imm`;
/// - `m0:<value>` for `s_ttracedata`, with the value last written to M0: decimal, `dyn` when it
///   came from a VGPR (`v_readfirstlane_b32`), `?` when unknown. Unoptimised code moves the
///   value through an SGPR or two first, which is followed.
///
/// A trailing `+nop` means the record is the whole unit `s_mov_b32 m0, <v>` / `s_nop N` /
/// `s_ttracedata` with nothing in between (the gfx9 hazard form).
pub fn marker_trace(insts: &[String]) -> Vec<String> {
    fn number(v: &str) -> Option<i64> {
        match v.strip_prefix("0x") {
            Some(h) => i64::from_str_radix(h, 16).ok(),
            None => v.parse().ok(),
        }
    }
    let mut out = Vec::new();
    let mut sgpr: std::collections::HashMap<String, String> = Default::default();
    let mut m0: Option<String> = None;
    // 1 after `s_mov_b32 m0`, 2 after an `s_nop` right behind it.
    let mut unit = 0;
    for inst in insts {
        let mut words = inst.split_whitespace();
        let op = words.next().unwrap_or("");
        let dst = words.next().unwrap_or("").trim_end_matches(',');
        let src = words.next().unwrap_or("");
        match (op, dst) {
            ("s_mov_b32", "m0") => {
                let v = sgpr
                    .get(src)
                    .cloned()
                    .or_else(|| number(src).map(|n| n.to_string()))
                    .unwrap_or_else(|| "?".into());
                m0 = Some(v);
                unit = 1;
            }
            ("v_readfirstlane_b32", "m0") => {
                m0 = Some("dyn".into());
                unit = 0;
            }
            ("s_ttracedata_imm", _) => {
                let v = number(dst).unwrap_or(-1);
                out.push(format!("imm:0x{v:x}"));
                unit = 0;
            }
            ("s_ttracedata", _) => {
                let nop = if unit == 2 { "+nop" } else { "" };
                out.push(format!("m0:{}{nop}", m0.as_deref().unwrap_or("?")));
                unit = 0;
            }
            _ => {
                // Scalar registers that later feed M0.
                if dst.starts_with('s') && dst[1..].chars().all(|c| c.is_ascii_digit()) {
                    match (op, number(src)) {
                        ("s_mov_b32", Some(n)) => {
                            sgpr.insert(dst.to_string(), n.to_string());
                        }
                        // A copy keeps what the source held (-O0 on LLVM 21 copies the
                        // readfirstlane's result once more before the record's `s_mov_b32 m0`).
                        ("s_mov_b32", None) if sgpr.contains_key(src) => {
                            let v = sgpr[src].clone();
                            sgpr.insert(dst.to_string(), v);
                        }
                        ("v_readfirstlane_b32", _) => {
                            sgpr.insert(dst.to_string(), "dyn".into());
                        }
                        _ => {
                            sgpr.remove(dst);
                        }
                    }
                }
                unit = if op == "s_nop" && unit == 1 { 2 } else { 0 };
            }
        }
    }
    out
}

/// The marker instructions of an llvm-objdump listing whose encoding is not the one of `cpu`'s
/// generation (`s_ttracedata` BF960000 on gfx9/gfx10, BFBA0000 from gfx11; `s_ttracedata_imm`
/// BFA8xxxx on gfx10, BFBBxxxx from gfx11, none on gfx9), as `mnemonic=encoding`.
pub fn bad_marker_encodings(dis: &str, cpu: &str) -> Vec<String> {
    let (plain, imm) = if cpu.starts_with("gfx9") {
        ("BF960000", None)
    } else if cpu.starts_with("gfx10") {
        ("BF960000", Some("BFA8"))
    } else {
        ("BFBA0000", Some("BFBB"))
    };
    let mut bad = Vec::new();
    for line in dis.lines() {
        let t = line.trim();
        let op = t.split_whitespace().next().unwrap_or("");
        let enc = t.split_whitespace().last().unwrap_or("").to_uppercase();
        let ok = match op {
            "s_ttracedata" => enc == plain,
            "s_ttracedata_imm" => imm.is_some_and(|p| enc.starts_with(p) && enc.len() == 8),
            _ => true,
        };
        if !ok {
            bad.push(format!("{op}={enc}"));
        }
    }
    bad
}

/// The `N` of `s_nop N` in `cpu`'s M0 record (sqtt-gfx's table).
pub fn nop_of(cpu: &str) -> u32 {
    let target = sqtt_gfx::Target::lookup(cpu).expect("a target of the gfx table");
    target.generation.m0_trace_nop()
}

/// Every `s_ttracedata` is `s_mov_b32 m0, <value>` / `s_nop N` / `s_ttracedata`. Returns the
/// value operands, in order.
pub fn m0_values(insts: &[String], nop: u32, what: &str) -> Vec<String> {
    let nop = format!("s_nop {nop}");
    let mut values = Vec::new();
    for (i, inst) in insts.iter().enumerate() {
        if inst != "s_ttracedata" {
            continue;
        }
        let context = insts[i.saturating_sub(4)..(i + 2).min(insts.len())].join("\n  ");
        assert!(
            i >= 2 && insts[i - 1] == nop,
            "{what}: s_ttracedata #{} not directly after `{nop}`:\n  {context}",
            values.len()
        );
        let value = insts[i - 2].strip_prefix("s_mov_b32 m0, ").unwrap_or_else(|| {
            panic!(
                "{what}: `{nop}` before s_ttracedata #{} not directly after s_mov_b32 m0:\n  {context}",
                values.len()
            )
        });
        values.push(value.to_string());
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_trace_reads_units_registers_and_immediates() {
        let asm = "\
k:
\ts_mov_b32 m0, 6
\t;;#ASMSTART
\ts_nop 0
\ts_ttracedata
\t;;#ASMEND
\ts_mov_b32 s4, 0x1c
\ts_mov_b32 m0, s4
\ts_nop 0
\ts_ttracedata
\tv_readfirstlane_b32 s5, v0
\ts_mov_b32 m0, s5
\ts_add_u32 s0, s0, 1
\ts_ttracedata
\ts_ttracedata_imm 0xc
\tv_readfirstlane_b32 m0, v1
\ts_ttracedata
\tv_readfirstlane_b32 s0, v2
\ts_mov_b32 s1, s0
\ts_mov_b32 m0, s1
\ts_nop 0
\ts_ttracedata
\ts_mov_b32 s2, s9
\ts_mov_b32 m0, s2
\ts_nop 0
\ts_ttracedata
";
        assert_eq!(
            marker_trace(&all_instructions(asm)),
            [
                "m0:6+nop",
                "m0:28+nop",
                "m0:dyn",
                "imm:0xc",
                "m0:dyn",
                "m0:dyn+nop",
                "m0:?+nop"
            ]
        );
    }

    #[test]
    fn bad_marker_encodings_knows_each_generation() {
        let dis = "\
\ts_ttracedata                                               // 000000001024: BF960000
\ts_ttracedata_imm 6                                         // 000000001028: BFBB0006
";
        assert_eq!(
            bad_marker_encodings(dis, "gfx1030"),
            ["s_ttracedata_imm=BFBB0006"]
        );
        assert_eq!(
            bad_marker_encodings(dis, "gfx1100"),
            ["s_ttracedata=BF960000"]
        );
        assert_eq!(
            bad_marker_encodings(dis, "gfx942"),
            ["s_ttracedata_imm=BFBB0006"]
        );
    }
}

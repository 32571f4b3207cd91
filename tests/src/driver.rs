//! Helpers for the tests of the wrapper and of `--check`: the built `sqtt-hipcc`, a fake
//! compiler that records its argument vector, and fixtures with hand-made funcmaps built by the
//! real hipcc.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::toolchain::{hipcc, llvm_tool, plugin_path, profile_dir, repo_root, run_ok};

/// The built `sqtt-hipcc` (`cargo build -p sqtt-hipcc`, which `cargo build --workspace` and
/// ci/test.sh do). Panics with the command to run when it is missing or older than its sources.
pub fn sqtt_hipcc() -> PathBuf {
    if let Some(p) = std::env::var_os("SQTT_TEST_DRIVER") {
        return PathBuf::from(p);
    }
    built_binary(
        "sqtt-hipcc",
        "sqtt-hipcc",
        &[
            "driver/src",
            "codeobj/src",
            "config/src",
            "gfx/src",
            "markers/src",
            "markers/include",
        ],
    )
}

/// The built `sqtt` trace tool (`cargo build -p sqtt-tools`), checked like [`sqtt_hipcc`].
pub fn sqtt_tool() -> PathBuf {
    built_binary(
        "sqtt",
        "sqtt-tools",
        &[
            "tools/src",
            "codeobj/src",
            "config/src",
            "gfx/src",
            "markers/src",
            "thread-trace/src",
        ],
    )
}

fn built_binary(name: &str, package: &str, sources: &[&str]) -> PathBuf {
    let exe = profile_dir().join(name);
    let built = exe
        .metadata()
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| {
            panic!(
                "{} is missing: run `cargo build -p {package}` first (ci/test.sh does)",
                exe.display()
            )
        });
    let root = repo_root();
    for src in sources {
        for e in walk(&root.join(src)) {
            let t = e.metadata().and_then(|m| m.modified()).unwrap();
            assert!(
                t <= built,
                "{} is older than {}: run `cargo build -p {package}` first",
                exe.display(),
                e.display()
            );
        }
    }
    exe
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                v.extend(walk(&p));
            } else {
                v.push(p);
            }
        }
    }
    v
}

/// A `sqtt-hipcc` command with a clean environment: no `SQTT_*` variable but those given later,
/// a private cache directory, and the working directory `cwd`.
/// [`driver`] on the lane's real hipcc and the plugin under test, and nothing else set.
pub fn wrapper(cwd: &Path) -> Command {
    let mut c = driver(cwd);
    c.env("SQTT_HIPCC", hipcc())
        .env("SQTT_PLUGIN", plugin_path());
    c
}

pub fn driver(cwd: &Path) -> Command {
    let mut c = Command::new(sqtt_hipcc());
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("SQTT_") || k.starts_with("HIPCC_") {
            c.env_remove(k);
        }
    }
    c.env("SQTT_CACHE_DIR", cwd.join(".sqtt-cache"));
    c.current_dir(cwd);
    c
}

/// Writes a fake compiler into `dir` that records its arguments (one per line) in
/// `dir/argv.log` and its `SQTT_*`/`HIPCC_*` environment in `dir/env.log`, answers `--version`
/// like clang `FAKE_CLANG` (default 15), prints `FAKE_STDOUT`/`FAKE_STDERR`, and exits with
/// `FAKE_EXIT` (default 0) or kills itself with signal `FAKE_SIGNAL`. When it succeeds it writes
/// its output as a compiler does (`-o FILE`, else `NAME.o` per input with `-c`; `@files` read):
/// a host object without device code, unless `FAKE_NO_OUTPUT` is set.
pub fn fake_compiler(dir: &Path) -> PathBuf {
    let p = dir.join("fake-hipcc");
    let object = dir.join("fake-object.o");
    let mut cc = Command::new("cc");
    cc.args(["-c", "-x", "c", "-", "-o"])
        .arg(&object)
        .stdin(std::process::Stdio::null());
    run_ok(&mut cc);
    let script = format!(
        r#"#!/bin/sh
if [ $# -gt 0 ]; then printf '%s\n' "$@" > '{d}/argv.log'; else : > '{d}/argv.log'; fi
env | grep -E '^(SQTT_|HIPCC_)' | sort > '{d}/env.log'
for a in "$@"; do
  if [ "$a" = "--version" ]; then echo "HIP version: 5.2"; echo "Debian clang version ${{FAKE_CLANG:-15}}.0.6"; fi
done
[ -n "$FAKE_STDOUT" ] && printf '%s' "$FAKE_STDOUT"
[ -n "$FAKE_STDERR" ] && printf '%s' "$FAKE_STDERR" >&2
[ -n "$FAKE_SIGNAL" ] && kill -"$FAKE_SIGNAL" $$
out=; compile=; inputs=; skip=
scan() {{
  for a in "$@"; do
    if [ -n "$skip" ]; then [ "$skip" = o ] && out=$a; skip=; continue; fi
    case "$a" in
      -o) skip=o;;
      -o?*) out=${{a#-o}};;
      -MF|-MT|-MQ|-x|-Xclang|-Xlinker|-Xoffload-linker|-mllvm|-I|-D|-include|-isystem|-Xarch_*) skip=x;;
      -c) compile=1;;
      @*) if [ -f "${{a#@}}" ]; then eval "scan $(cat "${{a#@}}")"; fi;;
      -*) ;;
      *) inputs="$inputs $a";;
    esac
  done
}}
scan "$@"
if [ "${{FAKE_EXIT:-0}}" = 0 ] && [ -z "$FAKE_NO_OUTPUT" ]; then
  if [ -n "$out" ]; then
    [ "$out" = - ] || cp '{o}' "$out"
  elif [ -n "$compile" ]; then
    for i in $inputs; do b=${{i##*/}}; cp '{o}' "${{b%.*}}.o"; done
  fi
fi
exit ${{FAKE_EXIT:-0}}
"#,
        d = dir.display(),
        o = object.display()
    );
    std::fs::write(&p, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// The argument vector the fake compiler last recorded (None when it did not run).
pub fn recorded_argv(dir: &Path) -> Option<Vec<String>> {
    std::fs::read_to_string(dir.join("argv.log"))
        .ok()
        .map(|t| t.lines().map(String::from).collect())
}

/// The `SQTT_*`/`HIPCC_*` environment the fake compiler last saw.
pub fn recorded_env(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("env.log"))
        .map(|t| t.lines().map(String::from).collect())
        .unwrap_or_default()
}

/// A shared object carrying `.sqtt_plugin_info` with `text` (a stand-in plugin for the version
/// check; clang cannot load it).
pub fn fake_plugin(dir: &Path, text: &str) -> PathBuf {
    let src = dir.join("fake_plugin.c");
    std::fs::write(
        &src,
        format!(
            "__attribute__((section(\".sqtt_plugin_info\"), used)) const char info[] = \"{text}\";\n"
        ),
    )
    .unwrap();
    let so = dir.join("libfake_plugin.so");
    run_ok(
        Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&so)
            .arg(&src),
    );
    so
}

/// HIP source whose device code carries a hand-made `.sqtt_funcmap` per arch: `maps` gives
/// `(predefined arch macro, rows)`; other arches get `default`. Kernel `_Z9my_kernelPfi`, a
/// noinline `_Z6helperf` (has a symbol) and nothing called `_Z7inlinedf` (no symbol).
pub fn funcmap_source(maps: &[(&str, &str)], default: Option<&str>) -> String {
    let lit = |rows: &str| format!("{:?}", rows);
    let mut s = String::from("#include <hip/hip_runtime.h>\n");
    let mut first = true;
    for (mac, rows) in maps {
        s.push_str(&format!(
            "#{} defined({mac})\n__attribute__((section(\".sqtt_funcmap\"), used)) __device__ const char sqtt_map[] = {};\n",
            if first { "if" } else { "elif" },
            lit(rows)
        ));
        first = false;
    }
    if let Some(rows) = default {
        s.push_str(&format!(
            "#{}\n__attribute__((section(\".sqtt_funcmap\"), used)) __device__ const char sqtt_map[] = {};\n",
            if first { "if 1" } else { "else" },
            lit(rows)
        ));
        s.push_str("#endif\n");
    } else if !first {
        s.push_str("#endif\n");
    }
    s.push_str(
        r#"
__device__ __attribute__((noinline)) float helper(float x) { return x * 2.0f + 1.0f; }
__global__ void my_kernel(float *p, int n) { if (threadIdx.x < n) p[threadIdx.x] = helper(p[threadIdx.x]); }
int main() { return 0; }
"#,
    );
    s
}

/// Builds `src` with the plain hipcc (no wrapper): `hipcc ARGS src -o out`.
pub fn plain_build(dir: &Path, name: &str, src: &str, args: &[&str], out: &str) -> PathBuf {
    let file = dir.join(name);
    std::fs::write(&file, src).unwrap();
    let o = dir.join(out);
    let mut c = Command::new(hipcc());
    c.current_dir(dir).args(args).arg(&file).arg("-o").arg(&o);
    run_ok(&mut c);
    o
}

/// The plain offload bundle of a host binary (`.hip_fatbin` dumped by llvm-objcopy).
pub fn dump_fatbin(binary: &Path, dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    run_ok(
        Command::new(llvm_tool("llvm-objcopy"))
            .arg(format!("--dump-section=.hip_fatbin={}", out.display()))
            .arg(binary)
            .arg(dir.join("objcopy-discard")),
    );
    out
}

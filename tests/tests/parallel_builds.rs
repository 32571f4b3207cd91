//! Parallel builds stay clean: 16 sqtt-hipcc compiles started at once into one fresh cache
//! directory, and a `make -j8` build, each with the real hipcc and plugin. Every object and the
//! linked binary carry the funcmap of their own sources (and no other's), and nothing is left
//! behind: no temporary or probe file in the cache, the build directory or `TMPDIR`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sqtt_e2e::driver::*;
use sqtt_e2e::toolchain::{hipcc, plugin_path, workdir};

const UNITS: usize = 16;

/// Translation unit `i`: kernel `kernel_i` with user scope `scope_i`.
fn unit(i: usize) -> String {
    format!(
        "#include <hip/hip_runtime.h>\n#include \"markers.hpp\"\n\
         __global__ void kernel_{i}(float *p) {{\n  sqtt_marker_enter(\"scope_{i}\");\n  \
         p[threadIdx.x] += {i}.0f;\n  sqtt_marker_exit(\"scope_{i}\");\n}}\n"
    )
}

/// The environment every wrapper run of a test shares: the real hipcc and plugin, one cache
/// directory, a private TMPDIR, no other `SQTT_*`.
fn env(c: &mut Command, dir: &Path) {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SQTT_") && k != "SQTT_TEST_DRIVER" {
            c.env_remove(k);
        }
    }
    c.env("SQTT_HIPCC", hipcc())
        .env("SQTT_PLUGIN", plugin_path())
        .env("SQTT_CACHE_DIR", dir.join("cache"))
        .env("TMPDIR", dir.join("tmp"));
}

fn setup() -> tempfile::TempDir {
    let d = workdir();
    let src = d.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(d.path().join("tmp")).unwrap();
    for i in 0..UNITS {
        std::fs::write(src.join(format!("k{i}.hip")), unit(i)).unwrap();
    }
    std::fs::write(src.join("main.hip"), "int main() { return 0; }\n").unwrap();
    d
}

fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut v = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                v.insert(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    v
}

/// `--check --json` of `file`: the user scope and kernel names of each code object, after the
/// check itself passed with `requires` (which every code object must meet).
fn checked_names(dir: &Path, file: &Path, requires: &[String]) -> Vec<BTreeSet<String>> {
    let mut c = driver(dir);
    c.arg("--check").arg("--json").arg(file);
    for r in requires {
        c.args(["--require", r]);
    }
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}: {}", file.display(), err(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut all = Vec::new();
    for co in report["files"][0]["code_objects"].as_array().unwrap() {
        assert_eq!(co["status"], "ok", "{co}");
        let mut names = BTreeSet::new();
        for e in co["entries"].as_array().unwrap() {
            if e["kind"] == "user" || e["kind"] == "kernel" {
                names.insert(
                    e["demangled"]
                        .as_str()
                        .or(e["name"].as_str())
                        .unwrap()
                        .to_string(),
                );
            }
        }
        all.push(names);
    }
    all
}

/// The names of unit `i`'s funcmap.
fn unit_names(i: usize) -> BTreeSet<String> {
    [format!("scope_{i}"), format!("kernel_{i}(float*)")].into()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// No temporary or probe file anywhere the wrapper writes.
fn assert_clean(dir: &Path, expected_build_files: &BTreeSet<String>) {
    let build = files_under(&dir.join("src"));
    assert_eq!(
        &build, expected_build_files,
        "the build directory holds exactly the outputs"
    );
    let tmp = files_under(&dir.join("tmp"));
    assert!(tmp.is_empty(), "TMPDIR left behind: {tmp:?}");
    let cache = files_under(&dir.join("cache"));
    assert!(!cache.is_empty(), "the cache was used");
    for f in &cache {
        let name = Path::new(f).file_name().unwrap().to_string_lossy();
        assert!(
            !name.contains(".tmp") && !name.contains("tmp") && !name.starts_with(".probe"),
            "left in the cache: {f} (all: {cache:?})"
        );
    }
}

#[test]
fn sixteen_parallel_compiles_into_a_fresh_cache() {
    let d = setup();
    let dir = d.path();
    let src = dir.join("src");
    // All started before any is waited for; half with -MD (the dependency file is extended).
    let children: Vec<_> = (0..UNITS)
        .map(|i| {
            let mut c = Command::new(sqtt_hipcc());
            env(&mut c, dir);
            c.current_dir(&src)
                .args(["--offload-arch=gfx90a", "-c"])
                .arg(format!("k{i}.hip"))
                .arg("-o")
                .arg(format!("k{i}.o"));
            if i % 2 == 0 {
                c.arg("-MD");
            }
            c.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, ch) in children.into_iter().enumerate() {
        let o = ch.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "k{i}: {}", err(&o));
        assert!(o.stderr.is_empty(), "k{i}: {}", err(&o));
    }
    let mut expected: BTreeSet<String> = BTreeSet::new();
    expected.insert("main.hip".into());
    for i in 0..UNITS {
        expected.insert(format!("k{i}.hip"));
        expected.insert(format!("k{i}.o"));
        if i % 2 == 0 {
            expected.insert(format!("k{i}.d"));
            let dep = std::fs::read_to_string(src.join(format!("k{i}.d"))).unwrap();
            assert!(dep.contains("markers.hpp"), "k{i}.d: {dep}");
            assert!(dep.contains("libsqtt_plugin.so"), "k{i}.d: {dep}");
        }
    }
    for i in 0..UNITS {
        let names = checked_names(
            dir,
            &src.join(format!("k{i}.o")),
            &[format!("user:scope_{i}"), format!("kernel:kernel_{i}")],
        );
        assert_eq!(
            names,
            vec![unit_names(i)],
            "k{i}.o holds its own funcmap and no other's"
        );
    }
    assert_clean(dir, &expected);
}

#[test]
fn make_j8_build() {
    let d = setup();
    let dir = d.path();
    let src = dir.join("src");
    let objs: Vec<String> = (0..UNITS).map(|i| format!("k{i}.o")).collect();
    let makefile = format!(
        "CXX := {driver}\nOBJS := {objs} main.o\n\
         app: $(OBJS)\n\t$(CXX) --offload-arch=gfx90a $(OBJS) -o $@\n\
         %.o: %.hip\n\t$(CXX) --offload-arch=gfx90a -MD -c $< -o $@\n",
        driver = sqtt_hipcc().display(),
        objs = objs.join(" ")
    );
    std::fs::write(src.join("Makefile"), makefile).unwrap();
    let mut c = Command::new("make");
    env(&mut c, dir);
    let o = c.current_dir(&src).arg("-j8").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let app: PathBuf = src.join("app");
    // One code object per kernel unit, each with its own unit's funcmap (main.hip has no device
    // code, so no code object).
    let mut names = checked_names(dir, &app, &[]);
    names.sort();
    let mut want: Vec<BTreeSet<String>> = (0..UNITS).map(unit_names).collect();
    want.sort();
    assert_eq!(names, want, "the binary holds every unit's funcmap once");
    let mut expected: BTreeSet<String> = ["Makefile", "app", "main.hip", "main.o", "main.d"]
        .into_iter()
        .map(String::from)
        .collect();
    for i in 0..UNITS {
        for ext in ["hip", "o", "d"] {
            expected.insert(format!("k{i}.{ext}"));
        }
    }
    assert_clean(dir, &expected);
    // And a second make finds everything up to date.
    let mut c = Command::new("make");
    env(&mut c, dir);
    let o = c.current_dir(&src).arg("-j8").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("up to date"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

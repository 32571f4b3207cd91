//! The wrapper among build tools, all real: ccache (Debian's) with `compiler_check =
//! %compiler% --version`, `-E` finding markers.hpp, `-MD` dependency files naming sqtt.toml and
//! the plugin, a CMake + Ninja build that rebuilds after an edit of sqtt.toml and only then, a
//! rejected output that make rebuilds, `-Werror` steps that pass as with plain hipcc, and the
//! CMake package (`find_package(SqttHipcc)`) on both routes, with and without `-fgpu-rdc`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sqtt_e2e::driver::*;
use sqtt_e2e::package::{ccache_stats, Install, Project, Route};
use sqtt_e2e::toolchain::{hipcc, plugin_path, repo_root, run_ok, workdir};

use sqtt_e2e::kernels::WORK_KERNEL as KERNEL;

fn wrapper(dir: &Path, plugin: &Path) -> Command {
    let mut c = driver(dir);
    c.env("SQTT_HIPCC", hipcc()).env("SQTT_PLUGIN", plugin);
    c
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

#[test]
fn ccache_hits_on_same_settings_and_misses_on_a_changed_setting_or_rebuilt_plugin() {
    assert!(have("ccache"), "ccache is missing: run ci/setup.sh");
    let d = workdir();
    let dir = d.path();
    std::fs::write(dir.join("k.hip"), KERNEL).unwrap();
    // A plugin of our own, so "rebuilding" it does not disturb other tests.
    let plugin = dir.join("libsqtt_plugin.so");
    std::fs::copy(plugin_path(), &plugin).unwrap();
    let cache = dir.join("ccache");
    let compile = |env: &[(&str, &str)]| {
        let _ = std::fs::remove_file(dir.join("k.o"));
        let mut c = Command::new("ccache");
        c.current_dir(dir)
            .env("CCACHE_DIR", &cache)
            .env("CCACHE_COMPILERCHECK", "%compiler% --version")
            .env_remove("CCACHE_DISABLE")
            .env("SQTT_HIPCC", hipcc())
            .env("SQTT_PLUGIN", &plugin)
            .env("SQTT_CACHE_DIR", dir.join(".sqtt-cache"))
            .arg(sqtt_hipcc())
            .args(["--offload-arch=gfx90a", "-c", "k.hip", "-o", "k.o"]);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("SQTT_") && k != "SQTT_TEST_DRIVER" {
                c.env_remove(k);
            }
        }
        c.env("SQTT_HIPCC", hipcc()).env("SQTT_PLUGIN", &plugin);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        assert!(dir.join("k.o").is_file());
        let stats = ccache_stats(dir);
        (stats.hits, stats.misses)
    };
    // A source including markers.hpp is cacheable (its -E runs through the wrapper).
    assert_eq!(compile(&[]), (0, 1), "first compile misses");
    assert_eq!(compile(&[]), (1, 1), "same settings hit");
    assert_eq!(
        compile(&[("SQTT_INSTRUMENT_BARRIERS", "1")]),
        (1, 2),
        "a changed setting misses"
    );
    assert_eq!(
        compile(&[("SQTT_INSTRUMENT_BARRIERS", "1")]),
        (2, 2),
        "and then hits"
    );
    // "Rebuild" the plugin: different bytes, same path and loadable.
    let mut bytes = std::fs::read(&plugin).unwrap();
    bytes.extend_from_slice(b"rebuilt");
    std::fs::write(&plugin, bytes).unwrap();
    assert_eq!(
        compile(&[("SQTT_INSTRUMENT_BARRIERS", "1")]),
        (2, 3),
        "a rebuilt plugin misses"
    );
}

#[test]
fn preprocessing_finds_markers_hpp() {
    let d = workdir();
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    let o = wrapper(d.path(), &plugin_path())
        .args(["--offload-arch=gfx90a", "-E", "k.hip"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("sqtt_marker_enter"), "markers.hpp expanded");
}

#[test]
fn dependency_file_names_sqtt_toml_and_the_plugin() {
    let d = workdir();
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    std::fs::write(d.path().join("sqtt.toml"), "instrument_barriers = true\n").unwrap();
    for args in [
        &["-MD", "-c", "k.hip", "-o", "k.o"][..],
        &["-MMD", "-MF", "deps/k.dep", "-c", "k.hip", "-o", "k.o"][..],
    ] {
        std::fs::create_dir_all(d.path().join("deps")).unwrap();
        let o = wrapper(d.path(), &plugin_path())
            .arg("--offload-arch=gfx90a")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        let file = if args.contains(&"-MF") {
            "deps/k.dep"
        } else {
            "k.d"
        };
        let deps = std::fs::read_to_string(d.path().join(file)).unwrap();
        let toml = std::fs::canonicalize(d.path().join("sqtt.toml")).unwrap();
        let plugin = std::fs::canonicalize(plugin_path()).unwrap();
        assert!(deps.contains(&format!("  {}", toml.display())), "{deps}");
        assert!(deps.contains(&format!("  {}", plugin.display())), "{deps}");
        assert!(deps.starts_with("k.o:"), "{deps}");
    }
}

fn cmake_env(c: &mut Command, dir: &Path) {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SQTT_") && k != "SQTT_TEST_DRIVER" {
            c.env_remove(k);
        }
    }
    c.env("SQTT_HIPCC", hipcc())
        .env("SQTT_PLUGIN", plugin_path())
        .env("SQTT_CACHE_DIR", dir.join("cache"))
        .env("HCC_AMDGPU_TARGET", "gfx90a");
}

#[test]
fn cmake_ninja_rebuilds_after_an_edit_of_sqtt_toml_and_only_then() {
    assert!(have("ninja"), "ninja is missing: run ci/setup.sh");
    let d = workdir();
    let build = d.path().join("build");
    // The build directory's compiles find this sqtt.toml upward.
    let toml = d.path().join("sqtt.toml");
    std::fs::write(&toml, "instrument_barriers = false\n").unwrap();
    let mut c = Command::new("cmake");
    c.args(["-G", "Ninja", "-S"])
        .arg(repo_root().join("tests/cmake"))
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_CXX_COMPILER={}", sqtt_hipcc().display()));
    cmake_env(&mut c, d.path());
    run_ok(&mut c);
    let ninja = |what: &str| -> String {
        let mut c = Command::new("ninja");
        c.arg("-C").arg(&build).arg("-d").arg("explain");
        cmake_env(&mut c, d.path());
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{what}: {}", err(&o));
        String::from_utf8_lossy(&o.stdout).into_owned() + &err(&o)
    };
    let first = ninja("first build");
    assert!(first.contains("Building CXX object"), "{first}");
    let again = ninja("no change");
    assert!(again.contains("no work to do"), "{again}");
    // An edit of sqtt.toml (mtime moved on for sure).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(&toml, "instrument_barriers = true\n").unwrap();
    let after = ninja("after the edit");
    assert!(after.contains("Building CXX object"), "{after}");
    assert!(after.contains("sqtt.toml"), "ninja explains why: {after}");
    let again = ninja("no change after the rebuild");
    assert!(again.contains("no work to do"), "{again}");
}

#[test]
fn make_rebuilds_an_output_the_post_build_check_rejected() {
    let d = workdir();
    let dir = d.path();
    let src = format!(
        "{KERNEL}\n__attribute__((section(\".sqtt_funcmap\"), used)) __device__ const char \
         extra_map[] = \"U:1:intruder\\n\";\n"
    );
    std::fs::write(dir.join("k.hip"), src).unwrap();
    std::fs::write(
        dir.join("Makefile"),
        format!(
            "app: k.hip\n\t{} --offload-arch=gfx90a k.hip -o app\n",
            sqtt_hipcc().display()
        ),
    )
    .unwrap();
    let make = || {
        let mut c = Command::new("make");
        c.current_dir(dir);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("SQTT_") && k != "SQTT_TEST_DRIVER" {
                c.env_remove(k);
            }
        }
        c.env("SQTT_HIPCC", hipcc())
            .env("SQTT_PLUGIN", plugin_path())
            .env("SQTT_CACHE_DIR", dir.join(".sqtt-cache"));
        c.output().unwrap()
    };
    for round in ["first", "second"] {
        let o = make();
        assert_ne!(o.status.code(), Some(0), "{round} make fails");
        let e = err(&o);
        assert!(e.contains("app.sqtt-rejected"), "{round}: {e}");
        assert!(
            !String::from_utf8_lossy(&o.stdout).contains("up to date"),
            "{round}"
        );
        assert!(!dir.join("app").exists());
        assert!(dir.join("app.sqtt-rejected").is_file());
    }
}

fn plain_and_wrapped(dir: &Path, args: &[&str]) -> (Output, Output) {
    let plain = Command::new(hipcc())
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    let wrapped = wrapper(dir, &plugin_path()).args(args).output().unwrap();
    (plain, wrapped)
}

#[test]
fn werror_host_only_compile_and_rdc_link_pass_as_with_plain_hipcc() {
    let d = workdir();
    let dir = d.path();
    std::fs::write(dir.join("k.hip"), KERNEL).unwrap();
    let inc: PathBuf = sqtt_e2e::toolchain::markers_include();
    let inc = format!("-I{}", inc.display());
    let (p, w) = plain_and_wrapped(
        dir,
        &[
            "--cuda-host-only",
            "-c",
            "-Werror",
            &inc,
            "k.hip",
            "-o",
            "h.o",
        ],
    );
    assert_eq!(p.status.code(), Some(0), "plain: {}", err(&p));
    assert_eq!(w.status.code(), Some(0), "wrapped: {}", err(&w));
    assert!(!err(&w).contains("unused"), "{}", err(&w));
    let o = wrapper(dir, &plugin_path())
        .args([
            "-fgpu-rdc",
            "--offload-arch=gfx90a",
            "-c",
            "k.hip",
            "-o",
            "r.o",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let (p, w) = plain_and_wrapped(
        dir,
        &[
            "-fgpu-rdc",
            "-Werror",
            "--offload-arch=gfx90a",
            "r.o",
            "-o",
            "app",
        ],
    );
    assert_eq!(p.status.code(), Some(0), "plain: {}", err(&p));
    assert_eq!(w.status.code(), Some(0), "wrapped: {}", err(&w));
    assert!(!err(&w).contains("unused"), "{}", err(&w));
}

#[test]
fn cmake_hip_language_project_with_the_installed_package() {
    let d = workdir();
    let dir = d.path();
    let install = Install::new(dir);
    std::fs::write(dir.join("sqtt.toml"), "instrument_barriers = true\n").unwrap();
    let p = Project::new(
        &install,
        dir,
        "cmake-hip",
        "build",
        "Ninja",
        Route::HipLanguage,
    );
    let conf = p.configure(&[]);
    assert!(
        conf.contains("sqtt_instrument(app): HIP sources launched through sqtt-hipcc"),
        "{conf}"
    );
    let out = p.build(&[]);
    assert!(out.contains("--sqtt-launch"), "the launcher runs: {out}");
    assert!(out.contains("--check"), "the post-build check runs: {out}");
    // Without -fgpu-rdc the link loads no plugin.
    assert!(!out.contains("--load-pass-plugin"), "{out}");
    // The binary carries the plugin's funcmap.
    check_app(dir, &p.file("app"));

    // The same package on the C++ route: a plain clang++ compiling app.hip with -x hip.
    let p = Project::new(
        &install,
        dir,
        "cmake-hip",
        "build-cxx",
        "Ninja",
        Route::PlainClangCxx,
    );
    let conf = p.configure(&[]);
    assert!(
        conf.contains("sqtt_instrument(app): CXX sources launched through sqtt-hipcc"),
        "{conf}"
    );
    let out = p.build(&[]);
    assert!(out.contains("--sqtt-launch"), "{out}");
    assert!(
        out.contains(&format!("{} ok kernels=1", p.arch)),
        "the post-build check's summary: {out}"
    );
}

/// `$(sqtt-hipcc --sqtt-flags=CLANG)` pasted into CMAKE_HIP_FLAGS: plain words, which CMake's
/// compiler identification accepts (shell-quoted ones made it fail and built nothing), and a
/// HIP-language project without the package builds instrumented; `=cmake` gives the same words
/// as a CMake list.
#[test]
fn sqtt_flags_go_into_cmake_hip_flags() {
    let d = workdir();
    let dir = d.path();
    let install = Install::new(dir);
    let mut p = Project::new(
        &install,
        dir,
        "cmake-hip",
        "build",
        "Ninja",
        Route::HipLanguage,
    );
    p.source = dir.join("proj");
    std::fs::create_dir_all(&p.source).unwrap();
    std::fs::copy(
        repo_root().join("tests/cmake-hip/app.hip"),
        p.source.join("app.hip"),
    )
    .unwrap();
    std::fs::write(
        p.source.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.21)\nproject(p LANGUAGES CXX HIP)\n\
         add_executable(app app.hip)\n",
    )
    .unwrap();
    let flags = |form: &str| {
        let clang = sqtt_e2e::toolchain::llvm_tool("clang++");
        let o = p
            .command(install.sqtt_hipcc(), &[])
            .arg(format!("--sqtt-flags={form}{clang}"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    };
    let words = flags("");
    assert!(!words.contains('\''), "no quotes: {words}");
    assert!(
        words.contains(" -fpass-plugin=") && words.ends_with(" -DSQTT_ENABLED=1"),
        "{words}"
    );
    assert_eq!(flags("cmake:"), words.replace(' ', ";"));
    let conf = p.configure_with_hip_flags(&words, &[]);
    assert!(conf.contains("Check for working HIP compiler"), "{conf}");
    p.build(&[]);
    check_app(dir, &p.file("app"));
}

/// tests/cmake-hip's app carries its marker and kernel.
fn check_app(dir: &Path, app: &Path) {
    let o = driver(dir)
        .arg("--check")
        .arg(app)
        .args(["--require", "user:work", "--require", "kernel:my_kernel"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}

/// `-fgpu-rdc` on the package route, both routes: two translation units with markers, compiled
/// with the IDs left to the device link, which loads the plugin (through the link launcher) and
/// numbers every marker once, so IDs are unique across the translation units and the post-build
/// check passes.
#[test]
fn cmake_package_route_with_gpu_rdc_numbers_markers_across_translation_units() {
    let d = workdir();
    let dir = d.path();
    let install = Install::new(dir);
    for (build, route) in [
        ("build-rdc", Route::HipLanguage),
        ("build-rdc-cxx", Route::PlainClangCxx),
    ] {
        let p = Project::new(&install, dir, "cmake-hip", build, "Ninja", route);
        p.configure(&["-DSQTT_RDC=ON"]);
        let out = p.build(&[]);
        let link = out
            .lines()
            .find(|l| l.contains(" -o app ") && l.contains("-fgpu-rdc"))
            .unwrap_or_else(|| panic!("{build}: no -fgpu-rdc link line in {out}"));
        assert!(
            link.contains("--sqtt-launch"),
            "{build}: the link is launched: {link}"
        );
        assert!(
            out.contains("--check"),
            "{build}: the post-build check runs: {out}"
        );
        let o = driver(dir)
            .arg("--check")
            .arg("--json")
            .arg(p.file("app"))
            .args(["--require", "user:work", "--require", "user:second"])
            .args([
                "--require",
                "user:scale",
                "--require",
                "kernel:second_kernel",
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{build}: {}", err(&o));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let cos = report["files"][0]["code_objects"].as_array().unwrap();
        assert_eq!(cos.len(), 1, "{build}: one code object: {report}");
        let co = &cos[0];
        assert_eq!(co["status"], "ok", "{build}: {co}");
        // One funcmap written at the link, not one per translation unit.
        assert_eq!(co["translation_units"], 1, "{build}: {co}");
        let ids: Vec<u64> = co["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["id"].as_u64())
            .collect();
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "{build}: IDs repeat: {ids:?}");
        let names: Vec<&str> = co["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "user")
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        for want in ["work", "second", "scale"] {
            assert!(names.contains(&want), "{build}: {want} not in {names:?}");
        }
    }
}

#[test]
fn ci_check_of_a_bin_directory_quiet_skipping_non_amdgpu_files_with_template_kernels() {
    let d = workdir();
    let dir = d.path();
    let bin = dir.join("bin");
    std::fs::create_dir_all(bin.join("subdir")).unwrap();
    std::fs::write(
        dir.join("t.hip"),
        r#"
#include <hip/hip_runtime.h>
template <typename T>
__global__ void triad_kernel(const T *a, const T *b, T *c) {
  int i = threadIdx.x;
  c[i] = a[i] + 2 * b[i];
}
template __global__ void triad_kernel<float>(const float *, const float *, float *);
int main() { return 0; }
"#,
    )
    .unwrap();
    let o = wrapper(dir, &plugin_path())
        .args(["--offload-arch=gfx90a", "t.hip", "-o", "bin/triad"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    std::fs::write(bin.join("run.sh"), "#!/bin/sh\nexec ./triad\n").unwrap();
    std::fs::copy("/bin/true", bin.join("host-tool")).unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&bin)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let check = |extra: &[&str], files: &[PathBuf]| {
        driver(dir)
            .arg("--check")
            .args(extra)
            .args(files)
            .output()
            .unwrap()
    };
    // Without the option the script is a failed check and the directory a usage error.
    assert_eq!(
        check(&[], &[bin.join("run.sh"), bin.join("triad")])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(check(&[], &files).status.code(), Some(2));
    let o = check(
        &[
            "--quiet",
            "--skip-non-amdgpu",
            "--require",
            "kernel:triad_kernel",
        ],
        &files,
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    let co: Vec<&&str> = lines.iter().filter(|l| l.contains("[gfx90a]")).collect();
    assert_eq!(co.len(), 1, "one summary line per code object: {out}");
    assert!(
        co[0].contains("funcmap ok") && co[0].contains("1 kernel(s)"),
        "{out}"
    );
    for skipped in ["run.sh", "host-tool", "subdir"] {
        assert!(
            lines
                .iter()
                .any(|l| l.contains(skipped) && l.ends_with("no AMDGPU code, skipped")),
            "{skipped}: {out}"
        );
    }
    // The base name only: the kernel is `void triad_kernel<float>(float const*, ...)`.
    let o = check(
        &["--quiet", "--require", "kernel:triad"],
        &[bin.join("triad")],
    );
    assert_eq!(o.status.code(), Some(1), "a prefix is not the base name");
    // Nothing but non-AMDGPU files: a failure, not a pass.
    let o = check(&["--skip-non-amdgpu"], &[bin.join("run.sh")]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
}

#[test]
fn help_is_hipccs_with_one_stderr_line_pointing_to_sqtt_help() {
    let d = workdir();
    let o = wrapper(d.path(), &plugin_path())
        .arg("--help")
        .output()
        .unwrap();
    let plain = Command::new(hipcc())
        .arg("--help")
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), plain.status.code());
    assert_eq!(o.stdout, plain.stdout, "stdout is hipcc's help");
    let e = err(&o);
    assert!(e.lines().next().unwrap().contains("--sqtt-help"), "{e}");
}

#[test]
fn completions_and_man_pages_come_from_the_binary() {
    let d = workdir();
    let run = |args: &[&str]| driver(d.path()).args(args).output().unwrap();
    for (shell, word) in [
        ("bash", "--sqtt-config"),
        ("zsh", "--sqtt-flags"),
        ("fish", "sqtt-verbose"),
    ] {
        let o = run(&[&format!("--sqtt-completions={shell}")]);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains(word), "{shell}");
    }
    let o = run(&["--sqtt-man"]);
    assert_eq!(o.status.code(), Some(0));
    let page = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        page.contains(".TH sqtt-hipcc 1") && page.contains("sqtt\\-config"),
        "{page}"
    );
    let o = run(&["--sqtt-man=check"]);
    let page = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        page.contains(".TH sqtt-hipcc-check 1") && page.contains("skip\\-non\\-amdgpu"),
        "{page}"
    );
    // Bad input: a clear error, exit 2, nothing on stdout.
    let o = run(&["--sqtt-completions=tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        o.stdout.is_empty() && err(&o).contains("tcsh"),
        "{}",
        err(&o)
    );
    // `man -l` renders the page when man is installed.
    if Command::new("man").arg("--version").output().is_ok() {
        let f = d.path().join("sqtt-hipcc.1");
        std::fs::write(&f, run(&["--sqtt-man"]).stdout).unwrap();
        let o = Command::new("man")
            .arg("-l")
            .arg(&f)
            .env("MANPAGER", "cat")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    }
}

#[test]
fn plugin_loaded_by_hand_reads_sqtt_toml_by_the_wrappers_rules() {
    let d = workdir();
    let dir = d.path();
    std::fs::write(
        dir.join("b.hip"),
        "#include <hip/hip_runtime.h>\n__global__ void bk(float *p) { p[threadIdx.x] = 1; \
         __syncthreads(); p[threadIdx.x + 1] += 1; }\nint main() { return 0; }\n",
    )
    .unwrap();
    let flags = run_ok(
        driver(dir)
            .env("SQTT_PLUGIN", plugin_path())
            .arg("--sqtt-flags=clang++-15"),
    );
    let flags = shell_words::split(flags.trim()).unwrap();
    assert!(
        flags.iter().any(|f| f.starts_with("-fpass-plugin=")),
        "{flags:?}"
    );
    // A plain clang++, no wrapper, no launcher, no SQTT_* in the environment.
    let build = |toml: &str| {
        std::fs::write(dir.join("sqtt.toml"), toml).unwrap();
        let _ = std::fs::remove_file(dir.join("b"));
        let mut c = Command::new("clang++-15");
        c.current_dir(dir)
            .args(["-x", "hip", "--offload-arch=gfx90a", "--rocm-path=/usr"])
            .arg("--hip-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode")
            .arg("--hip-link")
            .args(&flags)
            .args(["b.hip", "-o", "b"]);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("SQTT_") {
                c.env_remove(k);
            }
        }
        c.output().unwrap()
    };
    let points = |o: &Output| -> String {
        assert_eq!(o.status.code(), Some(0), "{}", err(o));
        let c = driver(dir)
            .arg("--check")
            .arg(dir.join("b"))
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&c.stdout).into_owned();
        out.split_whitespace()
            .find(|w| w.starts_with("points="))
            .unwrap_or_else(|| panic!("{out}"))
            .to_string()
    };
    assert_eq!(points(&build("instrument_barriers = true\n")), "points=3");
    assert_eq!(points(&build("instrument_barriers = false\n")), "points=0");
    // A bad value is an error naming the file, not silently the defaults.
    let o = build("shader_clock_bits = 99\n");
    assert_ne!(o.status.code(), Some(0));
    assert!(
        err(&o).contains("sqtt.toml") && err(&o).contains("shader_clock_bits"),
        "{}",
        err(&o)
    );
}

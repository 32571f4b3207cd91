//! The wrapper on the real hipcc: pass-through of a failing compile, bad settings stopping
//! before hipcc without touching the output, a disabled build byte-identical to plain hipcc's,
//! instrumented builds checked after the step (and a failing check), gfx1100, `-fgpu-rdc`.

use std::path::Path;
use std::process::{Command, Output};

use sqtt_e2e::driver::*;
use sqtt_e2e::toolchain::{
    arch_args, extract_code_object, hipcc, markers_include, plugin_path, run_ok, workdir,
};

const KERNEL: &str = r#"
#include <hip/hip_runtime.h>
#include "markers.hpp"

__global__ void my_kernel(float *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  sqtt_marker_enter("work");
  p[i] = p[i] * 2.0f + 1.0f;
  sqtt_marker_data("value", static_cast<uint32_t>(i));
  sqtt_marker_exit("work");
}
int main() { return 0; }
"#;

/// Variables to set, sqtt.toml text, a word the error must contain.
type BadCase<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, &'a str);

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn failing_compile_passes_through_unchanged() {
    let d = workdir();
    let src = d.path().join("broken.hip");
    std::fs::write(
        &src,
        "#include <hip/hip_runtime.h>\n__global__ void k(int *p) { p[0] = undefined_thing; }\n",
    )
    .unwrap();
    let args = [
        "--offload-arch=gfx90a",
        "-c",
        "broken.hip",
        "-o",
        "broken.o",
    ];
    let plain = Command::new(hipcc())
        .current_dir(d.path())
        .args(args)
        .output()
        .unwrap();
    let wrapped = wrapper(d.path()).args(args).output().unwrap();
    assert_ne!(plain.status.code(), Some(0));
    assert_eq!(wrapped.status.code(), plain.status.code());
    assert_eq!(wrapped.stdout, plain.stdout);
    assert_eq!(err(&wrapped), err(&plain));
    assert!(err(&plain).contains("undefined_thing"));
    assert!(!d.path().join("broken.o").exists());
}

#[test]
fn bad_settings_stop_before_hipcc_and_keep_the_output() {
    let d = workdir();
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    let cases: &[BadCase] = &[
        (
            &[
                ("SQTT_TRACE_ADDRESSES", "memory"),
                ("SQTT_INSTRUMENT_MEMORY", "1:1"),
            ],
            None,
            "SQTT_TRACE_ADDRESSES=memory and SQTT_INSTRUMENT_MEMORY=1:1 are mutually exclusive",
        ),
        (
            &[
                ("SQTT_SHADER_CLOCK_BITS", "12"),
                ("SQTT_TRACE_ADDRESSES", "memory"),
            ],
            None,
            "SQTT_SHADER_CLOCK_BITS",
        ),
        (&[("SQTT_SCOPE_SIMD", "banana")], None, "SQTT_SCOPE_SIMD"),
        (
            &[("SQTT_INSTRUMENT_FUNCTIONS", "-3")],
            None,
            "SQTT_INSTRUMENT_FUNCTIONS",
        ),
        (
            &[("SQTT_INSTRUMENT_MEMORY", "0:5")],
            None,
            "SQTT_INSTRUMENT_MEMORY",
        ),
        (
            &[],
            Some("instrument_barriers = 1\ninstrument_funcs = 3\n"),
            "instrument_funcs",
        ),
        (&[], Some("mem_barrier = 7\n"), "mem_barrier"),
    ];
    for (env, toml, word) in cases {
        let _ = std::fs::remove_file(d.path().join("sqtt.toml"));
        if let Some(t) = toml {
            std::fs::write(d.path().join("sqtt.toml"), t).unwrap();
        }
        for (out, pre) in [("new.o", None), ("old.o", Some(&b"precious"[..]))] {
            let o_path = d.path().join(out);
            let _ = std::fs::remove_file(&o_path);
            if let Some(p) = pre {
                std::fs::write(&o_path, p).unwrap();
            }
            let mut c = wrapper(d.path());
            c.args(["--offload-arch=gfx90a", "-c", "k.hip", "-o", out]);
            for (k, v) in *env {
                c.env(k, v);
            }
            let o = c.output().unwrap();
            assert_eq!(o.status.code(), Some(2), "{env:?} {toml:?}: {}", err(&o));
            assert!(err(&o).contains(word), "{word:?} not in {}", err(&o));
            assert!(o.stdout.is_empty());
            match pre {
                None => assert!(!o_path.exists(), "{out} written"),
                Some(p) => assert_eq!(std::fs::read(&o_path).unwrap(), p),
            }
        }
    }
    std::fs::write(d.path().join("sqtt.toml"), "").unwrap();
    std::fs::remove_file(d.path().join("sqtt.toml")).unwrap();
    // An unreadable configuration file (a directory where the file should be).
    std::fs::create_dir(d.path().join("dir.toml")).unwrap();
    let o = wrapper(d.path())
        .args([
            "--sqtt-config=dir.toml",
            "--offload-arch=gfx90a",
            "-c",
            "k.hip",
            "-o",
            "x.o",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("cannot read configuration file"),
        "{}",
        err(&o)
    );
    assert!(!d.path().join("x.o").exists());
}

#[test]
fn disabled_build_is_byte_identical_to_plain_hipcc() {
    let d = workdir();
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    let archs = ["--offload-arch=gfx90a", "--offload-arch=gfx1030"];
    let inc = format!("-I{}", markers_include().display());
    run_ok(
        Command::new(hipcc())
            .current_dir(d.path())
            .args(archs)
            .arg(&inc)
            .args(["k.hip", "-o", "plain"]),
    );
    for (how, env, toml) in [
        ("env", Some("0"), None),
        ("toml", None, Some("enabled = false\n")),
    ] {
        if let Some(t) = toml {
            std::fs::write(d.path().join("sqtt.toml"), t).unwrap();
        }
        let mut c = wrapper(d.path());
        c.args(archs).args(["k.hip", "-o", "wrapped"]);
        if let Some(v) = env {
            c.env("SQTT_ENABLED", v);
        }
        run_ok(&mut c);
        for arch in ["gfx90a", "gfx1030"] {
            let pd = d.path().join(format!("p-{arch}-{how}"));
            let wd = d.path().join(format!("w-{arch}-{how}"));
            std::fs::create_dir_all(&pd).unwrap();
            std::fs::create_dir_all(&wd).unwrap();
            let p = std::fs::read(extract_code_object(&d.path().join("plain"), arch, &pd)).unwrap();
            let w =
                std::fs::read(extract_code_object(&d.path().join("wrapped"), arch, &wd)).unwrap();
            assert!(!p.is_empty());
            assert!(p == w, "{how}: {arch} code objects differ");
        }
        // No funcmap in the disabled build; --check says so.
        let o = driver(d.path())
            .args(["--check", "wrapped"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&o.stdout).contains("no .sqtt_funcmap section"));
    }
}

#[test]
fn instrumented_build_is_checked_and_reports_its_funcmap() {
    let d = workdir();
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    let o = wrapper(d.path())
        .args([
            "--offload-arch=gfx90a",
            "--offload-arch=gfx1030",
            "k.hip",
            "-o",
            "app",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{}", err(&o));
    let o = driver(d.path())
        .args([
            "--check",
            "app",
            "--require",
            "user:work",
            "--require",
            "point:value",
        ])
        .args(["--require", "kernel:my_kernel"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for arch in ["gfx90a", "gfx1030"] {
        assert!(
            text.contains(&format!(
                "app {arch} ok kernels=1 functions=0 user=1 points=1 payload=1"
            )),
            "{text}"
        );
    }
    // -c objects too.
    let o = wrapper(d.path())
        .args(["--offload-arch=gfx90a", "-c", "k.hip"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let o = driver(d.path())
        .args(["--check", "k.o", "--require", "user:work"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}

#[test]
fn a_failed_post_build_check_is_an_error_and_moves_the_output_aside() {
    let d = workdir();
    // A hand-made funcmap joins the plugin's in the same section: ID 1 twice.
    let src = sqtt_e2e::kernels::with_colliding_funcmap(KERNEL);
    std::fs::write(d.path().join("k.hip"), src).unwrap();
    let o = wrapper(d.path())
        .args(["--offload-arch=gfx90a", "k.hip", "-o", "app"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains("invalid funcmap") && e.contains("intruder"),
        "{e}"
    );
    assert!(e.contains("[gfx90a]"), "{e}");
    // Moved aside, so make/ninja rebuild it next time instead of calling it up to date.
    assert!(!d.path().join("app").exists(), "the output is moved aside");
    assert!(d.path().join("app.sqtt-rejected").is_file());
    assert!(e.contains("app.sqtt-rejected"), "{e}");
}

#[test]
fn gfx1100_with_the_device_lib_workaround() {
    let d = workdir();
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    let o = wrapper(d.path())
        .args(arch_args("gfx1100"))
        .args(["k.hip", "-o", "app"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let o = driver(d.path())
        .args([
            "--check",
            "app",
            "--arch",
            "gfx1100",
            "--require",
            "user:work",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}

#[test]
fn rdc_compile_is_not_checked_and_reported_as_not_linked() {
    let d = workdir();
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    let o = wrapper(d.path())
        .args([
            "--offload-arch=gfx90a",
            "-fgpu-rdc",
            "-c",
            "k.hip",
            "-o",
            "k.o",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let o = driver(d.path()).args(["--check", "k.o"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("not yet linked"));
}

#[test]
fn missing_plugin_stops_before_hipcc() {
    let d = workdir();
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    let o = wrapper(d.path())
        .env("SQTT_PLUGIN", d.path().join("nope.so"))
        .args(["--offload-arch=gfx90a", "k.hip", "-o", "app"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("nope.so"));
    assert!(!d.path().join("app").exists());
}

#[test]
fn cmake_project_builds_and_ctest_runs_the_smoke_check() {
    let d = workdir();
    let src = sqtt_e2e::toolchain::repo_root().join("tests/cmake");
    let build = d.path().join("build");
    let env = |c: &mut Command| {
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("SQTT_") {
                c.env_remove(k);
            }
        }
        c.env("SQTT_HIPCC", hipcc())
            .env("SQTT_PLUGIN", plugin_path())
            .env("SQTT_CACHE_DIR", d.path().join("cache"))
            // CMake's compiler identification runs without --offload-arch.
            .env("HCC_AMDGPU_TARGET", "gfx90a");
    };
    let mut c = Command::new("cmake");
    c.arg("-S").arg(&src).arg("-B").arg(&build);
    c.arg(format!("-DCMAKE_CXX_COMPILER={}", sqtt_hipcc().display()));
    env(&mut c);
    run_ok(&mut c);
    let mut c = Command::new("cmake");
    c.arg("--build").arg(&build);
    env(&mut c);
    run_ok(&mut c);
    let mut c = Command::new("ctest");
    c.arg("--test-dir").arg(&build).arg("--output-on-failure");
    env(&mut c);
    let out = run_ok(&mut c);
    assert!(out.contains("100% tests passed"), "{out}");
}

#[test]
fn plugin_for_another_llvm_than_hipccs_clang_is_refused() {
    // hipcc on clang-16 (a HIP_CLANG_PATH of symlinks, as in the LLVM 16 lane) with the default
    // LLVM 15 plugin.
    let clang16 = Path::new("/usr/lib/llvm-16/bin/clang++");
    assert!(
        clang16.exists(),
        "clang-16 is not installed (ci/setup.sh installs it)"
    );
    let d = workdir();
    let bin = d.path().join("llvm16/bin");
    std::fs::create_dir_all(&bin).unwrap();
    for e in std::fs::read_dir("/usr/lib/llvm-16/bin").unwrap().flatten() {
        std::os::unix::fs::symlink(e.path(), bin.join(e.file_name())).unwrap();
    }
    std::os::unix::fs::symlink(clang16, bin.join("clang++-15")).unwrap();
    std::os::unix::fs::symlink("/usr/lib/llvm-16/bin/clang", bin.join("clang-15")).unwrap();
    std::fs::create_dir_all(d.path().join("llvm16/lib/clang")).unwrap();
    std::os::unix::fs::symlink(
        "/usr/lib/llvm-16/lib/clang/16",
        d.path().join("llvm16/lib/clang/16.0.6"),
    )
    .unwrap();
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    let o = wrapper(d.path())
        .env("HIP_CLANG_PATH", &bin)
        .args(["--offload-arch=gfx90a", "-c", "k.hip", "-o", "k.o"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains("built for LLVM 15") && e.contains("uses clang 16"),
        "{e}"
    );
    assert!(
        e.contains("./install.sh --llvm 16")
            && e.contains("llvm16-0")
            && e.contains("HIP_CLANG_PATH="),
        "{e}"
    );
    assert!(!d.path().join("k.o").exists());
    // Instrumentation off loads no plugin, so the same hipcc builds.
    let o = wrapper(d.path())
        .env("HIP_CLANG_PATH", &bin)
        .env("SQTT_ENABLED", "0")
        .args(["--offload-arch=gfx90a", "-c", "k.hip", "-o", "k.o"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert!(d.path().join("k.o").exists());
}

#[test]
fn version_is_hipccs_plus_the_plugin_and_settings_lines() {
    let d = workdir();
    let plain = Command::new(hipcc())
        .arg("--version")
        .current_dir(d.path())
        .output()
        .unwrap();
    let wrapped = wrapper(d.path()).arg("--version").output().unwrap();
    assert_eq!(wrapped.status.code(), plain.status.code());
    let p = String::from_utf8_lossy(&plain.stdout).into_owned();
    let w = String::from_utf8_lossy(&wrapped.stdout).into_owned();
    let extra = w
        .strip_prefix(&p)
        .unwrap_or_else(|| panic!("{w:?} does not start with {p:?}"));
    assert!(
        extra.starts_with("sqtt-hipcc ") && extra.contains("sha256:"),
        "{extra}"
    );
    assert_eq!(extra.lines().count(), 2, "{extra}");
    let settings = extra.lines().nth(1).unwrap();
    assert!(
        settings.starts_with("sqtt-hipcc settings: sha256:"),
        "{extra}"
    );
}

#[test]
fn rdc_link_numbers_ids_once_for_all_translation_units() {
    let d = workdir();
    let tu = |name: &str, marker: &str, main: bool| {
        format!(
            "#include <hip/hip_runtime.h>\n#include \"markers.hpp\"\n__global__ void {name}(float *p) \
             {{ sqtt_marker_enter(\"{marker}\"); p[0] = 1; sqtt_marker_exit(\"{marker}\"); }}\n{}",
            if main { "int main() { return 0; }\n" } else { "" }
        )
    };
    std::fs::write(d.path().join("a.hip"), tu("ka", "alpha", true)).unwrap();
    std::fs::write(d.path().join("b.hip"), tu("kb", "beta", false)).unwrap();
    for f in ["a.hip", "b.hip"] {
        let o = wrapper(d.path())
            .args(["--offload-arch=gfx90a", "-fgpu-rdc", "-c", f])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", err(&o));
    }
    let o = wrapper(d.path())
        .args([
            "--offload-arch=gfx90a",
            "-fgpu-rdc",
            "a.o",
            "b.o",
            "-o",
            "app",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    // In one step, too.
    let o = wrapper(d.path())
        .args([
            "--offload-arch=gfx90a",
            "-fgpu-rdc",
            "a.hip",
            "b.hip",
            "-o",
            "app1",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    for app in ["app", "app1"] {
        let o = driver(d.path())
            .args([
                "--check",
                app,
                "--require",
                "user:alpha",
                "--require",
                "user:beta",
            ])
            .args(["--require", "kernel:ka", "--require", "kernel:kb", "--json"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{app}: {}", err(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let co = &v["files"][0]["code_objects"][0];
        assert_eq!(
            co["translation_units"], 1,
            "one funcmap, made at the device link"
        );
        let mut ids: Vec<u64> = co["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["id"].as_u64())
            .collect();
        ids.sort();
        assert_eq!(ids, vec![1, 2]);
    }
}

#[test]
fn plugin_made_funcmaps_satisfy_requirements_of_every_kind() {
    let d = workdir();
    std::fs::write(
        d.path().join("k.hip"),
        r#"
#include <hip/hip_runtime.h>
#include "markers.hpp"
__device__ __attribute__((noinline)) float work(const float *p, int i) {
  float a = p[i], b = p[i + 1], c = p[i + 2];
  return a * b + c * a - b / (c + 1.0f);
}
__global__ void my_kernel(float *p, int n) {
  __shared__ float tile[64];
  int i = threadIdx.x;
  sqtt_marker_enter("phase");
  tile[i] = work(p, i);
  __syncthreads();
  p[i] = tile[(i + 1) % 64];
  sqtt_marker_exit("phase");
  sqtt_marker_point("done");
}
int main() { return 0; }
"#,
    )
    .unwrap();
    let o = wrapper(d.path())
        .env("SQTT_INSTRUMENT_BARRIERS", "1")
        .env("SQTT_INSTRUMENT_FUNCTIONS", "1")
        .env("SQTT_INSTRUMENT_MEMORY", "1:1")
        .args(["--offload-arch=gfx90a", "-O1", "k.hip", "-o", "app"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let o = driver(d.path())
        .args(["--check", "app", "--demangle"])
        .args([
            "--require",
            "kernel:my_kernel",
            "--require",
            "function:work",
        ])
        .args(["--require", "user:phase", "--require", "point:done"])
        .args([
            "--require",
            "barrier:barrier*",
            "--require",
            "memory:vmem_load",
        ])
        .args(["--require", "memory:vmem_store", "--require", "any:done"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{text}{}", err(&o));
    assert!(text.contains("work(float const*, int)"), "{text}");
    let o = driver(d.path())
        .args(["--check", "app", "--require", "address:*"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "no address tracing in this build");

    let o = wrapper(d.path())
        .env("SQTT_TRACE_ADDRESSES", "memory,lds")
        .args(["--offload-arch=gfx90a", "k.hip", "-o", "traced"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let o = driver(d.path())
        .args(["--check", "traced", "--require", "address:addr_trace_load*"])
        .args(["--require", "address:addr_trace_lds_store*"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{text}{}", err(&o));
    assert!(text.contains("  wave_size: 64"), "{text}");
    assert!(text.contains(" wave_size=64 "), "{text}");
}

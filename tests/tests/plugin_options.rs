//! The plugin options (`-mllvm -sqtt-marker-<setting>=VALUE`) on the clang the lane provides:
//! when clang's `-mllvm` parse sees options of a `-fpass-plugin` library, that `-fplugin=`
//! makes it see them on every major, that they override the environment, and that a bad value
//! is an error naming the option.

use std::process::{Command, Output};

use sqtt_e2e::toolchain::*;

/// The first LLVM whose cc1 loads `-fpass-plugin` libraries before it parses `-mllvm`
/// (measured: 15, 16, 18, 19 and 21 parse first; 22 loads first).
const FIRST_MAJOR_LOADING_PASS_PLUGINS_FIRST: u32 = 22;

const SOURCE: &str = r#"
#include <amd_sqtt_marker/sqtt_marker.h>
void work(unsigned int v) {
  amd_sqtt_marker_enter_string("work");
  amd_sqtt_marker_data_string("value", v);
  amd_sqtt_marker_exit_string("work");
}
"#;

/// `clang -x c` for gfx1030 with the plugin, `SQTT_*` only from `env`.
fn clang(env: &[(&str, &str)], args: &[String]) -> (Output, String) {
    let dir = workdir();
    let src = dir.path().join("w.c");
    std::fs::write(&src, SOURCE).unwrap();
    let out = dir.path().join("w.s");
    let mut c = Command::new(llvm_tool("clang"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SQTT_") {
            c.env_remove(k);
        }
    }
    c.current_dir(dir.path())
        .args(["-x", "c", "-std=c11", "-ffreestanding", "-nogpulib", "-O2"])
        .args(["--target=amdgcn-amd-amdhsa", "-mcpu=gfx1030"])
        .arg("-DAMD_SQTT_MARKER_ENABLE=1")
        .arg(format!("-I{}", markers_include().display()))
        .arg(format!("-fpass-plugin={}", plugin_path().display()))
        .args(args)
        .args(["-S", "-o"])
        .arg(&out)
        .arg(&src);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = run(&mut c);
    let asm = std::fs::read_to_string(&out).unwrap_or_default();
    (o, asm)
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn options(opts: &[&str]) -> Vec<String> {
    let mut v = vec![format!("-fplugin={}", plugin_path().display())];
    for o in opts {
        v.push("-mllvm".into());
        v.push(o.to_string());
    }
    v
}

#[test]
fn mllvm_reaches_a_pass_plugin_option_only_from_llvm_22_without_fplugin() {
    let (o, asm) = clang(&[], &["-mllvm".into(), "-sqtt-marker-scope-cu=-1".into()]);
    if llvm_major() >= FIRST_MAJOR_LOADING_PASS_PLUGINS_FIRST {
        assert!(o.status.success(), "{}", err(&o));
        assert!(asm.contains("s_ttracedata"), "{asm}");
    } else {
        assert!(
            !o.status.success(),
            "LLVM {} loaded the pass plugin first",
            llvm_major()
        );
        assert!(
            err(&o).contains("Unknown command line argument '-sqtt-marker-scope-cu=-1'"),
            "{}",
            err(&o)
        );
    }
}

#[test]
fn options_override_the_environment() {
    // The scope check reads HW_ID (s_getreg); -1 turns it off.
    let bare = [("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")];
    let (o, by_env) = clang(&bare, &[]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(!by_env.contains("s_getreg"), "{by_env}");
    let (o, scoped) = clang(
        &[("SQTT_SCOPE_CU", "0x1"), ("SQTT_MEM_BARRIER", "none")],
        &[],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(scoped.contains("s_getreg"), "{scoped}");
    // The same settings as options, over a contrary environment: the same code.
    let (o, by_options) = clang(
        &[("SQTT_SCOPE_CU", "0x1"), ("SQTT_MEM_BARRIER", "fence")],
        &options(&["-sqtt-marker-scope-cu=-1", "-sqtt-marker-mem-barrier=none"]),
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(by_options, by_env);
    // An option left empty counts as not given: the environment's value stands.
    let (o, empty) = clang(
        &[("SQTT_SCOPE_CU", "0x1"), ("SQTT_MEM_BARRIER", "none")],
        &options(&["-sqtt-marker-scope-cu="]),
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(empty, scoped);
}

#[test]
fn a_bad_option_value_is_an_error_naming_the_option() {
    for (opt, words) in [
        (
            "-sqtt-marker-mem-barrier=bogus",
            &[
                "-sqtt-marker-mem-barrier",
                "\"bogus\"",
                "none, asm or fence",
            ][..],
        ),
        (
            "-sqtt-marker-instrument-memory=0:1",
            &["-sqtt-marker-instrument-memory", "\"0:1\"", "N:M"][..],
        ),
    ] {
        let (o, _) = clang(&[], &options(&[opt]));
        assert!(!o.status.success(), "{opt}");
        for w in words {
            assert!(err(&o).contains(w), "{opt}: {w} not in {}", err(&o));
        }
    }
    // A conflict between an option and a variable names both.
    let (o, _) = clang(
        &[("SQTT_INSTRUMENT_MEMORY", "2:5")],
        &options(&["-sqtt-marker-trace-addresses=memory"]),
    );
    assert!(!o.status.success());
    let e = err(&o);
    assert!(
        e.contains("-sqtt-marker-trace-addresses=memory")
            && e.contains("SQTT_INSTRUMENT_MEMORY=2:5")
            && e.contains("mutually exclusive"),
        "{e}"
    );
}

#[test]
fn opt_takes_the_options_after_load_pass_plugin() {
    let dir = workdir();
    let ir = dir.path().join("k.ll");
    std::fs::write(
        &ir,
        "target triple = \"amdgcn-amd-amdhsa\"\n\
         @n = private unnamed_addr addrspace(4) constant [2 x i8] c\"p\\00\"\n\
         declare void @__sqtt_named_marker_point(ptr addrspace(4))\n\
         define amdgpu_kernel void @k() #0 {\n  \
           call void @__sqtt_named_marker_point(ptr addrspace(4) @n)\n  ret void\n}\n\
         attributes #0 = { \"target-cpu\"=\"gfx1030\" }\n",
    )
    .unwrap();
    let run_opt = |barrier: &str| {
        run_ok(
            Command::new(llvm_tool("opt"))
                .env("SQTT_SCOPE_CU", "-1")
                .env("SQTT_MEM_BARRIER", "fence")
                .arg(format!("-load-pass-plugin={}", plugin_path().display()))
                .args(["-passes=sqtt", "-S", "-o", "-"])
                .arg(format!("-sqtt-marker-mem-barrier={barrier}"))
                .arg(&ir),
        )
    };
    assert!(!run_opt("none").contains("fence"));
    assert!(run_opt("fence").contains("fence"));
}

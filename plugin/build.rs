//! Builds the small C++ shim (plugin/shim) against the headers of the LLVM the plugin targets.

use std::path::PathBuf;
use std::process::Command;

fn llvm_major() -> u32 {
    let majors: Vec<u32> = [(15, "LLVM15_0"), (16, "LLVM16_0"), (18, "LLVM18_0")]
        .iter()
        .filter(|(_, f)| std::env::var_os(format!("CARGO_FEATURE_{f}")).is_some())
        .map(|(m, _)| *m)
        .collect();
    match majors.as_slice() {
        [m] => *m,
        [] => panic!("sqtt-plugin: enable one of the features llvm15-0, llvm16-0, llvm18-0"),
        _ => panic!(
            "sqtt-plugin: features {majors:?} are exclusive; build with --no-default-features \
             --features llvm<N>-0"
        ),
    }
}

fn llvm_config(major: u32) -> PathBuf {
    let prefix_var = format!("LLVM_SYS_{major}0_PREFIX");
    println!("cargo:rerun-if-env-changed={prefix_var}");
    if let Some(prefix) = std::env::var_os(&prefix_var) {
        return PathBuf::from(prefix).join("bin/llvm-config");
    }
    for name in [format!("llvm-config-{major}"), "llvm-config".to_string()] {
        if let Ok(out) = Command::new(&name).arg("--version").output() {
            let v = String::from_utf8_lossy(&out.stdout);
            if out.status.success() && v.trim().starts_with(&format!("{major}.")) {
                return PathBuf::from(name);
            }
        }
    }
    let fallback = PathBuf::from(format!("/usr/lib/llvm-{major}/bin/llvm-config"));
    if fallback.exists() {
        return fallback;
    }
    panic!("sqtt-plugin: no llvm-config for LLVM {major}; install llvm-{major}-dev or set {prefix_var}")
}

fn main() {
    let major = llvm_major();
    let config = llvm_config(major);
    let query = |arg: &str| {
        let out = Command::new(&config)
            .arg(arg)
            .output()
            .unwrap_or_else(|e| panic!("running {} {arg}: {e}", config.display()));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .file("shim/shim.cpp")
        .include(query("--includedir"))
        .flag_if_supported("-std=c++17")
        .warnings(false);
    if query("--has-rtti") != "YES" {
        build.flag_if_supported("-fno-rtti");
    }
    build.compile("sqtt_shim");
    println!("cargo:rustc-env=SQTT_PLUGIN_LLVM_MAJOR={major}");
    println!("cargo:rerun-if-changed=shim/shim.cpp");
}

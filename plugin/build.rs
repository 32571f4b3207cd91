//! Builds the small C++ shim (plugin/shim) against the headers of the LLVM the plugin targets.

use std::path::PathBuf;
use std::process::Command;

/// The LLVM majors the plugin builds for, with their cargo features. From 19 on the plugin
/// registers its passes itself (llvm-plugin 0.6 stops at 18).
const MAJORS: &[(u32, &str)] = &[
    (15, "llvm15-0"),
    (16, "llvm16-0"),
    (17, "llvm17-0"),
    (18, "llvm18-0"),
    (19, "llvm19-1"),
    (20, "llvm20-1"),
    (21, "llvm21-1"),
    (22, "llvm22-1"),
    (23, "llvm23-1"),
];
const FIRST_OWN_REGISTRATION: u32 = 19;

fn llvm_major() -> u32 {
    let feature_var = |f: &str| format!("CARGO_FEATURE_{}", f.to_uppercase().replace('-', "_"));
    let majors: Vec<u32> = MAJORS
        .iter()
        .filter(|(_, f)| std::env::var_os(feature_var(f)).is_some())
        .map(|(m, _)| *m)
        .collect();
    let names: Vec<&str> = MAJORS.iter().map(|(_, f)| *f).collect();
    match majors.as_slice() {
        [m] => *m,
        [] => panic!(
            "sqtt-plugin: enable one of the features {}",
            names.join(", ")
        ),
        _ => panic!(
            "sqtt-plugin: features for LLVM {majors:?} are exclusive; build with \
             --no-default-features --features <one of {}>",
            names.join(", ")
        ),
    }
}

/// The LLVM prefix variable: llvm-plugin's (LLVM_SYS_150_PREFIX) up to 18, llvm-sys's style
/// (LLVM_SYS_191_PREFIX) from 19.
fn prefix_var(major: u32) -> String {
    let minor = u32::from(major >= FIRST_OWN_REGISTRATION);
    format!("LLVM_SYS_{major}{minor}_PREFIX")
}

/// The cfgs the Rust side switches on: the own registration (19+) and plugin API 2 (22+).
fn emit_cfgs(major: u32) {
    println!("cargo::rustc-check-cfg=cfg(sqtt_own_registration)");
    println!("cargo::rustc-check-cfg=cfg(sqtt_plugin_api_2)");
    if major >= FIRST_OWN_REGISTRATION {
        println!("cargo:rustc-cfg=sqtt_own_registration");
    }
    if major >= 22 {
        println!("cargo:rustc-cfg=sqtt_plugin_api_2");
    }
}

fn llvm_config(major: u32) -> PathBuf {
    let prefix_var = prefix_var(major);
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

/// llvm-plugin links `-lLLVM` from `llvm-config --libdir`. Some packagings ship only the
/// versioned `libLLVM-<major>.so` there (Debian trixie's llvm-18-dev); then a `libLLVM.so`
/// symlink in OUT_DIR, on the search path as well, makes `-lLLVM` resolve to the same library.
fn provide_unversioned_libllvm(libdir: &str, major: u32) {
    let libdir = PathBuf::from(libdir);
    if libdir.join("libLLVM.so").exists() {
        return;
    }
    let versioned = libdir.join(format!("libLLVM-{major}.so"));
    if !versioned.exists() {
        return; // let the link report the missing library
    }
    let dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("libllvm");
    std::fs::create_dir_all(&dir).expect("creating OUT_DIR/libllvm");
    let link = dir.join("libLLVM.so");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&versioned, &link).expect("symlinking libLLVM.so");
    println!("cargo:rustc-link-search=native={}", dir.display());
}

fn main() {
    let major = llvm_major();
    println!("cargo:rerun-if-env-changed=SQTT_PLUGIN_RUST_ONLY");
    if std::env::var_os("SQTT_PLUGIN_RUST_ONLY").is_some_and(|v| v == "1") {
        // `cargo check` of the Rust side against a major with no LLVM installed (20, which no
        // Debian suite packages): the C++ shim needs that LLVM's headers and is skipped. The
        // result cannot be linked or loaded.
        emit_cfgs(major);
        println!("cargo:rustc-env=SQTT_PLUGIN_LLVM_MAJOR={major}");
        return;
    }
    let config = llvm_config(major);
    let query = |arg: &str| {
        let out = Command::new(&config)
            .arg(arg)
            .output()
            .unwrap_or_else(|e| panic!("running {} {arg}: {e}", config.display()));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let own_registration = major >= FIRST_OWN_REGISTRATION;
    // Plugin API 2 (LLVM 22): PassPluginLibraryInfo gained a fifth pointer.
    let plugin_api_2 = major >= 22;
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .file("shim/shim.cpp")
        .include(query("--includedir"))
        .flag_if_supported("-std=c++17")
        .warnings(false);
    if own_registration {
        let info_size = if plugin_api_2 { 40 } else { 32 };
        build
            .file("shim/register.cpp")
            .define("SQTT_PLUGIN_INFO_SIZE", info_size.to_string().as_str());
    }
    if query("--has-rtti") != "YES" {
        build.flag_if_supported("-fno-rtti");
    }
    build.compile("sqtt_shim");
    emit_cfgs(major);
    // From 19, LLVM's symbols are resolved from the process the plugin is loaded into (clang,
    // opt, lld), whichever libLLVM or static LLVM it carries: linking Debian's libLLVM would
    // load a second copy into a ROCm clang. Up to 18 llvm-plugin links libLLVM.
    if !own_registration {
        provide_unversioned_libllvm(&query("--libdir"), major);
    }
    println!("cargo:rustc-env=SQTT_PLUGIN_LLVM_MAJOR={major}");
    println!("cargo:rerun-if-changed=shim/shim.cpp");
    println!("cargo:rerun-if-changed=shim/register.cpp");
}

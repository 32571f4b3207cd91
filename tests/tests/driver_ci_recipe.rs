//! The copy-paste CI job of README.md, run as written (minus the install and cargo build
//! steps, which the test run has done) on the repository's example, with the built sqtt-hipcc
//! and plugin found on PATH the way a CI job finds them.

use std::process::Command;

use sqtt_e2e::driver::sqtt_hipcc;
use sqtt_e2e::toolchain::{plugin_path, repo_root, run_ok, workdir};

#[test]
fn the_documented_ci_job_passes_on_the_example() {
    let doc = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let section = doc
        .split("## A CI job")
        .nth(1)
        .expect("README.md has a CI job section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the CI job section has a sh block");
    let steps: Vec<&str> = block
        .lines()
        .filter(|l| {
            let t = l.trim();
            !(t.is_empty()
                || t.starts_with('#')
                || t.contains("apt-get")
                || t.starts_with("cargo build")
                || t.starts_with("export PATH"))
        })
        .collect();
    assert!(
        steps.iter().any(|s| s.contains("--check")),
        "the recipe runs the smoke check: {steps:?}"
    );
    let d = workdir();
    std::os::unix::fs::symlink(repo_root().join("examples"), d.path().join("examples")).unwrap();
    let bin = sqtt_hipcc().parent().unwrap().to_path_buf();
    // The wrapper finds the plugin next to itself, as in the recipe.
    let _ = plugin_path(); // fails clearly when the plugin is not built or stale
    assert!(
        bin.join("libsqtt_plugin.so").is_file(),
        "{} has no libsqtt_plugin.so: run `cargo build -p sqtt-plugin`",
        bin.display()
    );
    let mut c = Command::new("bash");
    c.arg("-euo")
        .arg("pipefail")
        .arg("-c")
        .arg(steps.join("\n"))
        .current_dir(d.path());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SQTT_") {
            c.env_remove(k);
        }
    }
    c.env(
        "PATH",
        format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
    )
    .env("SQTT_CACHE_DIR", d.path().join("cache"));
    let out = run_ok(&mut c);
    assert!(out.contains("my_kernel gfx90a ok kernels=1"), "{out}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("funcmap.json")).unwrap()).unwrap();
    assert_eq!(json["ok"], true);
}

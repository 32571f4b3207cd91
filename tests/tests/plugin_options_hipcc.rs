//! sqtt-hipcc puts the resolved settings on hipcc's command line as plugin options, so that the
//! command line alone says what is built: the command it runs, replayed with no `SQTT_*`
//! variable and a contrary sqtt.toml beside it, gives the same code (real hipcc).

use std::process::Command;

use sqtt_e2e::driver::*;
use sqtt_e2e::toolchain::*;

const KERNEL: &str = r#"
#include <hip/hip_runtime.h>
#include "markers.hpp"
__global__ void k(float *p) {
  sqtt_marker_enter("load");
  float v = p[threadIdx.x];
  sqtt_marker_exit("load");
  __syncthreads();
  p[threadIdx.x + 1] = v * 2.0f;
}
"#;

#[test]
fn the_command_line_alone_says_what_is_built() {
    let d = workdir();
    let dir = d.path();
    std::fs::write(dir.join("k.hip"), KERNEL).unwrap();
    std::fs::write(
        dir.join("sqtt.toml"),
        "instrument_barriers = true\nmem_barrier = \"asm\"\n[scope]\ncu = \"-1\"\n",
    )
    .unwrap();
    let args = [
        "--offload-arch=gfx90a",
        "--cuda-device-only",
        "-O2",
        "-S",
        "k.hip",
    ];
    let o = driver(dir)
        .env("SQTT_HIPCC", hipcc())
        .env("SQTT_PLUGIN", plugin_path())
        .env("SQTT_VERBOSE", "1")
        .env("SQTT_INSTRUMENT_MEMORY", "1:0")
        .args(args)
        .args(["-o", "wrapped.s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let wrapped = std::fs::read_to_string(dir.join("wrapped.s")).unwrap();
    assert!(wrapped.contains("s_ttracedata"), "{wrapped}");
    // The command it ran, from --sqtt-verbose.
    let line = err
        .lines()
        .find_map(|l| {
            l.split_once(" step, instrumentation on, running ")
                .map(|(_, c)| c)
        })
        .unwrap_or_else(|| panic!("no command in:\n{err}"));
    let mut argv = shell_words::split(line).unwrap();
    for want in [
        "-sqtt-marker-instrument-barriers=1",
        "-sqtt-marker-mem-barrier=asm",
        "-sqtt-marker-scope-cu=0xFFFFFFFF",
        "-sqtt-marker-instrument-memory=1:0",
    ] {
        assert!(argv.iter().any(|a| a == want), "{want} not in {argv:?}");
    }
    let out = argv.iter().position(|a| a == "-o").unwrap();
    argv[out + 1] = "replayed.s".into();
    // Replayed elsewhere: no SQTT_*, a sqtt.toml that says the opposite of everything.
    let other = dir.join("elsewhere");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(dir.join("k.hip"), other.join("k.hip")).unwrap();
    std::fs::write(
        other.join("sqtt.toml"),
        "instrument_barriers = false\nmem_barrier = \"fence\"\n[scope]\ncu = \"0x1\"\n",
    )
    .unwrap();
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]).current_dir(&other);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("SQTT_") {
            c.env_remove(k);
        }
    }
    run_ok(&mut c);
    let replayed = std::fs::read_to_string(other.join("replayed.s")).unwrap();
    assert_eq!(strip_file_names(&replayed), strip_file_names(&wrapped));
}

/// The listing without the lines that depend on where it was built: file names, and hipcc 7's
/// compilation-unit ID (`__hip_cuid_<hash of the path>`).
fn strip_file_names(asm: &str) -> String {
    asm.lines()
        .filter(|l| !l.contains(".file") && !l.contains("k.hip") && !l.contains("__hip_cuid_"))
        .collect::<Vec<_>>()
        .join("\n")
}

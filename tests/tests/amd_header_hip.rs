//! Code written for AMD's header (`amd_sqtt_marker/sqtt_marker.h`) built unchanged through
//! sqtt-hipcc and the real hipcc, alone and beside markers.hpp: the funcmap bytes of the built
//! code object and the trace records in its disassembly.

use std::path::Path;
use std::process::Output;

use sqtt_e2e::driver::*;
use sqtt_e2e::toolchain::*;

const AMD_KERNEL: &str = r#"
#include <hip/hip_runtime.h>
#include <amd_sqtt_marker/sqtt_marker.h>

extern "C" __global__ void amd_kernel(unsigned int value, unsigned int *out) {
  amd_sqtt_marker_enter_string("outer");
  amd_sqtt_marker_exit_string("outer");
  amd_sqtt_marker_enter_string("inner");
  amd_sqtt_marker_point_string("point");
  amd_sqtt_marker_data_string("data", value);
  amd_sqtt_marker_point_id(7);
  amd_sqtt_marker_enter_id(9);
  amd_sqtt_marker_exit();
  sqtt_marker_enter("newer");
  sqtt_marker_data("newer_data", value + 1);
  sqtt_marker_exit("newer");
  amd_sqtt_marker_exit_string("inner");
  out[0] = value;
}
"#;

const AMD_FUNCMAP: &str = "K:amd_kernel\nU:1:outer\nU:2:inner\nP:3:point\nP:4:data\n\
R:4:extra_payload_count=1\nU:5:newer\nP:6:newer_data\nR:6:extra_payload_count=1";

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Builds `src` into an object through sqtt-hipcc (no scope check, no boundary) and returns
/// the funcmap text and the device instructions of `arch`.
fn build(dir: &Path, src: &str, arch: &str, extra: &[&str]) -> (Option<String>, Vec<String>) {
    std::fs::write(dir.join("k.hip"), src).unwrap();
    let o = wrapper(dir)
        .args(arch_args(arch))
        .args(["-O2", "-c", "k.hip", "-o", "k.o"])
        .args(extra)
        .env("SQTT_SCOPE_CU", "-1")
        .env("SQTT_MEM_BARRIER", "none")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let co = extract_code_object(&dir.join("k.o"), toolchain_arch(arch), dir);
    let map = dump_funcmap(&co, dir).map(|b| {
        String::from_utf8(b)
            .unwrap()
            .trim_end_matches('\0')
            .trim_end()
            .to_string()
    });
    let insts = objdump_instructions(&disassemble(&co, toolchain_arch(arch)));
    (map, insts)
}

#[test]
fn amd_header_code_builds_unchanged_through_sqtt_hipcc() {
    let d = workdir();
    for arch in ["gfx90a", "gfx1030"] {
        // No -DAMD_SQTT_MARKER_ENABLE: sqtt-hipcc's SQTT_ENABLED turns the markers on.
        let (map, insts) = build(d.path(), AMD_KERNEL, arch, &[]);
        assert_eq!(map.as_deref(), Some(AMD_FUNCMAP), "{arch}");
        // outer enter, outer exit fused with inner enter, point, data + payload, point_id(7),
        // enter_id(9), exit, newer enter, newer_data + payload, exit("newer"), exit inner.
        let want = [
            "6", "11", "12", "16", "s*", "28", "38", "1", "22", "24", "s*", "1", "1",
        ];
        assert_eq!(
            trace_record_values(&insts),
            want,
            "{arch}:\n{}",
            insts.join("\n")
        );
        // AMD's own build line works as it is.
        let (map, _) = build(d.path(), AMD_KERNEL, arch, &["-DAMD_SQTT_MARKER_ENABLE=1"]);
        assert_eq!(map.as_deref(), Some(AMD_FUNCMAP), "{arch}");
    }
    // Turned off in the source: the kernel's row only, and no record.
    let (map, insts) = build(
        d.path(),
        AMD_KERNEL,
        "gfx90a",
        &["-DAMD_SQTT_MARKER_ENABLE=0"],
    );
    assert_eq!(map.as_deref(), Some("K:amd_kernel"));
    assert!(
        trace_record_values(&insts).is_empty(),
        "{}",
        insts.join("\n")
    );
}

#[test]
fn both_headers_in_one_translation_unit() {
    let src = r#"
#include <hip/hip_runtime.h>
#include "markers.hpp"
#include <amd_sqtt_marker/sqtt_marker.h>

__global__ void both(unsigned int v, unsigned int *out) {
  sqtt_marker_enter("ours");
  amd_sqtt_marker_enter_string("theirs");
  sqtt_marker_point(3u);
  amd_sqtt_marker_point_id(4);
  sqtt_marker_data("ours_data", v);
  amd_sqtt_marker_exit_string("theirs");
  sqtt_marker_exit("ours");
  out[0] = v;
}
"#;
    let d = workdir();
    let (map, insts) = build(d.path(), src, "gfx90a", &[]);
    assert_eq!(
        map.as_deref(),
        Some("K:_Z4bothjPj\nU:1:ours\nU:2:theirs\nP:3:ours_data\nR:3:extra_payload_count=1")
    );
    assert_eq!(
        trace_record_values(&insts),
        ["6", "10", "12", "16", "12", "s*", "1", "1"],
        "{}",
        insts.join("\n")
    );
}

#[test]
fn the_include_dir_on_the_path_holds_both_headers() {
    // The include directory sqtt-hipcc puts on the path holds both headers, byte for byte.
    let d = workdir();
    let o = driver(d.path()).arg("--sqtt-include-dir").output().unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let inc = String::from_utf8_lossy(&o.stdout).trim().to_string();
    for (rel, text) in sqtt_markers::HEADERS {
        let got = std::fs::read_to_string(Path::new(&inc).join(rel)).unwrap();
        assert_eq!(&got, text, "{rel}");
    }
}

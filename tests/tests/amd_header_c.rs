//! `amd_sqtt_marker/sqtt_marker.h` from plain C device code: `clang -x c
//! --target=amdgcn-amd-amdhsa` with the plugin, on whichever LLVM the lane provides (no hipcc).
//! Asserts on the funcmap rows and the trace records in the ISA.

use std::process::Command;

use sqtt_e2e::toolchain::*;

/// Every call of AMD's API, old and new spellings, in one C function.
const C_SOURCE: &str = r#"
#include <amd_sqtt_marker/sqtt_marker.h>

void use_markers(unsigned int id) {
  amd_sqtt_marker_enter_string("scope");
  amd_sqtt_marker_point_string("point");
  amd_sqtt_marker_data_string("data", id);
  amd_sqtt_marker_point_id(id);
  amd_sqtt_marker_enter_id(3);
  amd_sqtt_marker_exit();
  sqtt_marker_point("newer");
  sqtt_marker_data("newer_data", id + 1);
  sqtt_marker_enter_id(5);
  sqtt_marker_exit_id(5);
  sqtt_marker_exit("scope");
  amd_sqtt_marker_exit_string("scope");
}
"#;

const C_FUNCMAP: &str = "U:1:scope\nP:2:point\nP:3:data\nR:3:extra_payload_count=1\n\
P:4:newer\nP:5:newer_data\nR:5:extra_payload_count=1\n";

/// No scope check, no reorder boundary: the bare records.
const BARE: &[(&str, &str)] = &[("SQTT_SCOPE_CU", "-1"), ("SQTT_MEM_BARRIER", "none")];

/// `clang -x c` for an AMDGPU device, plugin loaded, every `SQTT_*` removed but `env`.
fn c_compile(arch: &str, opt: &str, env: &[(&str, &str)], extra: &[&str]) -> (String, String) {
    let dir = workdir();
    let src = dir.path().join("m.c");
    std::fs::write(&src, C_SOURCE).unwrap();
    let out = dir.path().join("m.s");
    let mut c = Command::new(llvm_tool("clang"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SQTT_") {
            c.env_remove(k);
        }
    }
    c.current_dir(dir.path())
        .args(["-x", "c", "-std=c11", "-ffreestanding", "-nogpulib"])
        .args(["-Wall", "-Wextra", "-Werror"])
        .arg("--target=amdgcn-amd-amdhsa")
        .arg(format!("-mcpu={}", toolchain_arch(arch)))
        .arg(opt)
        .arg(format!("-I{}", markers_include().display()))
        .arg(format!("-fpass-plugin={}", plugin_path().display()))
        .args(extra)
        .arg("-S")
        .arg(&src)
        .arg("-o")
        .arg(&out);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = run(&mut c);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "clang failed: {err}");
    (std::fs::read_to_string(&out).unwrap(), err)
}

#[test]
fn c_device_code_with_the_amd_api_is_resolved_by_the_plugin() {
    for arch in ["gfx90a", "gfx1030"] {
        let (asm, err) = c_compile(arch, "-O2", BARE, &["-DAMD_SQTT_MARKER_ENABLE=1"]);
        assert!(err.is_empty(), "{err}");
        assert_eq!(funcmap_from_asm(&asm).as_deref(), Some(C_FUNCMAP), "{arch}");
        let insts = function_instructions(&asm, "use_markers");
        // enter scope, point, data + payload, point_id(id), enter_id(3), exit, point newer,
        // data newer + payload, enter_id(5), exit_id, exit("scope") and exit_string (both pop).
        let want = [
            "6", "8", "12", "s*", "s*", "14", "1", "16", "20", "s*", "22", "1", "1", "1",
        ];
        assert_eq!(
            trace_record_values(&insts),
            want,
            "{arch}:\n{}",
            insts.join("\n")
        );
        // Nothing of the API is left to link against.
        assert!(
            !asm.contains("sqtt_marker_"),
            "{arch}: a call survived:\n{asm}"
        );
        assert!(!asm.contains("__sqtt_named_marker"), "{arch}");
    }
}

#[test]
fn c_device_code_at_o0_gets_the_same_funcmap() {
    let (asm, _) = c_compile("gfx1030", "-O0", BARE, &["-DAMD_SQTT_MARKER_ENABLE=1"]);
    assert_eq!(funcmap_from_asm(&asm).as_deref(), Some(C_FUNCMAP));
    let insts = function_instructions(&asm, "use_markers");
    assert_eq!(
        trace_record_values(&insts).len(),
        14,
        "{}",
        insts.join("\n")
    );
    // No sentinel left to call (every name resolved through -O0's allocas).
    assert!(
        !asm.contains("sqtt_marker_") && !asm.contains("__sqtt_named_marker"),
        "a sentinel survived at -O0:\n{asm}"
    );
}

#[test]
fn the_amd_api_is_off_unless_enabled() {
    // Neither AMD_SQTT_MARKER_ENABLE nor SQTT_ENABLED: no-ops, as AMD's header.
    for extra in [
        &[][..],
        &["-DAMD_SQTT_MARKER_ENABLE=0", "-DSQTT_ENABLED=1"][..],
    ] {
        let (asm, _) = c_compile("gfx90a", "-O2", BARE, extra);
        assert!(!asm.contains("ttracedata"), "{extra:?}:\n{asm}");
        assert_eq!(funcmap_from_asm(&asm), None, "{extra:?}");
    }
    // Left undefined, it follows SQTT_ENABLED (what sqtt-hipcc defines).
    let (asm, _) = c_compile("gfx90a", "-O2", BARE, &["-DSQTT_ENABLED=1"]);
    assert_eq!(funcmap_from_asm(&asm).as_deref(), Some(C_FUNCMAP));
}

#[test]
fn the_id_markers_work_without_the_plugin() {
    let dir = workdir();
    let src = dir.path().join("ids.c");
    std::fs::write(
        &src,
        "#include <amd_sqtt_marker/sqtt_marker.h>\nvoid ids(void) {\n  \
         amd_sqtt_marker_enter_id(9);\n  amd_sqtt_marker_point_id(4);\n  \
         amd_sqtt_marker_exit();\n}\n",
    )
    .unwrap();
    let asm = run_ok(
        Command::new(llvm_tool("clang"))
            .args(["-x", "c", "-std=c11", "-ffreestanding", "-nogpulib", "-O2"])
            .args([
                "--target=amdgcn-amd-amdhsa",
                "-mcpu=gfx90a",
                "-S",
                "-o",
                "-",
            ])
            .arg("-DAMD_SQTT_MARKER_ENABLE=1")
            .arg(format!("-I{}", markers_include().display()))
            .arg(&src),
    );
    let insts = function_instructions(&asm, "ids");
    assert_eq!(
        trace_record_values(&insts),
        ["38", "16", "1"],
        "{}",
        insts.join("\n")
    );
}

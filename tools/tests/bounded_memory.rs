//! Bounded memory of the trace tools' readers (issue 25), each run under `ulimit -v`: a raw
//! thread trace (.att) larger than the memory allowed, an `occupancy.json` whose rows outgrow
//! it, a shaderdata file of gigabytes, and a compressed bundle declaring 2 GiB of zeros as a
//! trace directory's code object and as `--code-object`. Each ends with a clear message and an
//! exit status, never a panic or an abort (exit 134 on allocation failure before). Large files
//! are sparse.

mod sim;
#[path = "support/run.rs"]
mod support;

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};

use sqtt_codeobj::bundle::{write_ccob, write_zstd_zeros, Compression};

use support::s;

const G: u64 = 1 << 30;

/// `sqtt ARGS` with at most `limit_mib` MiB of address space.
fn sqtt_limited(limit_mib: u64, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {}; exec \"$0\" \"$@\"", limit_mib << 10))
        .arg(env!("CARGO_BIN_EXE_sqtt"))
        .args(args)
        .output()
        .unwrap()
}

/// No signal, no panic, an exit status among `codes`, `want` in stderr.
fn assert_clear(o: &Output, codes: &[i32], want: &str) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.signal(), None, "killed: {err}");
    assert!(
        o.status.code().is_some_and(|c| codes.contains(&c)),
        "exit {:?}: {err}",
        o.status.code()
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(want), "wanted {want:?} in: {err}");
    err
}

fn sparse(path: &Path, head: &[u8], len: u64) {
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(head).unwrap();
    f.set_len(len).unwrap();
}

/// 2 GiB of zstd zeros in a 66 KB compressed bundle.
fn ccob_bomb() -> Vec<u8> {
    write_ccob(
        3,
        Compression::Zstd,
        2 * G,
        &write_zstd_zeros(&[], 2 * G, Some(23)),
    )
}

#[test]
fn a_raw_trace_larger_than_memory_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let att = d.path().join("big.att");
    sparse(&att, &[], 2 * G);
    for cmd in ["waves", "clock"] {
        let o = sqtt_limited(256, &[cmd, "--gpu", "gfx1100", s(&att)]);
        assert_clear(&o, &[1], "cannot allocate 2147483648 bytes to read it");
    }
}

/// 1.5 million occupancy rows, each of a slot of its own, need some 200 MB: within 128 MiB of
/// address space the file is reported (and the run goes on without it), never an abort.
#[test]
fn occupancy_rows_beyond_memory_are_a_warning() {
    let d = tempfile::tempdir().unwrap();
    sim::scenario(1).write(d.path());
    let occ = d.path().join("ui_output_agent_1_dispatch_1/occupancy.json");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&occ).unwrap());
    f.write_all(b"{\"0\":[").unwrap();
    for i in 0..1_500_000u32 {
        let sep = if i == 0 { "" } else { "," };
        write!(f, "{sep}[{i},{i},0,0,1,1]").unwrap();
    }
    f.write_all(b"],\"dispatches\":{\"1\":\"k\"}}").unwrap();
    f.flush().unwrap();
    drop(f);
    let o = sqtt_limited(128, &["stats", s(d.path())]);
    assert_clear(&o, &[0], "occupancy.json: out of memory");
}

#[test]
fn a_shaderdata_file_of_gigabytes_is_streamed() {
    let d = tempfile::tempdir().unwrap();
    sim::scenario(1).write(d.path());
    let ui = d.path().join("ui_output_agent_1_dispatch_1");
    std::fs::remove_dir_all(d.path().join("ui_output_agent_2_dispatch_4")).unwrap();
    for e in std::fs::read_dir(&ui).unwrap() {
        let p = e.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("shaderdata_")
        {
            std::fs::remove_file(p).unwrap();
        }
    }
    std::fs::remove_file(ui.join("filenames.json")).unwrap();
    sparse(
        &ui.join("shaderdata_0_0.json"),
        b"{\"records\":[[1,4,0,0,0,0]",
        4 * G,
    );
    let o = sqtt_limited(128, &["flamegraph", s(d.path())]);
    assert_clear(
        &o,
        &[0],
        "shaderdata_0_0.json: malformed JSON after 1 records: expected ',' or ']' after a \
         record at byte 25",
    );
}

/// The compressed-bundle bomb as a trace directory's code object (a warning: its waves lose
/// their funcmap) and as `--code-object` (a usage error naming the option).
#[test]
fn a_compressed_bundle_bomb_as_a_code_object_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    sim::scenario(1).write(d.path());
    std::fs::write(d.path().join("run_code_object_id_1.out"), ccob_bomb()).unwrap();
    let o = sqtt_limited(256, &["stats", s(d.path())]);
    assert_clear(&o, &[0], "no __CLANG_OFFLOAD_BUNDLE__ magic");

    let bomb = d.path().join("bomb.ccob");
    std::fs::write(&bomb, ccob_bomb()).unwrap();
    let o = sqtt_limited(256, &["stats", s(d.path()), "--code-object", s(&bomb)]);
    let err = assert_clear(&o, &[2], "no __CLANG_OFFLOAD_BUNDLE__ magic");
    assert!(
        err.contains(&format!("--code-object {}", bomb.display())),
        "{err}"
    );
    let o = sqtt_limited(256, &["funcmap", s(&bomb)]);
    assert_clear(&o, &[1], "no __CLANG_OFFLOAD_BUNDLE__ magic");
}

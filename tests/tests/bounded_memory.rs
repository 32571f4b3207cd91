//! Bounded memory of the code-object reader (issue 25), through `sqtt-hipcc --check` run under
//! `ulimit -v`: a compressed bundle declaring gigabytes, a bundle entry too large to hold, a
//! host binary of gigabytes, a bare code object beyond the bound and an archive larger than the
//! memory allowed each end with a clear error and an exit status, never a panic (exit 101, in
//! the zstd decoder) or an abort (exit 134, allocation failure), and quickly. Large files are
//! sparse. Runs only the built driver (no hipcc, no GPU).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use sqtt_codeobj::bundle::{write_ccob, write_zstd_zeros, Compression, MAGIC};
use sqtt_e2e::driver::sqtt_hipcc;

const G: u64 = 1 << 30;
/// The address space the runs get (KiB for `ulimit -v`): far less than any of the inputs
/// declares, far more than the driver needs (some 30 MiB).
const LIMIT_KIB: u64 = 256 << 10;

fn scratch(name: &str) -> PathBuf {
    let d = tempfile::Builder::new()
        .prefix(&format!("sqtt-e2e-bounded-{name}-"))
        .tempdir()
        .unwrap()
        .keep();
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `sqtt-hipcc --check FILE` under `ulimit -v`.
fn check_limited(file: &Path) -> (Output, Duration) {
    let start = Instant::now();
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KIB}; exec \"$0\" --check \"$1\""))
        .arg(sqtt_hipcc())
        .arg(file)
        .output()
        .unwrap();
    (o, start.elapsed())
}

/// Exit 1 or 2 (no signal, no panic, no abort), within seconds, with `want` in the message.
fn assert_clear_error(file: &Path, want: &str) {
    let (o, took) = check_limited(file);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.signal(), None, "killed: {err}");
    assert!(
        matches!(o.status.code(), Some(1 | 2)),
        "exit {:?}: {err}",
        o.status.code()
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(want), "wanted {want:?} in: {err}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

/// A plain bundle header with one gfx90a entry of `size` bytes (the payload follows).
fn bundle_header(size: u64) -> Vec<u8> {
    let id = b"hipv4-amdgcn-amd-amdhsa--gfx90a";
    let mut h = MAGIC.to_vec();
    h.extend_from_slice(&1u64.to_le_bytes());
    for v in [(32 + 24 + id.len()) as u64, size, id.len() as u64] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    h.extend_from_slice(id);
    h
}

/// A 64-byte ELF64 header of machine `machine`, with no sections.
fn elf_header(machine: u16) -> Vec<u8> {
    let mut h = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0".to_vec();
    h.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    h.extend_from_slice(&machine.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    h.extend_from_slice(&[0; 24]); // entry, phoff, shoff
    h.extend_from_slice(&0u32.to_le_bytes()); // flags
    for v in [64u16, 56, 0, 64, 0, 0] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    h
}

/// A sparse file of `len` bytes that begins with `head`.
fn sparse(path: &Path, head: &[u8], len: u64) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(head).unwrap();
    f.set_len(len).unwrap();
}

/// 66 KB of zstd declaring 2 GiB of zeros: 3.1 GB and 22 s before, exit 101 under the limit.
#[test]
fn a_compressed_bundle_of_zeros_stops_at_its_header() {
    let dir = scratch("zeros");
    let f = dir.join("zeros.ccob");
    let z = write_zstd_zeros(&[], 2 * G, Some(23));
    std::fs::write(&f, write_ccob(3, Compression::Zstd, 2 * G, &z)).unwrap();
    assert_clear_error(&f, "no __CLANG_OFFLOAD_BUNDLE__ magic");
    // A single-segment frame asks for a window of 2 GiB itself.
    std::fs::write(
        &f,
        write_ccob(
            3,
            Compression::Zstd,
            2 * G,
            &write_zstd_zeros(&[], 2 * G, None),
        ),
    )
    .unwrap();
    assert_clear_error(&f, "needs a window of 2147483648 bytes");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A bundle header, then a code object of 2 GiB (refused as declared) or of 900 MiB (more than
/// the process may allocate: an error, not an abort).
#[test]
fn a_bundle_entry_larger_than_memory_is_an_error() {
    let dir = scratch("entry");
    let f = dir.join("entry.ccob");
    for (size, want) in [
        (
            2 * G,
            "declares 2147483648 bytes; a code object may have at most 1073741824",
        ),
        (900 << 20, "cannot allocate 943718400 bytes"),
    ] {
        let mut head = bundle_header(size);
        let total = head.len() as u64 + size;
        head.extend_from_slice(b"\x7fELF");
        let z = write_zstd_zeros(&head, size - 4, Some(23));
        std::fs::write(&f, write_ccob(3, Compression::Zstd, total, &z)).unwrap();
        assert_clear_error(&f, want);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Host binaries are read by their headers and device sections: a 5 GiB one (sparse) with no
/// device code reads in a moment (it was read whole: 5.2 GB, or exit 134 under the limit).
#[test]
fn a_huge_host_binary_is_read_by_its_sections() {
    let dir = scratch("host");
    let f = dir.join("huge-host");
    sparse(&f, &elf_header(62), 5 * G);
    assert_clear_error(&f, "no AMDGPU code object");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A bare code object above the bound is refused before it is read; an archive larger than the
/// memory allowed is an error naming the allocation.
#[test]
fn inputs_beyond_the_bounds_or_the_memory_are_errors() {
    let dir = scratch("bare");
    let co = dir.join("huge.co");
    sparse(&co, &elf_header(0xE0), 3 * G);
    assert_clear_error(
        &co,
        "a code object of 3221225472 bytes; at most 1073741824 are read",
    );
    let ar = dir.join("huge.a");
    sparse(&ar, b"!<arch>\n", 2 * G);
    assert_clear_error(&ar, "cannot allocate 2147483648 bytes to read it");
    std::fs::remove_dir_all(&dir).unwrap();
}

//! Outputs written through what their path names. Device nodes and FIFOs are made inside the
//! test's own temporary directory (never the real /dev: as root, the old rename replaced
//! /dev/null with a regular file).

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

use super::*;
use crate::device::make_char_device;

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

fn write_all(path: &Path, text: &str) -> io::Result<()> {
    let mut o = Output::create(path)?;
    o.write_all(text.as_bytes())?;
    o.commit()
}

/// Nothing but the named entries in `dir` (no temporary file left behind).
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn new_and_regular_files_are_replaced_atomically_keeping_their_mode() {
    let d = tempfile::tempdir().unwrap();
    let new = d.path().join("new.json");
    write_all(&new, "one").unwrap();
    assert_eq!(std::fs::read_to_string(&new).unwrap(), "one");

    let old = d.path().join("old.json");
    std::fs::write(&old, "old").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o640)).unwrap();
    let ino = std::fs::metadata(&old).unwrap().ino();
    let mut o = Output::create(&old).unwrap();
    o.write_all(b"new").unwrap();
    // Until the commit, the old file is untouched.
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "old");
    o.commit().unwrap();
    let meta = std::fs::metadata(&old).unwrap();
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "new");
    assert_ne!(
        meta.ino(),
        ino,
        "a regular file is replaced, not rewritten in place"
    );
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);
    assert_eq!(entries(d.path()), ["new.json", "old.json"]);
}

#[test]
fn an_uncommitted_output_leaves_the_old_file_and_no_temporary() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("report.json");
    std::fs::write(&f, "old").unwrap();
    let mut o = Output::create(&f).unwrap();
    o.write_all(b"partial").unwrap();
    drop(o);
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "old");
    assert_eq!(entries(d.path()), ["report.json"]);
}

#[test]
fn a_symlink_is_followed_and_stays_a_symlink() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("real")).unwrap();
    let target = d.path().join("real/out.svg");
    std::fs::write(&target, "old").unwrap();
    let link = d.path().join("link.svg");
    std::os::unix::fs::symlink("real/out.svg", &link).unwrap();
    // A link to a link, too.
    let link2 = d.path().join("link2.svg");
    std::os::unix::fs::symlink(&link, &link2).unwrap();
    write_all(&link2, "new").unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::symlink_metadata(&link2)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    assert_eq!(entries(&d.path().join("real")), ["out.svg"]);

    // A dangling link: its target is created, the link kept.
    let dangling = d.path().join("dangling.json");
    std::os::unix::fs::symlink("real/made.json", &dangling).unwrap();
    write_all(&dangling, "made").unwrap();
    assert!(std::fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(d.path().join("real/made.json")).unwrap(),
        "made"
    );
}

#[test]
fn a_device_node_is_written_directly_and_stays_a_device() {
    let d = tempfile::tempdir().unwrap();
    let null = d.path().join("null");
    if !make_char_device(&null, 1, 3) {
        return;
    }
    write_all(&null, "discarded").unwrap();
    let ft = std::fs::symlink_metadata(&null).unwrap().file_type();
    assert!(ft.is_char_device(), "the device node was replaced");
    assert_eq!(entries(d.path()), ["null"]);
    // Through a symbolic link as well.
    let link = d.path().join("to-null");
    std::os::unix::fs::symlink(&null, &link).unwrap();
    write_all(&link, "discarded").unwrap();
    assert!(std::fs::symlink_metadata(&null)
        .unwrap()
        .file_type()
        .is_char_device());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_full_device_is_an_error_naming_the_output() {
    let d = tempfile::tempdir().unwrap();
    let full = d.path().join("full");
    if !make_char_device(&full, 1, 7) {
        return;
    }
    let err = write_all(&full, &"x".repeat(100_000)).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::StorageFull, "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "cannot write {}: No space left on device (os error 28)",
            full.display()
        )
    );
    assert!(std::fs::symlink_metadata(&full)
        .unwrap()
        .file_type()
        .is_char_device());
}

#[test]
fn a_fifo_is_written_directly_and_stays_a_fifo() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath(&fifo).as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            File::open(&fifo).unwrap().read_to_string(&mut s).unwrap();
            s
        })
    };
    write_all(&fifo, "through the pipe").unwrap();
    assert_eq!(reader.join().unwrap(), "through the pipe");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(entries(d.path()), ["fifo"]);
}

#[test]
fn a_proc_fd_link_like_dev_stdout_is_written_directly() {
    // /dev/stdout is a link to /proc/self/fd/1; a link of our own to the write end of a pipe
    // stands in for it (the real /dev/stdout is never touched).
    let d = tempfile::tempdir().unwrap();
    let mut fds = [0; 2];
    // SAFETY: pipe fills the two descriptors we own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the descriptors were just made and are owned here only.
    let (mut rd, wr) = unsafe {
        use std::os::fd::FromRawFd;
        (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
    };
    let stdout = d.path().join("stdout");
    std::os::unix::fs::symlink(format!("/proc/self/fd/{}", fds[1]), &stdout).unwrap();
    write_all(&stdout, "to the descriptor").unwrap();
    drop(wr);
    let mut s = String::new();
    rd.read_to_string(&mut s).unwrap();
    assert_eq!(s, "to the descriptor");
    assert!(std::fs::symlink_metadata(&stdout)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(entries(d.path()), ["stdout"]);
}

#[test]
fn a_directory_is_refused_before_anything_is_written() {
    let d = tempfile::tempdir().unwrap();
    let err = Output::create(d.path()).err().unwrap();
    assert_eq!(
        err.to_string(),
        format!("cannot write {}: it is a directory", d.path().display())
    );
    assert!(entries(d.path()).is_empty());
}

#[test]
fn an_output_that_is_an_input_is_refused_however_it_is_reached() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("shaderdata_0_0.json");
    std::fs::write(&input, "{}").unwrap();
    let other = d.path().join("other.json");
    std::fs::write(&other, "{}").unwrap();
    let link = d.path().join("link.json");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    let hard = d.path().join("hard.json");
    std::fs::hard_link(&input, &hard).unwrap();
    let inputs = Inputs::new([&input]);
    let err = inputs.check(&input).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "cannot write {}: it is one of the inputs, which it would overwrite",
            input.display()
        )
    );
    for out in [&link, &hard] {
        let err = inputs.check(out).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "cannot write {}: it is the input {}, which it would overwrite",
                out.display(),
                input.display()
            )
        );
    }
    inputs.check(&other).unwrap();
    inputs.check(&d.path().join("new.json")).unwrap();
}

#[test]
fn write_errors_keep_their_kind_and_are_named_once() {
    let e = write_error("out.json", io::Error::from(io::ErrorKind::BrokenPipe));
    assert!(is_broken_pipe(&e));
    let again = write_error("elsewhere", e);
    assert_eq!(again.to_string(), "cannot write out.json: broken pipe");
    assert!(is_broken_pipe(&again));
}

#[test]
fn printable_escapes_what_a_terminal_or_a_line_would_act_on() {
    assert!(matches!(
        printable("ns::kernel<int>(float*) @ a.hip:3"),
        std::borrow::Cow::Borrowed(_)
    ));
    assert_eq!(
        printable("a\u{1b}[31mred\nb\tc\rd\u{7f}"),
        "a\\x1b[31mred\\nb\\tc\\rd\\x7f"
    );
    assert_eq!(
        printable("\u{9b}2J \u{202e}txt \u{2028}"),
        "\\x9b2J \\u{202e}txt \\u{2028}"
    );
    // Other text, including non-ASCII names, is kept.
    assert_eq!(printable("größe λ 名前"), "größe λ 名前");
}

//! The `sqtt` binary's outputs (issue 25): files written through what their path names (device
//! nodes, FIFOs and `/dev/stdout` written directly, symbolic links followed and kept), outputs
//! that are inputs refused before anything is written, and every write error on stdout or a
//! file an error that names it. Device nodes and FIFOs are made in the test's own temporary
//! directory, never in the real /dev.

#[path = "support/device.rs"]
mod device;
mod sim;
#[path = "support/run.rs"]
mod support;

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use device::make_char_device;
use support::{s, sqtt as run};

fn sqtt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sqtt"))
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A trace directory with address-trace blocks (for `sqtt memory`).
fn trace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    sim::scenario(1).write(dir.path());
    dir
}

fn is_char_device(p: &Path) -> bool {
    std::fs::symlink_metadata(p)
        .unwrap()
        .file_type()
        .is_char_device()
}

fn is_symlink(p: &Path) -> bool {
    std::fs::symlink_metadata(p)
        .unwrap()
        .file_type()
        .is_symlink()
}

/// A private "full" device (major 1, minor 7: every write fails with ENOSPC).
fn full_device(dir: &Path) -> Option<PathBuf> {
    let p = dir.join("full");
    make_char_device(&p, 1, 7).then_some(p)
}

/// As root, the old rename replaced the device node with a regular file (it broke every build
/// on the machine when it was /dev/null). The node stays a device, written directly.
#[test]
fn outputs_to_a_device_node_keep_the_node() {
    let t = trace();
    let d = tempfile::tempdir().unwrap();
    let null = d.path().join("null");
    if !make_char_device(&null, 1, 3) {
        return;
    }
    let o = run(&["memory", s(t.path()), "-o", s(&null)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(is_char_device(&null), "memory -o replaced the device node");
    let o = run(&["flamegraph", s(t.path()), "--svg", s(&null)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(is_char_device(&null), "--svg replaced the device node");
    let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "a temporary file was left behind");
}

#[test]
fn an_output_through_a_symlink_writes_its_target_and_keeps_the_link() {
    let t = trace();
    let d = tempfile::tempdir().unwrap();
    let real = d.path().join("real.svg");
    std::fs::write(&real, "old").unwrap();
    let link = d.path().join("flame.svg");
    std::os::unix::fs::symlink("real.svg", &link).unwrap();
    let o = run(&["flamegraph", s(t.path()), "--svg", s(&link)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(is_symlink(&link), "the link was replaced by a file");
    assert!(std::fs::read_to_string(&real).unwrap().starts_with("<?xml"));

    let report = d.path().join("report.json");
    std::os::unix::fs::symlink("real.json", &report).unwrap(); // dangling: created
    let o = run(&["memory", s(t.path()), "-o", s(&report)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(is_symlink(&report));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("real.json")).unwrap()).unwrap();
    assert!(!json["traces"].as_array().unwrap().is_empty());
}

/// `-o /dev/stdout` printed nothing and, as root, replaced the link. A link of the test's own
/// to `/proc/self/fd/1` stands for it (in the child, that is the child's stdout).
#[test]
fn an_output_to_dev_stdout_goes_to_stdout() {
    let t = trace();
    let d = tempfile::tempdir().unwrap();
    let stdout = d.path().join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &stdout).unwrap();
    let o = run(&["memory", s(t.path()), "-o", s(&stdout)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(is_symlink(&stdout), "the link was replaced");
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!json["traces"].as_array().unwrap().is_empty());
}

#[test]
fn an_output_to_a_fifo_is_written_into_it() {
    let t = trace();
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // Not joined before the checks: with the old rename nobody ever writes into the FIFO.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut v = Vec::new();
            File::open(&fifo).unwrap().read_to_end(&mut v).unwrap();
            v
        })
    };
    let o = run(&["memory", s(t.path()), "-o", s(&fifo)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo(),
        "the FIFO was replaced"
    );
    let json: serde_json::Value = serde_json::from_slice(&reader.join().unwrap()).unwrap();
    assert!(!json["traces"].as_array().unwrap().is_empty());
}

/// An output that is one of the trace's own files (by name, symbolic or hard link, or standard
/// output redirected into it) is a usage error before anything is written; the file is
/// untouched.
#[test]
fn an_output_that_is_an_input_is_refused_before_anything_is_written() {
    let t = trace();
    let ui = t.path().join("ui_output_agent_1_dispatch_1");
    let occupancy = ui.join("occupancy.json");
    let shaderdata = ui.join("shaderdata_0_0.json");
    let code_object = t.path().join("run_code_object_id_1.out");
    let before = |p: &Path| std::fs::read(p).unwrap();
    let (occ0, sd0, co0) = (
        before(&occupancy),
        before(&shaderdata),
        before(&code_object),
    );
    let d = tempfile::tempdir().unwrap();
    let link = d.path().join("link.svg");
    std::os::unix::fs::symlink(&shaderdata, &link).unwrap();
    let hard = d.path().join("hard.json");
    std::fs::hard_link(&code_object, &hard).unwrap();

    let cases: Vec<(Vec<&str>, &Path)> = vec![
        (vec!["memory", s(t.path()), "-o", s(&occupancy)], &occupancy),
        (vec!["flamegraph", s(t.path()), "--svg", s(&link)], &link),
        (vec!["memory", s(t.path()), "-o", s(&hard)], &hard),
        (
            vec!["diff", s(t.path()), s(t.path()), "--svg", s(&occupancy)],
            &occupancy,
        ),
        (
            vec![
                "memory",
                s(t.path()),
                "--code-object",
                s(&code_object),
                "-o",
                s(&code_object),
            ],
            &code_object,
        ),
    ];
    for (args, out) in cases {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        let e = err(&o);
        assert!(
            e.contains(&format!("cannot write {}: it is ", out.display()))
                && e.contains("which it would overwrite"),
            "{args:?}: {e}"
        );
        assert!(o.stdout.is_empty(), "{args:?} printed before refusing");
    }
    // Standard output appended to an input.
    for tool in ["flamegraph", "stats", "memory"] {
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(&shaderdata)
            .unwrap();
        let o = sqtt()
            .args([tool, s(t.path())])
            .stdout(Stdio::from(f))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{tool}: {}", err(&o));
        assert!(
            err(&o).contains(&format!(
                "cannot write to stdout: it is the input {}",
                shaderdata.display()
            )),
            "{tool}: {}",
            err(&o)
        );
    }
    assert_eq!(before(&occupancy), occ0);
    assert_eq!(before(&shaderdata), sd0);
    assert_eq!(before(&code_object), co0);
    assert!(is_symlink(&link));

    // A directory is no output either.
    let o = run(&["memory", s(t.path()), "-o", s(t.path())]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("it is a directory"), "{}", err(&o));
}

/// A Perfetto file that would be written over one of the inputs (its name a link to it).
#[test]
fn a_perfetto_file_that_is_an_input_is_refused() {
    let t = trace();
    let code_object = t.path().join("run_code_object_id_1.out");
    let co0 = std::fs::read(&code_object).unwrap();
    let pf = t.path().join("ui_output_agent_1_dispatch_1.pftrace");
    std::os::unix::fs::symlink("run_code_object_id_1.out", &pf).unwrap();
    let o = run(&["perfetto", s(t.path())]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("which it would overwrite"), "{}", err(&o));
    assert_eq!(std::fs::read(&code_object).unwrap(), co0);
    // No other Perfetto file was written either.
    assert!(!t
        .path()
        .join("ui_output_agent_2_dispatch_4.pftrace")
        .exists());
}

/// Every command's stdout on a full device: exit 1 and one line naming stdout. (Before, the
/// errors did not say what failed, `funcmap` and `--help` exited 0.)
#[test]
fn a_full_stdout_is_an_error_naming_it() {
    let t = trace();
    let d = tempfile::tempdir().unwrap();
    let Some(full) = full_device(d.path()) else {
        return;
    };
    let co = t.path().join("run_code_object_id_1.out");
    let att = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/sqtt-captures/gfx1100/gemm_run_0/kern0_se0.att");
    let runs: Vec<Vec<&str>> = vec![
        vec!["flamegraph", s(t.path())],
        vec!["stats", s(t.path())],
        vec!["stats", s(t.path()), "--json"],
        vec!["memory", s(t.path())],
        vec!["memory", s(t.path()), "--summary"],
        vec!["diff", s(t.path()), s(t.path())],
        vec!["funcmap", s(&co)],
        vec!["funcmap", s(&co), "--json"],
        vec!["waves", "--gpu", "gfx1100", s(&att)],
        vec!["clock", "--gpu", "gfx1100", s(&att)],
        vec![
            "thread-trace",
            "start",
            "--gpu",
            "gfx1100",
            "--size",
            "1M",
            "--address",
            "0x100000",
        ],
        vec!["--help"],
        vec!["--version"],
    ];
    for args in runs {
        let o = sqtt()
            .args(&args)
            .stdout(File::options().write(true).open(&full).unwrap())
            .output()
            .unwrap();
        let e = err(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        let errors: Vec<&str> = e.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: one error line expected: {e}");
        assert!(
            errors[0]
                .ends_with("error: cannot write to stdout: No space left on device (os error 28)"),
            "{args:?}: {e}"
        );
    }
}

/// A report file on a full device names the file (it was "<memory output>"), exit 1; the SVG
/// likewise.
#[test]
fn a_full_output_file_is_an_error_naming_it() {
    let t = trace();
    let d = tempfile::tempdir().unwrap();
    let Some(full) = full_device(d.path()) else {
        return;
    };
    for args in [
        vec!["memory", s(t.path()), "-o", s(&full)],
        vec!["flamegraph", s(t.path()), "--svg", s(&full)],
    ] {
        let o = sqtt().args(&args).stdout(Stdio::null()).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", err(&o));
        assert!(
            err(&o).contains(&format!(
                "error: cannot write {}: No space left on device",
                full.display()
            )),
            "{args:?}: {}",
            err(&o)
        );
        assert!(is_char_device(&full));
    }
}

/// A reader that closed its end (`| head`): the run ends quietly, status 0, no panic; `funcmap`
/// keeps the check's own status.
#[test]
fn a_closed_pipe_ends_quietly() {
    let t = trace();
    let co = t.path().join("run_code_object_id_1.out");
    for args in [
        vec!["flamegraph", s(t.path())],
        vec!["stats", s(t.path())],
        vec!["memory", s(t.path())],
        vec!["funcmap", s(&co)],
        vec!["--help"],
    ] {
        let mut child = sqtt()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let e = err(&o);
        assert_eq!(o.status.signal(), None, "{args:?}");
        assert_eq!(o.status.code(), Some(0), "{args:?}: {e}");
        assert!(
            !e.contains("panicked") && !e.contains("error"),
            "{args:?}: {e}"
        );
    }
}

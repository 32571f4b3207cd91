//! Inputs that change, block or never end (issue 15): `sqtt-hipcc --check` on a file rewritten
//! or truncated while it is read, and on FIFOs, directories, devices and `/proc` files. Runs only
//! the built driver (no hipcc, no GPU).

use std::io::{Seek, SeekFrom, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqtt_codeobj::bundle::write_plain;
use sqtt_e2e::driver::driver;
#[path = "../../tools/tests/support/device.rs"]
mod device;
use device::char_device;

fn scratch(name: &str) -> PathBuf {
    let d = tempfile::Builder::new()
        .prefix(&format!("sqtt-e2e-hostile-{name}-"))
        .tempdir()
        .unwrap()
        .keep();
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A plain bundle whose bitcode entry ends `far` bytes into the file.
fn far_bundle(far: usize) -> Vec<u8> {
    let mut payload = vec![0x5au8; far];
    payload[..4].copy_from_slice(b"BC\xC0\xDE");
    write_plain(
        &[
            ("host-x86_64-unknown-linux-gnu", &[][..]),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &payload[..]),
        ],
        4096,
    )
}

/// A thread that truncates a file (to nothing, a page, half) and writes its whole contents back,
/// in place (the same inode), over and over until [`Rewriter::stop`].
struct Rewriter {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

impl Rewriter {
    /// Writes `full` to `path`, then starts rewriting it.
    fn start(path: &Path, full: Vec<u8>) -> Rewriter {
        std::fs::write(path, &full).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (path, stop) = (path.to_path_buf(), stop.clone());
            std::thread::spawn(move || {
                let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                let mut rounds = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for len in [0, 4096, full.len() as u64 / 2] {
                        f.set_len(len).unwrap();
                        f.seek(SeekFrom::Start(0)).unwrap();
                        f.write_all(&full).unwrap();
                    }
                    rounds += 1;
                }
                rounds
            })
        };
        Rewriter { stop, thread }
    }

    /// Stops the rewriting; gives how many rounds it made, checked to be more than a few (so
    /// the reads really ran against it).
    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let rounds = self.thread.join().unwrap();
        assert!(rounds > 10, "the rewriter ran only {rounds} rounds");
        rounds
    }
}

/// `read_path` reads a file truncated and rewritten in place thousands of times: every read
/// gives a result (the whole data, never a mix of a truncated and a rewritten file) or an error,
/// the process gets no signal (a signal would kill this test), and the loop ends in bounded
/// time. The last entry lies 256 KiB into the file, so reading it touches pages a truncation
/// removes: mapped, this died with SIGBUS.
#[test]
fn reading_while_rewritten_in_place_never_signals() {
    let dir = scratch("read-race");
    let path = dir.join("racy.bundle");
    let writer = Rewriter::start(&path, far_bundle(256 << 10));
    let start = Instant::now();
    let (mut ok, mut errors, mut shrank) = (0, 0, 0);
    while ok + errors < 3000 && start.elapsed() < Duration::from_secs(20) {
        match sqtt_codeobj::read_path(&path) {
            Ok(cos) => {
                assert_eq!(cos.len(), 1);
                assert_eq!(cos[0].size, 256 << 10);
                ok += 1
            }
            Err(e) => {
                errors += 1;
                if e.to_string().contains("shrank") {
                    shrank += 1;
                }
            }
        }
    }
    let rounds = writer.stop();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(ok + errors, 3000, "3000 reads did not finish in 20 s");
    eprintln!("{ok} read, {errors} errors ({shrank} saw the file shrink), {rounds} rewrites");
}

/// Thousands of `--check` reads (50 processes of 80 files each) of a file truncated and
/// rewritten in place the whole time: every process exits with a status (0, 1 or 2), none is
/// killed by a signal (mapped, 26 of 11,730 runs died with SIGBUS), within a few seconds.
#[test]
fn check_of_a_file_rewritten_meanwhile_never_dies_of_a_signal() {
    let dir = scratch("race");
    let path = dir.join("racy.bundle");
    let writer = Rewriter::start(&path, far_bundle(512 << 10));
    let start = Instant::now();
    let mut codes = [0usize; 3];
    let args: Vec<&Path> = vec![Path::new("racy.bundle"); 80];
    for _ in 0..50 {
        let out = driver(&dir)
            .arg("--check")
            .args(&args)
            .stdout(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.signal(),
            None,
            "--check was killed by a signal: {err}"
        );
        let code = out.status.code().unwrap();
        assert!((0..=2).contains(&code), "exit {code}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        codes[code as usize] += 1;
    }
    let rounds = writer.stop();
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "4000 reads took {:?}",
        start.elapsed()
    );
    eprintln!("exit statuses 0/1/2: {codes:?}, {rounds} rewrites");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The 1 GB case of issue 15: a sparse 1 GB file (a bundle, then zero padding up to 1 GB),
/// truncated to 4096 bytes while `--check` reads it. Mapped, this died with SIGBUS every time;
/// now it ends with an exit status (an error saying the file shrank, or the stale contents).
#[test]
fn check_of_a_1g_file_truncated_while_read_ends_with_a_status() {
    let dir = scratch("1g");
    let path = dir.join("big");
    // A small bundle, then 1 GB of zero padding the reader walks page by page.
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(&far_bundle(4096)).unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    let start = Instant::now();
    let child = driver(&dir)
        .args(["--check", "big"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), None, "killed by a signal: {err}");
    assert!(out.status.code().is_some());
    assert!(!err.contains("panicked"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(30));
    if out.status.code() == Some(2) {
        assert!(err.contains("big"), "{err}");
    }
    eprintln!("status {:?}: {err}", out.status);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `--check PATH` (a FIFO nobody writes to would block a reader forever) and returns the
/// status and stderr, failing if it takes more than 10 s.
fn check_of(cwd: &Path, path: &Path) -> (i32, String) {
    let mut child = driver(cwd)
        .arg("--check")
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            panic!("--check {} blocked", path.display());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().expect("no signal"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A FIFO, a directory, a device like /dev/zero and a /proc file are refused at once, exit 2, with the file
/// named and what it is.
#[test]
fn check_reads_only_regular_files() {
    let dir = scratch("kinds");
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    for (p, what) in [
        (
            fifo.clone(),
            "it is a FIFO (named pipe), not a regular file",
        ),
        (sub.clone(), "it is a directory, not a regular file"),
        (
            char_device(&dir),
            "it is a character device, not a regular file",
        ),
        (
            PathBuf::from("/proc/self/maps"),
            "it is a file of the /proc pseudo file system, not a regular file",
        ),
    ] {
        let (code, err) = check_of(&dir, &p);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("cannot read {}: {what}", p.display())),
            "{err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
}

/// Issue 15: a response file naming itself 8 times, or files naming the next 8 times, made the
/// wrapper expand for minutes. Now: exit 2 in well under a second, a message naming the file,
/// and hipcc (a fake compiler recording its arguments) is not run.
#[test]
fn self_referencing_and_exploding_response_files_fail_fast() {
    let dir = scratch("rsp");
    sqtt_e2e::driver::fake_compiler(&dir);
    std::fs::write(dir.join("self"), "@self ".repeat(8)).unwrap();
    for i in 0..9 {
        std::fs::write(dir.join(format!("l{i}")), format!("@l{} ", i + 1).repeat(8)).unwrap();
    }
    std::fs::write(dir.join("l9"), "-DX k.hip").unwrap();
    for (arg, words) in [
        ("@self", "response file @self names itself"),
        ("@l0", "expands to 4194304 arguments"),
    ] {
        let start = Instant::now();
        let out = driver(&dir)
            .env("SQTT_HIPCC", dir.join("fake-hipcc"))
            .args(["-c", arg])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(start.elapsed() < Duration::from_millis(800), "{arg}: {err}");
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(words) && err.contains("hipcc was not run"),
            "{err}"
        );
        assert!(
            sqtt_e2e::driver::recorded_argv(&dir).is_none(),
            "hipcc ran for {arg}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--sqtt-config` and `SQTT_CONFIG` naming a FIFO, a directory, /dev/zero or a /proc file: a
/// clear error at once (exit 2) naming the file and what it is, and hipcc is not run.
#[test]
fn configuration_files_must_be_regular_files() {
    let dir = scratch("config");
    sqtt_e2e::driver::fake_compiler(&dir);
    std::fs::write(dir.join("k.hip"), "int main() { return 0; }\n").unwrap();
    let fifo = dir.join("sqtt.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
    let cases = [
        (
            fifo.display().to_string(),
            "it is a FIFO (named pipe), not a regular file",
        ),
        (
            dir.display().to_string(),
            "it is a directory, not a regular file",
        ),
        (
            char_device(&dir).display().to_string(),
            "it is a character device, not a regular file",
        ),
        (
            "/proc/self/environ".to_string(),
            "it is a file of the /proc pseudo file system, not a regular file",
        ),
    ];
    for (path, what) in &cases {
        for by_env in [false, true] {
            let mut cmd = driver(&dir);
            cmd.env("SQTT_HIPCC", dir.join("fake-hipcc"));
            if by_env {
                cmd.env("SQTT_CONFIG", path);
            } else {
                cmd.arg(format!("--sqtt-config={path}"));
            }
            let mut child = cmd
                .args(["-c", "k.hip", "-o", "k.o"])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let start = Instant::now();
            while child.try_wait().unwrap().is_none() {
                if start.elapsed() > Duration::from_secs(10) {
                    child.kill().unwrap();
                    panic!("blocked on {path}");
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(
                err.contains(&format!("cannot read configuration file {path}: {what}")),
                "{err}"
            );
            assert!(sqtt_e2e::driver::recorded_argv(&dir).is_none(), "hipcc ran");
            assert!(!dir.join("k.o").exists());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

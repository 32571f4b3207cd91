//! Write errors of `sqtt-hipcc` (issue 25): every own option and `--check` on a full stdout is an
//! error (exit 1, one line naming stdout; they exited 0 silently or panicked), and a closed pipe
//! (`| head`) ends quietly, never a panic. The full device is made in the test's own temporary
//! directory (major 1, minor 7), never the real /dev.

use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

#[path = "../../tools/tests/support/device.rs"]
mod device;
use device::make_char_device;
use sqtt_e2e::driver::{driver, funcmap_source, plain_build};
use sqtt_e2e::toolchain::hipcc;

/// A directory with an executable whose gfx90a code object has a valid funcmap (the check
/// passes: before, a full stdout still exited 0).
fn fixture() -> &'static (PathBuf, PathBuf) {
    static FX: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    FX.get_or_init(|| {
        // Built once per run and never removed (a static): under target/, not /tmp.
        let dir = tempfile::Builder::new()
            .prefix("sqtt-e2e-write-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap()
            .keep();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let src = funcmap_source(
            &[],
            Some("W:64\nK:_Z9my_kernelPfi@k.hip:10\nF:1:_Z6helperf@k.hip:3\n"),
        );
        let app = plain_build(&dir, "k.hip", &src, &["--offload-arch=gfx90a"], "app");
        (dir, app)
    })
}

/// The full device, or `None` when this user may not make one (the test is then skipped).
fn full_device(dir: &Path) -> Option<PathBuf> {
    let p = dir.join("full");
    let _ = std::fs::remove_file(&p);
    make_char_device(&p, 1, 7).then_some(p)
}

/// Every command that prints on stdout, with the check's exit status when its output is read.
fn commands(app: &Path) -> Vec<(Vec<String>, i32)> {
    let a = app.display().to_string();
    let v = |args: &[&str]| args.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        (v(&["--sqtt-help"]), 0),
        (v(&["--sqtt-include-dir"]), 0),
        (v(&["--sqtt-flags"]), 0),
        (v(&["--sqtt-toolchain"]), 0),
        (v(&["--sqtt-completions=bash"]), 0),
        (v(&["--sqtt-man"]), 0),
        (v(&["--check", &a]), 0),
        (v(&["--check", "--json", &a]), 0),
        (v(&["--check", "--quiet", &a]), 0),
        (v(&["--check", "--cost", &a]), 0),
        (v(&["--check", "--cost", "--json", &a]), 0),
        (v(&["--check", "--help"]), 0),
        // A failing check keeps its status 1.
        (v(&["--check", "--require", "user:nope", &a]), 1),
    ]
}

fn run(dir: &Path, args: &[String], stdout: Stdio) -> Output {
    let mut c: Command = driver(dir);
    // --sqtt-flags and --sqtt-toolchain ask hipcc its clang; no plugin is needed when disabled.
    c.env("SQTT_HIPCC", hipcc()).env("SQTT_ENABLED", "0");
    c.args(args).stdout(stdout).stderr(Stdio::piped());
    c.output().unwrap()
}

#[test]
fn a_full_stdout_is_an_error_naming_it() {
    let (dir, app) = fixture();
    let Some(full) = full_device(dir) else {
        return;
    };
    for (args, code) in commands(app) {
        let o = run(
            dir,
            &args,
            File::options().write(true).open(&full).unwrap().into(),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.signal(), None, "{args:?}: {err}");
        assert_eq!(o.status.code(), Some(code.max(1)), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.contains("error:")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: {err}");
        assert!(
            errors[0]
                .ends_with("error: cannot write to stdout: No space left on device (os error 28)"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let (dir, app) = fixture();
    for (args, code) in commands(app) {
        let mut c: Command = driver(dir);
        c.env("SQTT_HIPCC", hipcc()).env("SQTT_ENABLED", "0");
        let mut child = c
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.signal(), None, "{args:?}: {err}");
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("cannot write"),
            "{args:?}: {err}"
        );
    }
}

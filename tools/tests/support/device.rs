//! Character devices for tests of inputs that are not regular files and of outputs that are
//! devices, made inside the test's own directory: tests never point at the real /dev (they run
//! as root here). Included by the test modules of several crates.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A character device `major:minor` at `p` (1:3 is null, 1:5 zero, 1:7 full), readable and
/// writable by all; `false`, said on stderr, when this user may not make one (the caller then
/// skips its test).
pub fn make_char_device(p: &Path, major: u32, minor: u32) -> bool {
    let made = std::process::Command::new("mknod")
        .args(["-m", "666"])
        .arg(p)
        .args(["c", &major.to_string(), &minor.to_string()])
        .output();
    match made {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            let why = String::from_utf8_lossy(&o.stderr);
            eprintln!(
                "skipped: cannot make a device node ({}); run as root",
                why.trim()
            );
            false
        }
        Err(e) => {
            eprintln!("skipped: cannot run mknod ({e})");
            false
        }
    }
}

/// A character device like /dev/zero (1:5) made inside `dir`, for the tests that refuse it as
/// an input (they need it: not being able to make it fails them).
pub fn char_device(dir: &Path) -> PathBuf {
    let p = dir.join("zero");
    assert!(make_char_device(&p, 1, 5), "mknod {}", p.display());
    p
}

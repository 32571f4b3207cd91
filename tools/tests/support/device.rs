//! A character device for tests of inputs that are not regular files.

use std::path::{Path, PathBuf};

/// A character device like /dev/zero (1, 5), made inside `dir`: tests never point at the real
/// /dev (they run as root here).
pub fn char_device(dir: &Path) -> PathBuf {
    let p = dir.join("zero");
    let ok = std::process::Command::new("mknod")
        .arg(&p)
        .args(["c", "1", "5"])
        .status();
    assert!(ok.unwrap().success(), "mknod {}", p.display());
    p
}

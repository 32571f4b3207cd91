//! Who may have written a file: the rule that decides whether a file found by looking around
//! (a `sqtt.toml` found from the working directory upward, the cache directory of sqtt-hipcc)
//! may change what is built or run. One home for the driver and the plugin.
//!
//! As git's `safe.directory` and OpenSSH's `StrictModes` do, a file is trusted when nobody but
//! the user and root can have put its contents there: it is owned by the user or root and
//! writable by nobody else, and the directory holding it is owned by the user or root and, when
//! others may write it, has the sticky bit (which keeps them from replacing an entry they do not
//! own, as in `/tmp`). Group write permission counts as "others" unless the group is the user's
//! own private group with no other member (Debian's user groups with umask 002; the same
//! exception Debian's OpenSSH makes).

use std::ffi::CStr;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The user the process acts as (its effective uid).
pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Whether files owned by `uid` are trusted by `me`: its own, and root's.
pub fn trusted_owner(uid: u32, me: u32) -> bool {
    uid == me || uid == 0
}

/// A user for a message: `user bob (uid 12345)`, or `uid 12345` when it has no name.
pub fn describe_user(uid: u32) -> String {
    match passwd(uid) {
        Some((name, _)) => format!("user {name} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

/// Who besides `me` and root may write a file or directory of this metadata, in words for a
/// message ("everyone (mode 0777)", "the group staff (gid 50, mode 0775)"); `None`: nobody (its
/// owner aside, which [`trusted_owner`] judges).
pub fn other_writers(meta: &Metadata, me: u32) -> Option<String> {
    let mode = meta.mode() & 0o7777;
    if mode & 0o002 != 0 {
        return Some(format!("everyone (mode {mode:04o})"));
    }
    if mode & 0o020 != 0 && !group_is_private(meta.gid(), me) {
        let gid = meta.gid();
        let name = group(gid).map_or(String::new(), |(n, _)| format!("{n} "));
        return Some(format!("the group {name}(gid {gid}, mode {mode:04o})"));
    }
    None
}

/// Why the directory `dir` (of metadata `meta`) does not protect the entries in it from other
/// users: owned by another user, or writable by others without the sticky bit.
pub fn unprotected_directory(dir: &Path, meta: &Metadata, me: u32) -> Option<String> {
    if !trusted_owner(meta.uid(), me) {
        return Some(format!(
            "its directory {} is owned by {}",
            dir.display(),
            describe_user(meta.uid())
        ));
    }
    let sticky = meta.mode() & libc::S_ISVTX != 0;
    match other_writers(meta, me) {
        Some(who) if !sticky => Some(format!(
            "its directory {} is writable by {who} without the sticky bit",
            dir.display()
        )),
        _ => None,
    }
}

/// Why the file at `path` (its entry `link`, from `lstat`, and the file it names, `file`, from
/// `stat`) cannot be trusted, with its directory's metadata `dir_meta`; `None`: trusted.
pub fn untrusted_file(
    path: &Path,
    link: &Metadata,
    file: &Metadata,
    dir_meta: &Metadata,
    me: u32,
) -> Option<String> {
    if link.file_type().is_symlink() && !trusted_owner(link.uid(), me) {
        return Some(format!(
            "it is a symbolic link owned by {}",
            describe_user(link.uid())
        ));
    }
    if !trusted_owner(file.uid(), me) {
        return Some(format!(
            "it is owned by {}, not by you or root",
            describe_user(file.uid())
        ));
    }
    if let Some(who) = other_writers(file, me) {
        return Some(format!("it is writable by {who}"));
    }
    let dir = path.parent().unwrap_or(Path::new("/"));
    unprotected_directory(dir, dir_meta, me)
}

/// Whether a group write permission lets only `me` write: the group is `me`'s primary group and
/// lists no other member.
fn group_is_private(gid: u32, me: u32) -> bool {
    let Some((name, primary)) = passwd(me) else {
        return false;
    };
    if gid != primary {
        return false;
    }
    match group(gid) {
        Some((_, members)) => members.iter().all(|m| *m == name),
        None => true,
    }
}

/// Calls a `get*_r` function with a growing buffer until it fits (ERANGE), up to 1 MiB.
fn with_buffer(mut call: impl FnMut(&mut [libc::c_char]) -> libc::c_int) -> bool {
    let mut len = 4096;
    loop {
        let mut buf = vec![0 as libc::c_char; len];
        match call(&mut buf) {
            0 => return true,
            libc::ERANGE if len < (1 << 20) => len *= 2,
            _ => return false,
        }
    }
}

/// The name and primary group of a user.
fn passwd(uid: u32) -> Option<(String, u32)> {
    let mut out = None;
    with_buffer(|buf| {
        // SAFETY: getpwuid_r writes into `pw` and `buf`, which we own and whose length we pass;
        // `found` is null or points at `pw`, whose strings live in `buf`, read before it goes.
        unsafe {
            let mut pw: libc::passwd = std::mem::zeroed();
            let mut found: *mut libc::passwd = std::ptr::null_mut();
            let rc = libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut found);
            if rc == 0 && !found.is_null() && !pw.pw_name.is_null() {
                let name = CStr::from_ptr(pw.pw_name).to_string_lossy().into_owned();
                out = Some((name, pw.pw_gid));
            }
            rc
        }
    });
    out
}

/// The name and listed members of a group.
fn group(gid: u32) -> Option<(String, Vec<String>)> {
    let mut out = None;
    with_buffer(|buf| {
        // SAFETY: as for getpwuid_r; `gr_mem` is a null-terminated array of strings in `buf`.
        unsafe {
            let mut gr: libc::group = std::mem::zeroed();
            let mut found: *mut libc::group = std::ptr::null_mut();
            let rc = libc::getgrgid_r(gid, &mut gr, buf.as_mut_ptr(), buf.len(), &mut found);
            if rc == 0 && !found.is_null() && !gr.gr_name.is_null() {
                let name = CStr::from_ptr(gr.gr_name).to_string_lossy().into_owned();
                let mut members = Vec::new();
                let mut m = gr.gr_mem;
                while !m.is_null() && !(*m).is_null() {
                    members.push(CStr::from_ptr(*m).to_string_lossy().into_owned());
                    m = m.add(1);
                }
                out = Some((name, members));
            }
            rc
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn writers_by_mode_and_owner() {
        let dir = tempfile::Builder::new()
            .prefix("sqtt-trust-")
            .tempdir()
            .unwrap()
            .keep();
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f");
        std::fs::write(&f, "x").unwrap();
        let me = current_uid();
        let meta = |p: &Path| std::fs::metadata(p).unwrap();
        chmod(&f, 0o644);
        assert_eq!(other_writers(&meta(&f), me), None);
        chmod(&f, 0o666);
        assert_eq!(
            other_writers(&meta(&f), me).as_deref(),
            Some("everyone (mode 0666)")
        );
        // A group that is not the user's own private group (no such group: no name).
        std::os::unix::fs::chown(&f, None, Some(12346)).unwrap();
        chmod(&f, 0o664);
        assert_eq!(
            other_writers(&meta(&f), me).as_deref(),
            Some("the group (gid 12346, mode 0664)")
        );
        // The directory: another owner, or writable by others without the sticky bit.
        chmod(&dir, 0o777);
        let why = unprotected_directory(&dir, &meta(&dir), me).unwrap();
        assert!(why.ends_with("is writable by everyone (mode 0777) without the sticky bit"));
        chmod(&dir, 0o1777);
        assert_eq!(unprotected_directory(&dir, &meta(&dir), me), None);
        if me == 0 {
            std::os::unix::fs::chown(&dir, Some(12345), None).unwrap();
            let why = unprotected_directory(&dir, &meta(&dir), me).unwrap();
            assert!(why.ends_with("is owned by uid 12345"), "{why}");
            std::os::unix::fs::chown(&dir, Some(0), None).unwrap();
        }
        assert!(trusted_owner(0, 1000) && trusted_owner(1000, 1000));
        assert!(!trusted_owner(12345, 1000));
        assert_eq!(describe_user(0), "user root (uid 0)");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Which `sqtt.toml` is in effect: the one the user names (`--sqtt-config`, `SQTT_CONFIG`), read
//! whoever owns it, or the nearest one found from the working directory upward that passes the
//! trust rule of [`crate::trust`]. A file found but not used (another user's, in a directory
//! others can write, or no regular file) is reported, never skipped silently, and the search goes
//! on above it as if it were not there.

use std::fmt;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sqtt_files::input;

use crate::{trust, var, ConfigError, CONFIG_FILE_NAME};

/// The largest configuration file read (1 MiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// A configuration file, as the read errors name it.
const WHAT: &str = "a configuration file";

/// A configuration file and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    pub path: PathBuf,
    pub text: String,
}

impl ConfigFile {
    /// A file the user named: read whoever owns it (a regular file of at most 1 MiB).
    pub fn read(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = input::read_regular_string(path, MAX_CONFIG_BYTES, WHAT)
            .map_err(|e| unreadable(path, e))?;
        Ok(ConfigFile {
            path: path.to_path_buf(),
            text,
        })
    }
}

fn unreadable(path: &Path, e: std::io::Error) -> ConfigError {
    ConfigError::Unreadable {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

/// A `sqtt.toml` passed over in the search, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    pub path: PathBuf,
    pub reason: String,
    /// Whether naming it would make it used (it is a regular file nobody trusted).
    pub untrusted: bool,
}

impl fmt::Display for Ignored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        write!(f, "ignoring {path}: {}", self.reason)?;
        if self.untrusted {
            let dir = self.path.parent().unwrap_or(Path::new("/")).display();
            write!(
                f,
                "; to use it anyway, name it (--sqtt-config={path} or {}={path}) or add {dir} \
                 to {}",
                var::CONFIG,
                var::SAFE_DIRECTORY
            )
        } else {
            write!(f, "; a {CONFIG_FILE_NAME} must be a regular file")
        }
    }
}

/// The configuration in effect, and the files passed over on the way to it.
#[derive(Debug, Default)]
pub struct Located {
    /// The file in effect (none is fine), or why it cannot be read.
    pub file: Option<Result<ConfigFile, ConfigError>>,
    /// Files found and not used, nearest first: each is a warning to give.
    pub ignored: Vec<Ignored>,
}

impl Located {
    /// The path of the file in effect, when it could be read.
    pub fn path(&self) -> Option<&Path> {
        match &self.file {
            Some(Ok(f)) => Some(&f.path),
            _ => None,
        }
    }
}

/// The configuration in effect: `explicit` (`--sqtt-config`), else the file named by
/// `SQTT_CONFIG`, else the nearest trusted `sqtt.toml` in `start` or above it. `get` reads the
/// environment (`SQTT_CONFIG`, `SQTT_SAFE_DIRECTORY`).
pub fn locate_config(
    explicit: Option<&Path>,
    start: &Path,
    get: &dyn Fn(&str) -> Option<String>,
) -> Located {
    let named = explicit.map(Path::to_path_buf).or_else(|| {
        get(var::CONFIG)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    if let Some(path) = named {
        return Located {
            file: Some(ConfigFile::read(&path)),
            ignored: Vec::new(),
        };
    }
    let safe = SafeDirectories::from_env(get);
    let me = trust::current_uid();
    let mut located = Located::default();
    let mut dir = Some(start);
    while let Some(d) = dir {
        dir = d.parent();
        let path = d.join(CONFIG_FILE_NAME);
        // An entry that cannot even be looked at (no such file, a directory we may not search)
        // is no file found.
        let Ok(link) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let mut ignore = |reason: String, untrusted: bool| {
            located.ignored.push(Ignored {
                path: path.clone(),
                reason,
                untrusted,
            })
        };
        let target = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) => {
                ignore(format!("it cannot be read ({e})"), false);
                continue;
            }
        };
        if let Some(what) = input::not_regular(&target.file_type()) {
            ignore(format!("it is {what}, not a regular file"), false);
            continue;
        }
        let trusted_dir = safe.contains(d);
        if !trusted_dir {
            let why = match std::fs::metadata(d) {
                Ok(dir_meta) => trust::untrusted_file(&path, &link, &target, &dir_meta, me),
                Err(e) => Some(format!("its directory cannot be examined ({e})")),
            };
            if let Some(why) = why {
                ignore(why, true);
                continue;
            }
        }
        located.file = Some(read_found(&path, &target, trusted_dir, me));
        break;
    }
    located
}

/// Reads a file found and judged by its path, judging the opened file again (the same file,
/// still trusted), so that a file swapped after the checks is not read.
fn read_found(
    path: &Path,
    judged: &Metadata,
    trusted_dir: bool,
    me: u32,
) -> Result<ConfigFile, ConfigError> {
    let (opened, len) = input::open_regular(path).map_err(|e| unreadable(path, e))?;
    let meta = opened.metadata().map_err(|e| unreadable(path, e))?;
    let same = meta.dev() == judged.dev() && meta.ino() == judged.ino();
    let still_trusted = trusted_dir
        || (trust::trusted_owner(meta.uid(), me) && trust::other_writers(&meta, me).is_none());
    if !same || !still_trusted {
        return Err(ConfigError::Unreadable {
            path: path.to_path_buf(),
            reason: "it was replaced while it was read".into(),
        });
    }
    let text = input::read_opened_string(&opened, len, MAX_CONFIG_BYTES, WHAT)
        .map_err(|e| unreadable(path, e))?;
    Ok(ConfigFile {
        path: path.to_path_buf(),
        text,
    })
}

/// `SQTT_SAFE_DIRECTORY`: directories whose `sqtt.toml` is used whoever owns it, separated by
/// `:`; `DIR/*` also covers every directory below DIR, and `*` every directory.
struct SafeDirectories {
    all: bool,
    exact: Vec<PathBuf>,
    below: Vec<PathBuf>,
}

impl SafeDirectories {
    fn from_env(get: &dyn Fn(&str) -> Option<String>) -> SafeDirectories {
        let mut s = SafeDirectories {
            all: false,
            exact: Vec::new(),
            below: Vec::new(),
        };
        let value = get(var::SAFE_DIRECTORY).unwrap_or_default();
        for entry in value.split(':').map(str::trim).filter(|e| !e.is_empty()) {
            if entry == "*" {
                s.all = true;
            } else if let Some(dir) = entry.strip_suffix("/*") {
                s.below
                    .push(canonical(Path::new(if dir.is_empty() { "/" } else { dir })));
            } else {
                s.exact.push(canonical(Path::new(entry)));
            }
        }
        s
    }

    fn contains(&self, dir: &Path) -> bool {
        if self.all {
            return true;
        }
        if self.exact.is_empty() && self.below.is_empty() {
            return false;
        }
        let dir = canonical(dir);
        self.exact.contains(&dir) || self.below.iter().any(|b| dir.starts_with(b))
    }
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// `root/sqtt.toml` (trusted, the fallback) and `root/s/sqtt.toml` (the one judged), the
    /// search starting in `root/s/p`.
    struct Tree {
        root: PathBuf,
    }

    impl Tree {
        fn new(name: &str) -> Tree {
            let root = tempfile::Builder::new()
                .prefix(&format!("sqtt-discover-{name}-"))
                .tempdir()
                .unwrap()
                .keep();
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(root.join("s/p")).unwrap();
            chmod(&root, 0o755);
            std::fs::write(root.join(CONFIG_FILE_NAME), "verbose = true\n").unwrap();
            std::fs::write(root.join("s").join(CONFIG_FILE_NAME), "hipcc = \"/evil\"\n").unwrap();
            Tree { root }
        }
        fn judged(&self) -> PathBuf {
            self.root.join("s").join(CONFIG_FILE_NAME)
        }
        fn locate(&self, vars: &[(&str, &str)]) -> Located {
            locate_config(None, &self.root.join("s/p"), &env(vars))
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    #[test]
    fn the_nearest_trusted_file_is_used() {
        let t = Tree::new("near");
        let l = t.locate(&[]);
        assert_eq!(l.path(), Some(t.judged().as_path()));
        assert!(l.ignored.is_empty());
        // Named: used whatever else there is.
        let named = t.root.join(CONFIG_FILE_NAME);
        let l = locate_config(Some(&named), &t.root.join("s/p"), &env(&[]));
        assert_eq!(l.path(), Some(named.as_path()));
        let var = named.to_str().unwrap();
        let l = t.locate(&[("SQTT_CONFIG", var)]);
        assert_eq!(l.path(), Some(named.as_path()));
    }

    #[test]
    fn a_file_others_can_write_is_ignored_with_a_warning() {
        let t = Tree::new("modes");
        chmod(&t.judged(), 0o666);
        let l = t.locate(&[]);
        assert_eq!(l.path(), Some(t.root.join(CONFIG_FILE_NAME).as_path()));
        assert_eq!(l.ignored.len(), 1);
        let w = l.ignored[0].to_string();
        let p = t.judged().display().to_string();
        assert!(
            w.starts_with(&format!(
                "ignoring {p}: it is writable by everyone (mode 0666); to use it anyway, name it \
                 (--sqtt-config={p} or SQTT_CONFIG={p}) or add "
            )),
            "{w}"
        );
        assert!(w.ends_with("to SQTT_SAFE_DIRECTORY"), "{w}");
        // A directory writable by others without the sticky bit, with the file safe in itself.
        chmod(&t.judged(), 0o644);
        chmod(&t.root.join("s"), 0o777);
        let l = t.locate(&[]);
        assert!(
            l.ignored[0]
                .reason
                .ends_with("is writable by everyone (mode 0777) without the sticky bit"),
            "{:?}",
            l.ignored
        );
        // With the sticky bit (as /tmp), an entry of the user's own is protected.
        chmod(&t.root.join("s"), 0o1777);
        assert_eq!(t.locate(&[]).path(), Some(t.judged().as_path()));
    }

    #[test]
    fn another_users_file_is_ignored_unless_its_directory_is_declared_safe() {
        if trust::current_uid() != 0 {
            return; // needs chown
        }
        let t = Tree::new("owner");
        std::os::unix::fs::chown(t.judged(), Some(12345), None).unwrap();
        chmod(&t.root.join("s"), 0o1777);
        let l = t.locate(&[]);
        assert_eq!(l.path(), Some(t.root.join(CONFIG_FILE_NAME).as_path()));
        assert_eq!(
            l.ignored[0].reason,
            "it is owned by uid 12345, not by you or root"
        );
        // A symbolic link of another user to a file of ours.
        std::fs::remove_file(t.judged()).unwrap();
        std::os::unix::fs::symlink(t.root.join(CONFIG_FILE_NAME), t.judged()).unwrap();
        std::os::unix::fs::lchown(t.judged(), Some(12345), None).unwrap();
        assert_eq!(
            t.locate(&[]).ignored[0].reason,
            "it is a symbolic link owned by uid 12345"
        );
        // A directory owned by another user, the file ours.
        std::fs::remove_file(t.judged()).unwrap();
        std::fs::write(t.judged(), "verbose = false\n").unwrap();
        std::os::unix::fs::chown(t.root.join("s"), Some(12345), None).unwrap();
        chmod(&t.root.join("s"), 0o755);
        let l = t.locate(&[]);
        assert!(
            l.ignored[0].reason.ends_with("/s is owned by uid 12345"),
            "{:?}",
            l.ignored
        );
        // Declared safe: the directory, or one above it with `/*`, or every one.
        let s = t.root.join("s");
        let below = format!("{}/*", t.root.display());
        for safe in [s.to_str().unwrap(), "/nonexistent:*", below.as_str()] {
            let l = t.locate(&[("SQTT_SAFE_DIRECTORY", safe)]);
            assert_eq!(l.path(), Some(t.judged().as_path()), "{safe}");
            assert!(l.ignored.is_empty(), "{safe}");
        }
        let l = t.locate(&[("SQTT_SAFE_DIRECTORY", t.root.to_str().unwrap())]);
        assert_eq!(l.ignored.len(), 1, "the exact directory only");
    }

    #[test]
    fn a_sqtt_toml_that_is_no_regular_file_is_reported_and_never_opened() {
        let t = Tree::new("kinds");
        std::fs::remove_file(t.judged()).unwrap();
        std::fs::create_dir(t.judged()).unwrap();
        let l = t.locate(&[]);
        assert_eq!(l.path(), Some(t.root.join(CONFIG_FILE_NAME).as_path()));
        assert_eq!(
            l.ignored[0].to_string(),
            format!(
                "ignoring {}: it is a directory, not a regular file; a sqtt.toml must be a \
                 regular file",
                t.judged().display()
            )
        );
        std::fs::remove_dir(t.judged()).unwrap();
        let c = std::ffi::CString::new(t.judged().to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Nobody writes to the FIFO: this returns only because it is never opened.
        let l = t.locate(&[]);
        assert_eq!(
            l.ignored[0].reason,
            "it is a FIFO (named pipe), not a regular file"
        );
        std::fs::remove_file(t.judged()).unwrap();
        std::os::unix::fs::symlink("/nonexistent/x", t.judged()).unwrap();
        let l = t.locate(&[]);
        assert!(
            l.ignored[0].reason.starts_with("it cannot be read ("),
            "{:?}",
            l.ignored
        );
    }
}

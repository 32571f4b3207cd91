//! Finding the real hipcc, the plugin and its LLVM major, hipcc's clang major (cached), and the
//! include directory of markers.hpp.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection};
use sha2::{Digest, Sha256};
use sqtt_config::trust;

use crate::error::{Error, NamedBy};
use crate::launch::{Invocation, Launcher};

/// File name of the plugin.
pub const PLUGIN_FILE: &str = "libsqtt_plugin.so";

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn is_executable(p: &Path) -> bool {
    not_executable(p).is_none()
}

/// Why `p` cannot be run, in words after "which": "does not exist", "is a directory", ...
fn not_executable(p: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("does not exist".into()),
        Err(e) => Some(format!("cannot be examined ({e})")),
        Ok(m) => match sqtt_files::input::not_regular(&m.file_type()) {
            Some(what) => Some(format!("is {what}, not an executable file")),
            None if m.permissions().mode() & 0o111 == 0 => {
                Some("is not executable (no x permission)".into())
            }
            None => None,
        },
    }
}

/// A compiler the user named, and who named it (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Configured {
    pub path: PathBuf,
    pub by: NamedBy,
}

/// The real hipcc: `configured` (SQTT_HIPCC / `hipcc` key), then `$HIP_PATH/bin/hipcc`,
/// `$ROCM_PATH/bin/hipcc`, then PATH without this wrapper itself.
pub fn find_hipcc(
    configured: Option<&Configured>,
    getenv: &dyn Fn(&str) -> Option<OsString>,
) -> Result<PathBuf, Error> {
    let me = std::env::current_exe().map(|p| canon(&p)).ok();
    let not_me = |p: &Path| me.as_deref() != Some(canon(p).as_path());
    if let Some(c) = configured {
        let p = &c.path;
        let p = if p.components().count() == 1 && !p.exists() {
            // A bare name: look it up on PATH.
            search_path(p.as_os_str(), getenv, &not_me).unwrap_or_else(|| p.to_path_buf())
        } else {
            p.to_path_buf()
        };
        if let Some(why) = not_executable(&p) {
            return Err(Error::HipccNotExecutable {
                path: p,
                by: c.by.clone(),
                why,
            });
        }
        if !not_me(&p) {
            return Err(Error::HipccIsSelf {
                path: p,
                by: c.by.clone(),
            });
        }
        return Ok(p);
    }
    for var in ["HIP_PATH", "ROCM_PATH"] {
        if let Some(dir) = getenv(var).filter(|v| !v.is_empty()) {
            let p = PathBuf::from(dir).join("bin").join("hipcc");
            if is_executable(&p) && not_me(&p) {
                return Ok(p);
            }
        }
    }
    search_path("hipcc".as_ref(), getenv, &not_me)
        .or_else(|| {
            let p = PathBuf::from(DEFAULT_ROCM).join("bin/hipcc");
            (is_executable(&p) && not_me(&p)).then_some(p)
        })
        .ok_or(Error::HipccNotFound { rocm: DEFAULT_ROCM })
}

/// Where ROCm installs when nothing says otherwise.
pub const DEFAULT_ROCM: &str = "/opt/rocm";

/// The LLVM toolchain directory (holding `bin/clang`, `bin/llvm-config`) of a ROCm install:
/// `<rocm>/llvm` (ROCm up to 6.x, and a link in 7.x) or `<rocm>/lib/llvm` (7.x), for the ROCm of
/// `ROCM_PATH`, `HIP_PATH`, the one the hipcc found sits in (`<rocm>/bin/hipcc`), or
/// /opt/rocm. None for Debian's packaging, whose clang is `/usr/lib/llvm-<N>`.
pub fn rocm_llvm_dir(
    hipcc: Option<&Path>,
    getenv: &dyn Fn(&str) -> Option<OsString>,
) -> Option<PathBuf> {
    let mut roots: Vec<PathBuf> = ["ROCM_PATH", "HIP_PATH"]
        .iter()
        .filter_map(|v| getenv(v).filter(|v| !v.is_empty()).map(PathBuf::from))
        .collect();
    if let Some(root) = hipcc.map(canon).and_then(|h| {
        h.parent()
            .filter(|d| d.ends_with("bin"))
            .and_then(Path::parent)
            .map(Path::to_path_buf)
    }) {
        roots.push(root);
    }
    roots.push(PathBuf::from(DEFAULT_ROCM));
    roots.iter().find_map(|root| {
        ["llvm", "lib/llvm"]
            .iter()
            .map(|sub| root.join(sub))
            .find(|d| is_executable(&d.join("bin/clang")))
    })
}

fn search_path(
    name: &std::ffi::OsStr,
    getenv: &dyn Fn(&str) -> Option<OsString>,
    accept: &dyn Fn(&Path) -> bool,
) -> Option<PathBuf> {
    // `which` does the PATH walk (empty entries, executability); `accept` skips sqtt-hipcc
    // itself, which may come first on PATH under the same name.
    let path = getenv("PATH")?;
    let cwd = std::env::current_dir().ok()?;
    which::which_in_all(name, Some(path), cwd)
        .ok()?
        .find(|p| is_executable(p) && accept(p))
}

/// The cargo feature that builds the plugin for an LLVM major (plugin/build.rs holds the list):
/// `llvm<N>-0` through `llvm-plugin` up to 18, `llvm<N>-1` with the plugin's own registration
/// from 19.
pub fn plugin_feature(major: u32) -> String {
    format!("llvm{major}-{}", u32::from(major >= 19))
}

/// The one command that builds and installs the plugin for an LLVM major (README, docs).
pub fn plugin_build_command(major: u32) -> String {
    format!("./install.sh --llvm {major}")
}

/// Where a plugin for `major` may be, best first, relative to this executable's directory:
/// installed side by side (`<prefix>/lib/sqtt-hipcc/llvm-<N>/`), the same beside the executable
/// (`target/release/` after install.sh), and cargo's per-major target directory of a source
/// tree (`target/llvm<N>/release/` next to `target/release/`). Then the unversioned places
/// (the default build), whose major the LLVM check then reads.
fn plugin_candidates(exe_dir: &Path, major: Option<u32>) -> Vec<PathBuf> {
    let mut c = Vec::new();
    if let Some(n) = major {
        let sub = format!("llvm-{n}");
        c.push(
            exe_dir
                .join("../lib/sqtt-hipcc")
                .join(&sub)
                .join(PLUGIN_FILE),
        );
        c.push(exe_dir.join("lib/sqtt-hipcc").join(&sub).join(PLUGIN_FILE));
        if let Some(profile) = exe_dir.file_name() {
            c.push(
                exe_dir
                    .join("..")
                    .join(format!("llvm{n}"))
                    .join(profile)
                    .join(PLUGIN_FILE),
            );
        }
    }
    c.push(exe_dir.join(PLUGIN_FILE));
    c.push(exe_dir.join("../lib/sqtt-hipcc").join(PLUGIN_FILE));
    c
}

/// The plugin: `SQTT_PLUGIN`, else the first candidate of [`plugin_candidates`] that exists and
/// was built for `major` (the LLVM major of hipcc's clang), else the first one that exists (the
/// LLVM check then explains the mismatch).
pub fn find_plugin(
    getenv: &dyn Fn(&str) -> Option<OsString>,
    major: Option<u32>,
) -> Result<PathBuf, Error> {
    if let Some(p) = getenv(sqtt_config::var::PLUGIN).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(p);
        return match std::fs::metadata(&path) {
            Err(source) => Err(Error::PluginMissing { path, source }),
            Ok(m) => match sqtt_files::input::not_regular(&m.file_type()) {
                Some(what) => Err(Error::PluginNotRegular { path, what }),
                None => Ok(path),
            },
        };
    }
    let exe_dir = std::env::current_exe()
        .ok()
        .map(|e| canon(&e))
        .and_then(|e| e.parent().map(Path::to_path_buf));
    let cands = exe_dir
        .as_deref()
        .map(|d| plugin_candidates(d, major))
        .unwrap_or_default();
    let existing: Vec<&PathBuf> = cands.iter().filter(|p| p.is_file()).collect();
    let matching = existing.iter().find(|p| {
        major.is_none()
            || plugin_info_cached(p, getenv)
                .ok()
                .and_then(|i| i.llvm_major)
                .is_some_and(|m| Some(m) == major)
    });
    if let Some(p) = matching.or(existing.first()) {
        return Ok(canon(p));
    }
    let tried: Vec<String> = cands
        .iter()
        .map(|p| canon(p).display().to_string())
        .collect();
    let build = match major {
        Some(n) => format!(
            "build it for LLVM {n} with `{}` (or `cargo build --release -p sqtt-plugin \
             --no-default-features --features {} --target-dir target/llvm{n}`)",
            plugin_build_command(n),
            plugin_feature(n)
        ),
        None => "build it with `cargo build -p sqtt-plugin`".to_string(),
    };
    let what = match major {
        Some(n) => format!("for LLVM {n} (hipcc's clang is {n})"),
        None => String::new(),
    };
    Err(Error::PluginNotFound(format!(
        "cannot find the pass plugin {PLUGIN_FILE} {what} (looked at: {}); {build}, or set \
         SQTT_PLUGIN=/path/to/{PLUGIN_FILE}; or turn instrumentation off with SQTT_ENABLED=0",
        tried.join(", ")
    )))
}

/// What the plugin says about itself, and its content hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    pub version: Option<String>,
    pub llvm_major: Option<u32>,
    /// The first 16 hex digits of the file's SHA-256.
    pub sha256: String,
}

/// Reads `.sqtt_plugin_info` (`sqtt-plugin;version=X.Y.Z;llvm_major=N`), or else the LLVM major
/// of a `libLLVM-N.so` the plugin needs, and hashes the file.
pub fn plugin_info(path: &Path) -> Result<PluginInfo, Error> {
    let read_err = |source| Error::PluginUnreadable {
        path: path.to_path_buf(),
        source,
    };
    // Read, never mapped: a plugin rewritten meanwhile gives an error, never SIGBUS.
    let data = sqtt_files::input::read_regular(path, 1 << 30, "the plugin").map_err(read_err)?;
    let file = object::File::parse(&*data).map_err(|e| Error::PluginNotSharedObject {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let mut info = PluginInfo {
        version: None,
        llvm_major: None,
        sha256: hex16(&Sha256::digest(&*data)),
    };
    if let Some(text) = file
        .section_by_name(".sqtt_plugin_info")
        .and_then(|s| s.data().ok())
    {
        let end = text.iter().position(|b| *b == 0).unwrap_or(text.len());
        for field in String::from_utf8_lossy(&text[..end]).split(';') {
            if let Some(v) = field.strip_prefix("version=") {
                info.version = Some(v.to_string());
            } else if let Some(v) = field.strip_prefix("llvm_major=") {
                info.llvm_major = v.trim().parse().ok();
            }
        }
    }
    if info.llvm_major.is_none() {
        if let Some(dynstr) = file.section_by_name(".dynstr").and_then(|s| s.data().ok()) {
            for s in dynstr.split(|b| *b == 0) {
                let s = String::from_utf8_lossy(s);
                if let Some(rest) = s.strip_prefix("libLLVM-") {
                    let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
                    info.llvm_major = n.parse().ok();
                } else if let Some(rest) = s.strip_prefix("libLLVM.so.") {
                    let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
                    info.llvm_major = n.parse().ok();
                }
            }
        }
    }
    Ok(info)
}

/// [`plugin_info`], remembered in the cache directory by the file's identity: its path, device,
/// inode, size, modification and change times. Writing or replacing the file changes its change
/// time (which no tool sets back), so a rebuilt plugin is read again, and a compile reads a few
/// bytes instead of the whole plugin.
pub fn plugin_info_cached(
    path: &Path,
    getenv: &dyn Fn(&str) -> Option<OsString>,
) -> Result<PluginInfo, Error> {
    use std::os::unix::fs::MetadataExt;
    let real = canon(path);
    let Ok(m) = std::fs::metadata(&real) else {
        return plugin_info(path);
    };
    let key = format!(
        "{}\n{} {} {} {}.{} {}.{}\n",
        real.display(),
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    );
    let file =
        cache_dir(getenv)?.join(format!("plugin-{}", hex16(&Sha256::digest(key.as_bytes()))));
    // Only a file of the user's own (the cache's trust rule) is believed.
    let cached = own_file(&file, trust::current_uid())
        .then(|| std::fs::read_to_string(&file).ok())
        .flatten();
    if let Some(text) = cached {
        let field = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k))
                .map(str::to_string)
        };
        if let Some(sha256) = field("sha256=").filter(|h| h.len() == 16) {
            return Ok(PluginInfo {
                version: field("version=").filter(|v| !v.is_empty()),
                llvm_major: field("llvm_major=").and_then(|n| n.parse().ok()),
                sha256,
            });
        }
    }
    let info = plugin_info(path)?;
    let text = format!(
        "version={}\nllvm_major={}\nsha256={}\n",
        info.version.as_deref().unwrap_or(""),
        info.llvm_major.map(|n| n.to_string()).unwrap_or_default(),
        info.sha256
    );
    let _ = ensure_file(&file, text.as_bytes());
    Ok(info)
}

fn hex16(d: &[u8]) -> String {
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Candidate cache directories, best first: `$SQTT_CACHE_DIR` (alone, when set), else
/// `$XDG_CACHE_HOME/sqtt-hipcc`, `~/.cache/sqtt-hipcc`, then one under the temporary directory.
fn cache_candidates(getenv: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let mut cands = Vec::new();
    if let Some(d) = getenv(sqtt_config::var::CACHE_DIR).filter(|v| !v.is_empty()) {
        // Named explicitly: that directory only.
        return vec![PathBuf::from(d)];
    }
    if let Some(d) = getenv("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        cands.push(PathBuf::from(d).join("sqtt-hipcc"));
    }
    if let Some(d) = getenv("HOME").filter(|v| !v.is_empty()) {
        cands.push(PathBuf::from(d).join(".cache").join("sqtt-hipcc"));
    }
    cands.push(temp_dir(getenv).join(format!("sqtt-hipcc-{}", trust::current_uid())));
    cands
}

/// `$TMPDIR`, else /tmp (read through `getenv`, as every other variable here).
fn temp_dir(getenv: &dyn Fn(&str) -> Option<OsString>) -> PathBuf {
    getenv("TMPDIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

/// Why a directory cannot hold our cache.
enum Unfit {
    /// Another user may have written it (said in a warning, with the directory used instead).
    Untrusted(String),
    /// It cannot be made or written (a read-only home): the next candidate, silently.
    Unusable,
}

/// Makes `dir` (mode 0700) if it is missing, and judges it: a directory (or a link of the user's
/// to one) owned by the user, writable by nobody else, in a directory that protects it.
fn fit_cache_dir(dir: &Path, me: u32) -> Result<(), Unfit> {
    let created = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    let link = std::fs::symlink_metadata(dir).map_err(|_| Unfit::Unusable)?;
    if link.file_type().is_symlink() && !trust::trusted_owner(link.uid(), me) {
        return Err(Unfit::Untrusted(format!(
            "it is a symbolic link owned by {}",
            trust::describe_user(link.uid())
        )));
    }
    let meta = std::fs::metadata(dir).map_err(|_| Unfit::Unusable)?;
    if !meta.is_dir() {
        let what = sqtt_files::input::not_regular(&meta.file_type()).unwrap_or("a file");
        return Err(Unfit::Untrusted(format!("it is {what}, not a directory")));
    }
    if meta.uid() != me {
        return Err(Unfit::Untrusted(format!(
            "it is owned by {}, not by you",
            trust::describe_user(meta.uid())
        )));
    }
    if let Some(who) = trust::other_writers(&meta, me) {
        return Err(Unfit::Untrusted(format!("it is writable by {who}")));
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Ok(pmeta) = std::fs::metadata(parent) {
            if let Some(why) = trust::unprotected_directory(parent, &pmeta, me) {
                return Err(Unfit::Untrusted(why));
            }
        }
    }
    let c =
        std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| Unfit::Unusable)?;
    // SAFETY: access reads a NUL-terminated path.
    let writable = unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } == 0;
    if created.is_err() || !writable {
        return Err(Unfit::Unusable);
    }
    Ok(())
}

/// Says a warning on stderr once per process (the cache is looked up several times a run).
fn warn_once(text: String) {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static SAID: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if said.get_or_insert_with(HashSet::new).insert(text.clone()) {
        sqtt_files::output::stderr_line(format_args!("sqtt-hipcc: warning: {text}"));
    }
}

/// The cache directory of the user, and the warnings to give about the candidates passed over
/// because another user may have written them.
pub struct CacheDir {
    pub path: PathBuf,
    pub warnings: Vec<String>,
}

/// The per-user cache directory: the first candidate that is the user's own (made 0700 when
/// missing). When a candidate was passed over as untrusted and no other fits, a private
/// directory `$TMPDIR/sqtt-hipcc-<uid>.XXXXXX` (0700, reused by later runs) is used instead.
pub fn find_cache_dir(getenv: &dyn Fn(&str) -> Option<OsString>) -> Result<CacheDir, Error> {
    let me = trust::current_uid();
    let cands = cache_candidates(getenv);
    let mut untrusted = Vec::new();
    for d in &cands {
        match fit_cache_dir(d, me) {
            Ok(()) => {
                let warnings = untrusted
                    .iter()
                    .map(|(c, why): &(&PathBuf, String)| {
                        format!(
                            "not using the cache directory {}: {why}; using {} (set \
                             SQTT_CACHE_DIR to a directory of your own to choose)",
                            c.display(),
                            d.display()
                        )
                    })
                    .collect();
                return Ok(CacheDir {
                    path: d.clone(),
                    warnings,
                });
            }
            Err(Unfit::Untrusted(why)) => untrusted.push((d, why)),
            Err(Unfit::Unusable) => {}
        }
    }
    if untrusted.is_empty() {
        // Nothing fits and nothing is suspect (a read-only file system): the last candidate,
        // whose write then fails with a message naming it.
        return Ok(CacheDir {
            path: cands.last().cloned().unwrap_or_default(),
            warnings: Vec::new(),
        });
    }
    let private = private_cache_dir(&temp_dir(getenv), me)?;
    let warnings = untrusted
        .iter()
        .map(|(c, why)| {
            format!(
                "not using the cache directory {}: {why}; using the private directory {} \
                 instead (remove {} or set SQTT_CACHE_DIR to a directory of your own)",
                c.display(),
                private.display(),
                c.display()
            )
        })
        .collect();
    Ok(CacheDir {
        path: private,
        warnings,
    })
}

/// [`find_cache_dir`], its warnings said (once per process).
pub fn cache_dir(getenv: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf, Error> {
    let cache = find_cache_dir(getenv)?;
    for w in cache.warnings {
        warn_once(w);
    }
    Ok(cache.path)
}

/// A directory `sqtt-hipcc-<uid>.XXXXXX` of the user's own in `base`: one made before (only the
/// user can have made a directory of theirs there), else a new one (mkdtemp, mode 0700).
fn private_cache_dir(base: &Path, me: u32) -> Result<PathBuf, Error> {
    let prefix = format!("sqtt-hipcc-{me}.");
    let mut made: Vec<PathBuf> = std::fs::read_dir(base)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .filter(|p| {
                    std::fs::symlink_metadata(p).is_ok_and(|m| {
                        m.is_dir() && m.uid() == me && trust::other_writers(&m, me).is_none()
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    made.sort();
    if let Some(p) = made.into_iter().next() {
        return Ok(p);
    }
    let template = base.join(format!("{prefix}XXXXXX"));
    let fail = |source| Error::PrivateCache {
        parent: base.to_path_buf(),
        source,
    };
    let c = std::ffi::CString::new(template.into_os_string().into_encoded_bytes())
        .map_err(|_| fail(std::io::ErrorKind::InvalidInput.into()))?;
    let mut bytes = c.into_bytes_with_nul();
    // SAFETY: mkdtemp rewrites the XXXXXX of the NUL-terminated template we own, in place.
    let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
    if made.is_null() {
        return Err(fail(std::io::Error::last_os_error()));
    }
    bytes.pop();
    use std::os::unix::ffi::OsStringExt;
    Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

/// Whether `path` is a regular file of the user's own that only they can write (a file of the
/// cache that is read back).
fn own_file(path: &Path, me: u32) -> bool {
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.is_file() && m.uid() == me && trust::other_writers(&m, me).is_none())
}

/// Writes `contents` to `path` atomically unless the user's own file with those contents is
/// there. The temporary file is removed whatever fails (a full disk, a size limit, ...).
fn ensure_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let me = trust::current_uid();
    if own_file(path, me) && std::fs::read(path).is_ok_and(|d| d == contents) {
        return Ok(());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    ensure_own_dir(dir, me)?;
    let tmp = temp_name(path);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)?;
        f.write_all(contents)?;
        f.flush()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `DIR/.NAME.tmp-PID-N`: a name no other writer uses at once.
fn temp_name(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let n = N.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.tmp-{}-{n}", std::process::id()))
}

/// Makes `dir` (mode 0700) if missing; an existing one must be the user's own, writable by
/// nobody else.
fn ensure_own_dir(dir: &Path, me: u32) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let m = std::fs::symlink_metadata(dir)?;
    let why = if !m.is_dir() {
        Some("it is not a directory".to_string())
    } else if m.uid() != me {
        Some(format!("it is owned by {}", trust::describe_user(m.uid())))
    } else {
        trust::other_writers(&m, me).map(|who| format!("it is writable by {who}"))
    };
    match why {
        None => Ok(()),
        Some(why) => Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} cannot be trusted: {why}; remove it", dir.display()),
        )),
    }
}

/// The directory holding this build's device headers (markers.hpp and
/// amd_sqtt_marker/sqtt_marker.h): the installed ones (`PREFIX/include/sqtt-hipcc/` beside
/// `PREFIX/bin/sqtt-hipcc`) when they hold exactly this build's text, else
/// `<cache>/include-<sha256 prefix>/`, content addressed (so several versions of sqtt-hipcc never
/// disagree). Every header is compared with the text this build carries (and the cache's
/// rewritten when it differs), so nothing else is ever included in its place.
pub fn markers_include_dir(getenv: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf, Error> {
    if let Some(dir) = installed_include_dir() {
        return Ok(dir);
    }
    let mut hash = Sha256::new();
    for (rel, text) in sqtt_markers::HEADERS {
        hash.update(rel.as_bytes());
        hash.update([0]);
        hash.update(text.as_bytes());
        hash.update([0]);
    }
    let dir = cache_dir(getenv)?.join(format!("include-{}", hex16(&hash.finalize())));
    for (rel, text) in sqtt_markers::HEADERS {
        let file = dir.join(rel);
        ensure_file(&file, text.as_bytes()).map_err(|source| Error::Headers {
            header: rel,
            path: file.clone(),
            source,
        })?;
    }
    Ok(dir)
}

/// `PREFIX/include/sqtt-hipcc/` of the install this executable belongs to, when it holds exactly
/// the headers this build carries (an older install's would not match its plugin).
fn installed_include_dir() -> Option<PathBuf> {
    let exe = canon(&std::env::current_exe().ok()?);
    let dir = canon(&exe.parent()?.join("../include/sqtt-hipcc"));
    sqtt_markers::HEADERS
        .iter()
        .all(|(rel, text)| std::fs::read(dir.join(rel)).is_ok_and(|d| d == text.as_bytes()))
        .then_some(dir)
}

/// The compiler cache the `ccache` setting names: a bare name is looked up on PATH.
pub fn find_cache(
    configured: &Path,
    getenv: &dyn Fn(&str) -> Option<OsString>,
) -> Result<PathBuf, Error> {
    let found = if configured.components().count() == 1 {
        search_path(configured.as_os_str(), getenv, &|_| true)
    } else {
        Some(configured.to_path_buf()).filter(|p| is_executable(p))
    };
    found.ok_or_else(|| Error::CacheNotFound(configured.to_path_buf()))
}

/// The LLVM major of the clang behind a hipcc, from `hipcc --version` ("clang version 15.0.6"),
/// cached on disk keyed by the hipcc path, its mtime and the variables that select its clang.
pub fn hipcc_clang_major(
    hipcc: &Path,
    getenv: &dyn Fn(&str) -> Option<OsString>,
    launcher: &mut dyn Launcher,
) -> Result<u32, Error> {
    let real = canon(hipcc);
    let mtime = |p: &Path| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    };
    let mut key = format!("{}\n{}\n", real.display(), mtime(&real));
    for v in ["HIP_CLANG_PATH", "HIP_PATH", "ROCM_PATH"] {
        let val = getenv(v).unwrap_or_default();
        key.push_str(&format!("{v}={}\n", val.to_string_lossy()));
        if v == "HIP_CLANG_PATH" && !val.is_empty() {
            for c in ["clang++-15", "clang++", "clang"] {
                let p = PathBuf::from(&val).join(c);
                if p.exists() {
                    let r = canon(&p);
                    key.push_str(&format!("{}:{}\n", r.display(), mtime(&r)));
                    break;
                }
            }
        }
    }
    let file = cache_dir(getenv)?.join(format!(
        "clang-major-{}",
        hex16(&Sha256::digest(key.as_bytes()))
    ));
    if own_file(&file, trust::current_uid()) {
        if let Ok(n) = std::fs::read_to_string(&file)
            .unwrap_or_default()
            .trim()
            .parse()
        {
            return Ok(n);
        }
    }
    let version = Invocation {
        program: hipcc.to_path_buf(),
        args: vec!["--version".into()],
        set_env: vec![(sqtt_config::var::HIPCC_DEPTH.into(), "1".into())],
        remove_env: Vec::new(),
        cwd: None,
    };
    let out = launcher
        .capture(&version)
        .map_err(|source| Error::ClangVersionProbe {
            compiler: hipcc.to_path_buf(),
            source,
        })?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let major =
        parse_clang_major(&text).ok_or_else(|| Error::ClangVersionUnknown(hipcc.to_path_buf()))?;
    let _ = ensure_file(&file, major.to_string().as_bytes());
    Ok(major)
}

/// `... clang version 15.0.6 ...` -> 15.
pub fn parse_clang_major(text: &str) -> Option<u32> {
    let i = text.find("clang version ")?;
    let rest = &text[i + "clang version ".len()..];
    let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    n.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executable(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn rocm_layouts() {
        let tmp = tempfile::tempdir().unwrap();
        // ROCm 7 layout: <rocm>/lib/llvm/bin/clang, hipcc in <rocm>/bin.
        let r7 = tmp.path().join("rocm-7.1.0");
        executable(&r7.join("bin/hipcc"));
        executable(&r7.join("lib/llvm/bin/clang"));
        // ROCm 6 layout: <rocm>/llvm/bin/clang.
        let r6 = tmp.path().join("rocm-6.4.0");
        executable(&r6.join("bin/hipcc"));
        executable(&r6.join("llvm/bin/clang"));
        let none = |_: &str| None;
        assert_eq!(
            rocm_llvm_dir(Some(&r7.join("bin/hipcc")), &none),
            Some(canon(&r7).join("lib/llvm"))
        );
        assert_eq!(
            rocm_llvm_dir(Some(&r6.join("bin/hipcc")), &none),
            Some(canon(&r6).join("llvm"))
        );
        // ROCM_PATH wins over the hipcc's own tree.
        let r6s = r6.clone();
        let env = move |v: &str| (v == "ROCM_PATH").then(|| r6s.clone().into_os_string());
        assert_eq!(
            rocm_llvm_dir(Some(&r7.join("bin/hipcc")), &env),
            Some(r6.join("llvm"))
        );
        // Debian: hipcc in /usr/bin, no llvm below /usr (and, on this machine, no /opt/rocm).
        let deb = tmp.path().join("usr");
        executable(&deb.join("bin/hipcc"));
        if !Path::new(DEFAULT_ROCM).exists() {
            assert_eq!(rocm_llvm_dir(Some(&deb.join("bin/hipcc")), &none), None);
        }
    }

    #[test]
    fn hipcc_from_rocm_variables() {
        let tmp = tempfile::tempdir().unwrap();
        let r = tmp.path().join("rocm");
        executable(&r.join("bin/hipcc"));
        let rs = r.clone();
        let env = move |v: &str| match v {
            "ROCM_PATH" => Some(rs.clone().into_os_string()),
            "PATH" => Some("/nonexistent".into()),
            _ => None,
        };
        assert_eq!(find_hipcc(None, &env).unwrap(), r.join("bin/hipcc"));
        // A configured one that cannot run is blamed on who named it, saying why.
        let named = |path: &Path, by| Configured {
            path: path.to_path_buf(),
            by,
        };
        let file = NamedBy::Setting(sqtt_config::Origin::File {
            path: "/src/sqtt.toml".into(),
            key: "hipcc".into(),
        });
        let e = find_hipcc(Some(&named(&tmp.path().join("none"), file)), &env).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "key `hipcc` in /src/sqtt.toml names {}, which does not exist",
                tmp.path().join("none").display()
            )
        );
        let e = find_hipcc(Some(&named(&r, NamedBy::FlagsOption)), &env).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "--sqtt-flags names {}, which is a directory, not an executable file",
                r.display()
            )
        );
        let plain = r.join("plain");
        std::fs::write(&plain, "").unwrap();
        let by = NamedBy::Setting(sqtt_config::Origin::Env("SQTT_HIPCC"));
        let e = find_hipcc(Some(&named(&plain, by)), &env).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("environment variable SQTT_HIPCC names ")
                && e.to_string()
                    .ends_with("which is not executable (no x permission)"),
            "{e}"
        );
    }

    #[test]
    fn plugin_candidates_per_major() {
        let exe = Path::new("/p/target/release");
        let c = plugin_candidates(exe, Some(22));
        assert_eq!(
            c[..3],
            [
                PathBuf::from("/p/target/release/../lib/sqtt-hipcc/llvm-22/libsqtt_plugin.so"),
                PathBuf::from("/p/target/release/lib/sqtt-hipcc/llvm-22/libsqtt_plugin.so"),
                PathBuf::from("/p/target/release/../llvm22/release/libsqtt_plugin.so"),
            ]
        );
        assert_eq!(c.last(), plugin_candidates(exe, None).last());
        assert_eq!(plugin_feature(15), "llvm15-0");
        assert_eq!(plugin_feature(18), "llvm18-0");
        assert_eq!(plugin_feature(21), "llvm21-1");
    }

    #[test]
    fn the_clang_major_is_asked_of_hipcc_once_and_cached() {
        use crate::launch::fake::{Mode, Recorder};
        let tmp = tempfile::tempdir().unwrap();
        let hipcc = tmp.path().join("hipcc");
        executable(&hipcc);
        let cache = tmp.path().join("cache").into_os_string();
        let env = move |v: &str| (v == "SQTT_CACHE_DIR").then(|| cache.clone());
        let mut fake = Recorder::printing("HIP version: 6.2\nAMD clang version 18.0.0git (x)\n");
        assert_eq!(hipcc_clang_major(&hipcc, &env, &mut fake).unwrap(), 18);
        let (mode, asked) = &fake.calls[0];
        assert_eq!(*mode, Mode::Capture);
        assert_eq!(
            (asked.program.as_path(), &asked.args[..]),
            (hipcc.as_path(), &["--version".to_string()][..])
        );
        assert_eq!(asked.env(sqtt_config::var::HIPCC_DEPTH), Some("1"));
        // The second time from the cache: no process.
        let mut again = Recorder::printing("clang version 99.0.0");
        assert_eq!(hipcc_clang_major(&hipcc, &env, &mut again).unwrap(), 18);
        assert!(again.calls.is_empty());
        // A rebuilt hipcc (another mtime) is asked again; one that prints no clang version is
        // an error naming it.
        std::fs::write(&hipcc, "#!/bin/sh\n# rebuilt\n").unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&hipcc)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let mut silent = Recorder::printing("");
        let e = hipcc_clang_major(&hipcc, &env, &mut silent).unwrap_err();
        assert_eq!(silent.calls.len(), 1);
        assert!(matches!(e, Error::ClangVersionUnknown(_)), "{e:?}");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn sqtt_plugin_naming_no_regular_file_says_what_it_names() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let missing = tmp.path().join("missing.so");
        for (path, want) in [
            (
                &fifo,
                "which is a FIFO (named pipe), not a regular file; set it to the plugin file",
            ),
            (
                &tmp.path().to_path_buf(),
                "which is a directory, not a regular file",
            ),
            (&missing, "which does not exist (No such file or directory"),
        ] {
            let p = path.clone().into_os_string();
            let env = move |v: &str| (v == "SQTT_PLUGIN").then(|| p.clone());
            let e = find_plugin(&env, Some(15)).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("SQTT_PLUGIN names {}, {want}", path.display())),
                "{e}"
            );
        }
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().mode() & 0o7777
    }

    fn chmod(p: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// The environment of a user without HOME: the cache under `tmp` (TMPDIR).
    fn no_home(tmp: &Path) -> impl Fn(&str) -> Option<OsString> {
        let t = tmp.as_os_str().to_owned();
        move |v: &str| (v == "TMPDIR").then(|| t.clone())
    }

    #[test]
    fn the_cache_directory_is_made_private_and_its_headers_are_ours() {
        let tmp = tempfile::tempdir().unwrap();
        let env = no_home(tmp.path());
        let me = trust::current_uid();
        let dir = markers_include_dir(&env).unwrap();
        let cache = tmp.path().join(format!("sqtt-hipcc-{me}"));
        assert_eq!(dir.parent(), Some(cache.as_path()));
        assert_eq!(mode(&cache), 0o700);
        // A header changed behind our back is put back as this build carries it, and no
        // temporary file is left.
        let hpp = dir.join("markers.hpp");
        std::fs::write(&hpp, "#error planted\n").unwrap();
        assert_eq!(markers_include_dir(&env).unwrap(), dir);
        let (_, text) = sqtt_markers::HEADERS[0];
        assert_eq!(std::fs::read_to_string(&hpp).unwrap(), text);
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains("tmp")), "{names:?}");
    }

    #[test]
    fn a_cache_directory_others_can_write_is_not_used() {
        let tmp = tempfile::tempdir().unwrap();
        let env = no_home(tmp.path());
        let me = trust::current_uid();
        let planted = tmp.path().join(format!("sqtt-hipcc-{me}"));
        let dir = markers_include_dir(&env).unwrap();
        chmod(&planted, 0o777);
        let found = find_cache_dir(&env).unwrap();
        assert_ne!(found.path, planted);
        assert_eq!(mode(&found.path), 0o700);
        assert_eq!(found.warnings.len(), 1);
        assert_eq!(
            found.warnings[0],
            format!(
                "not using the cache directory {}: it is writable by everyone (mode 0777); \
                 using the private directory {} instead (remove {} or set SQTT_CACHE_DIR to a \
                 directory of your own)",
                planted.display(),
                found.path.display(),
                planted.display()
            )
        );
        // The private directory is kept for the next runs; the headers go there.
        assert_eq!(find_cache_dir(&env).unwrap().path, found.path);
        let private = markers_include_dir(&env).unwrap();
        assert!(
            private.starts_with(&found.path) && private != dir,
            "{}",
            private.display()
        );
        // SQTT_CACHE_DIR is judged the same way.
        let named = planted.clone().into_os_string();
        let t = tmp.path().as_os_str().to_owned();
        let env = move |v: &str| match v {
            "SQTT_CACHE_DIR" => Some(named.clone()),
            "TMPDIR" => Some(t.clone()),
            _ => None,
        };
        assert_eq!(find_cache_dir(&env).unwrap().path, found.path);
    }

    #[test]
    fn another_users_cache_directory_and_its_headers_are_never_used() {
        if trust::current_uid() != 0 {
            return; // needs chown
        }
        // Issue 25: with HOME unset, another user made $TMPDIR/sqtt-hipcc-0 (0777) first and
        // put a markers.hpp of their own in it.
        let tmp = tempfile::tempdir().unwrap();
        let env = no_home(tmp.path());
        let planted = tmp.path().join("sqtt-hipcc-0");
        let dir = markers_include_dir(&env).unwrap();
        std::fs::write(dir.join("markers.hpp"), "#error planted\n").unwrap();
        for entry in [&planted, &dir, &dir.join("markers.hpp")] {
            std::os::unix::fs::chown(entry, Some(12345), Some(12345)).unwrap();
        }
        chmod(&planted, 0o777);
        let found = find_cache_dir(&env).unwrap();
        assert!(
            found.warnings[0].contains("it is owned by uid 12345, not by you"),
            "{:?}",
            found.warnings
        );
        let used = markers_include_dir(&env).unwrap();
        assert!(used.starts_with(&found.path), "{}", used.display());
        let (_, text) = sqtt_markers::HEADERS[0];
        assert_eq!(
            std::fs::read_to_string(used.join("markers.hpp")).unwrap(),
            text
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("markers.hpp")).unwrap(),
            "#error planted\n",
            "the other user's directory is left alone"
        );
        // A planted symbolic link to another directory is refused the same way.
        std::fs::remove_dir_all(&planted).unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &planted).unwrap();
        std::os::unix::fs::lchown(&planted, Some(12345), None).unwrap();
        let found = find_cache_dir(&env).unwrap();
        assert!(
            found.warnings[0].contains("it is a symbolic link owned by uid 12345"),
            "{:?}",
            found.warnings
        );
    }

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let tmp = tempfile::tempdir().unwrap();
        // The rename cannot replace a directory that is not empty.
        let target = tmp.path().join("markers.hpp");
        std::fs::create_dir_all(target.join("x")).unwrap();
        assert!(ensure_file(&target, b"text").is_err());
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from("markers.hpp")]);
    }

    #[test]
    fn clang_major() {
        assert_eq!(
            parse_clang_major("HIP version: 5.2\nDebian clang version 15.0.6\nTarget: x"),
            Some(15)
        );
        assert_eq!(parse_clang_major("clang version 16.0.6 (x)"), Some(16));
        assert_eq!(
            parse_clang_major("AMD clang version 20.0.0git (https://github.com/RadeonOpenCompute/llvm-project roc-7.0.0 25314 f4087f6b428f0e6f575ebac8a8a724dab123d06e)"),
            Some(20)
        );
        assert_eq!(parse_clang_major("gcc 12"), None);
    }
}

//! Finding the real hipcc, the plugin and its LLVM major, hipcc's clang major (cached), and the
//! include directory of markers.hpp.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection};
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::launch::{Invocation, Launcher};

/// File name of the plugin.
pub const PLUGIN_FILE: &str = "libsqtt_plugin.so";
/// Set in hipcc's environment: a wrapper that sees it is being called by itself.
pub const DEPTH_VAR: &str = "SQTT_HIPCC_DEPTH";

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The real hipcc: `configured` (SQTT_HIPCC / `hipcc` key), then `$HIP_PATH/bin/hipcc`,
/// `$ROCM_PATH/bin/hipcc`, then PATH without this wrapper itself.
pub fn find_hipcc(
    configured: Option<&Path>,
    getenv: &dyn Fn(&str) -> Option<OsString>,
) -> Result<PathBuf, Error> {
    let me = std::env::current_exe().map(|p| canon(&p)).ok();
    let not_me = |p: &Path| me.as_deref() != Some(canon(p).as_path());
    if let Some(p) = configured {
        let p = if p.components().count() == 1 && !p.exists() {
            // A bare name: look it up on PATH.
            search_path(p.as_os_str(), getenv, &not_me).unwrap_or_else(|| p.to_path_buf())
        } else {
            p.to_path_buf()
        };
        if !is_executable(&p) {
            return Err(Error::HipccNotExecutable(p));
        }
        if !not_me(&p) {
            return Err(Error::HipccIsSelf(p));
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
        let p = PathBuf::from(p);
        if p.is_dir() {
            return Err(Error::PluginIsDirectory(p));
        }
        if p.is_file() {
            return Ok(p);
        }
        return Err(Error::PluginMissing(p));
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
    let data = sqtt_codeobj::file::read_regular(path, 1 << 30, "the plugin").map_err(read_err)?;
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
    let rel = PathBuf::from(format!("plugin-{}", hex16(&Sha256::digest(key.as_bytes()))));
    if let Some(text) = cached_file(getenv, &rel).and_then(|f| std::fs::read_to_string(f).ok()) {
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
    let _ = ensure_file(&cache_dir(getenv).join(&rel), text.as_bytes());
    Ok(info)
}

fn hex16(d: &[u8]) -> String {
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Candidate cache directories, best first: `$SQTT_CACHE_DIR` (alone, when set), else
/// `$XDG_CACHE_HOME/sqtt-hipcc`, `~/.cache/sqtt-hipcc`, then one under the temporary directory.
fn cache_candidates(getenv: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let mut cands = Vec::new();
    if let Some(d) = getenv("SQTT_CACHE_DIR").filter(|v| !v.is_empty()) {
        // Named explicitly: that directory only.
        return vec![PathBuf::from(d)];
    }
    if let Some(d) = getenv("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        cands.push(PathBuf::from(d).join("sqtt-hipcc"));
    }
    if let Some(d) = getenv("HOME").filter(|v| !v.is_empty()) {
        cands.push(PathBuf::from(d).join(".cache").join("sqtt-hipcc"));
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    cands.push(std::env::temp_dir().join(format!("sqtt-hipcc-{uid}")));
    cands
}

/// The per-user cache directory: the first candidate that is (or can be made) writable.
pub fn cache_dir(getenv: &dyn Fn(&str) -> Option<OsString>) -> PathBuf {
    let mut cands = cache_candidates(getenv);
    for d in &cands {
        if std::fs::create_dir_all(d).is_ok() && writable(d) {
            return d.clone();
        }
    }
    cands.pop().unwrap()
}

/// A file already in the first cache candidate that has it (no write, no probe: the fast path
/// of every compile).
fn cached_file(getenv: &dyn Fn(&str) -> Option<OsString>, rel: &Path) -> Option<PathBuf> {
    cache_candidates(getenv)
        .into_iter()
        .map(|d| d.join(rel))
        .find(|p| p.is_file())
}

fn writable(d: &Path) -> bool {
    let probe = d.join(format!(".probe-{}", std::process::id()));
    let ok = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// Writes `contents` to `path` atomically unless a file with those contents is there.
fn ensure_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if std::fs::read(path).map(|d| d == contents).unwrap_or(false) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}

/// The directory holding this build's device headers (markers.hpp and
/// amd_sqtt_marker/sqtt_marker.h): the installed ones (`PREFIX/include/sqtt-hipcc/` beside
/// `PREFIX/bin/sqtt-hipcc`) when they are this build's, else `<cache>/include-<sha256 prefix>/`,
/// written once (content addressed, so several versions of sqtt-hipcc never disagree).
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
    let dir_rel = PathBuf::from(format!("include-{}", hex16(&hash.finalize())));
    // The last header is written last: its presence says the directory is complete.
    let (last, _) = sqtt_markers::HEADERS[sqtt_markers::HEADERS.len() - 1];
    if let Some(f) = cached_file(getenv, &dir_rel.join(last)) {
        let mut dir = f;
        for _ in Path::new(last).components() {
            dir.pop();
        }
        return Ok(dir);
    }
    let dir = cache_dir(getenv).join(&dir_rel);
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
    let rel = PathBuf::from(format!(
        "clang-major-{}",
        hex16(&Sha256::digest(key.as_bytes()))
    ));
    if let Some(f) = cached_file(getenv, &rel) {
        if let Ok(n) = std::fs::read_to_string(&f)
            .unwrap_or_default()
            .trim()
            .parse()
        {
            return Ok(n);
        }
    }
    let file = cache_dir(getenv).join(&rel);
    let version = Invocation {
        program: hipcc.to_path_buf(),
        args: vec!["--version".into()],
        set_env: vec![(DEPTH_VAR.into(), "1".into())],
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
        assert_eq!(asked.env(DEPTH_VAR), Some("1"));
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

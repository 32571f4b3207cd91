//! Finding the real hipcc, the plugin and its LLVM major, hipcc's clang major (cached), and the
//! include directory of markers.hpp.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use object::{Object, ObjectSection};
use sha2::{Digest, Sha256};

use crate::Fail;

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
) -> Result<PathBuf, Fail> {
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
            return Err(Fail::usage(format!(
                "SQTT_HIPCC (or `hipcc` in sqtt.toml) is {}, which is not an executable file",
                p.display()
            )));
        }
        if !not_me(&p) {
            return Err(Fail::usage(format!(
                "SQTT_HIPCC (or `hipcc` in sqtt.toml) points at sqtt-hipcc itself ({}); set it \
                 to the real hipcc",
                p.display()
            )));
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
    search_path("hipcc".as_ref(), getenv, &not_me).ok_or_else(|| {
        Fail::usage(
            "cannot find the real hipcc: set SQTT_HIPCC=/path/to/hipcc, or HIP_PATH/ROCM_PATH, \
             or put hipcc on PATH"
                .to_string(),
        )
    })
}

fn search_path(
    name: &std::ffi::OsStr,
    getenv: &dyn Fn(&str) -> Option<OsString>,
    accept: &dyn Fn(&Path) -> bool,
) -> Option<PathBuf> {
    let path = getenv("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p) && accept(p))
}

/// The plugin: `SQTT_PLUGIN`, next to this executable, or `../lib/sqtt-hipcc/` from it.
pub fn find_plugin(getenv: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf, Fail> {
    if let Some(p) = getenv(sqtt_config::var::PLUGIN).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return Err(Fail::usage(format!(
            "SQTT_PLUGIN is {}, which does not exist",
            p.display()
        )));
    }
    let mut tried = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        let exe = canon(&exe);
        if let Some(dir) = exe.parent() {
            for cand in [
                dir.join(PLUGIN_FILE),
                dir.join("../lib/sqtt-hipcc").join(PLUGIN_FILE),
            ] {
                if cand.is_file() {
                    return Ok(canon(&cand));
                }
                tried.push(cand.display().to_string());
            }
        }
    }
    Err(Fail::usage(format!(
        "cannot find the pass plugin {PLUGIN_FILE} (looked at: {}); build it with `cargo build \
         -p sqtt-plugin` or set SQTT_PLUGIN=/path/to/{PLUGIN_FILE}; or turn instrumentation off \
         with SQTT_ENABLED=0",
        tried.join(", ")
    )))
}

/// What the plugin says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    pub version: Option<String>,
    pub llvm_major: Option<u32>,
}

/// Reads `.sqtt_plugin_info` (`sqtt-plugin;version=X.Y.Z;llvm_major=N`), or else the LLVM major
/// of a `libLLVM-N.so` the plugin needs.
pub fn plugin_info(path: &Path) -> Result<PluginInfo, Fail> {
    let read_err =
        |e: std::io::Error| Fail::usage(format!("cannot read the plugin {}: {e}", path.display()));
    // Read, never mapped: a plugin rewritten meanwhile gives an error, never SIGBUS.
    let data = sqtt_codeobj::file::read_regular(path, 1 << 30, "the plugin").map_err(read_err)?;
    let file = object::File::parse(&*data).map_err(|e| {
        Fail::usage(format!(
            "the plugin {} is not a shared object: {e}",
            path.display()
        ))
    })?;
    let mut info = PluginInfo {
        version: None,
        llvm_major: None,
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

/// First 16 hex digits of the SHA-256 of a file.
pub fn content_hash(path: &Path) -> std::io::Result<String> {
    let data = std::fs::read(path)?;
    Ok(hex16(&Sha256::digest(&data)))
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

/// The directory holding this build's markers.hpp: `<cache>/include-<sha256 prefix>/`, written
/// once (content addressed, so several versions of sqtt-hipcc never disagree).
pub fn markers_include_dir(getenv: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf, Fail> {
    let text = sqtt_markers::MARKERS_HPP.as_bytes();
    let rel =
        PathBuf::from(format!("include-{}", hex16(&Sha256::digest(text)))).join("markers.hpp");
    if let Some(f) = cached_file(getenv, &rel) {
        return Ok(f.parent().unwrap().to_path_buf());
    }
    let file = cache_dir(getenv).join(&rel);
    let dir = file.parent().unwrap().to_path_buf();
    ensure_file(&file, text).map_err(|e| {
        Fail::usage(format!(
            "cannot write markers.hpp to {}: {e} (set SQTT_CACHE_DIR to a writable directory)",
            file.display()
        ))
    })?;
    Ok(dir)
}

/// The LLVM major of the clang behind a hipcc, from `hipcc --version` ("clang version 15.0.6"),
/// cached on disk keyed by the hipcc path, its mtime and the variables that select its clang.
pub fn hipcc_clang_major(
    hipcc: &Path,
    getenv: &dyn Fn(&str) -> Option<OsString>,
) -> Result<u32, Fail> {
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
    let out = Command::new(hipcc)
        .arg("--version")
        .stdin(Stdio::null())
        .env(DEPTH_VAR, "1")
        .output()
        .map_err(|e| Fail::usage(format!("cannot run {} --version: {e}", hipcc.display())))?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let major = parse_clang_major(&text).ok_or_else(|| {
        Fail::usage(format!(
            "cannot tell which clang {} uses: `{} --version` printed no \"clang version N\" line",
            hipcc.display(),
            hipcc.display()
        ))
    })?;
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

    #[test]
    fn clang_major() {
        assert_eq!(
            parse_clang_major("HIP version: 5.2\nDebian clang version 15.0.6\nTarget: x"),
            Some(15)
        );
        assert_eq!(parse_clang_major("clang version 16.0.6 (x)"), Some(16));
        assert_eq!(parse_clang_major("gcc 12"), None);
    }
}

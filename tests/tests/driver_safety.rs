//! The wrapper's half of issue 25 ("safe by default"), on the real hipcc, make and ninja: nothing
//! run or included from files another user planted (a sqtt.toml found upward, the cache
//! directory), no temporary file left by a failed write, dependency files escaped as clang
//! escapes them, the wrapper's arguments never taken as the value of a user option, the
//! documented `-mllvm -sqtt-marker-*` form working, a rejected output never left in place, the
//! signals that end a process passed on to hipcc, and messages naming what is wrong.
//!
//! The cases of another user run as root (chown to the unused uid 12345, setpriv to act as it);
//! as any other user they say so and return.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use sqtt_e2e::driver::*;
use sqtt_e2e::toolchain::{
    extract_code_object, hipcc, markers_include, plugin_path, run_ok, workdir,
};

/// A uid no account uses here, as "another user".
const OTHER: u32 = 12345;

use sqtt_e2e::kernels::WORK_KERNEL as KERNEL;

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn is_root() -> bool {
    if sqtt_config::trust::current_uid() == 0 {
        return true;
    }
    eprintln!("not root: the cases of another user's files need chown; skipped");
    false
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown(p: &Path, uid: u32) {
    std::os::unix::fs::lchown(p, Some(uid), Some(uid)).unwrap();
}

fn mkfifo(p: &Path) {
    run_ok(Command::new("mkfifo").arg(p));
}

/// Every file below `dir`, as paths relative to it.
fn files_below(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p.clone());
            }
            v.push(p.strip_prefix(dir).unwrap().display().to_string());
        }
    }
    v.sort();
    v
}

/// A script that records that it ran (in `ran`) and answers `--version` as clang 15 would.
fn evil_script(path: &Path, ran: &Path) {
    std::fs::write(
        path,
        format!(
            "#!/bin/sh\necho ran > '{}'\necho 'clang version 15.0.6'\n",
            ran.display()
        ),
    )
    .unwrap();
    chmod(path, 0o755);
}

/// Issue 25, finding 1: `mkdir -m1777 /tmp/s`; another user writes `/tmp/s/sqtt.toml` naming a
/// script as `hipcc`; `cd /tmp/s/p && sqtt-hipcc --version` (what ccache runs) ran it.
#[test]
fn another_users_sqtt_toml_never_runs_its_hipcc() {
    if !is_root() {
        return;
    }
    let d = workdir();
    let s = d.path().join("s");
    std::fs::create_dir_all(s.join("p")).unwrap();
    chmod(&s, 0o1777);
    let ran = d.path().join("ran");
    let evil = s.join("evil.sh");
    evil_script(&evil, &ran);
    let toml = s.join("sqtt.toml");
    std::fs::write(&toml, format!("hipcc = \"{}\"\n", evil.display())).unwrap();
    for f in [&evil, &toml] {
        chown(f, OTHER);
    }
    std::fs::write(s.join("p/k.hip"), KERNEL).unwrap();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let _ = std::fs::remove_file(&ran);
        let mut c = driver(&s.join("p"));
        c.env("SQTT_PLUGIN", plugin_path()).args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let warning = format!(
        "sqtt-hipcc: warning: ignoring {t}: it is owned by uid {OTHER}, not by you or root; to \
         use it anyway, name it (--sqtt-config={t} or SQTT_CONFIG={t}) or add {s} to \
         SQTT_SAFE_DIRECTORY",
        t = toml.display(),
        s = s.display()
    );
    let include = format!("-I{}", markers_include().display());
    for args in [
        &["--version"][..],
        &["-E", "k.hip", "-o", "k.i", &include],
        &["--sqtt-toolchain"],
    ] {
        let o = run(args, &[]);
        assert!(!ran.exists(), "{args:?}: the planted hipcc ran");
        assert!(err(&o).contains(&warning), "{args:?}: {}", err(&o));
        if args[0] == "--version" {
            assert!(o.status.success(), "{}", err(&o));
            assert!(out(&o).trim_end().ends_with("(config none)"), "{}", out(&o));
        }
    }
    // Named, or its directory declared safe, it is the user's own choice.
    let named = toml.to_str().unwrap();
    for env in [
        [("SQTT_CONFIG", named)],
        [("SQTT_SAFE_DIRECTORY", s.to_str().unwrap())],
    ] {
        let o = run(&["--version"], &env);
        assert!(ran.exists(), "{env:?}: {}", err(&o));
        assert!(!err(&o).contains("warning"), "{}", err(&o));
    }
    let o = run(&[&format!("--sqtt-config={named}"), "--version"], &[]);
    assert!(ran.exists(), "{}", err(&o));
}

/// Finding 9: a sqtt.toml that is a directory or a FIFO was skipped silently; now each is
/// reported (never opened: nothing blocks) and the search goes on above it.
#[test]
fn a_sqtt_toml_that_is_no_regular_file_is_reported_and_never_blocks() {
    let d = workdir();
    let fake = fake_compiler(d.path());
    std::fs::write(d.path().join("sqtt.toml"), "instrument_barriers = true\n").unwrap();
    let sub = d.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("k.hip"), KERNEL).unwrap();
    let toml = sub.join("sqtt.toml");
    for kind in ["directory", "FIFO (named pipe)"] {
        let _ = std::fs::remove_dir(&toml);
        if kind == "directory" {
            std::fs::create_dir(&toml).unwrap();
        } else {
            mkfifo(&toml);
        }
        let mut c = driver(&sub);
        c.env("SQTT_HIPCC", &fake).env("SQTT_PLUGIN", plugin_path());
        c.args(["-c", "k.hip", "-o", "k.o"]);
        let o = output_within(c, Duration::from_secs(60));
        assert!(o.status.success(), "{kind}: {}", err(&o));
        assert!(
            err(&o).contains(&format!(
                "sqtt-hipcc: warning: ignoring {}: it is a {kind}, not a regular file; a \
                 sqtt.toml must be a regular file",
                toml.display()
            )),
            "{kind}: {}",
            err(&o)
        );
        // The one above is used.
        assert!(recorded_env(d.path()).contains(&"SQTT_INSTRUMENT_BARRIERS=1".to_string()));
        let _ = std::fs::remove_file(&toml);
    }
}

/// Runs `c` to its end, failing the test (and killing it) after `limit`.
fn output_within(mut c: Command, limit: Duration) -> Output {
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < limit {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg(pid.to_string())
            .status();
    });
    let o = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(
        o.status.signal() != Some(9),
        "it hung: killed after {limit:?}"
    );
    o
}

/// Finding 2: with HOME unset the cache is `$TMPDIR/sqtt-hipcc-<uid>`; another user made it
/// first (0777) and put a markers.hpp of theirs in it, which every build compiled in.
#[test]
fn a_planted_cache_directory_is_never_compiled_in() {
    if !is_root() {
        return;
    }
    let d = workdir();
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    // The name of this build's header directory.
    let o = driver(d.path())
        .env("SQTT_CACHE_DIR", d.path().join("probe"))
        .arg("--sqtt-include-dir")
        .output()
        .unwrap();
    let include = PathBuf::from(out(&o).trim());
    let name = include.file_name().unwrap();
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    chmod(&tmp, 0o1777);
    let planted = tmp.join("sqtt-hipcc-0");
    let headers = planted.join(name);
    std::fs::create_dir_all(headers.join("amd_sqtt_marker")).unwrap();
    std::fs::write(headers.join("markers.hpp"), "#error planted markers.hpp\n").unwrap();
    std::fs::write(
        headers.join("amd_sqtt_marker/sqtt_marker.h"),
        "#error planted\n",
    )
    .unwrap();
    for p in [
        &planted,
        &headers,
        &headers.join("markers.hpp"),
        &headers.join("amd_sqtt_marker"),
        &headers.join("amd_sqtt_marker/sqtt_marker.h"),
    ] {
        chown(p, OTHER);
    }
    chmod(&planted, 0o777);
    let mut c = wrapper(d.path());
    c.env_remove("SQTT_CACHE_DIR")
        .env_remove("HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("TMPDIR", &tmp)
        .args(["--offload-arch=gfx90a", "-c", "k.hip", "-o", "k.o"]);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains(&format!(
            "sqtt-hipcc: warning: not using the cache directory {}: it is owned by uid {OTHER}, \
             not by you; using the private directory {}/sqtt-hipcc-0.",
            planted.display(),
            tmp.display()
        )),
        "{e}"
    );
    let o = driver(d.path())
        .args(["--check", "k.o", "--require", "user:work"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        std::fs::read_to_string(headers.join("markers.hpp")).unwrap(),
        "#error planted markers.hpp\n",
        "the other user's files are left alone"
    );
}

/// As a user other than root (setpriv): a sqtt.toml of root's is trusted, one of a third user
/// is not; a cache directory of root's is not the user's own.
#[test]
fn as_another_user_root_files_are_trusted_and_a_third_users_are_not() {
    if !is_root() {
        return;
    }
    let d = workdir();
    // The other user records its arguments here; the sticky bit keeps root's entries root's.
    chmod(d.path(), 0o1777);
    let fake = fake_compiler(d.path());
    let work = d.path().join("w");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("k.hip"), KERNEL).unwrap();
    chown(&work, OTHER);
    chown(&work.join("k.hip"), OTHER);
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    chmod(&tmp, 0o1777);
    // Root's, world-writable: not the user's cache.
    let roots = tmp.join(format!("sqtt-hipcc-{OTHER}"));
    std::fs::create_dir(&roots).unwrap();
    chmod(&roots, 0o777);
    let toml = d.path().join("sqtt.toml");
    let as_other = |args: &[&str]| {
        let mut c = driver(&work);
        c.env_remove("SQTT_CACHE_DIR")
            .env_remove("HOME")
            .env_remove("XDG_CACHE_HOME")
            .env("TMPDIR", &tmp)
            .env("SQTT_HIPCC", &fake)
            .env("SQTT_ENABLED", "0")
            .args(args);
        let prog = c.get_program().to_owned();
        let mut s = Command::new("setpriv");
        s.args(["--reuid", &OTHER.to_string(), "--regid", &OTHER.to_string()])
            .arg("--clear-groups")
            .arg(prog)
            .args(c.get_args())
            .current_dir(&work);
        s.env_clear();
        for (k, v) in c.get_envs() {
            if let Some(v) = v {
                s.env(k, v);
            }
        }
        s.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        s.output().unwrap()
    };
    std::fs::write(&toml, "verbose = true\n").unwrap();
    let o = as_other(&["-c", "k.hip", "-o", "k.o"]);
    assert!(o.status.success(), "{}", err(&o));
    let e = err(&o);
    assert!(e.contains("Compile step"), "root's sqtt.toml is used: {e}");
    assert!(
        e.contains(&format!(
            "not using the cache directory {}: it is owned by user root (uid 0), not by you",
            roots.display()
        )),
        "{e}"
    );
    chown(&toml, OTHER + 1);
    let o = as_other(&["-c", "k.hip", "-o", "k.o"]);
    assert!(o.status.success(), "{}", err(&o));
    let e = err(&o);
    assert!(!e.contains("Compile step"), "{e}");
    assert!(
        e.contains(&format!(
            "ignoring {}: it is owned by uid {}, not by you or root",
            toml.display(),
            OTHER + 1
        )),
        "{e}"
    );
}

/// Finding 9: a full disk (or any failed write) left `markers.tmpNNN` in the cache.
#[test]
fn a_failed_write_to_the_cache_leaves_no_temporary_file() {
    let d = workdir();
    let cache = d.path().join("cache");
    // A file size limit (the write fails with EFBIG; SIGXFSZ ignored).
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 2; trap '' XFSZ; exec \"$0\" --sqtt-include-dir")
        .arg(sqtt_hipcc())
        .env("SQTT_CACHE_DIR", &cache)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).starts_with("sqtt-hipcc: error: cannot write markers.hpp to "),
        "{}",
        err(&o)
    );
    let left = files_below(&cache);
    assert!(left.iter().all(|f| !f.contains("tmp")), "{left:?}");
    // A full file system: a 4 KiB tmpfs in a mount namespace of its own (where that is
    // permitted), looked at from inside it.
    let full = d.path().join("full");
    std::fs::create_dir(&full).unwrap();
    let script = "mount -t tmpfs -o size=4k,mode=0700 tmpfs \"$1\" || exit 97; \
                  \"$0\" --sqtt-include-dir; echo \"status=$?\"; cd \"$1\" && find . | sort";
    let o = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", script])
        .arg(sqtt_hipcc())
        .arg(&full)
        .env("SQTT_CACHE_DIR", &full)
        .output()
        .unwrap();
    if !o.status.success() {
        eprintln!(
            "no mount namespace here ({}); the full-disk case is skipped",
            err(&o)
        );
        return;
    }
    let listing = out(&o);
    assert!(listing.contains("status=2"), "{listing}\n{}", err(&o));
    assert!(err(&o).contains("No space left on device"), "{}", err(&o));
    assert!(!listing.contains("tmp"), "{listing}");
}

/// Finding 6: the sqtt.toml path was added unescaped: in a directory named `p $x #2`, make said
/// "No rule to make target" and ninja saw a target that was always dirty.
#[test]
fn dependency_files_work_with_make_and_ninja_in_a_directory_named_p_dollar_x_hash_2() {
    let base = workdir();
    let d = base.path().join("p $x #2");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("k.hip"), KERNEL).unwrap();
    let toml = d.join("sqtt.toml");
    std::fs::write(&toml, "instrument_barriers = false\n").unwrap();
    let wrap = sqtt_hipcc();
    std::fs::write(
        d.join("Makefile"),
        format!(
            "k.o: k.hip\n\t{} --offload-arch=gfx90a -c k.hip -o k.o -MD -MF k.d\n-include k.d\n",
            wrap.display()
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("build.ninja"),
        format!(
            "rule cc\n  command = {} --offload-arch=gfx90a -c $in -o $out -MD -MF $out.d\n  \
             depfile = $out.d\n  deps = gcc\nbuild n.o: cc k.hip\n",
            wrap.display()
        ),
    )
    .unwrap();
    // The variables the wrapper needs (its cache inside the odd directory too: clang writes
    // those paths itself).
    let tool = |name: &str| {
        let mut c = Command::new(name);
        let w = wrapper(&d);
        for (k, v) in w.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c.current_dir(&d);
        c
    };
    // An edit a moment after the last build (file times have a coarse grain).
    let edit = |n: u32| {
        std::thread::sleep(Duration::from_millis(1100));
        std::fs::write(&toml, format!("instrument_barriers = false\n# edit {n}\n")).unwrap();
    };
    // make: builds, is then up to date, rebuilds after an edit of sqtt.toml.
    let o = tool("make").output().unwrap();
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let dep = std::fs::read_to_string(d.join("k.d")).unwrap();
    assert!(dep.contains(r"/p\ $$x\ \#2/sqtt.toml"), "{dep}");
    let o = tool("make").arg("-q").output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "up to date: {}{}",
        out(&o),
        err(&o)
    );
    edit(1);
    let o = tool("make").arg("-q").output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "stale after the edit: {}",
        err(&o)
    );
    let o = tool("make").output().unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("-c k.hip -o k.o"), "rebuilt: {}", out(&o));
    let o = tool("make").arg("-q").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // ninja: the same, never always dirty.
    let o = tool("ninja").output().unwrap();
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let o = tool("ninja")
        .args(["-n", "-d", "explain"])
        .output()
        .unwrap();
    assert!(
        out(&o).contains("ninja: no work to do."),
        "{}{}",
        out(&o),
        err(&o)
    );
    edit(2);
    let o = tool("ninja")
        .args(["-n", "-d", "explain"])
        .output()
        .unwrap();
    assert!(
        err(&o).contains("sqtt.toml") && !out(&o).contains("no work to do"),
        "{}{}",
        out(&o),
        err(&o)
    );
    let o = tool("ninja").output().unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let o = tool("ninja").arg("-n").output().unwrap();
    assert!(out(&o).contains("ninja: no work to do."), "{}", out(&o));
}

/// Finding 7: the wrapper's arguments came after the user's, so a trailing `-o` took
/// `-Xarch_device` as its value (exit 0, a file `./-Xarch_device`); hipcc reports it.
#[test]
fn a_trailing_dash_o_is_reported_as_hipcc_reports_it() {
    let d = workdir();
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    let include = format!("-I{}", markers_include().display());
    let args = ["--offload-arch=gfx90a", "-c", "k.hip", "-o"];
    let plain = Command::new(hipcc())
        .current_dir(d.path())
        .arg(&include)
        .args(args)
        .output()
        .unwrap();
    let wrapped = wrapper(d.path()).args(args).output().unwrap();
    assert_ne!(plain.status.code(), Some(0));
    assert_eq!(
        wrapped.status.code(),
        plain.status.code(),
        "{}",
        err(&wrapped)
    );
    assert!(
        err(&plain).contains("argument to '-o' is missing"),
        "{}",
        err(&plain)
    );
    assert!(
        err(&wrapped).contains("argument to '-o' is missing"),
        "{}",
        err(&wrapped)
    );
    let names = files_below(d.path());
    assert!(!names.iter().any(|n| n.starts_with('-')), "{names:?}");
}

/// Finding 7: README's `-mllvm -sqtt-marker-mem-barrier=none` failed on every compile and link
/// (lld: "Unknown command line argument"); through sqtt-hipcc it reaches the plugin only.
#[test]
fn the_documented_plugin_option_works_on_compile_and_link() {
    let d = workdir();
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    let opt = ["-mllvm", "-sqtt-marker-mem-barrier=none"];
    let build = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = wrapper(d.path());
        c.arg("--offload-arch=gfx90a").args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", err(&o));
        o
    };
    let o = build(
        &["--sqtt-verbose", "-c", "k.hip", "-o", "k.o", opt[0], opt[1]],
        &[],
    );
    assert!(
        err(&o).contains("-Xclang -mllvm -Xclang '-sqtt-marker-mem-barrier=none'"),
        "{}",
        err(&o)
    );
    build(&["k.o", "-o", "app", opt[0], opt[1]], &[]);
    build(
        &["-fgpu-rdc", "-c", "k.hip", "-o", "r.o", opt[0], opt[1]],
        &[],
    );
    build(&["-fgpu-rdc", "r.o", "-o", "rapp", opt[0], opt[1]], &[]);
    // The option gives what the variable gives.
    build(
        &["-c", "k.hip", "-o", "v.o"],
        &[("SQTT_MEM_BARRIER", "none")],
    );
    let co = |name: &str| {
        let dir = d.path().join(format!("x-{name}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::read(extract_code_object(&d.path().join(name), "gfx90a", &dir)).unwrap()
    };
    assert_eq!(co("k.o"), co("v.o"));
}

/// Finding 9: when `X.sqtt-rejected` was a directory, the rejected output stayed in place and
/// looked valid to make.
#[test]
fn a_rejected_output_is_never_left_in_place() {
    let d = workdir();
    // A hand-made funcmap joins the plugin's in the same section: ID 1 twice.
    let src = sqtt_e2e::kernels::with_colliding_funcmap(KERNEL);
    std::fs::write(d.path().join("k.hip"), src).unwrap();
    let aside = d.path().join("app.sqtt-rejected");
    std::fs::create_dir_all(aside.join("keep")).unwrap();
    let o = wrapper(d.path())
        .args(["--offload-arch=gfx90a", "k.hip", "-o", "app"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        !d.path().join("app").exists(),
        "the rejected output is still there"
    );
    assert!(aside.join("keep").is_dir());
    assert!(
        err(&o).contains(&format!(
            "the output {} was deleted: it cannot be moved to {}",
            d.path().join("app").display(),
            aside.display()
        )),
        "{}",
        err(&o)
    );
}

/// The processes below `pid` (from /proc), nearest first.
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: the comm may hold spaces, so read after the last ')'.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: u32 = rest.split(' ').nth(1).unwrap().parse().unwrap();
        parent.push((p, ppid));
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let me = out[i];
        out.extend(parent.iter().filter(|(_, pp)| *pp == me).map(|(p, _)| *p));
        i += 1;
    }
    out.remove(0);
    out
}

/// Whether a process runs (exists and is no zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let rest = &s[s.rfind(')').unwrap() + 2..];
            !rest.starts_with('Z') && !rest.starts_with('X')
        })
        .unwrap_or(false)
}

fn kill(sig: &str, target: &str) {
    let _ = Command::new("kill").args([sig, "--", target]).status();
}

/// A compile whose source is a FIFO nobody writes: hipcc's clang waits for it for ever.
/// Returns the process (the leader of a process group of its own) and hipcc's process tree
/// once clang is there.
/// The signals the test sends start at their default action in the compile, however the test
/// itself was started (under `nohup` SIGHUP comes ignored, and the wrapper, as it should, keeps
/// an ignored signal ignored).
fn blocked_compile(mut cmd: Command) -> (Child, Vec<u32>) {
    cmd.process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec only signal(2), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    let tree = loop {
        let tree = descendants(child.id());
        let clang = tree.iter().any(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("-cc1"))
        });
        if clang {
            break tree;
        }
        if start.elapsed() > Duration::from_secs(60) {
            kill("-KILL", &format!("-{}", child.id()));
            let _ = child.wait();
            panic!("clang never started");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    (child, tree)
}

fn wait_within(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if start.elapsed() > limit {
            kill("-KILL", &format!("-{}", child.id()));
            panic!("the wrapper did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Finding 9: SIGTERM to the wrapper was not passed on to hipcc (which kept running). Now
/// SIGTERM and SIGHUP reach hipcc and the wrapper ends as hipcc did; a terminal's SIGINT (to
/// the whole process group) ends the wrapper as it ends plain hipcc.
#[test]
fn signals_that_end_the_wrapper_reach_hipcc() {
    let d = workdir();
    let src = d.path().join("k.hip");
    mkfifo(&src);
    let args = ["--offload-arch=gfx90a", "-c", "k.hip", "-o", "k.o"];
    for sig in ["-TERM", "-HUP"] {
        let mut c = wrapper(d.path());
        c.args(args);
        let (mut child, tree) = blocked_compile(c);
        let hipcc = tree[0];
        kill(sig, &child.id().to_string());
        let st = wait_within(&mut child, Duration::from_secs(30));
        let want = if sig == "-TERM" { 15 } else { 1 };
        assert_eq!(st.signal(), Some(want), "{sig}: {st:?}");
        std::thread::sleep(Duration::from_millis(300));
        let hipcc_alive = alive(hipcc);
        // What is left of the compile (clang, orphaned as under plain hipcc) is in the
        // wrapper's process group.
        kill("-KILL", &format!("-{}", child.id()));
        assert!(!hipcc_alive, "{sig}: hipcc ({hipcc}) still runs");
    }
    // SIGINT to the process group, as a terminal sends it: plain hipcc ends with a status of
    // its own; the wrapper ends with the same.
    let mut plain = Command::new(hipcc());
    plain.arg(format!("-I{}", markers_include().display()));
    plain.args(args).current_dir(d.path());
    let mut c = wrapper(d.path());
    c.args(args);
    let mut statuses = Vec::new();
    for cmd in [plain, c] {
        let (mut child, _) = blocked_compile(cmd);
        kill("-INT", &format!("-{}", child.id()));
        statuses.push(wait_within(&mut child, Duration::from_secs(30)));
        kill("-KILL", &format!("-{}", child.id()));
    }
    assert_eq!(
        (statuses[1].code(), statuses[1].signal()),
        (statuses[0].code(), statuses[0].signal()),
        "plain hipcc: {:?}, the wrapper: {:?}",
        statuses[0],
        statuses[1]
    );
}

/// Finding 7: hipcc exiting 0 without writing the output the step writes was a success.
#[test]
fn a_compiler_that_succeeds_without_writing_its_output_fails_the_step() {
    let d = workdir();
    let fake = fake_compiler(d.path());
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    let o = driver(d.path())
        .env("SQTT_HIPCC", &fake)
        .env("SQTT_PLUGIN", plugin_path())
        .env("FAKE_NO_OUTPUT", "1")
        .args(["-c", "k.hip", "-o", "k.o"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert_eq!(
        err(&o),
        format!(
            "sqtt-hipcc: error: {} exited with status 0 but did not write {}; the step failed\n",
            fake.display(),
            d.path().join("k.o").display()
        )
    );
}

/// Arguments, variables, and the name the message must give.
type LongCase<'a> = (Vec<String>, Vec<(&'a str, &'a str)>, &'a str);

/// Finding 9: messages that named the wrong thing, or echoed a 900 KB value whole.
#[test]
fn messages_name_what_is_wrong_and_cut_long_values() {
    let d = workdir();
    let fake = fake_compiler(d.path());
    std::fs::write(d.path().join("k.hip"), KERNEL).unwrap();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let _ = std::fs::remove_file(d.path().join("argv.log"));
        let mut c = driver(d.path());
        c.env("SQTT_HIPCC", &fake).env("SQTT_PLUGIN", plugin_path());
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?} {}", err(&o));
        assert!(recorded_argv(d.path()).is_none(), "{args:?}: hipcc ran");
        err(&o)
    };
    // SQTT_PLUGIN naming a FIFO (as /dev/null, a character device): what it is.
    let fifo = d.path().join("fifo");
    mkfifo(&fifo);
    let e = run(&["-c", "k.hip"], &[("SQTT_PLUGIN", fifo.to_str().unwrap())]);
    assert!(
        e.starts_with(&format!(
            "sqtt-hipcc: error: SQTT_PLUGIN names {}, which is a FIFO (named pipe), not a \
             regular file",
            fifo.display()
        )),
        "{e}"
    );
    // --sqtt-flags=CLANG is blamed on itself, not on SQTT_HIPCC.
    let e = run(&["--sqtt-flags=/nonexistent/clang"], &[]);
    assert_eq!(
        e,
        "sqtt-hipcc: error: --sqtt-flags names /nonexistent/clang, which does not exist\n"
    );
    // A `hipcc` from sqtt.toml is named with its file.
    let toml = d.path().join("sqtt.toml");
    std::fs::write(&toml, "hipcc = \"/nonexistent/hipcc\"\n").unwrap();
    let mut c = driver(d.path());
    c.env("SQTT_PLUGIN", plugin_path()).args(["-c", "k.hip"]);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        err(&o),
        format!(
            "sqtt-hipcc: error: key `hipcc` in {} names /nonexistent/hipcc, which does not exist\n",
            toml.display()
        )
    );
    std::fs::remove_file(&toml).unwrap();
    // A long value (a variable or an argument holds at most 128 KiB): named, cut, its length
    // said.
    let big = "Z".repeat(100_000);
    let cases: Vec<LongCase> = vec![
        (
            vec!["-c".into(), "k.hip".into()],
            vec![("SQTT_SCOPE_CU", &big)],
            "SQTT_SCOPE_CU",
        ),
        (
            vec!["-c".into(), "k.hip".into()],
            vec![("SQTT_HIPCC", &big)],
            "SQTT_HIPCC",
        ),
        (
            vec![format!("--sqtt-completions={big}")],
            vec![],
            "--sqtt-completions",
        ),
        (
            vec![
                "-c".into(),
                "k.hip".into(),
                "-mllvm".into(),
                format!("-sqtt-marker-scope-cu={big}"),
            ],
            vec![],
            "-sqtt-marker-scope-cu",
        ),
    ];
    for (args, env, name) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let e = run(&args, env);
        assert!(e.len() < 1000, "{name}: {} bytes of message", e.len());
        assert!(
            e.contains(name) && e.contains("(100000 bytes in all)"),
            "{e}"
        );
    }
    // The 900 KB value of the issue, in sqtt.toml.
    let big = "Z".repeat(900_000);
    std::fs::write(&toml, format!("mem_barrier = \"{big}\"\n")).unwrap();
    let e = run(&["-c", "k.hip"], &[]);
    assert!(e.len() < 1000, "{} bytes of message", e.len());
    assert!(
        e.contains("`mem_barrier`") && e.contains("(900000 bytes in all)"),
        "{e}"
    );
}

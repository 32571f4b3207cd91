//! The wrapper's argument handling against a fake compiler that records its argument vector
//! and environment: what is added to which step, what passes unchanged, own options, the
//! hipcc/plugin lookup and the LLVM-major check, bad settings, status pass-through.

use std::path::Path;
use std::process::{Command, Output};

use sqtt_e2e::driver::*;
use sqtt_e2e::toolchain::{plugin_path, workdir};

struct Fx {
    dir: tempfile::TempDir,
}

impl Fx {
    fn new() -> Fx {
        let dir = workdir();
        fake_compiler(dir.path());
        std::fs::write(dir.path().join("k.hip"), "int main() { return 0; }\n").unwrap();
        Fx { dir }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn cmd(&self) -> Command {
        let mut c = driver(self.path());
        c.env("SQTT_HIPCC", self.path().join("fake-hipcc"));
        c.env("SQTT_PLUGIN", plugin_path());
        c
    }
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let _ = std::fs::remove_file(self.path().join("argv.log"));
        let mut c = self.cmd();
        c.args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }
    fn argv(&self) -> Vec<String> {
        recorded_argv(self.path()).expect("the fake compiler did not run")
    }
}

/// Variables to set, sqtt.toml text, words the error must contain.
type BadCase<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, &'a [&'a str]);

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// What the wrapper added before the given arguments (which come last, unchanged, so that none
/// of the wrapper's can become the value of a user option left without one).
fn added(argv: &[String], given: &[&str]) -> Vec<String> {
    let at = argv.len() - given.len();
    assert_eq!(
        &argv[at..],
        &s(given)[..],
        "given arguments come last, unchanged"
    );
    argv[..at].to_vec()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn compile_steps_get_plugin_include_and_define() {
    let fx = Fx::new();
    for given in [
        &["--offload-arch=gfx90a", "-c", "k.hip", "-o", "k.o"][..],
        &[
            "--offload-arch=gfx90a",
            "-c",
            "k.hip",
            "-MD",
            "-MF",
            "k.d",
            "-MT",
            "k.o",
            "-MP",
        ],
        &["--offload-arch=gfx90a", "-S", "k.hip"],
        &["--offload-arch=gfx90a", "k.hip", "-o", "app"],
        &["-x", "hip", "weird.txt", "-c"],
    ] {
        let o = fx.run(given, &[]);
        assert!(o.status.success(), "{given:?}: {}", stderr(&o));
        let extra = added(&fx.argv(), given);
        let options = sqtt_config::setting::instrumentation().count();
        assert_eq!(extra.len(), 6 + 4 * options, "{extra:?}");
        assert_eq!(extra[0], "-Xarch_device");
        assert_eq!(
            extra[1],
            format!("-fpass-plugin={}", plugin_path().display())
        );
        // The settings on the command line: the plugin loaded early (-fplugin) so that every
        // cc1's -mllvm parse knows its options, each option through -Xclang (never to lld).
        assert_eq!(extra[2], format!("-fplugin={}", plugin_path().display()));
        // The plugin's content, for compiler caches (a plugin argument clang gives no one).
        let hash = &extra[3]["-fplugin-arg-sqtt-sha256=".len()..];
        assert!(
            extra[3].starts_with("-fplugin-arg-sqtt-sha256="),
            "{extra:?}"
        );
        let sum = Command::new("sha256sum")
            .arg(plugin_path())
            .output()
            .unwrap();
        let sum = String::from_utf8(sum.stdout).unwrap();
        assert_eq!(hash, &sum[..16], "the plugin's content hash");
        for (i, o) in sqtt_config::setting::instrumentation().enumerate() {
            let at = 4 + 4 * i;
            assert_eq!(
                extra[at..at + 3],
                s(&["-Xclang", "-mllvm", "-Xclang"]),
                "{extra:?}"
            );
            assert!(
                extra[at + 3].starts_with(&format!("-{}=", o.option.unwrap())),
                "{extra:?}"
            );
        }
        let rest = &extra[4 + 4 * options..];
        assert!(rest[0].starts_with("-I"), "{extra:?}");
        let inc = Path::new(&rest[0][2..]);
        for (rel, text) in sqtt_markers::HEADERS {
            assert_eq!(
                std::fs::read_to_string(inc.join(rel)).unwrap(),
                *text,
                "{rel}"
            );
        }
        assert_eq!(rest[1], "-DSQTT_ENABLED=1");
    }
    // The options carry the merged settings (sqtt.toml and SQTT_* resolved).
    std::fs::write(fx.path().join("sqtt.toml"), "mem_barrier = \"asm\"\n").unwrap();
    fx.run(&["-c", "k.hip"], &[("SQTT_SCOPE_CU", "-1")]);
    let argv = fx.argv();
    for want in [
        "-sqtt-marker-mem-barrier=asm",
        "-sqtt-marker-scope-cu=0xFFFFFFFF",
        "-sqtt-marker-instrument-memory=off",
    ] {
        assert!(argv.iter().any(|a| a == want), "{want} not in {argv:?}");
    }
    std::fs::remove_file(fx.path().join("sqtt.toml")).unwrap();
    // Settings reach the compiler's environment, merged and complete.
    fx.run(&["-c", "k.hip"], &[("SQTT_INSTRUMENT_BARRIERS", "1")]);
    let env = recorded_env(fx.path());
    for want in [
        "SQTT_INSTRUMENT_BARRIERS=1",
        "SQTT_SCOPE_CU=0x3",
        "SQTT_MEM_BARRIER=fence",
        "SQTT_HIPCC_DEPTH=1",
    ] {
        assert!(env.iter().any(|e| e == want), "{want} not in {env:?}");
    }
}

#[test]
fn disabled_adds_only_the_include_dir() {
    let fx = Fx::new();
    let given = ["-c", "k.hip", "-o", "k.o"];
    for (env, toml) in [(Some("0"), None), (None, Some("enabled = false\n"))] {
        if let Some(t) = toml {
            std::fs::write(fx.path().join("sqtt.toml"), t).unwrap();
        }
        let mut e = vec![("SQTT_PLUGIN", "/nonexistent/plugin.so")];
        if let Some(v) = env {
            e.push(("SQTT_ENABLED", v));
        }
        let o = fx.run(&given, &e);
        assert!(o.status.success(), "{}", stderr(&o));
        let extra = added(&fx.argv(), &given);
        assert_eq!(extra.len(), 1, "{extra:?}");
        assert!(extra[0].starts_with("-I"));
        assert!(!recorded_env(fx.path())
            .iter()
            .any(|e| e.starts_with("SQTT_INSTRUMENT")));
    }
}

#[test]
fn probes_links_and_unknown_pass_untouched() {
    let fx = Fx::new();
    for given in [
        &["-v"][..],
        &["-###", "-c", "k.hip"],
        &["-print-prog-name=ld"],
        &["--print-search-dirs"],
        &["-dumpmachine"],
        &["k.o", "m.o", "-o", "app"],
        &["-shared", "k.o", "-o", "libk.so"],
        &["-O2"],
        &[],
    ] {
        // A broken sqtt.toml must not break probes; links do not read device settings either
        // (they still validate them, see bad_settings), so use a clean directory here.
        let o = fx.run(given, &[]);
        assert!(o.status.success(), "{given:?}: {}", stderr(&o));
        assert_eq!(fx.argv(), s(given), "{given:?}");
        assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{given:?}");
    }
}

#[test]
fn preprocessing_gets_the_markers_include_dir_and_nothing_else() {
    let fx = Fx::new();
    for given in [
        &["-E", "k.hip"][..],
        &["-M", "k.hip"],
        &["-MM", "k.hip"],
        &["-E", "-dM", "-x", "hip", "-"],
    ] {
        // What the compile would see (ccache preprocesses through the wrapper), no plugin.
        let o = fx.run(given, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        let extra = added(&fx.argv(), given);
        assert_eq!(extra.len(), 2, "{extra:?}");
        assert!(extra[0].starts_with("-I"), "{extra:?}");
        assert_eq!(extra[1], "-DSQTT_ENABLED=1");
        assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{given:?}");
        let o = fx.run(given, &[("SQTT_ENABLED", "0")]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(added(&fx.argv(), given).len(), 1, "disabled: only -I");
    }
    // The header's directory, for preprocessing by hand.
    let o = fx.run(&["--sqtt-include-dir"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = String::from_utf8(o.stdout).unwrap();
    let header = std::path::Path::new(dir.trim()).join("markers.hpp");
    assert_eq!(
        std::fs::read_to_string(&header).unwrap(),
        sqtt_markers::MARKERS_HPP
    );
}

#[test]
fn version_names_the_plugin_and_its_hash() {
    let fx = Fx::new();
    let o = fx.run(&["--version"], &[]);
    assert!(o.status.success());
    assert_eq!(fx.argv(), s(&["--version"]));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "HIP version: 5.2");
    let last = lines[lines.len() - 2];
    assert!(
        last.contains(&plugin_path().display().to_string()) && last.contains("sha256:"),
        "{out}"
    );
    let hash = last.rsplit("sha256:").next().unwrap();
    assert_eq!(hash.len(), 16);
    // A rebuilt plugin changes the line.
    let p2 = fake_plugin(fx.path(), "sqtt-plugin;version=9.9.9;llvm_major=15");
    let o = fx.run(&["--version"], &[("SQTT_PLUGIN", p2.to_str().unwrap())]);
    let out2 = String::from_utf8(o.stdout).unwrap();
    assert_ne!(out2.lines().rev().nth(1), Some(last));
    // The settings line: what ccache's `compiler_check = %compiler% --version` sees.
    let settings = *lines.last().unwrap();
    assert!(
        settings.starts_with("sqtt-hipcc settings: sha256:"),
        "{out}"
    );
    let o = fx.run(&["--version"], &[("SQTT_INSTRUMENT_BARRIERS", "1")]);
    let out3 = String::from_utf8(o.stdout).unwrap();
    assert_ne!(out3.lines().last(), Some(settings), "a setting changes it");
    let o = fx.run(&["--version"], &[]);
    let out4 = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out4.lines().last(), Some(settings), "stable otherwise");
}

#[test]
fn response_files_and_hipcc_variables_pass_unchanged() {
    let fx = Fx::new();
    std::fs::write(fx.path().join("args.rsp"), "-c k.hip -o 'k.o'\n").unwrap();
    let o = fx.run(
        &["@args.rsp"],
        &[
            ("HIPCC_COMPILE_FLAGS_APPEND", "-O1"),
            ("HIPCC_VERBOSE", "0"),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let argv = fx.argv();
    assert_eq!(argv.last().map(String::as_str), Some("@args.rsp"));
    // The response file, then what a compile step gets (plugin, its options, include, define).
    let added = 6 + 4 * sqtt_config::setting::instrumentation().count();
    assert_eq!(
        argv.len(),
        1 + added,
        "classified as a compile step: {argv:?}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.path().join("args.rsp")).unwrap(),
        "-c k.hip -o 'k.o'\n"
    );
    let env = recorded_env(fx.path());
    assert!(env.contains(&"HIPCC_COMPILE_FLAGS_APPEND=-O1".to_string()));
    assert!(env.contains(&"HIPCC_VERBOSE=0".to_string()));
}

#[test]
fn own_options_are_stripped_and_unknown_ones_refused() {
    let fx = Fx::new();
    std::fs::write(fx.path().join("other.toml"), "instrument_barriers = true\n").unwrap();
    let o = fx.run(&["--sqtt-config=other.toml", "-c", "k.hip"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!fx.argv().iter().any(|a| a.starts_with("--sqtt")));
    assert!(recorded_env(fx.path()).contains(&"SQTT_INSTRUMENT_BARRIERS=1".to_string()));
    let o = fx.run(&["--sqtt-verbose", "-c", "k.hip"], &[]);
    assert!(o.status.success());
    assert!(o.stdout.is_empty());
    assert!(
        stderr(&o).contains("sqtt-hipcc: Compile step"),
        "{}",
        stderr(&o)
    );
    let o = fx.run(&["--sqtt-frobnicate", "-c", "k.hip"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--sqtt-frobnicate"));
    assert!(recorded_argv(fx.path()).is_none(), "hipcc must not run");
}

#[test]
fn hipcc_lookup_and_recursion_guard() {
    let fx = Fx::new();
    // SQTT_HIPCC pointing at the wrapper itself.
    let o = fx.run(
        &["-c", "k.hip"],
        &[("SQTT_HIPCC", sqtt_hipcc().to_str().unwrap())],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("itself"), "{}", stderr(&o));
    // A depth marker in the environment: called by itself.
    let o = fx.run(&["-c", "k.hip"], &[("SQTT_HIPCC_DEPTH", "1")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(recorded_argv(fx.path()).is_none());
    // PATH lookup skips the wrapper: a directory where `hipcc` is a symlink to sqtt-hipcc comes
    // first, the fake `hipcc` second.
    let me = fx.path().join("me");
    let real = fx.path().join("real");
    std::fs::create_dir_all(&me).unwrap();
    std::fs::create_dir_all(&real).unwrap();
    std::os::unix::fs::symlink(sqtt_hipcc(), me.join("hipcc")).unwrap();
    std::fs::copy(fx.path().join("fake-hipcc"), real.join("hipcc")).unwrap();
    let mut c = driver(fx.path());
    c.env(
        "PATH",
        format!("{}:{}:/usr/bin:/bin", me.display(), real.display()),
    )
    .env_remove("HIP_PATH")
    .env_remove("ROCM_PATH")
    .env("SQTT_ENABLED", "0")
    .args(["-c", "k.hip"]);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(recorded_argv(fx.path()).is_some());
    // HIP_PATH/bin/hipcc comes before PATH.
    let hp = fx.path().join("hip");
    std::fs::create_dir_all(hp.join("bin")).unwrap();
    std::fs::copy(fx.path().join("fake-hipcc"), hp.join("bin/hipcc")).unwrap();
    let mut c = driver(fx.path());
    c.env("PATH", "/nonexistent")
        .env("HIP_PATH", &hp)
        .env("SQTT_ENABLED", "0")
        .args(["-c", "k.hip"]);
    assert!(c.output().unwrap().status.success());
    // Nothing found.
    let mut c = driver(fx.path());
    c.env("PATH", "/nonexistent")
        .env_remove("HIP_PATH")
        .env_remove("ROCM_PATH")
        .args(["-c", "k.hip"]);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("SQTT_HIPCC"), "{}", stderr(&o));
}

#[test]
fn plugin_lookup_and_llvm_major_check() {
    let fx = Fx::new();
    let missing = fx.run(
        &["-c", "k.hip"],
        &[("SQTT_PLUGIN", "/nonexistent/libsqtt_plugin.so")],
    );
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("/nonexistent/libsqtt_plugin.so"));
    assert!(recorded_argv(fx.path()).is_none());

    let p16 = fake_plugin(fx.path(), "sqtt-plugin;version=0.1.0;llvm_major=16");
    let o = fx.run(&["-c", "k.hip"], &[("SQTT_PLUGIN", p16.to_str().unwrap())]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("LLVM 16") && e.contains("clang 15"), "{e}");
    assert!(
        e.contains("./install.sh --llvm 15") && e.contains("SQTT_PLUGIN"),
        "{e}"
    );
    // Only the identity query ran, never the compile.
    assert_eq!(recorded_argv(fx.path()), Some(s(&["--version"])));
    let _ = std::fs::remove_file(fx.path().join("argv.log"));
    let o = fx.run(&["-c", "k.hip"], &[("SQTT_PLUGIN", p16.to_str().unwrap())]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        recorded_argv(fx.path()).is_none(),
        "cached: not even --version runs again"
    );
    // The same plugin against a clang-16 hipcc passes (the cache is keyed by the hipcc).
    let o = fx.run(
        &["-c", "k.hip"],
        &[
            ("SQTT_PLUGIN", p16.to_str().unwrap()),
            ("FAKE_CLANG", "16"),
            ("HIP_CLANG_PATH", "/x16"),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // The answer is cached: a second run needs no `--version` of hipcc.
    let cache = fx.path().join(".sqtt-cache");
    assert!(std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("clang-major-")));
    // No info section: the libLLVM-N.so the plugin needs tells the major.
    let src = fx.path().join("needs.c");
    std::fs::write(&src, "int y;\n").unwrap();
    let needs = fx.path().join("libneeds.so");
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&needs)
        .arg(&src)
        .args(["-Wl,--no-as-needed", "-L/usr/lib/llvm-15/lib", "-lLLVM-15"])
        .status()
        .unwrap();
    assert!(st.success());
    let o = fx.run(
        &["-c", "k.hip"],
        &[
            ("SQTT_PLUGIN", needs.to_str().unwrap()),
            ("FAKE_CLANG", "16"),
            ("HIP_CLANG_PATH", "/y16"),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("built for LLVM 15"), "{}", stderr(&o));
    // No info at all.
    let junk = fake_plugin(fx.path(), "nothing here");
    let o = fx.run(&["-c", "k.hip"], &[("SQTT_PLUGIN", junk.to_str().unwrap())]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot tell which LLVM"),
        "{}",
        stderr(&o)
    );
}

/// An installed tree (`bin/sqtt-hipcc`, `lib/sqtt-hipcc/llvm-<N>/`): the wrapper takes the plugin
/// built for its hipcc's clang, and names the major and the build command when there is none.
#[test]
fn side_by_side_plugins_follow_the_clang_major() {
    let fx = Fx::new();
    let prefix = fx.path().join("prefix");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    let exe = prefix.join("bin/sqtt-hipcc");
    std::fs::copy(sqtt_e2e::driver::sqtt_hipcc(), &exe).unwrap();
    let mut plugins = Vec::new();
    for n in [15, 22] {
        let dir = prefix.join(format!("lib/sqtt-hipcc/llvm-{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        let made = fake_plugin(
            fx.path(),
            &format!("sqtt-plugin;version=0.1.0;llvm_major={n}"),
        );
        std::fs::rename(&made, dir.join("libsqtt_plugin.so")).unwrap();
        plugins.push(dir.join("libsqtt_plugin.so"));
    }
    let run = |clang: &str, clang_path: &str| {
        let _ = std::fs::remove_file(fx.path().join("argv.log"));
        // The installed copy (its plugins are found from its own location), in the clean
        // environment `driver` gives, with no SQTT_PLUGIN.
        let template = fx.cmd();
        let mut c = Command::new(&exe);
        for (k, v) in template.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c.env_remove("SQTT_PLUGIN")
            .env("FAKE_CLANG", clang)
            .env("HIP_CLANG_PATH", clang_path)
            .current_dir(fx.path())
            .args(["-c", "k.hip"]);
        c.output().unwrap()
    };
    for (clang, plugin) in [("15", &plugins[0]), ("22", &plugins[1])] {
        let o = run(clang, &format!("/clang{clang}"));
        assert!(o.status.success(), "clang {clang}: {}", stderr(&o));
        let want = format!("-fpass-plugin={}", plugin.canonicalize().unwrap().display());
        assert!(fx.argv().contains(&want), "clang {clang}: {:?}", fx.argv());
    }
    // clang 21 has no build: exit 2, the major and the one command named, hipcc never compiles.
    let o = run("21", "/clang21");
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("LLVM 21") && e.contains("./install.sh --llvm 21"),
        "{e}"
    );
    assert_eq!(recorded_argv(fx.path()), Some(s(&["--version"])));
}

#[test]
fn bad_settings_stop_before_hipcc() {
    let fx = Fx::new();
    let cases: &[BadCase] = &[
        (
            &[
                ("SQTT_TRACE_ADDRESSES", "memory"),
                ("SQTT_INSTRUMENT_MEMORY", "2:5"),
            ],
            None,
            &["SQTT_TRACE_ADDRESSES", "SQTT_INSTRUMENT_MEMORY"],
        ),
        (
            &[
                ("SQTT_SHADER_CLOCK_BITS", "12"),
                ("SQTT_TRACE_ADDRESSES", "lds"),
            ],
            None,
            &["SQTT_SHADER_CLOCK_BITS", "SQTT_TRACE_ADDRESSES"],
        ),
        (
            &[("SQTT_SCOPE_CU", "0xZZ")],
            None,
            &["SQTT_SCOPE_CU", "0xZZ"],
        ),
        (
            &[("SQTT_INSTRUMENT_FUNCTIONS", "cost:abc")],
            None,
            &["SQTT_INSTRUMENT_FUNCTIONS", "cost:abc"],
        ),
        (
            &[("SQTT_INSTRUMENT_MEMORY", "2-5")],
            None,
            &["SQTT_INSTRUMENT_MEMORY", "2-5"],
        ),
        (
            &[],
            Some("instrument_barriers = true\nscop_cu = 1\n"),
            &["scop_cu"],
        ),
        (
            &[],
            Some("instrument_barriers = \"yes please\"\n"),
            &["instrument_barriers"],
        ),
        (
            &[],
            Some("[scope\ncu = 1\n"),
            &["sqtt.toml", "at line 1, column 7"],
        ),
        // A conflict made by the file names its keys, not the variables.
        (
            &[],
            Some("trace_addresses = \"memory\"\ninstrument_memory = \"2:5\"\n"),
            &[
                "`trace_addresses = memory` in",
                "`instrument_memory = 2:5` in",
                "are mutually exclusive",
            ],
        ),
        (
            &[],
            Some("hipcc = \"\"\n"),
            &["key `hipcc`", "remove the key for the default"],
        ),
    ];
    for (env, toml, words) in cases {
        let _ = std::fs::remove_file(fx.path().join("sqtt.toml"));
        if let Some(t) = toml {
            std::fs::write(fx.path().join("sqtt.toml"), t).unwrap();
        }
        for step in [&["-c", "k.hip", "-o", "k.o"][..], &["k.o", "-o", "app"]] {
            let o = fx.run(step, env);
            assert_eq!(o.status.code(), Some(2), "{env:?} {toml:?}: {}", stderr(&o));
            let e = stderr(&o);
            for w in *words {
                assert!(e.contains(w), "{w:?} not in {e}");
            }
            assert!(
                recorded_argv(fx.path()).is_none(),
                "hipcc ran for {env:?} {toml:?}"
            );
            assert!(o.stdout.is_empty());
        }
    }
    let _ = std::fs::remove_file(fx.path().join("sqtt.toml"));
    // An unreadable config named explicitly.
    let o = fx.run(
        &["-c", "k.hip"],
        &[("SQTT_CONFIG", "/nonexistent/sqtt.toml")],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/sqtt.toml"));
    let o = fx.run(&["--sqtt-config=/nonexistent/x.toml", "-c", "k.hip"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(recorded_argv(fx.path()).is_none());
    // sqtt.toml is found from a parent directory; a variable wins over it.
    std::fs::write(fx.path().join("sqtt.toml"), "instrument_barriers = true\n").unwrap();
    let sub = fx.path().join("a/b");
    std::fs::create_dir_all(&sub).unwrap();
    let mut c = fx.cmd();
    c.current_dir(&sub).args(["-c", "../../k.hip"]);
    assert!(c.output().unwrap().status.success());
    assert!(recorded_env(fx.path()).contains(&"SQTT_INSTRUMENT_BARRIERS=1".to_string()));
    let mut c = fx.cmd();
    c.current_dir(&sub)
        .env("SQTT_INSTRUMENT_BARRIERS", "0")
        .args(["-c", "../../k.hip"]);
    assert!(c.output().unwrap().status.success());
    assert!(recorded_env(fx.path()).contains(&"SQTT_INSTRUMENT_BARRIERS=0".to_string()));
}

#[test]
fn status_stdout_and_stderr_pass_through() {
    let fx = Fx::new();
    for args in [&["-c", "k.hip"][..], &["-v"], &["k.o"]] {
        let o = fx.run(
            args,
            &[
                ("FAKE_EXIT", "3"),
                ("FAKE_STDOUT", "out\x01text"),
                ("FAKE_STDERR", "err text\n"),
            ],
        );
        assert_eq!(o.status.code(), Some(3));
        assert_eq!(o.stdout, b"out\x01text");
        assert_eq!(o.stderr, b"err text\n");
    }
}

#[test]
fn a_signal_that_kills_hipcc_ends_the_wrapper_the_same_way() {
    use std::os::unix::process::ExitStatusExt;
    let fx = Fx::new();
    // A compile step (waited for, then checked) and a probe (exec'd).
    for args in [&["-c", "k.hip"][..], &["-dumpmachine"]] {
        let o = fx.run(args, &[("FAKE_SIGNAL", "TERM")]);
        assert_eq!(o.status.signal(), Some(15), "{args:?}: {:?}", o.status);
        assert!(o.stderr.is_empty(), "{}", stderr(&o));
    }
}

#[test]
fn rdc_compiles_defer_to_the_device_link_which_loads_the_plugin() {
    let fx = Fx::new();
    let plugin = format!("--load-pass-plugin={}", plugin_path().display());
    // -fgpu-rdc -c: the plugin at compile, told to defer IDs and the funcmap.
    let given = ["-fgpu-rdc", "-c", "k.hip"];
    assert!(fx.run(&given, &[]).status.success());
    let extra = added(&fx.argv(), &given);
    assert_eq!(extra[0], "-Xarch_device");
    assert!(!extra.contains(&plugin));
    assert!(recorded_env(fx.path()).contains(&"SQTT_DEFER_TO_LINK=1".to_string()));
    // The rdc link: the plugin loaded into the device lld, settings exported.
    let given = ["-fgpu-rdc", "a.o", "b.o", "-o", "app"];
    assert!(fx.run(&given, &[]).status.success());
    assert_eq!(
        added(&fx.argv(), &given),
        s(&["-Xoffload-linker", &plugin, "-Qunused-arguments"])
    );
    assert!(recorded_env(fx.path()).contains(&"SQTT_SCOPE_CU=0x3".to_string()));
    // Compile and link in one step: both.
    let given = ["-fgpu-rdc", "k.hip", "-o", "app"];
    assert!(fx.run(&given, &[]).status.success());
    let extra = added(&fx.argv(), &given);
    assert!(extra.contains(&"-Xarch_device".to_string()) && extra.contains(&plugin));
    // Not rdc: no deferral, even when the caller's environment asks for it.
    let given = ["-c", "k.hip"];
    assert!(fx
        .run(&given, &[("SQTT_DEFER_TO_LINK", "1")])
        .status
        .success());
    assert!(!recorded_env(fx.path())
        .iter()
        .any(|e| e.starts_with("SQTT_DEFER_TO_LINK")));
    // Host-only: no device code, no plugin flag (it would be "unused" under -Werror).
    let given = ["--cuda-host-only", "-c", "k.hip"];
    assert!(fx.run(&given, &[]).status.success());
    let extra = added(&fx.argv(), &given);
    assert!(!extra
        .iter()
        .any(|a| a.contains("plugin") || a == "-Xarch_device"));
    // Disabled: nothing, the link untouched.
    let given = ["-fgpu-rdc", "a.o", "b.o", "-o", "app"];
    assert!(fx.run(&given, &[("SQTT_ENABLED", "0")]).status.success());
    assert_eq!(fx.argv(), s(&given));
}

#[test]
fn installed_layout_finds_the_plugin_in_lib() {
    let fx = Fx::new();
    let prefix = fx.path().join("prefix");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::fs::create_dir_all(prefix.join("lib/sqtt-hipcc")).unwrap();
    let exe = prefix.join("bin/sqtt-hipcc");
    std::fs::copy(sqtt_hipcc(), &exe).unwrap();
    let so = prefix.join("lib/sqtt-hipcc/libsqtt_plugin.so");
    std::fs::copy(plugin_path(), &so).unwrap();
    let _ = std::fs::remove_file(fx.path().join("argv.log"));
    let mut c = Command::new(&exe);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SQTT_") {
            c.env_remove(k);
        }
    }
    let o = c
        .current_dir(fx.path())
        .env("SQTT_CACHE_DIR", fx.path().join("cache"))
        .env("SQTT_HIPCC", fx.path().join("fake-hipcc"))
        .args(["-c", "k.hip"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let argv = fx.argv();
    assert!(
        argv.contains(&format!("-fpass-plugin={}", so.display())),
        "{argv:?}"
    );
}

/// `SQTT_SCOPE_CU=0` is accepted (the build runs) but warns that no marker can be emitted.
#[test]
fn a_zero_scope_mask_warns_and_builds() {
    let fx = Fx::new();
    let o = fx.run(&["-c", "k.hip", "-o", "k.o"], &[("SQTT_SCOPE_CU", "0")]);
    let e = stderr(&o);
    assert!(
        e.contains(
            "sqtt-hipcc: warning: SQTT_SCOPE_CU (`scope.cu`) is 0: it selects no cu, so no \
             marker can ever be emitted"
        ),
        "{e}"
    );
    assert!(recorded_argv(fx.path()).is_some(), "hipcc did not run: {e}");
    let o = fx.run(&["-c", "k.hip", "-o", "k.o"], &[]);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

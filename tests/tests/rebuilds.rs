//! No route serves a stale object, with ccache and the build tools as installed: a changed
//! setting (a variable, an sqtt.toml edit, a new nearer sqtt.toml, an edit of the file
//! `--sqtt-config` names, a plugin with other content) is a ccache miss and a rebuild, the same
//! settings are a hit and no rebuild. Each route of docs/driver.md: the wrapper running ccache
//! itself; CMake's HIP language with `--sqtt-launch` (ccache after it) and the settings stamp of
//! the installed package, with Ninja and Make; sqtt-hipcc as the C++ compiler with the package
//! (a ccache launcher moved behind the wrapper); a plain Makefile with the stamp recipe. ccache
//! runs with its default configuration (CCACHE_DIR in the test's directory); assertions are on
//! ccache's counters, the objects rebuilt and the funcmaps of the results.

use std::path::{Path, PathBuf};
use std::process::Command;

use sqtt_e2e::package::{
    ccache_stats, clean_env, compiled, text, CacheStats, Install, Project, Route,
};
use sqtt_e2e::toolchain::{hipcc, lane_arches, plugin_path, repo_root, workdir};

/// The kernel of the wrapper's tests: tests/cmake-project's, a marker scope around a barrier, so
/// barrier markers change its funcmap.
fn kernel_source() -> PathBuf {
    repo_root().join("tests/cmake-project/app.cpp")
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// `(user rows, point rows)` of every code object of `file`, by `sqtt-hipcc --check --json`.
fn rows(sqtt_hipcc: &Path, file: &Path, dir: &Path) -> Vec<(u64, u64)> {
    let mut c = Command::new(sqtt_hipcc);
    c.arg("--check").arg("--json").arg(file);
    clean_env(&mut c, dir);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    report["files"][0]["code_objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|co| {
            let count = |kind: &str| {
                co["entries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|e| e["kind"] == kind)
                    .count() as u64
            };
            (count("user"), count("point"))
        })
        .collect()
}

/// The real hipcc's path (the wrapper's tests run a counting one in front of it).
fn real_hipcc() -> PathBuf {
    let h = hipcc();
    if h.components().count() > 1 {
        return h;
    }
    which_on_path(&h).unwrap_or_else(|| panic!("{} is not on PATH", h.display()))
}

fn which_on_path(name: &Path) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The wrapper runs ccache itself (`SQTT_CCACHE=1`): every setting, the plugin and its content
/// hash are on the command line ccache hashes, so each change misses and each return to earlier
/// settings hits, without a `hipcc --version` (or any hipcc) per hit.
#[test]
fn ccache_behind_the_wrapper_misses_on_each_changed_setting_and_hits_on_the_same() {
    assert!(have("ccache"), "ccache is missing: run ci/setup.sh");
    let d = workdir();
    let dir = d.path();
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::copy(kernel_source(), src.join("k.hip")).unwrap();
    // A hipcc that logs each run.
    let log = dir.join("hipcc.log");
    let shim = dir.join("bin/hipcc");
    std::fs::create_dir_all(shim.parent().unwrap()).unwrap();
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real_hipcc().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shim, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // A plugin of our own, to be "rebuilt" below.
    let plugin = dir.join("libsqtt_plugin.so");
    std::fs::copy(plugin_path(), &plugin).unwrap();
    let wrapper = sqtt_e2e::driver::sqtt_hipcc();
    let arch = lane_arches(&["gfx90a"]).remove(0);
    let object = src.join("k.o");
    let compile = |cwd: &Path, extra: &[&str], vars: &[(&str, &str)]| -> Vec<u8> {
        let _ = std::fs::remove_file(&object);
        let mut c = Command::new(&wrapper);
        clean_env(&mut c, dir);
        c.current_dir(cwd)
            .env("SQTT_HIPCC", &shim)
            .env("SQTT_PLUGIN", &plugin)
            .env("SQTT_CCACHE", "1")
            .args(extra)
            .arg(format!("--offload-arch={arch}"))
            .arg("-c")
            .arg(src.join("k.hip"))
            .arg("-o")
            .arg(&object);
        for (k, v) in vars {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        std::fs::read(&object).unwrap()
    };
    let hipcc_runs = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let step = |what: &str, before: CacheStats, hit: bool, runs_before: usize| {
        let now = ccache_stats(dir);
        let want = if hit {
            CacheStats {
                hits: before.hits + 1,
                misses: before.misses,
            }
        } else {
            CacheStats {
                hits: before.hits,
                misses: before.misses + 1,
            }
        };
        assert_eq!(
            now,
            want,
            "{what}: {}",
            if hit { "a hit" } else { "a miss" }
        );
        if hit {
            assert_eq!(hipcc_runs(), runs_before, "{what}: a hit runs no hipcc");
        }
        now
    };
    let barriers = |o: &[u8]| {
        std::fs::write(dir.join("probe.o"), o).unwrap();
        rows(&wrapper, &dir.join("probe.o"), dir)[0].1
    };

    let s = ccache_stats(dir);
    let plain = compile(&src, &[], &[]);
    let s = step("the first compile", s, false, 0);
    assert_eq!(barriers(&plain), 0);
    let runs = hipcc_runs();
    assert!(
        !std::fs::read_to_string(&log).unwrap().contains("--version") || runs > 0,
        "the clang major is asked once"
    );
    let again = compile(&src, &[], &[]);
    let s = step("the same settings", s, true, runs);
    assert_eq!(again, plain);

    let with_var = compile(&src, &[], &[("SQTT_INSTRUMENT_BARRIERS", "1")]);
    let s = step("SQTT_INSTRUMENT_BARRIERS=1", s, false, 0);
    let points = barriers(&with_var);
    assert!(points > 0, "barrier markers");

    // The same settings from sqtt.toml: the same command line, a hit.
    std::fs::write(src.join("sqtt.toml"), "instrument_barriers = true\n").unwrap();
    let runs = hipcc_runs();
    let from_file = compile(&src, &[], &[]);
    let s = step("the same settings from sqtt.toml", s, true, runs);
    assert_eq!(from_file, with_var);

    // An edit of sqtt.toml.
    std::fs::write(
        src.join("sqtt.toml"),
        "instrument_barriers = true\nmem_barrier = \"asm\"\n",
    )
    .unwrap();
    compile(&src, &[], &[]);
    let s = step("an edit of sqtt.toml", s, false, 0);

    // --sqtt-config=PATH, then an edit of that file: its settings, never the first ones cached.
    let other = dir.join("other.toml");
    std::fs::write(&other, "instrument_barriers = false\n").unwrap();
    let config = format!("--sqtt-config={}", other.display());
    let runs = hipcc_runs();
    let named = compile(&src, &[&config], &[]);
    let s = step("--sqtt-config naming the first settings", s, true, runs);
    assert_eq!(named, plain);
    std::fs::write(&other, "instrument_barriers = true\n").unwrap();
    let runs = hipcc_runs();
    let edited = compile(&src, &[&config], &[]);
    let s = step("an edit of the --sqtt-config file", s, true, runs);
    assert_eq!(barriers(&edited), points);

    // A new sqtt.toml nearer the working directory.
    std::fs::write(src.join("sub/sqtt.toml"), "[scope]\ncu = 0x1\n").unwrap();
    compile(&src.join("sub"), &[], &[]);
    let s = step("a new sqtt.toml nearer", s, false, 0);

    // A plugin with other content but the same size and time: ccache's own check of
    // -fplugin files (mtime and size) would hit; the content hash on the command line misses.
    let runs = hipcc_runs();
    compile(&src, &[], &[]);
    let s = step("the same plugin", s, true, runs);
    let mtime = std::fs::metadata(&plugin).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&plugin).unwrap();
    let at = comment_offset(&bytes);
    bytes[at] ^= 0x20; // a letter's case in .comment: the plugin loads as before
    std::fs::write(&plugin, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&plugin)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    compile(&src, &[], &[]);
    step(
        "a plugin with other content, same size and time",
        s,
        false,
        0,
    );
}

/// The offset of a letter in the plugin's `.comment` section (compiler names, read by no one).
fn comment_offset(elf: &[u8]) -> usize {
    use object::{Object, ObjectSection};
    let file = object::File::parse(elf).unwrap();
    let comment = file.section_by_name(".comment").expect(".comment");
    let (start, size) = comment.file_range().unwrap();
    let data = &elf[start as usize..(start + size) as usize];
    start as usize
        + data
            .iter()
            .position(u8::is_ascii_alphabetic)
            .expect("a letter in .comment")
}

/// CMake's HIP language, the whole project instrumented by `sqtt_instrument(DIRECTORY)` at its
/// top, ccache as the HIP compiler launcher (so it runs after `--sqtt-launch`), with Ninja and
/// with Make: the settings stamp rebuilds both HIP objects after a new sqtt.toml above the build,
/// its removal, and a variable at build time, and nothing when nothing changed; ccache misses on
/// settings it has not seen and hits on settings it has, whichever way they were given; the
/// host-only tool is never launched or checked.
#[test]
fn hip_language_project_rebuilds_what_a_setting_changes_with_ninja_and_make() {
    assert!(have("ccache"), "ccache is missing: run ci/setup.sh");
    assert!(have("ninja"), "ninja is missing: run ci/setup.sh");
    let d = workdir();
    let dir = d.path();
    let install = Install::new(dir);
    let hip_objects = vec!["app.cpp.o".to_string(), "scale.cpp.o".to_string()];
    let none = Vec::<String>::new();
    let toml = dir.join("sqtt.toml");
    for (generator, build) in [("Ninja", "build-ninja"), ("Unix Makefiles", "build-make")] {
        let p = Project::new(
            &install,
            dir,
            "cmake-project",
            build,
            generator,
            Route::HipLanguage,
        );
        let conf = p.configure(&["-DCMAKE_HIP_COMPILER_LAUNCHER=ccache"]);
        for want in [
            "sqtt_instrument(hosttool): no device code",
            "sqtt_instrument(app): HIP sources launched",
            "sqtt_instrument(kernels): HIP sources launched",
        ] {
            assert!(conf.contains(want), "{want}: {conf}");
        }
        let app = p.file("app");
        let rows_now = || rows(&install.sqtt_hipcc(), &app, dir);
        // A build: the objects it compiled and ccache's (hits, misses) meanwhile.
        let build = |vars: &[(&str, &str)]| {
            let before = ccache_stats(dir);
            let out = p.build(vars);
            (compiled(&out), ccache_stats(dir).since(before), out)
        };

        let (objects, (hits, misses), out) = build(&[]);
        let mut all = hip_objects.clone();
        all.push("hosttool.cpp.o".into());
        all.sort();
        assert_eq!(objects, all, "{generator}: the first build: {out}");
        // (Two compiles through ccache: new to it, or, for Make, Ninja's.)
        assert_eq!(hits + misses, 2, "{generator}");
        for line in out.lines().filter(|l| l.contains(" -c ")) {
            assert_eq!(
                line.contains("--sqtt-launch ccache"),
                !line.contains("hosttool"),
                "{generator}: HIP compiles only are launched, ccache after: {line}"
            );
        }
        assert!(
            !out.lines()
                .any(|l| l.contains("--check") && l.contains("hosttool")),
            "{generator}: the host-only tool is not checked: {out}"
        );
        let first = rows_now();
        assert_eq!(
            first,
            [(1, 0), (1, 0)],
            "{generator}: both translation units"
        );
        assert_eq!(build(&[]).0, none, "{generator}: no change");

        // A new sqtt.toml above the build directory: rebuilt, a miss for settings never seen
        // (Make's compile lines differ from Ninja's: there, Ninja's objects may hit).
        std::fs::write(&toml, "instrument_barriers = true\n").unwrap();
        let (objects, (hits, misses), out) = build(&[]);
        assert_eq!(objects, hip_objects, "{generator}: a new sqtt.toml: {out}");
        if generator == "Ninja" {
            assert!(
                out.contains("settings-"),
                "ninja explains: the stamp: {out}"
            );
            assert_eq!((hits, misses), (0, 2), "unseen settings miss");
        }
        let barriers = rows_now();
        assert!(
            barriers.len() == 2
                && barriers
                    .iter()
                    .all(|&(user, points)| user == 1 && points > 0),
            "{generator}: barrier rows in both: {barriers:?}"
        );
        assert_eq!(build(&[]).0, none, "{generator}");

        // Back to the first settings: rebuilt, both from the cache.
        std::fs::remove_file(&toml).unwrap();
        let (objects, delta, out) = build(&[]);
        assert_eq!(
            objects, hip_objects,
            "{generator}: sqtt.toml removed: {out}"
        );
        assert_eq!(delta, (2, 0), "{generator}: settings seen before hit");
        assert_eq!(rows_now(), first);

        // The barriers from a variable at build time: the sqtt.toml build's objects.
        let barrier_var = [("SQTT_INSTRUMENT_BARRIERS", "1")];
        let (objects, delta, out) = build(&barrier_var);
        assert_eq!(objects, hip_objects, "{generator}: a variable: {out}");
        assert_eq!(
            delta,
            (2, 0),
            "{generator}: the same settings from a variable hit"
        );
        assert_eq!(rows_now(), barriers);
        assert_eq!(build(&barrier_var).0, none, "{generator}");
        assert_eq!(build(&[]).0, hip_objects, "{generator}: the variable gone");
    }
}

/// sqtt-hipcc as the C++ compiler with the package: a ccache launcher is moved behind the
/// wrapper (SQTT_CCACHE), so it hashes what the wrapper adds; the stamp rebuilds after a
/// variable, a new sqtt.toml and its removal, with Ninja and Make.
#[test]
fn classic_route_with_the_package_and_a_ccache_launcher_never_serves_stale_objects() {
    assert!(have("ccache"), "ccache is missing: run ci/setup.sh");
    let d = workdir();
    let dir = d.path();
    let install = Install::new(dir);
    let hip_objects = vec!["app.cpp.o".to_string(), "scale.cpp.o".to_string()];
    for (generator, build) in [
        ("Ninja", "classic-ninja"),
        ("Unix Makefiles", "classic-make"),
    ] {
        let p = Project::new(
            &install,
            dir,
            "cmake-project",
            build,
            generator,
            Route::Classic,
        );
        let conf = p.configure(&["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]);
        assert!(conf.contains("ccache runs behind sqtt-hipcc"), "{conf}");
        let out = p.build(&[]);
        assert!(compiled(&out).contains(&"app.cpp.o".to_string()), "{out}");
        let app = p.file("app");
        assert_eq!(rows(&install.sqtt_hipcc(), &app, dir), [(1, 0), (1, 0)]);
        let out = p.build(&[]);
        assert_eq!(compiled(&out), Vec::<String>::new(), "{generator}: {out}");

        let before = ccache_stats(dir);
        let out = p.build(&[("SQTT_INSTRUMENT_BARRIERS", "1")]);
        let rebuilt = compiled(&out);
        for o in &hip_objects {
            assert!(
                rebuilt.contains(o),
                "{generator}: a variable rebuilds {o}: {out}"
            );
        }
        let after = ccache_stats(dir);
        if generator == "Ninja" {
            // Settings ccache has not seen: no hit (Make's run may hit on Ninja's objects).
            assert_eq!(after.hits, before.hits, "{generator}: no stale hit");
        }
        let barriers = rows(&install.sqtt_hipcc(), &app, dir);
        assert!(
            barriers.len() == 2 && barriers.iter().all(|&(_, points)| points > 0),
            "{barriers:?}"
        );

        // The same settings from a new sqtt.toml: rebuilt (the stamp names the file), and hits.
        let toml = dir.join("sqtt.toml");
        std::fs::write(&toml, "instrument_barriers = true\n").unwrap();
        let before = ccache_stats(dir);
        let out = p.build(&[]);
        assert!(compiled(&out).contains(&"app.cpp.o".to_string()), "{out}");
        let after = ccache_stats(dir);
        assert_eq!(
            after.misses, before.misses,
            "{generator}: settings seen before"
        );
        assert!(after.hits > before.hits, "{generator}");
        std::fs::remove_file(&toml).unwrap();
        let out = p.build(&[]);
        assert!(compiled(&out).contains(&"app.cpp.o".to_string()), "{out}");
        assert_eq!(rows(&install.sqtt_hipcc(), &app, dir), [(1, 0), (1, 0)]);
    }
}

/// A plain Makefile, the stamp recipe of docs/driver.md: objects depend on a stamp rewritten by
/// `sqtt-hipcc --sqtt-stamp` only when the settings change; ccache behind the wrapper.
#[test]
fn makefile_with_the_settings_stamp_rebuilds_after_a_variable_and_only_then() {
    assert!(have("ccache"), "ccache is missing: run ci/setup.sh");
    let d = workdir();
    let dir = d.path();
    // tests/cmake-project's two translation units: app (main) and the kernel it launches.
    std::fs::copy(kernel_source(), dir.join("k.hip")).unwrap();
    std::fs::copy(
        repo_root().join("tests/cmake-project/kernels/scale.cpp"),
        dir.join("main.hip"),
    )
    .unwrap();
    let wrapper = sqtt_e2e::driver::sqtt_hipcc();
    let arch = lane_arches(&["gfx90a"]).remove(0);
    std::fs::write(
        dir.join("Makefile"),
        format!(
            "HIPCC = {w}\n\
             app: k.o main.o\n\t$(HIPCC) --offload-arch={arch} $^ -o $@\n\
             %.o: %.hip sqtt.stamp\n\t$(HIPCC) --offload-arch={arch} -c $< -o $@\n\
             sqtt.stamp: FORCE\n\t@$(HIPCC) --sqtt-stamp=$@\n\
             FORCE:\n",
            w = wrapper.display()
        ),
    )
    .unwrap();
    let make = |vars: &[(&str, &str)]| -> String {
        let mut c = Command::new("make");
        clean_env(&mut c, dir);
        c.current_dir(dir)
            .env("SQTT_PLUGIN", plugin_path())
            .env("SQTT_CCACHE", "1");
        for (k, v) in vars {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        text(&o)
    };
    let objects = vec!["k.o".to_string(), "main.o".to_string()];
    assert_eq!(compiled(&make(&[])), objects);
    assert_eq!(
        compiled(&make(&[])),
        Vec::<String>::new(),
        "nothing changed"
    );
    let before = ccache_stats(dir);
    assert_eq!(
        compiled(&make(&[("SQTT_INSTRUMENT_BARRIERS", "1")])),
        objects
    );
    assert_eq!(ccache_stats(dir).hits, before.hits, "no stale hit");
    let with_barriers = rows(&wrapper, &dir.join("app"), dir)[0];
    assert!(
        with_barriers.0 == 1 && with_barriers.1 > 0,
        "{with_barriers:?}"
    );
    assert_eq!(
        compiled(&make(&[("SQTT_INSTRUMENT_BARRIERS", "1")])),
        Vec::<String>::new()
    );
    let before = ccache_stats(dir);
    assert_eq!(compiled(&make(&[])), objects);
    assert_eq!(
        ccache_stats(dir).hits,
        before.hits + 2,
        "the first settings hit"
    );
    assert_eq!(rows(&wrapper, &dir.join("app"), dir)[0], (1, 0));
}

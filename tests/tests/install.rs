//! install.sh as packagers and users run it, and the CMake package it installs: a staged install
//! (DESTDIR) with its manifest, the man pages of both commands (EXIT STATUS, ENVIRONMENT, FILES)
//! and their completions, `--uninstall` removing exactly what the manifest lists, the package's
//! version file and imported targets, and builds that never name the user's cache.

use std::path::Path;
use std::process::{Command, Output};

use sqtt_e2e::package::{clean_env, from_dir, text, Install, Project, Route};
use sqtt_e2e::toolchain::{llvm_major, repo_root, workdir};

fn install_sh(dir: &Path, args: &[&str], vars: &[(&str, &Path)]) -> Output {
    let mut c = Command::new("bash");
    c.arg(repo_root().join("install.sh")).args(args);
    clean_env(&mut c, dir);
    for (k, v) in vars {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// Every file below `root`, relative to it.
fn files_below(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// `man -l PAGE` as plain text, when man is installed.
fn rendered(page: &Path) -> Option<String> {
    let o = Command::new("man")
        .arg("-l")
        .arg(page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "200")
        .output()
        .ok()?;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn staged_install_lists_every_file_and_uninstall_removes_exactly_those() {
    let d = workdir();
    let dir = d.path();
    let from = from_dir(dir);
    let stage = dir.join("stage");
    let prefix = "/opt/sqtt-test";
    let o = install_sh(
        dir,
        &["--prefix", prefix, "--from", from.to_str().unwrap()],
        &[("DESTDIR", &stage)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let root = stage.join("opt/sqtt-test");
    let manifest = std::fs::read_to_string(root.join("share/sqtt-hipcc/install-manifest.txt"))
        .expect("the manifest");
    let listed: Vec<&str> = manifest.lines().collect();
    // The manifest names the installed paths (without DESTDIR), every file but itself.
    let mut on_disk = files_below(&root);
    on_disk.retain(|f| f != "share/sqtt-hipcc/install-manifest.txt");
    let mut expected: Vec<String> = listed
        .iter()
        .map(|l| {
            l.strip_prefix(&format!("{prefix}/"))
                .unwrap_or_else(|| panic!("{l} is not below {prefix}"))
                .to_string()
        })
        .collect();
    expected.sort();
    assert_eq!(on_disk, expected);
    let tools = from.join("sqtt").is_file();
    let mut want = vec![
        "bin/sqtt-hipcc".to_string(),
        format!("lib/sqtt-hipcc/llvm-{}/libsqtt_plugin.so", llvm_major()),
        "lib/cmake/SqttHipcc/SqttHipccConfig.cmake".into(),
        "lib/cmake/SqttHipcc/SqttHipccConfigVersion.cmake".into(),
        "include/sqtt-hipcc/markers.hpp".into(),
        "include/sqtt-hipcc/sqtt_m0_record.h".into(),
        "include/sqtt-hipcc/amd_sqtt_marker/sqtt_marker.h".into(),
        "share/man/man1/sqtt-hipcc.1".into(),
        "share/man/man1/sqtt-hipcc-check.1".into(),
        "share/bash-completion/completions/sqtt-hipcc".into(),
        "share/zsh/site-functions/_sqtt-hipcc".into(),
        "share/fish/vendor_completions.d/sqtt-hipcc.fish".into(),
        "share/doc/sqtt-hipcc/driver.md".into(),
        "share/doc/sqtt-hipcc/sqtt.toml.example".into(),
    ];
    if tools {
        want.extend(
            [
                "bin/sqtt",
                "share/man/man1/sqtt.1",
                "share/man/man1/sqtt-flamegraph.1",
                "share/man/man1/sqtt-funcmap.1",
                "share/bash-completion/completions/sqtt",
                "share/zsh/site-functions/_sqtt",
                "share/fish/vendor_completions.d/sqtt.fish",
            ]
            .map(String::from),
        );
    }
    for w in &want {
        assert!(expected.contains(w), "{w} not installed: {expected:?}");
    }
    let version =
        std::fs::read_to_string(root.join("lib/cmake/SqttHipcc/SqttHipccConfigVersion.cmake"))
            .unwrap();
    assert!(
        version.contains(&format!(
            "set(PACKAGE_VERSION \"{}\")",
            env!("CARGO_PKG_VERSION")
        )),
        "{version}"
    );

    // The man pages: NAME says what each is, and the sections beyond the options.
    if let Some(page) = rendered(&root.join("share/man/man1/sqtt-hipcc.1")) {
        for section in [
            "EXIT STATUS",
            "ENVIRONMENT",
            "FILES",
            "SEE ALSO",
            "SQTT_CCACHE",
            "--sqtt-stamp",
        ] {
            assert!(
                page.contains(section),
                "sqtt-hipcc(1) lacks {section}: {page}"
            );
        }
        let check = rendered(&root.join("share/man/man1/sqtt-hipcc-check.1")).unwrap();
        let name = check
            .lines()
            .skip_while(|l| l.trim() != "NAME")
            .nth(1)
            .unwrap();
        assert!(
            name.contains("sqtt-hipcc-check - Print and check the .sqtt_funcmap"),
            "{name}"
        );
        assert!(check.contains("EXIT STATUS"), "{check}");
        if tools {
            let sqtt = rendered(&root.join("share/man/man1/sqtt.1")).unwrap();
            assert!(
                sqtt.contains("EXIT STATUS") && sqtt.contains("FILES"),
                "{sqtt}"
            );
        }
    }
    let bash =
        std::fs::read_to_string(root.join("share/bash-completion/completions/sqtt-hipcc")).unwrap();
    for o in [
        "--sqtt-config",
        "--sqtt-launch",
        "--sqtt-stamp",
        "--sqtt-flags",
    ] {
        assert!(bash.contains(o), "{o}");
    }

    // Uninstall: what the manifest lists goes, with the directories it leaves empty; another
    // package's file in a shared directory stays.
    let foreign = root.join("share/man/man1/other.1");
    std::fs::write(&foreign, ".TH other 1\n").unwrap();
    let o = install_sh(
        dir,
        &["--uninstall", "--prefix", prefix],
        &[("DESTDIR", &stage)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(files_below(&root), ["share/man/man1/other.1"]);
    assert!(!root.join("lib").exists() && !root.join("bin").exists());
    // Nothing installed there any more: an error naming the manifest.
    let o = install_sh(
        dir,
        &["--uninstall", "--prefix", prefix],
        &[("DESTDIR", &stage)],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("install-manifest.txt"), "{}", text(&o));
}

#[test]
fn bad_install_arguments_install_nothing() {
    let d = workdir();
    let dir = d.path();
    let stage = dir.join("stage");
    for (args, says) in [
        (&["--frobnicate"][..], "unknown argument '--frobnicate'"),
        (&["--llvm", "14", "--prefix", "/p"][..], "--llvm '14'"),
        (
            &["--from", "/nonexistent", "--prefix", "/p"][..],
            "no executable /nonexistent/sqtt-hipcc",
        ),
        (&["--from", "/nonexistent"][..], "give --prefix too"),
        (&["--uninstall"][..], "--uninstall needs --prefix"),
    ] {
        let o = install_sh(dir, args, &[("DESTDIR", &stage)]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
        assert!(!stage.exists(), "{args:?} wrote something");
    }
}

/// `find_package(SqttHipcc VERSION)` as CMake users expect it, and the imported targets: a
/// target not instrumented compiles markers.hpp from the prefix through SqttHipcc::markers.
#[test]
fn package_version_requests_and_imported_targets() {
    let d = workdir();
    let dir = d.path();
    let install = Install::new(dir);
    let proj = dir.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(
        proj.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.21)\n\
         project(p LANGUAGES CXX)\n\
         find_package(SqttHipcc ${WANT} REQUIRED)\n\
         add_executable(uses_markers main.cpp)\n\
         target_link_libraries(uses_markers PRIVATE SqttHipcc::markers)\n\
         get_target_property(loc SqttHipcc::sqtt-hipcc IMPORTED_LOCATION)\n\
         message(STATUS \"sqtt-hipcc is ${loc}, version ${SqttHipcc_VERSION}\")\n",
    )
    .unwrap();
    std::fs::write(
        proj.join("main.cpp"),
        "#include \"markers.hpp\"\nint main() { return 0; }\n",
    )
    .unwrap();
    let configure = |want: &str, build: &str| {
        let mut c = Command::new("cmake");
        clean_env(&mut c, dir);
        c.args(["-G", "Ninja", "-S"])
            .arg(&proj)
            .arg("-B")
            .arg(dir.join(build))
            .arg(format!("-DCMAKE_PREFIX_PATH={}", install.prefix.display()))
            .arg(format!("-DWANT={want}"));
        c.output().unwrap()
    };
    let v = env!("CARGO_PKG_VERSION");
    for (i, want) in ["", "0", "0.1", v, "0.1...0.9"].iter().enumerate() {
        let o = configure(want, &format!("ok{i}"));
        assert_eq!(o.status.code(), Some(0), "{want:?}: {}", text(&o));
        assert!(
            text(&o).contains(&format!(
                "sqtt-hipcc is {}, version {v}",
                install.sqtt_hipcc().display()
            )),
            "{}",
            text(&o)
        );
    }
    for (i, want) in ["0.2", "1.0", "0.2...0.9", "0.1.1"].iter().enumerate() {
        let o = configure(want, &format!("bad{i}"));
        assert_ne!(o.status.code(), Some(0), "{want:?} accepted: {}", text(&o));
        assert!(
            text(&o).contains(&format!(
                "SqttHipccConfig.cmake, version: {}",
                env!("CARGO_PKG_VERSION")
            )),
            "{want:?}: {}",
            text(&o)
        );
    }
    let mut c = Command::new("ninja");
    clean_env(&mut c, dir);
    c.arg("-C").arg(dir.join("ok0")).arg("-v");
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("{}/include/sqtt-hipcc", install.prefix.display())),
        "markers.hpp from the prefix: {}",
        text(&o)
    );
}

/// A build with the package names no path of the user's cache: the include directory is the
/// installed one, on the command line and in the build files, so removing the cache breaks
/// nothing.
#[test]
fn package_builds_never_name_the_users_cache() {
    let d = workdir();
    let dir = d.path();
    let install = Install::new(dir);
    let p = Project::new(
        &install,
        dir,
        "cmake-project",
        "build",
        "Ninja",
        Route::HipLanguage,
    );
    p.configure(&[]);
    let out = p.build(&[]);
    let cache = dir.join("sqtt-cache");
    let include = format!("-I{}/include/sqtt-hipcc", install.prefix.display());
    let mut c = Command::new(install.sqtt_hipcc());
    clean_env(&mut c, dir);
    let o = c.arg("--sqtt-include-dir").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("{}/include/sqtt-hipcc", install.prefix.display()),
        "the installed headers, not the cache's"
    );
    assert!(out.contains(&include), "{out}");
    for f in ["build.ninja", "CMakeCache.txt"] {
        let text = std::fs::read_to_string(p.file(f)).unwrap();
        assert!(
            !text.contains(&cache.display().to_string()),
            "{f} names the cache {}",
            cache.display()
        );
    }
    // Without the cache (cleaned by the user), a rebuild still finds everything.
    let _ = std::fs::remove_dir_all(&cache);
    let src = repo_root().join("tests/cmake-project/app.cpp");
    std::fs::remove_file(p.file("CMakeFiles/app.dir/app.cpp.o")).unwrap();
    let out = p.build(&[]);
    assert!(
        out.contains(&src.display().to_string()),
        "app.cpp rebuilt: {out}"
    );
}

//! Builds with the installed package and the build tools as installed: an install made by
//! install.sh (`--from` the binaries under test), CMake projects configured against it on the
//! lane's toolchain (CMake's HIP language or sqtt-hipcc as the C++ compiler, Ninja or Make), and
//! ccache with its default configuration in a directory of the test's own. Every command gets a
//! clean environment: no `SQTT_*`, `HIPCC_*` or `CCACHE_*` variable but those a test sets, and
//! HOME, the wrapper's cache and ccache's directory inside the test's directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::driver::sqtt_hipcc;
use crate::toolchain::{
    device_lib_dir, hipcc, lane_arches, llvm_major, llvm_tool, plugin_path, repo_root,
};

/// An install of sqtt-hipcc (and sqtt, when it is built) with the plugin under test.
pub struct Install {
    pub prefix: PathBuf,
}

impl Install {
    /// `install.sh --prefix DIR/prefix --from DIR/from`, DIR/from holding the built binaries and
    /// the plugin under test as `lib/sqtt-hipcc/llvm-<N>/`.
    pub fn new(dir: &Path) -> Install {
        let from = from_dir(dir);
        let prefix = dir.join("prefix");
        let mut c = Command::new("bash");
        c.arg(repo_root().join("install.sh"))
            .arg("--prefix")
            .arg(&prefix)
            .arg("--from")
            .arg(&from);
        clean_env(&mut c, dir);
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "install.sh: {}", text(&o));
        Install { prefix }
    }

    pub fn sqtt_hipcc(&self) -> PathBuf {
        self.prefix.join("bin/sqtt-hipcc")
    }
}

/// `DIR/from`, a build for `install.sh --from`: the binaries under test (sqtt when it is built)
/// and the plugin under test as `lib/sqtt-hipcc/llvm-<N>/libsqtt_plugin.so`.
pub fn from_dir(dir: &Path) -> PathBuf {
    let from = dir.join("from");
    let plugins = from.join(format!("lib/sqtt-hipcc/llvm-{}", llvm_major()));
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(sqtt_hipcc(), from.join("sqtt-hipcc")).unwrap();
    let sqtt = sqtt_hipcc().with_file_name("sqtt");
    if sqtt.is_file() {
        std::fs::copy(&sqtt, from.join("sqtt")).unwrap();
    }
    std::fs::copy(plugin_path(), plugins.join("libsqtt_plugin.so")).unwrap();
    from
}

/// stdout then stderr.
pub fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// The environment of every command of these tests, in `dir`: the lane's hipcc as the real one,
/// nothing else of ours, ccache's and the wrapper's directories (and HOME) in `dir`.
pub fn clean_env(c: &mut Command, dir: &Path) {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("SQTT_") || k.starts_with("HIPCC_") || k.starts_with("CCACHE_") {
            c.env_remove(k);
        }
    }
    c.env("SQTT_HIPCC", hipcc())
        .env("SQTT_CACHE_DIR", dir.join("sqtt-cache"))
        .env("CCACHE_DIR", dir.join("ccache"))
        .env("HOME", dir.join("home"));
}

/// ccache's counters for the cache in `dir` (`ccache --print-stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
}

impl CacheStats {
    /// (hits, misses) since `before`.
    pub fn since(self, before: CacheStats) -> (u64, u64) {
        (self.hits - before.hits, self.misses - before.misses)
    }
}

pub fn ccache_stats(dir: &Path) -> CacheStats {
    let mut c = Command::new("ccache");
    c.arg("--print-stats");
    clean_env(&mut c, dir);
    let o = c.output().expect("ccache is missing: run ci/setup.sh");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let get = |k: &str| -> u64 {
        out.lines()
            .filter_map(|l| l.split_once('\t'))
            .filter(|(n, _)| *n == k)
            .map(|(_, v)| v.trim().parse::<u64>().unwrap())
            .sum()
    };
    CacheStats {
        hits: get("direct_cache_hit") + get("preprocessed_cache_hit"),
        misses: get("cache_miss"),
    }
}

/// How a project's compiles are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// CMake's HIP language (clang), `--sqtt-launch` as its launcher.
    HipLanguage,
    /// sqtt-hipcc as the C++ compiler, sources compiled as C++ by it.
    Classic,
    /// A plain clang++ as the C++ compiler, the sources compiled with `-x hip` (tests/cmake-hip's
    /// SQTT_CXX_ROUTE), `--sqtt-launch` as its launcher.
    PlainClangCxx,
}

/// A CMake project of tests/ configured against an [`Install`] in a build directory of its own.
pub struct Project<'a> {
    pub install: &'a Install,
    /// The test's directory (environment, caches).
    pub dir: PathBuf,
    pub source: PathBuf,
    pub build: PathBuf,
    pub generator: &'static str,
    pub route: Route,
    pub arch: String,
}

impl<'a> Project<'a> {
    /// `tests/<name>` built in `dir/<build>`, for the lane's first arch (SQTT_TEST_ARCHES, else
    /// gfx90a).
    pub fn new(
        install: &'a Install,
        dir: &Path,
        name: &str,
        build: &str,
        generator: &'static str,
        route: Route,
    ) -> Project<'a> {
        Project {
            install,
            dir: dir.to_path_buf(),
            source: repo_root().join("tests").join(name),
            build: dir.join(build),
            generator,
            route,
            arch: lane_arches(&["gfx90a"]).remove(0),
        }
    }

    /// A command with this project's environment, `vars` set on top.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>, vars: &[(&str, &str)]) -> Command {
        let mut c = Command::new(program);
        clean_env(&mut c, &self.dir);
        // Debian's HIP CMake packages live under lib/x86_64-linux-gnu/cmake, where CMake's HIP
        // language does not look for hip-lang's dependencies.
        c.env("CMAKE_PREFIX_PATH", "/usr/lib/x86_64-linux-gnu/cmake")
            .env("HCC_AMDGPU_TARGET", &self.arch);
        for (k, v) in vars {
            c.env(k, v);
        }
        c
    }

    /// Configures the build directory; returns CMake's output.
    pub fn configure(&self, options: &[&str]) -> String {
        self.configure_with_hip_flags("", options)
    }

    /// [`Project::configure`] with `hip_flags` first in CMAKE_HIP_FLAGS (the HIP language).
    pub fn configure_with_hip_flags(&self, hip_flags: &str, options: &[&str]) -> String {
        let mut c = self.command("cmake", &[]);
        c.args(["-G", self.generator, "-S"])
            .arg(&self.source)
            .arg("-B")
            .arg(&self.build)
            .arg(format!(
                "-DCMAKE_PREFIX_PATH={}",
                self.install.prefix.display()
            ))
            .args(options);
        let clangxx = llvm_tool("clang++");
        let devlibs = device_lib_dir().display().to_string();
        match self.route {
            Route::HipLanguage => {
                // A ROCm root whose lib/cmake/hip-lang is Debian's (CMake 3.25 looks only there).
                let shim = self.dir.join("rocm-root");
                if !shim.exists() {
                    std::fs::create_dir_all(shim.join("lib/cmake")).unwrap();
                    std::os::unix::fs::symlink(
                        "/usr/lib/x86_64-linux-gnu/cmake/hip-lang",
                        shim.join("lib/cmake/hip-lang"),
                    )
                    .unwrap();
                }
                c.arg(format!("-DCMAKE_HIP_COMPILER={clangxx}"))
                    .arg(format!("-DCMAKE_HIP_COMPILER_ROCM_ROOT={}", shim.display()))
                    .arg(format!("-DCMAKE_HIP_ARCHITECTURES={}", self.arch))
                    .arg(format!(
                        "-DCMAKE_HIP_FLAGS={hip_flags} --rocm-path=/usr \
                         --hip-device-lib-path={devlibs}"
                    ));
            }
            Route::PlainClangCxx => {
                c.arg("-DSQTT_CXX_ROUTE=ON")
                    .arg(format!("-DCMAKE_CXX_COMPILER={clangxx}"))
                    .arg(format!(
                        "-DSQTT_ROCM_FLAGS=--offload-arch={};--rocm-path=/usr",
                        self.arch
                    ))
                    .arg(format!("-DSQTT_DEVICE_LIB_PATH={devlibs}"));
            }
            Route::Classic => {
                c.arg(format!(
                    "-DCMAKE_CXX_COMPILER={}",
                    self.install.sqtt_hipcc().display()
                ))
                .arg("-DSQTT_CLASSIC=ON")
                .arg(format!("-DSQTT_ARCH={}", self.arch));
            }
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "cmake: {}", text(&o));
        text(&o)
    }

    /// Builds (verbose, with Ninja's explanations) with `vars` in the environment; returns the
    /// build tool's output.
    pub fn build(&self, vars: &[(&str, &str)]) -> String {
        let o = self.try_build(vars);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(0), "{}: {out}", self.generator);
        out
    }

    pub fn try_build(&self, vars: &[(&str, &str)]) -> Output {
        let mut c = self.command("cmake", vars);
        c.arg("--build").arg(&self.build).arg("--verbose");
        if self.generator == "Ninja" {
            c.args(["--", "-d", "explain"]);
        }
        c.output().unwrap()
    }

    pub fn file(&self, rel: &str) -> PathBuf {
        self.build.join(rel)
    }
}

/// The objects a build compiled (`-o X.o` of its compile lines, generator-independent).
pub fn compiled(build_output: &str) -> Vec<String> {
    let mut objects: Vec<String> = build_output
        .lines()
        .filter(|l| l.contains(" -c ") && !l.contains("--check"))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words
                .iter()
                .position(|w| *w == "-o")
                .and_then(|i| words.get(i + 1))
                .map(|o| {
                    Path::new(o)
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
        })
        .collect();
    objects.sort();
    objects.dedup();
    objects
}

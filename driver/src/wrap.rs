//! The wrapper: its own options, then classify, load settings, plan ([`crate::plan`]) and
//! carry the plan out: run hipcc through a [`Launcher`], check its outputs.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sqtt_codeobj::FuncmapState;
use sqtt_config::{Located, Settings};

use crate::args::{classify, expand_response_files, take_plugin_options, PluginOptions};
use crate::error::{Error, NamedBy};
use crate::launch::{Launcher, Status};
use crate::locate::{self, Configured};
use crate::own::{split_own, FlagsFormat, FlagsRequest, OwnOptions};
use crate::plan::{self, DepFileInputs, OutputCheck, Plan, Request, Toolchain};

fn getenv(k: &str) -> Option<OsString> {
    std::env::var_os(k)
}

fn env_string(k: &str) -> Option<String> {
    std::env::var_os(k).map(|v| v.to_string_lossy().into_owned())
}

fn working_directory() -> Result<PathBuf, Error> {
    std::env::current_dir().map_err(Error::WorkingDirectory)
}

/// The configuration in effect: `--sqtt-config`, `SQTT_CONFIG`, or the nearest trusted
/// sqtt.toml found upward; a file found and not used is said on stderr.
fn configuration(own: &OwnOptions, cwd: &Path) -> Located {
    let located = sqtt_config::locate_config(own.config.as_deref(), cwd, &env_string);
    for ignored in &located.ignored {
        sqtt_files::output::stderr_line(format_args!("sqtt-hipcc: warning: {ignored}"));
    }
    located
}

/// The settings: the configuration, the variables over it, the user's plugin options over both.
fn load_settings(
    located: &Located,
    options: &PluginOptions,
) -> Result<Settings, sqtt_config::ConfigError> {
    Settings::located(located, env_string, |o| options.value(o))
}

/// The hipcc the settings name, and who named it.
fn configured_hipcc(settings: &Settings, located: &Located) -> Option<Configured> {
    let path = settings.hipcc.clone()?;
    let origin = sqtt_config::Origin::of(&sqtt_config::setting::HIPCC, located.path(), &env_string);
    Some(Configured {
        path,
        by: NamedBy::Setting(origin),
    })
}

/// `sqtt-hipcc ARGS...`: an own option, or hipcc run as [`Plan::wrap`] says. Returns how the
/// compiler ended (or success for own options); `launcher` starts the processes.
pub fn main(argv: Vec<String>, launcher: &mut dyn Launcher) -> Result<Status, Error> {
    let (own, args) = split_own(&argv)?;
    if own.help {
        print(&crate::own::help())?;
    } else if own.version {
        print(&format!("{}\n", env!("CARGO_PKG_VERSION")))?;
    } else if own.include_dir {
        print(&format!(
            "{}\n",
            locate::markers_include_dir(&getenv)?.display()
        ))?;
    } else if own.toolchain {
        print_toolchain(&own, launcher)?;
    } else if let Some(shell) = &own.completions {
        crate::docs::completions(shell)?;
    } else if let Some(page) = &own.man {
        crate::docs::man(page.as_deref())?;
    } else if let Some(request) = &own.flags {
        print_flags(&own, request, launcher)?;
    } else if let Some(file) = &own.stamp {
        write_stamp(&own, file, &args, launcher)?;
    } else if own.launch {
        return launch(&own, &args, launcher);
    } else {
        plan::check_not_nested(&env_string)?;
        let cwd = working_directory()?;
        let taken = take_plugin_options(&args).map_err(Error::PluginOption)?;
        // Classification comes first: it decides how much of the rest happens at all.
        let step = classify(&expand_response_files(&args, &cwd).map_err(Error::ResponseFiles)?);
        let located = configuration(&own, &cwd);
        let settings = load_settings(&located, &taken);
        let req = Request {
            args: &args,
            plugin_options: &taken,
            step: &step,
            settings: &settings,
            verbose: own.verbose || plan::verbose_var(&env_string),
            cwd: &cwd,
            config_file: located.path(),
            env: &env_string,
        };
        let plan = Plan::wrap(&req, &mut Host { launcher })?;
        return execute(&plan, launcher);
    }
    Ok(Status::SUCCESS)
}

/// Carries a plan out: notes and trace, the command, then (when it succeeded) the funcmap
/// check, the dependency file and `--version`'s lines. A failed command's status is returned
/// as it is, its outputs untouched.
pub fn execute(plan: &Plan, launcher: &mut dyn Launcher) -> Result<Status, Error> {
    init_trace(plan.verbose);
    for note in &plan.notes {
        sqtt_files::output::stderr_line(note);
    }
    if plan.verbose {
        for line in &plan.trace {
            tracing::info!("{line}");
        }
    }
    let cannot_run = |source| Error::Launch {
        program: plan.command.program.clone(),
        source,
    };
    if !plan.wait {
        return launcher.exec(&plan.command).map_err(cannot_run);
    }
    let before = plan.check.as_ref().map(|c| snapshot(&c.outputs));
    let status = launcher.run(&plan.command).map_err(cannot_run)?;
    if !status.success() {
        return Ok(status);
    }
    if let (Some(check), Some(before)) = (&plan.check, before) {
        outputs_written(&plan.command.program, &check.outputs, &before)?;
        post_check(check, plan.verbose)?;
    }
    if let Some(dep) = &plan.dep_file {
        add_dep_file_inputs(dep)?;
    }
    if let Some(settings_line) = &plan.identity {
        print_plugin_identity(&plan.command.program, settings_line, launcher)?;
    }
    Ok(status)
}

/// The machine as the plan sees it: hipcc, the plugin and the headers, found by `locate`
/// (which asks hipcc for its clang's version through `launcher`, once per hipcc).
struct Host<'a> {
    launcher: &'a mut dyn Launcher,
}

impl Toolchain for Host<'_> {
    fn compiler(&mut self, configured: Option<&Configured>) -> Result<PathBuf, Error> {
        locate::find_hipcc(configured, &getenv)
    }

    fn plugin(&mut self, compiler: &Path) -> Result<PathBuf, Error> {
        // An explicit SQTT_PLUGIN is checked before the compiler runs at all; otherwise the
        // plugin is chosen by the compiler's clang major (cached).
        let explicit = getenv(sqtt_config::var::PLUGIN).is_some_and(|v| !v.is_empty());
        let major = if explicit {
            None
        } else {
            Some(locate::hipcc_clang_major(compiler, &getenv, self.launcher)?)
        };
        let plugin = locate::find_plugin(&getenv, major)?;
        check_llvm_major(&plugin, compiler, self.launcher)?;
        Ok(plugin)
    }

    fn plugin_hash(&mut self, plugin: &Path) -> Result<String, Error> {
        Ok(locate::plugin_info_cached(plugin, &getenv)?.sha256)
    }

    fn include_dir(&mut self) -> Result<PathBuf, Error> {
        locate::markers_include_dir(&getenv)
    }

    fn cache(&mut self, configured: &Path) -> Result<PathBuf, Error> {
        locate::find_cache(configured, &getenv)
    }
}

/// `--sqtt-verbose` / `SQTT_VERBOSE`: the trace goes through `tracing` to stderr, message only
/// (no time, level or target), and nothing is installed when it is off (silent by default).
fn init_trace(verbose: bool) {
    if verbose {
        let _ = tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .without_time()
            .with_level(false)
            .with_target(false)
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .try_init();
    }
}

fn check_llvm_major(
    plugin: &Path,
    compiler: &Path,
    launcher: &mut dyn Launcher,
) -> Result<(), Error> {
    let info = locate::plugin_info_cached(plugin, &getenv)?;
    let Some(plugin_major) = info.llvm_major else {
        return Err(Error::PluginLlvmUnknown(plugin.to_path_buf()));
    };
    let clang_major = locate::hipcc_clang_major(compiler, &getenv, launcher)?;
    if plugin_major != clang_major {
        let via = env_string("HIP_CLANG_PATH")
            .filter(|v| !v.is_empty())
            .map(|v| format!(" (HIP_CLANG_PATH={v})"))
            .unwrap_or_default();
        return Err(Error::PluginLlvmMismatch {
            plugin: plugin.to_path_buf(),
            plugin_major,
            compiler: compiler.to_path_buf(),
            via,
            clang_major,
        });
    }
    Ok(())
}

/// `--sqtt-flags[=[FORMAT:]CLANG]`: the flags that instrument a plain `clang++ -x hip` compile:
/// the plugin built for CLANG's major (default: hipcc's clang), the markers include directory
/// and `-DSQTT_ENABLED=1`, as one line of shell words or a CMake list. The settings are not
/// among them: these flags are fixed when a build is configured, while sqtt.toml may change
/// after; the plugin reads them from sqtt.toml itself, or from the command line `--sqtt-launch`
/// gives it.
fn print_flags(
    own: &OwnOptions,
    request: &FlagsRequest,
    launcher: &mut dyn Launcher,
) -> Result<(), Error> {
    let cwd = working_directory()?;
    let located = configuration(own, &cwd);
    let settings = load_settings(&located, &PluginOptions::default())?;
    let compiler = match &request.clang {
        // A bare name is looked up on PATH, as for `hipcc` in sqtt.toml.
        Some(c) => Some(Configured {
            path: c.to_path_buf(),
            by: NamedBy::FlagsOption,
        }),
        None => configured_hipcc(&settings, &located),
    };
    let compiler = locate::find_hipcc(compiler.as_ref(), &getenv)?;
    let major = locate::hipcc_clang_major(&compiler, &getenv, launcher)?;
    let mut flags = Vec::new();
    if settings.enabled {
        let plugin = locate::find_plugin(&getenv, Some(major))?;
        let info = locate::plugin_info_cached(&plugin, &getenv)?;
        if info.llvm_major != Some(major) {
            return Err(Error::PluginNotForLlvm { plugin, major });
        }
        flags.push("-Xarch_device".to_string());
        flags.push(format!("-fpass-plugin={}", plugin.display()));
    }
    flags.push(format!(
        "-I{}",
        locate::markers_include_dir(&getenv)?.display()
    ));
    if settings.enabled {
        flags.push("-DSQTT_ENABLED=1".into());
    }
    let line = match request.format {
        FlagsFormat::Shell => flags
            .iter()
            .map(|f| shell_word(f))
            .collect::<Vec<_>>()
            .join(" "),
        FlagsFormat::Cmake => flags
            .iter()
            .map(|f| f.replace(';', "\\;"))
            .collect::<Vec<_>>()
            .join(";"),
    };
    print(&format!("{line}\n"))
}

/// Prints the text of an own option on stdout; a write error (a full disk) is
/// [`Error::Stdout`], a closed pipe too (`main` ends quietly on that).
pub fn print(text: &str) -> Result<(), Error> {
    sqtt_files::output::print(text).map_err(Error::Stdout)
}

/// A word as a POSIX shell reads it back: as it is when nothing in it is special to a shell (so
/// `-fpass-plugin=/p/x.so` stays unquoted for `$(...)` and CMAKE_HIP_FLAGS), else quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=+:,./@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        shell_words::quote(word).into_owned()
    }
}

/// `--sqtt-stamp=FILE [COMPILER]`: what a compile here would get, written to FILE only when it
/// differs from what FILE holds. A build step that runs on every build (the CMake package's)
/// thus moves FILE's time, and rebuilds the objects that depend on it, only when something
/// changed: the settings (from the sqtt.toml found here and the SQTT_* variables), which
/// sqtt.toml, the compiler (COMPILER, as `--sqtt-launch` gets it, else the wrapper's hipcc), the
/// plugin for its LLVM and the plugin's content.
fn write_stamp(
    own: &OwnOptions,
    file: &Path,
    args: &[String],
    launcher: &mut dyn Launcher,
) -> Result<(), Error> {
    if args.len() > 1 {
        return Err(Error::StampArguments(args.to_vec()));
    }
    let cwd = working_directory()?;
    let located = configuration(own, &cwd);
    let settings = load_settings(&located, &PluginOptions::default())?;
    let compiler = match args.first() {
        Some(c) => Some(Configured {
            path: PathBuf::from(c),
            by: NamedBy::LaunchCommand,
        }),
        None => configured_hipcc(&settings, &located),
    };
    let compiler = locate::find_hipcc(compiler.as_ref(), &getenv)?;
    let config = located
        .path()
        .map(|c| std::fs::canonicalize(c).unwrap_or_else(|_| cwd.join(c)))
        .map_or("none".into(), |c| c.display().to_string());
    let mut text = format!(
        "sqtt-hipcc {}\nconfig {config}\nenabled {}\nsettings {}\ncompiler {}\n",
        env!("CARGO_PKG_VERSION"),
        u8::from(settings.enabled),
        settings.fingerprint(),
        compiler.display()
    );
    if settings.enabled {
        let mut host = Host { launcher };
        let plugin = host.plugin(&compiler)?;
        let hash = host.plugin_hash(&plugin)?;
        text.push_str(&format!("plugin {} sha256:{hash}\n", plugin.display()));
    }
    if std::fs::read(file).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(());
    }
    let write = || -> std::io::Result<()> {
        let mut tmp = file.as_os_str().to_owned();
        tmp.push(format!(".tmp{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, &text)?;
        std::fs::rename(&tmp, file).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    };
    write().map_err(|source| Error::Stamp {
        path: file.to_path_buf(),
        source,
    })
}

/// `--sqtt-launch [CACHE] COMPILER ARGS...`: runs COMPILER (under CACHE) with what the wrapper
/// would add to the step (sqtt.toml found from the working directory, `SQTT_*` over it); the
/// arguments are classified with the wrapper's table, so `-fgpu-rdc` is handled as the wrapper
/// handles it ([`Plan::launch`]).
fn launch(own: &OwnOptions, cmd: &[String], launcher: &mut dyn Launcher) -> Result<Status, Error> {
    let Some((launched, rest)) = plan::split_launched(cmd) else {
        return Err(Error::LaunchNeedsCommand);
    };
    let cwd = working_directory()?;
    let taken = take_plugin_options(rest).map_err(Error::PluginOption)?;
    let located = configuration(own, &cwd);
    // Bad settings stop the launch before anything else is looked at.
    let settings = Ok(load_settings(&located, &taken)?);
    let step = classify(&expand_response_files(rest, &cwd).map_err(Error::ResponseFiles)?);
    let req = Request {
        args: rest,
        plugin_options: &taken,
        step: &step,
        settings: &settings,
        verbose: own.verbose || plan::verbose_var(&env_string),
        cwd: &cwd,
        config_file: located.path(),
        env: &env_string,
    };
    let plan = Plan::launch(&launched, &req, &mut Host { launcher })?;
    execute(&plan, launcher)
}

/// `--sqtt-toolchain`: what the wrapper finds, as `key=value` lines on stdout.
fn print_toolchain(own: &OwnOptions, launcher: &mut dyn Launcher) -> Result<(), Error> {
    let cwd = working_directory()?;
    let located = configuration(own, &cwd);
    let settings = load_settings(&located, &PluginOptions::default())?;
    let hipcc = locate::find_hipcc(configured_hipcc(&settings, &located).as_ref(), &getenv)?;
    let major = locate::hipcc_clang_major(&hipcc, &getenv, launcher)?;
    let llvm_dir = locate::rocm_llvm_dir(Some(&hipcc), &getenv)
        .or_else(|| Some(PathBuf::from(format!("/usr/lib/llvm-{major}"))).filter(|d| d.is_dir()));
    let plugin = locate::find_plugin(&getenv, Some(major)).ok().filter(|p| {
        locate::plugin_info(p)
            .ok()
            .and_then(|i| i.llvm_major)
            .is_some_and(|m| m == major)
    });
    let show_path = |p: Option<&Path>| p.map_or(String::new(), |p| p.display().to_string());
    print(&format!(
        "hipcc={}\nllvm_major={major}\nllvm_dir={}\nplugin_feature={}\nplugin={}\n",
        hipcc.display(),
        show_path(llvm_dir.as_deref()),
        locate::plugin_feature(major),
        show_path(plugin.as_deref())
    ))
}

/// Adds the sqtt.toml in effect and the plugin to the first rule of the dependency file, so
/// Make and Ninja rebuild the object when either changes.
fn add_dep_file_inputs(dep: &DepFileInputs) -> Result<(), Error> {
    let extra: Vec<PathBuf> = dep
        .inputs
        .iter()
        .filter(|p| p.is_file())
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect();
    if extra.is_empty() {
        return Ok(());
    }
    let Ok(text) = std::fs::read_to_string(&dep.file) else {
        return Ok(()); // hipcc wrote none (e.g. -MD with several sources): nothing to extend
    };
    // The first rule ends at the first newline not escaped by a backslash.
    let bytes = text.as_bytes();
    let end = (0..bytes.len())
        .find(|&i| bytes[i] == b'\n' && (i == 0 || bytes[i - 1] != b'\\'))
        .unwrap_or(bytes.len());
    let mut added = String::new();
    for p in &extra {
        added.push_str(" \\\n  ");
        added.push_str(&make_escaped(&p.to_string_lossy()));
    }
    let new = format!("{}{}{}", &text[..end], added, &text[end..]);
    std::fs::write(&dep.file, new).map_err(|source| Error::DepFile {
        path: dep.file.clone(),
        source,
    })
}

/// A path as clang writes it into a Make-style dependency file (clang's DependencyFile.cpp,
/// which follows GCC): `$` doubled, `#` after a backslash, a space after a backslash and as many
/// more backslashes as precede it. Make and Ninja both read that form back.
pub fn make_escaped(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut backslashes = 0;
    for c in path.chars() {
        match c {
            '$' => out.push('$'),
            '#' => out.push('\\'),
            ' ' => out.extend(std::iter::repeat_n('\\', backslashes + 1)),
            _ => {}
        }
        out.push(c);
        backslashes = if c == '\\' { backslashes + 1 } else { 0 };
    }
    out
}

/// What identifies the contents of a file: device, inode, size and modification and change
/// times (a compiler writes a new file, or at least gives it new times).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// The identity of each file before a step; `None`: no regular file.
fn snapshot(paths: &[PathBuf]) -> Vec<Option<Identity>> {
    use std::os::unix::fs::MetadataExt;
    paths
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| Identity {
                    dev: m.dev(),
                    ino: m.ino(),
                    size: m.size(),
                    mtime: (m.mtime(), m.mtime_nsec()),
                    ctime: (m.ctime(), m.ctime_nsec()),
                })
        })
        .collect()
}

/// After a successful step: every output it writes is there, and not the file that was there
/// before (an output that is not a regular file, a device or FIFO, is not judged).
fn outputs_written(
    program: &Path,
    outputs: &[PathBuf],
    before: &[Option<Identity>],
) -> Result<(), Error> {
    let after = snapshot(outputs);
    for (i, out) in outputs.iter().enumerate() {
        let why = if std::fs::symlink_metadata(out).is_err() {
            "did not write"
        } else if after[i].is_some() && after[i] == before[i] {
            "left unchanged"
        } else {
            continue;
        };
        return Err(Error::OutputNotWritten {
            program: program.to_path_buf(),
            path: out.clone(),
            why,
        });
    }
    Ok(())
}

/// `--version`'s two lines after hipcc's: the plugin (path and content hash) and the settings.
fn print_plugin_identity(
    hipcc: &Path,
    settings_line: &str,
    launcher: &mut dyn Launcher,
) -> Result<(), Error> {
    let major = locate::hipcc_clang_major(hipcc, &getenv, launcher).ok();
    let line = match locate::find_plugin(&getenv, major) {
        Ok(p) => match locate::plugin_info_cached(&p, &getenv) {
            Ok(info) => format!(
                "sqtt-hipcc {}: plugin {} sha256:{}",
                env!("CARGO_PKG_VERSION"),
                p.display(),
                info.sha256
            ),
            Err(e) => format!(
                "sqtt-hipcc {}: plugin {} unreadable: {e}",
                env!("CARGO_PKG_VERSION"),
                p.display()
            ),
        },
        Err(_) => format!("sqtt-hipcc {}: plugin not found", env!("CARGO_PKG_VERSION")),
    };
    print(&format!("{line}\n{settings_line}\n"))
}

/// Checks the funcmaps of the device code a successful step wrote; a rejected output is moved
/// aside, so make and Ninja do not take it as up to date.
fn post_check(check: &OutputCheck, verbose: bool) -> Result<(), Error> {
    let mut problems = Vec::new();
    for out in &check.outputs {
        if !out.is_file() {
            continue;
        }
        let cos = match sqtt_codeobj::read_path(out) {
            Ok(c) => c,
            Err(e) => {
                problems.push(format!(
                    "cannot read the device code of {}: {e}",
                    out.display()
                ));
                continue;
            }
        };
        for co in &cos {
            let what = format!("{} [{}] ({})", out.display(), co.arch, co.location);
            match &co.funcmap {
                FuncmapState::NotLinked => {}
                FuncmapState::Missing => {
                    if check.require_funcmap && co.kernels().next().is_some() {
                        problems.push(format!(
                            "{what}: no {} section: the pass plugin did not run on this device \
                             code",
                            sqtt_codeobj::SECTION_NAME
                        ));
                    }
                }
                state => {
                    for p in state.problem_texts() {
                        problems.push(format!("{what}: invalid funcmap: {p}"));
                    }
                }
            }
        }
        if verbose {
            tracing::info!(
                "sqtt-hipcc: checked {} code object(s) of {}",
                cos.len(),
                out.display()
            );
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    for out in check.outputs.iter().filter(|o| o.is_file()) {
        let mut aside = out.clone().into_os_string();
        aside.push(".sqtt-rejected");
        let aside = PathBuf::from(aside);
        // Never left in place looking valid: moved aside, else deleted.
        match std::fs::rename(out, &aside) {
            Ok(()) => problems.push(format!(
                "the output was moved to {} (inspect it with `sqtt-hipcc --check {}`)",
                aside.display(),
                aside.display()
            )),
            Err(e) => match std::fs::remove_file(out) {
                Ok(()) => problems.push(format!(
                    "the output {} was deleted: it cannot be moved to {} ({e})",
                    out.display(),
                    aside.display()
                )),
                Err(e2) => problems.push(format!(
                    "the rejected output {} is still there: it cannot be moved to {} ({e}) or \
                     deleted ({e2}); delete it before building again",
                    out.display(),
                    aside.display()
                )),
            },
        }
    }
    Err(Error::FuncmapCheck { problems })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::fake::{Mode, Recorder};
    use crate::launch::Invocation;

    fn v(s: &str) -> Vec<String> {
        shell_words::split(s).unwrap()
    }

    /// A plan for `argv` in `dir`, with hipcc at `dir/hipcc` and a plugin file in `dir`.
    fn plan_in(dir: &Path, argv: &str) -> Plan {
        struct InDir<'a>(&'a Path);
        impl Toolchain for InDir<'_> {
            fn compiler(&mut self, _: Option<&Configured>) -> Result<PathBuf, Error> {
                Ok(self.0.join("hipcc"))
            }
            fn plugin(&mut self, _: &Path) -> Result<PathBuf, Error> {
                let p = self.0.join(locate::PLUGIN_FILE);
                std::fs::write(&p, b"plugin").unwrap();
                Ok(p)
            }
            fn plugin_hash(&mut self, _: &Path) -> Result<String, Error> {
                Ok("0123456789abcdef".into())
            }
            fn include_dir(&mut self) -> Result<PathBuf, Error> {
                Ok(self.0.join("include"))
            }
            fn cache(&mut self, configured: &Path) -> Result<PathBuf, Error> {
                Ok(configured.to_path_buf())
            }
        }
        let args = v(argv);
        let step = classify(&args);
        let settings = Ok(Settings::default());
        let taken = take_plugin_options(&args).unwrap();
        let req = Request {
            args: &args,
            plugin_options: &taken,
            step: &step,
            settings: &settings,
            verbose: false,
            cwd: dir,
            config_file: None,
            env: &|_| None,
        };
        Plan::wrap(&req, &mut InDir(dir)).unwrap()
    }

    #[test]
    fn steps_with_nothing_left_to_do_hand_the_process_over() {
        let d = tempfile::tempdir().unwrap();
        for argv in ["-v", "-E k.hip", "-S k.hip", "-fgpu-rdc -c k.hip"] {
            let plan = plan_in(d.path(), argv);
            for status in [Status::SUCCESS, Status::Exited(3), Status::Signaled(9)] {
                let mut fake = Recorder::ending(status);
                assert_eq!(execute(&plan, &mut fake).unwrap(), status, "{argv}");
                assert_eq!(fake.calls, [(Mode::Exec, plan.command.clone())], "{argv}");
            }
        }
    }

    #[test]
    fn a_failed_compile_passes_its_status_on_and_leaves_the_outputs_alone() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("k.o");
        let plan = plan_in(d.path(), "-c k.hip -o k.o");
        assert!(plan.wait);
        for status in [Status::Exited(1), Status::Exited(77), Status::Signaled(11)] {
            // An old output, not a code object: not checked, not moved.
            std::fs::write(&out, b"old").unwrap();
            let mut fake = Recorder::ending(status);
            assert_eq!(execute(&plan, &mut fake).unwrap(), status);
            assert_eq!(fake.calls, [(Mode::Run, plan.command.clone())]);
            assert_eq!(std::fs::read(&out).unwrap(), b"old");
        }
    }

    /// A compiler that succeeds writing `out`, which holds no code object.
    fn writing_no_code_object(out: &Path) -> Recorder {
        let written = out.to_path_buf();
        Recorder::doing(move |_: &Invocation| {
            std::fs::write(&written, b"not a code object")?;
            Ok(Status::SUCCESS)
        })
    }

    #[test]
    fn a_rejected_output_is_moved_aside_and_fails_with_exit_1() {
        let d = tempfile::tempdir().unwrap();
        let plan = plan_in(d.path(), "-c k.hip -o k.o");
        let out = d.path().join("k.o");
        let mut fake = writing_no_code_object(&out);
        let e = execute(&plan, &mut fake).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("cannot read the device code of {}", out.display())),
            "{text}"
        );
        assert!(text.contains("k.o.sqtt-rejected"), "{text}");
        assert!(!out.exists());
        assert_eq!(
            std::fs::read(d.path().join("k.o.sqtt-rejected")).unwrap(),
            b"not a code object"
        );
    }

    #[test]
    fn a_successful_step_that_wrote_no_output_fails_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let hipcc = d.path().join("hipcc");
        for (argv, out) in [("k.hip -o app", "app"), ("-c a.hip b.hip", "b.o")] {
            let plan = plan_in(d.path(), argv);
            if out == "b.o" {
                std::fs::write(d.path().join("a.o"), b"").unwrap();
            }
            let a = d.path().join("a.o");
            // hipcc writes a.o (a new file) but not b.o.
            let mut fake = Recorder::doing(move |_: &Invocation| {
                let _ = std::fs::remove_file(&a);
                std::fs::write(&a, b"new")?;
                Ok(Status::SUCCESS)
            });
            let e = execute(&plan, &mut fake).unwrap_err();
            assert_eq!(e.exit_code(), 1, "{argv}");
            assert_eq!(
                e.to_string(),
                format!(
                    "{} exited with status 0 but did not write {}; the step failed",
                    hipcc.display(),
                    d.path().join(out).display()
                ),
                "{argv}"
            );
        }
    }

    #[test]
    fn a_successful_step_that_left_its_output_unchanged_fails_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let plan = plan_in(d.path(), "-c k.hip -o k.o");
        let out = d.path().join("k.o");
        std::fs::write(&out, b"stale object").unwrap();
        let mut fake = Recorder::ending(Status::SUCCESS);
        let e = execute(&plan, &mut fake).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(
            e.to_string().ends_with(&format!(
                "exited with status 0 but left unchanged {}; the step failed",
                out.display()
            )),
            "{e}"
        );
        assert_eq!(std::fs::read(&out).unwrap(), b"stale object", "left alone");
        // An output that is no regular file (-o /dev/null in a configure test) is not judged:
        // here a FIFO, which nobody opens.
        std::fs::remove_file(&out).unwrap();
        let c = std::ffi::CString::new(out.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut fake = Recorder::ending(Status::SUCCESS);
        assert_eq!(execute(&plan, &mut fake).unwrap(), Status::SUCCESS);
    }

    #[test]
    fn a_rejected_output_is_deleted_when_it_cannot_be_moved_aside() {
        let d = tempfile::tempdir().unwrap();
        let plan = plan_in(d.path(), "-c k.hip -o k.o");
        let out = d.path().join("k.o");
        // `k.o.sqtt-rejected` is a directory that is not empty: no rename can replace it.
        let aside = d.path().join("k.o.sqtt-rejected");
        std::fs::create_dir_all(aside.join("x")).unwrap();
        let mut fake = writing_no_code_object(&out);
        let e = execute(&plan, &mut fake).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(!out.exists(), "the rejected output is not left in place");
        assert!(aside.join("x").is_dir(), "the directory is left alone");
        let text = e.to_string();
        assert!(
            text.contains(&format!(
                "the output {} was deleted: it cannot be moved to {} (",
                out.display(),
                aside.display()
            )),
            "{text}"
        );
    }

    #[test]
    fn a_compiler_that_cannot_start_is_an_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        for argv in ["-c k.hip", "-v"] {
            let plan = plan_in(d.path(), argv);
            let mut fake = Recorder::doing(|_: &Invocation| {
                Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
            });
            let e = execute(&plan, &mut fake).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            let hipcc = d.path().join("hipcc");
            assert!(
                e.to_string()
                    .starts_with(&format!("cannot run {}: ", hipcc.display())),
                "{e}"
            );
        }
    }

    #[test]
    fn paths_are_escaped_in_dependency_files_as_clang_escapes_them() {
        // clang's own test (dependency-gen-escaping.c) and a directory named `p $x #2`.
        for (path, escaped) in [
            ("    .h", r"\ \ \ \ .h"),
            ("$$.h", "$$$$.h"),
            ("##.h", r"\#\#.h"),
            (r"a\b\#c\ d.h", r"a\b\\#c\\\ d.h"),
            ("/w/p $x #2/sqtt.toml", r"/w/p\ $$x\ \#2/sqtt.toml"),
            ("/plain/path", "/plain/path"),
        ] {
            assert_eq!(make_escaped(path), escaped, "{path}");
        }
    }

    #[test]
    fn the_dependency_file_gets_the_plugin_after_a_successful_compile() {
        let base = tempfile::tempdir().unwrap();
        let d = base.path().join("p $x #2");
        std::fs::create_dir(&d).unwrap();
        let d = tempfile::TempDir::new_in(&d).unwrap();
        let dep = d.path().join("k.d");
        let plan = plan_in(d.path(), "-S k.hip -MD -MF k.d -o k.s");
        let rule = "k.o: k.hip \\\n  a.h\nother: x\n";
        let written = dep.clone();
        let mut fake = Recorder::doing(move |_: &Invocation| {
            std::fs::write(&written, rule)?;
            Ok(Status::SUCCESS)
        });
        assert_eq!(execute(&plan, &mut fake).unwrap(), Status::SUCCESS);
        let plugin = std::fs::canonicalize(d.path().join(locate::PLUGIN_FILE)).unwrap();
        let plugin = plugin.to_str().unwrap();
        assert!(plugin.contains("/p $x #2/"), "{plugin}");
        assert_eq!(
            std::fs::read_to_string(&dep).unwrap(),
            format!(
                "k.o: k.hip \\\n  a.h \\\n  {}\nother: x\n",
                plugin
                    .replace(' ', "\\ ")
                    .replace('$', "$$")
                    .replace('#', "\\#")
            )
        );
        // A failed compile leaves it as the compiler wrote it.
        std::fs::write(&dep, rule).unwrap();
        let mut fake = Recorder::ending(Status::Exited(1));
        assert_eq!(execute(&plan, &mut fake).unwrap(), Status::Exited(1));
        assert_eq!(std::fs::read_to_string(&dep).unwrap(), rule);
    }
}

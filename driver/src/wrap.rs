//! The wrapper: classify, load settings, locate hipcc and the plugin, run hipcc, check.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use sqtt_codeobj::FuncmapState;
use sqtt_config::Settings;

use crate::args::{classify, expand_response_files, Classified, StepKind};
use crate::locate::{self, DEPTH_VAR};
use crate::Fail;

/// The wrapper's own options (`--sqtt-*`), removed before hipcc sees the arguments.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct OwnOptions {
    pub config: Option<PathBuf>,
    pub verbose: bool,
    pub help: bool,
    /// `--sqtt-include-dir`: print the directory of markers.hpp (for `-E` by hand, IDEs).
    pub include_dir: bool,
    /// `--sqtt-toolchain`: print the hipcc, its clang major, the LLVM directory and the plugin
    /// the wrapper would use (what install.sh builds for).
    pub toolchain: bool,
    /// `--sqtt-flags[=CLANG]`: print the flags that instrument a plain `clang++ -x hip`.
    pub flags: Option<Option<PathBuf>>,
    /// `--sqtt-launch CMD...`: run CMD with the resolved settings exported (a compiler launcher
    /// for the CMake HIP-language route).
    pub launch: bool,
    /// `--sqtt-completions=SHELL`.
    pub completions: Option<String>,
    /// `--sqtt-man[=check]`.
    pub man: Option<Option<String>>,
}

pub const OWN_OPTIONS_HELP: &str = "\
sqtt-hipcc: a drop-in hipcc that builds with SQTT instrumentation

usage: sqtt-hipcc [--sqtt-config=PATH] [--sqtt-verbose] HIPCC-ARGUMENTS...
       sqtt-hipcc --check [--demangle] [--json] [--quiet] [--skip-non-amdgpu] [--require KIND:GLOB]...
                          [--arch GFX] FILE...

Own options (never passed to hipcc):
  --sqtt-config=PATH   use this sqtt.toml (default: SQTT_CONFIG, else sqtt.toml found from the
                       working directory upward)
  --sqtt-verbose       print what the wrapper does on stderr (also SQTT_VERBOSE=1)
  --sqtt-include-dir   print the directory of markers.hpp and exit
  --sqtt-toolchain     print the hipcc found, its clang's LLVM major, that LLVM's directory and
                       the plugin chosen for it (key=value lines), and exit
  --sqtt-flags[=CLANG] print the flags that instrument a plain `CLANG -x hip` compile (plugin
                       for that clang's LLVM major, default hipcc's; include dir; -DSQTT_ENABLED=1)
  --sqtt-launch CMD... run CMD with the resolved settings exported as SQTT_* (a compiler and
                       linker launcher for the flags above, -fgpu-rdc handled as the wrapper
                       does; the CMake package sqtt_instrument() sets both)
  --sqtt-completions=SHELL  print a completion script (bash, zsh, fish, elvish, powershell)
  --sqtt-man[=check]   print the man page sqtt-hipcc(1) (or sqtt-hipcc-check(1))
  --sqtt-help          this text

Settings: sqtt.toml, then SQTT_* variables over it (see docs/driver.md; installed under
PREFIX/share/doc/sqtt-hipcc/ by install.sh --prefix).
";

/// Splits `--sqtt-*` options off the arguments.
pub fn split_own(argv: &[String]) -> Result<(OwnOptions, Vec<String>), Fail> {
    let mut own = OwnOptions::default();
    let mut rest = Vec::with_capacity(argv.len());
    let mut i = 0;
    while i < argv.len() {
        let a = &argv[i];
        i += 1;
        let Some(opt) = a.strip_prefix("--sqtt-") else {
            rest.push(a.clone());
            continue;
        };
        let (name, value) = match opt.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (opt, None),
        };
        match name {
            "config" => {
                let v = match value {
                    Some(v) => v,
                    None => {
                        i += 1;
                        argv.get(i - 1).cloned().ok_or_else(|| {
                            Fail::usage("--sqtt-config needs a path: --sqtt-config=PATH".into())
                        })?
                    }
                };
                if v.is_empty() {
                    return Err(Fail::usage(
                        "--sqtt-config needs a path: --sqtt-config=PATH".into(),
                    ));
                }
                own.config = Some(PathBuf::from(v));
            }
            "verbose" if value.is_none() => own.verbose = true,
            "help" if value.is_none() => own.help = true,
            "include-dir" if value.is_none() => own.include_dir = true,
            "toolchain" if value.is_none() => own.toolchain = true,
            "completions" if value.as_deref().is_some_and(|v| !v.is_empty()) => {
                own.completions = value
            }
            "man" => own.man = Some(value),
            "flags" => own.flags = Some(value.filter(|v| !v.is_empty()).map(PathBuf::from)),
            "launch" if value.is_none() => {
                own.launch = true;
                rest.extend(argv[i..].iter().cloned());
                break;
            }
            _ => {
                return Err(Fail::usage(format!(
                    "unknown option {a}; sqtt-hipcc's own options are --sqtt-config=PATH, \
                     --sqtt-verbose, --sqtt-include-dir, --sqtt-toolchain, --sqtt-flags[=CLANG], \
                     --sqtt-launch CMD..., --sqtt-completions=SHELL, --sqtt-man[=check] and --sqtt-help \
                     (every other option goes to hipcc)"
                )))
            }
        }
    }
    Ok((own, rest))
}

fn getenv(k: &str) -> Option<OsString> {
    std::env::var_os(k)
}

fn env_string(k: &str) -> Option<String> {
    std::env::var_os(k).map(|v| v.to_string_lossy().into_owned())
}

/// The configuration file in effect: `--sqtt-config`, `SQTT_CONFIG`, or sqtt.toml found upward.
fn config_file(own: &OwnOptions, cwd: &Path) -> Option<PathBuf> {
    own.config
        .clone()
        .or_else(|| {
            env_string(sqtt_config::var::CONFIG)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| sqtt_config::find_config_file(cwd))
}

fn load_settings(own: &OwnOptions, cwd: &Path) -> Result<Settings, Fail> {
    let file = config_file(own, cwd);
    Settings::load(file.as_deref(), env_string).map_err(|e| Fail::usage(e.to_string()))
}

pub fn main(argv: Vec<String>) -> Result<i32, Fail> {
    let (own, args) = split_own(&argv)?;
    if own.help {
        print!("{OWN_OPTIONS_HELP}");
        return Ok(0);
    }
    if own.include_dir {
        println!("{}", locate::markers_include_dir(&getenv)?.display());
        return Ok(0);
    }
    if own.toolchain {
        return print_toolchain(&own);
    }
    if let Some(shell) = &own.completions {
        return crate::docs::completions(shell);
    }
    if let Some(page) = &own.man {
        return crate::docs::man(page.as_deref());
    }
    if let Some(clang) = &own.flags {
        return print_flags(&own, clang.as_deref());
    }
    if own.launch {
        return launch(&own, &args);
    }
    if getenv(DEPTH_VAR).is_some_and(|v| !v.is_empty()) {
        return Err(Fail::usage(
            "sqtt-hipcc is calling itself (the hipcc it found runs sqtt-hipcc again); set \
             SQTT_HIPCC to the real hipcc"
                .into(),
        ));
    }
    let cwd = std::env::current_dir()
        .map_err(|e| Fail::usage(format!("cannot read the working directory: {e}")))?;
    // Classification comes first: it decides how much of the rest happens at all.
    let cls = classify(&expand_response_files(&args, &cwd).map_err(Fail::usage)?);
    let verbose_env = env_string(sqtt_config::var::VERBOSE)
        .is_some_and(|v| !v.is_empty() && v != "0" && v != "false" && v != "off");
    match cls.kind {
        // Identity probes and preprocessing (-E, -M, -MM) go to hipcc untouched, as the issue
        // asks: what they print must be hipcc's own.
        StepKind::Probe | StepKind::Preprocess | StepKind::Unknown => {
            // Settings only to find hipcc; a broken sqtt.toml must not break a probe.
            let settings = load_settings(&own, &cwd).ok();
            let configured = settings.as_ref().and_then(|s| s.hipcc.clone()).or_else(|| {
                env_string(sqtt_config::var::HIPCC)
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            });
            let hipcc = locate::find_hipcc(configured.as_deref(), &getenv)?;
            let verbose =
                own.verbose || verbose_env || settings.as_ref().is_some_and(|s| s.verbose);
            init_trace(verbose);
            // Preprocessing (-E, -M, -MM; ccache's preprocessor mode) sees what the compile
            // sees: the markers include directory and SQTT_ENABLED. hipcc's output is
            // otherwise its own.
            let mut extra: Vec<String> = Vec::new();
            if cls.kind == StepKind::Preprocess {
                extra.push(format!(
                    "-I{}",
                    locate::markers_include_dir(&getenv)?.display()
                ));
                if settings.as_ref().is_some_and(|s| s.enabled) {
                    extra.push("-DSQTT_ENABLED=1".into());
                }
            }
            let mut cmd = Command::new(&hipcc);
            cmd.args(&args).args(&extra).env(DEPTH_VAR, "1");
            if verbose {
                let all: Vec<String> = args.iter().chain(&extra).cloned().collect();
                tracing::info!(
                    "sqtt-hipcc: {:?} step, running {}",
                    cls.kind,
                    show(&hipcc, &all)
                );
            }
            if cls.kind == StepKind::Probe && args.iter().any(|a| a == "--help") {
                eprintln!(
                    "sqtt-hipcc: hipcc's help follows; sqtt-hipcc's own options: sqtt-hipcc \
                     --sqtt-help, --check --help"
                );
            }
            if cls.version {
                let status = run(&mut cmd, &hipcc)?;
                if status.success() {
                    print_plugin_identity(&hipcc, settings.as_ref(), config_file(&own, &cwd));
                }
                return Ok(exit_code(status));
            }
            Err(exec(cmd, &hipcc))
        }
        StepKind::Compile | StepKind::Link => {
            let settings = load_settings(&own, &cwd)?;
            for w in settings.warnings() {
                eprintln!("sqtt-hipcc: warning: {w}");
            }
            let verbose = own.verbose || settings.verbose || verbose_env;
            init_trace(verbose);
            let hipcc = locate::find_hipcc(settings.hipcc.as_deref(), &getenv)?;
            // A host-only compile has no device code: the plugin flag would only draw
            // "argument unused" (an error under -Werror).
            let instrument = settings.enabled && cls.kind == StepKind::Compile && !cls.host_only;
            // -fgpu-rdc: compiles leave IDs and the funcmap to the device link, where the
            // plugin runs once over every translation unit (loaded into lld).
            let rdc_link = settings.enabled && cls.rdc && cls.links();
            let mut extra: Vec<String> = Vec::new();
            let mut plugin_used: Option<PathBuf> = None;
            if instrument || rdc_link {
                // An explicit SQTT_PLUGIN is checked before hipcc runs at all; otherwise the
                // plugin is chosen by hipcc's clang major (cached).
                let explicit = getenv(sqtt_config::var::PLUGIN).is_some_and(|v| !v.is_empty());
                let major = if explicit {
                    None
                } else {
                    Some(locate::hipcc_clang_major(&hipcc, &getenv)?)
                };
                let plugin = locate::find_plugin(&getenv, major)?;
                check_llvm_major(&plugin, &hipcc)?;
                if instrument {
                    extra.push("-Xarch_device".into());
                    extra.push(format!("-fpass-plugin={}", plugin.display()));
                    extra.extend(plugin_option_flags(&plugin, &settings));
                }
                if rdc_link {
                    extra.extend(rdc_link_flags(&plugin));
                }
                plugin_used = Some(plugin);
            }
            if cls.kind != StepKind::Link {
                let include = locate::markers_include_dir(&getenv)?;
                extra.push(format!("-I{}", include.display()));
                if settings.enabled {
                    extra.push("-DSQTT_ENABLED=1".into());
                }
            }
            let mut cmd = Command::new(&hipcc);
            cmd.args(&args).args(&extra).env(DEPTH_VAR, "1");
            if settings.enabled {
                for (k, v) in settings.to_env() {
                    cmd.env(k, v);
                }
            }
            if instrument && cls.rdc {
                cmd.env(sqtt_config::var::DEFER_TO_LINK, "1");
            } else {
                cmd.env_remove(sqtt_config::var::DEFER_TO_LINK);
            }
            let outputs = if settings.enabled {
                cls.device_outputs(&cwd)
            } else {
                Vec::new()
            };
            if verbose {
                let all: Vec<String> = args.iter().chain(&extra).cloned().collect();
                tracing::info!(
                    "sqtt-hipcc: {:?} step, instrumentation {}, running {}",
                    cls.kind,
                    if instrument { "on" } else { "off" },
                    show(&hipcc, &all)
                );
                if settings.enabled {
                    tracing::info!("sqtt-hipcc: settings {}", settings.fingerprint());
                }
            }
            let deps = dep_file(&args, &cls, &cwd);
            if outputs.is_empty() && deps.is_none() {
                return Err(exec(cmd, &hipcc));
            }
            let status = run(&mut cmd, &hipcc)?;
            if !status.success() {
                return Ok(exit_code(status));
            }
            // Only code we compiled ourselves must carry a funcmap: objects linked in with it may
            // come from builds without the plugin (their funcmaps, when present, are checked).
            let require = (instrument && cls.objects.is_empty()) || rdc_link;
            post_check(&outputs, require, verbose)?;
            if cls.kind == StepKind::Compile {
                let toml = config_file(&own, &cwd).filter(|p| p.is_file());
                add_dep_file_inputs(&args, &cls, &cwd, toml.as_deref(), plugin_used.as_deref())?;
            }
            Ok(0)
        }
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

fn show(hipcc: &Path, args: &[String]) -> String {
    let mut v = vec![hipcc.display().to_string()];
    v.extend(args.iter().cloned());
    shell_words::join(v)
}

fn check_llvm_major(plugin: &Path, hipcc: &Path) -> Result<(), Fail> {
    let info = locate::plugin_info(plugin)?;
    let Some(plugin_major) = info.llvm_major else {
        return Err(Fail::usage(format!(
            "cannot tell which LLVM the plugin {} was built for (no .sqtt_plugin_info section, \
             no libLLVM-N.so dependency); rebuild it with `cargo build -p sqtt-plugin`",
            plugin.display()
        )));
    };
    let clang_major = locate::hipcc_clang_major(hipcc, &getenv)?;
    if plugin_major != clang_major {
        let via = env_string("HIP_CLANG_PATH")
            .filter(|v| !v.is_empty())
            .map(|v| format!(" (HIP_CLANG_PATH={v})"))
            .unwrap_or_default();
        return Err(Fail::usage(format!(
            "the plugin {} was built for LLVM {plugin_major}, but {}{via} uses clang {clang_major}: \
             clang would crash loading it. Build the plugin for LLVM {clang_major} (`{}`, cargo \
             feature {}) and unset SQTT_PLUGIN or point it at that build, or use a hipcc on \
             clang {plugin_major} (HIP_CLANG_PATH)",
            plugin.display(),
            hipcc.display(),
            locate::plugin_build_command(clang_major),
            locate::plugin_feature(clang_major)
        )));
    }
    Ok(())
}

/// The flags that put the settings on the compile's command line, so that it alone says what is
/// built (build tools and caches see it): every setting as a plugin option,
/// `-Xclang -mllvm -Xclang -sqtt-marker-<setting>=VALUE`, for every cc1 (host and device) and
/// never for lld (a plain `-mllvm` reaches the device lld, which has no plugin loaded). cc1
/// parses `-mllvm` before it loads `-fpass-plugin` libraries up to LLVM 21, so the plugin is
/// also loaded as a clang plugin (`-fplugin=`, loaded first), which registers its options in
/// the host cc1 too. The `SQTT_*` environment stays exported as well (the `-fgpu-rdc` device
/// link reads it).
fn plugin_option_flags(plugin: &Path, settings: &sqtt_config::Settings) -> Vec<String> {
    let mut flags = vec![format!("-fplugin={}", plugin.display())];
    for option in settings.to_plugin_options() {
        flags.extend(["-Xclang".into(), "-mllvm".into(), "-Xclang".into(), option]);
    }
    flags
}

/// `--sqtt-flags[=CLANG]`: one shell-quoted line with the flags that instrument a plain
/// `clang++ -x hip` compile: the plugin built for CLANG's major (default: hipcc's clang), the
/// markers include directory and `-DSQTT_ENABLED=1`. The settings are not among them: these
/// flags are fixed when a build is configured, while sqtt.toml may change after; the plugin
/// reads them from `--sqtt-launch`'s environment (the CMake package sets it as the compiler
/// launcher) or from sqtt.toml itself.
fn print_flags(own: &OwnOptions, clang: Option<&Path>) -> Result<i32, Fail> {
    let cwd = std::env::current_dir()
        .map_err(|e| Fail::usage(format!("cannot read the working directory: {e}")))?;
    let settings = load_settings(own, &cwd)?;
    let major = match clang {
        Some(c) => {
            // A bare name is looked up on PATH, as for `hipcc` in sqtt.toml.
            let c = locate::find_hipcc(Some(c), &getenv)?;
            locate::hipcc_clang_major(&c, &getenv)?
        }
        None => {
            let hipcc = locate::find_hipcc(settings.hipcc.as_deref(), &getenv)?;
            locate::hipcc_clang_major(&hipcc, &getenv)?
        }
    };
    let mut flags = Vec::new();
    if settings.enabled {
        let plugin = locate::find_plugin(&getenv, Some(major))?;
        let info = locate::plugin_info(&plugin)?;
        if info.llvm_major != Some(major) {
            return Err(Fail::usage(format!(
                "the plugin {} is not built for LLVM {major}; build it with `{}`",
                plugin.display(),
                locate::plugin_build_command(major)
            )));
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
    println!("{}", shell_words::join(flags));
    Ok(0)
}

/// `--sqtt-launch CMD...`: runs CMD with the settings the wrapper would export (sqtt.toml found
/// from the working directory, `SQTT_*` over it), so a plugin loaded by `--sqtt-flags` reads
/// exactly what the wrapper would give it. CMD is classified with the wrapper's table, so
/// `-fgpu-rdc` is handled as the wrapper handles it: its compiles leave IDs and the funcmap to
/// the device link, and its links (the CMake package launches them too) load the plugin into
/// the device linker, so IDs are unique across translation units.
fn launch(own: &OwnOptions, cmd: &[String]) -> Result<i32, Fail> {
    let Some((prog, rest)) = cmd.split_first() else {
        return Err(Fail::usage(
            "--sqtt-launch needs a command: sqtt-hipcc --sqtt-launch clang++ ARGS...".into(),
        ));
    };
    let cwd = std::env::current_dir()
        .map_err(|e| Fail::usage(format!("cannot read the working directory: {e}")))?;
    let settings = load_settings(own, &cwd)?;
    let cls = classify(&expand_response_files(rest, &cwd).map_err(Fail::usage)?);
    let mut c = Command::new(prog);
    c.args(rest);
    if settings.enabled && cls.rdc && cls.links() {
        let explicit = getenv(sqtt_config::var::PLUGIN).is_some_and(|v| !v.is_empty());
        let compiler = locate::find_hipcc(Some(Path::new(prog)), &getenv)?;
        let major = if explicit {
            None
        } else {
            Some(locate::hipcc_clang_major(&compiler, &getenv)?)
        };
        let plugin = locate::find_plugin(&getenv, major)?;
        check_llvm_major(&plugin, &compiler)?;
        c.args(rdc_link_flags(&plugin));
    }
    for (k, v) in settings.to_env() {
        c.env(k, v);
    }
    c.env(
        sqtt_config::var::ENABLED,
        if settings.enabled { "1" } else { "0" },
    );
    if settings.enabled && cls.rdc && cls.kind == StepKind::Compile && !cls.host_only {
        c.env(sqtt_config::var::DEFER_TO_LINK, "1");
    } else {
        c.env_remove(sqtt_config::var::DEFER_TO_LINK);
    }
    Err(exec(c, Path::new(prog)))
}

/// The flags that load the plugin into the device linker of an `-fgpu-rdc` link.
fn rdc_link_flags(plugin: &Path) -> [String; 3] {
    [
        "-Xoffload-linker".into(),
        format!("--load-pass-plugin={}", plugin.display()),
        // clang 15 hands -Xoffload-linker to the HIP device lld without marking it used, so it
        // warns "argument unused during compilation" (an error with -Werror) although lld loads
        // the plugin. Silence that one diagnostic.
        "-Qunused-arguments".into(),
    ]
}

/// `--sqtt-toolchain`: what the wrapper finds, as `key=value` lines on stdout.
fn print_toolchain(own: &OwnOptions) -> Result<i32, Fail> {
    let cwd = std::env::current_dir()
        .map_err(|e| Fail::usage(format!("cannot read the working directory: {e}")))?;
    let settings = load_settings(own, &cwd)?;
    let hipcc = locate::find_hipcc(settings.hipcc.as_deref(), &getenv)?;
    let major = locate::hipcc_clang_major(&hipcc, &getenv)?;
    let llvm_dir = locate::rocm_llvm_dir(Some(&hipcc), &getenv)
        .or_else(|| Some(PathBuf::from(format!("/usr/lib/llvm-{major}"))).filter(|d| d.is_dir()));
    let plugin = locate::find_plugin(&getenv, Some(major)).ok().filter(|p| {
        locate::plugin_info(p)
            .ok()
            .and_then(|i| i.llvm_major)
            .is_some_and(|m| m == major)
    });
    let mut out = std::io::stdout().lock();
    let show_path = |p: Option<&Path>| p.map_or(String::new(), |p| p.display().to_string());
    let _ = writeln!(out, "hipcc={}", hipcc.display());
    let _ = writeln!(out, "llvm_major={major}");
    let _ = writeln!(out, "llvm_dir={}", show_path(llvm_dir.as_deref()));
    let _ = writeln!(out, "plugin_feature={}", locate::plugin_feature(major));
    let _ = writeln!(out, "plugin={}", show_path(plugin.as_deref()));
    Ok(0)
}

/// The dependency file hipcc writes for `-MD`/`-MMD` (`-MF FILE`, else the output with `.d`),
/// or None when the step writes none.
fn dep_file(args: &[String], cls: &Classified, cwd: &Path) -> Option<PathBuf> {
    if cls.kind != StepKind::Compile || !args.iter().any(|a| a == "-MD" || a == "-MMD") {
        return None;
    }
    let mut mf = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-MF" {
            mf = it.next().map(PathBuf::from);
        } else if let Some(v) = a.strip_prefix("-MF") {
            mf = Some(PathBuf::from(v));
        }
    }
    let f = mf.or_else(|| {
        cls.output
            .as_ref()
            .or(cls.sources.first())
            .map(|o| o.with_extension("d"))
            .map(|d| match cls.output {
                Some(_) => d,
                None => PathBuf::from(d.file_name().unwrap_or_default()),
            })
    })?;
    Some(cwd.join(f))
}

/// Adds the sqtt.toml in effect and the plugin to the first rule of the dependency file, so
/// Make and Ninja rebuild the object when either changes.
fn add_dep_file_inputs(
    args: &[String],
    cls: &Classified,
    cwd: &Path,
    toml: Option<&Path>,
    plugin: Option<&Path>,
) -> Result<(), Fail> {
    let Some(d) = dep_file(args, cls, cwd) else {
        return Ok(());
    };
    let extra: Vec<PathBuf> = toml
        .into_iter()
        .chain(plugin)
        .map(|p| std::fs::canonicalize(cwd.join(p)).unwrap_or_else(|_| cwd.join(p)))
        .collect();
    if extra.is_empty() {
        return Ok(());
    }
    let Ok(text) = std::fs::read_to_string(&d) else {
        return Ok(()); // hipcc wrote none (e.g. -MD with several sources): nothing to extend
    };
    // The first rule ends at the first newline not escaped by a backslash.
    let bytes = text.as_bytes();
    let end = (0..bytes.len())
        .find(|&i| bytes[i] == b'\n' && (i == 0 || bytes[i - 1] != b'\\'))
        .unwrap_or(bytes.len());
    let mut added = String::new();
    for p in &extra {
        let esc = p.display().to_string().replace(' ', "\\ ");
        added.push_str(&format!(" \\\n  {esc}"));
    }
    let new = format!("{}{}{}", &text[..end], added, &text[end..]);
    std::fs::write(&d, new).map_err(|e| Fail::usage(format!("cannot extend {}: {e}", d.display())))
}

/// Hex SHA-256 of the resolved settings (the `--version` line ccache's `compiler_check` sees).
pub fn settings_hash(settings: &Settings) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(settings.fingerprint().as_bytes());
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn print_plugin_identity(hipcc: &Path, settings: Option<&Settings>, toml: Option<PathBuf>) {
    let major = locate::hipcc_clang_major(hipcc, &getenv).ok();
    let line = match locate::find_plugin(&getenv, major) {
        Ok(p) => match locate::content_hash(&p) {
            Ok(h) => format!(
                "sqtt-hipcc {}: plugin {} sha256:{h}",
                env!("CARGO_PKG_VERSION"),
                p.display()
            ),
            Err(e) => format!(
                "sqtt-hipcc {}: plugin {} unreadable: {e}",
                env!("CARGO_PKG_VERSION"),
                p.display()
            ),
        },
        Err(_) => format!("sqtt-hipcc {}: plugin not found", env!("CARGO_PKG_VERSION")),
    };
    // The settings line: ccache/sccache with `compiler_check = %compiler% --version` miss
    // when a setting changes (and, by the line above, when the plugin is rebuilt).
    let settings_line = match settings {
        Some(s) => format!(
            "sqtt-hipcc settings: sha256:{} (config {})",
            settings_hash(s),
            toml.map_or("none".into(), |p| p.display().to_string())
        ),
        None => "sqtt-hipcc settings: invalid (see the next compile's error)".into(),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = writeln!(out, "{settings_line}");
    let _ = out.flush();
}

fn exec(mut cmd: Command, hipcc: &Path) -> Fail {
    let e = cmd.exec();
    Fail::usage(format!("cannot run {}: {e}", hipcc.display()))
}

fn run(cmd: &mut Command, hipcc: &Path) -> Result<std::process::ExitStatus, Fail> {
    cmd.status()
        .map_err(|e| Fail::usage(format!("cannot run {}: {e}", hipcc.display())))
}

/// hipcc's status as ours: its exit code, or the same signal raised on ourselves.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    if let Some(sig) = status.signal() {
        // SAFETY: resetting a handler to the default and raising a signal have no preconditions.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        return 128 + sig;
    }
    1
}

/// Checks the funcmaps of the device code a successful step wrote.
fn post_check(outputs: &[PathBuf], require_funcmap: bool, verbose: bool) -> Result<(), Fail> {
    let mut problems = Vec::new();
    for out in outputs {
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
                    if require_funcmap && co.kernels().next().is_some() {
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
    // A rejected output must not look up to date to make/ninja: move it aside.
    for out in outputs.iter().filter(|o| o.is_file()) {
        let mut aside = out.clone().into_os_string();
        aside.push(".sqtt-rejected");
        let aside = PathBuf::from(aside);
        match std::fs::rename(out, &aside) {
            Ok(()) => problems.push(format!(
                "the output was moved to {} (inspect it with `sqtt-hipcc --check {}`)",
                aside.display(),
                aside.display()
            )),
            Err(e) => problems.push(format!(
                "cannot move the rejected output {} aside: {e}",
                out.display()
            )),
        }
    }
    Err(Fail::check(problems.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        shell_words::split(s).unwrap()
    }

    #[test]
    fn own_options() {
        let (o, rest) = split_own(&v("--sqtt-config=a.toml -c k.hip --sqtt-verbose")).unwrap();
        assert_eq!(o.config, Some(PathBuf::from("a.toml")));
        assert!(o.verbose);
        assert_eq!(rest, v("-c k.hip"));
        let (o, rest) = split_own(&v("--sqtt-config b.toml -c")).unwrap();
        assert_eq!(o.config, Some(PathBuf::from("b.toml")));
        assert_eq!(rest, v("-c"));
        for bad in [
            "--sqtt-foo",
            "--sqtt-config",
            "--sqtt-config=",
            "--sqtt-verbose=1",
        ] {
            let e = split_own(&v(bad)).unwrap_err();
            assert_eq!(e.code, 2, "{bad}");
        }
        assert!(split_own(&v("--sqtt-foo"))
            .unwrap_err()
            .message
            .contains("--sqtt-foo"));
    }
}

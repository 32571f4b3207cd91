//! What one wrapper call will do, decided without running anything: the command to start (or
//! to hand the process over to), the checks to make on its outputs afterwards, and what to
//! print. `wrap` gathers the inputs (arguments, settings, environment) and carries the plan
//! out; everything here is a function of its inputs, so tests give it argument vectors and
//! read the plan back.

use std::path::{Path, PathBuf};

use sqtt_config::{ConfigError, Origin, Settings};

use crate::args::{Classified, PluginOptions, StepKind};
use crate::error::{Error, NamedBy};
use crate::launch::Invocation;
use crate::locate::Configured;

/// The things a plan needs from the machine, looked up only when the step needs them.
pub trait Toolchain {
    /// The real hipcc (`configured`: `SQTT_HIPCC` or the `hipcc` key), or the compiler named
    /// by `--sqtt-launch`.
    fn compiler(&mut self, configured: Option<&Configured>) -> Result<PathBuf, Error>;
    /// The pass plugin for `compiler`'s clang, checked to be built for its LLVM major.
    fn plugin(&mut self, compiler: &Path) -> Result<PathBuf, Error>;
    /// The first 16 hex digits of the plugin's SHA-256.
    fn plugin_hash(&mut self, plugin: &Path) -> Result<String, Error>;
    /// The directory holding markers.hpp.
    fn include_dir(&mut self) -> Result<PathBuf, Error>;
    /// The compiler cache the `ccache` setting names (a name is looked up on PATH).
    fn cache(&mut self, configured: &Path) -> Result<PathBuf, Error>;
}

/// `--sqtt-launch`'s command: a compiler cache first, if one is given (CMake puts an existing
/// `<LANG>_COMPILER_LAUNCHER` after ours), then the compiler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launched {
    pub cache: Option<String>,
    pub compiler: String,
}

/// The compiler caches `--sqtt-launch` recognises before the compiler.
const CACHES: &[&str] = &["ccache", "sccache"];

/// Splits `--sqtt-launch`'s `CMD ARGS...` into the compiler cache (when CMD is one), the compiler
/// and the compiler's arguments; None without a compiler.
pub fn split_launched(cmd: &[String]) -> Option<(Launched, &[String])> {
    let (first, rest) = cmd.split_first()?;
    let is_cache = Path::new(first)
        .file_name()
        .is_some_and(|n| CACHES.contains(&n.to_string_lossy().as_ref()));
    if is_cache {
        let (compiler, args) = rest.split_first()?;
        return Some((
            Launched {
                cache: Some(first.clone()),
                compiler: compiler.clone(),
            },
            args,
        ));
    }
    Some((
        Launched {
            cache: None,
            compiler: first.clone(),
        },
        rest,
    ))
}

/// The inputs of a plan.
pub struct Request<'a> {
    /// hipcc's arguments as given (without the wrapper's own options; `@files` unexpanded).
    pub args: &'a [String],
    /// The user's plugin options taken out of `args` (their values are in `settings`), and
    /// the arguments without them.
    pub plugin_options: &'a PluginOptions,
    /// Their classification (from the expanded arguments).
    pub step: &'a Classified,
    /// The merged settings, or why they are invalid (which only matters to steps that use them).
    pub settings: &'a Result<Settings, ConfigError>,
    /// `--sqtt-verbose` or `SQTT_VERBOSE` given.
    pub verbose: bool,
    pub cwd: &'a Path,
    /// The sqtt.toml in effect, if any.
    pub config_file: Option<&'a Path>,
    /// The wrapper's environment.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// The funcmaps to check after a successful step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputCheck {
    /// Files that hold the device code (absolute).
    pub outputs: Vec<PathBuf>,
    /// Whether a code object with kernels but no funcmap is an error (code this step
    /// instrumented) or fine (objects built elsewhere, linked in).
    pub require_funcmap: bool,
}

/// Files to add to the first rule of a dependency file (`-MD`) after a successful compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepFileInputs {
    pub file: PathBuf,
    /// The sqtt.toml in effect and the plugin (those that exist when the step ends).
    pub inputs: Vec<PathBuf>,
}

/// What one call of the wrapper does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub kind: StepKind,
    pub command: Invocation,
    /// Run the command and wait (something is left to do after it); else hand the process
    /// over to it.
    pub wait: bool,
    /// Whether the trace is on.
    pub verbose: bool,
    /// Lines for stderr before the command starts (warnings, notes).
    pub notes: Vec<String>,
    /// The trace's lines before the command starts (only printed when `verbose`).
    pub trace: Vec<String>,
    pub check: Option<OutputCheck>,
    pub dep_file: Option<DepFileInputs>,
    /// `--version`: the settings line to print after hipcc's output (and the plugin's line).
    pub identity: Option<String>,
}

/// Refuses to wrap when the wrapper runs below itself (the hipcc it found is sqtt-hipcc).
pub fn check_not_nested(env: &dyn Fn(&str) -> Option<String>) -> Result<(), Error> {
    match env(sqtt_config::var::HIPCC_DEPTH) {
        Some(v) if !v.is_empty() => Err(Error::CallsItself),
        _ => Ok(()),
    }
}

/// Whether `SQTT_VERBOSE` asks for the trace, read by its settings row (the settings as a whole
/// may be invalid, and the trace should still say why).
pub fn verbose_var(env: &dyn Fn(&str) -> Option<String>) -> bool {
    let row = &sqtt_config::setting::VERBOSE;
    env(row.var).is_some_and(|v| {
        let mut s = Settings::default();
        (row.set)(&mut s, &v).is_some() && s.verbose
    })
}

/// Who runs a compile or link step.
#[derive(Clone, Copy)]
enum Runner<'a> {
    /// `sqtt-hipcc ARGS...`: the wrapper's hipcc, under the `ccache` setting's cache.
    Wrapper,
    /// `sqtt-hipcc --sqtt-launch [CACHE] COMPILER ARGS...`.
    Launcher(&'a Launched),
}

impl Plan {
    /// The plan for `sqtt-hipcc ARGS...`.
    pub fn wrap(req: &Request, tools: &mut dyn Toolchain) -> Result<Plan, Error> {
        match req.step.kind {
            StepKind::Probe | StepKind::Preprocess | StepKind::Unknown => untouched(req, tools),
            StepKind::Compile | StepKind::Link => build(req, tools, Runner::Wrapper),
        }
    }

    /// The plan for `sqtt-hipcc --sqtt-launch [CACHE] COMPILER ARGS...` (`req.args`: ARGS): a
    /// compile or link as the wrapper's, with the compiler given; anything else runs as given.
    /// The settings are exported too, for a plugin loaded by other flags.
    pub fn launch(
        launched: &Launched,
        req: &Request,
        tools: &mut dyn Toolchain,
    ) -> Result<Plan, Error> {
        let settings = req.settings.as_ref().map_err(|e| e.clone())?;
        if matches!(req.step.kind, StepKind::Compile | StepKind::Link) {
            return build(req, tools, Runner::Launcher(launched));
        }
        let mut command = Invocation {
            program: PathBuf::from(&launched.compiler),
            args: step_args(req).to_vec(),
            set_env: launch_env(settings),
            remove_env: Vec::new(),
            cwd: Some(req.cwd.to_path_buf()),
        };
        if let Some(cache) = &launched.cache {
            command.args.insert(0, launched.compiler.clone());
            command.program = PathBuf::from(cache);
        }
        defer_to_link(&mut command, false);
        Ok(Plan {
            kind: req.step.kind,
            command,
            wait: false,
            verbose: false,
            notes: Vec::new(),
            trace: Vec::new(),
            check: None,
            dep_file: None,
            identity: None,
        })
    }
}

/// What `--sqtt-launch` exports: the settings, and the switch (for a plugin loaded by flags of
/// the build's own, which reads them).
fn launch_env(settings: &Settings) -> Vec<(String, String)> {
    let mut env = owned_env(settings.to_env());
    env.push((
        sqtt_config::var::ENABLED.into(),
        if settings.enabled { "1" } else { "0" }.into(),
    ));
    env
}

/// Probes, preprocessing and unknown steps: hipcc with the arguments as given; preprocessing
/// also sees the include directory and define a compile would (so ccache's preprocessor mode
/// and `-M` find markers.hpp).
fn untouched(req: &Request, tools: &mut dyn Toolchain) -> Result<Plan, Error> {
    // A broken sqtt.toml must not break a probe: the settings serve only to find hipcc here.
    let settings = req.settings.as_ref().ok();
    let configured = match settings {
        Some(s) => configured_hipcc(s, req),
        None => (req.env)(sqtt_config::var::HIPCC)
            .filter(|v| !v.is_empty())
            .map(|v| Configured {
                path: PathBuf::from(v),
                by: NamedBy::Setting(Origin::Env(sqtt_config::var::HIPCC)),
            }),
    };
    let hipcc = tools.compiler(configured.as_ref())?;
    let verbose = req.verbose || settings.is_some_and(|s| s.verbose);
    let step = req.step;
    let mut extra = Vec::new();
    if step.kind == StepKind::Preprocess {
        extra.push(format!("-I{}", tools.include_dir()?.display()));
        if settings.is_some_and(|s| s.enabled) {
            extra.push("-DSQTT_ENABLED=1".into());
        }
    }
    let command = hipcc_command(req, hipcc, extra);
    let trace = vec![format!(
        "sqtt-hipcc: {:?} step, running {}",
        step.kind,
        show(&command)
    )];
    let mut notes = Vec::new();
    if step.kind == StepKind::Probe && req.args.iter().any(|a| a == "--help") {
        notes.push(
            "sqtt-hipcc: hipcc's help follows; sqtt-hipcc's own options: sqtt-hipcc \
             --sqtt-help, --check --help"
                .into(),
        );
    }
    // `--version` waits for hipcc to add the plugin's and the settings' lines (what ccache's
    // compiler_check hashes).
    let identity = step
        .version
        .then(|| settings_line(settings, req.config_file));
    Ok(Plan {
        kind: step.kind,
        command,
        wait: identity.is_some(),
        verbose,
        notes,
        trace,
        check: None,
        dep_file: None,
        identity,
    })
}

/// Compile and link steps: the plugin, its options, the include directory and the define on
/// the command line; the settings exported; the outputs' funcmaps checked afterwards (the
/// wrapper's steps) and the dependency file extended. A compiler cache (the `ccache` setting, or
/// the one `--sqtt-launch` was given) runs the compiler, and so sees all of it.
fn build(req: &Request, tools: &mut dyn Toolchain, runner: Runner) -> Result<Plan, Error> {
    let settings = req.settings.as_ref().map_err(|e| e.clone())?;
    let notes = settings
        .warnings()
        .into_iter()
        .map(|w| format!("sqtt-hipcc: warning: {w}"))
        .collect();
    let verbose = req.verbose || settings.verbose;
    let step = req.step;
    let compiler = match runner {
        Runner::Wrapper => tools.compiler(configured_hipcc(settings, req).as_ref())?,
        Runner::Launcher(l) => PathBuf::from(&l.compiler),
    };
    // hipcc compiles every source as HIP; a launched plain clang only when told so (`-x hip`, a
    // .hip or .cu source).
    let hip = matches!(runner, Runner::Wrapper) || step.hip || is_hipcc(&compiler);
    // A host-only compile has no device code: the plugin flag would only draw "argument unused"
    // (an error under -Werror).
    let instrument = settings.enabled && step.kind == StepKind::Compile && !step.host_only && hip;
    // -fgpu-rdc: compiles leave IDs and the funcmap to the device link, where the plugin runs
    // once over every translation unit (loaded into lld).
    let rdc_link = settings.enabled && step.rdc && step.links();
    let mut extra: Vec<String> = Vec::new();
    let mut plugin_used = None;
    if instrument || rdc_link {
        // The launched compiler is looked for (and checked) only when its plugin is needed.
        let located = match runner {
            Runner::Wrapper => compiler.clone(),
            Runner::Launcher(l) => tools.compiler(Some(&Configured {
                path: PathBuf::from(&l.compiler),
                by: NamedBy::LaunchCommand,
            }))?,
        };
        let plugin = tools.plugin(&located)?;
        if instrument {
            let hash = tools.plugin_hash(&plugin)?;
            extra.push("-Xarch_device".into());
            extra.push(format!("-fpass-plugin={}", plugin.display()));
            extra.extend(plugin_option_flags(&plugin, &hash, settings));
        }
        if rdc_link {
            extra.extend(rdc_link_flags(&plugin));
        }
        plugin_used = Some(plugin);
    }
    if step.kind == StepKind::Compile && hip {
        extra.push(format!("-I{}", tools.include_dir()?.display()));
        if settings.enabled {
            extra.push("-DSQTT_ENABLED=1".into());
        }
    }
    let cache = match runner {
        Runner::Launcher(Launched {
            cache: Some(cache), ..
        }) => Some(PathBuf::from(cache)),
        // Only compiles are cached (ccache passes links through uncached).
        _ => match &settings.ccache {
            Some(c) if step.kind == StepKind::Compile => Some(tools.cache(c)?),
            _ => None,
        },
    };
    // The wrapper's arguments first, each whole, so that none can be taken as the value of a
    // user option left without one (a trailing `-o`).
    let mut args = extra;
    args.extend(step_args(req).iter().cloned());
    let mut command = Invocation {
        program: compiler.clone(),
        args,
        set_env: Vec::new(),
        remove_env: Vec::new(),
        cwd: Some(req.cwd.to_path_buf()),
    };
    if let Some(cache) = cache {
        command.args.insert(0, compiler.display().to_string());
        command.program = cache;
    }
    match runner {
        Runner::Wrapper => {
            command
                .set_env
                .push((sqtt_config::var::HIPCC_DEPTH.into(), "1".into()));
            if settings.enabled {
                command.set_env.extend(owned_env(settings.to_env()));
            }
        }
        Runner::Launcher(_) => command.set_env.extend(launch_env(settings)),
    }
    defer_to_link(&mut command, instrument && step.rdc);

    let mut trace = vec![format!(
        "sqtt-hipcc: {:?} step, instrumentation {}, running {}",
        step.kind,
        if instrument { "on" } else { "off" },
        show(&command)
    )];
    if settings.enabled {
        trace.push(format!("sqtt-hipcc: settings {}", settings.fingerprint()));
    }
    // The wrapper checks what it built; a launched build is checked by the build's own step
    // (the CMake package's post-build check).
    let outputs = match runner {
        Runner::Wrapper if settings.enabled => step.device_outputs(req.cwd),
        _ => Vec::new(),
    };
    // Only code compiled in this step must carry a funcmap: objects linked in with it may come
    // from builds without the plugin (their funcmaps, when present, are checked).
    let check = (!outputs.is_empty()).then_some(OutputCheck {
        outputs,
        require_funcmap: (instrument && step.objects.is_empty()) || rdc_link,
    });
    let dep_file = dep_file(step_args(req), step, req.cwd).map(|file| DepFileInputs {
        file,
        inputs: req
            .config_file
            .map(|p| req.cwd.join(p))
            .into_iter()
            .chain(plugin_used.map(|p| req.cwd.join(p)))
            .collect(),
    });
    Ok(Plan {
        kind: step.kind,
        command,
        wait: check.is_some() || dep_file.is_some(),
        verbose,
        notes,
        trace,
        check,
        dep_file,
        identity: None,
    })
}

/// Whether a compiler is a hipcc (which compiles every source as HIP): by its file name.
fn is_hipcc(compiler: &Path) -> bool {
    compiler
        .file_name()
        .is_some_and(|n| n.to_string_lossy().contains("hipcc"))
}

/// The arguments a step hands on: on compile and link steps, which load the plugin, without the
/// user's plugin options (the settings carry their values to the plugin in the wrapper's own
/// spelling); on the others, as given.
fn step_args<'a>(req: &Request<'a>) -> &'a [String] {
    match req.step.kind {
        StepKind::Compile | StepKind::Link => &req.plugin_options.rest,
        _ => req.args,
    }
}

/// The hipcc the settings name, and where they name it (the variable, or the file's key).
fn configured_hipcc(settings: &Settings, req: &Request) -> Option<Configured> {
    let path = settings.hipcc.clone()?;
    let origin = Origin::of(&sqtt_config::setting::HIPCC, req.config_file, req.env);
    Some(Configured {
        path,
        by: NamedBy::Setting(origin),
    })
}

/// hipcc with `extra`, then the user's arguments; the recursion guard set. The wrapper's own
/// arguments come first, each whole, so that none can be taken as the value of a user option
/// left without one (a trailing `-o`): hipcc reports that as it would without the wrapper.
fn hipcc_command(req: &Request, hipcc: PathBuf, extra: Vec<String>) -> Invocation {
    let mut args = extra;
    args.extend(step_args(req).iter().cloned());
    Invocation {
        program: hipcc,
        args,
        set_env: vec![(sqtt_config::var::HIPCC_DEPTH.into(), "1".into())],
        remove_env: Vec::new(),
        cwd: Some(req.cwd.to_path_buf()),
    }
}

/// `SQTT_DEFER_TO_LINK=1` for `-fgpu-rdc` compiles (the plugin leaves IDs and the funcmap to
/// the device link); removed for every other step, so no step inherits it by accident.
fn defer_to_link(command: &mut Invocation, defer: bool) {
    let var = sqtt_config::var::DEFER_TO_LINK;
    if defer {
        command.set_env.push((var.into(), "1".into()));
    } else {
        command.remove_env.push(var.into());
    }
}

fn owned_env(vars: Vec<(&'static str, String)>) -> Vec<(String, String)> {
    vars.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn show(command: &Invocation) -> String {
    let mut v = vec![command.program.display().to_string()];
    v.extend(command.args.iter().cloned());
    shell_words::join(v)
}

/// The flags that put the settings on the compile's command line, so that it alone says what is
/// built (build tools and caches see it): the plugin's content hash (a plugin argument clang
/// passes to no one: a compiler cache hashes it, so a rebuilt plugin misses), every setting as a
/// plugin option,
/// `-Xclang -mllvm -Xclang -sqtt-marker-<setting>=VALUE`, for every cc1 (host and device) and
/// never for lld (a plain `-mllvm` reaches the device lld, which has no plugin loaded). cc1
/// parses `-mllvm` before it loads `-fpass-plugin` libraries up to LLVM 21, so the plugin is
/// also loaded as a clang plugin (`-fplugin=`, loaded first), which registers its options in
/// the host cc1 too. The `SQTT_*` environment stays exported as well (the `-fgpu-rdc` device
/// link reads it).
fn plugin_option_flags(plugin: &Path, hash: &str, settings: &Settings) -> Vec<String> {
    let mut flags = vec![
        format!("-fplugin={}", plugin.display()),
        format!("-fplugin-arg-sqtt-sha256={hash}"),
    ];
    for option in settings.to_plugin_options() {
        flags.extend(["-Xclang".into(), "-mllvm".into(), "-Xclang".into(), option]);
    }
    flags
}

/// The flags that load the plugin into the device linker of an `-fgpu-rdc` link.
pub fn rdc_link_flags(plugin: &Path) -> [String; 3] {
    [
        "-Xoffload-linker".into(),
        format!("--load-pass-plugin={}", plugin.display()),
        // clang 15 hands -Xoffload-linker to the HIP device lld without marking it used, so it
        // warns "argument unused during compilation" (an error with -Werror) although lld loads
        // the plugin. Silence that one diagnostic.
        "-Qunused-arguments".into(),
    ]
}

/// The dependency file hipcc writes for `-MD`/`-MMD` (`-MF FILE`, else the output with `.d`),
/// or None when the step writes none.
fn dep_file(args: &[String], step: &Classified, cwd: &Path) -> Option<PathBuf> {
    if step.kind != StepKind::Compile || !args.iter().any(|a| a == "-MD" || a == "-MMD") {
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
        step.output
            .as_ref()
            .or(step.sources.first())
            .map(|o| o.with_extension("d"))
            .map(|d| match step.output {
                Some(_) => d,
                None => PathBuf::from(d.file_name().unwrap_or_default()),
            })
    })?;
    Some(cwd.join(f))
}

/// Hex SHA-256 prefix of the resolved settings (the `--version` line ccache's
/// `compiler_check` sees).
pub fn settings_hash(settings: &Settings) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(settings.fingerprint().as_bytes());
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The settings line of `--version`: ccache/sccache with `compiler_check = %compiler%
/// --version` miss when a setting changes.
fn settings_line(settings: Option<&Settings>, config_file: Option<&Path>) -> String {
    match settings {
        Some(s) => format!(
            "sqtt-hipcc settings: sha256:{} (config {})",
            settings_hash(s),
            config_file.map_or("none".into(), |p| p.display().to_string())
        ),
        None => "sqtt-hipcc settings: invalid (see the next compile's error)".into(),
    }
}

#[cfg(test)]
mod tests;

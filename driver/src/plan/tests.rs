//! Argument vectors in, plans out: no process is started and no file is read.

use super::*;
use crate::args::{classify, take_plugin_options};

const HIPCC: &str = "/rocm/bin/hipcc";
const PLUGIN: &str = "/p/libsqtt_plugin.so";
const INCLUDE: &str = "/cache/include-0123";
const HASH: &str = "00112233aabbccdd";
const CWD: &str = "/w";

/// A toolchain that is always there, and says what was looked up.
#[derive(Default)]
struct Fixed {
    looked_up: Vec<&'static str>,
    no_plugin: bool,
    /// Who named the compiler looked up last.
    named_by: Option<NamedBy>,
}

impl Toolchain for Fixed {
    fn compiler(&mut self, configured: Option<&Configured>) -> Result<PathBuf, Error> {
        self.looked_up.push("compiler");
        self.named_by = configured.map(|c| c.by.clone());
        Ok(configured.map_or_else(|| PathBuf::from(HIPCC), |c| c.path.clone()))
    }
    fn plugin(&mut self, _compiler: &Path) -> Result<PathBuf, Error> {
        self.looked_up.push("plugin");
        if self.no_plugin {
            return Err(Error::PluginNotFound("no plugin".into()));
        }
        Ok(PathBuf::from(PLUGIN))
    }
    fn plugin_hash(&mut self, _plugin: &Path) -> Result<String, Error> {
        self.looked_up.push("hash");
        Ok(HASH.into())
    }
    fn include_dir(&mut self) -> Result<PathBuf, Error> {
        self.looked_up.push("include");
        Ok(PathBuf::from(INCLUDE))
    }
    fn cache(&mut self, configured: &Path) -> Result<PathBuf, Error> {
        self.looked_up.push("cache");
        Ok(Path::new("/usr/bin").join(configured))
    }
}

/// The inputs of one plan: arguments, variables, sqtt.toml in effect.
struct Given<'a> {
    argv: &'a str,
    env: &'a [(&'a str, &'a str)],
    config_file: Option<&'a str>,
    /// The text of `config_file` (none: the settings do not read it).
    config_text: Option<&'a str>,
    tools: Fixed,
}

fn given<'a>(argv: &'a str, env: &'a [(&'a str, &'a str)]) -> Given<'a> {
    Given {
        argv,
        env,
        config_file: None,
        config_text: None,
        tools: Fixed::default(),
    }
}

impl Given<'_> {
    fn run(&mut self, launch: Option<&str>) -> Result<Plan, Error> {
        let args = shell_words::split(self.argv).unwrap();
        let step = classify(&args);
        let env = self.env;
        let get = move |k: &str| {
            env.iter()
                .rev()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        // As the wrapper gathers them: the plugin options taken out, over the variables.
        let taken = take_plugin_options(&args).map_err(Error::PluginOption)?;
        let file = self.config_text.map(|text| sqtt_config::ConfigFile {
            path: PathBuf::from(self.config_file.unwrap()),
            text: text.to_string(),
        });
        let settings = Settings::from_sources(file.as_ref(), get, |o| taken.value(o));
        let req = Request {
            args: &args,
            plugin_options: &taken,
            step: &step,
            settings: &settings,
            verbose: verbose_var(&get),
            cwd: Path::new(CWD),
            config_file: self.config_file.map(Path::new),
            env: &get,
        };
        match launch {
            None => Plan::wrap(&req, &mut self.tools),
            Some(command) => {
                let cmd = shell_words::split(command).unwrap();
                let (launched, _) = split_launched(&cmd).unwrap();
                Plan::launch(&launched, &req, &mut self.tools)
            }
        }
    }
    fn plan(&mut self) -> Plan {
        self.run(None)
            .unwrap_or_else(|e| panic!("{}: {e}", self.argv))
    }
}

fn plan(argv: &str) -> Plan {
    given(argv, &[]).plan()
}

fn settings() -> Settings {
    Settings::default()
}

/// What the wrapper adds before the user's arguments, in order.
#[derive(Debug, Clone, Copy)]
enum Add {
    /// `-Xarch_device -fpass-plugin=P -fplugin=P` and every setting as a plugin option.
    Plugin,
    /// `-Xoffload-linker --load-pass-plugin=P -Qunused-arguments`.
    RdcLink,
    Include,
    Define,
}

fn added(parts: &[Add]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for p in parts {
        match p {
            Add::Plugin => {
                v.push("-Xarch_device".into());
                v.push(format!("-fpass-plugin={PLUGIN}"));
                v.push(format!("-fplugin={PLUGIN}"));
                v.push(format!("-fplugin-arg-sqtt-sha256={HASH}"));
                for o in settings().to_plugin_options() {
                    v.extend(["-Xclang".into(), "-mllvm".into(), "-Xclang".into(), o]);
                }
            }
            Add::RdcLink => v.extend([
                "-Xoffload-linker".into(),
                format!("--load-pass-plugin={PLUGIN}"),
                "-Qunused-arguments".into(),
            ]),
            Add::Include => v.push(format!("-I{INCLUDE}")),
            Add::Define => v.push("-DSQTT_ENABLED=1".into()),
        }
    }
    v
}

/// The arguments before the given ones (which must come last, unchanged).
fn extra(p: &Plan, argv: &str) -> Vec<String> {
    let given = shell_words::split(argv).unwrap();
    let at = p.command.args.len() - given.len();
    assert_eq!(p.command.args[at..], given[..], "{argv}");
    p.command.args[..at].to_vec()
}

fn outputs(names: &[&str]) -> Vec<PathBuf> {
    names.iter().map(|n| Path::new(CWD).join(n)).collect()
}

fn defers(p: &Plan) -> bool {
    let var = "SQTT_DEFER_TO_LINK";
    match p.command.env(var) {
        Some("1") => {
            assert!(!p.command.remove_env.iter().any(|v| v == var));
            true
        }
        None => {
            assert!(p.command.remove_env.iter().any(|v| v == var), "{var} kept");
            false
        }
        Some(other) => panic!("{var}={other}"),
    }
}

use Add::*;

/// Compile and link steps with the default settings: what is added, whether the process waits,
/// what is checked afterwards (outputs, funcmap required), whether the plugin defers to the
/// device link.
#[test]
fn build_steps() {
    type Check<'a> = Option<(&'a [&'a str], bool)>;
    let cases: &[(&str, StepKind, &[Add], Check, bool)] = &[
        // Compile only: the object is checked and must carry a funcmap.
        (
            "--offload-arch=gfx90a -c k.hip -o k.o",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["k.o"], true)),
            false,
        ),
        (
            "-c k.hip",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["k.o"], true)),
            false,
        ),
        (
            "-c a.hip sub/b.cu",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["a.o", "b.o"], true)),
            false,
        ),
        (
            "-c -oout/k.o k.cpp",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["out/k.o"], true)),
            false,
        ),
        (
            "-x hip k.txt -c",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["k.o"], true)),
            false,
        ),
        // Several archs: one plugin for all of them.
        (
            "--offload-arch=gfx90a --offload-arch=gfx1100 -c k.hip -o k.o",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["k.o"], true)),
            false,
        ),
        (
            "--offload-arch=gfx90a,gfx942 -c k.hip",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["k.o"], true)),
            false,
        ),
        // Compile and link: the executable; a.out without -o.
        (
            "k.hip -o app",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["app"], true)),
            false,
        ),
        (
            "k.hip",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["a.out"], true)),
            false,
        ),
        // Objects linked in may come from builds without the plugin.
        (
            "k.hip m.o -o app",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["app"], false)),
            false,
        ),
        // Standard input with a language.
        (
            "-x hip - -c -o k.o",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["k.o"], true)),
            false,
        ),
        (
            "-x hip -",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["a.out"], true)),
            false,
        ),
        // -Xarch_ takes its option along; it is never an input.
        (
            "-Xarch_gfx90a -O3 -c k.hip",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["k.o"], true)),
            false,
        ),
        (
            "-Xarch_device -fno-unroll-loops -c k.hip -o k.o",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["k.o"], true)),
            false,
        ),
        // Nothing to check: no code object written (or not to a file).
        (
            "-S k.hip",
            StepKind::Compile,
            &[Plugin, Include, Define],
            None,
            false,
        ),
        (
            "-fsyntax-only k.hip",
            StepKind::Compile,
            &[Plugin, Include, Define],
            None,
            false,
        ),
        (
            "-c -emit-llvm k.hip",
            StepKind::Compile,
            &[Plugin, Include, Define],
            None,
            false,
        ),
        (
            "-c k.hip -o -",
            StepKind::Compile,
            &[Plugin, Include, Define],
            None,
            false,
        ),
        // Host only: no device code, so no plugin (it would be an unused argument).
        (
            "--cuda-host-only -c k.hip",
            StepKind::Compile,
            &[Include, Define],
            None,
            false,
        ),
        (
            "--offload-host-only -c k.hip -o k.o",
            StepKind::Compile,
            &[Include, Define],
            None,
            false,
        ),
        // Device only: the code object itself.
        (
            "--cuda-device-only -c k.hip -o k.co",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["k.co"], true)),
            false,
        ),
        (
            "--genco k.hip -o k.co",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["k.co"], true)),
            false,
        ),
        // -fgpu-rdc: compiles defer to the device link (bitcode: nothing to check) ...
        (
            "-fgpu-rdc -c k.hip -o k.o",
            StepKind::Compile,
            &[Plugin, Include, Define],
            None,
            true,
        ),
        // ... where the plugin runs, and the funcmap must be there.
        (
            "-fgpu-rdc k.o m.o -o app",
            StepKind::Link,
            &[RdcLink],
            Some((&["app"], true)),
            false,
        ),
        (
            "-fgpu-rdc k.hip -o app",
            StepKind::Compile,
            &[Plugin, RdcLink, Include, Define],
            Some((&["app"], true)),
            true,
        ),
        (
            "-fgpu-rdc -fno-gpu-rdc -c k.hip",
            StepKind::Compile,
            &[Plugin, Include, Define],
            Some((&["k.o"], true)),
            false,
        ),
        (
            "-fgpu-rdc --cuda-host-only -c k.hip",
            StepKind::Compile,
            &[Include, Define],
            None,
            false,
        ),
        // Plain links: nothing added, funcmaps checked where present.
        (
            "k.o m.o -o app",
            StepKind::Link,
            &[],
            Some((&["app"], false)),
            false,
        ),
        ("k.o", StepKind::Link, &[], Some((&["a.out"], false)), false),
        (
            "-shared k.o libx.a -o libk.so",
            StepKind::Link,
            &[],
            Some((&["libk.so"], false)),
            false,
        ),
        (
            "- k.o -o app",
            StepKind::Link,
            &[],
            Some((&["app"], false)),
            false,
        ),
    ];
    for &(argv, kind, add, check, defer) in cases {
        let p = plan(argv);
        assert_eq!(p.kind, kind, "{argv}");
        assert_eq!(p.command.program, Path::new(HIPCC), "{argv}");
        assert_eq!(p.command.cwd.as_deref(), Some(Path::new(CWD)), "{argv}");
        assert_eq!(extra(&p, argv), added(add), "{argv}");
        let want = check.map(|(o, require_funcmap)| OutputCheck {
            outputs: outputs(o),
            require_funcmap,
        });
        assert_eq!(p.check, want, "{argv}");
        assert_eq!(p.wait, p.check.is_some(), "{argv}: waits only to check");
        assert_eq!(defers(&p), defer, "{argv}");
        assert_eq!(p.dep_file, None, "{argv}");
        assert_eq!(p.identity, None, "{argv}");
        assert!(p.notes.is_empty(), "{argv}");
    }
}

/// Probes, preprocessing and unknown steps: hipcc with the arguments as given (preprocessing
/// plus the include directory and define), handed the process, the settings not exported.
#[test]
fn untouched_steps() {
    let cases: &[(&str, StepKind, &[Add])] = &[
        ("-v", StepKind::Probe, &[]),
        ("-###", StepKind::Probe, &[]),
        ("-### -c k.hip", StepKind::Probe, &[]),
        ("-print-prog-name=ld", StepKind::Probe, &[]),
        ("--print-search-dirs", StepKind::Probe, &[]),
        ("-dumpmachine", StepKind::Probe, &[]),
        ("--short-version", StepKind::Probe, &[]),
        ("--cxxflags", StepKind::Probe, &[]),
        ("-E k.hip", StepKind::Preprocess, &[Include, Define]),
        ("-M k.hip", StepKind::Preprocess, &[Include, Define]),
        ("-MM -c k.hip", StepKind::Preprocess, &[Include, Define]),
        ("-E -dM -x hip -", StepKind::Preprocess, &[Include, Define]),
        ("", StepKind::Unknown, &[]),
        ("-O2", StepKind::Unknown, &[]),
        ("-c", StepKind::Unknown, &[]),
        ("-c -", StepKind::Unknown, &[]),
        ("-o k.hip", StepKind::Unknown, &[]),
        ("-Xarch_host k.hip", StepKind::Unknown, &[]),
    ];
    for &(argv, kind, add) in cases {
        let mut g = given(argv, &[]);
        let p = g.plan();
        assert_eq!(p.kind, kind, "{argv}");
        assert_eq!(extra(&p, argv), added(add), "{argv}");
        assert!(
            !p.wait && p.check.is_none() && p.dep_file.is_none(),
            "{argv}"
        );
        assert_eq!(
            p.command.set_env,
            vec![("SQTT_HIPCC_DEPTH".to_string(), "1".to_string())],
            "{argv}"
        );
        assert!(p.command.remove_env.is_empty(), "{argv}");
        // Never a plugin lookup (it may run hipcc --version, and may fail).
        assert!(!g.tools.looked_up.contains(&"plugin"), "{argv}");
    }
}

#[test]
fn version_waits_to_add_the_plugin_and_settings_lines() {
    let p = plan("--version");
    assert_eq!((p.kind, p.wait), (StepKind::Probe, true));
    assert_eq!(p.command.args, ["--version"]);
    let hash = settings_hash(&settings());
    assert_eq!(
        p.identity.as_deref(),
        Some(format!("sqtt-hipcc settings: sha256:{hash} (config none)").as_str())
    );
    let mut g = given("--version", &[]);
    g.config_file = Some("/src/sqtt.toml");
    let line = g.plan().identity.unwrap();
    assert!(line.ends_with("(config /src/sqtt.toml)"), "{line}");
    // A changed setting changes the line (ccache's compiler_check misses).
    let other = given("--version", &[("SQTT_INSTRUMENT_BARRIERS", "1")])
        .plan()
        .identity
        .unwrap();
    assert_ne!(other, p.identity.unwrap());
    // Bad settings do not break the probe.
    let bad = given("--version", &[("SQTT_SCOPE_CU", "0xZZ")]).plan();
    assert_eq!(
        bad.identity.as_deref(),
        Some("sqtt-hipcc settings: invalid (see the next compile's error)")
    );
    assert_eq!(plan("-dumpversion").identity, None);
}

#[test]
fn help_says_where_the_own_options_are() {
    let p = plan("--help");
    assert_eq!(p.kind, StepKind::Probe);
    assert_eq!(p.notes.len(), 1);
    assert!(p.notes[0].contains("--sqtt-help"), "{:?}", p.notes);
    assert!(plan("-dumpmachine").notes.is_empty());
}

#[test]
fn instrumentation_off_adds_only_the_include_dir() {
    for off in ["0", "false", "off", "no"] {
        let env = [("SQTT_ENABLED", off)];
        let cases: &[(&str, &[Add])] = &[
            ("-c k.hip -o k.o", &[Include]),
            ("k.hip -o app", &[Include]),
            ("-fgpu-rdc -c k.hip", &[Include]),
            ("-fgpu-rdc k.o -o app", &[]),
            ("k.o -o app", &[]),
            ("-E k.hip", &[Include]),
        ];
        for &(argv, add) in cases {
            let mut g = given(argv, &env);
            let p = g.plan();
            assert_eq!(extra(&p, argv), added(add), "{argv} {off}");
            assert!(!p.wait && p.check.is_none(), "{argv}: nothing to check");
            assert!(!g.tools.looked_up.contains(&"plugin"), "{argv}");
            assert!(
                !p.command
                    .set_env
                    .iter()
                    .any(|(k, _)| k != "SQTT_HIPCC_DEPTH"),
                "{argv}: settings not exported: {:?}",
                p.command.set_env
            );
            if p.kind != StepKind::Preprocess {
                assert!(!defers(&p), "{argv}");
            }
        }
    }
}

#[test]
fn settings_are_exported_and_passed_as_plugin_options() {
    let env = [("SQTT_INSTRUMENT_BARRIERS", "1"), ("SQTT_SCOPE_CU", "0x3")];
    let p = given("-c k.hip", &env).plan();
    let want = Settings::from_env(|k| {
        env.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    })
    .unwrap();
    assert_ne!(want, settings());
    for (k, v) in want.to_env() {
        assert_eq!(p.command.env(k), Some(v.as_str()), "{k}");
    }
    assert_eq!(p.command.env("SQTT_HIPCC_DEPTH"), Some("1"));
    for o in want.to_plugin_options() {
        let at = p.command.args.iter().position(|a| *a == o).expect(&o);
        assert_eq!(p.command.args[at - 3..at], ["-Xclang", "-mllvm", "-Xclang"]);
    }
    // Links export them too (the -fgpu-rdc device link reads them), without plugin options.
    let l = given("-fgpu-rdc k.o -o app", &env).plan();
    assert_eq!(l.command.env("SQTT_INSTRUMENT_BARRIERS"), Some("1"));
    assert!(!l.command.args.iter().any(|a| a.starts_with("-sqtt-marker")));
}

#[test]
fn bad_settings_stop_compiles_and_links_before_any_lookup() {
    for argv in ["-c k.hip", "k.o -o app", "-fgpu-rdc k.o -o app"] {
        let mut g = given(argv, &[("SQTT_SCOPE_CU", "0xZZ")]);
        let e = g.run(None).unwrap_err();
        assert!(matches!(e, Error::Settings(_)), "{argv}: {e:?}");
        assert_eq!(e.exit_code(), 2);
        let text = e.to_string();
        assert!(
            text.contains("SQTT_SCOPE_CU") && text.contains("0xZZ"),
            "{text}"
        );
        assert!(
            g.tools.looked_up.is_empty(),
            "{argv}: {:?}",
            g.tools.looked_up
        );
    }
    // Probes and preprocessing still run; preprocessing without the define.
    let p = given("-E k.hip", &[("SQTT_SCOPE_CU", "0xZZ")]).plan();
    assert_eq!(extra(&p, "-E k.hip"), added(&[Include]));
    // With the settings unreadable, SQTT_HIPCC is still honoured.
    let p = given(
        "-v",
        &[("SQTT_SCOPE_CU", "0xZZ"), ("SQTT_HIPCC", "/x/hipcc")],
    )
    .plan();
    assert_eq!(p.command.program, Path::new("/x/hipcc"));
}

#[test]
fn the_configured_hipcc_is_run() {
    for argv in ["-c k.hip", "-v", "k.o"] {
        let p = given(argv, &[("SQTT_HIPCC", "/x/hipcc")]).plan();
        assert_eq!(p.command.program, Path::new("/x/hipcc"), "{argv}");
    }
}

#[test]
fn lookups_happen_only_when_needed_and_their_errors_stop_the_step() {
    let cases: &[(&str, &[&str])] = &[
        ("-c k.hip", &["compiler", "plugin", "hash", "include"]),
        ("-fgpu-rdc k.o -o app", &["compiler", "plugin"]),
        ("k.o -o app", &["compiler"]),
        ("--cuda-host-only -c k.hip", &["compiler", "include"]),
        ("-E k.hip", &["compiler", "include"]),
        ("-v", &["compiler"]),
    ];
    for &(argv, want) in cases {
        let mut g = given(argv, &[]);
        g.plan();
        assert_eq!(g.tools.looked_up, want, "{argv}");
    }
    for argv in ["-c k.hip", "-fgpu-rdc k.o -o app"] {
        let mut g = given(argv, &[]);
        g.tools.no_plugin = true;
        let e = g.run(None).unwrap_err();
        assert!(matches!(e, Error::PluginNotFound(_)), "{argv}: {e:?}");
        assert_eq!(e.exit_code(), 2);
    }
    // No plugin needed, none looked for: a plain link works without one.
    let mut g = given("k.o -o app", &[]);
    g.tools.no_plugin = true;
    assert!(g.run(None).is_ok());
}

#[test]
fn dependency_files_get_the_config_and_the_plugin() {
    let cases: &[(&str, &str)] = &[
        ("-c k.hip -MD -MF k.d -MT k.o -MP -o k.o", "k.d"),
        ("-c k.hip -MMD -o out/k.o", "out/k.d"),
        ("-c k.hip -MD", "k.d"),
        ("-c sub/k.hip -MD", "k.d"),
        ("-c k.hip -MFdeps/k.d -MD", "deps/k.d"),
        ("-S k.hip -MD -o k.s", "k.d"),
    ];
    for &(argv, file) in cases {
        let mut g = given(argv, &[]);
        g.config_file = Some("sqtt.toml");
        let p = g.plan();
        assert_eq!(
            p.dep_file,
            Some(DepFileInputs {
                file: Path::new(CWD).join(file),
                inputs: vec![PathBuf::from("/w/sqtt.toml"), PathBuf::from(PLUGIN)],
            }),
            "{argv}"
        );
        assert!(p.wait, "{argv}: waits to extend the dependency file");
    }
    // Without -MD/-MMD there is none, -MF alone included; links and probes have none.
    for argv in ["-c k.hip -MF k.d", "k.o -MD -o app", "-E -MD k.hip"] {
        assert_eq!(plan(argv).dep_file, None, "{argv}");
    }
    // Instrumentation off: only the config (when there is one).
    let p = given("-c k.hip -MD", &[("SQTT_ENABLED", "0")]).plan();
    assert_eq!(p.dep_file.unwrap().inputs, Vec::<PathBuf>::new());
}

#[test]
fn the_trace_says_what_runs() {
    let p = plan("-c k.hip");
    assert!(!p.verbose);
    for v in ["1", "yes", "on"] {
        let p = given("-c k.hip", &[("SQTT_VERBOSE", v)]).plan();
        assert!(p.verbose, "{v}");
        assert!(
            p.trace[0].starts_with(
                "sqtt-hipcc: Compile step, instrumentation on, running /rocm/bin/hipcc \
                 -Xarch_device"
            ),
            "{:?}",
            p.trace
        );
        assert_eq!(
            p.trace[1],
            format!("sqtt-hipcc: settings {}", settings().fingerprint())
        );
    }
    // Read as the setting reads it: `no` is off.
    for v in ["0", "off", "false", "", "no", "NO"] {
        assert!(
            !given("-c k.hip", &[("SQTT_VERBOSE", v)]).plan().verbose,
            "{v}"
        );
    }
    let p = given("-v", &[("SQTT_VERBOSE", "1")]).plan();
    assert_eq!(
        p.trace,
        ["sqtt-hipcc: Probe step, running /rocm/bin/hipcc -v"]
    );
    let p = given("--cuda-host-only -c k.hip", &[("SQTT_VERBOSE", "1")]).plan();
    assert!(p.trace[0].contains("instrumentation off"), "{:?}", p.trace);
}

/// `SQTT_VERBOSE` is a setting like the others: a value none of its forms is an error naming the
/// variable, the value and the forms, and the step does not run (a trace no longer turns on).
#[test]
fn a_bad_verbose_value_is_the_settings_error() {
    for v in ["maybe", "2", "nope"] {
        let e = given("-c k.hip", &[("SQTT_VERBOSE", v)])
            .run(None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("SQTT_VERBOSE")
                && e.contains(&format!("\"{v}\""))
                && e.contains("0, 1, true, false, on, off, yes or no"),
            "{v}: {e}"
        );
    }
}

#[test]
fn a_zero_scope_mask_warns() {
    let p = given("-c k.hip", &[("SQTT_SCOPE_CU", "0")]).plan();
    assert_eq!(p.notes.len(), 1, "{:?}", p.notes);
    assert!(
        p.notes[0].starts_with("sqtt-hipcc: warning: SQTT_SCOPE_CU"),
        "{:?}",
        p.notes
    );
    // Probes say nothing.
    assert!(given("-v", &[("SQTT_SCOPE_CU", "0")])
        .plan()
        .notes
        .is_empty());
}

#[test]
fn the_wrapper_refuses_to_run_below_itself() {
    let nested = |v: &'static str| move |k: &str| (k == "SQTT_HIPCC_DEPTH").then(|| v.to_string());
    let e = check_not_nested(&nested("1")).unwrap_err();
    assert!(matches!(e, Error::CallsItself));
    assert!(e.to_string().contains("set SQTT_HIPCC to the real hipcc"));
    assert!(check_not_nested(&nested("")).is_ok());
    assert!(check_not_nested(&|_: &str| None).is_ok());
}

/// `--sqtt-launch [CACHE] COMPILER ARGS...`: a HIP compile gets what the wrapper's would (the
/// plugin, the settings as options, the include directory, the define), with the settings and
/// SQTT_ENABLED exported too; a C++ compile gets nothing; `-fgpu-rdc` compiles defer, its links
/// load the plugin into the device linker.
#[test]
fn launcher_plans() {
    let cases: &[(&str, &[Add], bool, &[&str])] = &[
        (
            "-x hip -c k.hip -o k.o",
            &[Plugin, Include, Define],
            false,
            &["compiler", "plugin", "hash", "include"],
        ),
        (
            "-c k.hip -o k.o",
            &[Plugin, Include, Define],
            false,
            &["compiler", "plugin", "hash", "include"],
        ),
        (
            "-fgpu-rdc -x hip -c k.hip -o k.o",
            &[Plugin, Include, Define],
            true,
            &["compiler", "plugin", "hash", "include"],
        ),
        (
            "-fgpu-rdc --offload-host-only -c k.hip",
            &[Include, Define],
            false,
            &["include"],
        ),
        (
            "--hip-link -fgpu-rdc a.o b.o -o app",
            &[RdcLink],
            false,
            &["compiler", "plugin"],
        ),
        (
            "-fgpu-rdc -x hip k.hip -o app",
            &[Plugin, RdcLink, Include, Define],
            true,
            &["compiler", "plugin", "hash", "include"],
        ),
        ("a.o b.o -o app", &[], false, &[]),
        // C++ for a plain clang: not HIP, nothing added.
        ("-c k.cpp -o k.o", &[], false, &[]),
        ("-E -x hip k.hip", &[], false, &[]),
    ];
    for &(argv, add, defer, want) in cases {
        let mut g = given(argv, &[]);
        let p = g.run(Some("clang++-15")).unwrap();
        assert_eq!(p.command.program, Path::new("clang++-15"), "{argv}");
        // Before the command's own arguments, as on the wrapper's route.
        assert_eq!(extra(&p, argv), added(add), "{argv}");
        assert_eq!(defers(&p), defer, "{argv}");
        assert_eq!(p.command.env("SQTT_ENABLED"), Some("1"), "{argv}");
        assert_eq!(p.command.env("SQTT_HIPCC_DEPTH"), None, "{argv}");
        for (k, v) in settings().to_env() {
            assert_eq!(p.command.env(k), Some(v.as_str()), "{argv} {k}");
        }
        // The build checks what it built (the CMake package's post-build step).
        assert!(!p.wait && p.check.is_none(), "{argv}");
        // The launched compiler is looked up (never hipcc) when its plugin is needed.
        assert_eq!(g.tools.looked_up, want, "{argv}");
    }
    let off = given("-fgpu-rdc a.o -o app", &[("SQTT_ENABLED", "0")])
        .run(Some("clang++"))
        .unwrap();
    assert_eq!(off.command.args, ["-fgpu-rdc", "a.o", "-o", "app"]);
    assert_eq!(off.command.env("SQTT_ENABLED"), Some("0"));
    let off = given("-x hip -c k.hip", &[("SQTT_ENABLED", "0")])
        .run(Some("clang++"))
        .unwrap();
    assert_eq!(extra(&off, "-x hip -c k.hip"), added(&[Include]));
    let e = given("-c k.hip", &[("SQTT_MEM_BARRIER", "sometimes")])
        .run(Some("clang++"))
        .unwrap_err();
    assert!(matches!(e, Error::Settings(_)), "{e:?}");
    // The dependency file names sqtt.toml and the plugin, as on the wrapper's route.
    let mut g = given("-x hip -c k.hip -MD -MT k.o -MF k.o.d -o k.o", &[]);
    g.config_file = Some("sqtt.toml");
    let p = g.run(Some("clang++")).unwrap();
    assert_eq!(
        p.dep_file,
        Some(DepFileInputs {
            file: PathBuf::from("/w/k.o.d"),
            inputs: vec![PathBuf::from("/w/sqtt.toml"), PathBuf::from(PLUGIN)],
        })
    );
    assert!(p.wait);
}

/// A compiler cache runs the compiler and sees what the wrapper adds: the one `--sqtt-launch`
/// was given (CMake's existing launcher), or the `ccache` setting's, for compiles only.
#[test]
fn a_compiler_cache_runs_the_compiler_with_everything_on_its_command_line() {
    let argv = "-x hip -c k.hip -o k.o";
    let given_args = shell_words::split(argv).unwrap();
    // The compiler, what the wrapper adds, then the user's arguments.
    let after_compiler = |p: &Plan, compiler: &str| {
        assert_eq!(p.command.args[0], compiler, "{p:?}");
        let rest = &p.command.args[1..];
        let at = rest.len() - given_args.len();
        assert_eq!(rest[at..], given_args[..]);
        rest[..at].to_vec()
    };
    for (launch, env) in [
        ("ccache clang++", &[][..]),
        ("/usr/bin/ccache clang++", &[][..]),
        ("clang++", &[("SQTT_CCACHE", "1")][..]),
        (
            "ccache clang++",
            &[("SQTT_CCACHE", "/opt/other/ccache")][..],
        ),
    ] {
        let mut g = given(argv, env);
        let p = g.run(Some(launch)).unwrap();
        assert_eq!(
            p.command.program.file_name().unwrap(),
            "ccache",
            "{launch} {env:?}"
        );
        assert_ne!(
            p.command.program,
            Path::new("/opt/other/ccache"),
            "the launcher's wins"
        );
        assert_eq!(
            after_compiler(&p, "clang++"),
            added(&[Plugin, Include, Define])
        );
    }
    // The wrapper's route: compiles only, hipcc behind the cache.
    let p = given(argv, &[("SQTT_CCACHE", "yes")]).plan();
    assert_eq!(p.command.program, Path::new("/usr/bin/ccache"));
    assert_eq!(after_compiler(&p, HIPCC), added(&[Plugin, Include, Define]));
    assert_eq!(p.command.env("SQTT_HIPCC_DEPTH"), Some("1"));
    for argv in ["k.o -o app", "-E k.hip", "--version"] {
        let p = given(argv, &[("SQTT_CCACHE", "1")]).plan();
        assert_eq!(p.command.program, Path::new(HIPCC), "{argv}");
    }
    let mut g = given("-c k.hip", &[("SQTT_CCACHE", "0")]);
    assert_eq!(g.plan().command.program, Path::new(HIPCC));
    assert!(!g.tools.looked_up.contains(&"cache"));
    // The plugin's content hash is among the arguments the cache hashes.
    let p = given("-c k.hip", &[("SQTT_CCACHE", "1")]).plan();
    assert!(p
        .command
        .args
        .contains(&format!("-fplugin-arg-sqtt-sha256={HASH}")));
}

#[test]
fn the_launched_command_splits_off_a_cache() {
    let v = |s: &str| shell_words::split(s).unwrap();
    let cmd = v("ccache clang++ -c k.hip");
    let (l, rest) = split_launched(&cmd).unwrap();
    assert_eq!(
        (l.cache.as_deref(), l.compiler.as_str(), rest),
        (Some("ccache"), "clang++", &v("-c k.hip")[..])
    );
    let cmd = v("/usr/lib/llvm-15/bin/clang++ -c k.hip");
    let (l, rest) = split_launched(&cmd).unwrap();
    assert_eq!(l.cache, None);
    assert_eq!(l.compiler, "/usr/lib/llvm-15/bin/clang++");
    assert_eq!(rest, &v("-c k.hip")[..]);
    assert!(split_launched(&v("ccache")).is_none());
    assert!(split_launched(&[]).is_none());
}

/// The user's `-mllvm -sqtt-marker-*` (issue 25): taken out of what hipcc gets (lld knows no such
/// option), its value carried by the settings: on compiles in the wrapper's own plugin options,
/// on links in the exported variables (the -fgpu-rdc device link reads them).
#[test]
fn plugin_options_of_the_user_reach_the_plugin_and_never_lld() {
    let barrier = "-sqtt-marker-mem-barrier=none";
    for spelled in [
        format!("-mllvm {barrier}"),
        format!("-mllvm={barrier}"),
        format!("-Xclang -mllvm -Xclang {barrier}"),
    ] {
        let argv = format!("-c k.hip {spelled} -o k.o");
        let p = given(&argv, &[("SQTT_MEM_BARRIER", "asm")]).plan();
        let given_args: Vec<String> = shell_words::split("-c k.hip -o k.o").unwrap();
        assert_eq!(
            p.command.args[p.command.args.len() - 4..],
            given_args[..],
            "{argv}"
        );
        let at = p
            .command
            .args
            .iter()
            .position(|a| a == barrier)
            .expect(&argv);
        assert_eq!(
            p.command.args[at - 3..at],
            ["-Xclang", "-mllvm", "-Xclang"],
            "{argv}"
        );
        assert_eq!(
            p.command
                .args
                .iter()
                .filter(|a| a.contains("mem-barrier"))
                .count(),
            1
        );
        assert_eq!(p.command.env("SQTT_MEM_BARRIER"), Some("none"), "{argv}");
        for link in ["k.o -o app", "-fgpu-rdc k.o -o app"] {
            let argv = format!("{link} {spelled}");
            let p = given(&argv, &[]).plan();
            assert!(
                !p.command
                    .args
                    .iter()
                    .any(|a| a.contains("sqtt-marker") || a.contains("mllvm")),
                "{argv}: {:?}",
                p.command.args
            );
            assert_eq!(p.command.env("SQTT_MEM_BARRIER"), Some("none"), "{argv}");
        }
    }
    // Probes and preprocessing get the arguments as given.
    let p = plan("-### -c k.hip -mllvm -sqtt-marker-mem-barrier=none");
    assert_eq!(
        extra(&p, "-### -c k.hip -mllvm -sqtt-marker-mem-barrier=none"),
        Vec::<String>::new()
    );
    // A bad value names the option; an unknown option is an error of its own (exit 2).
    let e = given("-c k.hip -mllvm -sqtt-marker-mem-barrier=sometimes", &[])
        .run(None)
        .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "plugin option -sqtt-marker-mem-barrier has the invalid value \"sometimes\""
        ),
        "{e}"
    );
    let e = given("-c k.hip -mllvm -sqtt-marker-mem=none", &[])
        .run(None)
        .unwrap_err();
    assert!(matches!(e, Error::PluginOption(_)), "{e:?}");
    assert_eq!(e.exit_code(), 2);
    // --sqtt-launch: taken out too, the value exported.
    let p = given(
        "-x hip -c k.hip -mllvm -sqtt-marker-scope-cu=-1 -o k.o",
        &[],
    )
    .run(Some("clang++"))
    .unwrap();
    let added = extra(&p, "-x hip -c k.hip -o k.o");
    assert!(
        added.contains(&"-sqtt-marker-scope-cu=0xFFFFFFFF".to_string()),
        "{added:?}"
    );
    assert_eq!(p.command.env("SQTT_SCOPE_CU"), Some("0xFFFFFFFF"));
}

/// The wrapper's arguments come before the user's, so a user option left without its value
/// (a trailing `-o`) cannot take one of them: hipcc reports it as without the wrapper.
#[test]
fn no_argument_of_the_wrapper_can_become_the_value_of_a_user_option() {
    for argv in [
        "-c k.hip -o",
        "k.hip -o",
        "-fgpu-rdc k.o -o",
        "-c k.hip -MF",
        "-c k.hip -Xclang",
    ] {
        let p = plan(argv);
        let given_args = shell_words::split(argv).unwrap();
        assert_eq!(p.command.args.last(), given_args.last(), "{argv}");
        assert!(!extra(&p, argv).is_empty(), "{argv}");
    }
}

/// A hipcc that cannot run is blamed on who named it: the variable, or the key of the file.
#[test]
fn the_configured_hipcc_is_named_with_where_it_was_set() {
    let mut g = given("-c k.hip", &[]);
    g.config_file = Some("/src/sqtt.toml");
    g.config_text = Some("hipcc = \"/opt/x/hipcc\"\n");
    let p = g.plan();
    assert_eq!(p.command.program, Path::new("/opt/x/hipcc"));
    assert_eq!(
        g.tools.named_by,
        Some(NamedBy::Setting(Origin::File {
            path: "/src/sqtt.toml".into(),
            key: "hipcc".into()
        }))
    );
    for argv in ["-c k.hip", "-v"] {
        let mut g = given(argv, &[("SQTT_HIPCC", "/y/hipcc")]);
        g.config_file = Some("/src/sqtt.toml");
        g.config_text = Some("hipcc = \"/opt/x/hipcc\"\n");
        assert_eq!(g.plan().command.program, Path::new("/y/hipcc"), "{argv}");
        assert_eq!(
            g.tools.named_by,
            Some(NamedBy::Setting(Origin::Env("SQTT_HIPCC"))),
            "{argv}"
        );
    }
}

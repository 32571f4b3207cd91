//! Classification of a hipcc argument vector, done first, from a table, before anything else.
//!
//! The wrapper never rewrites the user's arguments: it only reads them (and the `@response`
//! files they name) to decide what kind of step this is, which outputs it writes, and whether
//! those outputs hold device code to check. Whatever it cannot classify goes to hipcc unchanged.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// What a hipcc invocation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// Prints something about the compiler (`--version`, `-print-*`, `-###`, ...): untouched.
    Probe,
    /// `-E`, `-M`, `-MM`: preprocessing only.
    Preprocess,
    /// Compiles sources (`-c`, `-S`, `-fsyntax-only`, or compile and link).
    Compile,
    /// Links objects and libraries only.
    Link,
    /// Anything else: untouched.
    Unknown,
}

/// The result of classification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub kind: StepKind,
    /// Source inputs (by extension or `-x`).
    pub sources: Vec<PathBuf>,
    /// Object and library inputs.
    pub objects: Vec<PathBuf>,
    /// `-o` value.
    pub output: Option<PathBuf>,
    pub compile_only: bool,
    pub assembly: bool,
    pub emit_llvm: bool,
    pub syntax_only: bool,
    pub host_only: bool,
    pub device_only: bool,
    pub rdc: bool,
    /// A source is HIP (or CUDA) for a plain clang: `-x hip`, or a `.hip`/`.cu` file (hipcc
    /// compiles every source as HIP).
    pub hip: bool,
    /// `--version` (hipcc's own version line plus the plugin's).
    pub version: bool,
    /// `-v` (verbose).
    pub verbose: bool,
}

impl Classified {
    /// Whether the step ends in a link (a link step, or a compile without `-c`/`-S`/
    /// `-fsyntax-only`/`-emit-llvm`/`-E`).
    pub fn links(&self) -> bool {
        match self.kind {
            StepKind::Link => true,
            StepKind::Compile => {
                !(self.compile_only || self.assembly || self.syntax_only || self.emit_llvm)
            }
            _ => false,
        }
    }

    /// Whether a successful step leaves device code objects to check, and in which files.
    pub fn device_outputs(&self, cwd: &Path) -> Vec<PathBuf> {
        let checkable = match self.kind {
            StepKind::Compile => {
                !(self.assembly
                    || self.emit_llvm
                    || self.syntax_only
                    || self.host_only
                    || (self.rdc && self.compile_only))
            }
            StepKind::Link => true,
            _ => false,
        };
        if !checkable {
            return Vec::new();
        }
        if let Some(o) = &self.output {
            if o.as_os_str() == "-" {
                return Vec::new();
            }
            return vec![cwd.join(o)];
        }
        if self.kind == StepKind::Compile && self.compile_only {
            self.sources
                .iter()
                .filter_map(|s| s.file_stem())
                .map(|stem| {
                    let mut p = cwd.join(stem);
                    p.set_extension("o");
                    p
                })
                .collect()
        } else {
            vec![cwd.join("a.out")]
        }
    }
}

/// How an option is spelled and which arguments it consumes (clang's option kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// Exactly this argument.
    Flag,
    /// Exactly this argument; the next one is its value (`-MF dep.d`).
    Separate,
    /// Begins with this; the rest of the argument is its value (`-print-file-name=x`).
    Joined,
    /// `-o out` or `-oout`.
    JoinedOrSeparate,
    /// Begins with this, and the next argument belongs to it too: `-Xarch_<arch> OPTION` passes
    /// OPTION to one offload arch, so it is never an input.
    JoinedAndSeparate,
}

/// Effect of an option on classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    None,
    Probe,
    Version,
    /// `-v`: a probe when there are no inputs.
    Verbose,
    Preprocess,
    CompileOnly,
    Assembly,
    EmitLlvm,
    SyntaxOnly,
    HostOnly,
    DeviceOnly,
    Rdc,
    NoRdc,
    Output,
    Language,
    /// `-`: standard input, a source when a language is given (`-x hip -`), else nothing.
    Stdin,
}

/// The options the classification reads, first match wins. Every other argument that begins
/// with `-` is an option without effect; every other argument is an input.
const OPTIONS: &[(&str, Form, Effect)] = &[
    ("-", Form::Flag, Effect::Stdin),
    ("--version", Form::Flag, Effect::Version),
    ("-version", Form::Flag, Effect::Version),
    ("--short-version", Form::Flag, Effect::Probe),
    ("--cxxflags", Form::Flag, Effect::Probe),
    ("--ldflags", Form::Flag, Effect::Probe),
    ("--help", Form::Flag, Effect::Probe),
    ("-help", Form::Flag, Effect::Probe),
    ("-###", Form::Flag, Effect::Probe),
    ("-dumpmachine", Form::Flag, Effect::Probe),
    ("-dumpversion", Form::Flag, Effect::Probe),
    ("-dumpspecs", Form::Flag, Effect::Probe),
    ("-v", Form::Flag, Effect::Verbose),
    ("-E", Form::Flag, Effect::Preprocess),
    ("-M", Form::Flag, Effect::Preprocess),
    ("-MM", Form::Flag, Effect::Preprocess),
    ("-c", Form::Flag, Effect::CompileOnly),
    ("-S", Form::Flag, Effect::Assembly),
    ("-emit-llvm", Form::Flag, Effect::EmitLlvm),
    ("-fsyntax-only", Form::Flag, Effect::SyntaxOnly),
    ("--cuda-host-only", Form::Flag, Effect::HostOnly),
    ("--offload-host-only", Form::Flag, Effect::HostOnly),
    ("--cuda-device-only", Form::Flag, Effect::DeviceOnly),
    ("--offload-device-only", Form::Flag, Effect::DeviceOnly),
    ("--genco", Form::Flag, Effect::DeviceOnly),
    ("-fgpu-rdc", Form::Flag, Effect::Rdc),
    ("-fno-gpu-rdc", Form::Flag, Effect::NoRdc),
    // Options whose value is the next argument (never an input file).
    ("-MF", Form::Separate, Effect::None),
    ("-MT", Form::Separate, Effect::None),
    ("-MQ", Form::Separate, Effect::None),
    ("-I", Form::Separate, Effect::None),
    ("-D", Form::Separate, Effect::None),
    ("-U", Form::Separate, Effect::None),
    ("-L", Form::Separate, Effect::None),
    ("-l", Form::Separate, Effect::None),
    ("-F", Form::Separate, Effect::None),
    ("-include", Form::Separate, Effect::None),
    ("-imacros", Form::Separate, Effect::None),
    ("-isystem", Form::Separate, Effect::None),
    ("-idirafter", Form::Separate, Effect::None),
    ("-iquote", Form::Separate, Effect::None),
    ("-isysroot", Form::Separate, Effect::None),
    ("-iprefix", Form::Separate, Effect::None),
    ("-iwithprefix", Form::Separate, Effect::None),
    ("-include-pch", Form::Separate, Effect::None),
    ("--sysroot", Form::Separate, Effect::None),
    ("-target", Form::Separate, Effect::None),
    ("-arch", Form::Separate, Effect::None),
    ("-Xlinker", Form::Separate, Effect::None),
    ("-Xclang", Form::Separate, Effect::None),
    ("-Xoffload-linker", Form::Separate, Effect::None),
    ("-Xassembler", Form::Separate, Effect::None),
    ("-Xpreprocessor", Form::Separate, Effect::None),
    ("-mllvm", Form::Separate, Effect::None),
    ("-T", Form::Separate, Effect::None),
    ("-u", Form::Separate, Effect::None),
    ("-z", Form::Separate, Effect::None),
    ("-gcc-toolchain", Form::Separate, Effect::None),
    ("--gcc-toolchain", Form::Separate, Effect::None),
    ("-B", Form::Separate, Effect::None),
    ("-MJ", Form::Separate, Effect::None),
    ("-serialize-diagnostics", Form::Separate, Effect::None),
    ("--serialize-diagnostics", Form::Separate, Effect::None),
    ("-ferror-limit", Form::Separate, Effect::None),
    // Options matched by their beginning.
    ("-print-", Form::Joined, Effect::Probe),
    ("--print-", Form::Joined, Effect::Probe),
    ("-o", Form::JoinedOrSeparate, Effect::Output),
    ("-x", Form::JoinedOrSeparate, Effect::Language),
    ("--offload-arch=", Form::Joined, Effect::None),
    ("--rocm-path=", Form::Joined, Effect::None),
    // -Xarch_device, -Xarch_host, -Xarch_gfx90a, ...
    ("-Xarch_", Form::JoinedAndSeparate, Effect::None),
];

/// The row of [`OPTIONS`] an argument that begins with `-` matches, and whether it takes the
/// next argument: (effect, joined value, takes the next argument).
fn lookup(a: &str) -> Option<(Effect, Option<&str>, bool)> {
    OPTIONS.iter().find_map(|&(name, form, effect)| {
        let exact = a == name;
        let rest = a.strip_prefix(name);
        match form {
            Form::Flag => exact.then_some((effect, None, false)),
            Form::Separate => exact.then_some((effect, None, true)),
            Form::Joined => rest.map(|v| (effect, Some(v), false)),
            Form::JoinedOrSeparate if exact => Some((effect, None, true)),
            Form::JoinedOrSeparate => rest.map(|v| (effect, Some(v), false)),
            Form::JoinedAndSeparate => rest.map(|v| (effect, Some(v), true)),
        }
    })
}

/// Extensions of source files.
const SOURCE_EXT: &[&str] = &[
    "hip", "cu", "cpp", "cc", "cxx", "c++", "cp", "C", "c", "CPP", "ii", "i", "cppm", "hpp", "h",
];

fn is_source(p: &str) -> bool {
    Path::new(p)
        .extension()
        .map(|e| SOURCE_EXT.contains(&e.to_string_lossy().as_ref()))
        .unwrap_or(false)
}

/// `-x hip`, `-x cuda` (and their preprocessed forms).
fn is_hip_language(l: &str) -> bool {
    l.starts_with("hip") || l.starts_with("cuda")
}

fn is_hip_source(p: &str) -> bool {
    Path::new(p)
        .extension()
        .is_some_and(|e| e == "hip" || e == "cu")
}

/// How deep `@file`s may name other `@file`s.
pub const MAX_RESPONSE_DEPTH: usize = 10;
/// How many arguments the expansion of all `@file`s may give.
pub const MAX_RESPONSE_ARGS: usize = 1_000_000;
/// How many bytes the expanded arguments may hold in total, and the response files read.
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// Expands `@file` arguments (recursively) for classification only. A file that cannot be read
/// (missing, or not a regular file) is kept as the literal argument, as clang does. The expansion
/// is bounded: a file that names itself (directly or through others), nesting deeper than
/// [`MAX_RESPONSE_DEPTH`], more than [`MAX_RESPONSE_ARGS`] arguments or more than
/// [`MAX_RESPONSE_BYTES`] bytes (read, or expanded) is an error naming the files and the limit
/// (hipcc is not run). Each file is read and measured once, whatever the number of times it is
/// named, so an exploding file is refused before anything is expanded.
pub fn expand_response_files(args: &[String], cwd: &Path) -> Result<Vec<String>, String> {
    let mut e = Expansion {
        cwd,
        keys: HashMap::new(),
        files: HashMap::new(),
        sizes: HashMap::new(),
        read: 0,
        chain: Vec::new(),
    };
    let (n, bytes, _) = e.measure_words(args)?;
    if n > MAX_RESPONSE_ARGS || bytes > MAX_RESPONSE_BYTES {
        return Err(format!(
            "the arguments and their response files expand to {n} arguments of {bytes} bytes; at \
             most {MAX_RESPONSE_ARGS} arguments and {MAX_RESPONSE_BYTES} bytes are accepted; \
             hipcc was not run"
        ));
    }
    let mut out = Vec::with_capacity(n);
    e.expand(args, &mut out);
    Ok(out)
}

/// The words of a response file, shared by every place that names it.
type Words = Rc<Vec<String>>;

struct Expansion<'a> {
    cwd: &'a Path,
    /// Canonical path of each `@file` argument (`None`: no such file).
    keys: HashMap<String, Option<PathBuf>>,
    /// Words of each file read, by canonical path (`None`: unreadable, kept literal).
    files: HashMap<PathBuf, Option<Words>>,
    /// What each file expands to: arguments, bytes, nesting depth below it.
    sizes: HashMap<PathBuf, (usize, usize, usize)>,
    /// Bytes of response files read.
    read: usize,
    /// The `@file`s being measured, outermost first.
    chain: Vec<(PathBuf, String)>,
}

impl Expansion<'_> {
    fn chain_text(&self, last: &str) -> String {
        self.chain
            .iter()
            .map(|(_, a)| a.as_str())
            .chain([last])
            .collect::<Vec<_>>()
            .join(" -> ")
    }

    /// `@a`, or `@a (named by @r -> @a)` inside other response files.
    fn named(&self, a: &str) -> String {
        if self.chain.is_empty() {
            a.to_string()
        } else {
            format!("{a} ({})", self.chain_text(a))
        }
    }

    /// The file an `@file` argument names and its words, or `None` (kept literal).
    fn file(&mut self, arg: &str) -> Result<Option<(PathBuf, Words)>, String> {
        let Some(f) = arg.strip_prefix('@') else {
            return Ok(None);
        };
        let key = match self.keys.get(f) {
            Some(k) => k.clone(),
            None => {
                let k = self.cwd.join(f).canonicalize().ok();
                self.keys.insert(f.to_string(), k.clone());
                k
            }
        };
        let Some(key) = key else { return Ok(None) };
        if let Some(w) = self.files.get(&key) {
            return Ok(w.clone().map(|w| (key, w)));
        }
        let words = match sqtt_files::input::open_regular(&key) {
            Err(_) => None,
            Ok((file, len)) => {
                if len > (MAX_RESPONSE_BYTES - self.read) as u64 {
                    return Err(format!(
                        "response file {arg} is {len} bytes: response files may hold at most \
                         {MAX_RESPONSE_BYTES} bytes in total; hipcc was not run"
                    ));
                }
                match sqtt_files::input::read_all(&file, len) {
                    Err(_) => None,
                    Ok(bytes) => {
                        self.read += bytes.len();
                        let text = String::from_utf8_lossy(&bytes);
                        let words = shell_words::split(&text).unwrap_or_else(|_| {
                            text.split_whitespace().map(String::from).collect()
                        });
                        Some(Rc::new(words))
                    }
                }
            }
        };
        self.files.insert(key.clone(), words.clone());
        Ok(words.map(|w| (key, w)))
    }

    /// Arguments, bytes and nesting depth `args` expand to (saturating), refusing cycles and
    /// nesting deeper than the limit.
    fn measure_words(&mut self, args: &[String]) -> Result<(usize, usize, usize), String> {
        let (mut n, mut bytes, mut depth) = (0usize, 0usize, 0usize);
        for a in args {
            let Some((key, words)) = self.file(a)? else {
                n = n.saturating_add(1);
                bytes = bytes.saturating_add(a.len());
                continue;
            };
            if self.chain.iter().any(|(k, _)| *k == key) {
                return Err(format!(
                    "response file {a} names itself ({}); hipcc was not run",
                    self.chain_text(a)
                ));
            }
            let size = match self.sizes.get(&key) {
                Some(s) => *s,
                None => {
                    if self.chain.len() == MAX_RESPONSE_DEPTH {
                        return Err(format!(
                            "response files nest more than {MAX_RESPONSE_DEPTH} deep ({}); \
                             hipcc was not run",
                            self.chain_text(a)
                        ));
                    }
                    self.chain.push((key.clone(), a.clone()));
                    let (wn, wb, wd) = self.measure_words(&words)?;
                    self.chain.pop();
                    let s = (wn, wb, wd + 1);
                    self.sizes.insert(key, s);
                    s
                }
            };
            if self.chain.len() + size.2 > MAX_RESPONSE_DEPTH {
                return Err(format!(
                    "response files nest more than {MAX_RESPONSE_DEPTH} deep (from {}); hipcc \
                     was not run",
                    self.named(a)
                ));
            }
            if size.0 > MAX_RESPONSE_ARGS || size.1 > MAX_RESPONSE_BYTES {
                return Err(format!(
                    "response file {} expands to {} arguments of {} bytes; at most \
                     {MAX_RESPONSE_ARGS} arguments and {MAX_RESPONSE_BYTES} bytes are accepted; \
                     hipcc was not run",
                    self.named(a),
                    size.0,
                    size.1
                ));
            }
            n = n.saturating_add(size.0);
            bytes = bytes.saturating_add(size.1);
            depth = depth.max(size.2);
        }
        Ok((n, bytes, depth))
    }

    /// Expands what [`Self::measure_words`] accepted.
    fn expand(&mut self, args: &[String], out: &mut Vec<String>) {
        for a in args {
            match self.file(a) {
                Ok(Some((_, words))) => self.expand(&words, out),
                _ => out.push(a.clone()),
            }
        }
    }
}

/// The user's plugin options, taken out of the arguments: the wrapper folds them into the
/// settings (they win over the variables and the file, as in the plugin) and passes the result
/// on in its own spelling, to the compilers that load the plugin only (a plain `-mllvm` also
/// reaches lld, which knows no such option and fails).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PluginOptions {
    /// The arguments without them.
    pub rest: Vec<String>,
    /// `(option, value)` in the order given: `("sqtt-marker-mem-barrier", "none")`.
    pub given: Vec<(String, String)>,
}

impl PluginOptions {
    /// The value given last for `option` (as LLVM takes the last occurrence).
    pub fn value(&self, option: &str) -> Option<String> {
        self.given
            .iter()
            .rev()
            .find(|(o, _)| o == option)
            .map(|(_, v)| v.clone())
    }
}

/// What a plugin option of the user looks like: `-sqtt-marker-NAME=VALUE` (LLVM also takes
/// `--sqtt-marker-...`).
const PLUGIN_OPTION_PREFIX: &str = "sqtt-marker-";

/// Takes the plugin options out of `args` (not out of `@files`, which pass unchanged), in the
/// three spellings that reach clang's cc1: `-mllvm OPT`, `-mllvm=OPT` and `-Xclang -mllvm -Xclang
/// OPT`. Values of other options are skipped as [`OPTIONS`] says (`-Xlinker -mllvm` is the
/// linker's). An option of the plugin's prefix that it does not have, or without a value, is an
/// error naming it and the known ones.
pub fn take_plugin_options(args: &[String]) -> Result<PluginOptions, String> {
    let mut out = PluginOptions::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let at = |k: usize| args.get(i + k).map(String::as_str);
        let (option, used) = if a == "-mllvm" {
            (at(1), 2)
        } else if let Some(v) = a.strip_prefix("-mllvm=") {
            (Some(v), 1)
        } else if a == "-Xclang" && at(1) == Some("-mllvm") && at(2) == Some("-Xclang") {
            (at(3), 4)
        } else {
            (None, 0)
        };
        let name = option.and_then(|o| {
            o.strip_prefix("--")
                .or_else(|| o.strip_prefix('-'))
                .filter(|n| n.starts_with(PLUGIN_OPTION_PREFIX))
        });
        if let (Some(name), Some(spelled)) = (name, option) {
            let given = args[i..i + used].join(" ");
            let (name, value) = name.split_once('=').ok_or_else(|| {
                format!(
                    "the plugin option {spelled} (in `{}`) needs a value: -mllvm {spelled}=VALUE",
                    sqtt_config::show::cut(&given)
                )
            })?;
            if sqtt_config::setting::by_option(name).is_none() {
                let known: Vec<String> = sqtt_config::setting::instrumentation()
                    .filter_map(|r| r.option.map(|o| format!("-{o}")))
                    .collect();
                return Err(format!(
                    "unknown plugin option -{} (in `{}`); the plugin's options are {}",
                    sqtt_config::show::cut(name),
                    sqtt_config::show::cut(&given),
                    known.join(", ")
                ));
            }
            out.given.push((name.to_string(), value.to_string()));
            i += used;
            continue;
        }
        // Another argument, with the value it takes.
        let takes = if a.starts_with('-') {
            lookup(a).map_or(0, |(_, _, separate)| usize::from(separate))
        } else {
            0
        };
        let end = (i + 1 + takes).min(args.len());
        out.rest.extend(args[i..end].iter().cloned());
        i = end;
    }
    Ok(out)
}

/// Classifies an argument vector (without the program name; `@files` already expanded).
pub fn classify(args: &[String]) -> Classified {
    let mut c = Classified {
        kind: StepKind::Unknown,
        sources: Vec::new(),
        objects: Vec::new(),
        output: None,
        compile_only: false,
        assembly: false,
        emit_llvm: false,
        syntax_only: false,
        host_only: false,
        device_only: false,
        rdc: false,
        hip: false,
        version: false,
        verbose: false,
    };
    let mut probe = false;
    let mut preprocess = false;
    let mut language: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if !a.starts_with('-') {
            if language.as_deref().is_some_and(|l| l != "none") || is_source(a) {
                c.hip |= match language.as_deref() {
                    Some("none") | None => is_hip_source(a),
                    Some(l) => is_hip_language(l),
                };
                c.sources.push(PathBuf::from(a));
            } else {
                // Objects, libraries and unknown file kinds: linker inputs, as for clang.
                c.objects.push(PathBuf::from(a));
            }
            continue;
        }
        let Some((effect, joined, separate)) = lookup(a) else {
            continue;
        };
        let value = if separate {
            i += 1;
            args.get(i - 1).map(String::as_str)
        } else {
            joined
        };
        match effect {
            Effect::None => {}
            Effect::Probe => probe = true,
            Effect::Version => {
                probe = true;
                c.version = true;
            }
            Effect::Verbose => c.verbose = true,
            Effect::Preprocess => preprocess = true,
            Effect::CompileOnly => c.compile_only = true,
            Effect::Assembly => c.assembly = true,
            Effect::EmitLlvm => c.emit_llvm = true,
            Effect::SyntaxOnly => c.syntax_only = true,
            Effect::HostOnly => c.host_only = true,
            Effect::DeviceOnly => c.device_only = true,
            Effect::Rdc => c.rdc = true,
            Effect::NoRdc => c.rdc = false,
            Effect::Output => c.output = value.map(PathBuf::from),
            Effect::Language => language = value.map(str::to_string),
            Effect::Stdin => {
                if language.is_some() {
                    c.hip |= language.as_deref().is_some_and(is_hip_language);
                    c.sources.push(PathBuf::from("-"));
                }
            }
        }
    }
    c.kind = if probe {
        StepKind::Probe
    } else if preprocess {
        StepKind::Preprocess
    } else if !c.sources.is_empty() {
        StepKind::Compile
    } else if !(c.objects.is_empty() || c.compile_only || c.assembly || c.syntax_only) {
        StepKind::Link
    } else if c.verbose {
        StepKind::Probe
    } else {
        StepKind::Unknown
    };
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cl(s: &str) -> Classified {
        classify(&shell_words::split(s).unwrap())
    }

    /// What a plain clang compiles as HIP: `-x hip` (or cuda), or a .hip/.cu source.
    #[test]
    fn hip_sources() {
        for (argv, hip) in [
            ("-x hip -c k.cpp", true),
            ("-xhip -c k.cpp", true),
            ("-x cuda -c k.cpp", true),
            ("-c k.hip", true),
            ("-c k.cu -o k.o", true),
            ("-c k.cpp", false),
            ("-x c++ -c k.hip", false),
            ("-x none -c k.hip", true),
            ("-x hip -", true),
            ("k.o -o app", false),
        ] {
            assert_eq!(cl(argv).hip, hip, "{argv}");
        }
    }

    #[test]
    fn table() {
        use StepKind::*;
        let cases: &[(&str, StepKind)] = &[
            ("--version", Probe),
            ("-v", Probe),
            ("-###", Probe),
            ("-### -c k.hip", Probe),
            ("-print-prog-name=ld", Probe),
            ("--print-search-dirs", Probe),
            ("-print-libgcc-file-name", Probe),
            ("-dumpmachine", Probe),
            ("-dumpversion", Probe),
            ("--short-version", Probe),
            ("-E k.hip", Preprocess),
            ("-M k.hip", Preprocess),
            ("-MM k.hip", Preprocess),
            ("-c k.hip -MD -MF k.d -MT k.o -MQ k.o -MP -o k.o", Compile),
            ("-c k.hip -MMD", Compile),
            ("-v -c k.hip", Compile),
            ("--offload-arch=gfx90a k.hip -o k", Compile),
            ("-S k.hip", Compile),
            ("-fsyntax-only k.cu", Compile),
            ("-x hip k.txt -c", Compile),
            ("-xhip k.txt -c", Compile),
            ("k.o m.o -o app", Link),
            ("k.o libx.a libm.so.6 -o app", Link),
            ("-shared k.o -o libk.so", Link),
            ("", Unknown),
            ("-O2", Unknown),
            ("-I -c", Unknown),
            ("-Xarch_gfx90a -O1 k.o", Link),
            ("-Xarch_gfx90a k.hip", Unknown),
            ("-o k.hip", Unknown),
            ("-Xarch_device -fno-gpu-rdc k.hip -c", Compile),
            ("-Xarch_host k.hip", Unknown),
            ("-Xarch_ k.hip", Unknown),
            ("-x hip - -c", Compile),
            ("-xhip -", Compile),
            ("-c -", Unknown),
            ("-E -x hip -", Preprocess),
            ("- k.o -o app", Link),
        ];
        for (args, want) in cases {
            assert_eq!(cl(args).kind, *want, "{args}");
        }
    }

    #[test]
    fn no_row_is_shadowed_by_an_earlier_one() {
        // First match wins: a row that an earlier prefix row already matches would never apply.
        for (i, &(name, _, effect)) in OPTIONS.iter().enumerate() {
            let (found, _, _) = lookup(name).unwrap();
            assert_eq!(found, effect, "{name}");
            for &(earlier, form, _) in &OPTIONS[..i] {
                let prefix = matches!(
                    form,
                    Form::Joined | Form::JoinedOrSeparate | Form::JoinedAndSeparate
                );
                assert!(
                    !(prefix && name.starts_with(earlier)),
                    "{name} is shadowed by {earlier}"
                );
            }
        }
    }

    #[test]
    fn stdin_and_xarch_forms() {
        let c = cl("-x hip - -c -o k.o");
        assert_eq!(c.sources, vec![PathBuf::from("-")]);
        assert_eq!(c.output, Some(PathBuf::from("k.o")));
        // Without a language, `-` is neither a source nor an object.
        let c = cl("- k.o");
        assert!(c.sources.is_empty());
        assert_eq!(c.objects, vec![PathBuf::from("k.o")]);
        // -Xarch_<arch> takes the next argument, whatever it looks like; the joined arch is not
        // an input either.
        for arch in ["device", "host", "gfx90a", "gfx1100"] {
            let c = cl(&format!("-Xarch_{arch} -o -Xarch_{arch} out.o -c k.hip"));
            assert_eq!(c.output, None, "{arch}");
            assert_eq!(c.sources, vec![PathBuf::from("k.hip")], "{arch}");
            assert!(c.objects.is_empty(), "{arch}");
        }
        // Joined and separate values of -o and -x.
        assert_eq!(cl("-oout k.hip").output, Some(PathBuf::from("out")));
        assert_eq!(cl("-x hip k.txt").sources, vec![PathBuf::from("k.txt")]);
        assert_eq!(cl("-xnone k.txt").objects, vec![PathBuf::from("k.txt")]);
    }

    fn taken(s: &str) -> Result<PluginOptions, String> {
        take_plugin_options(&shell_words::split(s).unwrap())
    }

    #[test]
    fn plugin_options_are_taken_out_in_every_spelling() {
        let p = taken(
            "-c k.hip -mllvm -sqtt-marker-mem-barrier=none -O2 -mllvm=--sqtt-marker-scope-cu=-1 \
             -Xclang -mllvm -Xclang -sqtt-marker-mem-barrier=asm -o k.o",
        )
        .unwrap();
        assert_eq!(p.rest, ["-c", "k.hip", "-O2", "-o", "k.o"]);
        assert_eq!(p.value("sqtt-marker-mem-barrier").as_deref(), Some("asm"));
        assert_eq!(p.value("sqtt-marker-scope-cu").as_deref(), Some("-1"));
        assert_eq!(p.value("sqtt-marker-scope-wg"), None);
        // Other LLVM options, and values of other options, stay.
        let keep = "-mllvm -amdgpu-early-inline-all=true -Xclang -mllvm -Xclang -x \
                    -Xlinker -mllvm -Xlinker -sqtt-marker-mem-barrier=none -o -mllvm k.hip";
        let p = taken(keep).unwrap();
        assert_eq!(p.rest, shell_words::split(keep).unwrap());
        assert!(p.given.is_empty());
        // A trailing -mllvm is hipcc's to report.
        assert_eq!(
            taken("-c k.hip -mllvm").unwrap().rest,
            ["-c", "k.hip", "-mllvm"]
        );
    }

    #[test]
    fn unknown_plugin_options_and_missing_values_are_errors() {
        let e = taken("-c k.hip -mllvm -sqtt-marker-mem-barier=none").unwrap_err();
        assert!(
            e.starts_with(
                "unknown plugin option -sqtt-marker-mem-barier (in `-mllvm \
                 -sqtt-marker-mem-barier=none`); the plugin's options are \
                 -sqtt-marker-instrument-functions, "
            ),
            "{e}"
        );
        let e = taken("-Xclang -mllvm -Xclang -sqtt-marker-scope-cu").unwrap_err();
        assert_eq!(
            e,
            "the plugin option -sqtt-marker-scope-cu (in `-Xclang -mllvm -Xclang \
             -sqtt-marker-scope-cu`) needs a value: -mllvm -sqtt-marker-scope-cu=VALUE"
        );
    }

    #[test]
    fn outputs() {
        let cwd = Path::new("/w");
        let c = cl("-c a.hip sub/b.cu");
        assert_eq!(
            c.device_outputs(cwd),
            vec![PathBuf::from("/w/a.o"), PathBuf::from("/w/b.o")]
        );
        assert_eq!(
            cl("a.hip -o x").device_outputs(cwd),
            vec![PathBuf::from("/w/x")]
        );
        assert_eq!(
            cl("a.hip").device_outputs(cwd),
            vec![PathBuf::from("/w/a.out")]
        );
        assert_eq!(cl("-ox -c a.hip").output, Some(PathBuf::from("x")));
        assert!(cl("-S a.hip").device_outputs(cwd).is_empty());
        assert!(cl("-c -emit-llvm a.hip").device_outputs(cwd).is_empty());
        assert!(cl("-c -fgpu-rdc a.hip").device_outputs(cwd).is_empty());
        assert!(!cl("-c -fgpu-rdc -fno-gpu-rdc a.hip")
            .device_outputs(cwd)
            .is_empty());
        assert!(cl("-c --cuda-host-only a.hip")
            .device_outputs(cwd)
            .is_empty());
        assert!(cl("-c a.hip -o -").device_outputs(cwd).is_empty());
        assert_eq!(
            cl("-fgpu-rdc a.o b.o -o app").device_outputs(cwd),
            vec![PathBuf::from("/w/app")]
        );
        // -MF's value is not an input, -o's value is not an input.
        let c = cl("-c a.hip -MF dep.cpp -o out.cpp");
        assert_eq!(c.sources, vec![PathBuf::from("a.hip")]);
    }

    #[test]
    fn response_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("r1"), "-c 'my k.hip' @r2").unwrap();
        std::fs::write(d.path().join("r2"), "-o \"out file.o\"").unwrap();
        let args = expand_response_files(&["@r1".into(), "@missing".into()], d.path()).unwrap();
        assert_eq!(args, vec!["-c", "my k.hip", "-o", "out file.o", "@missing"]);
        let c = classify(&args);
        assert_eq!(c.kind, StepKind::Compile);
        assert_eq!(c.output, Some(PathBuf::from("out file.o")));
    }

    fn write(d: &Path, name: &str, text: &str) {
        std::fs::write(d.join(name), text).unwrap();
    }

    fn expand_err(d: &Path, arg: &str) -> String {
        let start = std::time::Instant::now();
        let e = expand_response_files(&["-c".into(), arg.into()], d).unwrap_err();
        assert!(start.elapsed() < std::time::Duration::from_millis(500));
        e
    }

    #[test]
    fn response_files_that_name_themselves_are_refused() {
        let d = tempfile::tempdir().unwrap();
        // Issue 15: a file naming itself 8 times expanded exponentially for minutes.
        write(d.path(), "self", &"@self ".repeat(8));
        assert_eq!(
            expand_err(d.path(), "@self"),
            "response file @self names itself (@self -> @self); hipcc was not run"
        );
        // Through another file, and through another name of the same file.
        write(d.path(), "a", "-O2 @b");
        write(d.path(), "b", "-g @./a");
        assert_eq!(
            expand_err(d.path(), "@a"),
            "response file @./a names itself (@a -> @b -> @./a); hipcc was not run"
        );
    }

    #[test]
    fn exploding_response_files_are_refused_at_once() {
        let d = tempfile::tempdir().unwrap();
        // l0 names l1 8 times, ... : 8^9 copies of l9's two arguments.
        for i in 0..9 {
            write(
                d.path(),
                &format!("l{i}"),
                &format!("@l{} ", i + 1).repeat(8),
            );
        }
        write(d.path(), "l9", "-DX a.hip");
        let e = expand_err(d.path(), "@l0");
        assert!(
            e.starts_with("response file @l2 (@l0 -> @l1 -> @l2) expands to 4194304 arguments"),
            "{e}"
        );
        assert!(e.contains("at most 1000000 arguments"), "{e}");
        // Just under the bound is expanded: 8^6 * 2 = 524288 arguments.
        let args = expand_response_files(&["@l3".into()], d.path()).unwrap();
        assert_eq!(args.len(), 524_288);
        // Many arguments given directly and through files add up.
        let e = expand_response_files(&["@l3".into(), "@l3".into()], d.path()).unwrap_err();
        assert!(e.contains("expand to 1048576 arguments"), "{e}");
    }

    #[test]
    fn response_files_nest_at_most_ten_deep() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..11 {
            write(d.path(), &format!("n{i}"), &format!("-DL{i} @n{}", i + 1));
        }
        write(d.path(), "n11", "-c");
        let e = expand_err(d.path(), "@n0");
        assert!(
            e.starts_with("response files nest more than 10 deep"),
            "{e}"
        );
        // Ten deep is fine.
        let args = expand_response_files(&["@n2".into()], d.path()).unwrap();
        assert_eq!(args.len(), 10);
    }

    #[test]
    fn response_files_are_bounded_in_bytes_and_only_regular_files_are_read() {
        let d = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(d.path().join("huge")).unwrap();
        f.set_len(MAX_RESPONSE_BYTES as u64 + 1).unwrap();
        let e = expand_err(d.path(), "@huge");
        assert!(
            e.starts_with("response file @huge is 67108865 bytes"),
            "{e}"
        );
        // A directory or a device is not expanded: kept as the literal argument for hipcc.
        std::fs::create_dir(d.path().join("dir")).unwrap();
        crate::device::char_device(d.path());
        let args = expand_response_files(&["@dir".into(), "@zero".into()], d.path());
        assert_eq!(args.unwrap(), vec!["@dir", "@zero"]);
    }
}

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

/// How an option consumes arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arity {
    /// A flag, or `-opt=value` / `-optVALUE` in one argument.
    Flag,
    /// Takes the next argument when given alone (`-o out`); `-ofile` also accepted.
    Separate,
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
}

/// Options matched exactly.
const EXACT: &[(&str, Arity, Effect)] = &[
    ("--version", Arity::Flag, Effect::Version),
    ("-version", Arity::Flag, Effect::Version),
    ("--short-version", Arity::Flag, Effect::Probe),
    ("--cxxflags", Arity::Flag, Effect::Probe),
    ("--ldflags", Arity::Flag, Effect::Probe),
    ("--help", Arity::Flag, Effect::Probe),
    ("-help", Arity::Flag, Effect::Probe),
    ("-###", Arity::Flag, Effect::Probe),
    ("-dumpmachine", Arity::Flag, Effect::Probe),
    ("-dumpversion", Arity::Flag, Effect::Probe),
    ("-dumpspecs", Arity::Flag, Effect::Probe),
    ("-v", Arity::Flag, Effect::Verbose),
    ("-E", Arity::Flag, Effect::Preprocess),
    ("-M", Arity::Flag, Effect::Preprocess),
    ("-MM", Arity::Flag, Effect::Preprocess),
    ("-c", Arity::Flag, Effect::CompileOnly),
    ("-S", Arity::Flag, Effect::Assembly),
    ("-emit-llvm", Arity::Flag, Effect::EmitLlvm),
    ("-fsyntax-only", Arity::Flag, Effect::SyntaxOnly),
    ("--cuda-host-only", Arity::Flag, Effect::HostOnly),
    ("--offload-host-only", Arity::Flag, Effect::HostOnly),
    ("--cuda-device-only", Arity::Flag, Effect::DeviceOnly),
    ("--offload-device-only", Arity::Flag, Effect::DeviceOnly),
    ("--genco", Arity::Flag, Effect::DeviceOnly),
    ("-fgpu-rdc", Arity::Flag, Effect::Rdc),
    ("-fno-gpu-rdc", Arity::Flag, Effect::NoRdc),
    ("-o", Arity::Separate, Effect::Output),
    ("-x", Arity::Separate, Effect::Language),
    // Options whose value is the next argument (never an input file).
    ("-MF", Arity::Separate, Effect::None),
    ("-MT", Arity::Separate, Effect::None),
    ("-MQ", Arity::Separate, Effect::None),
    ("-I", Arity::Separate, Effect::None),
    ("-D", Arity::Separate, Effect::None),
    ("-U", Arity::Separate, Effect::None),
    ("-L", Arity::Separate, Effect::None),
    ("-l", Arity::Separate, Effect::None),
    ("-F", Arity::Separate, Effect::None),
    ("-include", Arity::Separate, Effect::None),
    ("-imacros", Arity::Separate, Effect::None),
    ("-isystem", Arity::Separate, Effect::None),
    ("-idirafter", Arity::Separate, Effect::None),
    ("-iquote", Arity::Separate, Effect::None),
    ("-isysroot", Arity::Separate, Effect::None),
    ("-iprefix", Arity::Separate, Effect::None),
    ("-iwithprefix", Arity::Separate, Effect::None),
    ("-include-pch", Arity::Separate, Effect::None),
    ("--sysroot", Arity::Separate, Effect::None),
    ("-target", Arity::Separate, Effect::None),
    ("-arch", Arity::Separate, Effect::None),
    ("-Xlinker", Arity::Separate, Effect::None),
    ("-Xclang", Arity::Separate, Effect::None),
    ("-Xarch_device", Arity::Separate, Effect::None),
    ("-Xarch_host", Arity::Separate, Effect::None),
    ("-Xoffload-linker", Arity::Separate, Effect::None),
    ("-Xassembler", Arity::Separate, Effect::None),
    ("-Xpreprocessor", Arity::Separate, Effect::None),
    ("-mllvm", Arity::Separate, Effect::None),
    ("-T", Arity::Separate, Effect::None),
    ("-u", Arity::Separate, Effect::None),
    ("-z", Arity::Separate, Effect::None),
    ("-gcc-toolchain", Arity::Separate, Effect::None),
    ("--gcc-toolchain", Arity::Separate, Effect::None),
    ("-B", Arity::Separate, Effect::None),
    ("-MJ", Arity::Separate, Effect::None),
    ("-serialize-diagnostics", Arity::Separate, Effect::None),
    ("--serialize-diagnostics", Arity::Separate, Effect::None),
    ("-ferror-limit", Arity::Separate, Effect::None),
];

/// Options matched by prefix (joined values: `-ofile`, `-xhip`, `-print-file-name=...`).
const PREFIX: &[(&str, Effect)] = &[
    ("-print-", Effect::Probe),
    ("--print-", Effect::Probe),
    ("-o", Effect::Output),
    ("-x", Effect::Language),
    ("--offload-arch=", Effect::None),
    ("--rocm-path=", Effect::None),
];

/// Extensions of source files.
const SOURCE_EXT: &[&str] = &[
    "hip", "cu", "cpp", "cc", "cxx", "c++", "cp", "C", "c", "CPP", "ii", "i", "cppm", "hpp", "h",
];
/// Extensions of object and library inputs.
const OBJECT_EXT: &[&str] = &["o", "obj", "a", "so", "lo", "bc", "ll", "s", "S"];

fn is_object(p: &str) -> bool {
    let name = Path::new(p)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.contains(".so.") {
        return true;
    }
    Path::new(p)
        .extension()
        .map(|e| OBJECT_EXT.contains(&e.to_string_lossy().as_ref()))
        .unwrap_or(false)
}

fn is_source(p: &str) -> bool {
    Path::new(p)
        .extension()
        .map(|e| SOURCE_EXT.contains(&e.to_string_lossy().as_ref()))
        .unwrap_or(false)
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
        let words = match sqtt_codeobj::file::open_regular(&key) {
            Err(_) => None,
            Ok((file, len)) => {
                if len > (MAX_RESPONSE_BYTES - self.read) as u64 {
                    return Err(format!(
                        "response file {arg} is {len} bytes: response files may hold at most \
                         {MAX_RESPONSE_BYTES} bytes in total; hipcc was not run"
                    ));
                }
                match sqtt_codeobj::file::read_all(&file, len) {
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
        if a == "-" {
            if language.is_some() {
                c.sources.push(PathBuf::from("-"));
            }
            continue;
        }
        if !a.starts_with('-') || a.len() == 1 {
            if language.as_deref().is_some_and(|l| l != "none") || is_source(a) {
                c.sources.push(PathBuf::from(a));
            } else if is_object(a) {
                c.objects.push(PathBuf::from(a));
            } else {
                // Unknown file kinds: treat as a linker input like clang does.
                c.objects.push(PathBuf::from(a));
            }
            continue;
        }
        if a.starts_with("-Xarch_") && !EXACT.iter().any(|(n, _, _)| *n == a) {
            // -Xarch_<arch> OPTION: the next argument is an option for that arch, not an input.
            i += 1;
            continue;
        }
        let (effect, value) =
            if let Some((_, arity, effect)) = EXACT.iter().find(|(name, _, _)| *name == a) {
                let value = if *arity == Arity::Separate {
                    let v = args.get(i).cloned();
                    i += 1;
                    v
                } else {
                    None
                };
                (*effect, value)
            } else if let Some((p, effect)) = PREFIX.iter().find(|(p, _)| a.starts_with(p)) {
                (*effect, Some(a[p.len()..].to_string()))
            } else {
                (Effect::None, None)
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
            Effect::Language => language = value,
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
        ];
        for (args, want) in cases {
            assert_eq!(cl(args).kind, *want, "{args}");
        }
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
        let args = expand_response_files(&["@dir".into(), "@/dev/zero".into()], d.path());
        assert_eq!(args.unwrap(), vec!["@dir", "@/dev/zero"]);
    }
}

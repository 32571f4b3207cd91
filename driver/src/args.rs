//! Classification of a hipcc argument vector, done first, from a table, before anything else.
//!
//! The wrapper never rewrites the user's arguments: it only reads them (and the `@response`
//! files they name) to decide what kind of step this is, which outputs it writes, and whether
//! those outputs hold device code to check. Whatever it cannot classify goes to hipcc unchanged.

use std::path::{Path, PathBuf};

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

/// Expands `@file` arguments (recursively, to a depth of 10) for classification only. A file
/// that cannot be read is kept as the literal argument, as clang does.
pub fn expand_response_files(args: &[String], cwd: &Path) -> Vec<String> {
    fn go(args: &[String], cwd: &Path, depth: u32, out: &mut Vec<String>) {
        for a in args {
            if let Some(f) = a.strip_prefix('@') {
                if depth < 10 {
                    if let Ok(text) = std::fs::read_to_string(cwd.join(f)) {
                        let words = shell_words::split(&text).unwrap_or_else(|_| {
                            text.split_whitespace().map(String::from).collect()
                        });
                        go(&words, cwd, depth + 1, out);
                        continue;
                    }
                }
            }
            out.push(a.clone());
        }
    }
    let mut out = Vec::new();
    go(args, cwd, 0, &mut out);
    out
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
        let args = expand_response_files(&["@r1".into(), "@missing".into()], d.path());
        assert_eq!(args, vec!["-c", "my k.hip", "-o", "out file.o", "@missing"]);
        let c = classify(&args);
        assert_eq!(c.kind, StepKind::Compile);
        assert_eq!(c.output, Some(PathBuf::from("out file.o")));
    }
}

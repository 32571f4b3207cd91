//! Shell completions and man pages (`--sqtt-completions=SHELL`, `--sqtt-man[=check]`), made by
//! clap_complete and clap_mangen from the clap commands of the wrapper's own options (made from
//! their table, `own::OPTIONS`) and of `--check` (whose parser is the same clap command), plus
//! the man pages' EXIT STATUS, ENVIRONMENT and FILES. install.sh installs them.

use sqtt_codeobj::manpage::{items, Section};

use crate::error::Error;

/// `--sqtt-completions=SHELL`: the completion script on stdout.
pub fn completions(shell: &str) -> Result<(), Error> {
    use clap_complete::Shell;
    let sh: Shell = shell
        .parse()
        .map_err(|_| Error::UnknownShell(shell.to_string()))?;
    let mut cmd = crate::own::command();
    // Into memory first: clap_complete panics when its writer fails.
    let mut script = Vec::new();
    clap_complete::generate(sh, &mut cmd, "sqtt-hipcc", &mut script);
    crate::wrap::print(&String::from_utf8_lossy(&script))
}

/// The variables sqtt-hipcc reads beside the settings' (`SQTT_*` rows of sqtt-config's table).
const VARIABLES: &[(&str, &str)] = &[
    (
        "SQTT_CONFIG",
        "the sqtt.toml to use when --sqtt-config is not given (otherwise sqtt.toml is looked for in \
         the working directory and its parents)",
    ),
    (
        "SQTT_PLUGIN",
        "the pass plugin (default: the build for hipcc's LLVM major beside the executable, \
         PREFIX/lib/sqtt-hipcc/llvm-N/libsqtt_plugin.so)",
    ),
    (
        "SQTT_CACHE_DIR",
        "the directory of the extracted headers and the clang-version cache (default: \
         $XDG_CACHE_HOME/sqtt-hipcc, ~/.cache/sqtt-hipcc, else $TMPDIR/sqtt-hipcc-UID)",
    ),
    (
        "HIP_PATH, ROCM_PATH",
        "where the real hipcc is looked for (HIP_PATH/bin/hipcc, ROCM_PATH/bin/hipcc) before PATH",
    ),
    (
        "HIP_CLANG_PATH",
        "the clang behind hipcc: its LLVM major chooses the plugin",
    ),
    (
        "SQTT_HIPCC_DEPTH",
        "set by sqtt-hipcc for the compiler it runs; a sqtt-hipcc that finds it set refuses to \
         run (it would be calling itself)",
    ),
];

fn wrapper_sections() -> Vec<Section> {
    let mut env: Vec<(String, String)> = sqtt_config::SETTINGS
        .iter()
        .map(|row| {
            let key = row.key;
            (
                row.var.to_string(),
                format!("{} (sqtt.toml: {key}; values {})", row.doc, row.values),
            )
        })
        .collect();
    env.extend(items(VARIABLES));
    vec![
        Section::new(
            "EXIT STATUS",
            items(&[
                (
                    "the compiler's",
                    "hipcc's exit status when it ran; killed by a signal, the same signal",
                ),
                (
                    "1",
                    "the funcmap check after a build rejected an output (moved to \
                     FILE.sqtt-rejected)",
                ),
                (
                    "2",
                    "an error of the wrapper, with nothing run: a bad setting, an unknown \
                     --sqtt option, no hipcc or no plugin for its LLVM",
                ),
            ]),
        ),
        Section::new("ENVIRONMENT", env).with_intro(
            "A variable set to an empty value counts as unset; a SQTT_* variable wins over the \
             sqtt.toml key of the same setting.",
        ),
        Section::new(
            "FILES",
            items(&[
                (
                    "sqtt.toml",
                    "the settings, in the working directory or the nearest directory above it \
                     (sqtt.toml.example in the docs lists every key)",
                ),
                (
                    "PREFIX/lib/sqtt-hipcc/llvm-N/libsqtt_plugin.so",
                    "the pass plugin built for LLVM N",
                ),
                (
                    "PREFIX/include/sqtt-hipcc/",
                    "markers.hpp and amd_sqtt_marker/sqtt_marker.h",
                ),
                (
                    "PREFIX/lib/cmake/SqttHipcc/",
                    "the CMake package: find_package(SqttHipcc), sqtt_instrument()",
                ),
                (
                    "PREFIX/share/doc/sqtt-hipcc/",
                    "README.md, docs/*.md, sqtt.toml.example",
                ),
                (
                    "$XDG_CACHE_HOME/sqtt-hipcc/",
                    "include-HASH/ (headers, when not installed) and clang-major-HASH (hipcc's \
                     LLVM major, keyed by its path and mtime)",
                ),
            ]),
        ),
        see_also(&["sqtt-hipcc-check(1)", "sqtt(1)", "hipcc(1)", "ccache(1)"]),
    ]
}

fn check_sections() -> Vec<Section> {
    vec![
        Section::new("EXIT STATUS", items(sqtt_codeobj::check::EXIT_STATUS)),
        see_also(&["sqtt-hipcc(1)", "sqtt(1)"]),
    ]
}

fn see_also(pages: &[&str]) -> Section {
    Section::new("SEE ALSO", Vec::new()).with_intro(pages.join(", "))
}

/// `--sqtt-man` (sqtt-hipcc.1) or `--sqtt-man=check` (sqtt-hipcc-check.1) on stdout.
pub fn man(which: Option<&str>) -> Result<(), Error> {
    let (cmd, sections) = match which {
        None | Some("") => (crate::own::command(), wrapper_sections()),
        Some("check") => (
            crate::check::command().name("sqtt-hipcc-check"),
            check_sections(),
        ),
        Some(other) => return Err(Error::UnknownManPage(other.to_string())),
    };
    let mut page = Vec::new();
    sqtt_codeobj::manpage::render(cmd, &sections, &mut page).map_err(Error::Stdout)?;
    crate::wrap::print(&String::from_utf8_lossy(&page))
}

//! The whole trace-directory pipeline on arbitrary files: the input is split at its first four
//! NUL bytes into `filenames.json`, `shaderdata_0_0.json`, `occupancy.json` and `code.json` of
//! one ui directory, and what follows the fourth makes a compressed bundle (codeobj's
//! `ccob_input`: bounded decompression) that is the directory's code object
//! `fuzz_code_object_id_1.out`; then `sqtt stats` and `sqtt memory` run over it: a result or an
//! error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

#[path = "../../../codeobj/fuzz/ccob_input.rs"]
mod ccob_input;

use sqtt_tools::diag::NoProgress;
use sqtt_tools::engine::Options;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("sqtt-fuzz-trace-{}", std::process::id()));
        std::fs::create_dir_all(d.join("ui_output_fuzz")).unwrap();
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let root = dir();
    let ui = root.join("ui_output_fuzz");
    let names = [
        "filenames.json",
        "shaderdata_0_0.json",
        "occupancy.json",
        "code.json",
    ];
    let mut rest = data;
    for name in names {
        let _ = std::fs::remove_file(ui.join(name));
        if rest.is_empty() {
            continue;
        }
        let (part, after) = match rest.iter().position(|b| *b == 0) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &[][..]),
        };
        std::fs::write(ui.join(name), part).unwrap();
        rest = after;
    }
    let co = root.join("fuzz_code_object_id_1.out");
    let _ = std::fs::remove_file(&co);
    if !rest.is_empty() {
        std::fs::write(&co, ccob_input::ccob(rest)).unwrap();
    }
    let _ = sqtt_tools::commands::stats(root, Some(2.0), &Options::default(), &NoProgress);
    let _ = sqtt_tools::commands::memory(
        root,
        Some(Vec::<u8>::new()),
        4,
        &Options::default(),
        &NoProgress,
    );
});

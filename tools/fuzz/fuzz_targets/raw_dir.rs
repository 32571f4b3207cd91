//! A `rocprofv3 --att` run's raw directory on arbitrary files (`raw_dir_input.rs`: kernel trace
//! as JSON, CSV or SQLite, the shader engines' `.att` traces, the code objects), read the raw way
//! by `sqtt flamegraph`, `sqtt stats` and `sqtt memory`: a result or an error, never a panic;
//! and the flamegraph with the traces decoded ahead by two workers is the one of one thread.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

#[path = "../raw_dir_input.rs"]
mod raw_dir_input;

use sqtt_tools::diag::NoProgress;
use sqtt_tools::engine::Options;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| std::env::temp_dir().join(format!("sqtt-fuzz-raw-{}", std::process::id())))
}

fuzz_target!(|data: &[u8]| {
    let root = dir();
    raw_dir_input::unpack(data, root).expect("the fuzz directory is writable");
    let jobs = |j| Options {
        jobs: Some(j),
        ..Options::default()
    };
    let shown = |r: Result<sqtt_tools::commands::FlamegraphOutput, _>| match r {
        Ok(o) => format!("{}\n{}", o.folded.text(), o.diag),
        Err(e) => format!("error: {e}"),
    };
    let one = shown(sqtt_tools::commands::flamegraph(root, &jobs(1), &NoProgress));
    let two = shown(sqtt_tools::commands::flamegraph(root, &jobs(2), &NoProgress));
    assert_eq!(one, two, "one thread and two workers read the run differently");
    let opts = Options::default();
    let _ = sqtt_tools::commands::stats(root, Some(2.0), &opts, &NoProgress);
    let _ = sqtt_tools::commands::memory(root, Some(Vec::<u8>::new()), 4, &jobs(3), &NoProgress);
});

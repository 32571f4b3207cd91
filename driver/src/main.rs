//! sqtt-hipcc: a drop-in hipcc that builds with SQTT instrumentation, and `--check`.
//!
//! `sqtt-hipcc ARGS...` runs the real hipcc with ARGS plus, on compile steps, the pass plugin,
//! the include directory of markers.hpp and `-DSQTT_ENABLED=1`; then it checks the funcmaps of
//! the device code it produced. `sqtt-hipcc --check FILE...` prints and checks funcmaps.
//! See docs/driver.md.

mod args;
mod check;
mod docs;
mod locate;
mod wrap;

/// A failure of the wrapper itself: a message and the exit status.
#[derive(Debug)]
pub struct Fail {
    pub message: String,
    pub code: i32,
}

impl Fail {
    /// A usage or settings error (exit 2; hipcc is not run).
    pub fn usage(message: String) -> Fail {
        Fail { message, code: 2 }
    }
    /// A failed check (exit 1).
    pub fn check(message: String) -> Fail {
        Fail { message, code: 1 }
    }
}

fn main() {
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let code = if argv.first().map(String::as_str) == Some("--check") {
        check::main(&argv[1..])
    } else {
        match wrap::main(argv) {
            Ok(code) => code,
            Err(f) => {
                for line in f.message.lines() {
                    eprintln!("sqtt-hipcc: error: {line}");
                }
                f.code
            }
        }
    };
    std::process::exit(code);
}

//! sqtt-hipcc: a drop-in hipcc that builds with SQTT instrumentation, and `--check`.
//!
//! `sqtt-hipcc ARGS...` runs the real hipcc with ARGS plus, on compile steps, the pass plugin,
//! the include directory of markers.hpp and `-DSQTT_ENABLED=1`; then it checks the funcmaps of
//! the device code it produced. `sqtt-hipcc --check FILE...` prints and checks funcmaps.
//! See docs/driver.md.

mod args;
mod check;
mod docs;
mod error;
mod launch;
mod locate;
mod own;
mod plan;
mod wrap;

#[cfg(test)]
#[path = "../../tools/tests/support/device.rs"]
mod device;

fn main() {
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if argv.first().map(String::as_str) == Some("--check") {
        std::process::exit(check::main(&argv[1..]));
    }
    match wrap::main(argv, &mut launch::System) {
        // The compiler's status is ours: its exit code, or the signal that killed it.
        Ok(status) => status.pass_on(),
        // A reader that stopped early (`sqtt-hipcc --sqtt-help | head`): quietly, status 0.
        Err(error::Error::Stdout(e)) if sqtt_files::output::is_broken_pipe(&e) => {
            std::process::exit(0)
        }
        Err(e) => {
            for line in e.to_string().lines() {
                sqtt_files::output::stderr_line(format_args!("sqtt-hipcc: error: {line}"));
            }
            std::process::exit(e.exit_code());
        }
    }
}

//! `sqtt`: post-processing of SQTT captures.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sqtt_thread_trace::cli as tt;

#[derive(Parser)]
#[command(name = "sqtt", version, about = "Post-processing of SQTT captures")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The waves of one shader engine's raw thread trace.
    Waves(tt::WavesArgs),
    /// The realtime markers of one shader engine's raw thread trace and the clock they fit.
    Clock(tt::ClockArgs),
    /// The PM4 packets that start or stop a thread trace.
    ThreadTrace(tt::ThreadTraceArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = std::io::stdout().lock();
    let result = match &cli.command {
        Command::Waves(a) => tt::run_waves(a, &mut out),
        Command::Clock(a) => tt::run_clock(a, &mut out),
        Command::ThreadTrace(a) => tt::run_thread_trace(a, &mut out),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sqtt: {e:#}");
            ExitCode::from(tt::exit_code(&e) as u8)
        }
    }
}

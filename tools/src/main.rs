//! `sqtt`: post-processing of SQTT captures. Each subcommand is a thin wrapper over
//! `sqtt_tools::commands`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use sqtt_tools::diag::{Diagnostics, NoProgress, Progress};
use sqtt_tools::engine::Options;
use sqtt_tools::output::AtomicFile;
use sqtt_tools::thread_trace as tt;

#[derive(Parser)]
#[command(
    name = "sqtt",
    version,
    about = "Post-processing of SQTT captures (rocprofv3 --att output)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print and check the .sqtt_funcmap of code objects (the check of `sqtt-hipcc --check`).
    Funcmap(FuncmapArgs),
    /// Folded stacks (`frame;frame;... cycles`) on stdout, optionally an SVG flamegraph.
    Flamegraph(FlamegraphArgs),
    /// A Perfetto trace per ui directory (protobuf .pftrace; --json for Chrome JSON).
    Perfetto(PerfettoArgs),
    /// Per kernel and per scope: count, total, mean, min and max duration, sorted by total.
    Stats(StatsArgs),
    /// Address-trace blocks as JSON, or a per-op summary.
    Memory(MemoryArgs),
    /// The waves of one shader engine's raw thread trace.
    Waves(tt::WavesArgs),
    /// The shader-data records (s_ttracedata) of one shader engine's raw thread trace.
    Shaderdata(sqtt_tools::records::ShaderDataArgs),
    /// The realtime markers of one shader engine's raw thread trace and the clock they fit.
    Clock(tt::ClockArgs),
    /// The PM4 packets that start or stop a thread trace.
    ThreadTrace(tt::ThreadTraceArgs),
}

#[derive(Args)]
struct FuncmapArgs {
    #[command(flatten)]
    check: sqtt_codeobj::check::CheckArgs,
}

#[derive(Args)]
struct Common {
    /// A rocprofv3 --att output directory (or one ui_output_* directory in it).
    dir: PathBuf,
    /// Which form of the capture to read: raw (the .att traces of the run, decoded here), decoded
    /// (the ui_output_* directories AMD's decoder wrote), or auto: raw when the run's kernel
    /// trace names their kernels, else decoded, else raw as a best effort.
    #[arg(long, value_name = "auto|raw|decoded", default_value = "auto")]
    input: sqtt_tools::raw::Route,
    /// Demangle C++ names.
    #[arg(long)]
    demangle: bool,
    /// Show kernel and function names demangled and without template arguments, parameter
    /// lists or return types.
    #[arg(long)]
    short_names: bool,
    /// Keep packed gfx12 marker values and arrival times (no timestamp correction).
    #[arg(long)]
    no_decode_markers: bool,
    /// The built executable or a code object whose .sqtt_funcmap serves the dispatches whose
    /// code object the directory lacks (repeatable).
    #[arg(long = "code-object", value_name = "FILE")]
    code_object: Vec<PathBuf>,
}

impl Common {
    fn options(&self) -> Options {
        Options {
            decode_markers: !self.no_decode_markers,
            code_objects: self.code_object.clone(),
            short_names: self.short_names,
            demangle: self.demangle,
            input: self.input,
        }
    }
}

#[derive(Args)]
struct FlamegraphArgs {
    #[command(flatten)]
    common: Common,
    /// Also write an SVG flamegraph here.
    #[arg(long, value_name = "PATH")]
    svg: Option<PathBuf>,
    /// Title of the SVG.
    #[arg(long, default_value = "SQTT flamegraph")]
    title: String,
}

#[derive(Args)]
struct PerfettoArgs {
    #[command(flatten)]
    common: Common,
    /// Directory for the output files (default: beside each ui directory).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: Option<PathBuf>,
    /// Write Chrome Trace Event JSON (<ui dir>.perfetto.json) instead of Perfetto's protobuf
    /// trace (<ui dir>.pftrace).
    #[arg(long)]
    json: bool,
    /// Shader clock in GHz: timestamps become ns (default: cycles labelled as ns).
    #[arg(long, value_name = "GHZ", value_parser = parse_ghz, allow_hyphen_values = true)]
    clock_rate_ghz: Option<f64>,
}

#[derive(Args)]
struct StatsArgs {
    #[command(flatten)]
    common: Common,
    /// Shader clock in GHz: durations also in ns.
    #[arg(long, value_name = "GHZ", value_parser = parse_ghz, allow_hyphen_values = true)]
    clock_rate_ghz: Option<f64>,
    /// CSV instead of the text table.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// JSON (schema "sqtt-stats", versioned) instead of the text table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct MemoryArgs {
    #[command(flatten)]
    common: Common,
    /// Write the JSON report here (default: stdout, unless --summary).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print the per-op summary table (cache-line utilisation, stride, coalescing).
    #[arg(long)]
    summary: bool,
    /// Bytes each lane accesses, for the utilisation figures.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=256))]
    access_size: u64,
}

/// The shader clocks `--clock-rate-ghz` accepts, in GHz: a GPU's clock, not a typo.
const GHZ_RANGE: std::ops::RangeInclusive<f64> = 0.01..=10.0;

fn parse_ghz(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| {
        format!("{s:?} is not a number; expected the shader clock in GHz, e.g. 2.1")
    })?;
    if v.is_finite() && v > 0.0 && GHZ_RANGE.contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "the clock rate must be a positive number of GHz from {} to {} (e.g. 2.1)",
            GHZ_RANGE.start(),
            GHZ_RANGE.end()
        ))
    }
}

struct Bar(indicatif::ProgressBar);

impl Progress for Bar {
    fn set_total(&self, bytes: u64) {
        self.0.set_length(bytes);
    }
    fn inc(&self, bytes: u64) {
        self.0.inc(bytes);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

fn progress() -> Box<dyn Progress> {
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} reading shaderdata {bar:40} {bytes}/{total_bytes} ({eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Box::new(Bar(bar))
    } else {
        Box::new(NoProgress)
    }
}

fn warn(diag: &Diagnostics) {
    for line in diag.to_string().lines() {
        eprintln!("sqtt: {line}");
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        // Handled in `main`: the check has its own exit statuses.
        Command::Funcmap(_) => unreachable!("sqtt funcmap runs from main"),
        Command::Flamegraph(a) => {
            let p = progress();
            let r = sqtt_tools::commands::flamegraph(&a.common.dir, &a.common.options(), &*p)?;
            warn(&r.diag);
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            sqtt_tools::flamegraph::write_folded(&mut out, &r.folded)?;
            out.flush()?;
            if let Some(svg) = &a.svg {
                // Replaces an existing SVG only once the new one is complete.
                let mut f = AtomicFile::create(svg)
                    .with_context(|| format!("cannot create {}", svg.display()))?;
                sqtt_tools::flamegraph::write_svg(&mut f, &r.folded, &a.title)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", svg.display()))?;
                f.commit()
                    .with_context(|| format!("cannot write {}", svg.display()))?;
            }
        }
        Command::Perfetto(a) => {
            let p = progress();
            let r = sqtt_tools::commands::perfetto(
                &a.common.dir,
                a.output.as_deref(),
                a.clock_rate_ghz,
                if a.json {
                    sqtt_tools::perfetto::Format::Json
                } else {
                    sqtt_tools::perfetto::Format::Protobuf
                },
                &a.common.options(),
                &*p,
            )?;
            warn(&r.diag);
            for f in &r.files {
                eprintln!("sqtt: wrote {}", f.display());
            }
        }
        Command::Stats(a) => {
            let p = progress();
            let r = sqtt_tools::commands::stats(
                &a.common.dir,
                a.clock_rate_ghz,
                &a.common.options(),
                &*p,
            )?;
            warn(&r.diag);
            let text = if a.json {
                let mut s = serde_json::to_string_pretty(&r.report)?;
                s.push('\n');
                s
            } else if a.csv {
                sqtt_tools::stats::to_csv(&r.report)
            } else {
                sqtt_tools::stats::to_text(&r.report)
            };
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        Command::Waves(a) => tt::run_waves(&a, &mut std::io::stdout().lock())?,
        Command::Clock(a) => tt::run_clock(&a, &mut std::io::stdout().lock())?,
        Command::Shaderdata(a) => {
            sqtt_tools::records::run_shaderdata(&a, &mut std::io::stdout().lock())?
        }
        Command::ThreadTrace(a) => tt::run_thread_trace(&a, &mut std::io::stdout().lock())?,
        Command::Memory(a) => {
            let p = progress();
            let opts = a.common.options();
            let dir = &a.common.dir;
            let r = match (&a.output, a.summary) {
                (Some(path), _) => {
                    // Replaces an existing report only once the new one is complete.
                    let f = AtomicFile::create(path)
                        .with_context(|| format!("cannot create {}", path.display()))?;
                    let (r, f) =
                        sqtt_tools::commands::memory(dir, Some(f), a.access_size, &opts, &*p)?;
                    if let Some(f) = f {
                        f.commit()
                            .with_context(|| format!("cannot write {}", path.display()))?;
                    }
                    r
                }
                (None, false) => {
                    let out = std::io::BufWriter::new(std::io::stdout());
                    sqtt_tools::commands::memory(dir, Some(out), a.access_size, &opts, &*p)?.0
                }
                (None, true) => {
                    sqtt_tools::commands::memory::<std::io::Sink>(
                        dir,
                        None,
                        a.access_size,
                        &opts,
                        &*p,
                    )?
                    .0
                }
            };
            warn(&r.diag);
            if a.summary {
                let mut out = std::io::stdout().lock();
                out.write_all(r.summary_table.as_bytes())?;
                out.flush()?;
            }
            if r.blocks == 0 {
                eprintln!("sqtt: warning: no address-trace blocks found");
            }
        }
    }
    Ok(())
}

/// `sqtt funcmap`: the same code, options and exit statuses as `sqtt-hipcc --check`.
fn funcmap(a: FuncmapArgs) -> ExitCode {
    let code = match a.check.options() {
        Ok(o) => sqtt_codeobj::check::run(
            &o,
            "sqtt funcmap",
            &mut std::io::stdout().lock(),
            &mut std::io::stderr().lock(),
        ),
        Err(e) => {
            eprintln!("sqtt funcmap: error: {e}");
            2
        }
    };
    ExitCode::from(code as u8)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Funcmap(a) = cli.command {
        return funcmap(a);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that stopped early (`sqtt flamegraph DIR | head`) is not an error.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sqtt: error: {e:#}");
            // 2 for usage errors (a bad option value), else 1.
            let usage = matches!(
                e.downcast_ref::<sqtt_tools::Error>(),
                Some(sqtt_tools::Error::CodeObjectOption { .. })
            );
            ExitCode::from(if usage { 2 } else { tt::exit_code(&e) as u8 })
        }
    }
}

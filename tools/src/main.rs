//! `sqtt`: post-processing of SQTT captures. Each subcommand is a thin wrapper over
//! `sqtt_tools::commands`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};
use sqtt_tools::diag::{Diagnostics, NoProgress, Progress};
use sqtt_tools::engine::Options;
use sqtt_tools::output;
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
    /// Two captures compared per kernel and scope: counts, means, totals, ratio B/A and a
    /// significance test; optionally a differential flamegraph.
    Diff(DiffArgs),
    /// The waves of one shader engine's raw thread trace.
    Waves(tt::WavesArgs),
    /// The shader-data records (s_ttracedata) of one shader engine's raw thread trace.
    Shaderdata(sqtt_tools::records::ShaderDataArgs),
    /// The realtime markers of one shader engine's raw thread trace and the clock they fit.
    Clock(tt::ClockArgs),
    /// The PM4 packets that start or stop a thread trace.
    ThreadTrace(tt::ThreadTraceArgs),
    /// Print a shell completion script (install.sh installs them).
    Completions {
        #[arg(value_enum, value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print the man page sqtt(1), or sqtt-COMMAND(1) (install.sh installs them).
    Man {
        /// A subcommand, for its own page.
        #[arg(value_name = "COMMAND")]
        command: Option<String>,
    },
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
    #[command(flatten)]
    read: ReadArgs,
}

impl Common {
    /// The options of a run that writes `outputs`, and standard output when `to_stdout`.
    fn options(&self, outputs: &[&PathBuf], to_stdout: bool) -> Options {
        self.read.options(&[], outputs, to_stdout)
    }
}

/// How a capture is read (every command that reads one takes these).
#[derive(Args)]
struct ReadArgs {
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
    /// How many threads decode raw .att traces ahead of the engine (default: the CPUs this
    /// process may run on, at most 8, for 4 MB of traces or more); 1: none, the main thread
    /// decodes each in its turn.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    jobs: Option<u16>,
}

impl ReadArgs {
    /// The options, with `more` code objects besides `--code-object`'s, of a run that writes
    /// `outputs`, and standard output when `to_stdout`.
    fn options(&self, more: &[PathBuf], outputs: &[&PathBuf], to_stdout: bool) -> Options {
        Options {
            decode_markers: !self.no_decode_markers,
            code_objects: self.code_object.iter().chain(more).cloned().collect(),
            short_names: self.short_names,
            demangle: self.demangle,
            input: self.input,
            outputs: outputs.iter().map(|p| p.to_path_buf()).collect(),
            to_stdout,
            jobs: self.jobs.map(usize::from),
        }
    }
}

#[derive(Args)]
struct DiffArgs {
    /// The capture before: a rocprofv3 --att output directory (or one ui directory in it).
    a: PathBuf,
    /// The capture after.
    b: PathBuf,
    #[command(flatten)]
    read: ReadArgs,
    /// A code object or executable for A only (repeatable; --code-object serves both).
    #[arg(long = "code-object-a", value_name = "FILE")]
    code_object_a: Vec<PathBuf>,
    /// A code object or executable for B only (repeatable).
    #[arg(long = "code-object-b", value_name = "FILE")]
    code_object_b: Vec<PathBuf>,
    /// Significance level of the test (Welch's t on the per-wave means of each stack).
    #[arg(long, value_name = "P", default_value_t = sqtt_tools::diff::DEFAULT_ALPHA, value_parser = parse_alpha)]
    alpha: f64,
    /// CSV instead of the text table.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// JSON (schema "sqtt-diff", schema_version) instead of the text table.
    #[arg(long)]
    json: bool,
    /// Also write a differential flamegraph SVG here (red: grew, blue: shrank).
    #[arg(long, value_name = "PATH")]
    svg: Option<PathBuf>,
    /// Title of the SVG.
    #[arg(long, default_value = "SQTT differential flamegraph (A -> B)")]
    title: String,
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a significance level: give a probability between 0 and 1, e.g. 0.01"
        )),
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

/// The warnings, one line each (their names escaped by `Diagnostics`).
fn warn(diag: &Diagnostics) {
    for line in diag.to_string().lines() {
        output::stderr_line(format_args!("sqtt: {line}"));
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    // Reports go to a buffered stdout whose errors name it; each arm flushes it at its end.
    let mut out = output::stdout();
    match cli.command {
        // Handled in `main`: the check has its own exit statuses.
        Command::Funcmap(_) => unreachable!("sqtt funcmap runs from main"),
        Command::Flamegraph(a) => {
            let p = progress();
            let opts = a.common.options(&a.svg.iter().collect::<Vec<_>>(), true);
            let r = sqtt_tools::commands::flamegraph(&a.common.dir, &opts, &*p)?;
            // Opened before anything is printed: an SVG path that cannot be one stops the run
            // with nothing written.
            let svg = a.svg.as_deref().map(output::create).transpose()?;
            warn(&r.diag);
            sqtt_tools::flamegraph::write_folded(&mut out, &r.folded)?;
            out.flush()?;
            if let Some(mut f) = svg {
                // Replaces an existing SVG only once the new one is complete.
                sqtt_tools::flamegraph::write_svg(&mut f, &r.folded, &a.title)
                    .map_err(|e| output::write_error(&f.path().display().to_string(), e))?;
                f.commit()?;
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
                &a.common.options(&[], false),
                &*p,
            )?;
            warn(&r.diag);
            for f in &r.files {
                output::stderr_line(format_args!(
                    "sqtt: wrote {}",
                    output::printable(&f.display().to_string())
                ));
            }
        }
        Command::Stats(a) => {
            let p = progress();
            let r = sqtt_tools::commands::stats(
                &a.common.dir,
                a.clock_rate_ghz,
                &a.common.options(&[], true),
                &*p,
            )?;
            warn(&r.diag);
            use sqtt_tools::stats::{to_csv, to_text};
            print_report(&mut out, &r.report, a.json, a.csv, to_csv, to_text)?;
        }
        Command::Diff(a) => run_diff(&a, &mut out)?,
        Command::Waves(a) => tt::run_waves(&a, &mut out)?,
        Command::Clock(a) => tt::run_clock(&a, &mut out)?,
        Command::Shaderdata(a) => sqtt_tools::records::run_shaderdata(&a, &mut out)?,
        Command::ThreadTrace(a) => tt::run_thread_trace(&a, &mut out)?,
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "sqtt", &mut out);
        }
        Command::Man { command } => man_page(command.as_deref(), &mut out)?,
        Command::Memory(a) => {
            let p = progress();
            let dir = &a.common.dir;
            let to_stdout = a.output.is_none() || a.summary;
            let opts = a
                .common
                .options(&a.output.iter().collect::<Vec<_>>(), to_stdout);
            let r = match (&a.output, a.summary) {
                (Some(path), _) => {
                    // Replaces an existing report only once the new one is complete.
                    let f = output::create(path)?;
                    let (r, f) =
                        sqtt_tools::commands::memory(dir, Some(f), a.access_size, &opts, &*p)?;
                    if let Some(f) = f {
                        f.commit()?;
                    }
                    r
                }
                (None, false) => {
                    sqtt_tools::commands::memory(dir, Some(&mut out), a.access_size, &opts, &*p)?.0
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
                out.write_all(r.summary_table.as_bytes())?;
            }
            out.flush()?;
            if r.blocks == 0 {
                output::stderr_line("sqtt: warning: no address-trace blocks found");
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// `sqtt man [COMMAND]`: sqtt(1), or sqtt-COMMAND(1) for a subcommand, on stdout.
fn man_page(command: Option<&str>, out: &mut dyn Write) -> anyhow::Result<()> {
    use sqtt_codeobj::manpage::{items, Section};
    let cli = Cli::command();
    let see_also = |pages: &str| Section::new("SEE ALSO", Vec::new()).with_intro(pages);
    let exit = |failure: &str| {
        Section::new(
            "EXIT STATUS",
            items(&[
                ("0", "success"),
                ("1", failure),
                (
                    "2",
                    "a usage error: an unknown option or a bad option value",
                ),
            ]),
        )
    };
    let (cmd, sections) = match command {
        None => (
            cli,
            vec![
                exit("an input that cannot be read or is corrupt, or an output that cannot be written"),
                Section::new(
                    "FILES",
                    items(&[
                        (
                            "DIR/.../ui_output_*/",
                            "rocprofv3 --att's output, read by flamegraph, perfetto, stats and \
                             memory: filenames.json, shaderdata_*.json, code.json, occupancy.json \
                             and the code objects",
                        ),
                        (
                            "UI_DIR.pftrace, UI_DIR.perfetto.json",
                            "perfetto's output, beside each ui directory (or in -o DIR)",
                        ),
                    ]),
                ),
                see_also("sqtt-hipcc(1), sqtt-hipcc-check(1), rocprofv3(1); docs/tools.md"),
            ],
        ),
        Some(name) => {
            let Some(sub) = cli.find_subcommand(name) else {
                let known: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
                // A usage error (exit 2), as a bad option value is.
                return Err(tt::UsageError(format!(
                    "no man page for {name:?}; the subcommands are {}",
                    known.join(", ")
                ))
                .into());
            };
            let cmd = sub
                .clone()
                .name(format!("sqtt-{name}"))
                .version(env!("CARGO_PKG_VERSION"));
            let sections = if name == "funcmap" {
                vec![
                    Section::new("EXIT STATUS", items(sqtt_codeobj::check::EXIT_STATUS)),
                    see_also("sqtt(1), sqtt-hipcc-check(1)"),
                ]
            } else {
                vec![
                    exit("an input that cannot be read or is corrupt, or an output that cannot be written"),
                    see_also("sqtt(1)"),
                ]
            };
            (cmd, sections)
        }
    };
    sqtt_codeobj::manpage::render(cmd, &sections, out)?;
    Ok(())
}

/// Prints a report on stdout: as JSON, CSV or the text table.
fn print_report<R: serde::Serialize>(
    out: &mut output::Stdout,
    r: &R,
    json: bool,
    csv: bool,
    to_csv: fn(&R) -> String,
    to_text: fn(&R) -> String,
) -> anyhow::Result<()> {
    let text = if json {
        let mut s = serde_json::to_string_pretty(r)?;
        s.push('\n');
        s
    } else if csv {
        to_csv(r)
    } else {
        to_text(r)
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn run_diff(a: &DiffArgs, out: &mut output::Stdout) -> anyhow::Result<()> {
    let p = progress();
    let svg: Vec<&PathBuf> = a.svg.iter().collect();
    let r = sqtt_tools::diff::diff(
        &a.a,
        &a.b,
        &a.read.options(&a.code_object_a, &svg, true),
        &a.read.options(&a.code_object_b, &svg, true),
        a.alpha,
        &*p,
    )?;
    // Opened before anything is printed: an SVG path that cannot be one stops the run with
    // nothing written.
    let svg = a.svg.as_deref().map(output::create).transpose()?;
    for (side, d) in [("A", &r.diag_a), ("B", &r.diag_b)] {
        for line in d.to_string().lines() {
            output::stderr_line(format_args!("sqtt: {side}: {line}"));
        }
    }
    use sqtt_tools::diff::{to_csv, to_text};
    print_report(out, &r.report, a.json, a.csv, to_csv, to_text)?;
    if let Some(mut f) = svg {
        // Replaces an existing SVG only once the new one is complete.
        sqtt_tools::diff::write_svg(&mut f, &r.folded, &a.title)
            .map_err(|e| output::write_error(&f.path().display().to_string(), e))?;
        f.commit()?;
    }
    Ok(())
}

/// `sqtt funcmap`: the same code, options and exit statuses as `sqtt-hipcc --check`.
fn funcmap(a: FuncmapArgs) -> ExitCode {
    let code = match a.check.options() {
        Ok(o) => sqtt_codeobj::check::run(
            &o,
            "sqtt funcmap",
            &mut output::stdout(),
            &mut std::io::stderr().lock(),
        ),
        Err(e) => {
            output::stderr_line(format_args!("sqtt funcmap: error: {e}"));
            2
        }
    };
    ExitCode::from(code as u8)
}

/// `--help` and `--version` printed with their write errors reported (clap's own printing
/// ignores them); other parse errors as clap prints them.
fn parse() -> Result<Cli, ExitCode> {
    use clap::error::ErrorKind;
    match Cli::try_parse() {
        Ok(cli) => Ok(cli),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            match output::print(&e.render().to_string()) {
                Ok(()) => Err(ExitCode::SUCCESS),
                Err(e) if output::is_broken_pipe(&e) => Err(ExitCode::SUCCESS),
                Err(e) => {
                    output::stderr_line(format_args!("sqtt: error: {e}"));
                    Err(ExitCode::FAILURE)
                }
            }
        }
        Err(e) => e.exit(),
    }
}

fn main() -> ExitCode {
    let cli = match parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    if let Command::Funcmap(a) = cli.command {
        return funcmap(a);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that stopped early (`sqtt flamegraph DIR | head`) is not an error: the run
        // ends quietly with status 0, as ripgrep does.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(output::is_broken_pipe)
                    || c.downcast_ref::<sqtt_tools::Error>()
                        .is_some_and(sqtt_tools::Error::is_broken_pipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            // Line by line: a message lists files on lines of their own; what a name holds
            // (an escape sequence) is escaped.
            let text = format!("{e:#}");
            let lines: Vec<_> = text.lines().map(output::printable).collect();
            output::stderr_line(format_args!("sqtt: error: {}", lines.join("\n")));
            // 2 for usage errors (a bad option value, an output that cannot be one), else 1.
            let usage = matches!(
                e.downcast_ref::<sqtt_tools::Error>(),
                Some(sqtt_tools::Error::CodeObjectOption { .. } | sqtt_tools::Error::BadOutput(_))
            );
            ExitCode::from(if usage { 2 } else { tt::exit_code(&e) as u8 })
        }
    }
}

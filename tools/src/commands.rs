//! The subcommands as library functions (the binary only parses arguments and prints).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::diag::{Diagnostics, Progress};
use crate::engine::{Names, Options, RunStats, Sink, Trace};
use crate::error::Error;
use crate::flamegraph::Flamegraph;
use crate::input::UiDir;
use crate::memory::MemoryReport;
use crate::output;
use crate::perfetto::json::JsonEncoder;
use crate::perfetto::proto::ProtoEncoder;
use crate::perfetto::{Format, Timeline};
use crate::stats::{Stats, StatsReport};

/// Counts over all ui directories: the per-directory counts summed, and how many there were.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub ui_dirs: u64,
    pub run: RunStats,
}

impl Totals {
    fn add(&mut self, s: &RunStats) {
        self.ui_dirs += 1;
        self.run.add(s);
    }

    /// An error when nothing could be read at all, saying why each file failed.
    fn check(&self, root: &Path, trace: &Trace) -> Result<(), Error> {
        let mut why: Vec<String> = trace.dir.warnings.clone();
        why.extend(trace.file_errors.iter().cloned());
        let why: String = why
            .iter()
            .map(|w| format!("\n  {}", sqtt_files::output::printable(w)))
            .collect();
        if self.run.records == 0 && self.run.files_bad > 0 {
            return Err(Error::Unusable(format!(
                "{}: none of the {} shaderdata files could be read:{why}",
                root.display(),
                self.run.files_bad
            )));
        }
        if self.run.records == 0 && self.run.files_ok == 0 {
            return Err(Error::Unusable(format!(
                "{}: no shaderdata_*.json files in {} ui directories{}{why}",
                root.display(),
                self.ui_dirs,
                if why.is_empty() { "" } else { ":" }
            )));
        }
        Ok(())
    }
}

fn open(dir: &Path, opts: &Options, progress: &dyn Progress) -> Result<Trace, Error> {
    let trace = Trace::open_route(dir, &opts.code_objects, opts.input)?;
    trace.check_outputs(&opts.outputs, opts.to_stdout)?;
    progress.set_total(trace.shaderdata_bytes());
    Ok(trace)
}

/// The loop of every command: `run` over each ui directory of `trace` in turn (given its
/// index; it returns the directory's counts), then the progress finished and the counts summed
/// (an error when nothing could be read).
fn each_ui(
    dir: &Path,
    trace: &mut Trace,
    progress: &dyn Progress,
    mut run: impl FnMut(&mut Trace, usize, &UiDir) -> Result<RunStats, Error>,
) -> Result<Totals, Error> {
    let mut totals = Totals::default();
    for (i, ui) in trace.dir.ui_dirs.clone().iter().enumerate() {
        let st = run(trace, i, ui)?;
        totals.add(&st);
    }
    progress.finish();
    totals.check(dir, trace)?;
    Ok(totals)
}

/// Runs `sink` over every ui directory of `dir`: the warnings, and the counts (an error when
/// nothing could be read).
pub fn read<S: Sink>(
    dir: &Path,
    opts: &Options,
    names: &mut Names,
    sink: &mut S,
    progress: &dyn Progress,
) -> Result<(Diagnostics, Totals), Error> {
    let mut trace = open(dir, opts, progress)?;
    let totals = each_ui(dir, &mut trace, progress, |trace, _, ui| {
        trace.run_ui(ui, opts, names, sink, progress)
    })?;
    Ok((trace.diag, totals))
}

/// Result of `sqtt flamegraph`.
pub struct FlamegraphOutput {
    pub folded: crate::flamegraph::Folded,
    pub diag: Diagnostics,
    pub totals: Totals,
}

/// Builds the folded stacks of every ui directory, merged.
pub fn flamegraph(
    dir: &Path,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<FlamegraphOutput, Error> {
    let mut names = Names::default();
    let mut fg = Flamegraph::new();
    let (mut diag, totals) = read(dir, opts, &mut names, &mut fg, progress)?;
    fg.report(&mut diag);
    Ok(FlamegraphOutput {
        folded: fg.folded(&names),
        diag,
        totals,
    })
}

/// Result of `sqtt perfetto`.
pub struct PerfettoOutput {
    pub files: Vec<PathBuf>,
    pub events: u64,
    pub diag: Diagnostics,
    pub totals: Totals,
}

/// Writes `<ui dir name>.pftrace` (or `.perfetto.json`, per `format`) for every ui directory,
/// into `out_dir` or beside the ui directory. Existing files are replaced only when the whole
/// run succeeds.
pub fn perfetto(
    dir: &Path,
    out_dir: Option<&Path>,
    clock_ghz: Option<f64>,
    format: Format,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<PerfettoOutput, Error> {
    let mut trace = open(dir, opts, progress)?;
    let paths: Vec<PathBuf> = trace
        .dir
        .ui_dirs
        .iter()
        .map(|ui| {
            let target_dir = match out_dir {
                Some(o) => o.to_path_buf(),
                None => ui
                    .path
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| PathBuf::from(".")),
            };
            target_dir.join(format!("{}{}", ui.name, format.suffix()))
        })
        .collect();
    // Every output is checked before the first is opened.
    trace.check_outputs(&paths, false)?;
    if let Some(o) = out_dir {
        if o.exists() && !o.is_dir() {
            return Err(Error::BadOutput(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("cannot write into {}: it is not a directory", o.display()),
            )));
        }
        std::fs::create_dir_all(o).map_err(|e| Error::io(o, e))?;
    }
    let mut names = Names::default();
    let mut files = Vec::new();
    let mut pending = Vec::new();
    let mut events = 0;
    let totals = each_ui(dir, &mut trace, progress, |trace, i, ui| {
        let path = &paths[i];
        let f = output::create(path)?;
        let (st, n, f) = match format {
            Format::Protobuf => {
                let mut sink = Timeline::new(ProtoEncoder::new(f), clock_ghz);
                let st = trace.run_ui(ui, opts, &mut names, &mut sink, progress)?;
                sink.report(&mut trace.diag);
                let n = sink.events();
                (st, n, sink.into_encoder().finish())
            }
            Format::Json => {
                let enc = JsonEncoder::new(f, &ui.name, clock_ghz).map_err(Error::Write)?;
                let mut sink = Timeline::new(enc, clock_ghz);
                let st = trace.run_ui(ui, opts, &mut names, &mut sink, progress)?;
                sink.report(&mut trace.diag);
                let n = sink.events();
                (st, n, sink.into_encoder().finish())
            }
        };
        events += n;
        pending.push(f.map_err(Error::Write)?);
        files.push(path.clone());
        Ok(st)
    })?;
    for f in pending {
        f.commit().map_err(Error::Write)?;
    }
    Ok(PerfettoOutput {
        files,
        events,
        diag: trace.diag,
        totals,
    })
}

/// Result of `sqtt stats`.
pub struct StatsOutput {
    pub report: StatsReport,
    pub diag: Diagnostics,
    pub totals: Totals,
}

/// Gathers the per-kernel and per-scope duration statistics of every ui directory, merged.
pub fn stats(
    dir: &Path,
    clock_ghz: Option<f64>,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<StatsOutput, Error> {
    let mut names = Names::default();
    let mut sink = Stats::new();
    let (diag, totals) = read(dir, opts, &mut names, &mut sink, progress)?;
    Ok(StatsOutput {
        report: sink.report(&names, clock_ghz),
        diag,
        totals,
    })
}

/// Result of `sqtt memory`.
pub struct MemoryOutput {
    pub blocks: u64,
    pub summary_table: String,
    pub summary: serde_json::Value,
    pub diag: Diagnostics,
    pub totals: Totals,
}

/// Writes the address-trace JSON to `out` (when given) and gathers the per-op summary.
pub fn memory<W: Write>(
    dir: &Path,
    out: Option<W>,
    access_size: u64,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<(MemoryOutput, Option<W>), Error> {
    let mut trace = open(dir, opts, progress)?;
    let mut names = Names::default();
    // The writer's errors name it (`output::Output`, `output::Stdout`).
    let out_err = Error::Write;
    let mut report = MemoryReport::new(out, access_size).map_err(out_err)?;
    let totals = each_ui(dir, &mut trace, progress, |trace, _, ui| {
        report.set_dir(&ui.name);
        trace.run_ui(ui, opts, &mut names, &mut report, progress)
    })?;
    let diag = trace.diag;
    let warnings: Vec<String> = diag.to_string().lines().map(str::to_string).collect();
    let blocks = report.blocks;
    let summary_table = report.summary_table();
    let summary = report.summary_json();
    let w = report.finish(&warnings).map_err(out_err)?;
    Ok((
        MemoryOutput {
            blocks,
            summary_table,
            summary,
            diag,
            totals,
        },
        w,
    ))
}

//! The record engine shared by every tool.
//!
//! It walks one ui directory's shaderdata records and hands scope, point and address events
//! to a [`Sink`], in three parts:
//! - [`demux`]: stream demultiplexing. Each shader engine's records in time order, PRIV
//!   records dropped, the rest routed to the slot of their `(se, cu, simd, wave_id)`, split
//!   into wave instances by `occupancy.json` (the latest wave start at or before the record),
//!   and framed into headers and the `R:`-declared payload records after them.
//! - [`clock`]: clock domains. Packed gfx12 headers carry a few bits of the shader clock of
//!   their issue; per `(se, cu, simd, clock_bits, clock_shift)` domain a first (survey) pass
//!   finds the smallest delay, and the second pass moves each header back by its own excess.
//! - [`spill`]: the first pass of a packed trace demultiplexes the records once and logs what
//!   the sink is to receive (waves, headers as read, payloads) in a temporary file; the
//!   second pass reads the log back, corrects the header times and delivers.
//! - [`deliver`]: delivery. A decoded header and its payload become sink events, with frame
//!   names from the [`catalog`] of code objects and dispatches.

mod catalog;
mod clock;
mod deliver;
mod demux;
mod raw_pass;
mod spill;

use std::path::Path;

use rustc_hash::FxHashMap;
use sqtt_markers::{Entry, Funcmap};

use crate::codeobj::{demangle, short_name, CodeObject, MarkerClass};
use crate::diag::{kind, Diagnostics, Progress};
use crate::error::Error;
use crate::input::{Occupancy, TraceDir, UiDir};

use catalog::Catalog;
use clock::Clocks;
use demux::Demux;

/// An address-trace block as the sinks see it (read by the layout table in sqtt-markers).
pub use sqtt_markers::addr_trace::{Block as AddressBlock, BufferParts};

/// Options common to the tools.
#[derive(Debug, Clone)]
pub struct Options {
    /// Restore packed gfx12 headers and correct their times (default); `false` keeps raw values
    /// and arrival times.
    pub decode_markers: bool,
    /// Demangle function and kernel names.
    pub demangle: bool,
    /// Show kernel and function names demangled and without template arguments, parameter
    /// lists or return types.
    pub short_names: bool,
    /// Files (an executable or code objects) whose funcmaps serve the dispatches whose code
    /// object the directory does not hold (`--code-object`).
    pub code_objects: Vec<std::path::PathBuf>,
    /// Which form of the capture to read: the raw traces or the `ui_output_*` directories
    /// (`--input`).
    pub input: crate::raw::Route,
    /// The files the run will write (`--svg`, `-o`): one that is one of the trace's inputs is
    /// refused once the inputs are known, before anything is read or written.
    pub outputs: Vec<std::path::PathBuf>,
    /// Whether the run writes to standard output, which is then refused when it is redirected
    /// into one of the inputs.
    pub to_stdout: bool,
    /// How many threads decode raw traces at once (`--jobs`); `None`: as many as there are
    /// CPUs to run on.
    pub jobs: Option<usize>,
}

impl Options {
    /// A kernel or function name as the options want it shown.
    pub fn show(&self, name: &str) -> String {
        match (self.demangle || self.short_names, self.short_names) {
            (_, true) => short_name(&demangle(name)),
            (true, false) => demangle(name),
            _ => name.to_string(),
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            decode_markers: true,
            demangle: false,
            short_names: false,
            code_objects: Vec::new(),
            input: crate::raw::Route::Auto,
            outputs: Vec::new(),
            to_stdout: false,
            jobs: None,
        }
    }
}

/// Interned frame names.
#[derive(Debug, Default, Clone)]
pub struct Names {
    names: Vec<String>,
    index: FxHashMap<String, u32>,
}

impl Names {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(i) = self.index.get(s) {
            return *i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }

    pub fn get(&self, i: u32) -> &str {
        &self.names[i as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// One wave instance (one stream of records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Wave {
    pub se: u32,
    pub cu: u32,
    pub simd: u32,
    pub wave_id: u32,
    /// Index of the wave among the waves of its slot in this ui directory.
    pub instance: u32,
    /// The dispatch (occupancy `kernel_id`); `None` for records with no occupancy.
    pub dispatch: Option<u64>,
    /// Frame name index of the kernel.
    pub kernel: u32,
    /// Code object ID, when known.
    pub codeobj: Option<u64>,
    pub start: Option<u64>,
    pub end: Option<u64>,
    /// Where the stream's time begins: the wave start, or its first record without occupancy.
    pub begin: u64,
}

/// What a scope marker does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeOp {
    Enter,
    Exit,
    ExitEnter,
}

/// Kind of scope, for Perfetto categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeKind {
    Function,
    User,
}

/// A decoded marker header as the sinks see it.
#[derive(Debug, Clone, Copy)]
pub struct Marker<'a> {
    pub id: u32,
    pub class: MarkerClass,
    /// Frame name index (for scopes and points; unused for a bare exit).
    pub frame: u32,
    /// Legacy-form value (raw with `--no-decode-markers`).
    pub value: u32,
    pub entry: Option<&'a Entry>,
    /// Arrival time of the record (before correction).
    pub arrival: u64,
}

impl Marker<'_> {
    pub fn scope_kind(&self) -> ScopeKind {
        match self.class {
            MarkerClass::Function => ScopeKind::Function,
            _ => ScopeKind::User,
        }
    }
}

/// Receives the events of one ui directory.
#[allow(unused_variables)]
pub trait Sink {
    /// Whether address blocks are wanted (payloads are collected only then).
    fn wants_addresses(&self) -> bool {
        false
    }
    fn wave_start(&mut self, names: &Names, slot: usize, wave: &Wave) {}
    fn scope(&mut self, names: &Names, slot: usize, time: u64, op: ScopeOp, m: &Marker) {}
    fn point(&mut self, names: &Names, slot: usize, time: u64, m: &Marker, payload: &[u32]) {}
    fn address(&mut self, names: &Names, slot: usize, time: u64, m: &Marker, b: &AddressBlock) {}
    /// The wave's end: its occupancy end, or its last marker when later (or unknown).
    fn wave_end(&mut self, names: &Names, slot: usize, wave: &Wave, end: u64) {}
}

/// Counts of one run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RunStats {
    /// Shaderdata records read.
    pub records: u64,
    pub priv_records: u64,
    pub payload_records: u64,
    pub headers: u64,
    pub waves: u64,
    /// Shaderdata files that could be read (at least in part).
    pub files_ok: u64,
    pub files_bad: u64,
    /// Packed headers whose time was corrected (moved earlier by at least one cycle).
    pub corrected: u64,
    /// Records of waves with no code object: their payload counts are unknown, so they are
    /// not read as markers at all.
    pub unread: u64,
}

impl RunStats {
    /// Adds another run's counts.
    pub fn add(&mut self, s: &RunStats) {
        self.records += s.records;
        self.priv_records += s.priv_records;
        self.payload_records += s.payload_records;
        self.headers += s.headers;
        self.waves += s.waves;
        self.files_ok += s.files_ok;
        self.files_bad += s.files_bad;
        self.corrected += s.corrected;
        self.unread += s.unread;
    }
}

/// What is shared by the ui directories of one trace directory.
pub struct Trace {
    pub dir: TraceDir,
    /// Why each shaderdata file that could not be read failed, in reading order.
    pub file_errors: Vec<String>,
    files: std::collections::BTreeMap<std::path::PathBuf, Funcmap>,
    /// The funcmaps of `--code-object` files, with their sources.
    extra: Vec<(Funcmap, String)>,
    /// The `--code-object` files.
    option_files: Vec<std::path::PathBuf>,
    pub diag: Diagnostics,
    /// The workers decoding the raw traces ahead of the engine, once the first raw time domain
    /// is read (`Some(None)`: none, the engine decodes them itself).
    ahead: Option<Option<crate::raw::ahead::Ahead>>,
}

/// IDs given to the code objects of `--code-object` files (counting down), out of the way of
/// the IDs rocprofv3 gives.
const EXTRA_ID_BASE: u64 = u64::MAX - 1;

impl Trace {
    pub fn open(path: &Path) -> Result<Trace, Error> {
        Trace::open_with(path, &[])
    }

    /// Opens a trace directory, with `code_objects` (`--code-object` files) as the funcmap
    /// source of dispatches whose code object the directory does not hold.
    pub fn open_with(path: &Path, code_objects: &[std::path::PathBuf]) -> Result<Trace, Error> {
        Trace::open_route(path, code_objects, crate::raw::Route::Auto)
    }

    /// [`Trace::open_with`], reading the form of the capture `route` picks
    /// ([`crate::raw::open`]).
    pub fn open_route(
        path: &Path,
        code_objects: &[std::path::PathBuf],
        route: crate::raw::Route,
    ) -> Result<Trace, Error> {
        let mut extra = Vec::new();
        for f in code_objects {
            extra.extend(read_option_code_objects(f)?);
        }
        let dir = crate::raw::open(path, route)?;
        let mut diag = Diagnostics::default();
        for w in &dir.warnings {
            diag.warn(kind::BAD_FILE, || w.clone());
        }
        for ui in &dir.ui_dirs {
            let r = &ui.repeated_listings;
            diag.warn_n(kind::REPEATED_LISTING, r.count, || {
                r.first
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            });
        }
        let files = dir.read_code_objects(&mut diag);
        Ok(Trace {
            dir,
            file_errors: Vec::new(),
            files,
            extra,
            option_files: code_objects.to_vec(),
            diag,
            ahead: None,
        })
    }

    /// Every file the run reads: each ui directory's `filenames.json`, shaderdata files,
    /// `occupancy.json` and `code.json` (a raw domain's `.att` files and kernel trace), the code
    /// object files and the `--code-object` files.
    pub fn input_files(&self) -> Vec<std::path::PathBuf> {
        let mut v = self.option_files.clone();
        v.extend(self.dir.code_object_files.iter().map(|(_, p)| p.clone()));
        for ui in &self.dir.ui_dirs {
            if let Some(k) = ui.raw.as_ref().and_then(|r| r.kernel_trace.as_ref()) {
                v.push(k.clone());
            }
            for f in ["filenames.json", "occupancy.json", "code.json"] {
                v.push(ui.path.join(f));
            }
            v.extend(ui.shaderdata.iter().map(|(_, p)| p.clone()));
        }
        v
    }

    /// Refuses the outputs `opts` names (and standard output, when the run writes there) when
    /// one is an input of this trace, before anything is written.
    pub fn check_outputs<P: AsRef<Path>>(
        &self,
        outputs: impl IntoIterator<Item = P>,
        to_stdout: bool,
    ) -> Result<(), Error> {
        let inputs = sqtt_files::output::Inputs::new(self.input_files());
        for o in outputs {
            inputs.check(o.as_ref()).map_err(Error::BadOutput)?;
        }
        if to_stdout {
            inputs.check_stdout().map_err(Error::BadOutput)?;
        }
        Ok(())
    }

    /// Total bytes of shaderdata, for progress.
    pub fn shaderdata_bytes(&self) -> u64 {
        crate::input::files_bytes(self.dir.ui_dirs.iter().flat_map(|u| &u.shaderdata))
    }

    /// Runs `sink` over one ui directory.
    pub fn run_ui<S: Sink>(
        &mut self,
        ui: &UiDir,
        opts: &Options,
        names: &mut Names,
        sink: &mut S,
        progress: &dyn Progress,
    ) -> Result<RunStats, Error> {
        let codeobjs = ui.code_objects(&self.files, &mut self.diag);
        let occ_path = ui.path.join("occupancy.json");
        let occ = if let Some(raw) = &ui.raw {
            // Its waves are added as its traces are decoded.
            raw.occupancy()
        } else if occ_path.is_file() {
            match Occupancy::read(&occ_path) {
                Ok(o) => o,
                Err(e) => {
                    self.diag.warn(kind::BAD_FILE, || e.to_string());
                    Occupancy::default()
                }
            }
        } else {
            self.diag
                .warn(kind::NO_OCCUPANCY_FILE, || ui.path.display().to_string());
            Occupancy::default()
        };
        let mut codeobjs = codeobjs;
        let first_extra = codeobjs.len();
        let dw = ui.default_wave_size();
        for (i, (map, src)) in self.extra.iter().enumerate() {
            let mut co = CodeObject::new(EXTRA_ID_BASE - i as u64, map.clone(), src.clone(), dw);
            co.from_option = true;
            codeobjs.push(co);
        }
        let hint = missing_hint(&self.dir, ui, &codeobjs[..first_extra]);
        let mut catalog = Catalog::new(codeobjs, occ, opts.clone(), names, &mut self.diag);
        catalog.missing_hint = hint;
        let ahead = match ui.raw {
            Some(_) => self
                .ahead
                .get_or_insert_with(|| crate::raw::ahead::Ahead::start(&self.dir, opts.jobs))
                .as_ref(),
            None => None,
        };
        let mut clocks = Clocks::new(catalog.codeobjs.len());
        let packed = opts.decode_markers && catalog.encodings.iter().any(|e| e.has_shader_clock());
        let mut demux = Demux::default();
        if packed {
            // A first pass finds each clock domain's origin and least delay. It logs what
            // the sink is to receive, which the second pass delivers with the header times
            // corrected, without reading the records again (without a temporary file, or
            // when writing it fails, the second pass reads the JSON again).
            let mut null = NullSink;
            let mut first = Pass::new(&mut catalog, &mut clocks, names, &mut null, ahead);
            first.want_addr = sink.wants_addresses();
            first.log = spill::Spill::new().ok();
            if first.log.is_some() {
                demux.pass_ui::<_, { demux::RECORD }>(ui, &mut first, &NoBytes)?;
            } else {
                demux.pass_ui::<_, { demux::SURVEY }>(ui, &mut first, &NoBytes)?;
            }
            let events = first.log.take().and_then(spill::Spill::finish);
            let diag = std::mem::take(&mut first.diag);
            clocks.settle(&catalog.codeobjs, &mut self.diag);
            if let Some(events) = events {
                let mut pass = Pass::new(&mut catalog, &mut clocks, names, sink, ahead);
                pass.diag = diag;
                demux.play(ui, events, &mut pass, progress)?;
                self.diag.merge(&pass.diag);
                self.file_errors.append(&mut demux.file_errors);
                return Ok(demux.stats);
            }
            demux.reset();
        }
        let mut pass = Pass::new(&mut catalog, &mut clocks, names, sink, ahead);
        demux.pass_ui::<_, { demux::DIRECT }>(ui, &mut pass, progress)?;
        self.diag.merge(&pass.diag);
        self.file_errors.append(&mut demux.file_errors);
        Ok(demux.stats)
    }
}

/// What one pass over a ui directory reads and writes besides the records.
struct Pass<'a, S> {
    catalog: &'a mut Catalog,
    clocks: &'a mut Clocks,
    names: &'a mut Names,
    sink: &'a mut S,
    /// Whether the sink wants address blocks (their payloads are collected only then).
    want_addr: bool,
    /// The pass's own warnings (those of a survey pass are dropped).
    diag: Diagnostics,
    /// The event log of a [`demux::RECORD`] pass.
    log: Option<spill::Spill>,
    /// The workers decoding raw traces ahead of the engine, if any.
    ahead: Option<&'a crate::raw::ahead::Ahead>,
}

impl<'a, S: Sink> Pass<'a, S> {
    fn new(
        catalog: &'a mut Catalog,
        clocks: &'a mut Clocks,
        names: &'a mut Names,
        sink: &'a mut S,
        ahead: Option<&'a crate::raw::ahead::Ahead>,
    ) -> Self {
        Pass {
            ahead,
            want_addr: sink.wants_addresses(),
            catalog,
            clocks,
            names,
            sink,
            diag: Diagnostics::default(),
            log: None,
        }
    }
}

/// The funcmaps of one `--code-object` file: one per code object that has a funcmap.
fn read_option_code_objects(f: &Path) -> Result<Vec<(Funcmap, String)>, Error> {
    let bad = |reason: String| Error::CodeObjectOption {
        path: f.to_path_buf(),
        reason,
    };
    let cos = sqtt_codeobj::read_path(f).map_err(|e| bad(e.to_string()))?;
    let n = cos.len();
    let mut out = Vec::new();
    let mut malformed = None;
    for co in cos {
        match co.funcmap {
            sqtt_codeobj::FuncmapState::Present { map, .. } => {
                out.push((map, format!("{} ({})", f.display(), co.location)));
            }
            sqtt_codeobj::FuncmapState::Malformed(e) => {
                malformed.get_or_insert(e.to_string());
            }
            _ => {}
        }
    }
    if out.is_empty() {
        return Err(bad(match malformed {
            Some(e) => format!("malformed .sqtt_funcmap section: {e}"),
            None => format!("none of its {n} code objects has a .sqtt_funcmap section"),
        }));
    }
    Ok(out)
}

/// What was looked for when a wave's code object is missing, for the warning.
fn missing_hint(dir: &TraceDir, ui: &UiDir, found: &[CodeObject]) -> String {
    let searched: Vec<String> = dir
        .searched
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let have: Vec<String> = found.iter().map(|c| c.id.to_string()).collect();
    format!(
        "looked for *_code_object_id_<N>.out in and below {} and for sqtt_funcmap rows in {}; \
         code objects found: {}; give the executable or code object with --code-object FILE",
        searched.join(", "),
        ui.path.join("code.json").display(),
        if have.is_empty() {
            "none".to_string()
        } else {
            have.join(", ")
        }
    )
}

struct NoBytes;
impl Progress for NoBytes {}

struct NullSink;
impl Sink for NullSink {}

//! The record engine shared by every tool.
//!
//! It walks one ui directory's shaderdata records in file order, drops PRIV records,
//! demultiplexes the rest per `(se, cu, simd, wave_id)` slot, finds each record's wave instance
//! in `occupancy.json` (the latest wave start at or before the record), consumes `R:`-declared
//! payload records after their header, decodes marker headers with the wave's code object
//! (restoring packed gfx12 headers and correcting their times per
//! `(se, cu, simd, clock_bits, clock_shift)` domain, which takes a first pass over the records),
//! and hands scope, point and address events to a [`Sink`].

use std::io::Read;
use std::path::Path;

use rustc_hash::FxHashMap;
use sqtt_markers::encoding::decode_marker_value_with;
use sqtt_markers::{DecodedMarker, Entry, Funcmap, MarkerEncoding};

use crate::codeobj::{demangle, short_name, AddrCategory, CodeObject, MarkerClass};
use crate::diag::{kind, Diagnostics, Progress};
use crate::error::Error;
use crate::input::{slot_key, Occupancy, TraceDir, UiDir, WaveSpan};
use crate::shaderdata::{self, Record};

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

/// Buffer descriptor parts of a buffer address block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferParts {
    pub base: u64,
    pub soffset: u32,
    pub stride: u32,
}

/// One parsed address-trace block, filtered by EXEC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressBlock {
    pub category: AddrCategory,
    pub op: &'static str,
    pub exec: u64,
    pub wave_size: u32,
    /// Active lanes, ascending.
    pub lanes: Vec<u8>,
    /// Per active lane: the address (LDS byte offset / permute index for those kinds).
    pub addresses: Vec<u64>,
    pub buffer: Option<BufferParts>,
    /// Per active lane (buffers).
    pub voffsets: Vec<u32>,
    /// Per active lane (struct buffers).
    pub vindex: Vec<u32>,
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
    pub diag: Diagnostics,
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
        let mut extra = Vec::new();
        for f in code_objects {
            extra.extend(read_option_code_objects(f)?);
        }
        let dir = TraceDir::open(path)?;
        let mut diag = Diagnostics::default();
        for w in &dir.warnings {
            diag.warn(kind::BAD_FILE, || w.clone());
        }
        let files = dir.read_code_objects(&mut diag);
        Ok(Trace {
            dir,
            file_errors: Vec::new(),
            files,
            extra,
            diag,
        })
    }

    /// Total bytes of shaderdata, for progress.
    pub fn shaderdata_bytes(&self) -> u64 {
        self.dir
            .ui_dirs
            .iter()
            .flat_map(|u| u.shaderdata.iter())
            .filter_map(|(_, p)| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum()
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
        let occ = if occ_path.is_file() {
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
        let mut tables = Tables::new(codeobjs, occ, opts.clone(), names, &mut self.diag);
        tables.missing_hint = hint;
        let packed = opts.decode_markers && tables.encodings.iter().any(|e| e.has_shader_clock());
        let mut engine = Engine {
            slots: Vec::new(),
            index: FxHashMap::default(),
            cache: Box::new([(0, 0); SLOT_CACHE]),
            stats: RunStats::default(),
            first_unread: None,
            file_errors: Vec::new(),
        };
        if packed {
            engine.pass::<_, true>(
                ui,
                &mut tables,
                names,
                &mut NullSink,
                &NoBytes,
                &mut self.diag,
            )?;
            engine.reset();
            tables.settle_domains(&mut self.diag);
        }
        engine.pass::<_, false>(ui, &mut tables, names, sink, progress, &mut self.diag)?;
        self.file_errors.append(&mut engine.file_errors);
        Ok(engine.stats)
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

const NONE: usize = usize::MAX;

struct Domain {
    origin: Option<(u64, u64)>,
    min_rel: i64,
    /// The minimum relative delay of each code object's headers (by code object index), so
    /// that the headers of a code object found already normalised can be left out.
    min_by_co: Vec<i64>,
    mask: u64,
    half: u64,
    bucket: u64,
}

impl Domain {
    fn new(enc: &MarkerEncoding, codeobjs: usize) -> Domain {
        let w = enc.shader_clock_bits + enc.shader_clock_shift;
        let mask = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
        Domain {
            origin: None,
            min_rel: i64::MAX,
            min_by_co: vec![i64::MAX; codeobjs],
            mask,
            half: (mask >> 1) + 1,
            bucket: 1u64 << enc.shader_clock_shift,
        }
    }

    fn relative(&mut self, t: u64, sampled: u64) -> i64 {
        let (rt, rs) = *self.origin.get_or_insert((t, sampled));
        let x = t
            .wrapping_sub(rt)
            .wrapping_sub(sampled.wrapping_sub(rs))
            .wrapping_add(self.half)
            & self.mask;
        x as i64 - self.half as i64
    }
}

struct Tables<'a> {
    codeobjs: Vec<CodeObject>,
    encodings: Vec<MarkerEncoding>,
    /// Per code object: frame index by marker ID (u32::MAX = not yet interned).
    frames: Vec<Vec<u32>>,
    unknown_frames: FxHashMap<u32, u32>,
    occ: Occupancy,
    /// kernel_id -> (code object index, kernel frame)
    dispatch: FxHashMap<u64, (Option<usize>, u32)>,
    single_co: Option<usize>,
    no_occ_frame: u32,
    opts: Options,
    /// The correction domains, and their index by `(se, cu, simd, clock_bits, clock_shift)`.
    domains: Vec<Domain>,
    domain_index: FxHashMap<(u32, u32, u32, u32, u32), usize>,
    /// What was looked for, for the warning about waves with no code object.
    missing_hint: String,
    /// Per code object: its packed headers were already restored to the legacy form (and
    /// their times corrected) by att_tool; they are read as legacy headers.
    normalised: Vec<bool>,
    /// Per code object, in the first pass: headers read in the packed form, and how many of
    /// them carried a nonzero clock field.
    packed_seen: Vec<u64>,
    packed_clocked: Vec<u64>,
    _d: std::marker::PhantomData<&'a ()>,
}

impl<'a> Tables<'a> {
    fn new(
        codeobjs: Vec<CodeObject>,
        occ: Occupancy,
        opts: Options,
        names: &mut Names,
        diag: &mut Diagnostics,
    ) -> Tables<'a> {
        let encodings = codeobjs
            .iter()
            .map(|c| c.funcmap.marker_encoding())
            .collect();
        let frames = codeobjs.iter().map(|_| Vec::new()).collect();
        let single_co = (codeobjs.len() == 1).then_some(0);
        let mut dispatch = FxHashMap::default();
        for (kid, kname) in &occ.dispatches {
            let found = codeobj_of_dispatch(&codeobjs, *kid, kname, &occ, diag);
            let co = found.unwrap_or(None).or(single_co);
            if co.is_none() && found.is_ok() && !codeobjs.is_empty() {
                diag.warn(kind::NO_DISPATCH_CODEOBJ, || {
                    format!("dispatch {kid} ({kname})")
                });
            }
            let shown = opts.show(kname);
            let frame = names.intern(if shown.is_empty() {
                "unknown_kernel"
            } else {
                &shown
            });
            dispatch.insert(*kid, (co, frame));
        }
        let no_occ_frame = names.intern("unknown_kernel");
        let n = codeobjs.len();
        Tables {
            missing_hint: String::new(),
            normalised: vec![false; n],
            packed_seen: vec![0; n],
            packed_clocked: vec![0; n],
            codeobjs,
            encodings,
            frames,
            unknown_frames: FxHashMap::default(),
            occ,
            dispatch,
            single_co,
            no_occ_frame,
            opts,
            domains: Vec::new(),
            domain_index: FxHashMap::default(),
            _d: std::marker::PhantomData,
        }
    }

    /// After the first pass: decides which code objects' headers were already normalised
    /// (their layout came from att_tool's `code.json` and not one header carries a clock
    /// sample), and takes each domain's minimum over the others only.
    fn settle_domains(&mut self, diag: &mut Diagnostics) {
        for (ci, co) in self.codeobjs.iter().enumerate() {
            let norm =
                co.layout_in_code_json && self.packed_seen[ci] > 0 && self.packed_clocked[ci] == 0;
            self.normalised[ci] = norm;
            if norm {
                let n = self.packed_seen[ci];
                diag.warn(kind::NORMALISED, || {
                    format!(
                        "code object {} ({}): {n} headers in the legacy form, read as they are",
                        co.id, co.source
                    )
                });
            }
        }
        for d in &mut self.domains {
            d.min_rel = d
                .min_by_co
                .iter()
                .zip(&self.normalised)
                .filter(|(_, n)| !**n)
                .map(|(m, _)| *m)
                .min()
                .unwrap_or(i64::MAX);
        }
    }

    /// Code object and kernel frame of a dispatch not named in `dispatches`.
    fn dispatch_of(&mut self, kid: u64, names: &mut Names) -> (Option<usize>, u32) {
        if let Some(v) = self.dispatch.get(&kid) {
            return *v;
        }
        let co = self
            .occ
            .dispatch_codeobj
            .get(&kid)
            .and_then(|id| self.codeobjs.iter().position(|c| c.id == *id))
            .or(self.single_co);
        let name = co
            .and_then(|i| self.codeobjs[i].kernel_names().next().map(str::to_string))
            .map(|k| self.opts.show(&k))
            .unwrap_or_else(|| format!("dispatch_{kid}"));
        let v = (co, names.intern(&name));
        self.dispatch.insert(kid, v);
        v
    }

    fn frame(&mut self, co: Option<usize>, id: u32, names: &mut Names) -> u32 {
        if let Some(ci) = co {
            let (_, _, entry) = self.codeobjs[ci].lookup(id);
            if let Some(e) = entry {
                let v = &mut self.frames[ci];
                if (id as usize) < v.len() && v[id as usize] != u32::MAX {
                    return v[id as usize];
                }
                let name = if e.kind == sqtt_markers::EntryKind::Function {
                    self.opts.show(&e.name)
                } else {
                    e.name.clone()
                };
                let f = names.intern(&name);
                if (id as usize) < (1 << 20) {
                    if v.len() <= id as usize {
                        v.resize(id as usize + 1, u32::MAX);
                    }
                    v[id as usize] = f;
                }
                return f;
            }
        }
        if let Some(f) = self.unknown_frames.get(&id) {
            return *f;
        }
        let f = names.intern(&format!("marker_{id}"));
        self.unknown_frames.insert(id, f);
        f
    }
}

/// The code object of a dispatch: by the ID the directory gives (`events` or the fallback
/// name), else by kernel name when one code object (or several with the same funcmap) has it.
/// `Err` when the name is in several code objects that differ (a warning is counted).
fn codeobj_of_dispatch(
    codeobjs: &[CodeObject],
    kid: u64,
    kname: &str,
    occ: &Occupancy,
    diag: &mut Diagnostics,
) -> Result<Option<usize>, ()> {
    if let Some(id) = occ.dispatch_codeobj.get(&kid) {
        if let Some(i) = codeobjs.iter().position(|c| c.id == *id) {
            return Ok(Some(i));
        }
    }
    let matching: Vec<usize> = codeobjs
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kernel_names().any(|k| kernel_matches(k, kname)))
        .map(|(i, _)| i)
        .collect();
    let Some(&first) = matching.first() else {
        // No ID and no name found: the code object of `--code-object` when there is one
        // (or several with one funcmap, as an executable built for several targets has).
        let extra: Vec<usize> = (0..codeobjs.len())
            .filter(|&i| codeobjs[i].from_option)
            .collect();
        return Ok(match extra.first() {
            Some(&f)
                if extra
                    .iter()
                    .all(|&i| codeobjs[i].funcmap.entries == codeobjs[f].funcmap.entries) =>
            {
                Some(f)
            }
            _ => None,
        });
    };
    if matching
        .iter()
        .all(|&i| codeobjs[i].funcmap.entries == codeobjs[first].funcmap.entries)
    {
        return Ok(Some(first));
    }
    diag.warn(kind::AMBIGUOUS_KERNEL, || {
        let ids: Vec<String> = matching
            .iter()
            .map(|&i| codeobjs[i].id.to_string())
            .collect();
        format!(
            "dispatch {kid} ({kname}) matches code objects {}",
            ids.join(", ")
        )
    });
    Err(())
}

fn kernel_matches(k_row: &str, dispatch_name: &str) -> bool {
    let k = k_row.strip_suffix(".kd").unwrap_or(k_row);
    let d = dispatch_name.strip_suffix(".kd").unwrap_or(dispatch_name);
    k == d || demangle(k) == d
}

struct Slot {
    se: u32,
    cu: u32,
    simd: u32,
    wave_id: u32,
    spans: Vec<WaveSpan>,
    cursor: usize,
    cur: usize,
    active: bool,
    wave: Wave,
    co: Option<usize>,
    last_t: u64,
    pending: u32,
    collect: bool,
    hdr: Option<Hdr>,
    payload: Vec<u32>,
    /// The correction domain of the slot's records of code object, cu and simd `dom_for`
    /// (`NONE`: not looked up; the cu and simd are those of the records, which a slot key
    /// shared by two of them would not tell apart).
    dom: usize,
    dom_for: (usize, u32, u32),
}

#[derive(Clone, Copy)]
struct Hdr {
    m: DecodedMarker,
    class: MarkerClass,
    time: u64,
    arrival: u64,
    value: u32,
    npay: u32,
}

fn find_span(spans: &[WaveSpan], cursor: &mut usize, t: u64) -> usize {
    if spans.is_empty() {
        return NONE;
    }
    let mut c = (*cursor).min(spans.len() - 1);
    if spans[c].start > t {
        // Time went back: search.
        let n = spans.partition_point(|s| s.start <= t);
        if n == 0 {
            return NONE;
        }
        c = n - 1;
    } else {
        while c + 1 < spans.len() && spans[c + 1].start <= t {
            c += 1;
        }
    }
    *cursor = c;
    c
}

/// How many records back a record may be out of time order in its shader engine's files and
/// still be put in its place.
const ORDER_WINDOW: usize = 1 << 12;

/// Puts the records of one shader engine in time order (stable: file order among equal times)
/// through a window of the latest [`ORDER_WINDOW`] records. In-order records only pass through.
#[derive(Default)]
struct Reorder {
    buf: std::collections::VecDeque<Record>,
    /// Time of the last record handed on.
    last_out: Option<u64>,
    /// Records put back in order, and the first of them.
    moved: u64,
    first_moved: String,
    /// Records earlier than ones already handed on (used where they fall).
    late: u64,
    first_late: String,
}

impl Reorder {
    #[inline]
    fn push(&mut self, r: &Record, mut f: impl FnMut(&Record)) {
        match self.buf.back() {
            Some(b) if r.time < b.time => self.misplaced(r),
            _ => self.buf.push_back(*r),
        }
        if self.buf.len() > ORDER_WINDOW {
            if let Some(x) = self.buf.pop_front() {
                self.last_out = Some(x.time);
                f(&x);
            }
        }
    }

    #[cold]
    fn misplaced(&mut self, r: &Record) {
        let describe = |r: &Record| {
            format!(
                "time {} (cu {} simd {} wave {}) after a record at {}",
                r.time,
                r.cu,
                r.simd,
                r.wave_id,
                self.buf.back().map(|b| b.time).unwrap_or(0)
            )
        };
        if self.last_out.is_some_and(|t| r.time < t) {
            if self.late == 0 {
                self.first_late = describe(r);
            }
            self.late += 1;
            self.buf.push_front(*r);
            return;
        }
        if self.moved == 0 {
            self.first_moved = describe(r);
        }
        self.moved += 1;
        let pos = self.buf.partition_point(|x| x.time <= r.time);
        self.buf.insert(pos, *r);
    }

    fn flush(&mut self, mut f: impl FnMut(&Record)) {
        while let Some(x) = self.buf.pop_front() {
            f(&x);
        }
        self.last_out = None;
    }
}

struct Engine {
    slots: Vec<Slot>,
    index: FxHashMap<u64, usize>,
    /// A direct-mapped cache in front of `index`: `(key, slot + 1)`, 0 when empty.
    cache: Box<[(u64, u32); SLOT_CACHE]>,
    stats: RunStats,
    /// The dispatch of the first record not read for want of a code object.
    first_unread: Option<Option<u64>>,
    /// Why each shaderdata file of the last pass failed.
    file_errors: Vec<String>,
}

const SLOT_CACHE: usize = 1024;

#[inline]
fn cache_line(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOT_CACHE.trailing_zeros())) as usize
}

struct CountingReader<'p, R> {
    inner: R,
    progress: &'p dyn Progress,
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.inc(n as u64);
        Ok(n)
    }
}

impl Engine {
    fn reset(&mut self) {
        for s in &mut self.slots {
            s.cursor = 0;
            s.cur = NONE;
            s.active = false;
            s.pending = 0;
            s.hdr = None;
        }
        self.stats = RunStats::default();
    }

    #[allow(clippy::too_many_arguments)]
    fn pass<S: Sink, const FIRST: bool>(
        &mut self,
        ui: &UiDir,
        t: &mut Tables,
        names: &mut Names,
        sink: &mut S,
        progress: &dyn Progress,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let want_addr = sink.wants_addresses();
        let mut local = Diagnostics::default();
        let mut counts = RunStats::default();
        let mut file_errors: Vec<String> = Vec::new();
        let mut order = Reorder::default();
        let mut feed = |se: u32, r: &Record| {
            self.record::<S, FIRST>(se, r, t, names, sink, want_addr, &mut local)
        };
        let mut cur_se = None;
        for (se, path) in &ui.shaderdata {
            let se = *se;
            if let Some(prev) = cur_se.filter(|p| *p != se) {
                order.flush(|r| feed(prev, r));
            }
            cur_se = Some(se);
            let file = match crate::input::open_input(
                path,
                crate::input::MAX_STREAMED_JSON,
                "a shaderdata file",
            ) {
                Ok(f) => f,
                Err(e) => {
                    counts.files_bad += 1;
                    file_errors.push(e.to_string());
                    continue;
                }
            };
            let reader = std::io::BufReader::with_capacity(
                1 << 20,
                CountingReader {
                    inner: file,
                    progress,
                },
            );
            let res = shaderdata::read_from(reader, path, |r| order.push(r, |x| feed(se, x)));
            match res {
                Ok(st) => {
                    counts.files_ok += 1;
                    counts.records += st.records;
                }
                Err(e) => {
                    if let Error::Json { records, .. } = &e {
                        counts.records += records;
                        if *records > 0 {
                            counts.files_ok += 1;
                        } else {
                            counts.files_bad += 1;
                        }
                    } else {
                        counts.files_bad += 1;
                    }
                    file_errors.push(e.to_string());
                }
            }
        }
        if let Some(se) = cur_se {
            order.flush(|r| feed(se, r));
        }
        self.stats.files_ok += counts.files_ok;
        self.stats.files_bad += counts.files_bad;
        self.stats.records += counts.records;
        for e in &file_errors {
            local.warn(kind::BAD_FILE, || e.clone());
        }
        self.file_errors = file_errors;
        local.warn_n(kind::OUT_OF_ORDER, order.moved, || {
            order.first_moved.clone()
        });
        local.warn_n(kind::TOO_LATE, order.late, || order.first_late.clone());
        if let Some(d) = self.first_unread {
            local.warn_n(kind::NO_CODEOBJ, self.stats.unread, || {
                let what = match d {
                    Some(kid) => {
                        let name = t.occ.dispatches.get(&kid).cloned().unwrap_or_default();
                        match t.occ.dispatch_codeobj.get(&kid) {
                            Some(co) => format!("dispatch {kid} ({name}) of code object {co}"),
                            None => format!("dispatch {kid} ({name})"),
                        }
                    }
                    None => "a wave with no occupancy".to_string(),
                };
                format!("{}: {what}; {}", ui.path.display(), t.missing_hint)
            });
        }
        for i in 0..self.slots.len() {
            if self.slots[i].active {
                end_wave::<S, FIRST>(&mut self.slots[i], i, names, sink, &mut local);
            }
        }
        if !FIRST {
            diag.merge(&local);
        }
        Ok(())
    }

    /// The slot of `key` (of record `r` of shader engine `se`), made when new.
    #[cold]
    fn slot_of(&mut self, key: u64, se: u32, r: &Record, t: &mut Tables) -> usize {
        if let Some(i) = self.index.get(&key) {
            return *i;
        }
        let spans = t.occ.slots.remove(&key).unwrap_or_default();
        self.slots.push(Slot {
            se,
            cu: r.cu,
            simd: r.simd,
            wave_id: r.wave_id,
            spans,
            cursor: 0,
            cur: NONE,
            active: false,
            wave: Wave::default(),
            co: None,
            last_t: 0,
            pending: 0,
            collect: false,
            hdr: None,
            payload: Vec::new(),
            dom: NONE,
            dom_for: (NONE, 0, 0),
        });
        self.index.insert(key, self.slots.len() - 1);
        self.slots.len() - 1
    }

    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn record<S: Sink, const FIRST: bool>(
        &mut self,
        se: u32,
        r: &Record,
        t: &mut Tables,
        names: &mut Names,
        sink: &mut S,
        want_addr: bool,
        diag: &mut Diagnostics,
    ) {
        if r.is_priv() {
            self.stats.priv_records += 1;
            return;
        }
        let key = slot_key(se, r.cu, r.simd, r.wave_id);
        let line = cache_line(key);
        let (ck, ci) = self.cache[line];
        let idx = if ci != 0 && ck == key {
            ci as usize - 1
        } else {
            let i = self.slot_of(key, se, r, t);
            if i < u32::MAX as usize {
                self.cache[line] = (key, i as u32 + 1);
            }
            i
        };
        let slot = &mut self.slots[idx];
        let span = find_span(&slot.spans, &mut slot.cursor, r.time);
        if !slot.active || span != slot.cur {
            if slot.active {
                end_wave::<S, FIRST>(slot, idx, names, sink, diag);
            }
            self.stats.waves += 1;
            start_wave::<S, FIRST>(slot, idx, span, r.time, t, names, sink);
        }
        if span == NONE && !FIRST {
            diag.warn(kind::NO_OCCUPANCY, || {
                format!(
                    "se {} cu {} simd {} wave {} at time {}",
                    se, r.cu, r.simd, r.wave_id, r.time
                )
            });
        }
        if slot.co.is_none() {
            // Which records are payload is unknown without the funcmap: none is read, but the
            // wave still lasts until its last record.
            self.stats.unread += 1;
            slot.last_t = slot.last_t.max(r.time);
            if self.first_unread.is_none() {
                self.first_unread = Some(slot.wave.dispatch);
            }
            return;
        }
        if slot.pending > 0 {
            self.stats.payload_records += 1;
            slot.pending -= 1;
            if slot.collect {
                slot.payload.push(r.value);
            }
            if slot.pending == 0 {
                if let Some(h) = slot.hdr.take() {
                    if !FIRST {
                        let payload = std::mem::take(&mut slot.payload);
                        deliver(slot, idx, &h, &payload, t, names, sink, want_addr, diag);
                        slot.payload = payload;
                    }
                }
            }
            return;
        }
        self.stats.headers += 1;
        let co = slot.co.map(|i| &t.codeobjs[i]);
        // An `s_ttracedata_imm` record is never a packed header, and neither is a header of a
        // code object whose headers att_tool already restored.
        let legacy = r.is_imm() || slot.co.is_some_and(|i| t.normalised[i]);
        let m = match co {
            Some(c) if !legacy => {
                decode_marker_value_with(r.value, &c.encoding, |id| c.lookup(id).2.is_some())
            }
            _ => MarkerEncoding::legacy().decode(r.value),
        };
        let (class, npay) = match co {
            Some(c) => {
                let (class, n, _) = c.lookup(m.id);
                (class, n)
            }
            None => (MarkerClass::Unknown, 0),
        };
        let mut time = r.time;
        if let (Some(clock), Some(ci), true) = (m.packed_clock, slot.co, t.opts.decode_markers) {
            let enc = t.encodings[ci];
            if slot.dom == NONE || slot.dom_for != (ci, r.cu, r.simd) {
                let dkey = (
                    se,
                    r.cu,
                    r.simd,
                    enc.shader_clock_bits,
                    enc.shader_clock_shift,
                );
                let domains = &mut t.domains;
                let n = t.codeobjs.len();
                slot.dom = *t.domain_index.entry(dkey).or_insert_with(|| {
                    domains.push(Domain::new(&enc, n));
                    domains.len() - 1
                });
                slot.dom_for = (ci, r.cu, r.simd);
            }
            let dom = &mut t.domains[slot.dom];
            let sampled = u64::from(clock) << enc.shader_clock_shift;
            let rel = dom.relative(r.time, sampled);
            if FIRST {
                dom.min_by_co[ci] = dom.min_by_co[ci].min(rel);
                t.packed_seen[ci] += 1;
                t.packed_clocked[ci] += u64::from(clock != 0);
            } else {
                let shift = rel
                    .saturating_sub(dom.min_rel)
                    .saturating_sub(dom.bucket as i64 - 1)
                    .max(0) as u64;
                if shift > 0 {
                    self.stats.corrected += 1;
                }
                time = r.time.saturating_sub(shift);
            }
        }
        let time = time.max(slot.last_t);
        slot.last_t = time;
        let value = if t.opts.decode_markers {
            m.legacy_value()
        } else {
            r.value
        };
        let h = Hdr {
            m,
            class,
            time,
            arrival: r.time,
            value,
            npay,
        };
        if npay > 0 {
            slot.pending = npay;
            slot.collect = !FIRST
                && match class {
                    MarkerClass::Address(_) => want_addr,
                    _ => npay <= 64,
                };
            slot.payload.clear();
            slot.hdr = Some(h);
            return;
        }
        if !FIRST {
            deliver(slot, idx, &h, &[], t, names, sink, want_addr, diag);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn start_wave<S: Sink, const FIRST: bool>(
    slot: &mut Slot,
    idx: usize,
    span: usize,
    time: u64,
    t: &mut Tables,
    names: &mut Names,
    sink: &mut S,
) {
    let (co, kernel, dispatch, start, end, instance) = if span == NONE {
        (t.single_co, t.no_occ_frame, None, None, None, 0)
    } else {
        let s = slot.spans[span];
        let (co, frame) = t.dispatch_of(s.kernel_id, names);
        (
            co,
            frame,
            Some(s.kernel_id),
            Some(s.start),
            s.end,
            span as u32,
        )
    };
    slot.cur = span;
    slot.active = true;
    slot.co = co;
    slot.pending = 0;
    slot.hdr = None;
    slot.last_t = start.unwrap_or(time).min(time);
    slot.wave = Wave {
        se: slot.se,
        cu: slot.cu,
        simd: slot.simd,
        wave_id: slot.wave_id,
        instance,
        dispatch,
        kernel,
        codeobj: co.map(|i| t.codeobjs[i].id),
        start,
        end,
        begin: slot.last_t,
    };
    if !FIRST {
        sink.wave_start(names, idx, &slot.wave);
    }
}

fn end_wave<S: Sink, const FIRST: bool>(
    slot: &mut Slot,
    idx: usize,
    names: &Names,
    sink: &mut S,
    diag: &mut Diagnostics,
) {
    if slot.pending > 0 && !FIRST {
        let w = slot.wave;
        let missing = slot.pending;
        diag.warn(kind::CUT_SHORT, || {
            format!(
                "se {} cu {} simd {} wave {} #{}: {} payload records missing",
                w.se, w.cu, w.simd, w.wave_id, w.instance, missing
            )
        });
    }
    slot.pending = 0;
    slot.hdr = None;
    slot.active = false;
    let end = slot.wave.end.unwrap_or(slot.last_t).max(slot.last_t);
    if !FIRST {
        sink.wave_end(names, idx, &slot.wave, end);
    }
}

#[allow(clippy::too_many_arguments)]
fn deliver<S: Sink>(
    slot: &mut Slot,
    idx: usize,
    h: &Hdr,
    payload: &[u32],
    t: &mut Tables,
    names: &mut Names,
    sink: &mut S,
    want_addr: bool,
    diag: &mut Diagnostics,
) {
    let m = &h.m;
    if m.id == 0 {
        if m.is_exit() {
            let mk = Marker {
                id: 0,
                class: MarkerClass::Unknown,
                frame: u32::MAX,
                value: h.value,
                entry: None,
                arrival: h.arrival,
            };
            sink.scope(names, idx, h.time, ScopeOp::Exit, &mk);
        }
        return;
    }
    if h.class == MarkerClass::Unknown {
        let w = slot.wave;
        diag.warn(kind::UNKNOWN_ID, || {
            format!(
                "ID {} (value {:#x}) in se {} cu {} simd {} wave {}",
                m.id, m.raw, w.se, w.cu, w.simd, w.wave_id
            )
        });
    }
    let frame = t.frame(slot.co, m.id, names);
    let entry = slot.co.and_then(|ci| t.codeobjs[ci].lookup(m.id).2);
    let mk = Marker {
        id: m.id,
        class: h.class,
        frame,
        value: h.value,
        entry,
        arrival: h.arrival,
    };
    let scope_class = matches!(
        h.class,
        MarkerClass::Function | MarkerClass::User | MarkerClass::Unknown
    );
    if scope_class && (m.enter || m.exit_prev) {
        let op = match (m.exit_prev, m.enter) {
            (true, true) => ScopeOp::ExitEnter,
            (false, true) => ScopeOp::Enter,
            _ => ScopeOp::Exit,
        };
        sink.scope(names, idx, h.time, op, &mk);
        return;
    }
    sink.point(names, idx, h.time, &mk, payload);
    match h.class {
        MarkerClass::Address(cat) if want_addr => {
            let co = &t.codeobjs[slot.co.expect("address class implies a code object")];
            let ws = cat.wave_size_from_payload(h.npay).unwrap_or(co.wave_size);
            if cat.payload_records(co.wave_size) != h.npay {
                diag.warn(kind::ADDR_SIZE_MISMATCH, || {
                    format!(
                        "marker {} ({}): R: count {} but W:{} framing needs {}",
                        m.id,
                        names.get(frame),
                        h.npay,
                        co.wave_size,
                        cat.payload_records(co.wave_size)
                    )
                });
            }
            let op = entry
                .and_then(|e| crate::codeobj::classify_addr_trace(&e.name))
                .map(|(_, op)| op)
                .unwrap_or("unknown");
            match parse_address_block(cat, op, ws, payload) {
                Some(b) => sink.address(names, idx, h.time, &mk, &b),
                None => diag.warn(kind::ADDR_SIZE_MISMATCH, || {
                    format!("marker {}: {} payload records too few", m.id, payload.len())
                }),
            }
        }
        MarkerClass::AddressUnknown if want_addr => {
            diag.warn(kind::ADDR_UNKNOWN_KIND, || names.get(frame).to_string());
        }
        _ => {}
    }
}

/// Parses the payload of an address block (everything after the header) for `wave_size`
/// lanes; `None` when the payload is too short.
pub fn parse_address_block(
    category: AddrCategory,
    op: &'static str,
    wave_size: u32,
    p: &[u32],
) -> Option<AddressBlock> {
    let w = wave_size as usize;
    if p.len() < category.payload_records(wave_size) as usize {
        return None;
    }
    let mut exec = u64::from(p[0]) | (u64::from(p[1]) << 32);
    if w < 64 {
        exec &= (1u64 << w) - 1;
    }
    let lanes: Vec<u8> = (0..w)
        .filter(|l| exec >> l & 1 == 1)
        .map(|l| l as u8)
        .collect();
    let d = &p[2..];
    let mut b = AddressBlock {
        category,
        op,
        exec,
        wave_size,
        lanes,
        addresses: Vec::new(),
        buffer: None,
        voffsets: Vec::new(),
        vindex: Vec::new(),
    };
    match category {
        AddrCategory::Memory => {
            b.addresses = b
                .lanes
                .iter()
                .map(|&l| {
                    let l = l as usize;
                    u64::from(d[2 * l]) | (u64::from(d[2 * l + 1]) << 32)
                })
                .collect();
        }
        AddrCategory::Lds | AddrCategory::Permute => {
            b.addresses = b.lanes.iter().map(|&l| u64::from(d[l as usize])).collect();
        }
        AddrCategory::Buffer | AddrCategory::StructBuffer => {
            let (lo, hi, soffset) = (d[0], d[1], d[2]);
            let base = (u64::from(lo) | (u64::from(hi) << 32)) & 0xFFFF_FFFF_FFFF;
            let stride = (hi >> 16) & 0x3FFF;
            b.buffer = Some(BufferParts {
                base,
                soffset,
                stride,
            });
            b.voffsets = b.lanes.iter().map(|&l| d[3 + l as usize]).collect();
            if category == AddrCategory::StructBuffer {
                b.vindex = b.lanes.iter().map(|&l| d[3 + w + l as usize]).collect();
            }
            b.addresses = b
                .voffsets
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    let idx = b.vindex.get(i).map(|&x| u64::from(x) * u64::from(stride));
                    base.wrapping_add(u64::from(soffset))
                        .wrapping_add(u64::from(v))
                        .wrapping_add(idx.unwrap_or(0))
                })
                .collect();
        }
    }
    Some(b)
}

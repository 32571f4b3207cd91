//! What `rocprofv3 --att` writes during the run, read without AMD's decoder: the raw traces
//! `<pid>_<agent>_shader_engine_<se>_<dispatch>.att`, the code objects
//! `<pid>_<gfx>_code_object_id_<N>.out` and the run's kernel trace ([`kernels`]). Each
//! dispatch's traces make one time domain, named as rocprofv3 names the ui directory it would
//! decode them into (`ui_output_agent_<agent>_dispatch_<dispatch>`); its records and waves come
//! from `sqtt-thread-trace`'s decoders, which read the streams as AMD's decoder does, and go
//! through the engine as the JSON ones do.

pub mod ahead;
pub mod kernels;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqtt_thread_trace::decode::{self, Sink as DecodeSink};
use sqtt_thread_trace::Generation;

use crate::error::Error;
use crate::input::{code_object_id_of, slot_key, wave_spans, Occupancy, TraceDir, UiDir};
use crate::shaderdata::Record;
use kernels::{DispatchKernel, Format, KernelTrace};

/// Which of a directory's two forms of the same capture the tools read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Route {
    /// The raw traces when a kernel trace names their kernels (the same output, faster, and
    /// AMD's decoder's reading of every stream); else the `ui_output_*` directories; else the raw
    /// traces as a best effort.
    #[default]
    Auto,
    /// The raw `.att` traces.
    Raw,
    /// The `ui_output_*` directories AMD's decoder wrote.
    Decoded,
}

impl std::str::FromStr for Route {
    type Err = String;
    fn from_str(s: &str) -> Result<Route, String> {
        match s {
            "auto" => Ok(Route::Auto),
            "raw" => Ok(Route::Raw),
            "decoded" | "ui" => Ok(Route::Decoded),
            _ => Err(format!(
                "{s:?}: expected auto, raw (the .att traces) or decoded (the ui_output_* directories)"
            )),
        }
    }
}

/// Warning kinds of the raw route.
pub mod kind {
    pub const NO_KERNEL_TRACE: &str = "raw traces read without a kernel trace: rerun rocprofv3 with --kernel-trace to name their kernels; best effort: each dispatch's waves are taken for the kernel of its code object's K: row";
    pub const NOT_IN_KERNEL_TRACE: &str =
        "raw traces of dispatches the kernel trace does not list (their kernels unnamed)";
    pub const STOPPED: &str = "raw traces whose decoding stopped before their end";
    pub const NO_GENERATION: &str =
        "raw traces of no known stream format (no RDNA layout 3 or 4 header, no GFX9 header; skipped)";
}

/// One dispatch's raw traces: a time domain.
#[derive(Debug, Clone)]
pub struct RawDomain {
    pub dispatch: u64,
    /// `<pid>_<agent>` of the file names.
    pub prefix: String,
    pub agent: String,
    /// What the kernel trace says of the dispatch.
    pub kernel: Option<DispatchKernel>,
    /// The process's kernel trace, when it has one.
    pub kernel_trace: Option<PathBuf>,
    /// The dispatch's kernel ID in occupancy, numbered as AMD's decoder's tool numbers them:
    /// each kernel entry point from 1, in the order the dispatches (in ascending order) first
    /// run it.
    pub occupancy_id: u64,
}

impl RawDomain {
    /// The occupancy of the domain before its waves are decoded: the dispatch's kernel name and
    /// code object.
    pub fn occupancy(&self) -> Occupancy {
        let mut o = Occupancy {
            present: true,
            ..Occupancy::default()
        };
        if let Some(k) = &self.kernel {
            o.dispatches
                .insert(self.occupancy_id, k.kernel_name.to_string());
            if let Some(co) = k.code_object_id {
                o.dispatch_codeobj.insert(self.occupancy_id, co);
            }
        }
        o
    }
}

/// `<pid>_<agent>_shader_engine_<se>_<dispatch>.att` -> (`<pid>_<agent>`, se, dispatch).
pub fn att_name(name: &str) -> Option<(String, u32, u64)> {
    let stem = name.strip_suffix(".att")?;
    let (head, dispatch) = stem.rsplit_once('_')?;
    let (prefix, se) = head.rsplit_once("shader_engine_")?;
    let prefix = prefix.strip_suffix('_').unwrap_or(prefix);
    Some((prefix.to_string(), se.parse().ok()?, dispatch.parse().ok()?))
}

/// The process ID a rocprofv3 file name starts with (`<pid>_...`).
fn pid_of(name: &str) -> Option<&str> {
    let (pid, _) = name.split_once('_')?;
    pid.bytes().all(|b| b.is_ascii_digit()).then_some(pid)
}

/// The files of a raw capture under a directory.
#[derive(Debug, Default)]
pub struct RawFiles {
    /// (prefix, dispatch) -> (se, file).
    pub traces: BTreeMap<(String, u64), Vec<(u32, PathBuf)>>,
    pub code_objects: Vec<(u64, PathBuf)>,
    /// Kernel trace files, by format preference (SQLite, JSON, CSV).
    pub kernel_traces: Vec<(Format, PathBuf)>,
}

/// How deep below the given directory raw files are looked for (`DIR/<host>/` is 1).
const MAX_DEPTH: usize = 4;

impl RawFiles {
    /// The raw traces, code objects and kernel traces under `dir` (symbolic links to
    /// directories are not followed; `ui_output_*` directories not entered).
    pub fn find(dir: &Path) -> RawFiles {
        let mut f = RawFiles::default();
        f.walk(dir, 0);
        for v in f.traces.values_mut() {
            v.sort();
        }
        f.code_objects.sort();
        f.kernel_traces.sort();
        f
    }

    fn walk(&mut self, dir: &Path, depth: usize) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in rd.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            let name = entry.file_name().to_string_lossy().into_owned();
            if ft.is_dir() {
                if depth < MAX_DEPTH && !name.starts_with("ui_") {
                    self.walk(&entry.path(), depth + 1);
                }
            } else if let Some((prefix, se, dispatch)) = att_name(&name) {
                self.traces
                    .entry((prefix, dispatch))
                    .or_default()
                    .push((se, entry.path()));
            } else if let Some(id) = code_object_id_of(&name) {
                self.code_objects.push((id, entry.path()));
            } else if let Some(format) = Format::of(&name) {
                self.kernel_traces.push((format, entry.path()));
            }
        }
    }

    /// The kernel trace of the process `pid`: its file (named `<pid>_...`) in the format
    /// preferred (SQLite, then JSON, then CSV), or the only kernel trace there is.
    fn kernel_trace_for(&self, pid: Option<&str>) -> Option<(Format, &Path)> {
        let named = |p: &Path| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .and_then(|n| pid_of(&n).map(str::to_string))
        };
        let mine: Vec<&(Format, PathBuf)> = self
            .kernel_traces
            .iter()
            .filter(|(_, p)| pid.is_some() && named(p).as_deref() == pid)
            .collect();
        let pick = if mine.is_empty() {
            let pids: std::collections::BTreeSet<Option<String>> =
                self.kernel_traces.iter().map(|(_, p)| named(p)).collect();
            if pids.len() == 1 {
                self.kernel_traces.first()
            } else {
                None
            }
        } else {
            mine.first().copied()
        };
        pick.map(|(f, p)| (*f, p.as_path()))
    }
}

/// Opens `dir` by `route`: its `ui_output_*` directories ([`TraceDir::open`]), or its raw traces
/// as one time domain per dispatch. Errors name what is missing and the option that reads the
/// other form.
pub fn open(dir: &Path, route: Route) -> Result<TraceDir, Error> {
    if route == Route::Decoded {
        return TraceDir::open(dir).map_err(|e| match e {
            Error::NotATraceDir(p) if !RawFiles::find(&p).traces.is_empty() => Error::Unusable(
                format!(
                    "{}: no ui_output_* directory (AMD's decoder's output), only raw .att traces: read them with --input raw (or auto)",
                    p.display()
                ),
            ),
            e => e,
        });
    }
    let meta = std::fs::metadata(dir).map_err(|e| Error::io(dir, e))?;
    let files = if meta.is_dir() {
        RawFiles::find(dir)
    } else {
        RawFiles::default()
    };
    if files.traces.is_empty() {
        return match route {
            Route::Raw => Err(Error::Unusable(format!(
                "{}: no raw traces (<pid>_<agent>_shader_engine_<se>_<dispatch>.att) in it or below it; rocprofv3 --att writes them",
                dir.display()
            ))),
            _ => TraceDir::open(dir),
        };
    }
    let mut warnings = Vec::new();
    let mut traces: BTreeMap<Option<String>, Option<KernelTrace>> = BTreeMap::new();
    for (prefix, _) in files.traces.keys() {
        let pid = pid_of(prefix).map(str::to_string);
        if traces.contains_key(&pid) {
            continue;
        }
        let kt = match files.kernel_trace_for(pid.as_deref()) {
            Some((format, path)) => match KernelTrace::read(path, format) {
                Ok(k) => Some(k),
                Err(e) => {
                    warnings.push(e.to_string());
                    None
                }
            },
            None => None,
        };
        traces.insert(pid, kt);
    }
    let named = traces.values().all(Option::is_some);
    if route == Route::Auto && !named {
        // The decoded directories, when there are any, name every dispatch's kernel.
        if let Ok(d) = TraceDir::open(dir) {
            return Ok(d);
        }
    }
    let mut ui_dirs = Vec::new();
    let mut entry_ids: BTreeMap<(Option<String>, u64), u64> = BTreeMap::new();
    // Dispatches in ascending order, as rocprofv3 decodes them (its map of dispatches).
    let mut order: Vec<&(String, u64)> = files.traces.keys().collect();
    order.sort_by_key(|(prefix, d)| (*d, prefix.clone()));
    for key @ (prefix, dispatch) in order {
        let se_files = &files.traces[key];
        let pid = pid_of(prefix).map(str::to_string);
        let trace = traces.get(&pid).and_then(|k| k.as_ref());
        let kernel = trace.and_then(|k| k.dispatches.get(dispatch)).cloned();
        let agent = match pid.as_deref() {
            Some(p) => prefix[p.len()..].trim_start_matches('_').to_string(),
            None => prefix.clone(),
        };
        let next = entry_ids.len() as u64 + 1;
        let occupancy_id = match &kernel {
            Some(k) => *entry_ids.entry((pid.clone(), k.kernel_id)).or_insert(next),
            None => *dispatch,
        };
        let domain = RawDomain {
            dispatch: *dispatch,
            prefix: prefix.clone(),
            agent: agent.clone(),
            kernel,
            kernel_trace: trace.map(|k| k.path.clone()),
            occupancy_id,
        };
        let name = format!("ui_output_agent_{agent}_dispatch_{dispatch}");
        let parent = se_files[0]
            .1
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        ui_dirs.push(UiDir {
            path: parent.join(&name),
            name,
            gfxip: None,
            shaderdata: se_files.clone(),
            code_object_files: code_objects_of(&files.code_objects, pid.as_deref()),
            raw: Some(Arc::new(domain)),
            repeated_listings: Default::default(),
        });
    }
    // One domain name per dispatch and agent; several processes in one directory are told
    // apart by their process ID.
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for u in &ui_dirs {
        *count.entry(u.name.clone()).or_default() += 1;
    }
    for u in &mut ui_dirs {
        if count[&u.name] > 1 {
            let prefix = &u.raw.as_ref().map(|r| r.prefix.clone()).unwrap_or_default();
            u.name = format!("{prefix}_{}", u.name);
        }
    }
    Ok(TraceDir {
        root: dir.to_path_buf(),
        ui_dirs,
        code_object_files: files.code_objects.clone(),
        searched: vec![dir.to_path_buf()],
        warnings,
    })
}

/// The code objects of the process `pid`: its files (`<pid>_..._code_object_id_<N>.out`), one
/// per ID, or every file when none is named by it.
fn code_objects_of(all: &[(u64, PathBuf)], pid: Option<&str>) -> Vec<(u64, PathBuf)> {
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let mine: Vec<(u64, PathBuf)> = all
        .iter()
        .filter(|(_, p)| pid.is_some() && name(p).as_deref().and_then(pid_of) == pid)
        .cloned()
        .collect();
    let mut out: BTreeMap<u64, PathBuf> = BTreeMap::new();
    for (id, p) in if mine.is_empty() { all.to_vec() } else { mine } {
        out.entry(id).or_insert(p);
    }
    out.into_iter().collect()
}

/// The generation a raw trace's bytes were written by: an RDNA stream's layout header (3:
/// GFX11, 4: GFX12), or the header rocprofv3 puts before a GFX9 trace.
pub fn generation_of(data: &[u8]) -> Option<Generation> {
    match decode::header_layout(data) {
        Some(3) => Some(Generation::Gfx11),
        Some(4) => Some(Generation::Gfx12),
        _ if decode::gfx9_header(data) => Some(Generation::Gfx9),
        _ => None,
    }
}

/// The largest raw trace opened (mapped, or read whole where it cannot be).
pub const MAX_TRACE_BYTES: u64 = 16 << 30;

/// A raw trace's bytes ([`sqtt_files::mapped::Bytes`]: mapped, or read where it cannot be).
pub struct Trace(sqtt_files::mapped::Bytes);

impl std::ops::Deref for Trace {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl Trace {
    /// An error naming `path` when the file shrank while it was used: what was made of its
    /// bytes is not its.
    pub fn intact(&self, path: &Path) -> Result<(), Error> {
        self.0.intact().map_err(|e| Error::io(path, e))
    }
}

/// Opens one raw trace: only a regular file (a FIFO, a directory or a device is refused with
/// what it is, so nothing blocks), of at most [`MAX_TRACE_BYTES`], mapped where it can be (no
/// copy, no fresh memory: the decoders read the page cache), else read. [`Trace::intact`] says
/// after decoding whether the bytes were the file's.
pub fn open_trace(path: &Path) -> Result<Trace, Error> {
    sqtt_files::mapped::Bytes::open(path, MAX_TRACE_BYTES, "a raw trace")
        .map(Trace)
        .map_err(|e| Error::io(path, e))
}

/// One shader engine's trace decoded: its waves as occupancy rows (start or end, time) by slot
/// key, and what the decoder saw.
pub struct Decoded {
    pub waves: BTreeMap<u64, Vec<(u64, bool)>>,
    pub summary: decode::Summary,
}

/// The buffers of [`decode_engine`], kept from engine to engine so that their memory is touched
/// once (fresh pages cost more than the decoding: each is faulted in and zeroed).
#[derive(Default)]
pub struct Buffers {
    /// The engine's records, in stream order, but for [`Buffers::tail`].
    records: Vec<decode::ShaderData>,
    /// The part of a stream decoded apart ([`decode::Split`]).
    part: Part,
    /// The records that follow `records`: `part.records[from..to]`, their times moved by the
    /// offset (left where the part's walk put them, not copied: a copy would touch as many
    /// fresh pages again).
    tail: Option<(usize, usize, u64)>,
    /// The records that follow the tail (the walk's last bytes, past where the part's ended).
    after: Vec<decode::ShaderData>,
}

impl Buffers {
    /// The engine's records as runs, each with the offset its times move by.
    fn runs(&self) -> [(&[decode::ShaderData], u64); 3] {
        let tail = match self.tail {
            Some((from, to, offset)) => (&self.part.records[from..to], offset),
            None => (&[][..], 0),
        };
        [(&self.records[..], 0), tail, (&self.after[..], 0)]
    }

    /// The engine's records, in stream order, their times moved where a part's walk left them.
    pub fn records(&self) -> impl Iterator<Item = decode::ShaderData> + '_ {
        self.runs()
            .into_iter()
            .flat_map(|(run, offset)| run.iter().map(move |r| r.moved(offset)))
    }

    /// How many records [`Buffers::records`] gives.
    pub fn record_count(&self) -> usize {
        self.runs().iter().map(|(run, _)| run.len()).sum()
    }
}

struct Collect<'a> {
    se: u32,
    generation: Generation,
    records: &'a mut Vec<decode::ShaderData>,
    waves: BTreeMap<u64, Vec<(u64, bool)>>,
    spare: &'a mut Part,
    tail: &'a mut Option<(usize, usize, u64)>,
    after: &'a mut Vec<decode::ShaderData>,
}

impl Collect<'_> {
    /// Copies the tail's records, and those after it, after `records`: before the part's
    /// buffer is used again (a stream walked in more parts than two).
    fn settle_tail(&mut self) {
        if let Some((from, to, offset)) = self.tail.take() {
            self.records
                .extend(self.spare.records[from..to].iter().map(|r| r.moved(offset)));
            self.records.append(self.after);
        }
    }

    fn wave(&mut self, cu: u32, simd: u32, slot: u32, time: u64, start: bool) {
        let cu = u32::from(decode::amd_cu(self.generation, cu));
        self.waves
            .entry(slot_key(self.se, cu, simd, slot))
            .or_default()
            .push((time, start));
    }
}

/// What a part of a stream decoded apart holds: its records, and its waves' starts and ends
/// as the decoder names them (cu, simd, slot, time, start); times relative to the part's start.
#[derive(Default)]
struct Part {
    records: Vec<decode::ShaderData>,
    waves: Vec<(u32, u32, u32, u64, bool)>,
}

impl DecodeSink for Part {
    fn wave_start(&mut self, cu: u32, simd: u32, slot: u32, time: u64) {
        self.waves.push((cu, simd, slot, time, true));
    }
    fn wave_end(&mut self, cu: u32, simd: u32, slot: u32, time: u64) {
        self.waves.push((cu, simd, slot, time, false));
    }
    #[inline]
    fn shader_data(&mut self, r: decode::ShaderData) {
        self.records.push(r);
    }
}

impl decode::Split for Collect<'_> {
    type Part = Part;
    /// How many records and waves came before.
    type Mark = (usize, usize);

    fn part(&mut self) -> Part {
        self.settle_tail();
        let mut part = std::mem::take(self.spare);
        part.records.clear();
        part.waves.clear();
        part
    }

    fn mark(part: &Part) -> (usize, usize) {
        (part.records.len(), part.waves.len())
    }

    fn join(&mut self, part: Part, from: (usize, usize), to: (usize, usize), offset: u64) {
        // The part's records stay where they are, as the records' tail.
        self.settle_tail();
        for &(cu, simd, slot, time, start) in &part.waves[from.1..to.1] {
            self.wave(cu, simd, slot, time.wrapping_add(offset), start);
        }
        *self.spare = part;
        *self.tail = Some((from.0, to.0, offset));
    }
}

impl DecodeSink for Collect<'_> {
    fn wave_start(&mut self, cu: u32, simd: u32, slot: u32, time: u64) {
        self.wave(cu, simd, slot, time, true);
    }
    fn wave_end(&mut self, cu: u32, simd: u32, slot: u32, time: u64) {
        self.wave(cu, simd, slot, time, false);
    }
    #[inline]
    fn shader_data(&mut self, r: decode::ShaderData) {
        if self.tail.is_some() {
            self.after.push(r);
        } else {
            self.records.push(r);
        }
    }
}

/// Decodes one shader engine's trace `data` of `generation`: its records into `buffers` (in
/// stream order, [`Buffers::records`]; emptied first), its waves returned.
pub fn decode_engine(
    generation: Generation,
    se: u32,
    data: &[u8],
    buffers: &mut Buffers,
) -> Decoded {
    buffers.records.clear();
    buffers.after.clear();
    buffers.tail = None;
    // Room for a record every 16 bytes of trace, denser than traces are, in address space only
    // (pages are touched as records come): a vector grown by doubling copies its records into
    // fresh pages each time, each faulted in and zeroed. Not having the room is no error.
    let room = data.len() / 16;
    let _ = buffers.records.try_reserve(room);
    let _ = buffers.part.records.try_reserve(room / 2);
    let mut c = Collect {
        se,
        generation,
        records: &mut buffers.records,
        waves: BTreeMap::new(),
        spare: &mut buffers.part,
        tail: &mut buffers.tail,
        after: &mut buffers.after,
    };
    let summary = decode::decode_split(generation, data, &mut c);
    Decoded {
        waves: c.waves,
        summary,
    }
}

/// One shader engine's raw trace as [`read_engine`] leaves it.
pub struct EngineRead {
    /// The trace's size, once it is open.
    pub bytes: Option<u64>,
    /// Its waves and what the decoder saw (its records in the [`Buffers`] it was decoded
    /// into); `None`: of no known stream format (not decoded).
    pub decoded: Result<Option<Decoded>, Error>,
}

/// Opens, checks and decodes the raw trace of shader engine `se` at `path` into `buffers`
/// ([`decode_engine`]): the work that can be done apart from the engine, on another thread.
/// The mapping is gone when it returns.
pub fn read_engine(se: u32, path: &Path, buffers: &mut Buffers) -> EngineRead {
    let data = match open_trace(path) {
        Ok(d) => d,
        Err(e) => {
            return EngineRead {
                bytes: None,
                decoded: Err(e),
            }
        }
    };
    let bytes = Some(data.len() as u64);
    let Some(generation) = generation_of(&data) else {
        return EngineRead {
            bytes,
            decoded: Ok(None),
        };
    };
    let decoded = decode_engine(generation, se, &data, buffers);
    EngineRead {
        bytes,
        // What was made of bytes that changed under the decoder is not the file's.
        decoded: data.intact(path).map(|()| Some(decoded)),
    }
}

/// A decoded record as the engine reads a shaderdata row.
#[inline]
pub fn record(r: &decode::ShaderData) -> Record {
    Record {
        time: r.time,
        value: r.value,
        cu: u32::from(r.cu),
        simd: u32::from(r.simd),
        wave_id: u32::from(r.wave),
        flags: u32::from(r.flags),
    }
}

/// Adds one engine's waves (decoded from `path`), all of dispatch `kernel_id`, to `occ` as
/// `Occupancy::read` makes them of `occupancy.json`'s rows.
pub fn add_waves(
    occ: &mut Occupancy,
    waves: BTreeMap<u64, Vec<(u64, bool)>>,
    kernel_id: u64,
    path: &Path,
) -> Result<(), Error> {
    for (key, rows) in waves {
        let rows = rows.into_iter().map(|(t, s)| (t, s, kernel_id)).collect();
        occ.slots.insert(key, wave_spans(rows, path)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqtt_thread_trace::synth::{Encoder, Form, Slot};

    /// A part asked for after a join (a stream walked in more parts than two; the walks ask for
    /// one today) first copies the joined part's records and those after it in place: the
    /// records stay in stream order, each part's times moved by its own offset.
    #[test]
    fn a_second_part_settles_the_first() {
        use decode::Split;
        let rec = |t: u64| decode::ShaderData {
            time: t,
            value: t as u32,
            cu: 0,
            simd: 0,
            wave: 0,
            flags: 0,
        };
        let mut buffers = Buffers::default();
        let mut c = Collect {
            se: 0,
            generation: Generation::Gfx11,
            records: &mut buffers.records,
            waves: BTreeMap::new(),
            spare: &mut buffers.part,
            tail: &mut buffers.tail,
            after: &mut buffers.after,
        };
        c.shader_data(rec(1));
        let mut part = c.part();
        part.shader_data(rec(10));
        part.shader_data(rec(11));
        let to = Collect::mark(&part);
        // The part's walk met the first at its second record.
        c.join(part, (1, 0), to, 100);
        c.shader_data(rec(200));
        let mut part = c.part();
        part.shader_data(rec(5));
        let to = Collect::mark(&part);
        c.join(part, (0, 0), to, 300);
        c.shader_data(rec(400));
        let times: Vec<u64> = buffers.records().map(|r| r.time).collect();
        assert_eq!(times, [1, 111, 200, 305, 400]);
    }

    /// A long stream (walked in parts: the second part's records left where its walk put them,
    /// those of the last bytes after them) gives the records one plain walk gives, in order,
    /// from one engine to the next with the buffers kept.
    #[test]
    fn an_engine_s_records_are_the_stream_s() {
        let mut buffers = Buffers::default();
        for g in [Generation::Gfx11, Generation::Gfx12, Generation::Gfx9] {
            let mut e = Encoder::new(g);
            let slot = Slot {
                sa: 0,
                wgp: 1,
                simd: 2,
                slot: 3,
            };
            e.start(slot, true);
            let mut i = 0u32;
            while e.bit_len() < 12 << 20 {
                e.gap(u64::from(i % 40));
                e.other(
                    i as usize,
                    u128::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                );
                e.shader_data(slot, i, Form::Full, true);
                i += 1;
            }
            // Records in the stream's last bytes too, past where a part's walk ends.
            for v in 0..3 {
                e.shader_data(slot, v, Form::Full, true);
            }
            e.end(slot, true);
            e.flush();
            let data = e.bytes();
            let (want, summary) = decode::shader_data(g, &data);
            assert!(summary.stop.is_none(), "{g:?}: {summary:?}");
            let decoded = decode_engine(g, 0, &data, &mut buffers);
            assert_eq!(decoded.summary, summary, "{g:?}");
            let got: Vec<decode::ShaderData> = buffers.records().collect();
            assert_eq!(got.len(), want.len(), "{g:?}");
            assert_eq!(buffers.record_count(), want.len(), "{g:?}");
            assert!(got == want, "{g:?}: records differ");
            if g != Generation::Gfx9 {
                // The parts met: the second part's records were used where they are.
                assert!(buffers.tail.is_some(), "{g:?}");
                assert!(!buffers.after.is_empty(), "{g:?}");
            }
        }
    }
}

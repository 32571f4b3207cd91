//! A simulated `rocprofv3 --att` run: it knows what every wave did and when, writes the output
//! directory (ui_output_* with filenames.json, shaderdata_*.json, occupancy.json, code.json, and
//! code object ELF files with a .sqtt_funcmap section), and computes the expected folded stacks,
//! Perfetto timelines and address blocks from its own ground truth.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use sqtt_markers::addr_trace::BufferParts;
use sqtt_markers::{Funcmap, MarkerEncoding};

#[path = "../support/elf.rs"]
mod elf;
use elf::elf_with_funcmap;

#[path = "../support/rng.rs"]
mod rng;
pub use rng::Rng;

/// Where a code object's funcmap is stored.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Store {
    /// A `*_code_object_id_<N>.out` ELF file.
    Elf,
    /// `code.json` rows of the ui directory (no ELF file).
    CodeJson,
}

#[derive(Clone, Debug)]
pub struct CodeObj {
    pub id: u64,
    pub funcmap_text: String,
    pub store: Store,
}

impl CodeObj {
    pub fn funcmap(&self) -> Funcmap {
        Funcmap::parse_str(&self.funcmap_text).expect("sim funcmap")
    }
}

/// Per-lane address data of one address block (ground truth plus its tokens).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrBlock {
    pub exec: u64,
    /// Tokens after the header (exec lo/hi first).
    pub tokens: Vec<u32>,
    /// Active lanes and their addresses (ground truth).
    pub lanes: Vec<u8>,
    pub addresses: Vec<u64>,
}

/// What a wave does, in order.
#[derive(Clone, Debug)]
pub enum Act {
    Work(u64),
    /// Enter scope `id` (function or user).
    Enter(u32),
    Exit,
    /// Fused exit + enter `id`.
    ExitEnter(u32),
    Point(u32),
    /// Point `id` followed by one payload record.
    Data(u32, u32),
    Addr(u32, AddrBlock),
    /// A numeric user marker (legacy value, ID not in the funcmap).
    Numeric(u32),
    /// Point `id` written by `s_ttracedata_imm`: an IMM-flagged record in the legacy form,
    /// never packed, even in a packed code object.
    ImmPoint(u32),
}

#[derive(Clone, Debug)]
pub struct WaveDef {
    pub se: u32,
    pub cu: u32,
    pub simd: u32,
    pub wave_id: u32,
    pub dispatch: u64,
    pub start: u64,
    pub acts: Vec<Act>,
}

#[derive(Clone, Debug)]
pub struct Dispatch {
    pub kernel_id: u64,
    /// Name as occupancy.json's `dispatches` gives it.
    pub name: String,
    pub codeobj: u64,
}

#[derive(Clone, Debug)]
pub struct UiDef {
    pub name: String,
    pub gfxip: String,
    pub dispatches: Vec<Dispatch>,
    pub waves: Vec<WaveDef>,
    /// Fixed issue-to-record delay.
    pub delay: u64,
    /// Per SIMD shader-clock phase (packed code objects).
    pub phase: [u64; 4],
    /// Extra delays cycled through for the packed headers of each wave; every wave must reach a
    /// 0 that arrives unhindered (the domain minimum the correction works from).
    pub extra_delays: Vec<u64>,
    /// PRIV records injected per SE.
    pub priv_records: usize,
    /// Records per shaderdata chunk file.
    pub chunk: usize,
    /// occupancy.json as att_tool's Python writer makes it: `events` per SE with one dispatch
    /// entry per dispatch giving `entry_point.code_object_id` (else the C++ writer's `[]`).
    pub python_events: bool,
    /// att_tool already restored the packed headers to the legacy form and corrected their
    /// times (payloads move with their header), keeping `sqtt_funcmap_layout` in code.json.
    pub normalised: bool,
}

#[derive(Clone, Debug)]
pub struct Sim {
    pub codeobjs: Vec<CodeObj>,
    pub uis: Vec<UiDef>,
}

/// An expected Perfetto event: (ph, name, cat, ts in cycles).
pub type PEvent = (String, String, String, u64);

/// The expected events as a Perfetto file gives them: E events carry no name or category (they
/// close the innermost B).
pub fn without_end_names(
    m: &BTreeMap<(u64, u64), Vec<PEvent>>,
) -> BTreeMap<(u64, u64), Vec<PEvent>> {
    m.iter()
        .map(|(k, v)| {
            let v = v
                .iter()
                .map(|e| {
                    if e.0 == "E" {
                        ("E".to_string(), String::new(), String::new(), e.3)
                    } else {
                        e.clone()
                    }
                })
                .collect();
            (*k, v)
        })
        .collect()
}

/// Expected address block.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ExpBlock {
    pub ui: String,
    pub se: u32,
    pub cu: u32,
    pub simd: u32,
    pub wave_id: u32,
    pub instance: u32,
    pub marker_id: u32,
    pub time: u64,
    pub lanes: Vec<u8>,
    pub addresses: Vec<u64>,
}

#[derive(Default, Debug)]
pub struct Truth {
    pub folded: BTreeMap<String, u64>,
    /// The folded stacks when marker times are arrival times (`--no-decode-markers`).
    pub folded_arrival: BTreeMap<String, u64>,
    /// ui name -> (pid, tid) -> events in order.
    pub perfetto: BTreeMap<String, BTreeMap<(u64, u64), Vec<PEvent>>>,
    pub blocks: Vec<ExpBlock>,
    pub records: u64,
    pub unmatched_enter: u64,
    pub corrected_headers: u64,
    /// Durations of every scope instance, by (kernel, "function" or "user", scope).
    pub scopes: BTreeMap<(String, String, String), Vec<u64>>,
    /// Durations of every wave (start to end), by kernel.
    pub waves: BTreeMap<String, Vec<u64>>,
}

/// The Perfetto thread ID of the documented scheme (instances from 256 on, which the tool numbers
/// otherwise, get a key of their own above 32 bits).
pub fn tid(se: u32, cu: u32, simd: u32, wave: u32, inst: u32) -> u64 {
    u64::from((1 << 31) | (se << 26) | (cu << 20) | (simd << 16) | (wave << 8) | (inst & 0xFF))
        | (u64::from(inst >> 8) << 40)
}

fn garbage(rng: &mut Rng) -> u32 {
    (rng.next() >> 16) as u32
}

/// Global/flat block: 64-bit addresses.
pub fn memory_block(exec: u64, wave: u32, addr: impl Fn(u32) -> u64, rng: &mut Rng) -> AddrBlock {
    let mut tokens = vec![exec as u32, (exec >> 32) as u32];
    let (mut lanes, mut addrs) = (Vec::new(), Vec::new());
    for l in 0..wave {
        let active = exec >> l & 1 == 1;
        let a = if active {
            addr(l)
        } else {
            u64::from(garbage(rng)) << 20 | u64::from(garbage(rng))
        };
        tokens.push(a as u32);
        tokens.push((a >> 32) as u32);
        if active {
            lanes.push(l as u8);
            addrs.push(a);
        }
    }
    AddrBlock {
        exec,
        tokens,
        lanes,
        addresses: addrs,
    }
}

/// LDS or permute block: 32-bit values.
pub fn lds_block(exec: u64, wave: u32, addr: impl Fn(u32) -> u32, rng: &mut Rng) -> AddrBlock {
    let mut tokens = vec![exec as u32, (exec >> 32) as u32];
    let (mut lanes, mut addrs) = (Vec::new(), Vec::new());
    for l in 0..wave {
        let active = exec >> l & 1 == 1;
        let a = if active { addr(l) } else { garbage(rng) };
        tokens.push(a);
        if active {
            lanes.push(l as u8);
            addrs.push(u64::from(a));
        }
    }
    AddrBlock {
        exec,
        tokens,
        lanes,
        addresses: addrs,
    }
}

/// A buffer descriptor's parts.
pub fn desc(base: u64, stride: u32, soffset: u32) -> BufferParts {
    BufferParts {
        base,
        soffset,
        stride,
    }
}

/// Buffer block with descriptor `desc`; `vindex` given makes it a struct-buffer block.
pub fn buffer_block(
    exec: u64,
    wave: u32,
    desc: BufferParts,
    voffset: impl Fn(u32) -> u32,
    vindex: Option<&dyn Fn(u32) -> u32>,
    rng: &mut Rng,
) -> AddrBlock {
    let BufferParts {
        base,
        soffset,
        stride,
    } = desc;
    let rsrc_lo = base as u32;
    let rsrc_hi = ((base >> 32) as u32 & 0xFFFF) | (stride << 16) | 0xC000_0000;
    let mut tokens = vec![exec as u32, (exec >> 32) as u32, rsrc_lo, rsrc_hi, soffset];
    let (mut lanes, mut addrs) = (Vec::new(), Vec::new());
    for l in 0..wave {
        let active = exec >> l & 1 == 1;
        tokens.push(if active { voffset(l) } else { garbage(rng) });
    }
    if let Some(vi) = vindex {
        for l in 0..wave {
            let active = exec >> l & 1 == 1;
            tokens.push(if active { vi(l) } else { garbage(rng) });
        }
    }
    for l in 0..wave {
        if exec >> l & 1 == 1 {
            lanes.push(l as u8);
            let idx = vindex
                .map(|f| u64::from(f(l)) * u64::from(stride))
                .unwrap_or(0);
            addrs.push(base + u64::from(soffset) + u64::from(voffset(l)) + idx);
        }
    }
    AddrBlock {
        exec,
        tokens,
        lanes,
        addresses: addrs,
    }
}

struct Rec {
    time: u64,
    value: u32,
    cu: u32,
    simd: u32,
    wave: u32,
    flags: u32,
}

impl Sim {
    fn codeobj(&self, id: u64) -> &CodeObj {
        self.codeobjs.iter().find(|c| c.id == id).expect("codeobj")
    }

    /// Writes the output directory and returns the ground truth.
    pub fn write(&self, root: &Path) -> Truth {
        std::fs::create_dir_all(root).unwrap();
        let mut truth = Truth::default();
        for co in &self.codeobjs {
            if co.store == Store::Elf {
                let bytes = co.funcmap().to_bytes();
                std::fs::write(
                    root.join(format!("run_code_object_id_{}.out", co.id)),
                    elf_with_funcmap(&bytes),
                )
                .unwrap();
            }
        }
        for ui in &self.uis {
            self.write_ui(root, ui, &mut truth);
        }
        truth
    }

    fn write_ui(&self, root: &Path, ui: &UiDef, truth: &mut Truth) {
        let dir = root.join(&ui.name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ui.name.len() as u64);
        let mut per_se: BTreeMap<u32, Vec<(u64, u64, Rec)>> = BTreeMap::new();
        let mut occ: BTreeMap<u32, Vec<[u64; 11]>> = BTreeMap::new();
        let mut instances: BTreeMap<(u32, u32, u32, u32), u32> = BTreeMap::new();
        let mut seq = 0u64;
        let mut pev = BTreeMap::new();
        // Waves of a slot in start order give the instance numbers.
        let mut order: Vec<usize> = (0..ui.waves.len()).collect();
        order.sort_by_key(|&i| ui.waves[i].start);
        for &wi in &order {
            let w = &ui.waves[wi];
            let d = ui
                .dispatches
                .iter()
                .find(|d| d.kernel_id == w.dispatch)
                .expect("dispatch");
            let co = self.codeobj(d.codeobj);
            let map = co.funcmap();
            let enc = map.marker_encoding();
            let packed = enc.has_shader_clock();
            let bucket = 1u64 << enc.shader_clock_shift;
            let inst = {
                let c = instances
                    .entry((w.se, w.cu, w.simd, w.wave_id))
                    .or_insert(0);
                *c += 1;
                *c - 1
            };
            let tidv = tid(w.se, w.cu, w.simd, w.wave_id, inst);
            let events: &mut Vec<PEvent> = pev.entry((w.dispatch, tidv)).or_default();
            let prefix = d.name.clone();
            let mut stack: Vec<(String, &'static str)> = Vec::new();
            let mut starts: Vec<u64> = Vec::new();
            let kind_of = |cat: &str| {
                if cat == "sqtt.function" {
                    "function"
                } else {
                    "user"
                }
            };
            let mut last = w.start;
            let mut last_arrival = w.start;
            let mut prev_arrival = 0u64;
            let mut t = w.start + 16;
            let mut extra_i = 0usize;
            let mut push = |time: u64, value: u32, flags: u32, seq: &mut u64| {
                per_se.entry(w.se).or_default().push((
                    time,
                    *seq,
                    Rec {
                        time,
                        value,
                        cu: w.cu,
                        simd: w.simd,
                        wave: w.wave_id,
                        flags,
                    },
                ));
                *seq += 1;
            };
            let path = |stack: &Vec<(String, &'static str)>| {
                let mut s = prefix.clone();
                for (f, _) in stack {
                    s.push(';');
                    s.push_str(f);
                }
                s
            };
            let name_of = |id: u32| -> (String, &'static str) {
                match map.by_id(id) {
                    Some(e) => (
                        e.name.clone(),
                        match e.kind {
                            sqtt_markers::EntryKind::Function => "sqtt.function",
                            sqtt_markers::EntryKind::User => "sqtt.user",
                            _ => "sqtt.point",
                        },
                    ),
                    None => (format!("marker_{id}"), "sqtt.user"),
                }
            };
            for act in &w.acts {
                if let Act::Work(c) = act {
                    t += c;
                    continue;
                }
                // Issue time; packed headers issue where the SIMD's shader clock sits on a
                // bucket boundary, so the sampled field is exact.
                let (id, flags, payload): (u32, u32, Vec<u32>) = match act {
                    Act::Enter(id) => (*id, 2, vec![]),
                    Act::Exit => (0, 1, vec![]),
                    Act::ExitEnter(id) => (*id, 3, vec![]),
                    Act::Point(id) => (*id, 0, vec![]),
                    Act::Data(id, v) => (*id, 0, vec![*v]),
                    Act::Addr(id, b) => (*id, 0, b.tokens.clone()),
                    Act::Numeric(v) => (v >> 2, v & 3, vec![]),
                    Act::ImmPoint(id) => (*id, 0, vec![]),
                    Act::Work(_) => unreachable!(),
                };
                let numeric = matches!(act, Act::Numeric(_));
                let imm = matches!(act, Act::ImmPoint(_));
                let is_packed = packed && !numeric && !imm;
                let phase = ui.phase[w.simd as usize];
                let issue = if is_packed {
                    (t + phase).div_ceil(bucket) * bucket - phase
                } else {
                    t
                };
                let extra = if is_packed && !ui.extra_delays.is_empty() {
                    let e = ui.extra_delays[extra_i % ui.extra_delays.len()];
                    extra_i += 1;
                    e
                } else {
                    0
                };
                // Records of one wave leave in order.
                let arrival = (issue + ui.delay + extra).max(prev_arrival + 1);
                let extra = arrival - issue - ui.delay;
                prev_arrival = arrival + payload.len() as u64;
                let observed = if is_packed {
                    let shift = extra.saturating_sub(bucket - 1);
                    if shift > 0 {
                        truth.corrected_headers += 1;
                    }
                    arrival - shift
                } else {
                    arrival
                };
                let value = if is_packed && ui.normalised {
                    MarkerEncoding::legacy().pack(id, flags, 0)
                } else if is_packed {
                    let clock = ((issue + phase) >> enc.shader_clock_shift) as u32;
                    enc.pack(id, flags, clock)
                } else if numeric {
                    match act {
                        Act::Numeric(v) => *v,
                        _ => unreachable!(),
                    }
                } else {
                    MarkerEncoding::legacy().pack(id, flags, 0)
                };
                // What the JSON holds: arrival times, or the corrected ones after att_tool.
                let written = if is_packed && ui.normalised {
                    observed
                } else {
                    arrival
                };
                push(written, value, u32::from(imm), &mut seq);
                if ui.priv_records > 0 && !payload.is_empty() {
                    // A privileged record of the same wave between header and payload.
                    push(written + 1, 0xFFFF_FFFF, 2, &mut seq);
                }
                for (k, p) in payload.iter().enumerate() {
                    push(written + 1 + k as u64, *p, 0, &mut seq);
                }
                // Ground truth of what the tools must show.
                let is_scope = numeric || map.by_id(id).is_some_and(|e| e.kind.is_scope());
                let is_exit_only = id == 0 && flags == 1;
                if is_scope || is_exit_only {
                    *truth.folded.entry(path(&stack)).or_default() += observed - last;
                    last = observed;
                    *truth.folded_arrival.entry(path(&stack)).or_default() +=
                        arrival - last_arrival;
                    last_arrival = arrival;
                    if flags & 1 == 1 {
                        let (f, cat) = stack.pop().expect("sim exit with empty stack");
                        let t0 = starts.pop().expect("sim start");
                        truth
                            .scopes
                            .entry((prefix.clone(), kind_of(cat).into(), f.clone()))
                            .or_default()
                            .push(observed - t0);
                        events.push(("E".into(), f, cat.into(), observed));
                    }
                    if flags & 2 == 2 {
                        let (f, cat) = name_of(id);
                        events.push(("B".into(), f.clone(), cat.into(), observed));
                        stack.push((f, cat));
                        starts.push(observed);
                    }
                } else {
                    let (f, _) = name_of(id);
                    events.push(("i".into(), f, "sqtt.point".into(), observed));
                    if let Act::Addr(mid, b) = act {
                        truth.blocks.push(ExpBlock {
                            ui: ui.name.clone(),
                            se: w.se,
                            cu: w.cu,
                            simd: w.simd,
                            wave_id: w.wave_id,
                            instance: inst,
                            marker_id: *mid,
                            time: observed,
                            lanes: b.lanes.clone(),
                            addresses: b.addresses.clone(),
                        });
                    }
                }
                // Packed headers are spaced beyond the correction bucket.
                t = issue + if is_packed { 32 } else { 8 } + payload.len() as u64;
            }
            let end = t + 200;
            *truth.folded.entry(path(&stack)).or_default() += end - last;
            *truth.folded_arrival.entry(path(&stack)).or_default() += end - last_arrival;
            truth
                .waves
                .entry(prefix.clone())
                .or_default()
                .push(end - w.start);
            while let Some((f, cat)) = stack.pop() {
                let t0 = starts.pop().expect("sim start");
                truth
                    .scopes
                    .entry((prefix.clone(), kind_of(cat).into(), f.clone()))
                    .or_default()
                    .push(end - t0);
                truth.unmatched_enter += 1;
                events.push(("E".into(), f, cat.into(), end));
            }
            let row = |time: u64, start: u64| {
                [
                    time,
                    u64::from(w.cu),
                    u64::from(w.simd),
                    u64::from(w.wave_id),
                    start,
                    w.dispatch,
                    0,
                    0,
                    0,
                    0,
                    0,
                ]
            };
            let o = occ.entry(w.se).or_default();
            o.push(row(w.start, 1));
            o.push(row(end, 0));
        }
        truth.folded.retain(|_, v| *v > 0);
        truth.folded_arrival.retain(|_, v| *v > 0);
        truth.perfetto.insert(ui.name.clone(), pev);
        // PRIV records, scattered.
        for (se, recs) in per_se.iter_mut() {
            let _ = se;
            let (lo, hi) = (
                recs.iter().map(|r| r.0).min().unwrap_or(0),
                recs.iter().map(|r| r.0).max().unwrap_or(1),
            );
            for k in 0..ui.priv_records {
                let time = lo + rng.below(hi - lo + 1);
                let w = &ui.waves[k % ui.waves.len()];
                recs.push((
                    time,
                    u64::MAX - k as u64,
                    Rec {
                        time,
                        value: garbage(&mut rng),
                        cu: w.cu,
                        simd: w.simd,
                        wave: w.wave_id,
                        flags: 2,
                    },
                ));
            }
            recs.sort_by_key(|r| (r.0, r.1));
        }
        // Files.
        let mut listing = serde_json::Map::new();
        for (se, recs) in &per_se {
            truth.records += recs.len() as u64;
            let mut files = Vec::new();
            for (i, chunk) in recs.chunks(ui.chunk.max(1)).enumerate() {
                let name = format!("shaderdata_{se}_{i}.json");
                let mut f =
                    std::io::BufWriter::new(std::fs::File::create(dir.join(&name)).unwrap());
                write!(
                    f,
                    "{{\"records_schema\":[\"time\",\"value\",\"cu\",\"simd\",\"wave_id\",\"flags\"],\"records\":["
                )
                .unwrap();
                for (j, (_, _, r)) in chunk.iter().enumerate() {
                    if j > 0 {
                        f.write_all(b",").unwrap();
                    }
                    write!(
                        f,
                        "[{},{},{},{},{},{}]",
                        r.time, r.value, r.cu, r.simd, r.wave, r.flags
                    )
                    .unwrap();
                }
                f.write_all(b"]}").unwrap();
                files.push(serde_json::json!([
                    name,
                    chunk.first().map(|r| r.0).unwrap_or(0),
                    chunk.last().map(|r| r.0).unwrap_or(0)
                ]));
            }
            listing.insert(se.to_string(), serde_json::Value::Array(files));
        }
        let filenames = serde_json::json!({
            "gfxip": ui.gfxip,
            "shaderdata_filenames": listing,
            "wave_filenames": [],
        });
        std::fs::write(dir.join("filenames.json"), filenames.to_string()).unwrap();
        let mut occj = serde_json::Map::new();
        for (se, rows) in &occ {
            occj.insert(se.to_string(), serde_json::json!(rows));
        }
        let disp: serde_json::Map<String, serde_json::Value> = ui
            .dispatches
            .iter()
            .map(|d| (d.kernel_id.to_string(), serde_json::json!(d.name)))
            .collect();
        occj.insert("dispatches".into(), serde_json::Value::Object(disp));
        if ui.python_events {
            let entries: Vec<serde_json::Value> = ui
                .dispatches
                .iter()
                .map(|d| {
                    serde_json::json!({
                        "kind": "dispatch",
                        "time": 0,
                        "kernel_id": d.kernel_id,
                        "kernel_name": d.name,
                        "entry_point": {"address": 0x1000 * d.kernel_id, "code_object_id": d.codeobj},
                    })
                })
                .collect();
            occj.insert("events".into(), serde_json::json!({ "0": entries }));
        } else {
            occj.insert("events".into(), serde_json::json!([]));
        }
        std::fs::write(
            dir.join("occupancy.json"),
            serde_json::Value::Object(occj).to_string(),
        )
        .unwrap();
        // code.json rows for the code objects stored there.
        let mut rows = Vec::new();
        let mut layout = Vec::new();
        let mut payloads = Vec::new();
        let mut used: Vec<u64> = ui.dispatches.iter().map(|d| d.codeobj).collect();
        used.sort();
        used.dedup();
        for cid in used {
            let co = self.codeobj(cid);
            if co.store != Store::CodeJson {
                continue;
            }
            let m = co.funcmap();
            for e in &m.entries {
                let kind = e.kind.prefix().to_string();
                rows.push(serde_json::json!([
                    cid,
                    e.id,
                    kind,
                    e.name,
                    e.source_loc.clone().unwrap_or_default(),
                    0
                ]));
            }
            if let Some(w) = m.wave_size {
                rows.push(serde_json::json!([cid, w, "W", "", "", 0]));
            }
            if let Some(l) = m.clock_layout {
                layout.push(serde_json::json!([
                    cid,
                    l.shader_clock_bits,
                    l.shader_clock_shift
                ]));
            }
            for (id, n) in &m.payloads {
                payloads.push(serde_json::json!([cid, id, n]));
            }
        }
        let code = serde_json::json!({
            "code": [[0, "s_endpgm", 0, 0, 0, 0]],
            "sqtt_funcmap": rows,
            "sqtt_funcmap_layout": layout,
            "sqtt_funcmap_payloads": payloads,
        });
        std::fs::write(dir.join("code.json"), code.to_string()).unwrap();
    }
}

/// [`scenario`]'s first ui directory alone, its first wave of dispatch 2 repeated `n` times in
/// its slot (5,000 cycles apart), no privileged records: `n` instances of one slot.
pub fn one_slot(n: u64) -> Sim {
    let mut s = scenario(1);
    s.uis.truncate(1);
    let ui = &mut s.uis[0];
    ui.waves.retain(|w| w.dispatch == 2);
    let proto = ui.waves[0].clone();
    ui.waves = (0..n)
        .map(|i| WaveDef {
            start: 1000 + i * 5000,
            ..proto.clone()
        })
        .collect();
    ui.priv_records = 0;
    s
}

/// The standard scenario: two ui directories, four code objects (ELF and code.json), five
/// dispatches, waves interleaved in shared SE buffers, nested user scopes, fused exit+enter,
/// functions, barriers/vmem points, data payloads, address blocks of every category, PRIV
/// records, and a packed gfx12 code object with a per-SIMD phase.
pub fn scenario(scale: usize) -> Sim {
    let co1 = CodeObj {
        id: 1,
        store: Store::Elf,
        funcmap_text: [
            "W:64",
            "K:_Z8kernel_aPfi@a.hip:10",
            "U:1:load_phase",
            "U:2:compute_phase",
            "U:3:inner",
            "P:4:barrier",
            "P:5:vmem_load",
            "P:6:work_value",
            "R:6:extra_payload_count=1",
            "P:7:addr_trace_load@a.hip:20 -> a.hip:12",
            "R:7:extra_payload_count=130",
            "P:8:addr_trace_store@a.hip:22",
            "R:8:extra_payload_count=130",
            "P:9:addr_trace_atomic@a.hip:23",
            "R:9:extra_payload_count=130",
            "P:10:addr_trace_lds_store@a.hip:30",
            "R:10:extra_payload_count=66",
            "P:11:addr_trace_lds_load@a.hip:31",
            "R:11:extra_payload_count=66",
            "P:12:addr_trace_buffer_load@a.hip:40",
            "R:12:extra_payload_count=69",
            "P:13:addr_trace_struct_buffer_store@a.hip:41",
            "R:13:extra_payload_count=133",
            "P:14:addr_trace_ds_bpermute@a.hip:50",
            "R:14:extra_payload_count=66",
            "P:15:addr_trace_ds_permute@a.hip:51",
            "R:15:extra_payload_count=66",
            "P:16:addr_trace_lds_atomic@a.hip:52",
            "R:16:extra_payload_count=66",
        ]
        .join("\n"),
    };
    let co2 = CodeObj {
        id: 2,
        store: Store::Elf,
        funcmap_text: [
            "K:_Z8kernel_bv@b.hip:5",
            "F:1:_Z6helperf@b.hip:1",
            "F:2:_Z5innerv@b.hip:2",
            "U:3:phase_x",
            "U:4:phase_y",
            "P:5:barrier",
        ]
        .join("\n"),
    };
    let co3 = CodeObj {
        id: 3,
        store: Store::CodeJson,
        funcmap_text: [
            "M:shader_clock_bits=12;shader_clock_shift=4",
            "K:_Z8kernel_cv@c.hip:5",
            "F:1:_Z4stepi@c.hip:1",
            "U:2:tile",
            "U:3:reduce",
            "P:4:barrier",
        ]
        .join("\n"),
    };
    let co4 = CodeObj {
        id: 4,
        store: Store::Elf,
        funcmap_text: [
            "W:32",
            "K:_Z8kernel_dPj@d.hip:5",
            "U:1:body",
            "P:2:addr_trace_load@d.hip:9",
            "R:2:extra_payload_count=66",
            "P:3:addr_trace_lds_load@d.hip:10",
            "R:3:extra_payload_count=34",
            "P:4:addr_trace_buffer_store@d.hip:11",
            "R:4:extra_payload_count=37",
        ]
        .join("\n"),
    };
    let mut rng = Rng(12345);
    let mut ui1 = UiDef {
        name: "ui_output_agent_1_dispatch_1".into(),
        gfxip: "gfx942".into(),
        dispatches: vec![
            Dispatch {
                kernel_id: 1,
                name: "kernel_a(float*, int)".into(),
                codeobj: 1,
            },
            Dispatch {
                kernel_id: 2,
                name: "_Z8kernel_bv".into(),
                codeobj: 2,
            },
            Dispatch {
                kernel_id: 3,
                name: "kernel_a(float*, int)".into(),
                codeobj: 1,
            },
        ],
        waves: Vec::new(),
        delay: 30,
        phase: [0; 4],
        extra_delays: vec![],
        priv_records: 40 * scale,
        chunk: 700,
        normalised: false,
        python_events: false,
    };
    let full: u64 = u64::MAX;
    for rep in 0..scale as u64 {
        let base = rep * 200_000;
        for (k, (cu, simd, wave)) in [(0, 0, 0), (0, 1, 3), (1, 0, 0), (1, 2, 7)]
            .iter()
            .enumerate()
        {
            let exec = if k % 2 == 0 {
                full
            } else {
                0x0000_FFFF_0F0F_00FF
            };
            let start = base + 100 + k as u64 * 37;
            let dispatch = if rep % 2 == 0 { 1 } else { 3 };
            let b = 0x7f00_0000_0000u64 + (k as u64) * 0x10000;
            let acts = vec![
                Act::Work(50),
                Act::Enter(1),
                Act::Work(120),
                Act::Addr(
                    7,
                    memory_block(exec, 64, |l| b + 4 * u64::from(l), &mut rng),
                ),
                Act::Point(5),
                Act::Work(300),
                Act::ExitEnter(2),
                Act::Work(40),
                Act::Enter(3),
                Act::Work(90),
                Act::Data(6, 0xDEAD_0000 + k as u32),
                Act::Addr(10, lds_block(exec, 64, |l| 256 * l, &mut rng)),
                Act::Exit,
                Act::Addr(
                    12,
                    buffer_block(exec, 64, desc(b + 0x1000, 0, 64), |l| 8 * l, None, &mut rng),
                ),
                Act::Addr(
                    13,
                    buffer_block(
                        exec,
                        64,
                        desc(b + 0x2000, 16, 0),
                        |l| l % 4,
                        Some(&|l| l),
                        &mut rng,
                    ),
                ),
                Act::Addr(14, lds_block(exec, 64, |l| 4 * ((l + 1) % 64), &mut rng)),
                Act::Addr(15, lds_block(exec, 64, |l| 4 * (63 - l), &mut rng)),
                Act::Addr(16, lds_block(exec, 64, |l| 4 * (l / 2), &mut rng)),
                Act::Point(4),
                Act::Work(60),
                Act::Addr(
                    8,
                    memory_block(exec, 64, |l| b + 0x3000 + 128 * u64::from(l), &mut rng),
                ),
                Act::Addr(9, memory_block(exec, 64, |_| b + 0x4000, &mut rng)),
                Act::Exit,
                Act::Work(80),
            ];
            ui1.waves.push(WaveDef {
                se: 0,
                cu: *cu,
                simd: *simd,
                wave_id: *wave,
                dispatch,
                start,
                acts,
            });
        }
        // kernel_b on SE 1, interleaved: functions, fused transitions, an unmatched scope.
        for (k, (cu, simd, wave)) in [(2, 0, 1), (2, 1, 1), (3, 3, 2)].iter().enumerate() {
            let mut acts = vec![
                Act::Work(20 + k as u64 * 3),
                Act::Enter(3),
                Act::Work(100),
                Act::Enter(1),
                Act::Work(70),
                Act::Enter(2),
                Act::Work(33),
                Act::Exit,
                Act::Point(5),
                Act::Work(10),
                Act::Exit,
                Act::ExitEnter(4),
                Act::Work(200),
                Act::Numeric((900 << 2) | 2),
                Act::Work(15),
                Act::Numeric(1),
            ];
            if k != 2 {
                acts.push(Act::Exit);
            }
            acts.push(Act::Work(50));
            ui1.waves.push(WaveDef {
                se: 1,
                cu: *cu,
                simd: *simd,
                wave_id: *wave,
                dispatch: 2,
                start: base + 150 + k as u64 * 11,
                acts,
            });
        }
    }
    let mut ui2 = UiDef {
        name: "ui_output_agent_2_dispatch_4".into(),
        gfxip: "gfx1201".into(),
        dispatches: vec![
            Dispatch {
                kernel_id: 4,
                name: "_Z8kernel_cv".into(),
                codeobj: 3,
            },
            Dispatch {
                kernel_id: 5,
                name: "kernel_d(unsigned int*)".into(),
                codeobj: 4,
            },
        ],
        waves: Vec::new(),
        delay: 24,
        phase: [3, 11, 7, 0],
        // The first header of every wave comes late; the third (after a short one) has the
        // domain's minimum delay, so the correction of the first ones is retroactive.
        extra_delays: vec![40, 5, 0, 70, 16, 100],
        priv_records: 25 * scale,
        chunk: 100_000,
        normalised: false,
        python_events: false,
    };
    for rep in 0..scale as u64 {
        let base = rep * 500_000;
        for (k, (cu, simd, wave)) in [(0, 0, 0), (0, 1, 0), (0, 1, 1), (1, 3, 4)]
            .iter()
            .enumerate()
        {
            let acts = vec![
                Act::Work(40),
                Act::Enter(2),
                Act::Work(150 + 10 * k as u64),
                Act::Enter(1),
                Act::Work(200),
                Act::Point(4),
                Act::Work(130),
                Act::Exit,
                Act::ExitEnter(3),
                Act::Work(300),
                Act::Exit,
                Act::Work(90),
            ];
            ui2.waves.push(WaveDef {
                se: 0,
                cu: *cu,
                simd: *simd,
                wave_id: *wave,
                dispatch: 4,
                start: base + 1000 + 29 * k as u64,
                acts,
            });
        }
        for (k, (cu, simd, wave)) in [(2, 0, 0), (2, 0, 1)].iter().enumerate() {
            let exec = if k == 0 { 0xFFFF_FFFF } else { 0x00FF_00F0 };
            let b = 0x5000_0000_1000u64 + 0x800 * k as u64;
            let acts = vec![
                Act::Work(30),
                Act::Enter(1),
                Act::Addr(
                    2,
                    memory_block(exec, 32, |l| b + 16 * u64::from(l), &mut rng),
                ),
                Act::Work(40),
                Act::Addr(3, lds_block(exec, 32, |l| 4 * l, &mut rng)),
                Act::Addr(
                    4,
                    buffer_block(exec, 32, desc(b, 0, 128), |l| 4 * l, None, &mut rng),
                ),
                Act::Exit,
                Act::Work(60),
            ];
            ui2.waves.push(WaveDef {
                se: 1,
                cu: *cu,
                simd: *simd,
                wave_id: *wave,
                dispatch: 5,
                start: base + 3000 + 5 * k as u64,
                acts,
            });
        }
    }
    Sim {
        codeobjs: vec![co1, co2, co3, co4],
        uis: vec![ui1, ui2],
    }
}

//! Reads a `.pftrace` back for the tests: its `compressed_packets` inflated in their place (as
//! Perfetto's trace processor reads them), decoded by `protoc --decode` against
//! tools/proto/perfetto_trace.proto (so the file must be a valid `perfetto.protos.Trace`), then
//! replayed as the trace processor reads it: sequences with their incremental state (interned
//! strings, defaults, the incremental clock), track descriptors and events.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

/// A decoded message: its fields in order.
#[derive(Debug, Default, Clone)]
pub struct Msg(pub Vec<(String, Val)>);

#[derive(Debug, Clone)]
pub enum Val {
    Scalar(String),
    Msg(Msg),
}

impl Msg {
    pub fn get(&self, name: &str) -> Option<&Val> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
    pub fn msg(&self, name: &str) -> Option<&Msg> {
        match self.get(name) {
            Some(Val::Msg(m)) => Some(m),
            _ => None,
        }
    }
    pub fn msgs<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Msg> + 'a {
        self.0.iter().filter_map(move |(k, v)| match v {
            Val::Msg(m) if k == name => Some(m),
            _ => None,
        })
    }
    pub fn str(&self, name: &str) -> Option<&str> {
        match self.get(name) {
            Some(Val::Scalar(s)) => Some(s),
            _ => None,
        }
    }
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.str(name).map(|s| s.parse().unwrap())
    }
    pub fn i64(&self, name: &str) -> Option<i64> {
        self.str(name).map(|s| s.parse().unwrap())
    }
}

fn proto_file() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("proto/perfetto_trace.proto")
}

use sqtt_tools::perfetto::proto::wire::read_varint as varint;

/// The packets of a trace with every packet that is only `compressed_packets` (field 50)
/// replaced by the packets it inflates to, and how many there were.
pub fn inflate(trace: &[u8]) -> (Vec<u8>, usize) {
    use std::io::Read;
    let (mut out, mut bundles, mut i) = (Vec::new(), 0, 0);
    while i < trace.len() {
        let start = i;
        assert_eq!(
            varint(trace, &mut i),
            1 << 3 | 2,
            "a Trace holds only packets"
        );
        let n = varint(trace, &mut i) as usize;
        let packet = &trace[i..i + n];
        i += n;
        let mut j = 0;
        if varint(packet, &mut j) == 50 << 3 | 2 {
            let m = varint(packet, &mut j) as usize;
            if j + m == packet.len() {
                bundles += 1;
                flate2::read::ZlibDecoder::new(&packet[j..])
                    .read_to_end(&mut out)
                    .expect("compressed_packets inflate");
                continue;
            }
        }
        out.extend_from_slice(&trace[start..i]);
    }
    (out, bundles)
}

/// `protoc --decode=perfetto.protos.Trace` of `file`, its compressed packets inflated, parsed.
pub fn decode(file: &Path) -> Msg {
    use std::io::Write;
    let proto = proto_file();
    let (packets, _) = inflate(&std::fs::read(file).unwrap());
    let mut child = Command::new("protoc")
        .arg("--decode=perfetto.protos.Trace")
        .arg(format!("-I{}", proto.parent().unwrap().display()))
        .arg(&proto)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("protoc not found: install Debian's protobuf-compiler (ci/setup.sh does)");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&packets));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "protoc --decode failed on {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let m = parse_msg(&mut lines);
    assert!(lines.next().is_none());
    m
}

fn parse_msg<'a>(lines: &mut impl Iterator<Item = &'a str>) -> Msg {
    let mut m = Msg::default();
    while let Some(l) = lines.next() {
        let l = l.trim();
        if l == "}" {
            return m;
        }
        if let Some(name) = l.strip_suffix(" {") {
            m.0.push((name.to_string(), Val::Msg(parse_msg(lines))));
        } else {
            let (k, v) = l.split_once(": ").unwrap_or_else(|| panic!("line {l:?}"));
            m.0.push((k.to_string(), Val::Scalar(unquote(v))));
        }
    }
    m
}

/// A text-format scalar: strings unquoted and unescaped.
fn unquote(v: &str) -> String {
    let Some(inner) = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) else {
        return v.to_string();
    };
    let mut out = Vec::new();
    let b = inner.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 1;
            match b[i] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'0'..=b'7' => {
                    let mut n = 0u32;
                    let mut k = 0;
                    while k < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                        n = n * 8 + u32::from(b[i] - b'0');
                        i += 1;
                        k += 1;
                    }
                    out.push(n as u8);
                    continue;
                }
                c => out.push(c),
            }
        } else {
            out.push(b[i]);
        }
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

/// One event as the tests compare them: (ph, name, category, time), as in the JSON (`B`, `E`,
/// `i`; an `E` has no name or category).
pub type Event = (String, String, String, u64);

/// A thread track.
#[derive(Debug, Clone)]
pub struct Thread {
    pub pid: i64,
    pub tid: i64,
    pub name: String,
}

/// What a replay of a trace gives.
#[derive(Debug, Default)]
pub struct Replay {
    /// Process tracks by pid: their names.
    pub processes: BTreeMap<i64, String>,
    /// Thread tracks by uuid.
    pub threads: BTreeMap<u64, Thread>,
    /// Events by thread track uuid, in file order.
    pub events: BTreeMap<u64, Vec<Event>>,
    /// The arguments of each instant, by track, in order: name -> value (strings resolved).
    pub args: BTreeMap<u64, Vec<BTreeMap<String, String>>>,
    pub packets: usize,
}

#[derive(Default)]
struct SeqState {
    names: BTreeMap<u64, String>,
    cats: BTreeMap<u64, String>,
    arg_names: BTreeMap<u64, String>,
    strings: BTreeMap<u64, String>,
    track: Option<u64>,
    clock: Option<u64>,
    /// The sequence's incremental clocks' values.
    clocks: BTreeMap<u64, u64>,
}

/// Replays a decoded trace; panics on anything the trace processor would reject or misread
/// (an interned ID used before it was sent on its sequence, an event without a track, a
/// timestamp in a clock never defined), and on flags that say what is not so (an event that
/// uses the sequence's state without `SEQ_NEEDS_INCREMENTAL_STATE`, a repeated
/// `first_packet_on_sequence`).
pub fn replay(t: &Msg) -> Replay {
    let mut r = Replay::default();
    let mut seqs: BTreeMap<u64, SeqState> = BTreeMap::new();
    let mut clock_starts: BTreeMap<u64, u64> = BTreeMap::new();
    let mut seen: std::collections::BTreeSet<u64> = Default::default();
    for p in t.msgs("packet") {
        r.packets += 1;
        if let Some(td) = p.msg("track_descriptor") {
            let uuid = td.u64("uuid").expect("track uuid");
            if let Some(pd) = td.msg("process") {
                let pid = pd.i64("pid").unwrap();
                assert!(pid > 0, "pid {pid}");
                let old = r
                    .processes
                    .insert(pid, pd.str("process_name").unwrap().to_string());
                assert!(old.is_none(), "pid {pid} described twice");
            }
            if let Some(th) = td.msg("thread") {
                let t = Thread {
                    pid: th.i64("pid").unwrap(),
                    tid: th.i64("tid").unwrap(),
                    name: th.str("thread_name").unwrap().to_string(),
                };
                assert!(t.tid > 0);
                assert!(
                    r.processes.contains_key(&t.pid),
                    "thread before its process"
                );
                assert!(r.threads.insert(uuid, t).is_none(), "uuid {uuid} twice");
            }
            continue;
        }
        let seq = p.u64("trusted_packet_sequence_id").expect("sequence id");
        let flags = p.u64("sequence_flags").unwrap_or(0);
        // The flag says the packet is the sequence's first: only that one may carry it.
        let first = seen.insert(seq);
        assert_eq!(
            p.str("first_packet_on_sequence") == Some("true"),
            first,
            "sequence {seq}: first_packet_on_sequence"
        );
        if flags & 1 == 1 {
            seqs.insert(seq, SeqState::default());
        }
        let st = seqs
            .get_mut(&seq)
            .unwrap_or_else(|| panic!("sequence {seq} used before its state was cleared"));
        if let Some(d) = p.msg("trace_packet_defaults") {
            st.clock = d.u64("timestamp_clock_id");
            st.track = d
                .msg("track_event_defaults")
                .and_then(|e| e.u64("track_uuid"));
        }
        if let Some(i) = p.msg("interned_data") {
            for (table, map) in [
                ("event_names", &mut st.names),
                ("event_categories", &mut st.cats),
                ("debug_annotation_names", &mut st.arg_names),
            ] {
                for e in i.msgs(table) {
                    map.insert(e.u64("iid").unwrap(), e.str("name").unwrap().to_string());
                }
            }
            for e in i.msgs("debug_annotation_string_values") {
                st.strings
                    .insert(e.u64("iid").unwrap(), e.str("str").unwrap().to_string());
            }
        }
        if let Some(cs) = p.msg("clock_snapshot") {
            // The trace processor reads nothing else of a clock snapshot's packet.
            assert!(p.msg("track_event").is_none() && p.msg("interned_data").is_none());
            let clocks: Vec<&Msg> = cs.msgs("clocks").collect();
            let boot = clocks
                .iter()
                .find(|c| c.u64("clock_id") == Some(6))
                .unwrap();
            let inc: Vec<&&Msg> = clocks
                .iter()
                .filter(|c| c.u64("clock_id").is_some_and(|id| (64..128).contains(&id)))
                .collect();
            assert_eq!(inc.len(), 1, "one sequence clock per snapshot");
            let inc = inc[0];
            assert_eq!(inc.str("is_incremental"), Some("true"));
            let t = inc.u64("timestamp").unwrap();
            assert_eq!(Some(t), boot.u64("timestamp"));
            // Perfetto wants each clock's snapshots in increasing time.
            if let Some(&last) = clock_starts.get(&seq) {
                assert!(t > last, "sequence {seq}: clock set to {t} after {last}");
            }
            clock_starts.insert(seq, t);
            st.clocks.insert(inc.u64("clock_id").unwrap(), t);
            continue;
        }
        let Some(te) = p.msg("track_event") else {
            continue;
        };
        assert_eq!(flags & 2, 2, "an event without SEQ_NEEDS_INCREMENTAL_STATE");
        let clock = st.clock.expect("a clock in the sequence's defaults");
        let now = st
            .clocks
            .get_mut(&clock)
            .unwrap_or_else(|| panic!("sequence {seq}: clock {clock} never defined"));
        *now += p.u64("timestamp").expect("timestamp");
        let now = *now;
        let track = te.u64("track_uuid").or(st.track).expect("a track");
        assert!(r.threads.contains_key(&track), "event on undescribed track");
        let name = |iid: Option<u64>| {
            iid.map(|i| {
                st.names
                    .get(&i)
                    .unwrap_or_else(|| panic!("name iid {i} not interned on sequence {seq}"))
                    .clone()
            })
            .unwrap_or_default()
        };
        let cat = te
            .u64("category_iids")
            .map(|i| st.cats.get(&i).expect("category interned").clone())
            .unwrap_or_default();
        let ph = match te.str("type") {
            Some("TYPE_SLICE_BEGIN") => "B",
            Some("TYPE_SLICE_END") => "E",
            Some("TYPE_INSTANT") => "i",
            other => panic!("type {other:?}"),
        };
        r.events.entry(track).or_default().push((
            ph.to_string(),
            name(te.u64("name_iid")),
            cat,
            now,
        ));
        if ph == "i" {
            let mut args = BTreeMap::new();
            for a in te.msgs("debug_annotations") {
                let n = st.arg_names[&a.u64("name_iid").unwrap()].clone();
                let v = if let Some(u) = a.u64("uint_value") {
                    u.to_string()
                } else if let Some(s) = a.u64("string_value_iid") {
                    st.strings[&s].clone()
                } else {
                    let items: Vec<String> = a
                        .msgs("array_values")
                        .map(|x| x.u64("uint_value").unwrap().to_string())
                        .collect();
                    format!("[{}]", items.join(","))
                };
                args.insert(n, v);
            }
            r.args.entry(track).or_default().push(args);
        }
    }
    r
}

//! AMD's rocprof-trace-decoder library, loaded at run time from the path in
//! `SQTT_REFERENCE_DECODER` (never built, vendored or downloaded by this repository): its
//! occupancy events and shader-data records for one engine's bytes. Used only by opt-in tests
//! and benchmarks that compare the project's decoders with it.
#![allow(dead_code)]

use std::ffi::{c_char, c_int, c_void, CString};

/// The variable that names the library (`librocprof-trace-decoder.so`).
pub const VAR: &str = "SQTT_REFERENCE_DECODER";

/// `rocprofiler_thread_trace_decoder_pc_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Pc {
    address: u64,
    code_object_id: u64,
}

/// `rocprofiler_thread_trace_decoder_occupancy_t` (the fields every version shares).
#[repr(C)]
struct Occupancy {
    pc: Pc,
    time: u64,
    reserved: u8,
    cu: u8,
    simd: u8,
    wave_id: u8,
    bits: u32,
}

/// `rocprofiler_thread_trace_decoder_shaderdata_t`.
#[repr(C)]
struct ShaderDataC {
    time: i64,
    value: u64,
    cu: u8,
    simd: u8,
    wave_id: u8,
    flags: u8,
    reserved: u32,
}

type SeCb = extern "C" fn(*mut *mut u8, *mut u64, *mut c_void) -> u64;
type TraceCb = extern "C" fn(c_int, *mut c_void, u64, *mut c_void) -> c_int;
type IsaCb = extern "C" fn(*mut c_char, *mut u64, *mut u64, Pc, *mut c_void) -> c_int;
type Parse = unsafe extern "C" fn(SeCb, TraceCb, IsaCb, *mut c_void) -> c_int;

const RECORD_OCCUPANCY: c_int = 1;
const RECORD_SHADERDATA: c_int = 6;

/// An occupancy event: start (or end), time, AMD's cu, simd, slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Event {
    pub start: bool,
    pub time: u64,
    pub cu: u8,
    pub simd: u8,
    pub wave: u8,
}

/// A shader-data record: time, value, cu, simd, wave, flags.
pub type Record = (u64, u32, u8, u8, u8, u8);

/// What the library reported for one buffer.
#[derive(Debug, Default)]
pub struct Output {
    pub status: i32,
    pub events: Vec<Event>,
    pub records: Vec<Record>,
}

struct State<'a> {
    data: &'a mut [u8],
    given: bool,
    out: Output,
}

extern "C" fn se_data(buffer: *mut *mut u8, size: *mut u64, ud: *mut c_void) -> u64 {
    // SAFETY: `ud` is the `State` `decode` passed, alive for the call; the pointers are the
    // library's out-parameters.
    let st = unsafe { &mut *(ud as *mut State) };
    if st.given {
        unsafe { *size = 0 };
        return 0;
    }
    st.given = true;
    unsafe {
        *buffer = st.data.as_mut_ptr();
        *size = st.data.len() as u64;
    }
    st.data.len() as u64
}

extern "C" fn trace(kind: c_int, events: *mut c_void, n: u64, ud: *mut c_void) -> c_int {
    // SAFETY: as above; `events` holds `n` records of the type `kind` names.
    let st = unsafe { &mut *(ud as *mut State) };
    match kind {
        RECORD_OCCUPANCY => {
            let s = unsafe { std::slice::from_raw_parts(events as *const Occupancy, n as usize) };
            st.out.events.extend(s.iter().map(|o| Event {
                start: o.bits & 1 == 1,
                time: o.time,
                cu: o.cu,
                simd: o.simd,
                wave: o.wave_id,
            }));
        }
        RECORD_SHADERDATA => {
            let s = unsafe { std::slice::from_raw_parts(events as *const ShaderDataC, n as usize) };
            st.out.records.extend(s.iter().map(|r| {
                (
                    r.time as u64,
                    r.value as u32,
                    r.cu,
                    r.simd,
                    r.wave_id,
                    r.flags,
                )
            }));
        }
        _ => {}
    }
    0
}

extern "C" fn isa(_: *mut c_char, _: *mut u64, _: *mut u64, _: Pc, _: *mut c_void) -> c_int {
    // No code objects: every address is unknown (ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_ARGUMENT).
    3
}

/// The library at `SQTT_REFERENCE_DECODER`, if the variable is set.
pub struct Amd {
    parse: Parse,
}

// SAFETY: the handle is never closed; the function pointer stays valid for the process.
unsafe impl Send for Amd {}
unsafe impl Sync for Amd {}

impl Amd {
    /// Loads the library the variable names; `None` when it is unset, a panic when it names
    /// nothing loadable.
    pub fn from_env() -> Option<Amd> {
        let path = std::env::var_os(VAR)?;
        let c = CString::new(path.to_string_lossy().as_bytes()).unwrap();
        // SAFETY: dlopen/dlsym with valid C strings; the handle is kept for the process.
        unsafe {
            let h = libc::dlopen(c.as_ptr(), libc::RTLD_NOW);
            assert!(!h.is_null(), "{VAR}={path:?}: the library does not load");
            let sym = libc::dlsym(h, c"rocprof_trace_decoder_parse_data".as_ptr());
            assert!(
                !sym.is_null(),
                "{VAR}={path:?}: no rocprof_trace_decoder_parse_data"
            );
            Some(Amd {
                parse: std::mem::transmute::<*mut c_void, Parse>(sym),
            })
        }
    }

    /// Decodes one engine's bytes.
    pub fn decode(&self, data: &[u8]) -> Output {
        let mut copy = data.to_vec();
        let mut st = State {
            data: &mut copy,
            given: false,
            out: Output::default(),
        };
        // SAFETY: the callbacks match the library's C signatures and `st` outlives the call.
        let status =
            unsafe { (self.parse)(se_data, trace, isa, &mut st as *mut State as *mut c_void) };
        st.out.status = status;
        st.out
    }
}

/// AMD's occupancy events paired as this project pairs wave starts and ends (the latest start
/// of a slot before its end; an end without a start dropped): (cu, simd, slot, start, stop) in
/// AMD's cu numbering.
pub fn pair(events: &[Event]) -> Vec<(u8, u8, u8, u64, u64)> {
    let mut open = std::collections::HashMap::new();
    let mut out = Vec::new();
    for e in events {
        let k = (e.cu, e.simd, e.wave);
        if e.start {
            open.insert(k, e.time);
        } else if let Some(t) = open.remove(&k) {
            out.push((e.cu, e.simd, e.wave, t, e.time));
        }
    }
    out
}

//! Delivery: a decoded header and its payload become the events a [`Sink`] receives.

use sqtt_markers::DecodedMarker;

use super::{Marker, Pass, ScopeOp, Sink, Wave};
use crate::codeobj::MarkerClass;
use crate::diag::kind;

/// A marker header read from a record, ready for delivery once its payload is in.
#[derive(Debug, Clone, Copy)]
pub(super) struct Header {
    pub marker: DecodedMarker,
    pub class: MarkerClass,
    /// Corrected time (never before the wave's previous header).
    pub time: u64,
    /// Arrival time of the record.
    pub arrival: u64,
    /// Legacy-form value (raw with `--no-decode-markers`).
    pub value: u32,
    /// Payload records that follow.
    pub payload: u32,
}

/// Where a header comes from: its slot, the wave's code object and the wave.
#[derive(Clone, Copy)]
pub(super) struct Origin<'w> {
    pub slot: usize,
    pub co: Option<usize>,
    pub wave: &'w Wave,
}

/// Hands one header (and its payload, when collected) to the sink: a scope change, a point,
/// and for an address-trace header also the address block.
pub(super) fn deliver<S: Sink>(p: &mut Pass<S>, at: Origin, h: &Header, payload: &[u32]) {
    let m = &h.marker;
    if m.id == 0 {
        if m.is_exit() {
            let bare = Marker {
                id: 0,
                class: MarkerClass::Unknown,
                frame: u32::MAX,
                value: h.value,
                entry: None,
                arrival: h.arrival,
            };
            p.sink.scope(p.names, at.slot, h.time, ScopeOp::Exit, &bare);
        }
        return;
    }
    if h.class == MarkerClass::Unknown {
        let w = at.wave;
        p.diag.warn(kind::UNKNOWN_ID, || {
            format!(
                "ID {} (value {:#x}) in se {} cu {} simd {} wave {}",
                m.id, m.raw, w.se, w.cu, w.simd, w.wave_id
            )
        });
    }
    let frame = p.catalog.frame(at.co, m.id, p.names);
    let entry = at
        .co
        .and_then(|ci| p.catalog.codeobjs[ci].lookup(m.id).entry);
    let mk = Marker {
        id: m.id,
        class: h.class,
        frame,
        value: h.value,
        entry,
        arrival: h.arrival,
    };
    if let Some(op) = scope_op(h) {
        p.sink.scope(p.names, at.slot, h.time, op, &mk);
        return;
    }
    p.sink.point(p.names, at.slot, h.time, &mk, payload);
    if !p.want_addr {
        return;
    }
    match h.class {
        MarkerClass::Address(layout) => {
            let co = &p.catalog.codeobjs[at.co.expect("address class implies a code object")];
            let ws = layout
                .wave_size_from_payload(h.payload)
                .unwrap_or(co.wave_size);
            let framing = layout.payload_records(co.wave_size);
            if framing != h.payload {
                let names = &*p.names;
                p.diag.warn(kind::ADDR_SIZE_MISMATCH, || {
                    format!(
                        "marker {} ({}): R: count {} but W:{} framing needs {framing}",
                        m.id,
                        names.get(frame),
                        h.payload,
                        co.wave_size,
                    )
                });
            }
            let op = entry
                .and_then(|e| crate::codeobj::classify_addr_trace(&e.name))
                .map(|(_, op)| op)
                .unwrap_or("unknown");
            match layout.parse_block(op, ws, payload) {
                Some(b) => p.sink.address(p.names, at.slot, h.time, &mk, &b),
                None => p.diag.warn(kind::ADDR_SIZE_MISMATCH, || {
                    format!("marker {}: {} payload records too few", m.id, payload.len())
                }),
            }
        }
        MarkerClass::AddressUnknown => {
            let name = p.names.get(frame);
            p.diag.warn(kind::ADDR_UNKNOWN_KIND, || name.to_string());
        }
        _ => {}
    }
}

/// The scope change a header makes, if it is a scope marker.
fn scope_op(h: &Header) -> Option<ScopeOp> {
    let scope_class = matches!(
        h.class,
        MarkerClass::Function | MarkerClass::User | MarkerClass::Unknown
    );
    match (scope_class, h.marker.exit_prev, h.marker.enter) {
        (false, _, _) | (true, false, false) => None,
        (true, true, true) => Some(ScopeOp::ExitEnter),
        (true, false, true) => Some(ScopeOp::Enter),
        (true, true, false) => Some(ScopeOp::Exit),
    }
}

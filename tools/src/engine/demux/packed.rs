//! The packed gfx12 headers (a clock field above the marker ID) and the legacy ones,
//! decoded as sqtt-markers decodes them, without its per-record checks.

use sqtt_markers::encoding::{ENTER, EXIT_PREV};
use sqtt_markers::{DecodedMarker, MarkerEncoding};

/// How a code object's packed headers decode.
#[derive(Clone, Copy)]
pub(super) struct Packed {
    id_mask: u32,
    /// Shift of the clock field down to bit 0.
    clock_down: u32,
}

impl Packed {
    /// The packed form of `enc`, when it has one.
    pub(super) fn of(enc: &MarkerEncoding) -> Option<Packed> {
        enc.has_shader_clock().then(|| Packed {
            id_mask: enc.marker_id_mask(),
            clock_down: 32 - enc.shader_clock_bits,
        })
    }

    /// What [`MarkerEncoding::decode`] gives (the field of a layout with a clock).
    #[inline]
    pub(super) fn decode(self, raw: u32) -> DecodedMarker {
        DecodedMarker {
            raw,
            id: (raw & self.id_mask) >> 2,
            exit_prev: raw & EXIT_PREV != 0,
            enter: raw & ENTER != 0,
            packed_clock: Some(raw >> self.clock_down),
        }
    }
}

/// What [`DecodedMarker::legacy_value`] gives.
#[inline]
pub(super) fn legacy_value(m: &DecodedMarker) -> u32 {
    (m.id << 2) | (u32::from(m.exit_prev) * EXIT_PREV) | (u32::from(m.enter) * ENTER)
}

/// What `MarkerEncoding::legacy().decode(raw)` gives.
#[inline]
pub(super) fn decode_legacy(raw: u32) -> DecodedMarker {
    DecodedMarker {
        raw,
        id: raw >> 2,
        exit_prev: raw & EXIT_PREV != 0,
        enter: raw & ENTER != 0,
        packed_clock: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// The demultiplexer's own decoding gives what sqtt-markers' does, for every layout.
    #[test]
    fn header_decoding_is_the_markers_crates() {
        use sqtt_markers::encoding::decode_marker_value_with;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let known = |id: u32| id.is_multiple_of(3);
        for bits in 0..31 {
            for shift in [0, 1, 4, 8, 20] {
                let enc = MarkerEncoding::packed(bits, shift);
                for _ in 0..2000 {
                    let raw = match rng.next() % 4 {
                        0 => rng.next() as u32 & 0xff,
                        1 => 1,
                        _ => rng.next() as u32,
                    };
                    let want = decode_marker_value_with(raw, &enc, known);
                    let got = match Packed::of(&enc) {
                        Some(pk) => {
                            let m = pk.decode(raw);
                            if m.is_exit() || known(m.id) {
                                m
                            } else {
                                decode_legacy(raw)
                            }
                        }
                        None => decode_legacy(raw),
                    };
                    assert_eq!(got, want, "raw {raw:#x} bits {bits} shift {shift}");
                    assert_eq!(legacy_value(&got), got.legacy_value());
                }
            }
        }
    }
}

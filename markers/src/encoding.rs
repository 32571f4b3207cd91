//! Marker values: `(id << 2) | flags`, and the gfx12 packed-clock layout.

use crate::funcmap::Funcmap;

/// Bit 0: pop the top scope.
pub const EXIT_PREV: u32 = 1;
/// Bit 1: push scope `id`.
pub const ENTER: u32 = 2;
/// Width of the ID field of the legacy layout.
pub const ID_BITS: u32 = 30;
/// The value of a pure exit marker.
pub const EXIT_VALUE: u32 = EXIT_PREV;
/// Largest value `s_ttracedata_imm` carries into the trace (SQTT keeps 8 bits).
pub const IMM_MAX: u32 = 0xFF;

/// The value of a marker: `(id << 2) | flags`.
pub const fn encode(id: u32, flags: u32) -> u32 {
    (id << 2) | (flags & 3)
}

/// Enter marker of scope `id`.
pub const fn enter(id: u32) -> u32 {
    encode(id, ENTER)
}

/// Fused exit-previous + enter `id`.
pub const fn exit_enter(id: u32) -> u32 {
    encode(id, ENTER | EXIT_PREV)
}

/// Point marker `id`.
pub const fn point(id: u32) -> u32 {
    encode(id, 0)
}

/// Whether a value can be written with `s_ttracedata_imm` (when the target has it and clock
/// packing is off).
pub const fn fits_imm(value: u32) -> bool {
    value <= IMM_MAX
}

/// A decoded marker value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedMarker {
    pub raw: u32,
    pub id: u32,
    pub exit_prev: bool,
    pub enter: bool,
    /// The right-aligned packed shader-clock field, for a packed header.
    pub packed_clock: Option<u32>,
}

impl DecodedMarker {
    /// The value in the legacy `(id << 2) | flags` form.
    pub fn legacy_value(&self) -> u32 {
        encode(
            self.id,
            u32::from(self.exit_prev) | (u32::from(self.enter) << 1),
        )
    }

    /// A pure exit (pop) marker.
    pub fn is_exit(&self) -> bool {
        self.exit_prev && !self.enter && self.id == 0
    }

    /// Neither enter nor exit.
    pub fn is_point(&self) -> bool {
        !self.exit_prev && !self.enter
    }
}

/// The layout of marker header values in a code object (docs/format.md, section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerEncoding {
    pub shader_clock_bits: u32,
    pub shader_clock_shift: u32,
    valid: bool,
}

impl Default for MarkerEncoding {
    fn default() -> Self {
        MarkerEncoding::legacy()
    }
}

impl MarkerEncoding {
    /// The no-clock full-ID layout (no `M:` row).
    pub const fn legacy() -> MarkerEncoding {
        MarkerEncoding {
            shader_clock_bits: 0,
            shader_clock_shift: 0,
            valid: true,
        }
    }

    /// The layout of an `M:shader_clock_bits=N;shader_clock_shift=S` row. Values that cannot
    /// describe a layout give an invalid encoding that decodes as the legacy one.
    pub const fn packed(bits: u32, shift: u32) -> MarkerEncoding {
        if bits >= ID_BITS || bits as u64 + shift as u64 > 32 {
            return MarkerEncoding {
                shader_clock_bits: 0,
                shader_clock_shift: 0,
                valid: false,
            };
        }
        MarkerEncoding {
            shader_clock_bits: bits,
            shader_clock_shift: shift,
            valid: true,
        }
    }

    /// From the text after `M:`; a malformed row (for example without `shader_clock_shift`)
    /// gives the no-clock layout, marked invalid.
    pub fn from_row(text: &str) -> MarkerEncoding {
        match crate::funcmap::parse_layout(text) {
            Some(l) => MarkerEncoding::packed(l.shader_clock_bits, l.shader_clock_shift),
            None => MarkerEncoding {
                valid: false,
                ..MarkerEncoding::legacy()
            },
        }
    }

    pub const fn is_valid(&self) -> bool {
        self.valid
    }

    pub const fn has_shader_clock(&self) -> bool {
        self.valid && self.shader_clock_bits > 0
    }

    const fn bits(&self) -> u32 {
        if self.has_shader_clock() {
            self.shader_clock_bits
        } else {
            0
        }
    }

    /// Number of ID bits the layout leaves.
    pub const fn id_bits(&self) -> u32 {
        ID_BITS - self.bits()
    }

    /// Bits of the raw 32-bit value that hold the marker ID.
    pub const fn marker_id_mask(&self) -> u32 {
        (((1u64 << self.id_bits()) - 1) << 2) as u32
    }

    /// Bits of the raw value that hold the packed shader clock.
    pub const fn packed_shader_clock_mask(&self) -> u32 {
        let b = self.bits();
        if b == 0 {
            0
        } else {
            (((1u64 << b) - 1) << (32 - b)) as u32
        }
    }

    /// The window of the source shader-clock low word that the packed field samples.
    pub const fn shader_clock_source_mask(&self) -> u32 {
        let b = self.bits();
        if b == 0 {
            0
        } else {
            (((1u64 << b) - 1) << self.shader_clock_shift) as u32
        }
    }

    /// The right-aligned packed clock field of a packed header (0 without a clock).
    pub const fn decode_shader_clock(&self, raw: u32) -> u32 {
        let b = self.bits();
        if b == 0 {
            0
        } else {
            raw >> (32 - b)
        }
    }

    /// Decodes a value known to be a header of this layout.
    pub fn decode(&self, raw: u32) -> DecodedMarker {
        DecodedMarker {
            raw,
            id: (raw & self.marker_id_mask()) >> 2,
            exit_prev: raw & EXIT_PREV != 0,
            enter: raw & ENTER != 0,
            packed_clock: self
                .has_shader_clock()
                .then(|| self.decode_shader_clock(raw)),
        }
    }

    /// The value a header of `id`/`flags` holds with clock field `clock` (right-aligned).
    pub fn pack(&self, id: u32, flags: u32, clock: u32) -> u32 {
        let b = self.bits();
        let clock_part = if b == 0 {
            0
        } else {
            (clock & ((1u32 << b) - 1)) << (32 - b)
        };
        clock_part | ((id << 2) & self.marker_id_mask()) | (flags & 3)
    }
}

/// Decodes a raw shaderdata value with a code object's funcmap: packed for IDs the funcmap
/// registers and for bare exits, legacy for everything else (unregistered numeric markers).
pub fn decode_marker_value(raw: u32, funcmap: &Funcmap) -> DecodedMarker {
    decode_marker_value_with(raw, &funcmap.marker_encoding(), |id| {
        funcmap.by_id(id).is_some()
    })
}

/// [`decode_marker_value`] with the encoding and the "is this ID registered" test supplied by
/// the caller (a decoder of many records keeps both in an index instead of searching the
/// funcmap per record).
pub fn decode_marker_value_with(
    raw: u32,
    encoding: &MarkerEncoding,
    is_registered: impl Fn(u32) -> bool,
) -> DecodedMarker {
    if encoding.has_shader_clock() {
        let packed = encoding.decode(raw);
        if packed.is_exit() || is_registered(packed.id) {
            return packed;
        }
    }
    MarkerEncoding::legacy().decode(raw)
}

/// Decodes a raw value with an explicit encoding (the record is known to be a packed header).
pub fn decode_with_encoding(raw: u32, encoding: &MarkerEncoding) -> DecodedMarker {
    encoding.decode(raw)
}

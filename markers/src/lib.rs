//! The format layer of sqtt-hipcc, shared by the plugin, the driver and the trace tools:
//! the marker encoding ([`encoding`]), the `.sqtt_funcmap` rows ([`funcmap`], one writer and one
//! parser) and the device header `markers.hpp`. No LLVM here.

pub mod addr_trace;
pub mod encoding;
pub mod funcmap;

pub use encoding::{decode_marker_value, DecodedMarker, MarkerEncoding};
pub use funcmap::{ClockLayout, Entry, EntryKind, Funcmap, ParseError, ValidationError};

/// The text of the device header `markers.hpp`.
pub const MARKERS_HPP: &str = include_str!("../include/markers.hpp");

/// The directory holding `markers.hpp` in the source tree.
pub const SOURCE_INCLUDE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include");

/// The text of `amd_sqtt_marker/sqtt_marker.h`, the API of AMD's own header (C and HIP).
pub const AMD_SQTT_MARKER_H: &str = include_str!("../include/amd_sqtt_marker/sqtt_marker.h");

/// The text of `sqtt_m0_record.h`, the M0 record both headers' numeric markers write.
pub const SQTT_M0_RECORD_H: &str = include_str!("../include/sqtt_m0_record.h");

/// Every device header, by its path under the include directory.
pub const HEADERS: &[(&str, &str)] = &[
    ("markers.hpp", MARKERS_HPP),
    ("amd_sqtt_marker/sqtt_marker.h", AMD_SQTT_MARKER_H),
    ("sqtt_m0_record.h", SQTT_M0_RECORD_H),
];

/// The asm text (as LLVM IR holds it) of the record `sqtt_m0_record.h` writes for a numeric
/// marker, and AMD's header for its ID markers: `s_mov_b32 m0, $1` / `s_nop $2` / `s_ttracedata`,
/// operand 1 the value (an immediate, or an SGPR), operand 2 the nop count, M0 the output. The
/// plugin knows a header's record by this text.
pub const HEADER_RECORD_ASM: &str = "s_mov_b32 m0, $1\ns_nop $2\ns_ttracedata";

/// The record of markers.hpp before the one above (M0 an input the compiler wrote outside the
/// asm): bitcode built with it is still recognised.
pub const LEGACY_HEADER_RECORD_ASM: &str = "s_nop 0\n\ts_ttracedata";

/// Names of the named-marker sentinels that the plugin resolves: the `__sqtt_named_marker_*`
/// of markers.hpp (and of AMD's header), and the `extern "C"` `sqtt_marker_*` of AMD's newer
/// header. A sentinel is only ever declared, never defined.
pub mod sentinel {
    pub const ENTER: &str = "__sqtt_named_marker_enter";
    pub const EXIT: &str = "__sqtt_named_marker_exit";
    pub const POINT: &str = "__sqtt_named_marker_point";
    pub const DATA: &str = "__sqtt_named_marker_data";
    pub const ALL: &[&str] = &[ENTER, EXIT, POINT, DATA];
    /// AMD's newer spellings of the same four.
    pub const C_ENTER: &str = "sqtt_marker_enter";
    pub const C_EXIT: &str = "sqtt_marker_exit";
    pub const C_POINT: &str = "sqtt_marker_point";
    pub const C_DATA: &str = "sqtt_marker_data";
}

#[cfg(test)]
mod tests;

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

/// Every device header, by its path under the include directory.
pub const HEADERS: &[(&str, &str)] = &[
    ("markers.hpp", MARKERS_HPP),
    ("amd_sqtt_marker/sqtt_marker.h", AMD_SQTT_MARKER_H),
];

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

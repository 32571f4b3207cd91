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

/// Names of the named-marker sentinels that the plugin resolves.
pub mod sentinel {
    pub const ENTER: &str = "__sqtt_named_marker_enter";
    pub const EXIT: &str = "__sqtt_named_marker_exit";
    pub const POINT: &str = "__sqtt_named_marker_point";
    pub const DATA: &str = "__sqtt_named_marker_data";
    pub const ALL: &[&str] = &[ENTER, EXIT, POINT, DATA];
}

#[cfg(test)]
mod tests;

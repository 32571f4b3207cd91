//! Address-trace blocks: the marker names the plugin gives each traced operation and the payload
//! layout that follows each header (docs/format.md, section 4). Written by the plugin, read by
//! the trace tools: one table for both.

/// How the payload records after an address-trace header are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Flat/global: EXEC, then a 64-bit address per lane (lo, hi).
    Memory,
    /// LDS: EXEC, then a 32-bit address per lane.
    Lds,
    /// Raw buffer: EXEC, rsrc_lo, rsrc_hi, soffset, then a voffset per lane.
    Buffer,
    /// Struct buffer: as a raw buffer, then a vindex per lane.
    StructBuffer,
    /// ds_permute / ds_bpermute: EXEC, then a byte index per lane.
    Permute,
}

impl Layout {
    pub fn label(self) -> &'static str {
        match self {
            Layout::Memory => "memory",
            Layout::Lds => "lds",
            Layout::Buffer => "buffer",
            Layout::StructBuffer => "struct_buffer",
            Layout::Permute => "ds_permute",
        }
    }

    /// Records between EXEC and the per-lane words (rsrc_lo, rsrc_hi, soffset for buffers).
    pub fn fixed_words(self) -> u32 {
        match self {
            Layout::Buffer | Layout::StructBuffer => 3,
            _ => 0,
        }
    }

    /// Records per lane (address lo+hi, or voffset+vindex, or one word).
    pub fn words_per_lane(self) -> u32 {
        match self {
            Layout::Memory | Layout::StructBuffer => 2,
            _ => 1,
        }
    }

    /// Payload records after the header: EXEC lo/hi, the fixed words and the lane words. This is
    /// the `R:id:extra_payload_count` of the header.
    pub fn payload_records(self, wave_size: u32) -> u32 {
        2 + self.fixed_words() + self.words_per_lane() * wave_size
    }

    /// The wave size a payload count implies, when it implies one.
    pub fn wave_size_from_payload(self, n: u32) -> Option<u32> {
        [32, 64].into_iter().find(|w| self.payload_records(*w) == n)
    }
}

/// What the traced operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    Load,
    Store,
    Atomic,
    Permute,
    BPermute,
}

impl Access {
    pub fn label(self) -> &'static str {
        match self {
            Access::Load => "load",
            Access::Store => "store",
            Access::Atomic => "atomic",
            Access::Permute => "permute",
            Access::BPermute => "bpermute",
        }
    }
}

/// One kind of traced operation: its funcmap name, layout and access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kind {
    pub layout: Layout,
    pub access: Access,
}

const TABLE: &[(&str, Layout, Access)] = &[
    ("addr_trace_load", Layout::Memory, Access::Load),
    ("addr_trace_store", Layout::Memory, Access::Store),
    ("addr_trace_atomic", Layout::Memory, Access::Atomic),
    ("addr_trace_lds_load", Layout::Lds, Access::Load),
    ("addr_trace_lds_store", Layout::Lds, Access::Store),
    ("addr_trace_lds_atomic", Layout::Lds, Access::Atomic),
    ("addr_trace_buffer_load", Layout::Buffer, Access::Load),
    ("addr_trace_buffer_store", Layout::Buffer, Access::Store),
    ("addr_trace_buffer_atomic", Layout::Buffer, Access::Atomic),
    (
        "addr_trace_struct_buffer_load",
        Layout::StructBuffer,
        Access::Load,
    ),
    (
        "addr_trace_struct_buffer_store",
        Layout::StructBuffer,
        Access::Store,
    ),
    (
        "addr_trace_struct_buffer_atomic",
        Layout::StructBuffer,
        Access::Atomic,
    ),
    ("addr_trace_ds_permute", Layout::Permute, Access::Permute),
    ("addr_trace_ds_bpermute", Layout::Permute, Access::BPermute),
];

impl Kind {
    pub const fn new(layout: Layout, access: Access) -> Kind {
        Kind { layout, access }
    }

    /// The kind a funcmap marker name (without its `@source` part) stands for.
    pub fn from_name(name: &str) -> Option<Kind> {
        TABLE
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, layout, access)| Kind::new(*layout, *access))
    }

    /// The funcmap name of this kind (`addr_trace_...`).
    pub fn name(self) -> &'static str {
        TABLE
            .iter()
            .find(|(_, l, a)| *l == self.layout && *a == self.access)
            .map(|(n, _, _)| *n)
            .unwrap_or("addr_trace_unknown")
    }

    pub fn payload_records(self, wave_size: u32) -> u32 {
        self.layout.payload_records(wave_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_counts_match_the_spec() {
        for (name, layout, access) in TABLE {
            let k = Kind::from_name(name).unwrap();
            assert_eq!((k.layout, k.access), (*layout, *access));
            assert_eq!(k.name(), *name);
        }
        assert_eq!(
            Kind::from_name("addr_trace_lds_store")
                .unwrap()
                .payload_records(64),
            66
        );
        assert_eq!(
            Kind::from_name("addr_trace_store")
                .unwrap()
                .payload_records(64),
            130
        );
        assert_eq!(
            Kind::from_name("addr_trace_buffer_load")
                .unwrap()
                .payload_records(64),
            69
        );
        assert_eq!(Layout::StructBuffer.payload_records(32), 69);
        assert_eq!(Layout::Memory.wave_size_from_payload(66), Some(32));
        assert_eq!(Kind::from_name("addr_trace_bogus"), None);
    }
}

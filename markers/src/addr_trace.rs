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

/// The base, stride and soffset of the buffer descriptor of a buffer block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferParts {
    pub base: u64,
    pub soffset: u32,
    pub stride: u32,
}

/// One address-trace block read from the payload after its header, filtered by EXEC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub layout: Layout,
    /// The access label of the op (`load`, `store`, ..., or `unknown`).
    pub op: &'static str,
    pub exec: u64,
    pub wave_size: u32,
    /// Active lanes, ascending.
    pub lanes: Vec<u8>,
    /// Per active lane: the address (LDS byte offset / permute index for those layouts).
    pub addresses: Vec<u64>,
    pub buffer: Option<BufferParts>,
    /// Per active lane (buffers).
    pub voffsets: Vec<u32>,
    /// Per active lane (struct buffers).
    pub vindex: Vec<u32>,
}

impl Layout {
    /// Reads the payload `p` of a block of this layout (everything after the header) for
    /// `wave_size` lanes; `None` when the payload is too short.
    pub fn parse_block(self, op: &'static str, wave_size: u32, p: &[u32]) -> Option<Block> {
        let w = wave_size.min(64) as usize;
        if p.len() < self.payload_records(wave_size) as usize {
            return None;
        }
        let mut exec = u64::from(p[0]) | (u64::from(p[1]) << 32);
        if w < 64 {
            exec &= (1u64 << w) - 1;
        }
        let lanes: Vec<u8> = (0..w)
            .filter(|l| exec >> l & 1 == 1)
            .map(|l| l as u8)
            .collect();
        let d = &p[2..];
        let mut b = Block {
            layout: self,
            op,
            exec,
            wave_size,
            lanes,
            addresses: Vec::new(),
            buffer: None,
            voffsets: Vec::new(),
            vindex: Vec::new(),
        };
        match self {
            Layout::Memory => {
                b.addresses = b
                    .lanes
                    .iter()
                    .map(|&l| {
                        let l = l as usize;
                        u64::from(d[2 * l]) | (u64::from(d[2 * l + 1]) << 32)
                    })
                    .collect();
            }
            Layout::Lds | Layout::Permute => {
                b.addresses = b.lanes.iter().map(|&l| u64::from(d[l as usize])).collect();
            }
            Layout::Buffer | Layout::StructBuffer => {
                let (lo, hi, soffset) = (d[0], d[1], d[2]);
                let base = (u64::from(lo) | (u64::from(hi) << 32)) & 0xFFFF_FFFF_FFFF;
                let stride = (hi >> 16) & 0x3FFF;
                b.buffer = Some(BufferParts {
                    base,
                    soffset,
                    stride,
                });
                b.voffsets = b.lanes.iter().map(|&l| d[3 + l as usize]).collect();
                if self == Layout::StructBuffer {
                    b.vindex = b.lanes.iter().map(|&l| d[3 + w + l as usize]).collect();
                }
                b.addresses = b
                    .voffsets
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        let idx = b.vindex.get(i).map(|&x| u64::from(x) * u64::from(stride));
                        base.wrapping_add(u64::from(soffset))
                            .wrapping_add(u64::from(v))
                            .wrapping_add(idx.unwrap_or(0))
                    })
                    .collect();
            }
        }
        Some(b)
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

    #[test]
    fn blocks_keep_the_active_lanes_and_add_up_buffer_addresses() {
        // wave32, lanes 1 and 3 active; flat addresses as lo/hi pairs.
        let mut p = vec![0b1010, 0];
        for l in 0..32u32 {
            p.extend([0x1000 + l, l]);
        }
        let b = Layout::Memory.parse_block("load", 32, &p).unwrap();
        assert_eq!(b.lanes, [1, 3]);
        assert_eq!(b.addresses, [1 << 32 | 0x1001, 3 << 32 | 0x1003]);
        assert!(Layout::Memory
            .parse_block("load", 32, &p[..p.len() - 1])
            .is_none());
        // Struct buffer: base 0x2000, stride 16, soffset 4; address = base + soffset +
        // voffset + vindex * stride.
        let mut p = vec![0b100, 0, 0x2000, 16 << 16, 4];
        p.extend((0..32).map(|l| 8 * l));
        p.extend(0..32);
        let b = Layout::StructBuffer.parse_block("store", 32, &p).unwrap();
        assert_eq!(b.lanes, [2]);
        assert_eq!(
            b.buffer,
            Some(BufferParts {
                base: 0x2000,
                soffset: 4,
                stride: 16
            })
        );
        assert_eq!((b.voffsets.clone(), b.vindex.clone()), (vec![16], vec![2]));
        assert_eq!(b.addresses, [0x2000 + 4 + 16 + 2 * 16]);
    }
}

//! What a code object says about its kernels' resources: the AMDGPU metadata note
//! (`NT_AMDGPU_METADATA`, a msgpack map whose `amdhsa.kernels` lists each kernel's registers,
//! LDS, scratch and wave size), the kernel descriptors (WGP mode), the per-function resource
//! symbols LLVM 20+ leaves (`<fn>.num_vgpr`, `.num_agpr`), and the producer in `.comment`.

use serde::{Deserialize, Deserializer};

/// The note type of the msgpack metadata (code object v3 and later).
pub const NT_AMDGPU_METADATA: u32 = 32;
/// The note owner.
pub const NOTE_OWNER: &[u8] = b"AMDGPU";

/// One entry of `amdhsa.kernels`: the fields the cost report reads (others are ignored).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct KernelMetadata {
    #[serde(rename = ".name")]
    pub name: String,
    /// The kernel descriptor's symbol, `<name>.kd`.
    #[serde(rename = ".symbol")]
    pub symbol: String,
    /// SGPRs, with VCC, FLAT_SCRATCH and XNACK_MASK where used.
    #[serde(rename = ".sgpr_count")]
    pub sgpr_count: u32,
    /// VGPRs the wave is charged: on gfx90a and later CDNA architectural VGPRs (rounded up to
    /// 4) plus AGPRs; on gfx908 the larger of the two.
    #[serde(rename = ".vgpr_count")]
    pub vgpr_count: u32,
    /// AGPRs (targets with matrix instructions only).
    #[serde(rename = ".agpr_count", default, deserialize_with = "lenient_u32")]
    pub agpr_count: Option<u32>,
    /// Static LDS bytes per work-group (dynamic LDS comes at launch).
    #[serde(rename = ".group_segment_fixed_size")]
    pub group_segment_fixed_size: u32,
    /// Static scratch bytes per work-item (lane).
    #[serde(rename = ".private_segment_fixed_size")]
    pub private_segment_fixed_size: u32,
    #[serde(rename = ".wavefront_size")]
    pub wavefront_size: u32,
    #[serde(rename = ".max_flat_workgroup_size")]
    pub max_flat_workgroup_size: u32,
    #[serde(
        rename = ".uses_dynamic_stack",
        default,
        deserialize_with = "lenient_bool"
    )]
    pub uses_dynamic_stack: Option<bool>,
    #[serde(
        rename = ".sgpr_spill_count",
        default,
        deserialize_with = "lenient_u32"
    )]
    pub sgpr_spill_count: Option<u32>,
    #[serde(
        rename = ".vgpr_spill_count",
        default,
        deserialize_with = "lenient_u32"
    )]
    pub vgpr_spill_count: Option<u32>,
    /// Code object v5: whether the kernel runs in WGP mode (gfx10+).
    #[serde(
        rename = ".workgroup_processor_mode",
        default,
        deserialize_with = "lenient_bool"
    )]
    pub workgroup_processor_mode: Option<bool>,
}

/// An optional flag: a boolean, or an integer (code object v5 writes
/// `.workgroup_processor_mode` as 0 or 1); anything else reads as absent.
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Flag {
        Bool(bool),
        Int(i64),
        Other(serde::de::IgnoredAny),
    }
    Ok(match Flag::deserialize(d)? {
        Flag::Bool(b) => Some(b),
        Flag::Int(i) => Some(i != 0),
        Flag::Other(_) => None,
    })
}

/// An optional count; a value of another type reads as absent (an optional field never makes
/// the whole note unreadable).
fn lenient_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Count {
        Int(u32),
        Other(serde::de::IgnoredAny),
    }
    Ok(match Count::deserialize(d)? {
        Count::Int(n) => Some(n),
        Count::Other(_) => None,
    })
}

#[derive(Debug, Deserialize)]
struct Note {
    #[serde(rename = "amdhsa.kernels", default)]
    kernels: Vec<KernelMetadata>,
}

/// The kernels of a metadata note's payload.
pub fn parse_note(desc: &[u8]) -> Result<Vec<KernelMetadata>, String> {
    rmp_serde::from_slice::<Note>(desc)
        .map(|n| n.kernels)
        .map_err(|e| format!("AMDGPU metadata note: {e}"))
}

/// Byte offset of `COMPUTE_PGM_RSRC1` in a kernel descriptor.
pub const KD_RSRC1_OFFSET: usize = 48;
/// `COMPUTE_PGM_RSRC1.WGP_MODE` (gfx10+).
pub const RSRC1_WGP_MODE: u32 = 1 << 29;

/// The LLVM major of the compiler that produced the code, from the `.comment` section's
/// NUL-separated identifications (`Debian clang version 15.0.6`, `AMD clang version 17.0.0`,
/// `Linker: LLD 21.1.8`): the highest clang major, else the linker's.
pub fn producer_llvm_major(comment: &[u8]) -> Option<u32> {
    let major_after = |s: &str, key: &str| -> Option<u32> {
        let rest = &s[s.find(key)? + key.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    let idents: Vec<String> = comment
        .split(|b| *b == 0)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    idents
        .iter()
        .filter_map(|s| major_after(s, "clang version "))
        .max()
        .or_else(|| idents.iter().filter_map(|s| major_after(s, "LLD ")).max())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn producers() {
        let c = b"\0Debian clang version 15.0.5\0Debian clang version 15.0.6\0Linker: Debian LLD 15.0.6\0";
        assert_eq!(producer_llvm_major(c), Some(15));
        assert_eq!(
            producer_llvm_major(b"AMD clang version 19.0.0git (x)\0clang version 21.1.8\0"),
            Some(21)
        );
        assert_eq!(producer_llvm_major(b"Linker: LLD 22.1.0\0"), Some(22));
        assert_eq!(producer_llvm_major(b"GCC: (Debian) 12.2\0"), None);
        assert_eq!(producer_llvm_major(b""), None);
    }

    #[test]
    fn a_note_reads_and_a_corrupt_one_is_an_error() {
        // {"amdhsa.kernels": [{".name": "k", ".symbol": "k.kd", ".sgpr_count": 11,
        //   ".vgpr_count": 3, ".agpr_count": 0, ".group_segment_fixed_size": 0,
        //   ".private_segment_fixed_size": 16, ".wavefront_size": 64,
        //   ".max_flat_workgroup_size": 256, ".args": [], ".foo": "bar"}],
        //  "amdhsa.version": [1, 1]}
        #[derive(serde::Serialize)]
        struct K<'a> {
            #[serde(rename = ".name")]
            name: &'a str,
            #[serde(rename = ".symbol")]
            symbol: &'a str,
            #[serde(rename = ".sgpr_count")]
            s: u8,
            #[serde(rename = ".vgpr_count")]
            v: u8,
            #[serde(rename = ".agpr_count")]
            a: u8,
            #[serde(rename = ".group_segment_fixed_size")]
            g: u32,
            #[serde(rename = ".private_segment_fixed_size")]
            p: u16,
            #[serde(rename = ".wavefront_size")]
            w: u8,
            #[serde(rename = ".max_flat_workgroup_size")]
            m: u16,
            #[serde(rename = ".args")]
            args: Vec<u8>,
            #[serde(rename = ".foo")]
            foo: &'a str,
            #[serde(rename = ".workgroup_processor_mode")]
            wgp: u8,
            #[serde(rename = ".uses_dynamic_stack")]
            dynamic_stack: &'a str,
        }
        #[derive(serde::Serialize)]
        struct N<'a> {
            #[serde(rename = "amdhsa.kernels")]
            kernels: Vec<K<'a>>,
            #[serde(rename = "amdhsa.version")]
            version: [u8; 2],
        }
        let note = N {
            kernels: vec![K {
                name: "k",
                symbol: "k.kd",
                s: 11,
                v: 3,
                a: 0,
                g: 0,
                p: 16,
                w: 64,
                m: 256,
                args: vec![],
                foo: "bar",
                wgp: 1,
                dynamic_stack: "unexpected",
            }],
            version: [1, 1],
        };
        let bytes = rmp_serde::to_vec_named(&note).unwrap();
        let k = &parse_note(&bytes).unwrap()[0];
        assert_eq!((k.name.as_str(), k.sgpr_count, k.vgpr_count), ("k", 11, 3));
        assert_eq!((k.private_segment_fixed_size, k.wavefront_size), (16, 64));
        assert_eq!(k.workgroup_processor_mode, Some(true));
        assert_eq!(k.uses_dynamic_stack, None);
        assert!(parse_note(&bytes[..bytes.len() / 2]).is_err());
        assert!(parse_note(b"\xc1").is_err());
    }
}

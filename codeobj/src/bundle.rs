//! Clang offload bundles, plain and compressed.
//!
//! Plain bundle (all integers little endian):
//!
//! ```text
//! 0   24 bytes  "__CLANG_OFFLOAD_BUNDLE__"
//! 24  u64       number of entries N
//! 32  N times   { u64 offset (from the bundle start), u64 size, u64 id length, id bytes (no NUL) }
//! ```
//!
//! Compressed bundle (`CCOB`), followed by the compressed plain bundle:
//!
//! ```text
//! v1: "CCOB" u16 version=1 u16 method u32 uncompressed_size u64 hash              (20 bytes)
//! v2: "CCOB" u16 version=2 u16 method u32 total_size u32 uncompressed_size u64 hash (24 bytes)
//! v3: "CCOB" u16 version=3 u16 method u64 total_size u64 uncompressed_size u64 hash (32 bytes)
//! ```
//!
//! `method` is 0 for zlib and 1 for zstd; `total_size` counts the header too; `hash` is the
//! truncated MD5 of the uncompressed bundle (not checked here). A v1 bundle has no total size and
//! runs to the end of its input.
//!
//! In a host binary's `.hip_fatbin` section every translation unit contributes one bundle at a
//! 4096-byte boundary; zero bytes pad up to the next one.

use std::io::Read;

use crate::{elf, CodeObject, Error};

pub const MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
pub const CCOB_MAGIC: &[u8] = b"CCOB";
/// Alignment of bundles in `.hip_fatbin`.
pub const FATBIN_ALIGN: usize = 4096;
/// Largest uncompressed size accepted from a CCOB header (guards against absurd allocations).
pub const MAX_UNCOMPRESSED: u64 = 1 << 34;

/// One entry of a plain bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleEntry {
    pub id: String,
    pub offset: u64,
    pub size: u64,
}

/// A parsed plain bundle header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainBundle {
    pub entries: Vec<BundleEntry>,
    /// Bytes covered by the header and every entry's payload.
    pub len: u64,
}

/// Compression method of a CCOB bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Zlib,
    Zstd,
}

/// A parsed CCOB header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CcobHeader {
    pub version: u16,
    pub method: Compression,
    pub header_len: usize,
    /// Header plus compressed data; `None` for v1 (to the end of the input).
    pub total_size: Option<u64>,
    pub uncompressed_size: u64,
    pub hash: u64,
}

fn u16_at(d: &[u8], at: usize) -> Option<u16> {
    d.get(at..at.checked_add(2)?)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
}
fn u32_at(d: &[u8], at: usize) -> Option<u32> {
    d.get(at..at.checked_add(4)?)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
}
fn u64_at(d: &[u8], at: usize) -> Option<u64> {
    d.get(at..at.checked_add(8)?)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
}

/// Parses a plain bundle header at the start of `d` and checks every entry lies inside `d`.
pub fn parse_plain(d: &[u8], origin: &str, base: u64) -> Result<PlainBundle, Error> {
    let bad = |off: usize, why: String| Error::corrupt(origin, base + off as u64, why);
    if !d.starts_with(MAGIC) {
        return Err(bad(0, "no __CLANG_OFFLOAD_BUNDLE__ magic".into()));
    }
    let n = u64_at(d, 24).ok_or_else(|| bad(24, "bundle header truncated".into()))?;
    // Each entry needs at least 24 bytes: a count larger than that cannot be real.
    if n > (d.len() as u64) / 24 {
        return Err(bad(
            24,
            format!(
                "bundle claims {n} entries, more than its {} bytes hold",
                d.len()
            ),
        ));
    }
    let mut pos = 32usize;
    let mut entries = Vec::with_capacity(n as usize);
    let mut len = 0u64;
    for i in 0..n {
        let (Some(offset), Some(size), Some(id_len)) =
            (u64_at(d, pos), u64_at(d, pos + 8), u64_at(d, pos + 16))
        else {
            return Err(bad(pos, format!("bundle entry {i} truncated")));
        };
        pos += 24;
        let id_end = (pos as u64)
            .checked_add(id_len)
            .filter(|e| *e <= d.len() as u64)
            .ok_or_else(|| {
                bad(
                    pos,
                    format!("bundle entry {i}: id of {id_len} bytes truncated"),
                )
            })? as usize;
        let id = String::from_utf8_lossy(&d[pos..id_end]).into_owned();
        pos = id_end;
        let end = offset
            .checked_add(size)
            .filter(|e| *e <= d.len() as u64)
            .ok_or_else(|| {
                bad(
                    pos,
                    format!(
                        "bundle entry {i} ({id}): payload at offset {offset} of {size} bytes \
                         runs past the end ({} bytes)",
                        d.len()
                    ),
                )
            })?;
        len = len.max(end);
        entries.push(BundleEntry { id, offset, size });
    }
    Ok(PlainBundle {
        entries,
        len: len.max(pos as u64),
    })
}

/// Parses a CCOB header at the start of `d`.
pub fn parse_ccob_header(d: &[u8], origin: &str, base: u64) -> Result<CcobHeader, Error> {
    let bad = |off: usize, why: String| Error::corrupt(origin, base + off as u64, why);
    if !d.starts_with(CCOB_MAGIC) {
        return Err(bad(0, "no CCOB magic".into()));
    }
    let short = || bad(0, "compressed bundle header truncated".into());
    let version = u16_at(d, 4).ok_or_else(short)?;
    let method = match u16_at(d, 6).ok_or_else(short)? {
        0 => Compression::Zlib,
        1 => Compression::Zstd,
        m => {
            return Err(bad(
                6,
                format!("unknown compression method {m} (0 zlib, 1 zstd)"),
            ))
        }
    };
    let (header_len, total_size, uncompressed_size, hash) = match version {
        1 => (
            20,
            None,
            u64::from(u32_at(d, 8).ok_or_else(short)?),
            u64_at(d, 12).ok_or_else(short)?,
        ),
        2 => (
            24,
            Some(u64::from(u32_at(d, 8).ok_or_else(short)?)),
            u64::from(u32_at(d, 12).ok_or_else(short)?),
            u64_at(d, 16).ok_or_else(short)?,
        ),
        3 => (
            32,
            Some(u64_at(d, 8).ok_or_else(short)?),
            u64_at(d, 16).ok_or_else(short)?,
            u64_at(d, 24).ok_or_else(short)?,
        ),
        v => return Err(bad(4, format!("unsupported compressed bundle version {v}"))),
    };
    if let Some(t) = total_size {
        if t < header_len as u64 || t > d.len() as u64 {
            return Err(bad(
                8,
                format!(
                    "compressed bundle total size {t} does not fit (header {header_len}, {} bytes \
                     available)",
                    d.len()
                ),
            ));
        }
    }
    if uncompressed_size > MAX_UNCOMPRESSED {
        return Err(bad(
            8,
            format!("compressed bundle claims {uncompressed_size} uncompressed bytes"),
        ));
    }
    Ok(CcobHeader {
        version,
        method,
        header_len,
        total_size,
        uncompressed_size,
        hash,
    })
}

/// Decompresses a CCOB bundle (header at the start of `d`); returns the plain bundle and the
/// number of input bytes the compressed bundle covers.
pub fn decompress(d: &[u8], origin: &str, base: u64) -> Result<(Vec<u8>, u64), Error> {
    let h = parse_ccob_header(d, origin, base)?;
    let end = h.total_size.unwrap_or(d.len() as u64) as usize;
    let payload = &d[h.header_len..end];
    let limit = h.uncompressed_size;
    let mut out = Vec::with_capacity(limit.min(1 << 28) as usize);
    let res = match h.method {
        Compression::Zlib => flate2::read::ZlibDecoder::new(payload)
            .take(limit + 1)
            .read_to_end(&mut out)
            .map_err(|e| e.to_string()),
        Compression::Zstd => {
            let mut src = payload;
            match ruzstd::decoding::StreamingDecoder::new(&mut src) {
                Ok(dec) => dec
                    .take(limit + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            }
        }
    };
    let what = match h.method {
        Compression::Zlib => "zlib",
        Compression::Zstd => "zstd",
    };
    res.map_err(|e| {
        Error::corrupt(
            origin,
            base + h.header_len as u64,
            format!("{what} data of the compressed bundle cannot be decompressed: {e}"),
        )
    })?;
    if out.len() as u64 != limit {
        return Err(Error::corrupt(
            origin,
            base,
            format!(
                "compressed bundle decompresses to {} bytes, its header says {limit}",
                out.len()
            ),
        ));
    }
    Ok((out, end as u64))
}

/// Walks a `.hip_fatbin`-like byte range: bundles (plain or CCOB) one after another at 4096-byte
/// boundaries, each's extent taken from its header. `what` names the range in locations.
pub fn walk_fatbin(
    d: &[u8],
    origin: &str,
    what: &str,
    out: &mut Vec<CodeObject>,
) -> Result<(), Error> {
    let mut pos = 0usize;
    let mut index = 0usize;
    while pos < d.len() {
        let rest = &d[pos..];
        let len = if rest.starts_with(MAGIC) {
            let b = parse_plain(rest, origin, pos as u64)?;
            read_entries(rest, &b, origin, what, index, "", out)?;
            b.len
        } else if rest.starts_with(CCOB_MAGIC) {
            let (plain, covered) = decompress(rest, origin, pos as u64)?;
            let inner_origin = format!("{origin} (compressed bundle at {pos:#x})");
            let b = parse_plain(&plain, &inner_origin, 0)?;
            let h = parse_ccob_header(rest, origin, pos as u64)?;
            let note = format!(
                ", CCOB v{} {}",
                h.version,
                match h.method {
                    Compression::Zlib => "zlib",
                    Compression::Zstd => "zstd",
                }
            );
            read_entries(&plain, &b, &inner_origin, what, index, &note, out)?;
            covered
        } else if rest.iter().take(FATBIN_ALIGN).all(|b| *b == 0) {
            // Padding up to the next boundary.
            pos = (pos / FATBIN_ALIGN + 1) * FATBIN_ALIGN;
            continue;
        } else {
            return Err(Error::corrupt(
                origin,
                pos as u64,
                "expected an offload bundle (__CLANG_OFFLOAD_BUNDLE__ or CCOB) here",
            ));
        };
        index += 1;
        let end = pos as u64 + len.max(1);
        let next = end.div_ceil(FATBIN_ALIGN as u64) * FATBIN_ALIGN as u64;
        if next >= d.len() as u64 {
            // Whatever follows the last bundle inside its 4096-byte slot must be padding.
            break;
        }
        // Bytes between the end of this bundle and the next boundary must be zero.
        if d[end as usize..next as usize].iter().any(|b| *b != 0) {
            return Err(Error::corrupt(
                origin,
                end,
                "unexpected bytes after an offload bundle (before the next 4096-byte boundary)",
            ));
        }
        pos = next as usize;
    }
    Ok(())
}

fn read_entries(
    d: &[u8],
    b: &PlainBundle,
    origin: &str,
    what: &str,
    index: usize,
    note: &str,
    out: &mut Vec<CodeObject>,
) -> Result<(), Error> {
    for e in &b.entries {
        if e.id.starts_with("host-") || e.size == 0 {
            continue;
        }
        let payload = &d[e.offset as usize..(e.offset + e.size) as usize];
        let location = format!("{what} {index}{note}, entry {}", e.id);
        let target_id = target_id_of_bundle_id(&e.id);
        if payload.starts_with(b"\x7fELF") {
            out.push(elf::read_code_object(
                payload,
                origin,
                &location,
                Some((index, e.id.clone())),
                Some(target_id),
            )?);
        } else if payload.starts_with(elf::BITCODE_MAGIC)
            || payload.starts_with(elf::BITCODE_WRAPPER_MAGIC)
        {
            out.push(elf::bitcode_object(
                payload,
                &location,
                Some(index),
                Some(e.id.clone()),
                &target_id,
            ));
        } else {
            return Err(Error::corrupt(
                origin,
                e.offset,
                format!(
                    "bundle entry {} holds neither a code object nor bitcode",
                    e.id
                ),
            ));
        }
    }
    Ok(())
}

/// `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-` -> `amdgcn-amd-amdhsa--gfx90a:xnack-` (the offload
/// kind before the first `-` dropped).
pub fn target_id_of_bundle_id(id: &str) -> String {
    match id.split_once('-') {
        Some((_kind, rest)) if rest.starts_with("amdgcn") => rest.to_string(),
        _ => id.to_string(),
    }
}

/// Writes a plain bundle (for tests and tools that make inputs): entries in order, payloads
/// aligned to `align` bytes.
pub fn write_plain(entries: &[(&str, &[u8])], align: usize) -> Vec<u8> {
    let header: usize = 32 + entries.iter().map(|(id, _)| 24 + id.len()).sum::<usize>();
    let mut offsets = Vec::new();
    let mut at = header;
    for (_, p) in entries {
        at = at.div_ceil(align.max(1)) * align.max(1);
        offsets.push(at);
        at += p.len();
    }
    let mut out = Vec::with_capacity(at);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for ((id, p), off) in entries.iter().zip(&offsets) {
        out.extend_from_slice(&(*off as u64).to_le_bytes());
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        out.extend_from_slice(&(id.len() as u64).to_le_bytes());
        out.extend_from_slice(id.as_bytes());
    }
    for ((_, p), off) in entries.iter().zip(&offsets) {
        out.resize(*off, 0);
        out.extend_from_slice(p);
    }
    out
}

/// Writes a CCOB bundle of `version` 2 or 3 around an already compressed payload.
pub fn write_ccob(
    version: u16,
    method: Compression,
    uncompressed: u64,
    compressed: &[u8],
) -> Vec<u8> {
    let header_len = if version == 3 { 32 } else { 24 };
    let total = (header_len + compressed.len()) as u64;
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(CCOB_MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    let m: u16 = match method {
        Compression::Zlib => 0,
        Compression::Zstd => 1,
    };
    out.extend_from_slice(&m.to_le_bytes());
    if version == 3 {
        out.extend_from_slice(&total.to_le_bytes());
        out.extend_from_slice(&uncompressed.to_le_bytes());
    } else {
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(uncompressed as u32).to_le_bytes());
    }
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(compressed);
    out
}

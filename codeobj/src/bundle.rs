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
/// The largest code object (or bitcode module) read: 1 GiB. A code object is one GPU program,
/// loaded whole into device memory; the largest made by ROCm's own libraries (the kernel
/// libraries of rocBLAS and hipBLASLt, thousands of kernels each) are some hundreds of MB at
/// most, an application's per-target code object tens of MB. A bundle entry, or a file's bare
/// code object, that declares more is refused before anything is allocated for it, so a small
/// hostile file cannot make the reader hold gigabytes.
pub const MAX_CODE_OBJECT_BYTES: u64 = 1 << 30;
/// The largest uncompressed size a CCOB header may declare: that of the largest file read
/// ([`crate::MAX_FILE_BYTES`], 8 GiB), as the same bundle stored uncompressed would be. A
/// compressed bundle is decoded as a stream that is never held whole (the entries that hold code
/// objects one at a time, each at most [`MAX_CODE_OBJECT_BYTES`], the rest skipped), and it
/// stops at the declared size; a stream that does not begin with a bundle header stops at once
/// (2 GiB of compressed zeros declared in 66 KB took 3.1 GB and 22 s).
pub const MAX_UNCOMPRESSED: u64 = crate::MAX_FILE_BYTES;
/// The largest zstd window a compressed bundle may use (128 MiB, window log 27): the zstd
/// library's own default limit for decoders (`ZSTD_WINDOWLOG_LIMIT_DEFAULT`), within which every
/// compression level and long-distance mode LLVM's bundler uses stays. The decoder keeps a
/// window of this size; a frame that asks for more (a single-segment frame of 2 GiB asks for
/// 2 GiB) is refused before decoding.
pub const MAX_ZSTD_WINDOW: u64 = 1 << 27;
/// The longest bundle entry ID read from a compressed bundle's stream (64 KiB; real IDs are a
/// target triple and a processor with features, under 100 bytes).
pub const MAX_ENTRY_ID: u64 = 64 << 10;

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
    parse_plain_header(d, d.len() as u64, origin, base)
}

/// Parses a plain bundle header held by `d`, of a bundle `total` bytes long (its payloads need
/// not be in `d`: a compressed bundle's stream gives them later), and checks every entry lies
/// inside the bundle.
fn parse_plain_header(d: &[u8], total: u64, origin: &str, base: u64) -> Result<PlainBundle, Error> {
    let bad = |off: usize, why: String| Error::corrupt(origin, base + off as u64, why);
    if !d.starts_with(MAGIC) {
        return Err(bad(0, "no __CLANG_OFFLOAD_BUNDLE__ magic".into()));
    }
    let n = u64_at(d, 24).ok_or_else(|| bad(24, "bundle header truncated".into()))?;
    // Each entry needs at least 24 bytes: a count larger than that cannot be real.
    if n > total / 24 {
        return Err(bad(
            24,
            format!("bundle claims {n} entries, more than its {total} bytes hold"),
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
            .filter(|e| *e <= total)
            .ok_or_else(|| {
                bad(
                    pos,
                    format!(
                        "bundle entry {i} ({id}): payload at offset {offset} of {size} bytes \
                         runs past the end ({total} bytes)"
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
            format!(
                "compressed bundle claims {uncompressed_size} uncompressed bytes; at most \
                 {MAX_UNCOMPRESSED} are read"
            ),
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

fn method_name(m: Compression) -> &'static str {
    match m {
        Compression::Zlib => "zlib",
        Compression::Zstd => "zstd",
    }
}

/// The window a zstd frame's header asks for (None: the header is unreadable; the decoder
/// then says why). Frame header: magic, descriptor, then a window descriptor unless the frame
/// is a single segment, whose window is its content size.
fn zstd_window(d: &[u8]) -> Option<u64> {
    if u32_at(d, 0)? != 0xFD2F_B528 {
        return None;
    }
    let desc = *d.get(4)?;
    let single = desc & 0x20 != 0;
    if !single {
        let w = u64::from(*d.get(5)?);
        let log = 10 + (w >> 3);
        let base = 1u64 << log;
        return Some(base + (base / 8) * (w & 7));
    }
    let dict = [0usize, 1, 2, 4][usize::from(desc & 3)];
    let at = 5 + dict;
    match desc >> 6 {
        0 => d.get(at).map(|b| u64::from(*b)),
        1 => u16_at(d, at).map(|v| u64::from(v) + 256),
        2 => u32_at(d, at).map(u64::from),
        _ => u64_at(d, at),
    }
}

/// The decompressed bytes of a compressed bundle as a stream, read as far as needed and never
/// held whole.
struct Inflate<'a> {
    inner: Box<dyn Read + 'a>,
    /// Bytes given so far.
    pos: u64,
    /// What the header says the stream holds.
    declared: u64,
    method: Compression,
    origin: &'a str,
    base: u64,
    header_len: usize,
}

impl<'a> Inflate<'a> {
    fn new(d: &'a [u8], h: &CcobHeader, origin: &'a str, base: u64) -> Result<Self, Error> {
        let end = h.total_size.unwrap_or(d.len() as u64) as usize;
        let payload = &d[h.header_len..end];
        let inner: Box<dyn Read + 'a> = match h.method {
            Compression::Zlib => Box::new(flate2::read::ZlibDecoder::new(payload)),
            Compression::Zstd => {
                if let Some(w) = zstd_window(payload).filter(|w| *w > MAX_ZSTD_WINDOW) {
                    return Err(Error::corrupt(
                        origin,
                        base + h.header_len as u64,
                        format!(
                            "the zstd data of the compressed bundle needs a window of {w} bytes; \
                             at most {MAX_ZSTD_WINDOW} are accepted"
                        ),
                    ));
                }
                let dec = ruzstd::decoding::StreamingDecoder::new(payload).map_err(|e| {
                    Error::corrupt(
                        origin,
                        base + h.header_len as u64,
                        format!("zstd data of the compressed bundle cannot be decompressed: {e}"),
                    )
                })?;
                Box::new(dec)
            }
        };
        Ok(Inflate {
            // One byte past the declared size tells a stream that holds more.
            inner: Box::new(inner.take(h.uncompressed_size + 1)),
            pos: 0,
            declared: h.uncompressed_size,
            method: h.method,
            origin,
            base,
            header_len: h.header_len,
        })
    }

    fn broken(&self, e: std::io::Error) -> Error {
        Error::corrupt(
            self.origin,
            self.base + self.header_len as u64,
            format!(
                "{} data of the compressed bundle cannot be decompressed: {e}",
                method_name(self.method)
            ),
        )
    }

    fn short(&self) -> Error {
        Error::corrupt(
            self.origin,
            self.base,
            format!(
                "compressed bundle decompresses to {} bytes, its header says {}",
                self.pos, self.declared
            ),
        )
    }

    /// The next `n` bytes (an error when the stream ends first or memory cannot be had).
    fn bytes(&mut self, n: u64) -> Result<Vec<u8>, Error> {
        let mut buf = sqtt_files::input::zeroed(n as usize).map_err(|e| {
            Error::corrupt(
                self.origin,
                self.base,
                format!("decompressing the compressed bundle: {e}"),
            )
        })?;
        let mut got = 0;
        while got < buf.len() {
            match self.inner.read(&mut buf[got..]) {
                Ok(0) => {
                    self.pos += got as u64;
                    return Err(self.short());
                }
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.broken(e)),
            }
        }
        self.pos += n;
        Ok(buf)
    }

    /// Decodes and drops `n` bytes.
    fn skip(&mut self, n: u64) -> Result<(), Error> {
        let got = std::io::copy(&mut (&mut self.inner).take(n), &mut std::io::sink())
            .map_err(|e| self.broken(e))?;
        self.pos += got;
        if got < n {
            return Err(self.short());
        }
        Ok(())
    }

    /// Decodes the rest: the stream must hold exactly the declared size.
    fn finish(mut self) -> Result<(), Error> {
        let rest =
            std::io::copy(&mut self.inner, &mut std::io::sink()).map_err(|e| self.broken(e))?;
        self.pos += rest;
        if self.pos > self.declared {
            return Err(Error::corrupt(
                self.origin,
                self.base,
                format!(
                    "compressed bundle decompresses to more than the {} bytes its header says",
                    self.declared
                ),
            ));
        }
        if self.pos < self.declared {
            return Err(self.short());
        }
        Ok(())
    }
}

/// Reads a CCOB bundle (header at the start of `d`) as a stream: its plain bundle header, then
/// each entry that holds a code object, one at a time (the others are skipped), then the rest,
/// which must end at the declared size. Returns the number of input bytes the compressed bundle
/// covers.
fn read_compressed(
    d: &[u8],
    origin: &str,
    base: u64,
    what: &str,
    index: usize,
    out: &mut Vec<CodeObject>,
) -> Result<u64, Error> {
    let h = parse_ccob_header(d, origin, base)?;
    let covered = h.total_size.unwrap_or(d.len() as u64);
    let mut z = Inflate::new(d, &h, origin, base)?;
    let inner_origin = format!("{origin} (compressed bundle at {base:#x})");
    let bad = |off: u64, why: String| Error::corrupt(&inner_origin, off, why);
    // The plain bundle header: magic and count (a stream of anything else stops here), then
    // each entry with its ID.
    let mut head = z.bytes(32.min(h.uncompressed_size))?;
    if !head.starts_with(MAGIC) {
        return Err(bad(0, "no __CLANG_OFFLOAD_BUNDLE__ magic".into()));
    }
    let n = u64_at(&head, 24).ok_or_else(|| bad(24, "bundle header truncated".into()))?;
    if n > h.uncompressed_size / 24 {
        return Err(bad(
            24,
            format!(
                "bundle claims {n} entries, more than its {} bytes hold",
                h.uncompressed_size
            ),
        ));
    }
    for i in 0..n {
        let at = head.len() as u64;
        if at + 24 > h.uncompressed_size {
            return Err(bad(at, format!("bundle entry {i} truncated")));
        }
        head.extend_from_slice(&z.bytes(24)?);
        let id_len = u64_at(&head, at as usize + 16).unwrap_or(0);
        if id_len > MAX_ENTRY_ID || at + 24 + id_len > h.uncompressed_size {
            return Err(bad(
                at + 24,
                format!("bundle entry {i}: an ID of {id_len} bytes (at most {MAX_ENTRY_ID})"),
            ));
        }
        head.extend_from_slice(&z.bytes(id_len)?);
    }
    let b = parse_plain_header(&head, h.uncompressed_size, &inner_origin, 0)?;
    let note = format!(", CCOB v{} {}", h.version, method_name(h.method));
    // Payloads in the order of the stream; the code objects in the order of the header.
    let mut order: Vec<usize> = (0..b.entries.len()).collect();
    order.sort_by_key(|&i| b.entries[i].offset);
    let mut found: Vec<(usize, CodeObject)> = Vec::new();
    for i in order {
        let e = &b.entries[i];
        if !holds_code(e) {
            continue;
        }
        if e.offset < z.pos {
            return Err(bad(
                e.offset,
                format!(
                    "bundle entry {} overlaps the header or another entry (ends at {})",
                    e.id, z.pos
                ),
            ));
        }
        if e.size > MAX_CODE_OBJECT_BYTES {
            return Err(bad(
                e.offset,
                format!(
                    "bundle entry {} declares {} bytes; a code object may have at most \
                     {MAX_CODE_OBJECT_BYTES}",
                    e.id, e.size
                ),
            ));
        }
        z.skip(e.offset - z.pos)?;
        let payload = z.bytes(e.size)?;
        let mut one = Vec::new();
        read_entry(&payload, e, &inner_origin, what, index, &note, &mut one)?;
        found.extend(one.into_iter().map(|co| (i, co)));
    }
    z.finish()?;
    found.sort_by_key(|(i, _)| *i);
    out.extend(found.into_iter().map(|(_, co)| co));
    Ok(covered)
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
            for e in b.entries.iter().filter(|e| holds_code(e)) {
                let payload = &rest[e.offset as usize..(e.offset + e.size) as usize];
                read_entry(payload, e, origin, what, index, "", out)?;
            }
            b.len
        } else if rest.starts_with(CCOB_MAGIC) {
            read_compressed(rest, origin, pos as u64, what, index, out)?
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

/// Whether a bundle entry may hold device code (the host entry and empty ones do not).
fn holds_code(e: &BundleEntry) -> bool {
    !e.id.starts_with("host-") && e.size > 0
}

/// The code object (or bitcode module) of one bundle entry.
fn read_entry(
    payload: &[u8],
    e: &BundleEntry,
    origin: &str,
    what: &str,
    index: usize,
    note: &str,
    out: &mut Vec<CodeObject>,
) -> Result<(), Error> {
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

/// A zstd frame of `prefix` (raw blocks) and then `zeros` zero bytes (RLE blocks of 128 KiB: 2 GiB
/// in 64 KB, written without compressing anything), its content size in its header; a window
/// of 2^`window_log` bytes (10 to 41), or with `None` a single segment, whose window is the
/// content size. For tests and fuzz targets that make compressed bundles of any size.
pub fn write_zstd_zeros(prefix: &[u8], zeros: u64, window_log: Option<u8>) -> Vec<u8> {
    const BLOCK: u64 = 128 << 10;
    let mut f = vec![0x28, 0xB5, 0x2F, 0xFD];
    match window_log {
        Some(log) => f.extend_from_slice(&[0xC0, (log.clamp(10, 41) - 10) << 3]),
        None => f.push(0xE0),
    }
    f.extend_from_slice(&(prefix.len() as u64 + zeros).to_le_bytes());
    let block = |f: &mut Vec<u8>, kind: u32, size: u64, last: bool| {
        let h = u32::from(last) | (kind << 1) | ((size as u32) << 3);
        f.extend_from_slice(&h.to_le_bytes()[..3]);
    };
    let chunks: Vec<&[u8]> = prefix.chunks(BLOCK as usize).collect();
    for (i, c) in chunks.iter().enumerate() {
        block(
            &mut f,
            0,
            c.len() as u64,
            zeros == 0 && i + 1 == chunks.len(),
        );
        f.extend_from_slice(c);
    }
    let mut left = zeros;
    while left > 0 {
        let n = left.min(BLOCK);
        left -= n;
        block(&mut f, 1, n, left == 0);
        f.push(0);
    }
    if prefix.is_empty() && zeros == 0 {
        // An empty last raw block.
        block(&mut f, 0, 0, true);
    }
    f
}

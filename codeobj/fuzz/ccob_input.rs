//! A compressed (CCOB) bundle made from fuzz bytes, for the bounded decompression: shared by
//! codeobj's `ccob` target and tools' `trace_dir` target (each includes this file by path).
//!
//! ```text
//! byte 0     flags: bit 0 zstd (else zlib), bit 1 CCOB v3 (else v2), bit 2 a single-segment
//!            zstd frame, bits 3-6 the zstd window log - 10, bit 7 the declared size is the
//!            true one (else bytes 1-8 say it, up to 64 GiB: past the 8 GiB bound too)
//! bytes 1-8  the declared uncompressed size (little endian)
//! bytes 9-12 zstd: zero bytes after the rest, in units of 64 bytes (up to 256 MiB)
//! the rest   zstd: the start of the uncompressed bundle (raw blocks), then the zeros; zlib: the
//!            compressed stream as it is
//! ```

use sqtt_codeobj::bundle::{write_ccob, write_zstd_zeros, Compression};

fn u64_at(d: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    for (i, x) in d.iter().skip(at).take(8).enumerate() {
        b[i] = *x;
    }
    u64::from_le_bytes(b)
}

pub fn ccob(data: &[u8]) -> Vec<u8> {
    let flags = data.first().copied().unwrap_or(0);
    let declared = u64_at(data, 1) & ((1 << 36) - 1);
    let zeros = (u64_at(data, 9) & 0xFFFF_FFFF) % (1 << 22) * 64;
    let rest = data.get(13..).unwrap_or(&[]);
    let version = if flags & 2 != 0 { 3 } else { 2 };
    if flags & 1 == 0 {
        let declared = if flags & 0x80 != 0 { 0 } else { declared };
        return write_ccob(version, Compression::Zlib, declared, rest);
    }
    let window = (flags & 4 == 0).then_some(10 + ((flags >> 3) & 0xF));
    let frame = write_zstd_zeros(rest, zeros, window);
    let declared = if flags & 0x80 != 0 {
        rest.len() as u64 + zeros
    } else {
        declared
    };
    write_ccob(version, Compression::Zstd, declared, &frame)
}

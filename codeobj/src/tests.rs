use super::bundle::{write_ccob, write_plain, Compression};
use super::*;

fn bitcode() -> Vec<u8> {
    let mut v = b"BC\xC0\xDE".to_vec();
    v.extend_from_slice(&[0x35, 0x14, 0, 0, 5, 0, 0, 0]);
    v
}

fn two_arch_bundle() -> Vec<u8> {
    let bc = bitcode();
    write_plain(
        &[
            ("host-x86_64-unknown-linux", &[][..]),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &bc),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", &bc),
        ],
        16,
    )
}

fn zlib(d: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(d).unwrap();
    e.finish().unwrap()
}

fn zstd(d: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(d, ruzstd::encoding::CompressionLevel::Fastest)
}

#[test]
fn plain_bundle_entries() {
    let cos = read_bytes(&two_arch_bundle(), "b").unwrap();
    assert_eq!(cos.len(), 2);
    assert_eq!(cos[0].arch, "gfx90a");
    assert_eq!(cos[0].target_id, "amdgcn-amd-amdhsa--gfx90a");
    assert_eq!(cos[1].arch, "gfx1030");
    assert_eq!(cos[0].funcmap, FuncmapState::NotLinked);
    assert!(cos[0].matches_arch("gfx90a"));
    assert!(!cos[0].matches_arch("gfx90"));
}

#[test]
fn compressed_bundles() {
    let plain = two_arch_bundle();
    for (method, data) in [
        (Compression::Zlib, zlib(&plain)),
        (Compression::Zstd, zstd(&plain)),
    ] {
        for version in [2u16, 3] {
            let ccob = write_ccob(version, method, plain.len() as u64, &data);
            let cos = read_bytes(&ccob, "c").unwrap();
            assert_eq!(cos.len(), 2, "{method:?} v{version}");
            assert!(cos[0].location.contains(&format!("CCOB v{version}")));
            // Wrong uncompressed size.
            let bad = write_ccob(version, method, plain.len() as u64 + 1, &data);
            let e = read_bytes(&bad, "c").unwrap_err().to_string();
            assert!(e.contains("decompresses to"), "{e}");
            // Corrupt payload.
            let mut bad = ccob.clone();
            let n = bad.len();
            for b in &mut bad[40.min(n - 1)..] {
                *b ^= 0x5A;
            }
            assert!(read_bytes(&bad, "c").is_err());
        }
    }
}

/// A plain bundle header with one gfx90a entry of `size` bytes (the payload not included).
fn bundle_header(size: u64) -> Vec<u8> {
    let mut h = bundle::MAGIC.to_vec();
    let id = b"hipv4-amdgcn-amd-amdhsa--gfx90a";
    h.extend_from_slice(&1u64.to_le_bytes());
    let offset = (32 + 24 + id.len()) as u64;
    for v in [offset, size, id.len() as u64] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    h.extend_from_slice(id);
    h
}

/// Compressed bundles that declare or decompress to more than a code object can be stop early
/// with a clear error, having held no more than a bundle header (2 GiB of compressed zeros took
/// 3.1 GB and 22 s).
#[test]
fn compressed_bombs_stop_early() {
    const G2: u64 = 2 << 30;
    let err = |ccob: Vec<u8>| read_bytes(&ccob, "bomb").unwrap_err().to_string();
    // 2 GiB of zeros: no bundle header.
    let zeros = bundle::write_zstd_zeros(&[], G2, Some(23));
    assert!(zeros.len() < 70_000);
    let e = err(write_ccob(3, Compression::Zstd, G2, &zeros));
    assert_eq!(
        e,
        "bomb (compressed bundle at 0x0): offset 0x0: no __CLANG_OFFLOAD_BUNDLE__ magic"
    );
    // A single-segment frame asks for a 2 GiB window.
    let e = err(write_ccob(
        3,
        Compression::Zstd,
        G2,
        &bundle::write_zstd_zeros(&[], G2, None),
    ));
    assert!(
        e.contains("needs a window of 2147483648 bytes; at most 134217728 are accepted"),
        "{e}"
    );
    // A bundle header, then a code object of 2 GiB.
    let h = bundle_header(G2);
    let total = h.len() as u64 + G2;
    let e = err(write_ccob(
        3,
        Compression::Zstd,
        total,
        &bundle::write_zstd_zeros(&h, G2, Some(23)),
    ));
    assert!(
        e.contains(
            "bundle entry hipv4-amdgcn-amd-amdhsa--gfx90a declares 2147483648 bytes; a code \
             object may have at most 1073741824"
        ),
        "{e}"
    );
    // A real bundle in raw blocks reads as it would compressed.
    let plain = two_arch_bundle();
    let raw = bundle::write_zstd_zeros(&plain, 0, Some(20));
    let cos = read_bytes(
        &write_ccob(3, Compression::Zstd, plain.len() as u64, &raw),
        "r",
    )
    .unwrap();
    assert_eq!(cos.len(), 2);
    // More than a file's worth, declared.
    let e = err(write_ccob(3, Compression::Zstd, 1 << 40, &zeros));
    assert!(
        e.contains("claims 1099511627776 uncompressed bytes; at most"),
        "{e}"
    );
    // A stream longer than declared stops one byte past it.
    let plain = two_arch_bundle();
    let mut longer = plain.clone();
    longer.extend_from_slice(&[0; 100]);
    for data in [zlib(&longer), zstd(&longer)] {
        let m = if data.starts_with(&[0x28, 0xB5]) {
            Compression::Zstd
        } else {
            Compression::Zlib
        };
        let e = err(write_ccob(2, m, plain.len() as u64, &data));
        assert!(
            e.contains(&format!(
                "decompresses to more than the {} bytes its header says",
                plain.len()
            )),
            "{e}"
        );
    }
}

#[test]
fn fatbin_of_several_bundles_at_4096() {
    let b = two_arch_bundle();
    let mut fat = b.clone();
    fat.resize(4096, 0);
    let c = write_ccob(3, Compression::Zstd, b.len() as u64, &zstd(&b));
    fat.extend_from_slice(&c);
    fat.resize(8192 + 100, 0);
    let mut out = Vec::new();
    bundle::walk_fatbin(&fat, "f", ".hip_fatbin bundle", &mut out).unwrap();
    assert_eq!(out.len(), 4);
    assert_eq!(out[2].bundle_index, Some(1));
    // Garbage where the next bundle should start.
    let mut bad = b.clone();
    bad.resize(4096, 0);
    bad.extend_from_slice(b"garbage garbage garbage garbage");
    let e = bundle::walk_fatbin(&bad, "f", "x", &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("expected an offload bundle"), "{e}");
}

#[test]
fn truncations_and_corruptions_never_panic() {
    let plain = two_arch_bundle();
    let ccob = write_ccob(2, Compression::Zlib, plain.len() as u64, &zlib(&plain));
    for input in [&plain, &ccob] {
        for n in 0..input.len() {
            let _ = read_bytes(&input[..n], "t");
        }
        for i in 0..input.len() {
            for x in [0xFFu8, 0x80, 0x01] {
                let mut d = input.clone();
                d[i] ^= x;
                let _ = read_bytes(&d, "t");
            }
        }
    }
    let e = read_bytes(&plain[..40], "t").unwrap_err().to_string();
    assert!(e.contains("t: offset"), "{e}");
    let mut huge = plain.clone();
    huge[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(read_bytes(&huge, "t")
        .unwrap_err()
        .to_string()
        .contains("entries"));
    // ELF headers that lie.
    let mut elf = b"\x7fELF\x02\x01\x01\x40\x02\0\0\0\0\0\0\0".to_vec();
    elf.extend_from_slice(&[0; 48]);
    elf[18] = 0xE0;
    // A header-only code object: readable, no funcmap.
    assert_eq!(
        read_bytes(&elf, "e").unwrap()[0].funcmap,
        FuncmapState::Missing
    );
    elf[0x28] = 0xFF; // e_shoff far outside the file
    elf[0x3c] = 3; // e_shnum
    let _ = read_bytes(&elf, "e");
    elf[0x28] = 0;
    elf[0x3c] = 0;
    elf[18] = 0x3E;
    assert!(read_bytes(&elf, "e").unwrap().is_empty());
    assert!(matches!(
        read_bytes(b"hello", "h"),
        Err(Error::Unrecognised { .. })
    ));
}

#[test]
fn joined_funcmaps_report_collisions() {
    let s = parse_funcmap_section(b"K:_Z1av\nU:1:a\n\0\0\0\0K:_Z1bv\nU:1:a\n\0");
    assert!(s.is_valid(), "{:?}", s.problem_texts());
    let s = parse_funcmap_section(b"K:_Z1av\nU:1:a\n\0\0K:_Z1bv\nU:1:b\n\0");
    assert_eq!(s.status(), "invalid");
    let t = s.problem_texts().join("\n");
    assert!(t.contains("translation units"), "{t}");
    let s = parse_funcmap_section(b"U:1:a\nR:2:extra_payload_count=1\n\0");
    assert!(s.problem_texts()[0].contains("R: row names marker ID 2"));
    let s = parse_funcmap_section(b"X:bad\n\0");
    assert!(matches!(s, FuncmapState::Malformed(_)));
}

#[test]
fn flags_to_target_id() {
    assert_eq!(
        elf::target_id_of_flags(0x53f, 2),
        "amdgcn-amd-amdhsa--gfx90a"
    );
    assert_eq!(
        elf::target_id_of_flags(0x03f | (2 << 8) | (3 << 10), 2),
        "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
    );
    assert_eq!(
        elf::target_id_of_flags(0x41, 2),
        "amdgcn-amd-amdhsa--gfx1100"
    );
    assert_eq!(demangle("_Z6kernelPf"), "kernel(float*)");
    assert_eq!(demangle("plain"), "plain");
}

#[test]
fn archives_skip_non_elf_members_and_never_panic() {
    let mut a = b"!<arch>\n".to_vec();
    let member = |name: &str, data: &[u8]| {
        let mut h = format!(
            "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            0,
            0,
            0,
            644,
            data.len()
        )
        .into_bytes();
        h.extend_from_slice(data);
        if data.len() % 2 == 1 {
            h.push(b'\n');
        }
        h
    };
    a.extend(member("notes.txt/", b"hello"));
    a.extend(member("x.o/", b"\x7fELF\x01\x01"));
    assert!(read_bytes(&a[..8 + 60 + 6], "lib.a").unwrap().is_empty());
    for n in 0..a.len() {
        let _ = read_bytes(&a[..n], "lib.a");
    }
    let e = read_bytes(&a, "lib.a").unwrap_err().to_string();
    assert!(e.contains("lib.a(x.o)"), "{e}");
}

/// The JSON reports spell kinds through serde enums, with the names `EntryKind::json_name` and
/// `ReqKind::name` give (and docs/check-json.md documents).
#[test]
fn report_kinds_are_serde_enums_with_the_documented_names() {
    for k in EntryKind::ALL {
        let json = serde_json::to_value(k).unwrap();
        assert_eq!(json, k.json_name(), "{k:?}");
        assert_eq!(serde_json::from_value::<EntryKind>(json).unwrap(), k);
    }
    for (name, k) in crate::require::ReqKind::ALL {
        let json = serde_json::to_value(k).unwrap();
        assert_eq!(json, *name, "{k:?}");
        assert_eq!(k.name(), *name);
    }
}

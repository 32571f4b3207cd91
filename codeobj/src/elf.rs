//! ELF: host binaries (their `.hip_fatbin` and rdc bundle sections) and AMDGPU code objects.

use object::elf;
use object::read::elf::{ElfFile64, FileHeader, SectionHeader};
use object::{LittleEndian as LE, Object, ObjectSection, ObjectSymbol, SymbolKind as OSymKind};

use crate::{
    arch_of_target_id, bundle, parse_funcmap_section, CodeObject, Error, FuncmapState, Symbol,
    SymbolKind, SECTION_NAME,
};

pub const BITCODE_MAGIC: &[u8] = b"BC\xC0\xDE";
pub const BITCODE_WRAPPER_MAGIC: &[u8] = b"\xDE\xC0\x17\x0B";
/// Prefix of the per-target sections of `-fgpu-rdc -c` objects.
pub const RDC_SECTION_PREFIX: &str = "__CLANG_OFFLOAD_BUNDLE__";

/// Runs `f` on `d`, copied to an 8-byte aligned buffer when `d` is not aligned (archive members,
/// decompressed bundles): the ELF reader needs aligned headers.
fn with_aligned<R>(d: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    if d.as_ptr().align_offset(8) == 0 {
        return f(d);
    }
    let mut buf = vec![0u64; d.len().div_ceil(8)];
    // SAFETY: the u64 buffer has at least d.len() bytes; u8 has no alignment or validity needs.
    let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), d.len()) };
    bytes.copy_from_slice(d);
    f(bytes)
}

/// Whether an ELF image is an AMDGPU code object (64-bit, little endian, e_machine 0xE0).
pub fn is_amdgpu(d: &[u8]) -> bool {
    d.len() >= 20 && d[4] == 2 && d[5] == 1 && u16::from_le_bytes([d[18], d[19]]) == elf::EM_AMDGPU
}

/// A host ELF: code objects of `.hip_fatbin` and of rdc per-target sections.
pub fn read_host(d: &[u8], origin: &str, out: &mut Vec<CodeObject>) -> Result<(), Error> {
    with_aligned(d, |d| {
        check_class(d, origin)?;
        let file = ElfFile64::<LE>::parse(d)
            .map_err(|e| Error::corrupt(origin, 0, format!("bad ELF file: {e}")))?;
        for sec in device_sections(&file) {
            let data = sec
                .range
                .and_then(|(off, size)| d.get(off as usize..off.checked_add(size)? as usize))
                .ok_or_else(|| sec.outside(origin))?;
            read_device_section(&sec.name, data, origin, out)?;
        }
        Ok(())
    })
}

/// [`read_host`] on a host ELF file of `len` bytes, reading no more of it than its headers and
/// the sections that hold device code (`pread`, each into memory allocated fallibly): a host
/// binary of gigabytes costs what its `.hip_fatbin` weighs, not its size.
pub fn read_host_file(
    file: &std::fs::File,
    len: u64,
    head: &[u8],
    origin: &str,
    out: &mut Vec<CodeObject>,
) -> Result<(), Error> {
    check_class(head, origin)?;
    let io = |source| Error::Io {
        path: origin.to_string(),
        source,
    };
    // Headers, section headers and names are read as the parser asks, and cached.
    let cache = object::read::ReadCache::new(file);
    let elf = ElfFile64::<LE, _>::parse(&cache)
        .map_err(|e| Error::corrupt(origin, 0, format!("bad ELF file: {e}")))?;
    for sec in device_sections(&elf) {
        let (off, size) = sec
            .range
            .filter(|(off, size)| off.checked_add(*size).is_some_and(|e| e <= len))
            .ok_or_else(|| sec.outside(origin))?;
        if size > crate::MAX_FILE_BYTES {
            return Err(Error::corrupt(
                origin,
                sec.sh_offset,
                format!(
                    "section {} is {size} bytes; at most {} are read",
                    sec.name,
                    crate::MAX_FILE_BYTES
                ),
            ));
        }
        let data = sqtt_files::input::read_at(file, off, size as usize).map_err(io)?;
        if (data.len() as u64) < size {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "it shrank while it was read (section {} cut short)",
                    sec.name
                ),
            )));
        }
        read_device_section(&sec.name, &data, origin, out)?;
    }
    Ok(())
}

fn check_class(d: &[u8], origin: &str) -> Result<(), Error> {
    if d.len() < 6 || d[4] != 2 || d[5] != 1 {
        return Err(Error::corrupt(
            origin,
            4,
            "only 64-bit little-endian ELF files are supported",
        ));
    }
    Ok(())
}

/// A section of a host ELF that holds device code, and where its bytes lie in the file.
struct DeviceSection {
    name: String,
    /// `(offset, size)` in the file; `None` when the header's range cannot be (it overflows).
    range: Option<(u64, u64)>,
    /// The section header's `sh_offset`, for messages.
    sh_offset: u64,
}

impl DeviceSection {
    fn outside(&self, origin: &str) -> Error {
        Error::corrupt(
            origin,
            self.sh_offset,
            format!("section {} lies outside the file", self.name),
        )
    }
}

/// `.hip_fatbin` and the rdc per-target sections (`__CLANG_OFFLOAD_BUNDLE__<id>`, the host's
/// skipped), in section order.
fn device_sections<'d, R: object::ReadRef<'d>>(file: &ElfFile64<'d, LE, R>) -> Vec<DeviceSection> {
    let mut v = Vec::new();
    for s in file.sections() {
        let Ok(name) = s.name() else { continue };
        let wanted = name == ".hip_fatbin"
            || name
                .strip_prefix(RDC_SECTION_PREFIX)
                .is_some_and(|id| !id.starts_with("host-"));
        if !wanted {
            continue;
        }
        let h = s.elf_section_header();
        let range = if h.sh_type(LE) == elf::SHT_NOBITS {
            Some((0, 0))
        } else {
            let (off, size) = (h.sh_offset(LE), h.sh_size(LE));
            off.checked_add(size).map(|_| (off, size))
        };
        v.push(DeviceSection {
            name: name.to_string(),
            range,
            sh_offset: h.sh_offset(LE),
        });
    }
    v
}

/// The code objects of one device section of a host ELF.
fn read_device_section(
    name: &str,
    data: &[u8],
    origin: &str,
    out: &mut Vec<CodeObject>,
) -> Result<(), Error> {
    if name == ".hip_fatbin" {
        return bundle::walk_fatbin(data, origin, ".hip_fatbin bundle", out);
    }
    let Some(id) = name.strip_prefix(RDC_SECTION_PREFIX) else {
        return Ok(());
    };
    let location = format!("section {name}");
    let target_id = bundle::target_id_of_bundle_id(id);
    if data.starts_with(b"\x7fELF") && is_amdgpu(data) {
        out.push(read_code_object(
            data,
            origin,
            &location,
            None,
            Some(target_id),
        )?);
    } else if data.starts_with(bundle::MAGIC) || data.starts_with(bundle::CCOB_MAGIC) {
        bundle::walk_fatbin(data, origin, &location, out)?;
    } else {
        out.push(bitcode_object(
            data,
            &location,
            None,
            Some(id.into()),
            &target_id,
        ));
    }
    Ok(())
}

/// A not-yet-linked bitcode module.
pub fn bitcode_object(
    d: &[u8],
    location: &str,
    bundle_index: Option<usize>,
    bundle_entry_id: Option<String>,
    target_id: &str,
) -> CodeObject {
    CodeObject {
        location: format!("{location} (LLVM bitcode)"),
        bundle_index,
        bundle_entry_id,
        target_id: target_id.to_string(),
        arch: arch_of_target_id(target_id),
        funcmap: FuncmapState::NotLinked,
        symbols: Vec::new(),
        size: d.len() as u64,
        code: crate::cost::CodeFacts::default(),
    }
}

/// An AMDGPU code object.
pub fn read_code_object(
    d: &[u8],
    origin: &str,
    location: &str,
    bundle: Option<(usize, String)>,
    target_id: Option<String>,
) -> Result<CodeObject, Error> {
    let ctx = |what: String| Error::Corrupt {
        origin: origin.to_string(),
        offset: 0,
        reason: format!("{location}: {what}"),
    };
    if d.len() as u64 > bundle::MAX_CODE_OBJECT_BYTES {
        return Err(ctx(format!(
            "a code object of {} bytes; at most {} are read",
            d.len(),
            bundle::MAX_CODE_OBJECT_BYTES
        )));
    }
    let found = Found {
        location,
        bundle,
        target_id,
    };
    with_aligned(d, |d| read_aligned(d, &ctx, found))
}

/// Where a code object was found, as its [`CodeObject`] tells.
struct Found<'a> {
    location: &'a str,
    /// Its bundle's index and entry id, when it came from a bundle.
    bundle: Option<(usize, String)>,
    /// The target id its bundle entry or section names (else its ELF flags give it).
    target_id: Option<String>,
}

/// [`read_code_object`] on 8-byte aligned bytes; `ctx` makes the errors.
fn read_aligned(
    d: &[u8],
    ctx: &dyn Fn(String) -> Error,
    Found {
        location,
        bundle,
        target_id,
    }: Found,
) -> Result<CodeObject, Error> {
    if !is_amdgpu(d) {
        return Err(ctx(
            "not an AMDGPU code object (e_machine is not 0xE0)".into()
        ));
    }
    let file = ElfFile64::<LE>::parse(d).map_err(|e| ctx(format!("bad ELF file: {e}")))?;
    let header = file.elf_header();
    let flags = header.e_flags(LE);
    let abi = header.e_ident().abi_version;
    let from_flags = target_id_of_flags(flags, abi);
    let target_id = target_id.unwrap_or_else(|| from_flags.clone());
    let mut arch = arch_of_target_id(&target_id);
    if arch.is_empty() {
        arch = arch_of_target_id(&from_flags);
    }

    let funcmap = match file.section_by_name(SECTION_NAME) {
        Some(s) => {
            let data = s
                .data()
                .map_err(|e| ctx(format!("{SECTION_NAME} lies outside the code object: {e}")))?;
            parse_funcmap_section(data)
        }
        None => FuncmapState::Missing,
    };

    let mut syms: Vec<(String, u64, u64, OSymKind)> = Vec::new();
    let mut push = |s: object::read::elf::ElfSymbol64<'_, '_, LE>| {
        if let Ok(n) = s.name() {
            if !n.is_empty() {
                syms.push((n.to_string(), s.address(), s.size(), s.kind()));
            }
        }
    };
    let mut any = false;
    for s in file.symbols() {
        any = true;
        push(s);
    }
    if !any {
        for s in file.dynamic_symbols() {
            push(s);
        }
    }
    let descriptors: std::collections::HashSet<&str> = syms
        .iter()
        .filter_map(|(n, ..)| n.strip_suffix(".kd"))
        .collect();
    let mut symbols: Vec<Symbol> = syms
        .iter()
        .filter(|(_, _, _, k)| *k == OSymKind::Text)
        .map(|(n, a, s, _)| Symbol {
            name: n.clone(),
            vaddr: *a,
            size: *s,
            kind: if descriptors.contains(n.as_str()) {
                SymbolKind::Kernel
            } else {
                SymbolKind::Function
            },
        })
        .collect();
    symbols.sort_by(|a, b| (a.vaddr, &a.name).cmp(&(b.vaddr, &b.name)));
    symbols.dedup_by(|a, b| a.name == b.name && a.vaddr == b.vaddr);

    let packed = funcmap.map().is_some_and(|m| m.clock_layout.is_some());
    let target = sqtt_gfx::Target::parse(&target_id)
        .or_else(|| sqtt_gfx::Target::parse(&from_flags))
        .map(|(t, _)| t);
    let code = crate::cost::CodeFacts::read(&file, target, packed);
    let (bundle_index, bundle_entry_id) = match bundle {
        Some((i, id)) => (Some(i), Some(id)),
        None => (None, None),
    };
    Ok(CodeObject {
        location: location.to_string(),
        bundle_index,
        bundle_entry_id,
        target_id,
        arch,
        funcmap,
        symbols,
        size: d.len() as u64,
        code,
    })
}

/// The target id a code object's `e_flags` describe.
pub fn target_id_of_flags(flags: u32, abi_version: u8) -> String {
    let mach = flags & 0xff;
    let name = mach_name(mach)
        .map(str::to_string)
        .unwrap_or_else(|| format!("unknown-mach-{mach:#x}"));
    let mut id = format!("amdgcn-amd-amdhsa--{name}");
    // Code object v4 and later (ABI version >= 2): two-bit feature fields.
    if abi_version >= 2 {
        let feat = |v: u32| match v {
            2 => Some('-'),
            3 => Some('+'),
            _ => None,
        };
        if let Some(c) = feat((flags >> 10) & 3) {
            id.push_str(&format!(":sramecc{c}"));
        }
        if let Some(c) = feat((flags >> 8) & 3) {
            id.push_str(&format!(":xnack{c}"));
        }
    } else {
        if flags & 0x200 != 0 {
            id.push_str(":sramecc+");
        }
        if flags & 0x100 != 0 {
            id.push_str(":xnack+");
        }
    }
    id
}

/// Processor name of an `EF_AMDGPU_MACH` value (sqtt-gfx's table).
pub fn mach_name(mach: u32) -> Option<&'static str> {
    sqtt_gfx::Target::by_mach(mach).map(|t| t.name)
}

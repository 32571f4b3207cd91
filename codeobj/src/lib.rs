//! Code objects out of anything a HIP build produces, with their `.sqtt_funcmap`.
//!
//! [`read_path`] and [`read_bytes`] accept:
//! - host executables, shared libraries, `.o` files (ELF64) and static libraries (`ar`): the `.hip_fatbin` section holds
//!   one offload bundle per translation unit, each at a 4096-byte boundary, walked by the sizes in
//!   the bundle headers (never by scanning for the magic);
//! - `-fgpu-rdc -c` objects: per-target `__CLANG_OFFLOAD_BUNDLE__<id>` sections holding LLVM
//!   bitcode, reported as [`FuncmapState::NotLinked`];
//! - bare AMDGPU code objects (ELF `e_machine` 0xE0), e.g. rocprofv3's `*_code_object_id_N.out`;
//! - plain `__CLANG_OFFLOAD_BUNDLE__` bundle files and compressed `CCOB` bundles (v1-v3, zlib
//!   and zstd), alone or inside `.hip_fatbin`;
//! - bare LLVM bitcode (reported as not yet linked).
//!
//! Reading runs no external tool, reads the file once (with [`sqtt_files::input`]), and never
//! panics on corrupt input: every inconsistency is an [`Error`] naming the file, the offset and what is wrong.
//!
//! The funcmap is parsed and validated by `sqtt-markers` (one parser for the format). The
//! [`table`] module renders the funcmap table (docs/driver.md, `--check`), [`report`] holds the
//! versioned JSON report types and [`require`] the `--require KIND:GLOB` assertions, so the trace
//! tools reuse all of it; [`cost`] reads what each kernel costs (`--check --cost`).

use std::path::Path;

use sqtt_files::input;

mod archive;
pub mod bundle;
pub mod check;
pub mod cost;
mod elf;
pub mod glob;
#[cfg(feature = "cli")]
pub mod manpage;
pub mod report;
pub mod require;
pub mod table;

pub use sqtt_markers::{Entry, EntryKind, Funcmap, ParseError, ValidationError};

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: offset {offset:#x}: {reason}")]
    Corrupt {
        origin: String,
        offset: u64,
        reason: String,
    },
    #[error("{origin}: not an ELF file, static library, offload bundle, compressed bundle or code object")]
    Unrecognised { origin: String },
}

impl Error {
    pub(crate) fn corrupt(origin: &str, offset: u64, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            origin: origin.to_string(),
            offset,
            reason: reason.into(),
        }
    }
}

/// What the funcmap of one code object looks like.
#[derive(Debug, Clone, PartialEq)]
pub enum FuncmapState {
    /// LLVM bitcode of an `-fgpu-rdc -c` object: the device link has not happened yet, so there is
    /// no final funcmap (not an error).
    NotLinked,
    /// The code object has no `.sqtt_funcmap` section.
    Missing,
    /// A row could not be read.
    Malformed(ParseError),
    /// Parsed; `problems` is what validation found (empty: valid).
    Present {
        map: Funcmap,
        problems: Vec<ValidationError>,
        /// How many NUL-terminated funcmaps the section joins: 1 normally, one per translation
        /// unit after an `-fgpu-rdc` device link.
        parts: usize,
    },
}

impl FuncmapState {
    /// A valid funcmap.
    pub fn is_valid(&self) -> bool {
        matches!(self, FuncmapState::Present { problems, .. } if problems.is_empty())
    }

    pub fn map(&self) -> Option<&Funcmap> {
        match self {
            FuncmapState::Present { map, .. } => Some(map),
            _ => None,
        }
    }

    /// Short status word: `ok`, `missing`, `invalid`, `not_linked`.
    pub fn status(&self) -> &'static str {
        match self {
            FuncmapState::NotLinked => "not_linked",
            FuncmapState::Missing => "missing",
            FuncmapState::Malformed(_) => "invalid",
            FuncmapState::Present { problems, .. } if problems.is_empty() => "ok",
            FuncmapState::Present { .. } => "invalid",
        }
    }

    /// Every problem as a sentence (empty when valid or not linked).
    pub fn problem_texts(&self) -> Vec<String> {
        match self {
            FuncmapState::NotLinked => Vec::new(),
            FuncmapState::Missing => vec![format!("no {} section", SECTION_NAME)],
            FuncmapState::Malformed(e) => vec![e.to_string()],
            FuncmapState::Present {
                problems, parts, ..
            } => problems
                .iter()
                .map(|p| {
                    if *parts > 1 && matches!(p, ValidationError::DuplicateId { .. }) {
                        format!(
                            "{p} (collision between the funcmaps of {parts} translation units \
                             joined by an -fgpu-rdc link)"
                        )
                    } else {
                        p.to_string()
                    }
                })
                .collect(),
        }
    }
}

/// The name of the funcmap section.
pub const SECTION_NAME: &str = sqtt_markers::funcmap::SECTION_NAME;

/// Kind of a symbol of a code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolKind {
    /// A kernel entry point (it has a `<name>.kd` kernel descriptor).
    Kernel,
    /// Any other function.
    Function,
}

/// A function symbol of a code object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub vaddr: u64,
    pub size: u64,
    pub kind: SymbolKind,
}

/// One AMDGPU code object (or one not-yet-linked bitcode module).
#[derive(Debug, Clone, PartialEq)]
pub struct CodeObject {
    /// Where it was found inside the file, e.g. `.hip_fatbin bundle 0 entry
    /// hipv4-amdgcn-amd-amdhsa--gfx90a` or `code object` for a bare one.
    pub location: String,
    /// Index of the offload bundle (translation unit) in `.hip_fatbin`, when it came from one.
    pub bundle_index: Option<usize>,
    /// The offload-bundle entry id, e.g. `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`.
    pub bundle_entry_id: Option<String>,
    /// Target id: triple and processor with features, e.g. `amdgcn-amd-amdhsa--gfx90a:xnack-`.
    pub target_id: String,
    /// Processor, e.g. `gfx90a`.
    pub arch: String,
    /// The funcmap and its validation.
    pub funcmap: FuncmapState,
    /// Function symbols (kernels and other functions), sorted by address.
    pub symbols: Vec<Symbol>,
    /// Size of the code object (or bitcode) in bytes.
    pub size: u64,
    /// What its metadata and code say about each kernel's cost (empty for bitcode).
    pub code: cost::CodeFacts,
}

impl CodeObject {
    /// The symbol of that name.
    pub fn symbol(&self, name: &str) -> Option<&Symbol> {
        self.symbols.iter().find(|s| s.name == name)
    }

    /// Address of a function or kernel.
    pub fn vaddr_of(&self, name: &str) -> Option<u64> {
        self.symbol(name).map(|s| s.vaddr)
    }

    /// Kernel symbols.
    pub fn kernels(&self) -> impl Iterator<Item = &Symbol> {
        self.symbols.iter().filter(|s| s.kind == SymbolKind::Kernel)
    }

    /// Whether the arch or target id matches `want` (`gfx90a` matches `gfx90a:xnack-`).
    pub fn matches_arch(&self, want: &str) -> bool {
        if want == self.arch {
            return true;
        }
        let proc_and_features = sqtt_gfx::processor_of_target_id(&self.target_id);
        want == proc_and_features || want == self.target_id
    }
}

/// The largest file [`read_path`] reads (8 GiB).
pub const MAX_FILE_BYTES: u64 = 8 << 30;

/// Reads every code object of a file. Only a regular file is read (a FIFO, a directory, a device
/// or a `/proc` file is an error saying what it is), with `pread` into memory, never mapped: a
/// file rewritten or truncated while it is read gives an error or stale data, never a signal. A
/// file whose first bytes are no known format is refused before the rest is read.
pub fn read_path(path: &Path) -> Result<Vec<CodeObject>, Error> {
    let origin = path.display().to_string();
    let io = |source| Error::Io {
        path: origin.clone(),
        source,
    };
    let (file, len) = input::open_regular(path).map_err(io)?;
    if len == 0 {
        return Err(Error::corrupt(&origin, 0, "the file is empty"));
    }
    let head = input::read_at(&file, 0, 64).map_err(io)?;
    if !is_known_format(&head) {
        return Err(Error::Unrecognised { origin });
    }
    if head.starts_with(b"\x7fELF") && !elf::is_amdgpu(&head) {
        // A host binary: only its headers and device sections are read, whatever its size.
        let mut out = Vec::new();
        elf::read_host_file(&file, len, &head, &origin, &mut out)?;
        return Ok(out);
    }
    if head.starts_with(b"\x7fELF") && len > bundle::MAX_CODE_OBJECT_BYTES {
        return Err(Error::corrupt(
            &origin,
            0,
            format!(
                "a code object of {len} bytes; at most {} are read",
                bundle::MAX_CODE_OBJECT_BYTES
            ),
        ));
    }
    if len > MAX_FILE_BYTES {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("it is {len} bytes; at most {MAX_FILE_BYTES} bytes are read"),
        )));
    }
    let data = input::read_all(&file, len).map_err(io)?;
    read_bytes(&data, &origin)
}

fn is_known_format(data: &[u8]) -> bool {
    [
        &b"\x7fELF"[..],
        archive::MAGIC,
        bundle::MAGIC,
        bundle::CCOB_MAGIC,
        elf::BITCODE_MAGIC,
        elf::BITCODE_WRAPPER_MAGIC,
    ]
    .iter()
    .any(|m| data.starts_with(m))
}

/// Reads every code object of a file's contents. `origin` names the input in error messages.
pub fn read_bytes(data: &[u8], origin: &str) -> Result<Vec<CodeObject>, Error> {
    let mut out = Vec::new();
    if data.starts_with(b"\x7fELF") {
        if elf::is_amdgpu(data) {
            out.push(elf::read_code_object(
                data,
                origin,
                "code object",
                None,
                None,
            )?);
        } else {
            elf::read_host(data, origin, &mut out)?;
        }
    } else if data.starts_with(archive::MAGIC) {
        archive::read(data, origin, &mut out)?;
    } else if data.starts_with(bundle::MAGIC) || data.starts_with(bundle::CCOB_MAGIC) {
        bundle::walk_fatbin(data, origin, "bundle", &mut out)?;
    } else if data.starts_with(elf::BITCODE_MAGIC) || data.starts_with(elf::BITCODE_WRAPPER_MAGIC) {
        out.push(elf::bitcode_object(data, "bitcode", None, None, ""));
    } else {
        return Err(Error::Unrecognised {
            origin: origin.to_string(),
        });
    }
    Ok(out)
}

/// Parses the bytes of a `.sqtt_funcmap` section. After an `-fgpu-rdc` device link the section
/// joins one NUL-terminated funcmap per translation unit: each is parsed by `sqtt-markers`, rows
/// repeated identically are kept once, and the joined map is validated, so IDs that collide
/// across translation units are reported as duplicates.
pub fn parse_funcmap_section(bytes: &[u8]) -> FuncmapState {
    let mut parts = 0usize;
    let mut merged = Funcmap::default();
    for chunk in bytes.split(|b| *b == 0) {
        if chunk.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        parts += 1;
        let map = match Funcmap::parse(chunk) {
            Ok(m) => m,
            Err(e) => return FuncmapState::Malformed(e),
        };
        if parts == 1 {
            merged = map;
            continue;
        }
        for e in map.entries {
            if !merged.entries.contains(&e) {
                merged.entries.push(e);
            }
        }
        for p in map.payloads {
            if !merged.payloads.contains(&p) {
                merged.payloads.push(p);
            }
        }
        merged.wave_size = merged.wave_size.or(map.wave_size);
        merged.clock_layout = merged.clock_layout.or(map.clock_layout);
        merged.malformed_layout = merged.malformed_layout.or(map.malformed_layout);
    }
    let problems = merged.validate();
    FuncmapState::Present {
        map: merged,
        problems,
        parts: parts.max(1),
    }
}

/// `amdgcn-amd-amdhsa--gfx90a:xnack-` -> `gfx90a`.
pub fn arch_of_target_id(target_id: &str) -> String {
    sqtt_gfx::arch_of_target_id(target_id).to_string()
}

/// Demangles an Itanium C++ name; other names come back unchanged.
pub fn demangle(name: &str) -> String {
    if !name.starts_with("_Z") {
        return name.to_string();
    }
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|s| s.demangle(&cpp_demangle::DemangleOptions::default()).ok())
        .unwrap_or_else(|| name.to_string())
}

#[cfg(test)]
mod tests;

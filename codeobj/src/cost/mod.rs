//! What instrumentation costs each kernel, read from the code object before it runs:
//! registers, scratch and LDS as the AMDGPU metadata has them, occupancy by the target's rules as
//! the compiler computes it, instructions and code bytes (the kernel and every function it calls,
//! found through its `s_getpc_b64` address computations), trace instructions and the markers they
//! write by kind; against a plain build, the difference, and the limits of a CI gate
//! (`sqtt-hipcc --check --cost`, docs/check-json.md).
//!
//! [`CodeFacts`] is read with every code object (cheap: one pass over the code with the length
//! decoder of [`isa`]); [`kernel_costs`] turns it into the report's figures.

pub mod isa;
pub mod metadata;
pub mod occupancy;
pub mod report;

use std::collections::HashMap;

use object::read::elf::ElfFile64;
use object::{LittleEndian as LE, Object, ObjectSection, ObjectSymbol, SectionIndex, SymbolKind};
use serde::{Deserialize, Serialize};

use crate::require::ReqKind;
use crate::{CodeObject, Funcmap};
pub use metadata::KernelMetadata;
pub use occupancy::{KernelNeeds, Rules};

/// The code of one function symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionCode {
    pub name: String,
    pub address: u64,
    /// The size of its code: the symbol's, when the code lies in its section; 0 when it does
    /// not (a corrupt symbol table, whose sizes would add up past any file).
    pub bytes: u64,
    /// The scan of its code; `None` when the target's encodings are not decoded or the code
    /// lies outside its section.
    pub scan: Option<isa::Scan>,
}

/// What a code object says about its kernels' cost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeFacts {
    /// `amdhsa.kernels` of the metadata note.
    pub kernels: Vec<KernelMetadata>,
    /// Why the metadata could not be read, if it could not.
    pub metadata_error: Option<String>,
    /// The LLVM major of the compiler that built it (`.comment`).
    pub llvm_major: Option<u32>,
    /// Per kernel descriptor symbol: whether the kernel runs in WGP mode (gfx10+).
    pub wgp_mode: Vec<(String, bool)>,
    /// LLVM 20+ resource symbols: (function, `num_vgpr`, `num_agpr`).
    pub arch_vgprs: Vec<(String, u32, Option<u32>)>,
    /// Every function symbol with code.
    pub functions: Vec<FunctionCode>,
    /// Addresses are final (an executable code object, not a relocatable `.o`).
    pub linked: bool,
}

fn section_bytes<'d>(
    file: &ElfFile64<'d, LE>,
    index: SectionIndex,
    address: u64,
    len: u64,
) -> Option<&'d [u8]> {
    let s = file.section_by_index(index).ok()?;
    let data = s.data().ok()?;
    let start = usize::try_from(address.checked_sub(s.address())?).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    data.get(start..end)
}

impl CodeFacts {
    /// Reads the facts of an AMDGPU code object. `target` selects the instruction decoder;
    /// `packed` says the funcmap packs a clock into headers. Never fails: what cannot be read
    /// is left out or named in `metadata_error`.
    pub fn read(
        file: &ElfFile64<'_, LE>,
        target: Option<&sqtt_gfx::Target>,
        packed: bool,
    ) -> CodeFacts {
        let mut facts = CodeFacts {
            linked: file.elf_header().e_type.get(LE) != object::elf::ET_REL,
            ..CodeFacts::default()
        };
        match read_metadata(file) {
            Some(Ok(k)) => facts.kernels = k,
            Some(Err(e)) => facts.metadata_error = Some(e),
            None => facts.metadata_error = Some("no AMDGPU metadata note".into()),
        }
        if let Some(c) = file.section_by_name(".comment").and_then(|s| s.data().ok()) {
            facts.llvm_major = metadata::producer_llvm_major(c);
        }
        let family = target.and_then(isa::Family::of);
        let mut seen = std::collections::HashSet::new();
        let mut resource_values: Vec<(String, &'static str, u32)> = Vec::new();
        let symbols = if file.symbols().next().is_some() {
            file.symbols()
        } else {
            file.dynamic_symbols()
        };
        for sym in symbols {
            let Ok(name) = sym.name() else { continue };
            if name.is_empty() {
                continue;
            }
            if let Some(kernel) = name.strip_suffix(".kd") {
                let rsrc1 = sym.section_index().and_then(|i| {
                    let b = section_bytes(file, i, sym.address(), 64)?;
                    let at = metadata::KD_RSRC1_OFFSET;
                    Some(u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]))
                });
                if let Some(r) = rsrc1 {
                    facts
                        .wgp_mode
                        .push((kernel.to_string(), r & metadata::RSRC1_WGP_MODE != 0));
                }
                continue;
            }
            if sym.section_index().is_none() && sym.kind() != SymbolKind::Text {
                for suffix in [".num_vgpr", ".num_agpr"] {
                    if let Some(f) = name.strip_suffix(suffix) {
                        if let Ok(v) = u32::try_from(sym.address()) {
                            resource_values.push((f.to_string(), suffix, v));
                        }
                    }
                }
                continue;
            }
            if sym.kind() != SymbolKind::Text || !seen.insert(name) {
                continue;
            }
            let (address, bytes) = (sym.address(), sym.size());
            let code = sym
                .section_index()
                .and_then(|i| section_bytes(file, i, address, bytes));
            let scan = match (family, code) {
                (Some(fam), Some(code)) => {
                    Some(isa::scan(fam, code, address, packed, facts.linked))
                }
                _ => None,
            };
            facts.functions.push(FunctionCode {
                name: name.to_string(),
                address,
                bytes: code.map_or(0, |c| c.len() as u64),
                scan,
            });
        }
        for (f, suffix, v) in &resource_values {
            if *suffix != ".num_vgpr" {
                continue;
            }
            let agprs = resource_values
                .iter()
                .find(|(g, s, _)| g == f && *s == ".num_agpr")
                .map(|(_, _, a)| *a);
            facts.arch_vgprs.push((f.clone(), *v, agprs));
        }
        facts.functions.sort_by_key(|f| f.address);
        facts
    }

    /// The functions a kernel runs: itself, then every function its code (and theirs) computes
    /// the address of, in address order.
    pub fn reachable(&self, kernel: &str) -> Vec<&FunctionCode> {
        self.index().reachable(kernel)
    }

    fn index(&self) -> FunctionIndex<'_> {
        FunctionIndex {
            by_name: self
                .functions
                .iter()
                .map(|f| (f.name.as_str(), f))
                .collect(),
            by_address: self.functions.iter().map(|f| (f.address, f)).collect(),
        }
    }
}

/// The functions of a code object by name and by address.
struct FunctionIndex<'a> {
    by_name: HashMap<&'a str, &'a FunctionCode>,
    by_address: HashMap<u64, &'a FunctionCode>,
}

impl<'a> FunctionIndex<'a> {
    fn reachable(&self, kernel: &str) -> Vec<&'a FunctionCode> {
        let mut seen: Vec<&FunctionCode> = Vec::new();
        let mut todo: Vec<&FunctionCode> = self.by_name.get(kernel).copied().into_iter().collect();
        while let Some(f) = todo.pop() {
            if seen.iter().any(|s| std::ptr::eq(*s, f)) {
                continue;
            }
            seen.push(f);
            for t in f.scan.iter().flat_map(|s| &s.pc_targets) {
                if let Some(g) = self.by_address.get(t) {
                    todo.push(g);
                }
            }
        }
        seen.sort_by_key(|f| f.address);
        seen
    }
}

fn read_metadata(file: &ElfFile64<'_, LE>) -> Option<Result<Vec<KernelMetadata>, String>> {
    use object::read::elf::SectionHeader;
    for s in file.elf_section_table().iter() {
        let Ok(Some(mut notes)) = s.notes(LE, file.data()) else {
            continue;
        };
        loop {
            match notes.next() {
                Ok(Some(n)) => {
                    if n.name() == metadata::NOTE_OWNER
                        && n.n_type(LE) == metadata::NT_AMDGPU_METADATA
                    {
                        return Some(metadata::parse_note(n.desc()));
                    }
                }
                Ok(None) => break,
                Err(e) => return Some(Err(format!("bad note section: {e}"))),
            }
        }
    }
    None
}

/// The figures of one kernel, alike for a build and its baseline (docs/check-json.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figures {
    /// SGPRs (with VCC, FLAT_SCRATCH, XNACK_MASK), as `.sgpr_count`.
    pub sgprs: u32,
    /// Architectural VGPRs.
    pub vgprs: u32,
    /// AGPRs (0 on targets without).
    pub agprs: u32,
    /// Static scratch bytes per lane.
    pub scratch_bytes: u32,
    /// Static LDS bytes per work-group.
    pub lds_bytes: u32,
    /// Waves per SIMD; `null` for a target without figures.
    pub occupancy: Option<u32>,
    /// Instructions of the kernel and the functions it calls; `null` when not decoded.
    pub instructions: Option<u64>,
    /// Code bytes of the kernel and the functions it calls.
    pub code_bytes: u64,
    /// `s_ttracedata` and `s_ttracedata_imm` instructions among them.
    pub trace_instructions: Option<u64>,
}

/// The difference of two [`Figures`] (build minus baseline).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    pub sgprs: i64,
    pub vgprs: i64,
    pub agprs: i64,
    pub scratch_bytes: i64,
    pub lds_bytes: i64,
    pub occupancy: Option<i64>,
    pub instructions: Option<i64>,
    pub code_bytes: i64,
    pub trace_instructions: Option<i64>,
}

impl Figures {
    /// `self - base`.
    pub fn minus(&self, base: &Figures) -> Delta {
        let d = |a: u32, b: u32| i64::from(a) - i64::from(b);
        let du = |a: u64, b: u64| a as i64 - b as i64;
        Delta {
            sgprs: d(self.sgprs, base.sgprs),
            vgprs: d(self.vgprs, base.vgprs),
            agprs: d(self.agprs, base.agprs),
            scratch_bytes: d(self.scratch_bytes, base.scratch_bytes),
            lds_bytes: d(self.lds_bytes, base.lds_bytes),
            occupancy: self.occupancy.zip(base.occupancy).map(|(a, b)| d(a, b)),
            instructions: self
                .instructions
                .zip(base.instructions)
                .map(|(a, b)| du(a, b)),
            code_bytes: du(self.code_bytes, base.code_bytes),
            trace_instructions: self
                .trace_instructions
                .zip(base.trace_instructions)
                .map(|(a, b)| du(a, b)),
        }
    }
}

/// Trace records of a kernel's code by what they write (docs/check-json.md, `markers`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkerCounts {
    /// Enters of instrumented functions (`F:` rows).
    pub function: u64,
    /// Enters of named scopes (`U:` rows).
    pub user: u64,
    /// Named points and data markers (`P:` rows but the three below).
    pub point: u64,
    /// `barrier_signal`, `barrier_wait`, `barrier`.
    pub barrier: u64,
    /// `vmem_load`, `vmem_store`.
    pub memory: u64,
    /// Address-trace headers (`addr_trace_*`).
    pub address: u64,
    /// Plain exits (`0x1`).
    pub exits: u64,
    /// Values the funcmap does not define (numeric markers).
    pub other: u64,
    /// Values computed at run time: payloads (data, address-trace words).
    pub runtime: u64,
}

impl MarkerCounts {
    fn count(&mut self, value: Option<u32>, map: Option<&Funcmap>) {
        let Some(raw) = value else {
            self.runtime += 1;
            return;
        };
        let Some(map) = map else {
            self.other += 1;
            return;
        };
        let m = sqtt_markers::encoding::decode_marker_value(raw, map);
        if m.is_exit() {
            self.exits += 1;
            return;
        }
        let Some(row) = map.by_id(m.id).filter(|_| m.id != 0) else {
            self.other += 1;
            return;
        };
        let slot = [
            (ReqKind::Function, &mut self.function),
            (ReqKind::User, &mut self.user),
            (ReqKind::Barrier, &mut self.barrier),
            (ReqKind::Memory, &mut self.memory),
            (ReqKind::Address, &mut self.address),
            (ReqKind::Point, &mut self.point),
        ]
        .into_iter()
        .find(|(k, _)| k.covers(row))
        .map(|(_, slot)| slot);
        match slot {
            Some(s) => *s += 1,
            None => self.other += 1,
        }
    }

    /// Header records (everything but exits and run-time values).
    pub fn headers(&self) -> u64 {
        self.function
            + self.user
            + self.point
            + self.barrier
            + self.memory
            + self.address
            + self.other
    }
}

/// One kernel's cost in one build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelCost {
    pub name: String,
    pub wave_size: u32,
    pub figures: Figures,
    pub markers: MarkerCounts,
    /// The functions its code calls (directly or through others).
    pub callees: Vec<String>,
    /// What could not be read or decoded, one sentence each.
    pub notes: Vec<String>,
}

/// The cost of every kernel of a code object, in metadata order.
pub fn kernel_costs(co: &CodeObject) -> Vec<KernelCost> {
    let facts = &co.code;
    let target = sqtt_gfx::Target::parse(&co.target_id)
        .or_else(|| sqtt_gfx::Target::parse(&co.arch))
        .map(|(t, _)| t);
    let rules = Rules {
        llvm_major: facts.llvm_major,
    };
    let map = co.funcmap.map();
    let index = facts.index();
    let wgp_modes: HashMap<&str, bool> = facts
        .wgp_mode
        .iter()
        .map(|(n, w)| (n.as_str(), *w))
        .collect();
    let exact_vgprs: HashMap<&str, u32> = facts
        .arch_vgprs
        .iter()
        .map(|(n, v, _)| (n.as_str(), *v))
        .collect();
    facts
        .kernels
        .iter()
        .map(|k| {
            let mut notes = Vec::new();
            let agprs = k.agpr_count.unwrap_or(0);
            // Architectural VGPRs: LLVM 20+ says so in a symbol; else the metadata's count,
            // less the AGPRs of a unified file (the architectural part rounded up to 4 there).
            let exact = exact_vgprs.get(k.name.as_str()).copied();
            let file = target.and_then(|t| t.resources).map(|r| r.agprs);
            let vgprs = match (exact, file) {
                (Some(v), _) => v,
                (None, Some(sqtt_gfx::AgprFile::Unified)) if agprs > 0 => {
                    notes.push(
                        "VGPRs as allocated before the AGPRs (the metadata rounds them up to 4)"
                            .into(),
                    );
                    k.vgpr_count.saturating_sub(agprs)
                }
                (None, Some(sqtt_gfx::AgprFile::Separate))
                    if agprs >= k.vgpr_count && agprs > 0 =>
                {
                    notes.push(
                        "VGPRs: the metadata gives the larger of VGPRs and AGPRs, here the AGPRs"
                            .into(),
                    );
                    k.vgpr_count
                }
                _ => k.vgpr_count,
            };
            let wgp_mode = k
                .workgroup_processor_mode
                .or_else(|| wgp_modes.get(k.name.as_str()).copied())
                .unwrap_or(true);
            let needs = KernelNeeds {
                sgprs: k.sgpr_count,
                total_vgprs: k.vgpr_count,
                lds_bytes: k.group_segment_fixed_size,
                wave_size: k.wavefront_size,
                max_workgroup_size: k.max_flat_workgroup_size,
                wgp_mode,
            };
            let occupancy = target.and_then(|t| rules.occupancy(t, &needs));
            if occupancy.is_none() {
                notes.push(format!("no occupancy figures for {}", co.arch));
            }
            let functions = index.reachable(&k.name);
            if functions.is_empty() {
                notes.push(format!("no code for {} in the symbol table", k.name));
            }
            let mut instructions = Some(0u64);
            let mut trace = Some(0u64);
            let mut markers = MarkerCounts::default();
            let mut code_bytes = 0;
            for f in &functions {
                code_bytes += f.bytes;
                match &f.scan {
                    Some(s) => {
                        if let Some(e) = &s.error {
                            notes.push(format!("{}: {e}", f.name));
                        }
                        instructions = instructions.map(|n| n + s.instructions);
                        trace = trace.map(|n| n + s.trace_instructions);
                        for r in &s.records {
                            markers.count(*r, map);
                        }
                    }
                    None => {
                        instructions = None;
                        trace = None;
                    }
                }
            }
            if functions.is_empty() || instructions.is_none() {
                instructions = None;
                trace = None;
                if !functions.is_empty() {
                    notes.push(format!("the instructions of {} are not decoded", co.arch));
                }
            }
            KernelCost {
                name: k.name.clone(),
                wave_size: k.wavefront_size,
                figures: Figures {
                    sgprs: k.sgpr_count,
                    vgprs,
                    agprs,
                    scratch_bytes: k.private_segment_fixed_size,
                    lds_bytes: k.group_segment_fixed_size,
                    occupancy,
                    instructions,
                    code_bytes,
                    trace_instructions: trace,
                },
                markers,
                callees: functions
                    .iter()
                    .filter(|f| f.name != k.name)
                    .map(|f| f.name.clone())
                    .collect(),
                notes,
            }
        })
        .collect()
}

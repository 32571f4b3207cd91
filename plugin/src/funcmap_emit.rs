//! Writes the module's `.sqtt_funcmap` section (through the one writer in sqtt-markers).

use sqtt_markers::funcmap::{ClockLayout, Entry, EntryKind, SECTION_NAME};

use crate::ledger::FinalIds;
use crate::llvm::{self, Module, Value};

/// Name of the global holding the section: AMD's pass's name, so that a module instrumented by
/// either pass is recognised by both.
const GLOBAL_NAME: &str = ".sqtt_func_id_map";
/// The name this plugin used before it took AMD's.
const OLD_GLOBAL_NAME: &str = "__sqtt_funcmap";

/// AMDGPU global address space (AMD's pass: the data layout's default for globals).
const GLOBAL_ADDRSPACE: u32 = 1;

pub fn already_instrumented(m: Module) -> bool {
    m.global(GLOBAL_NAME).is_some() || m.global(OLD_GLOBAL_NAME).is_some()
}

/// `file:line` of a function's definition, when it has debug info.
pub fn definition_site(f: Value) -> Option<String> {
    let sp = f.subprogram()?;
    let file = llvm::di_file_name(sp, false);
    let base = file.rsplit('/').next().unwrap_or(&file).to_string();
    Some(format!("{base}:{}", llvm::subprogram_line(sp)))
}

pub fn kernel_entries(m: Module) -> Vec<Entry> {
    m.functions()
        .into_iter()
        .filter(|f| f.is_kernel() && !f.is_declaration())
        .map(|f| Entry {
            kind: EntryKind::Kernel,
            id: None,
            name: f.name(),
            source_loc: definition_site(f),
        })
        .collect()
}

pub fn emit(m: Module, ledger: &FinalIds, layout: Option<ClockLayout>) {
    let mut map = ledger.funcmap(kernel_entries(m));
    map.clock_layout = layout;
    m.add_section_bytes(GLOBAL_NAME, SECTION_NAME, &map.to_bytes(), GLOBAL_ADDRSPACE);
}

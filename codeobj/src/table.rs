//! The funcmap table (docs/driver.md, `--check`) and the one-line CI summary.
//!
//! ```text
//!   wave_size: 64
//!   Type        ID     Extra               Vaddr  Name
//!   ----       ---     -----               -----  ----
//! kernel         -         0  0x0000000000001900  my_kernel(float*, int)  @ k.hip:80
//!   user         1         0                   -  load_phase
//!   func         3         0                   -  helper(float)  @ k.hip:42  (inlined)
//! ```

use std::fmt::Write;

use crate::report::Summary;
use crate::{demangle, CodeObject, Entry, EntryKind, Funcmap, FuncmapState};

/// Kernel rows first (in section order), then marker rows by ID.
pub fn ordered_entries(m: &Funcmap) -> Vec<&Entry> {
    let mut v: Vec<&Entry> = m.entries.iter().collect();
    v.sort_by_key(|e| (e.kind != EntryKind::Kernel, e.id.unwrap_or(0)));
    v
}

/// The table of one code object's funcmap (empty without a funcmap).
pub fn render_table(co: &CodeObject, demangle_names: bool) -> String {
    let mut out = String::new();
    let Some(m) = co.funcmap.map() else {
        return out;
    };
    if let Some(w) = m.wave_size {
        let _ = writeln!(out, "  wave_size: {w}");
    }
    if let Some(l) = m.clock_layout {
        let _ = writeln!(
            out,
            "  shader_clock: bits={} shift={}",
            l.shader_clock_bits, l.shader_clock_shift
        );
    }
    let _ = writeln!(
        out,
        "{:>6}{:>10}{:>10}{:>20}  Name",
        "Type", "ID", "Extra", "Vaddr"
    );
    let _ = writeln!(
        out,
        "{:>6}{:>10}{:>10}{:>20}  ----",
        "----", "---", "-----", "-----"
    );
    for e in ordered_entries(m) {
        let sym = match e.kind {
            EntryKind::Kernel | EntryKind::Function => co.symbol(&e.name),
            _ => None,
        };
        let id = e.id.map(|i| i.to_string()).unwrap_or_else(|| "-".into());
        let extra = e.id.map(|i| m.payload_count(i)).unwrap_or(0);
        let vaddr = sym
            .map(|s| format!("0x{:016x}", s.vaddr))
            .unwrap_or_else(|| "-".into());
        let name = if demangle_names {
            demangle(&e.name)
        } else {
            e.name.clone()
        };
        let mut line = format!(
            "{:>6}{:>10}{:>10}{:>20}  {}",
            e.kind.label(),
            id,
            extra,
            vaddr,
            name
        );
        if let Some(loc) = &e.source_loc {
            let _ = write!(line, "  @ {loc}");
        }
        if e.kind == EntryKind::Function && sym.is_none() {
            line.push_str("  (inlined)");
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

/// Everything `sqtt-hipcc --check` prints for one code object: the heading, the table (or why
/// there is none), its problems and the summary line, then an empty line.
pub fn render_code_object(path: &str, co: &CodeObject, demangle_names: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", heading(path, co));
    match &co.funcmap {
        FuncmapState::NotLinked => {
            let _ = writeln!(
                out,
                "  not yet linked (-fgpu-rdc bitcode): check the linked binary"
            );
        }
        FuncmapState::Missing => {
            let _ = writeln!(out, "  no {} section", crate::SECTION_NAME);
        }
        _ => out.push_str(&render_table(co, demangle_names)),
    }
    for p in co.funcmap.problem_texts() {
        let _ = writeln!(out, "  problem: {p}");
    }
    let _ = writeln!(out, "{}", summary_line(path, co));
    out.push('\n');
    out
}

/// The heading line of a code object: `FILE: LOCATION [target id]`.
pub fn heading(path: &str, co: &CodeObject) -> String {
    format!("{path}: {} [{}]", co.location, co.target_id)
}

/// One line per code object for CI logs:
/// `FILE ARCH STATUS kernels=N functions=N user=N points=N payload=N wave_size=N|- clock=off|B@S`.
pub fn summary_line(path: &str, co: &CodeObject) -> String {
    let s = Summary::of(co);
    format!(
        "{path} {} {} kernels={} functions={} user={} points={} payload={} wave_size={} clock={}",
        co.arch,
        co.funcmap.status(),
        s.kernels,
        s.functions,
        s.user,
        s.points,
        s.payload_markers,
        s.wave_size
            .map(|w| w.to_string())
            .unwrap_or_else(|| "-".into()),
        s.clock_text()
    )
}

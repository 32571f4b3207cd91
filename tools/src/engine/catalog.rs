//! What the records' IDs stand for: the code objects of a ui directory, the code object and
//! kernel frame of each dispatch, and the frame name of each marker ID.

use rustc_hash::FxHashMap;
use sqtt_markers::MarkerEncoding;

use super::{Names, Options};
use crate::codeobj::{demangle, CodeObject};
use crate::diag::{kind, Diagnostics};
use crate::input::Occupancy;

/// The code object and kernel frame of a dispatch.
#[derive(Debug, Clone, Copy)]
pub(super) struct DispatchCode {
    /// Index into [`Catalog::codeobjs`]; `None` when no code object is known.
    pub co: Option<usize>,
    /// Frame name index of the kernel.
    pub kernel: u32,
}

pub(super) struct Catalog {
    pub codeobjs: Vec<CodeObject>,
    /// The marker layout of each code object.
    pub encodings: Vec<MarkerEncoding>,
    /// Per code object: frame index by marker ID (`u32::MAX`: not yet interned).
    frames: Vec<Vec<u32>>,
    /// Frames of IDs no code object names (`marker_<id>`).
    unknown_frames: FxHashMap<u32, u32>,
    pub occ: Occupancy,
    dispatch: FxHashMap<u64, DispatchCode>,
    /// The code object, when the directory has only one.
    pub single_co: Option<usize>,
    /// The kernel frame of records with no occupancy.
    pub no_occ_frame: u32,
    pub opts: Options,
    /// What was looked for, for the warning about waves with no code object.
    pub missing_hint: String,
}

/// Frame indices are kept in a table by ID below this; larger IDs are interned each time.
const FRAME_TABLE_LIMIT: u32 = 1 << 20;

impl Catalog {
    pub fn new(
        codeobjs: Vec<CodeObject>,
        occ: Occupancy,
        opts: Options,
        names: &mut Names,
        diag: &mut Diagnostics,
    ) -> Catalog {
        let encodings = codeobjs
            .iter()
            .map(|c| c.funcmap.marker_encoding())
            .collect();
        let frames = codeobjs.iter().map(|_| Vec::new()).collect();
        let single_co = (codeobjs.len() == 1).then_some(0);
        let mut dispatch = FxHashMap::default();
        for (kid, kname) in &occ.dispatches {
            let found = codeobj_of_dispatch(&codeobjs, *kid, kname, &occ, diag);
            let co = found.unwrap_or(None).or(single_co);
            if co.is_none() && found.is_ok() && !codeobjs.is_empty() {
                diag.warn(kind::NO_DISPATCH_CODEOBJ, || {
                    format!("dispatch {kid} ({kname})")
                });
            }
            let shown = opts.show(kname);
            let kernel = names.intern(if shown.is_empty() {
                "unknown_kernel"
            } else {
                &shown
            });
            dispatch.insert(*kid, DispatchCode { co, kernel });
        }
        let no_occ_frame = names.intern("unknown_kernel");
        Catalog {
            codeobjs,
            encodings,
            frames,
            unknown_frames: FxHashMap::default(),
            occ,
            dispatch,
            single_co,
            no_occ_frame,
            opts,
            missing_hint: String::new(),
        }
    }

    /// Code object and kernel frame of dispatch `kid` (one not named in `dispatches` gets
    /// them from its code object ID, or the only code object, on first sight).
    pub fn dispatch_of(&mut self, kid: u64, names: &mut Names) -> DispatchCode {
        if let Some(v) = self.dispatch.get(&kid) {
            return *v;
        }
        let co = self
            .occ
            .dispatch_codeobj
            .get(&kid)
            .and_then(|id| self.codeobjs.iter().position(|c| c.id == *id))
            .or(self.single_co);
        let name = co
            .and_then(|i| self.codeobjs[i].kernel_names().next().map(str::to_string))
            .map(|k| self.opts.show(&k))
            .unwrap_or_else(|| format!("dispatch_{kid}"));
        let v = DispatchCode {
            co,
            kernel: names.intern(&name),
        };
        self.dispatch.insert(kid, v);
        v
    }

    /// The frame name index of marker `id` of code object `co`.
    pub fn frame(&mut self, co: Option<usize>, id: u32, names: &mut Names) -> u32 {
        if let Some(ci) = co {
            // Only the IDs a code object names have a frame in its table.
            if let Some(&f) = self.frames[ci].get(id as usize).filter(|f| **f != u32::MAX) {
                return f;
            }
            if let Some(e) = self.codeobjs[ci].lookup(id).entry {
                let v = &mut self.frames[ci];
                let name = if e.kind == sqtt_markers::EntryKind::Function {
                    self.opts.show(&e.name)
                } else {
                    e.name.clone()
                };
                let f = names.intern(&name);
                if id < FRAME_TABLE_LIMIT {
                    if v.len() <= id as usize {
                        v.resize(id as usize + 1, u32::MAX);
                    }
                    v[id as usize] = f;
                }
                return f;
            }
        }
        if let Some(f) = self.unknown_frames.get(&id) {
            return *f;
        }
        let f = names.intern(&format!("marker_{id}"));
        self.unknown_frames.insert(id, f);
        f
    }
}

/// The code object of a dispatch: by the ID the directory gives (`events` or the fallback
/// name), else by kernel name when one code object (or several with the same funcmap) has it.
/// `Err` when the name is in several code objects that differ (a warning is counted).
fn codeobj_of_dispatch(
    codeobjs: &[CodeObject],
    kid: u64,
    kname: &str,
    occ: &Occupancy,
    diag: &mut Diagnostics,
) -> Result<Option<usize>, ()> {
    if let Some(id) = occ.dispatch_codeobj.get(&kid) {
        if let Some(i) = codeobjs.iter().position(|c| c.id == *id) {
            return Ok(Some(i));
        }
    }
    let matching: Vec<usize> = codeobjs
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kernel_names().any(|k| kernel_matches(k, kname)))
        .map(|(i, _)| i)
        .collect();
    let same_funcmap = |all: &[usize], first: usize| {
        all.iter()
            .all(|&i| codeobjs[i].funcmap.entries == codeobjs[first].funcmap.entries)
    };
    let Some(&first) = matching.first() else {
        // No ID and no name found: the code object of `--code-object` when there is one
        // (or several with one funcmap, as an executable built for several targets has).
        let extra: Vec<usize> = (0..codeobjs.len())
            .filter(|&i| codeobjs[i].from_option)
            .collect();
        return Ok(extra.first().copied().filter(|&f| same_funcmap(&extra, f)));
    };
    if same_funcmap(&matching, first) {
        return Ok(Some(first));
    }
    diag.warn(kind::AMBIGUOUS_KERNEL, || {
        let ids: Vec<String> = matching
            .iter()
            .map(|&i| codeobjs[i].id.to_string())
            .collect();
        format!(
            "dispatch {kid} ({kname}) matches code objects {}",
            ids.join(", ")
        )
    });
    Err(())
}

fn kernel_matches(k_row: &str, dispatch_name: &str) -> bool {
    let k = k_row.strip_suffix(".kd").unwrap_or(k_row);
    let d = dispatch_name.strip_suffix(".kd").unwrap_or(dispatch_name);
    k == d || demangle(k) == d
}

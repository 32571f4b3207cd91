//! The layout of a `rocprofv3 --att` output directory: `ui_output_*` time domains, their
//! `filenames.json`, `shaderdata_*.json`, `occupancy.json` and `code.json`, and the code object
//! files `*_code_object_id_<N>.out` beside them.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use sqtt_markers::{ClockLayout, Entry, EntryKind, Funcmap};

use crate::codeobj::{default_wave_size, read_code_object_funcmap, CodeObject};
use crate::diag::{kind, Diagnostics};
use crate::error::Error;

/// One ui directory (`ui_output_*` as rocprofv3 names it, or any directory holding
/// `filenames.json` or `shaderdata_*.json`): one SQTT time domain.
#[derive(Debug, Clone)]
pub struct UiDir {
    pub path: PathBuf,
    pub name: String,
    pub gfxip: Option<String>,
    /// `(se, file)` in reading order (by SE, then the chunk's first time, then chunk).
    pub shaderdata: Vec<(u32, PathBuf)>,
    /// `(codeobj_id, path)`: the code object files nearest this directory, one per ID.
    pub code_object_files: Vec<(u64, PathBuf)>,
    /// A dispatch's raw traces instead (`shaderdata` then lists its `.att` files by shader
    /// engine): see [`crate::raw`].
    pub raw: Option<std::sync::Arc<crate::raw::RawDomain>>,
    /// Listings of `filenames.json` that name a file listed before (each file is read once, at
    /// its first place in time order).
    pub repeated_listings: Repeated,
}

/// Repeated listings: how many, and the first file listed again.
#[derive(Debug, Clone, Default)]
pub struct Repeated {
    pub count: u64,
    pub first: Option<PathBuf>,
}

/// A whole output directory.
#[derive(Debug, Clone)]
pub struct TraceDir {
    pub root: PathBuf,
    pub ui_dirs: Vec<UiDir>,
    /// `(codeobj_id, path)` of every `*_code_object_id_<N>.out` found, by ID then path (one ID
    /// may be in several files: code object IDs are per process).
    pub code_object_files: Vec<(u64, PathBuf)>,
    /// The directories searched for code object files (recursively).
    pub searched: Vec<PathBuf>,
    /// Problems with files that were worked around (an unreadable `filenames.json`).
    pub warnings: Vec<String>,
}

/// How deep below the given directory ui directories and code objects are looked for: the
/// directories searched for them are at most this many levels below it.
const MAX_DEPTH: usize = 6;
/// How many levels below the given directory a ui directory is found at most
/// (`DIR/<host>/<pid>/<ui dir>` is 3).
pub const MAX_UI_LEVELS: usize = MAX_DEPTH + 1;

/// Ui directories and code object files under `dir`, recursively (symbolic links to
/// directories are not followed).
fn walk(
    dir: &Path,
    depth: usize,
    find_ui: bool,
    ui: &mut Vec<PathBuf>,
    cos: &mut Vec<(u64, PathBuf)>,
) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut subdirs = Vec::new();
    for entry in rd.flatten() {
        let Ok(ft) = entry.file_type() else { continue };
        let name = entry.file_name().to_string_lossy().into_owned();
        if ft.is_dir() {
            subdirs.push(entry.path());
        } else if let Some(id) = code_object_id_of(&name) {
            cos.push((id, entry.path()));
        }
    }
    for sub in subdirs {
        let named_ui = sub
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("ui_"));
        if named_ui || looks_like_ui_dir(&sub) {
            if find_ui {
                ui.push(sub.clone());
            }
            // Code objects may sit in a ui directory too; nothing else is nested there.
            walk(&sub, MAX_DEPTH, false, &mut Vec::new(), cos);
        } else if depth < MAX_DEPTH {
            walk(&sub, depth + 1, find_ui, ui, cos);
        }
    }
}

/// How many leading path components `a` and `b` share.
fn common_depth(a: &Path, b: &Path) -> usize {
    a.components()
        .zip(b.components())
        .take_while(|(x, y)| x == y)
        .count()
}

/// The largest `filenames.json` read (it is parsed whole).
pub const MAX_FILENAMES_JSON: u64 = 64 << 20;
/// The largest `code.json` read (streamed; only its funcmap rows are kept).
pub const MAX_CODE_JSON: u64 = 16 << 30;
/// The largest `shaderdata_*.json` or `occupancy.json` read (streamed).
pub const MAX_STREAMED_JSON: u64 = 1 << 40;

/// Opens an input file: only a regular file (a FIFO, a directory, a device or a `/proc` file is
/// an error saying what it is, and nothing blocks), read no further than its size when opened,
/// and at most `max` bytes (`what` names the kind of file in that message).
pub fn open_input(path: &Path, max: u64, what: &str) -> Result<std::io::Take<File>, Error> {
    use std::io::Read;
    let (file, len) = sqtt_files::input::open_regular(path).map_err(|e| Error::io(path, e))?;
    if len > max {
        return Err(Error::Malformed {
            path: path.to_path_buf(),
            reason: format!("it is {len} bytes; {what} may have at most {max} bytes"),
        });
    }
    Ok(file.take(len))
}

/// What a path that is not a directory is, for a message.
fn what_is(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let ft = meta.file_type();
    if ft.is_file() {
        "a regular file"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a directory"
    }
}

impl TraceDir {
    /// Finds the ui directories and code objects under `root`, at any depth up to a few levels
    /// (`DIR/<host>/<pid>/...`), whatever the ui directories are named. `root` may also be one
    /// ui directory itself; its parent is then searched for code objects too.
    pub fn open(root: &Path) -> Result<TraceDir, Error> {
        let meta = std::fs::metadata(root).map_err(|e| Error::io(root, e))?;
        if !meta.is_dir() {
            return Err(Error::Malformed {
                path: root.to_path_buf(),
                reason: format!(
                    "it is {}, not a directory: give the rocprofv3 --att output directory",
                    what_is(&meta)
                ),
            });
        }
        let mut ui_paths = Vec::new();
        let mut code_object_files = Vec::new();
        let mut searched = vec![root.to_path_buf()];
        if looks_like_ui_dir(root) {
            ui_paths.push(root.to_path_buf());
            walk(
                root,
                MAX_DEPTH,
                false,
                &mut Vec::new(),
                &mut code_object_files,
            );
            // The parent of a relative `ui_dir` is `""`: the working directory.
            let parent = root.parent().map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            });
            if let Some(p) = parent {
                searched.push(p.to_path_buf());
                walk(
                    p,
                    MAX_DEPTH - 1,
                    false,
                    &mut Vec::new(),
                    &mut code_object_files,
                );
            }
        } else {
            walk(root, 0, true, &mut ui_paths, &mut code_object_files);
        }
        if ui_paths.is_empty() {
            return Err(Error::NotATraceDir(root.to_path_buf()));
        }
        ui_paths.sort();
        code_object_files.sort();
        code_object_files.dedup();
        let mut ui_dirs = Vec::new();
        let mut warnings = Vec::new();
        for p in &ui_paths {
            let (mut ui, warning) = UiDir::open(p)?;
            warnings.extend(warning);
            // The nearest file of each ID: the one sharing the longest path with the ui dir.
            let mut best: BTreeMap<u64, (usize, &PathBuf)> = BTreeMap::new();
            for (id, f) in &code_object_files {
                let d = common_depth(p, f.parent().unwrap_or(f));
                match best.get(id) {
                    Some((bd, _)) if *bd >= d => {}
                    _ => {
                        best.insert(*id, (d, f));
                    }
                }
            }
            ui.code_object_files = best
                .into_iter()
                .map(|(id, (_, f))| (id, f.clone()))
                .collect();
            ui_dirs.push(ui);
        }
        // Names must tell ui dirs apart (they name the Perfetto files): a name used twice
        // becomes the path below the root.
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for u in &ui_dirs {
            *count.entry(u.name.clone()).or_default() += 1;
        }
        for u in &mut ui_dirs {
            if count[&u.name] > 1 {
                let rel = u.path.strip_prefix(root).unwrap_or(&u.path);
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                u.name = parts.join("_");
            }
        }
        Ok(TraceDir {
            root: root.to_path_buf(),
            ui_dirs,
            code_object_files,
            searched,
            warnings,
        })
    }

    /// Reads the funcmap of every code object file, once each; unreadable ones are counted in
    /// `diag`.
    pub fn read_code_objects(&self, diag: &mut Diagnostics) -> BTreeMap<PathBuf, Funcmap> {
        let mut out = BTreeMap::new();
        for (_, path) in &self.code_object_files {
            match read_code_object_funcmap(path) {
                Ok(Some(map)) => {
                    out.insert(path.clone(), map);
                }
                Ok(None) => {}
                Err(e) => diag.warn(kind::BAD_FILE, || e.to_string()),
            }
        }
        out
    }
}

fn looks_like_ui_dir(p: &Path) -> bool {
    p.join("filenames.json").is_file()
        || std::fs::read_dir(p)
            .map(|rd| {
                rd.flatten()
                    .any(|e| shaderdata_key(&e.file_name().to_string_lossy()).is_some())
            })
            .unwrap_or(false)
}

/// `<anything>_code_object_id_<N>.out` -> N.
pub fn code_object_id_of(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".out")?;
    let pos = stem.rfind("code_object_id_")?;
    stem[pos + "code_object_id_".len()..].parse().ok()
}

/// `shaderdata_<se>_<i>.json` -> (se, i).
fn shaderdata_key(name: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix("shaderdata_")?.strip_suffix(".json")?;
    let (se, i) = rest.split_once('_')?;
    Some((se.parse().ok()?, i.parse().ok()?))
}

#[derive(Deserialize, Default)]
struct FilenamesJson {
    #[serde(default)]
    gfxip: Option<Gfxip>,
    #[serde(default)]
    shaderdata_filenames: Option<BTreeMap<String, Bounded<Listing>>>,
}

/// `gfxip`: a name, or a number `N` read as `gfxN`; anything else is ignored (never kept).
struct Gfxip(Option<String>);

impl<'de> Deserialize<'de> for Gfxip {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Gfxip, D::Error> {
        Ok(Gfxip(match Cell::deserialize(d)? {
            Cell::Str(s) => Some(s),
            Cell::Num(n) => Some(format!("gfx{n}")),
            Cell::Other => None,
        }))
    }
}

/// One listing of `shaderdata_filenames`: a file name, or `[name, begin, ...]` (the rest of the
/// row is skipped, not kept).
struct Listing {
    name: Option<String>,
    begin: Option<u64>,
}

impl<'de> Deserialize<'de> for Listing {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Listing, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Listing;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a file name or [name, begin, end]")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Listing, E> {
                Ok(Listing {
                    name: Some(owned(v)?),
                    begin: None,
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Listing, A::Error> {
                let name = seq.next_element::<Cell>()?.and_then(Cell::text);
                let begin = seq.next_element::<Cell>()?.and_then(|c| c.number());
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Listing { name, begin })
            }
            fn visit_u64<E>(self, _: u64) -> Result<Listing, E> {
                Ok(Listing::NONE)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Listing, E> {
                Ok(Listing::NONE)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Listing, E> {
                Ok(Listing::NONE)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Listing, E> {
                Ok(Listing::NONE)
            }
            fn visit_unit<E>(self) -> Result<Listing, E> {
                Ok(Listing::NONE)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Listing, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Listing::NONE)
            }
        }
        d.deserialize_any(V)
    }
}

impl Listing {
    const NONE: Listing = Listing {
        name: None,
        begin: None,
    };
}

const OUT_OF_MEMORY: &str = "out of memory reading";

/// The message of an allocation that failed while an input was read.
fn out_of_memory<E: de::Error>(what: &str) -> E {
    E::custom(format!("{OUT_OF_MEMORY} {what} (or above `ulimit -v`)"))
}

/// `v` copied into memory allocated fallibly (a string read from an input).
fn owned<E: de::Error>(v: &str) -> Result<String, E> {
    let mut s = String::new();
    s.try_reserve_exact(v.len())
        .map_err(|_| out_of_memory("a string"))?;
    s.push_str(v);
    Ok(s)
}

/// A JSON array read into a vector that grows fallibly: however many elements an input holds,
/// running out of memory is an error, not an abort.
struct Bounded<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Bounded<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Bounded<T>, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Bounded<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bounded<T>, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element::<T>()? {
                    v.try_reserve(1).map_err(|_| out_of_memory("an array"))?;
                    v.push(x);
                }
                Ok(Bounded(v))
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

impl<T> Default for Bounded<T> {
    fn default() -> Self {
        Bounded(Vec::new())
    }
}

/// A cell of a row of numbers and strings (`code.json`'s tables, `filenames.json`'s
/// listings): strings copied fallibly, nested values skipped.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Num(u64),
    Str(String),
    /// Anything else (negative or fractional numbers, booleans, null, arrays, objects).
    Other,
}

impl Cell {
    fn text(self) -> Option<String> {
        match self {
            Cell::Str(s) => Some(s),
            _ => None,
        }
    }

    fn number(self) -> Option<u64> {
        match self {
            Cell::Num(n) => Some(n),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Cell {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Cell, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Cell;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_u64<E>(self, v: u64) -> Result<Cell, E> {
                Ok(Cell::Num(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Cell, E> {
                Ok(u64::try_from(v).map_or(Cell::Other, Cell::Num))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Cell, E> {
                Ok(Cell::Other)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Cell, E> {
                Ok(Cell::Str(owned(v)?))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Cell, E> {
                Ok(Cell::Other)
            }
            fn visit_unit<E>(self) -> Result<Cell, E> {
                Ok(Cell::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Cell, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Cell::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Cell, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Cell::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// A row of at most [`Row::CELLS`] cells (the rest skipped, never kept).
#[derive(Debug, Clone, PartialEq, Default)]
struct CellRow(Vec<Cell>);

impl CellRow {
    /// Cells kept per row (the widest row read, `sqtt_funcmap`'s, has six).
    const CELLS: usize = 8;

    fn get(&self, i: usize) -> Option<&Cell> {
        self.0.get(i)
    }

    fn first(&self) -> Option<&Cell> {
        self.0.first()
    }
}

impl<'de> Deserialize<'de> for CellRow {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<CellRow, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CellRow;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a row")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CellRow, A::Error> {
                let mut v = Vec::new();
                while v.len() < CellRow::CELLS {
                    match seq.next_element::<Cell>()? {
                        Some(c) => v.push(c),
                        None => return Ok(CellRow(v)),
                    }
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(CellRow(v))
            }
        }
        d.deserialize_seq(V)
    }
}

impl UiDir {
    /// Opens a ui directory; an unreadable `filenames.json` gives a warning, and the shaderdata
    /// files are then found by name.
    pub fn open(path: &Path) -> Result<(UiDir, Option<String>), Error> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        let fpath = path.join("filenames.json");
        let mut gfxip = None;
        let mut listed: Option<Vec<(u32, PathBuf)>> = None;
        let mut repeated_listings = Repeated::default();
        let mut warning = None;
        let fj: Option<FilenamesJson> = if fpath.is_file() {
            match open_input(&fpath, MAX_FILENAMES_JSON, "filenames.json")
                .map_err(|e| e.to_string())
                .and_then(|f| serde_json::from_reader(BufReader::new(f)).map_err(|e| e.to_string()))
            {
                Ok(fj) => Some(fj),
                Err(e) => {
                    warning = Some(format!(
                        "{}: {e}; shaderdata files found by name",
                        fpath.display()
                    ));
                    None
                }
            }
        } else {
            None
        };
        if let Some(fj) = fj {
            gfxip = fj.gfxip.and_then(|g| g.0);
            if let Some(map) = fj.shaderdata_filenames {
                let mut v = Vec::new();
                let mut ses: Vec<(u32, Vec<Listing>)> = map
                    .into_iter()
                    .filter_map(|(k, files)| Some((k.parse().ok()?, files.0)))
                    .collect();
                ses.sort_by_key(|(se, _)| *se);
                for (se, files) in ses {
                    let mut chunks = Vec::new();
                    for (i, f) in files.iter().enumerate() {
                        if let Some(p) = f.name.as_deref().and_then(|f| resolve(path, f)) {
                            chunks.push((f.begin.unwrap_or(0), i, p));
                        }
                    }
                    // Chunks in time order whatever order they are listed in.
                    chunks.sort();
                    v.extend(chunks.into_iter().map(|(_, _, p)| (se, p)));
                }
                let (v, repeated) = read_once(v);
                repeated_listings = repeated;
                listed = Some(v);
            }
        }
        let shaderdata = match listed {
            Some(v) => v,
            None => {
                let mut v: Vec<((u32, u64), PathBuf)> = std::fs::read_dir(path)
                    .map_err(|e| Error::io(path, e))?
                    .flatten()
                    .filter_map(|e| {
                        let k = shaderdata_key(&e.file_name().to_string_lossy())?;
                        Some((k, e.path()))
                    })
                    .collect();
                v.sort();
                v.into_iter().map(|((se, _), p)| (se, p)).collect()
            }
        };
        Ok((
            UiDir {
                path: path.to_path_buf(),
                name,
                gfxip,
                shaderdata,
                code_object_files: Vec::new(),
                raw: None,
                repeated_listings,
            },
            warning,
        ))
    }

    pub fn default_wave_size(&self) -> u32 {
        default_wave_size(self.gfxip.as_deref())
    }

    /// The code objects of this time domain: the code object files' funcmaps, with `code.json`'s
    /// `sqtt_funcmap` rows (and layout/payload tables) taking their place when present.
    pub fn code_objects(
        &self,
        files: &BTreeMap<PathBuf, Funcmap>,
        diag: &mut Diagnostics,
    ) -> Vec<CodeObject> {
        let mut maps: BTreeMap<u64, (Funcmap, String, bool)> = self
            .code_object_files
            .iter()
            .filter_map(|(id, p)| {
                let m = files.get(p)?;
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                Some((*id, (m.clone(), name, false)))
            })
            .collect();
        for (id, map) in read_code_json(&self.path.join("code.json"), diag) {
            let wave = maps.get(&id).and_then(|(m, _, _)| m.wave_size);
            let mut map = map;
            if map.wave_size.is_none() {
                map.wave_size = wave;
            }
            let layout = map.clock_layout.is_some();
            maps.insert(id, (map, format!("{}/code.json", self.name), layout));
        }
        let dw = self.default_wave_size();
        maps.into_iter()
            .map(|(id, (m, src, layout))| {
                let mut co = CodeObject::new(id, m, src, dw);
                co.layout_in_code_json = layout && co.encoding.has_shader_clock();
                co
            })
            .collect()
    }
}

/// The listed files without repetitions: a file named again (by the same name, or another name
/// of the same file: a link) is read once, at its first place; the repetitions are counted, with
/// the first one. (One file listed 200,000 times was read 200,000 times.)
fn read_once(listed: Vec<(u32, PathBuf)>) -> (Vec<(u32, PathBuf)>, Repeated) {
    let mut names = std::collections::HashSet::new();
    let mut files = std::collections::HashSet::new();
    let mut repeated = Repeated::default();
    let mut out = Vec::with_capacity(listed.len().min(1 << 16));
    for (se, p) in listed {
        let again = !names.insert(p.clone())
            || sqtt_files::output::FileId::of(&p).is_some_and(|id| !files.insert(id));
        if again {
            repeated.count += 1;
            repeated.first.get_or_insert(p);
        } else {
            out.push((se, p));
        }
    }
    (out, repeated)
}

/// The file a name listed in `filenames.json` means, always inside `dir`: a relative name of
/// plain components as it is when that file exists, else (an absolute name, one with `..`, or a
/// file not found there) its last component in `dir`. `None` when the name has no usable last
/// component (`..`, `/`, empty).
fn resolve(dir: &Path, fname: &str) -> Option<PathBuf> {
    use std::path::Component;
    let name = Path::new(fname);
    let plain = !fname.is_empty() && name.components().all(|c| matches!(c, Component::Normal(_)));
    if plain {
        let p = dir.join(name);
        if p.exists() {
            return Some(p);
        }
    }
    match name.components().next_back() {
        Some(Component::Normal(base)) => Some(dir.join(base)),
        _ => None,
    }
}

/// What `code.json` is read for (its `code` listing and the rest are skipped, never kept).
#[derive(Deserialize, Default)]
struct CodeJson {
    #[serde(default)]
    sqtt_funcmap: Bounded<CellRow>,
    #[serde(default)]
    sqtt_funcmap_layout: Bounded<CellRow>,
    #[serde(default)]
    sqtt_funcmap_payloads: Bounded<CellRow>,
}

fn num(v: Option<&Cell>) -> Option<u64> {
    match v? {
        Cell::Num(n) => Some(*n),
        Cell::Str(s) => s.trim().parse().ok(),
        Cell::Other => None,
    }
}

fn text(v: Option<&Cell>) -> Option<&str> {
    match v? {
        Cell::Str(s) => Some(s.trim()).filter(|s| !s.is_empty()),
        _ => None,
    }
}

/// A `sqtt_funcmap` row of `code.json`: an entry, or the wave size.
enum Row {
    Entry(Entry),
    Wave(u32),
}

/// The funcmaps `code.json` carries, by code object ID (empty when the file or rows are absent).
pub fn read_code_json(path: &Path, diag: &mut Diagnostics) -> BTreeMap<u64, Funcmap> {
    let mut out = BTreeMap::new();
    if !path.is_file() {
        return out;
    }
    let cj: CodeJson = match open_input(path, MAX_CODE_JSON, "code.json")
        .map_err(|e| e.to_string())
        .and_then(|f| serde_json::from_reader(BufReader::new(f)).map_err(|e| e.to_string()))
    {
        Ok(c) => c,
        Err(e) => {
            diag.warn(kind::BAD_FILE, || format!("{}: {e}", path.display()));
            return out;
        }
    };
    // The rows become typed funcmap entries directly (the one writer and parser of the text
    // format stay in sqtt-markers); a row that cannot be one is counted and skipped.
    let mut bad = 0u64;
    let mut first_bad = String::new();
    let mut note_bad = |table: &str, row: &CellRow| {
        bad += 1;
        if first_bad.is_empty() {
            first_bad = format!("{}: {table} row {:?}", path.display(), row.0);
        }
    };
    for row in &cj.sqtt_funcmap.0 {
        let parsed = (|| {
            let cid = num(row.first())?;
            let word = text(row.get(2))?;
            let id = num(row.get(1));
            if word.eq_ignore_ascii_case("w") || word.eq_ignore_ascii_case("wave_size") {
                let w = u32::try_from(id.or_else(|| num(row.get(3)))?).ok()?;
                return Some((cid, Row::Wave(w)));
            }
            let kind = EntryKind::from_word(word)?;
            let id = if kind.has_id() {
                Some(u32::try_from(id?).ok()?)
            } else {
                None
            };
            let entry = Entry::new(kind, id, text(row.get(3))?, text(row.get(4)))?;
            Some((cid, Row::Entry(entry)))
        })();
        match parsed {
            Some((cid, Row::Entry(e))) => out
                .entry(cid)
                .or_insert_with(Funcmap::default)
                .entries
                .push(e),
            Some((cid, Row::Wave(w))) => {
                out.entry(cid).or_insert_with(Funcmap::default).wave_size = Some(w)
            }
            None => note_bad("sqtt_funcmap", row),
        }
    }
    for row in &cj.sqtt_funcmap_layout.0 {
        match (num(row.first()), num(row.get(1)), num(row.get(2))) {
            (Some(cid), Some(b), Some(s)) => {
                let map = out.entry(cid).or_insert_with(Funcmap::default);
                let layout = u32::try_from(b)
                    .ok()
                    .zip(u32::try_from(s).ok())
                    .and_then(|(b, s)| ClockLayout::new(b, s));
                match layout {
                    Some(l) => map.clock_layout = Some(l),
                    // Kept as unreadable: the code object's encoding is unknown, not legacy.
                    None => {
                        map.malformed_layout =
                            Some(format!("shader_clock_bits={b};shader_clock_shift={s}"))
                    }
                }
            }
            _ => note_bad("sqtt_funcmap_layout", row),
        }
    }
    for row in &cj.sqtt_funcmap_payloads.0 {
        let ids = (|| {
            let cid = num(row.first())?;
            let id = u32::try_from(num(row.get(1))?).ok()?;
            let n = u32::try_from(num(row.get(2))?).ok()?;
            Some((cid, id, n))
        })();
        match ids {
            Some((cid, id, n)) => out
                .entry(cid)
                .or_insert_with(Funcmap::default)
                .payloads
                .push((id, n)),
            None => note_bad("sqtt_funcmap_payloads", row),
        }
    }
    diag.warn_n(kind::BAD_ROW, bad, || first_bad);
    out
}

/// One wave's life in a slot, from `occupancy.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaveSpan {
    pub start: u64,
    pub end: Option<u64>,
    pub kernel_id: u64,
}

/// The size of `(se, file)` listings' files together (a file that cannot be looked at counts
/// 0): the progress bar's total, and whether raw traces are worth decoding on workers.
pub fn files_bytes<'a>(files: impl IntoIterator<Item = &'a (u32, PathBuf)>) -> u64 {
    files
        .into_iter()
        .filter_map(|(_, p)| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// `(se, cu, simd, wave_id)` packed into one key.
#[inline]
pub fn slot_key(se: u32, cu: u32, simd: u32, wave: u32) -> u64 {
    (u64::from(se) << 48) | (u64::from(cu) << 24) | (u64::from(simd) << 16) | u64::from(wave)
}

/// The `(se, cu, simd, wave)` of a [`slot_key`] (of fields in its ranges).
pub fn slot_fields(key: u64) -> (u32, u32, u32, u32) {
    let field = |shift: u32, bits: u32| (key >> shift) as u32 & ((1 << bits) - 1);
    (field(48, 16), field(24, 24), field(16, 8), field(0, 16))
}

/// The wave spans of every slot, and the dispatch names.
#[derive(Debug, Default, Clone)]
pub struct Occupancy {
    pub slots: FxHashMap<u64, Vec<WaveSpan>>,
    /// kernel_id (dispatch) -> kernel name.
    pub dispatches: BTreeMap<u64, String>,
    /// kernel_id (dispatch) -> code object ID, from the `events` entries of the dispatches
    /// (`entry_point.code_object_id`, written by att_tool's Python writer) or from the C++
    /// writer's fallback kernel name `"<co> / 0x<addr>"`.
    pub dispatch_codeobj: BTreeMap<u64, u64>,
    pub present: bool,
}

/// A slot's waves from its occupancy rows `(time, start, kernel_id)` (read from `path`): by time,
/// an end before a start at one instant; an end closes the wave still open, if any. Out of memory
/// is an error naming `path`, not an abort.
pub fn wave_spans(mut rows: Vec<(u64, bool, u64)>, path: &Path) -> Result<Vec<WaveSpan>, Error> {
    // In place: a stable sort's scratch buffer (half the rows) is an allocation that cannot fail
    // softly.
    rows.sort_unstable_by_key(|&(t, start, kernel)| (t, start, kernel));
    // Never more spans than rows.
    let mut spans: Vec<WaveSpan> = Vec::new();
    spans
        .try_reserve_exact(rows.iter().filter(|r| r.1).count())
        .map_err(|_| Error::Malformed {
            path: path.to_path_buf(),
            reason: "out of memory for the waves (or above `ulimit -v`)".into(),
        })?;
    for (t, start, kernel_id) in rows {
        if start {
            spans.push(WaveSpan {
                start: t,
                end: None,
                kernel_id,
            });
        } else if let Some(s) = spans.last_mut().filter(|s| s.end.is_none()) {
            s.end = Some(t);
        }
    }
    Ok(spans)
}

/// The code object ID of the C++ writer's fallback kernel name `"<co> / 0x<addr>"`.
pub fn fallback_name_codeobj(name: &str) -> Option<u64> {
    let (co, addr) = name.trim().split_once(" / ")?;
    let hex = addr.strip_prefix("0x")?;
    u64::from_str_radix(hex, 16).ok()?;
    co.parse().ok()
}

/// `kernel_id -> code_object_id` of the dispatch entries of `events` (an array, or an object of
/// arrays per shader engine).
fn dispatch_events(v: &serde_json::Value, out: &mut BTreeMap<u64, u64>) {
    match v {
        serde_json::Value::Array(a) => {
            for e in a {
                let kid = e.get("kernel_id").and_then(serde_json::Value::as_u64);
                let co = e
                    .get("entry_point")
                    .and_then(|p| p.get("code_object_id"))
                    .and_then(serde_json::Value::as_u64);
                if let (Some(kid), Some(co)) = (kid, co) {
                    out.entry(kid).or_insert(co);
                }
            }
        }
        serde_json::Value::Object(o) => {
            for v in o.values() {
                dispatch_events(v, out);
            }
        }
        _ => {}
    }
}

impl Occupancy {
    /// Reads `occupancy.json` (streamed; rows are not kept as JSON values).
    pub fn read(path: &Path) -> Result<Occupancy, Error> {
        let f = open_input(path, MAX_STREAMED_JSON, "occupancy.json")?;
        let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, f));
        let mut rows: FxHashMap<u64, Vec<(u64, bool, u64)>> = FxHashMap::default();
        let mut dispatches = BTreeMap::new();
        let mut dispatch_codeobj = BTreeMap::new();
        de::Deserializer::deserialize_map(
            &mut de,
            OccVisitor {
                rows: &mut rows,
                dispatches: &mut dispatches,
                dispatch_codeobj: &mut dispatch_codeobj,
            },
        )
        .and_then(|()| de.end())
        .map_err(|e| {
            if e.to_string().starts_with(OUT_OF_MEMORY) {
                // Not malformed: too large for the memory this run may have.
                Error::Malformed {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                }
            } else {
                Error::Json {
                    path: path.to_path_buf(),
                    records: 0,
                    error: e,
                }
            }
        })?;
        let mut slots = FxHashMap::default();
        for (key, rs) in rows {
            slots.insert(key, wave_spans(rs, path)?);
        }
        for (kid, name) in &dispatches {
            if let Some(co) = fallback_name_codeobj(name) {
                dispatch_codeobj.entry(*kid).or_insert(co);
            }
        }
        Ok(Occupancy {
            slots,
            dispatches,
            dispatch_codeobj,
            present: true,
        })
    }
}

struct OccVisitor<'a> {
    rows: &'a mut FxHashMap<u64, Vec<(u64, bool, u64)>>,
    dispatches: &'a mut BTreeMap<u64, String>,
    dispatch_codeobj: &'a mut BTreeMap<u64, u64>,
}

impl<'de> Visitor<'de> for OccVisitor<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an occupancy object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if let Ok(se) = key.parse::<u32>() {
                map.next_value_seed(OccRows {
                    se,
                    rows: &mut *self.rows,
                })?;
            } else if key == "dispatches" {
                let d: BTreeMap<String, serde_json::Value> = map.next_value()?;
                for (k, v) in d {
                    let Ok(id) = k.parse::<u64>() else { continue };
                    let name = match v {
                        serde_json::Value::String(s) => s,
                        serde_json::Value::Object(o) => o
                            .get("name")
                            .and_then(|n| n.as_str())
                            .unwrap_or_default()
                            .to_string(),
                        other => other.to_string(),
                    };
                    self.dispatches.insert(id, name);
                }
            } else if key == "events" {
                let v: serde_json::Value = map.next_value()?;
                dispatch_events(&v, self.dispatch_codeobj);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct OccRows<'a> {
    se: u32,
    rows: &'a mut FxHashMap<u64, Vec<(u64, bool, u64)>>,
}

impl<'de> DeserializeSeed<'de> for OccRows<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for OccRows<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of occupancy rows")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(row) = seq.next_element::<NumRow>()? {
            let r = row.0;
            if row.1 < 6 {
                continue;
            }
            let key = slot_key(self.se, r[1] as u32, r[2] as u32, r[3] as u32);
            let full = |rows: &mut FxHashMap<u64, Vec<(u64, bool, u64)>>| {
                // The rows go first: the message needs memory too.
                drop(std::mem::take(rows));
                out_of_memory("the occupancy rows")
            };
            if !self.rows.contains_key(&key) && self.rows.try_reserve(1).is_err() {
                return Err(full(self.rows));
            }
            if self.rows.entry(key).or_default().try_reserve(1).is_err() {
                return Err(full(self.rows));
            }
            let row = (r[0].max(0) as u64, r[4] != 0, r[5].max(0) as u64);
            self.rows.entry(key).or_default().push(row);
        }
        Ok(())
    }
}

/// Up to 11 numbers of a row (other values read as 0), and how many there were.
struct NumRow([i64; 11], usize);

impl<'de> Deserialize<'de> for NumRow {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<NumRow, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NumRow;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a row of numbers")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NumRow, A::Error> {
                let mut r = [0i64; 11];
                let mut n = 0;
                while let Some(x) = seq.next_element::<Num>()? {
                    if n < 11 {
                        r[n] = x.0;
                    }
                    n += 1;
                }
                Ok(NumRow(r, n))
            }
        }
        d.deserialize_seq(V)
    }
}

struct Num(i64);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_u64<E>(self, v: u64) -> Result<Num, E> {
                Ok(Num(v.min(i64::MAX as u64) as i64))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Num, E> {
                Ok(Num(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Num, E> {
                Ok(Num(v as i64))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Num, E> {
                Ok(Num(i64::from(v)))
            }
            fn visit_str<E>(self, _: &str) -> Result<Num, E> {
                Ok(Num(0))
            }
            fn visit_unit<E>(self) -> Result<Num, E> {
                Ok(Num(0))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `code.json`'s tables become typed funcmaps: every spelling of a kind, the location only
    /// where the row grammar has one, the layout and payload tables; bad rows counted, the rest
    /// kept.
    #[test]
    fn code_json_rows_become_typed_funcmaps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("code.json");
        let json = serde_json::json!({
            "sqtt_funcmap": [
                [1, 0, "kernel", "_Z1kv", "k.hip:9", 0],
                [1, 1, "func", "_Z1fv", "k.hip:3", 0],
                [1, 2, "U", "phase @ tile", "", 0],
                [1, 3, "Point", "tick", "ignored.hip:1", 0],
                [1, 4, "p", "addr_trace_load", "k.hip:5", 0],
                [1, 64, "wave_size", "", "", 0],
                [2, "5", "function", "_Z1gv", "", 0],
                [1, 9, "Q", "bogus", "", 0],
                [1, 6, "user", "two\nlines", "", 0],
                [1, 4294967296u64, "user", "too_big", "", 0],
            ],
            "sqtt_funcmap_layout": [[2, 12, 4], [3, 40, 4]],
            "sqtt_funcmap_payloads": [[1, 4, 130], [1, "x", 1]],
        });
        std::fs::write(&path, json.to_string()).unwrap();
        let mut diag = Diagnostics::default();
        let maps = read_code_json(&path, &mut diag);
        assert_eq!(diag.count(kind::BAD_ROW), 4, "{diag}");
        assert_eq!(
            maps[&1].to_string(),
            "K:_Z1kv@k.hip:9\nF:1:_Z1fv@k.hip:3\nU:2:phase @ tile\nP:3:tick\nW:64\n\
             P:4:addr_trace_load@k.hip:5\nR:4:extra_payload_count=130\n"
        );
        assert!(maps[&1].validate().is_empty());
        assert_eq!(
            maps[&2].to_string(),
            "M:shader_clock_bits=12;shader_clock_shift=4\nF:5:_Z1gv\n"
        );
        // An impossible layout is kept as unreadable, not taken for the legacy encoding.
        assert!(!maps[&3].marker_encoding().is_valid());
        assert!(!maps[&3].validate().is_empty());
    }
}

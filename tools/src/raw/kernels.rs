//! The kernel trace of a rocprofv3 run (`--kernel-trace`): which kernel each dispatch ran, and
//! the kernel's code object, from any of rocprofv3's output formats:
//!
//! - JSON (`<pid>_results.json`): `rocprofiler-sdk-tool[].kernel_symbols[]` (`kernel_id`,
//!   `code_object_id`, `kernel_name`) and `buffer_records.kernel_dispatch[].dispatch_info`
//!   (`dispatch_id`, `kernel_id`);
//! - CSV (`<pid>_kernel_trace.csv`): the columns `Dispatch_Id`, `Kernel_Id`, `Kernel_Name`
//!   (no code object: it is found by the kernel's name in the code objects' funcmaps);
//! - SQLite, rocprofv3's default (`<pid>_results.db`, the rocpd schema): the views
//!   `rocpd_kernel_dispatch` (`dispatch_id`, `kernel_id`) and `rocpd_info_kernel_symbol` (`id`,
//!   `code_object_id`, `kernel_name`), or their tables (named with the run's UUID) when a
//!   database lacks the views.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::error::Error;
use crate::input::{open_input, MAX_STREAMED_JSON};

/// What the kernel trace says of one dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchKernel {
    /// rocprofiler's kernel ID.
    pub kernel_id: u64,
    /// The kernel's symbol name (mangled in JSON and SQLite; as `--kernel-trace` printed it in
    /// CSV): one copy for all the dispatches of a kernel (a run's kernel trace lists every
    /// dispatch, often millions, and a templated kernel's name can be kilobytes long).
    pub kernel_name: Arc<str>,
    /// The code object the kernel is in (not in CSV).
    pub code_object_id: Option<u64>,
}

/// The dispatches of one run's kernel trace.
#[derive(Debug, Clone, Default)]
pub struct KernelTrace {
    /// The file read.
    pub path: PathBuf,
    pub dispatches: BTreeMap<u64, DispatchKernel>,
}

/// The format of a kernel trace file, from its name; in the order preferred when a run wrote
/// several (the ones that name the kernels' code objects first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    Sqlite,
    Json,
    Csv,
}

impl Format {
    /// The format of a file rocprofv3 names `<pid>_results.json`, `<pid>_kernel_trace.csv` or
    /// `<pid>_results.db`.
    pub fn of(name: &str) -> Option<Format> {
        if name.ends_with("results.json") {
            Some(Format::Json)
        } else if name.ends_with("kernel_trace.csv") {
            Some(Format::Csv)
        } else if name.ends_with("results.db") {
            Some(Format::Sqlite)
        } else {
            None
        }
    }
}

/// The largest kernel_trace.csv read.
const MAX_CSV: u64 = 16 << 30;

impl KernelTrace {
    /// Reads a kernel trace file in `format`.
    pub fn read(path: &Path, format: Format) -> Result<KernelTrace, Error> {
        let dispatches = match format {
            Format::Json => read_json(path)?,
            Format::Csv => read_csv(path)?,
            Format::Sqlite => read_sqlite(path)?,
        };
        Ok(KernelTrace {
            path: path.to_path_buf(),
            dispatches,
        })
    }
}

#[derive(Deserialize)]
struct ResultsJson {
    #[serde(rename = "rocprofiler-sdk-tool", default)]
    tool: Vec<ToolJson>,
}

#[derive(Deserialize, Default)]
struct ToolJson {
    #[serde(default)]
    kernel_symbols: Vec<SymbolJson>,
    #[serde(default)]
    buffer_records: BufferRecordsJson,
}

#[derive(Deserialize)]
struct SymbolJson {
    kernel_id: u64,
    #[serde(default)]
    code_object_id: Option<u64>,
    #[serde(default)]
    kernel_name: String,
}

#[derive(Deserialize, Default)]
struct BufferRecordsJson {
    #[serde(default)]
    kernel_dispatch: Vec<DispatchJson>,
}

#[derive(Deserialize)]
struct DispatchJson {
    dispatch_info: DispatchInfoJson,
}

#[derive(Deserialize)]
struct DispatchInfoJson {
    dispatch_id: u64,
    kernel_id: u64,
}

fn read_json(path: &Path) -> Result<BTreeMap<u64, DispatchKernel>, Error> {
    let f = open_input(path, MAX_STREAMED_JSON, "a rocprofv3 results.json")?;
    let doc: ResultsJson =
        serde_json::from_reader(BufReader::with_capacity(1 << 20, f)).map_err(|e| Error::Json {
            path: path.to_path_buf(),
            records: 0,
            error: e,
        })?;
    let mut out = BTreeMap::new();
    for tool in doc.tool {
        let symbols: BTreeMap<u64, (Arc<str>, Option<u64>)> = tool
            .kernel_symbols
            .into_iter()
            .map(|s| (s.kernel_id, (Arc::from(s.kernel_name), s.code_object_id)))
            .collect();
        for d in &tool.buffer_records.kernel_dispatch {
            let info = &d.dispatch_info;
            let sym = symbols.get(&info.kernel_id);
            out.insert(
                info.dispatch_id,
                DispatchKernel {
                    kernel_id: info.kernel_id,
                    kernel_name: sym.map_or_else(|| Arc::from(""), |s| s.0.clone()),
                    code_object_id: sym.and_then(|s| s.1),
                },
            );
        }
    }
    Ok(out)
}

/// The fields of one CSV line (RFC 4180: quoted fields may hold commas, doubled quotes and line
/// breaks, read by `more` when a quote is still open at the line's end).
fn csv_fields(
    line: &str,
    mut more: impl FnMut() -> Option<String>,
) -> Result<Vec<String>, &'static str> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut text = line.to_string();
    let mut chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    loop {
        if i == chars.len() {
            if quoted {
                let next = more().ok_or("a quoted field is not closed")?;
                cur.push('\n');
                text = next;
                chars = text.chars().collect();
                i = 0;
                continue;
            }
            fields.push(std::mem::take(&mut cur));
            return Ok(fields);
        }
        let c = chars[i];
        if quoted {
            if c == '"' {
                if chars.get(i + 1) == Some(&'"') {
                    cur.push('"');
                    i += 1;
                } else {
                    quoted = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == '"' {
            quoted = true;
        } else if c == ',' {
            fields.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
        i += 1;
    }
}

fn read_csv(path: &Path) -> Result<BTreeMap<u64, DispatchKernel>, Error> {
    let f = open_input(path, MAX_CSV, "a kernel_trace.csv")?;
    let bad = |reason: String| Error::Malformed {
        path: path.to_path_buf(),
        reason,
    };
    let mut lines = BufReader::with_capacity(1 << 20, f).lines();
    let mut next = || -> Option<Result<String, Error>> {
        lines.next().map(|l| l.map_err(|e| Error::io(path, e)))
    };
    let header = match next() {
        Some(h) => h?,
        None => return Err(bad("empty; expected a header row".into())),
    };
    let header = csv_fields(header.trim_end_matches('\r'), || None).map_err(|e| bad(e.into()))?;
    let col = |name: &str| {
        header.iter().position(|h| h.trim() == name).ok_or_else(|| {
            bad(format!(
                "no {name} column; expected rocprofv3's kernel trace columns (Dispatch_Id, Kernel_Id, Kernel_Name, ...), found {}",
                header.join(",")
            ))
        })
    };
    let (dc, kc, nc) = (col("Dispatch_Id")?, col("Kernel_Id")?, col("Kernel_Name")?);
    let mut out = BTreeMap::new();
    // Each kernel's name once, by kernel ID (every row repeats it).
    let mut names: BTreeMap<u64, Arc<str>> = BTreeMap::new();
    let mut row = 1u64;
    while let Some(line) = next() {
        let line = line?;
        row += 1;
        if line.trim().is_empty() {
            continue;
        }
        let mut pending_err = None;
        let fields = csv_fields(line.trim_end_matches('\r'), || match next() {
            Some(Ok(l)) => {
                row += 1;
                Some(l)
            }
            Some(Err(e)) => {
                pending_err = Some(e);
                None
            }
            None => None,
        });
        if let Some(e) = pending_err {
            return Err(e);
        }
        let fields = fields.map_err(|e| bad(format!("row {row}: {e}")))?;
        let num = |i: usize, what: &str| -> Result<u64, Error> {
            let v = fields.get(i).map(|s| s.trim()).unwrap_or("");
            v.parse()
                .map_err(|_| bad(format!("row {row}: {what} {v:?} is not a number")))
        };
        let kernel_id = num(kc, "Kernel_Id")?;
        let name = fields.get(nc).map_or("", String::as_str);
        let kernel_name = match names.get(&kernel_id) {
            Some(n) if **n == *name => n.clone(),
            _ => {
                let n: Arc<str> = Arc::from(name);
                names.insert(kernel_id, n.clone());
                n
            }
        };
        out.insert(
            num(dc, "Dispatch_Id")?,
            DispatchKernel {
                kernel_id,
                kernel_name,
                code_object_id: None,
            },
        );
    }
    Ok(out)
}

fn read_sqlite(path: &Path) -> Result<BTreeMap<u64, DispatchKernel>, Error> {
    use rusqlite::{Connection, OpenFlags};
    // Opened as a regular file first: a FIFO or device is refused with what it is, before
    // SQLite could block on it.
    open_input(path, u64::MAX, "a rocprofv3 results database")?;
    let bad = |e: rusqlite::Error| Error::Malformed {
        path: path.to_path_buf(),
        reason: format!("not a readable rocprofv3 results database: {e}"),
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(bad)?;
    // The views rocprofv3 creates, or else the run's tables (`<name>_<uuid>`).
    let relation = |name: &str| -> Result<String, Error> {
        let mut stmt = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type IN ('view', 'table') \
                 AND (name = ?1 OR name LIKE ?1 || '\\_%' ESCAPE '\\') ORDER BY length(name), name",
            )
            .map_err(bad)?;
        let found: Option<String> = stmt
            .query_row([name], |r| r.get(0))
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })
            .map_err(bad)?;
        found.ok_or_else(|| Error::Malformed {
            path: path.to_path_buf(),
            reason: format!(
                "no {name} table: no kernel trace in this results database (rocprofv3 writes one with --kernel-trace)"
            ),
        })
    };
    let dispatch = relation("rocpd_kernel_dispatch")?;
    let symbol = relation("rocpd_info_kernel_symbol")?;
    // The kernels first, each name read once; then the dispatches, which name their kernel.
    let mut stmt = conn
        .prepare(&format!(
            "SELECT id, code_object_id, kernel_name FROM \"{symbol}\""
        ))
        .map_err(bad)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })
        .map_err(bad)?;
    let mut symbols: BTreeMap<i64, (Arc<str>, Option<u64>)> = BTreeMap::new();
    for row in rows {
        let (id, co, name) = row.map_err(bad)?;
        let name: Arc<str> = Arc::from(name.unwrap_or_default());
        symbols.insert(id, (name, co.map(|c| c as u64)));
    }
    let mut stmt = conn
        .prepare(&format!(
            "SELECT dispatch_id, kernel_id FROM \"{dispatch}\""
        ))
        .map_err(bad)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
        .map_err(bad)?;
    let mut out = BTreeMap::new();
    let unnamed: Arc<str> = Arc::from("");
    for row in rows {
        let (d, k) = row.map_err(bad)?;
        let sym = symbols.get(&k);
        out.insert(
            d as u64,
            DispatchKernel {
                kernel_id: k as u64,
                kernel_name: sym.map_or_else(|| unnamed.clone(), |s| s.0.clone()),
                code_object_id: sym.and_then(|s| s.1),
            },
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_quote_as_rfc_4180() {
        let f = csv_fields(r#"a,"b,c","d""e",,"f"#, || Some("g\"".into())).unwrap();
        assert_eq!(f, ["a", "b,c", "d\"e", "", "f\ng"]);
        assert!(csv_fields("\"open", || None).is_err());
    }

    /// Every format: the dispatches' kernels and code objects as written, a dispatch of a
    /// kernel the symbols lack unnamed, and one copy of each kernel's name for all its
    /// dispatches (a long templated name times millions of dispatches would not fit in memory).
    #[test]
    fn dispatches_of_a_kernel_share_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!("_Z6kernelI{}EvPf", "N4impl5LayerE".repeat(300));
        // Dispatches 1 to 6: kernels 1, 2, 1, 2, 1, and 9 (no symbol).
        let kernel_of = |d: u64| if d == 6 { 9 } else { 2 - d % 2 };
        let json = dir.path().join("7_results.json");
        let doc = serde_json::json!({"rocprofiler-sdk-tool": [{
            "kernel_symbols": [
                {"kernel_id": 1, "code_object_id": 3, "kernel_name": long},
                {"kernel_id": 2, "code_object_id": 4, "kernel_name": "_Z5smallv"},
            ],
            "buffer_records": {"kernel_dispatch": (1..=6u64)
                .map(|d| serde_json::json!({"dispatch_info": {"dispatch_id": d, "kernel_id": kernel_of(d)}}))
                .collect::<Vec<_>>()},
        }]});
        std::fs::write(&json, doc.to_string()).unwrap();
        let csv = dir.path().join("7_kernel_trace.csv");
        let mut text = String::from("Kind,Dispatch_Id,Kernel_Id,Kernel_Name\n");
        for d in 1..=6u64 {
            let k = kernel_of(d);
            let name = match k {
                1 => long.as_str(),
                2 => "_Z5smallv",
                _ => "",
            };
            text.push_str(&format!("KERNEL_DISPATCH,{d},{k},\"{name}\"\n"));
        }
        std::fs::write(&csv, text).unwrap();
        let db_path = dir.path().join("7_results.db");
        let db = rusqlite::Connection::open(&db_path).unwrap();
        db.execute_batch(
            "CREATE TABLE rocpd_info_kernel_symbol (id INTEGER PRIMARY KEY, code_object_id INTEGER, kernel_name TEXT);
             CREATE TABLE rocpd_kernel_dispatch (id INTEGER PRIMARY KEY, kernel_id INTEGER, dispatch_id INTEGER);",
        )
        .unwrap();
        db.execute(
            "INSERT INTO rocpd_info_kernel_symbol VALUES (1, 3, ?1), (2, 4, '_Z5smallv')",
            [&long],
        )
        .unwrap();
        for d in 1..=6u64 {
            db.execute(
                "INSERT INTO rocpd_kernel_dispatch (kernel_id, dispatch_id) VALUES (?1, ?2)",
                [kernel_of(d) as i64, d as i64],
            )
            .unwrap();
        }
        drop(db);
        for (path, format) in [
            (&json, Format::Json),
            (&csv, Format::Csv),
            (&db_path, Format::Sqlite),
        ] {
            let t = KernelTrace::read(path, format).unwrap();
            let d = &t.dispatches;
            assert_eq!(d.len(), 6, "{format:?}");
            for (i, k) in d {
                assert_eq!(k.kernel_id, kernel_of(*i), "{format:?}");
            }
            assert_eq!(&*d[&1].kernel_name, long, "{format:?}");
            assert_eq!(&*d[&2].kernel_name, "_Z5smallv", "{format:?}");
            assert_eq!(&*d[&6].kernel_name, "", "{format:?}");
            assert!(
                Arc::ptr_eq(&d[&1].kernel_name, &d[&3].kernel_name),
                "{format:?}"
            );
            assert!(
                Arc::ptr_eq(&d[&1].kernel_name, &d[&5].kernel_name),
                "{format:?}"
            );
            assert!(
                Arc::ptr_eq(&d[&2].kernel_name, &d[&4].kernel_name),
                "{format:?}"
            );
            let co = |i: u64| d[&i].code_object_id;
            if format == Format::Csv {
                assert_eq!((co(1), co(2)), (None, None));
            } else {
                assert_eq!(
                    (co(1), co(2), co(3), co(6)),
                    (Some(3), Some(4), Some(3), None)
                );
            }
        }
    }

    #[test]
    fn formats_by_name() {
        assert_eq!(Format::of("1234_results.json"), Some(Format::Json));
        assert_eq!(Format::of("1234_kernel_trace.csv"), Some(Format::Csv));
        assert_eq!(Format::of("1234_results.db"), Some(Format::Sqlite));
        assert_eq!(Format::of("1234_agent_info.csv"), None);
    }
}

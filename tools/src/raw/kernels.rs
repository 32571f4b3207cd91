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

use serde::Deserialize;

use crate::error::Error;
use crate::input::{open_input, MAX_STREAMED_JSON};

/// What the kernel trace says of one dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchKernel {
    /// rocprofiler's kernel ID.
    pub kernel_id: u64,
    /// The kernel's symbol name (mangled in JSON and SQLite; as `--kernel-trace` printed it in
    /// CSV).
    pub kernel_name: String,
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
        let symbols: BTreeMap<u64, &SymbolJson> = tool
            .kernel_symbols
            .iter()
            .map(|s| (s.kernel_id, s))
            .collect();
        for d in &tool.buffer_records.kernel_dispatch {
            let info = &d.dispatch_info;
            let sym = symbols.get(&info.kernel_id);
            out.insert(
                info.dispatch_id,
                DispatchKernel {
                    kernel_id: info.kernel_id,
                    kernel_name: sym.map(|s| s.kernel_name.clone()).unwrap_or_default(),
                    code_object_id: sym.and_then(|s| s.code_object_id),
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
        out.insert(
            num(dc, "Dispatch_Id")?,
            DispatchKernel {
                kernel_id: num(kc, "Kernel_Id")?,
                kernel_name: fields.get(nc).cloned().unwrap_or_default(),
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
    let sql = format!(
        "SELECT d.dispatch_id, d.kernel_id, s.code_object_id, s.kernel_name \
         FROM \"{dispatch}\" AS d LEFT JOIN \"{symbol}\" AS s ON s.id = d.kernel_id"
    );
    let mut stmt = conn.prepare(&sql).map_err(bad)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<i64>>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .map_err(bad)?;
    let mut out = BTreeMap::new();
    for row in rows {
        let (d, k, co, name) = row.map_err(bad)?;
        out.insert(
            d as u64,
            DispatchKernel {
                kernel_id: k as u64,
                kernel_name: name.unwrap_or_default(),
                code_object_id: co.map(|c| c as u64),
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

    #[test]
    fn formats_by_name() {
        assert_eq!(Format::of("1234_results.json"), Some(Format::Json));
        assert_eq!(Format::of("1234_kernel_trace.csv"), Some(Format::Csv));
        assert_eq!(Format::of("1234_results.db"), Some(Format::Sqlite));
        assert_eq!(Format::of("1234_agent_info.csv"), None);
    }
}

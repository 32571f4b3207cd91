//! Streaming reader of `shaderdata_<se>_<i>.json` files.
//!
//! The files hold `{"records_schema": [...], "records": [[time, value, cu, simd, wave_id, flags],
//! ...]}`. The `records` array is walked with serde visitors, one row at a time, so memory does
//! not grow with the file.

use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::error::Error;

/// One shaderdata record (one `s_ttracedata` / `s_ttracedata_imm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Record {
    pub time: u64,
    pub value: u32,
    pub cu: u32,
    pub simd: u32,
    pub wave_id: u32,
    pub flags: u32,
}

/// Flags bit 1: a privileged (non-user) record.
pub const FLAG_PRIV: u32 = 2;

impl Record {
    pub fn is_priv(&self) -> bool {
        self.flags & FLAG_PRIV != 0
    }
}

/// The column order of rocprofv3's `records_schema`.
pub const DEFAULT_SCHEMA: [&str; 6] = ["time", "value", "cu", "simd", "wave_id", "flags"];

const COLS: usize = 6;
const MAX_ROW: usize = 16;

/// Maps each row position to one of the six fields (or none).
#[derive(Clone, Copy)]
struct Columns([u8; MAX_ROW]);

impl Columns {
    fn default_order() -> Columns {
        let mut c = [u8::MAX; MAX_ROW];
        for (i, slot) in c.iter_mut().enumerate().take(COLS) {
            *slot = i as u8;
        }
        Columns(c)
    }

    fn from_schema(names: &[String]) -> Columns {
        let mut c = [u8::MAX; MAX_ROW];
        for (i, n) in names.iter().enumerate().take(MAX_ROW) {
            if let Some(f) = DEFAULT_SCHEMA.iter().position(|d| d == n) {
                c[i] = f as u8;
            }
        }
        Columns(c)
    }
}

/// What a read of one file gave.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadStats {
    /// Rows handed to the callback.
    pub records: u64,
}

/// Reads `path` and calls `f` for each record in file order.
///
/// A file that breaks off or turns malformed part-way gives [`Error::Json`] after the records
/// before the fault have been handed over; `ReadStats` of the good part is then in the error's
/// `records` field.
pub fn read_file<F: FnMut(&Record)>(path: &Path, f: F) -> Result<ReadStats, Error> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let reader = BufReader::with_capacity(1 << 20, file);
    read_from(reader, path, f)
}

/// Like [`read_file`], from any reader.
pub fn read_from<R: std::io::Read, F: FnMut(&Record)>(
    reader: R,
    path: &Path,
    mut f: F,
) -> Result<ReadStats, Error> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut count = 0u64;
    let res = de::Deserializer::deserialize_map(
        &mut de,
        FileVisitor {
            f: &mut f,
            count: &mut count,
        },
    )
    .and_then(|found| {
        de.end()?;
        Ok(found)
    });
    match res {
        Ok(true) => Ok(ReadStats { records: count }),
        Ok(false) => Err(Error::Malformed {
            path: path.to_path_buf(),
            reason: "no \"records\" array".into(),
        }),
        Err(e) => Err(Error::Json {
            path: path.to_path_buf(),
            records: count,
            source: e,
        }),
    }
}

struct FileVisitor<'a, F> {
    f: &'a mut F,
    count: &'a mut u64,
}

impl<'de, F: FnMut(&Record)> Visitor<'de> for FileVisitor<'_, F> {
    type Value = bool;

    fn expecting(&self, fm: &mut fmt::Formatter) -> fmt::Result {
        fm.write_str("a shaderdata object with a \"records\" array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut cols = Columns::default_order();
        let mut found = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "records_schema" => {
                    let names: Vec<String> = map.next_value()?;
                    cols = Columns::from_schema(&names);
                }
                "records" => {
                    map.next_value_seed(RowsSeed {
                        cols,
                        f: &mut *self.f,
                        count: &mut *self.count,
                    })?;
                    found = true;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

struct RowsSeed<'a, F> {
    cols: Columns,
    f: &'a mut F,
    count: &'a mut u64,
}

impl<'de, F: FnMut(&Record)> DeserializeSeed<'de> for RowsSeed<'_, F> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, F: FnMut(&Record)> Visitor<'de> for RowsSeed<'_, F> {
    type Value = ();

    fn expecting(&self, fm: &mut fmt::Formatter) -> fmt::Result {
        fm.write_str("an array of records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(row) = seq.next_element_seed(RowSeed { cols: self.cols })? {
            *self.count += 1;
            (self.f)(&row);
        }
        Ok(())
    }
}

struct RowSeed {
    cols: Columns,
}

impl<'de> DeserializeSeed<'de> for RowSeed {
    type Value = Record;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Record, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RowSeed {
    type Value = Record;

    fn expecting(&self, fm: &mut fmt::Formatter) -> fmt::Result {
        fm.write_str("a record [time, value, cu, simd, wave_id, flags]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Record, A::Error> {
        let mut v = [0u64; COLS];
        let mut seen = 0usize;
        let mut i = 0usize;
        while let Some(x) = seq.next_element::<u64>()? {
            if i < MAX_ROW {
                let c = self.cols.0[i];
                if (c as usize) < COLS {
                    v[c as usize] = x;
                    seen += 1;
                }
            }
            i += 1;
        }
        if seen < COLS {
            return Err(de::Error::invalid_length(i, &self));
        }
        Ok(Record {
            time: v[0],
            value: v[1] as u32,
            cu: v[2] as u32,
            simd: v[3] as u32,
            wave_id: v[4] as u32,
            flags: v[5] as u32,
        })
    }
}

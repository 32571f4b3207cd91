//! Streaming reader of `shaderdata_<se>_<i>.json` files.
//!
//! The files hold `{"records_schema": [...], "records": [[time, value, cu, simd, wave_id, flags],
//! ...]}`. The `records` array is walked with serde visitors, one row at a time, so memory does
//! not grow with the file.

use std::fmt;
use std::io::BufReader;
use std::io::Read;
use std::path::Path;

use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};

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

/// Flags bit 0: the record came from `s_ttracedata_imm` (an 8-bit immediate, never a packed
/// gfx12 header).
pub const FLAG_IMM: u32 = 1;
/// Flags bit 1: a privileged (non-user) record.
pub const FLAG_PRIV: u32 = 2;

impl Record {
    pub fn is_priv(&self) -> bool {
        self.flags & FLAG_PRIV != 0
    }

    pub fn is_imm(&self) -> bool {
        self.flags & FLAG_IMM != 0
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
    let file =
        crate::input::open_input(path, crate::input::MAX_STREAMED_JSON, "a shaderdata file")?;
    let reader = BufReader::with_capacity(1 << 20, file);
    read_from(reader, path, f)
}

/// Like [`read_file`], from any reader.
///
/// The top-level object is walked by a small framing scanner; the `records` array is read in
/// blocks of about 4 MiB, each block's complete rows handed to serde (a visitor over a slice),
/// so memory stays at one block whatever the file size.
pub fn read_from<R: Read, F: FnMut(&Record)>(
    reader: R,
    path: &Path,
    f: F,
) -> Result<ReadStats, Error> {
    read_blocks(reader, path, BLOCK, f)
}

fn read_blocks<R: Read, F: FnMut(&Record)>(
    reader: R,
    path: &Path,
    block: usize,
    mut f: F,
) -> Result<ReadStats, Error> {
    let mut sc = Scanner {
        r: reader,
        block,
        buf: Vec::with_capacity(block + 4096),
        pos: 0,
        eof: false,
        consumed: 0,
    };
    let mut count = 0u64;
    let mut scratch = Vec::with_capacity(block + 4096);
    let res = walk(&mut sc, &mut scratch, &mut f, &mut count);
    match res {
        Ok(true) => Ok(ReadStats { records: count }),
        Ok(false) => Err(Error::Malformed {
            path: path.to_path_buf(),
            reason: "no \"records\" array".into(),
        }),
        Err(Fault::Io(e)) => Err(Error::io(path, e)),
        Err(Fault::Json(e)) => Err(Error::Json {
            path: path.to_path_buf(),
            records: count,
            error: e,
        }),
        Err(Fault::Syntax(at, what)) => Err(Error::Malformed {
            path: path.to_path_buf(),
            reason: format!("malformed JSON after {count} records: {what} at byte {at}"),
        }),
    }
}

const BLOCK: usize = 4 << 20;

enum Fault {
    Io(std::io::Error),
    Json(serde_json::Error),
    Syntax(u64, &'static str),
}

struct Scanner<R> {
    r: R,
    block: usize,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    /// Bytes dropped from the front of `buf` so far.
    consumed: u64,
}

impl<R: Read> Scanner<R> {
    /// Reads more; false at the end of the input.
    fn fill(&mut self) -> Result<bool, Fault> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.consumed += self.pos as u64;
            self.pos = 0;
        }
        let want = self.buf.len().max(self.block) as u64;
        let got = loop {
            match (&mut self.r).take(want).read_to_end(&mut self.buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Fault::Io(e)),
            }
        };
        if (got as u64) < want {
            self.eof = true;
        }
        Ok(got > 0)
    }

    fn at(&self) -> u64 {
        self.consumed + self.pos as u64
    }

    fn peek(&mut self) -> Result<Option<u8>, Fault> {
        while self.pos >= self.buf.len() {
            if !self.fill()? {
                return Ok(None);
            }
        }
        Ok(Some(self.buf[self.pos]))
    }

    fn skip_ws(&mut self) -> Result<Option<u8>, Fault> {
        loop {
            match self.peek()? {
                Some(b' ' | b'\n' | b'\r' | b'\t') => self.pos += 1,
                other => return Ok(other),
            }
        }
    }

    fn expect(&mut self, c: u8, what: &'static str) -> Result<(), Fault> {
        if self.skip_ws()? == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Fault::Syntax(self.at(), what))
        }
    }

    /// The bytes of one JSON value (any type), consumed.
    fn value_bytes(&mut self) -> Result<Vec<u8>, Fault> {
        let mut out = Vec::new();
        let mut depth = 0u32;
        let mut in_str = false;
        let mut esc = false;
        self.skip_ws()?;
        loop {
            let Some(c) = self.peek()? else {
                return Err(Fault::Syntax(self.at(), "unexpected end of file"));
            };
            if !in_str && depth == 0 && !out.is_empty() && matches!(c, b',' | b'}' | b']') {
                return Ok(out);
            }
            out.push(c);
            self.pos += 1;
            if in_str {
                if esc {
                    esc = false;
                } else if c == b'\\' {
                    esc = true;
                } else if c == b'"' {
                    in_str = false;
                    if depth == 0 {
                        return Ok(out);
                    }
                }
                continue;
            }
            match c {
                b'"' => in_str = true,
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(out);
                    }
                }
                _ => {}
            }
        }
    }
}

fn walk<R: Read, F: FnMut(&Record)>(
    sc: &mut Scanner<R>,
    scratch: &mut Vec<u8>,
    f: &mut F,
    count: &mut u64,
) -> Result<bool, Fault> {
    let mut cols = Columns::default_order();
    let mut found = false;
    sc.expect(b'{', "expected an object")?;
    if sc.skip_ws()? == Some(b'}') {
        return Ok(false);
    }
    loop {
        let key: String = serde_json::from_slice(&sc.value_bytes()?).map_err(Fault::Json)?;
        sc.expect(b':', "expected ':'")?;
        if key == "records" {
            sc.expect(b'[', "\"records\" is not an array")?;
            records(sc, scratch, cols, f, count)?;
            found = true;
        } else {
            let v = sc.value_bytes()?;
            if key == "records_schema" {
                let names: Vec<String> = serde_json::from_slice(&v).map_err(Fault::Json)?;
                cols = Columns::from_schema(&names);
            }
        }
        match sc.skip_ws()? {
            Some(b',') => sc.pos += 1,
            Some(b'}') => {
                sc.pos += 1;
                break;
            }
            _ => return Err(Fault::Syntax(sc.at(), "expected ',' or '}'")),
        }
    }
    Ok(found)
}

/// The rows of the records array, after its '['; consumes the closing ']'.
fn records<R: Read, F: FnMut(&Record)>(
    sc: &mut Scanner<R>,
    scratch: &mut Vec<u8>,
    cols: Columns,
    f: &mut F,
    count: &mut u64,
) -> Result<(), Fault> {
    let mut first_block = true;
    loop {
        // Plain rows are read straight from the buffer, without a scan for where rows end
        // first. What this does and hands over is exactly what the block logic below would;
        // when it meets a row it does not take, that logic does this block, skipping the rows
        // already handed over.
        let skip = match stream_rows(&sc.buf[sc.pos..], first_block, cols, f, count) {
            Stream::Close(at) => {
                sc.pos += at + 1;
                return Ok(());
            }
            Stream::End(Some(row_end)) => {
                sc.pos += row_end;
                first_block = false;
                continue;
            }
            Stream::End(None) => {
                if !sc.fill()? {
                    return Err(Fault::Syntax(sc.at(), "unexpected end of file in records"));
                }
                continue;
            }
            Stream::Odd(skip) => skip,
        };
        // Complete rows in the buffer, and where the array closes if it does.
        let (mut depth, mut last_row_end, mut close) = (0u32, None, None);
        for (i, &c) in sc.buf[sc.pos..].iter().enumerate() {
            match c {
                b'[' => depth += 1,
                b']' if depth == 0 => {
                    close = Some(sc.pos + i);
                    break;
                }
                b']' => {
                    depth -= 1;
                    if depth == 0 {
                        last_row_end = Some(sc.pos + i);
                    }
                }
                _ => {}
            }
        }
        let end = match (close, last_row_end) {
            (Some(c), _) => c,
            (None, Some(e)) => e + 1,
            (None, None) => {
                if !sc.fill()? {
                    return Err(Fault::Syntax(sc.at(), "unexpected end of file in records"));
                }
                continue;
            }
        };
        // After the previous block's last row comes one comma.
        let mut region = trim_ws(&sc.buf[sc.pos..end]);
        if !first_block {
            match region.split_first() {
                Some((b',', rest)) => region = trim_ws(rest),
                Some(_) => return Err(Fault::Syntax(sc.at(), "expected ',' between records")),
                None => {}
            }
        }
        first_block = false;
        // Plain integer rows take the fast path; the first row it does not take, and all after
        // it in this block, go to serde, which also gives the error of a malformed one.
        let skip = skip.min(region.len());
        let taken = skip + fast_rows(&region[skip..], cols, f, count);
        let region = &region[taken..];
        if !region.is_empty() {
            scratch.clear();
            scratch.push(b'[');
            scratch.extend_from_slice(region);
            scratch.push(b']');
            let mut de = serde_json::Deserializer::from_slice(scratch);
            RowsSeed {
                cols,
                f: &mut *f,
                count: &mut *count,
            }
            .deserialize(&mut de)
            .map_err(Fault::Json)?;
        }
        sc.pos = end;
        if close.is_some() {
            sc.pos += 1;
            return Ok(());
        }
    }
}

fn trim_ws(mut b: &[u8]) -> &[u8] {
    while let Some((c, rest)) = b.split_first() {
        if matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
            b = rest;
        } else {
            break;
        }
    }
    b
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t')
}

/// Why [`parse_row`] did not give a row.
enum RowFault {
    /// Not a row of plain non-negative integers (or one that does not fit).
    Odd,
    /// The bytes end inside the row.
    Cut,
}

/// Parses the plain integer row `[1,2,3,...]` whose '[' is at `b[i]`; gives the record and the
/// index after its ']'.
#[inline(always)]
fn parse_row(b: &[u8], mut i: usize, cols: &Columns) -> Result<(Record, usize), RowFault> {
    i += 1;
    let mut v = [0u64; COLS];
    let (mut n, mut seen) = (0usize, 0usize);
    loop {
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        let start = i;
        let mut x = 0u64;
        while i < b.len() {
            let d = b[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            // Up to 19 digits always fit in a u64.
            if i - start < 19 {
                x = x * 10 + u64::from(d);
            } else {
                match x.checked_mul(10).and_then(|y| y.checked_add(u64::from(d))) {
                    Some(y) => x = y,
                    None => return Err(RowFault::Odd),
                }
            }
            i += 1;
        }
        if i == b.len() {
            return Err(RowFault::Cut);
        }
        if i == start {
            return Err(RowFault::Odd);
        }
        if n < MAX_ROW {
            let c = cols.0[n] as usize;
            if c < COLS {
                v[c] = x;
                seen += 1;
            }
        }
        n += 1;
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b']') => {
                i += 1;
                break;
            }
            Some(_) => return Err(RowFault::Odd),
            None => return Err(RowFault::Cut),
        }
    }
    if seen < COLS {
        return Err(RowFault::Odd);
    }
    Ok((
        Record {
            time: v[0],
            value: v[1] as u32,
            cu: v[2] as u32,
            simd: v[3] as u32,
            wave_id: v[4] as u32,
            flags: v[5] as u32,
        },
        i,
    ))
}

/// Reads rows of plain non-negative integers (`[1,2,3,4,5,6],[...]`) from `b`, handing each to
/// `f`; returns the bytes taken, stopping before the first row that is anything else.
fn fast_rows<F: FnMut(&Record)>(b: &[u8], cols: Columns, f: &mut F, count: &mut u64) -> usize {
    let mut i = 0;
    let mut taken = 0;
    loop {
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        if i == b.len() {
            return b.len();
        }
        if b[i] != b'[' {
            return taken;
        }
        let Ok((r, next)) = parse_row(b, i, &cols) else {
            return taken;
        };
        i = next;
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        match b.get(i) {
            Some(b',') => i += 1,
            None => i = b.len(),
            // Not a separator: serde reads this row again and reports the fault.
            Some(_) => return taken,
        }
        *count += 1;
        f(&r);
        taken = i;
    }
}

/// Where [`stream_rows`] stopped.
enum Stream {
    /// The array closes at this index.
    Close(usize),
    /// The bytes end; the index after the last complete row handed over, if any.
    End(Option<usize>),
    /// A row (or separator) the fast path does not take, this many bytes into the region the
    /// block logic of [`records`] would give (0: before the first row of it).
    Odd(usize),
}

/// Hands over the plain rows at the start of `b` (the rest of the buffer after the previous
/// block; `first`: right after the array's '[', no comma due): each row followed by a comma,
/// the array's closing ']', or the end of the bytes.
fn stream_rows<F: FnMut(&Record)>(
    b: &[u8],
    first: bool,
    cols: Columns,
    f: &mut F,
    count: &mut u64,
) -> Stream {
    let mut i = 0;
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    match b.get(i) {
        None => return Stream::End(None),
        Some(b']') => return Stream::Close(i),
        Some(b',') if !first => {
            i += 1;
            while i < b.len() && is_ws(b[i]) {
                i += 1;
            }
        }
        Some(_) if !first => return Stream::Odd(0),
        Some(_) => {}
    }
    let region = i;
    let mut last = None;
    loop {
        // At a row (or the close, after a trailing comma); `top` is where the block logic's
        // fast path would stop if this row is not taken.
        let top = i - region;
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        match b.get(i) {
            None => return Stream::End(last),
            Some(b'[') => {}
            Some(b']') => return Stream::Close(i),
            Some(_) => return Stream::Odd(top),
        }
        let (r, next) = match parse_row(b, i, &cols) {
            Ok(v) => v,
            Err(RowFault::Cut) => return Stream::End(last),
            Err(RowFault::Odd) => return Stream::Odd(top),
        };
        i = next;
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        match b.get(i) {
            Some(b',') => {
                *count += 1;
                f(&r);
                last = Some(next);
                i += 1;
            }
            Some(b']') => {
                *count += 1;
                f(&r);
                return Stream::Close(i);
            }
            None => {
                *count += 1;
                f(&r);
                return Stream::End(Some(next));
            }
            Some(_) => return Stream::Odd(top),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out at most `n` bytes per read, to cross block boundaries everywhere.
    struct Trickle<'a>(&'a [u8], usize);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn read(text: &str, block: usize) -> Result<Vec<Record>, Error> {
        let mut v = Vec::new();
        read_blocks(
            Trickle(text.as_bytes(), 3),
            Path::new("t.json"),
            block,
            |r| v.push(*r),
        )?;
        Ok(v)
    }

    #[test]
    fn rows_schema_and_other_keys() {
        let text = r#" { "meta": {"a": [1, "]\"[", {"b": []}]}, "records_schema" : ["value","time","cu","simd","wave_id","flags"],
            "records" : [ [ 5 , 100 , 1 , 2 , 3 , 0 ] ,
              [9,200,4,3,2,2]
            ], "tail": "x" }
        "#;
        for chunk in [1, 2, 3, 7, 1 << 20] {
            let v = read(text, chunk).unwrap();
            assert_eq!(
                v,
                vec![
                    Record {
                        time: 100,
                        value: 5,
                        cu: 1,
                        simd: 2,
                        wave_id: 3,
                        flags: 0
                    },
                    Record {
                        time: 200,
                        value: 9,
                        cu: 4,
                        simd: 3,
                        wave_id: 2,
                        flags: 2
                    }
                ]
            );
        }
    }

    #[test]
    fn empty_and_missing_records() {
        assert!(read(r#"{"records": []}"#, 3).unwrap().is_empty());
        assert!(matches!(
            read(r#"{"x": 1}"#, 3),
            Err(Error::Malformed { .. })
        ));
        assert!(matches!(read(r#"{}"#, 3), Err(Error::Malformed { .. })));
    }

    #[test]
    fn faults_keep_the_count_of_good_rows() {
        let mut n = 0;
        let e = read_blocks(
            Trickle(b"{\"records\":[[1,2,3,4,5,6],[7,8,9,1,2,0],[3,4", 5),
            Path::new("t.json"),
            4,
            |_| n += 1,
        )
        .unwrap_err();
        assert_eq!(n, 2);
        assert!(e.to_string().contains("after 2 records"), "{e}");
        let e = read(r#"{"records":[[1,2,3],[4,5,6]]}"#, 4).unwrap_err();
        assert!(e.to_string().contains("malformed JSON"), "{e}");
        let e = read(r#"{"records":[[1,2,3,4,5,"x"]]}"#, 4).unwrap_err();
        assert!(e.to_string().contains("malformed JSON"), "{e}");
        assert!(read("[1,2]", 4).is_err());
        assert!(read("", 4).is_err());
    }

    #[test]
    fn odd_rows_fall_back_to_serde() {
        // A float, a missing comma and an overflowing number: serde decides.
        assert!(read(r#"{"records":[[1,2,3,4,5,6],[1.5,2,3,4,5,6]]}"#, 64).is_err());
        assert!(read(r#"{"records":[[1,2,3,4,5,6] [1,2,3,4,5,6]]}"#, 64).is_err());
        assert!(read(
            r#"{"records":[[1,2,3,4,5,6],[99999999999999999999,2,3,4,5,6]]}"#,
            64
        )
        .is_err());
        // Rows with more columns than the schema names are fine.
        let v = read(r#"{"records":[[1,2,3,4,5,6,7],[8,9,1,2,3,0,9]]}"#, 64).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[1].time, 8);
        // A negative number goes to serde, which rejects it for a u64 field.
        assert!(read(r#"{"records":[[-1,2,3,4,5,6]]}"#, 64).is_err());
    }

    #[test]
    fn large_values() {
        let v = read(
            r#"{"records":[[18446744073709551615,4294967295,0,0,0,0]]}"#,
            8,
        )
        .unwrap();
        assert_eq!(v[0].time, u64::MAX);
        assert_eq!(v[0].value, u32::MAX);
    }

    /// The reader as it was before plain rows were streamed straight from the buffer (each
    /// block scanned for where its rows end first), to check that the streaming one hands over
    /// the same rows and reports the same faults, byte for byte.
    mod reference {
        use super::super::*;

        pub fn read_blocks<R: Read, F: FnMut(&Record)>(
            reader: R,
            path: &Path,
            block: usize,
            mut f: F,
        ) -> Result<ReadStats, Error> {
            let mut sc = Scanner {
                r: reader,
                block,
                buf: Vec::with_capacity(block + 4096),
                pos: 0,
                eof: false,
                consumed: 0,
            };
            let mut count = 0u64;
            let mut scratch = Vec::with_capacity(block + 4096);
            let res = old_walk(&mut sc, &mut scratch, &mut f, &mut count);
            match res {
                Ok(true) => Ok(ReadStats { records: count }),
                Ok(false) => Err(Error::Malformed {
                    path: path.to_path_buf(),
                    reason: "no \"records\" array".into(),
                }),
                Err(Fault::Io(e)) => Err(Error::io(path, e)),
                Err(Fault::Json(e)) => Err(Error::Json {
                    path: path.to_path_buf(),
                    records: count,
                    error: e,
                }),
                Err(Fault::Syntax(at, what)) => Err(Error::Malformed {
                    path: path.to_path_buf(),
                    reason: format!("malformed JSON after {count} records: {what} at byte {at}"),
                }),
            }
        }

        fn old_walk<R: Read, F: FnMut(&Record)>(
            sc: &mut Scanner<R>,
            scratch: &mut Vec<u8>,
            f: &mut F,
            count: &mut u64,
        ) -> Result<bool, Fault> {
            let mut cols = Columns::default_order();
            let mut found = false;
            sc.expect(b'{', "expected an object")?;
            if sc.skip_ws()? == Some(b'}') {
                return Ok(false);
            }
            loop {
                let key: String =
                    serde_json::from_slice(&sc.value_bytes()?).map_err(Fault::Json)?;
                sc.expect(b':', "expected ':'")?;
                if key == "records" {
                    sc.expect(b'[', "\"records\" is not an array")?;
                    old_records(sc, scratch, cols, f, count)?;
                    found = true;
                } else {
                    let v = sc.value_bytes()?;
                    if key == "records_schema" {
                        let names: Vec<String> = serde_json::from_slice(&v).map_err(Fault::Json)?;
                        cols = Columns::from_schema(&names);
                    }
                }
                match sc.skip_ws()? {
                    Some(b',') => sc.pos += 1,
                    Some(b'}') => {
                        sc.pos += 1;
                        break;
                    }
                    _ => return Err(Fault::Syntax(sc.at(), "expected ',' or '}'")),
                }
            }
            Ok(found)
        }

        fn old_records<R: Read, F: FnMut(&Record)>(
            sc: &mut Scanner<R>,
            scratch: &mut Vec<u8>,
            cols: Columns,
            f: &mut F,
            count: &mut u64,
        ) -> Result<(), Fault> {
            let mut first_block = true;
            loop {
                // Complete rows in the buffer, and where the array closes if it does.
                let (mut depth, mut last_row_end, mut close) = (0u32, None, None);
                for (i, &c) in sc.buf[sc.pos..].iter().enumerate() {
                    match c {
                        b'[' => depth += 1,
                        b']' if depth == 0 => {
                            close = Some(sc.pos + i);
                            break;
                        }
                        b']' => {
                            depth -= 1;
                            if depth == 0 {
                                last_row_end = Some(sc.pos + i);
                            }
                        }
                        _ => {}
                    }
                }
                let end = match (close, last_row_end) {
                    (Some(c), _) => c,
                    (None, Some(e)) => e + 1,
                    (None, None) => {
                        if !sc.fill()? {
                            return Err(Fault::Syntax(
                                sc.at(),
                                "unexpected end of file in records",
                            ));
                        }
                        continue;
                    }
                };
                // After the previous block's last row comes one comma.
                let mut region = trim_ws(&sc.buf[sc.pos..end]);
                if !first_block {
                    match region.split_first() {
                        Some((b',', rest)) => region = trim_ws(rest),
                        Some(_) => {
                            return Err(Fault::Syntax(sc.at(), "expected ',' between records"))
                        }
                        None => {}
                    }
                }
                first_block = false;
                // Plain integer rows take the fast path; the first row it does not take, and all after
                // it in this block, go to serde, which also gives the error of a malformed one.
                let taken = old_fast_rows(region, cols, f, count);
                let region = &region[taken..];
                if !region.is_empty() {
                    scratch.clear();
                    scratch.push(b'[');
                    scratch.extend_from_slice(region);
                    scratch.push(b']');
                    let mut de = serde_json::Deserializer::from_slice(scratch);
                    RowsSeed {
                        cols,
                        f: &mut *f,
                        count: &mut *count,
                    }
                    .deserialize(&mut de)
                    .map_err(Fault::Json)?;
                }
                sc.pos = end;
                if close.is_some() {
                    sc.pos += 1;
                    return Ok(());
                }
            }
        }

        fn old_fast_rows<F: FnMut(&Record)>(
            b: &[u8],
            cols: Columns,
            f: &mut F,
            count: &mut u64,
        ) -> usize {
            let ws = |c: u8| matches!(c, b' ' | b'\n' | b'\r' | b'\t');
            let mut i = 0;
            let mut taken = 0;
            loop {
                while i < b.len() && ws(b[i]) {
                    i += 1;
                }
                if i == b.len() {
                    return b.len();
                }
                if b[i] != b'[' {
                    return taken;
                }
                i += 1;
                let mut v = [0u64; COLS];
                let (mut n, mut seen) = (0usize, 0usize);
                loop {
                    while i < b.len() && ws(b[i]) {
                        i += 1;
                    }
                    let start = i;
                    let mut x = 0u64;
                    while i < b.len() && b[i].is_ascii_digit() {
                        match x
                            .checked_mul(10)
                            .and_then(|y| y.checked_add(u64::from(b[i] - b'0')))
                        {
                            Some(y) => x = y,
                            None => return taken,
                        }
                        i += 1;
                    }
                    if i == start {
                        return taken;
                    }
                    if n < MAX_ROW {
                        let c = cols.0[n] as usize;
                        if c < COLS {
                            v[c] = x;
                            seen += 1;
                        }
                    }
                    n += 1;
                    while i < b.len() && ws(b[i]) {
                        i += 1;
                    }
                    match b.get(i) {
                        Some(b',') => i += 1,
                        Some(b']') => {
                            i += 1;
                            break;
                        }
                        _ => return taken,
                    }
                }
                if seen < COLS {
                    return taken;
                }
                while i < b.len() && ws(b[i]) {
                    i += 1;
                }
                match b.get(i) {
                    Some(b',') => i += 1,
                    None => i = b.len(),
                    // Not a separator: serde reads this row again and reports the fault.
                    Some(_) => return taken,
                }
                *count += 1;
                f(&Record {
                    time: v[0],
                    value: v[1] as u32,
                    cu: v[2] as u32,
                    simd: v[3] as u32,
                    wave_id: v[4] as u32,
                    flags: v[5] as u32,
                });
                taken = i;
            }
        }
    }

    fn outcome(
        text: &[u8],
        block: usize,
        trickle: usize,
        reference: bool,
    ) -> (Vec<Record>, Result<u64, String>) {
        let mut v = Vec::new();
        let path = Path::new("t.json");
        let res = if reference {
            reference::read_blocks(Trickle(text, trickle), path, block, |r| v.push(*r))
        } else {
            read_blocks(Trickle(text, trickle), path, block, |r| v.push(*r))
        };
        (v, res.map(|s| s.records).map_err(|e| e.to_string()))
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A records file with odd spacing, row widths and numbers.
    fn document(rng: &mut Rng) -> Vec<u8> {
        let ws = |rng: &mut Rng| -> &'static str {
            ["", "", "", " ", "\n", " \r\n\t "][rng.below(6) as usize]
        };
        let mut s = String::new();
        s.push_str(ws(rng));
        s.push('{');
        if rng.below(3) == 0 {
            s.push_str(r#""records_schema":["value","time","cu","simd","wave_id","flags"],"#);
        }
        if rng.below(4) == 0 {
            s.push_str(r#""meta":{"a":[1,"]\"[",{"b":[]}]},"#);
        }
        s.push_str("\"records\"");
        s.push_str(ws(rng));
        s.push(':');
        s.push_str(ws(rng));
        s.push('[');
        let rows = rng.below(40);
        for r in 0..rows {
            if r > 0 {
                s.push_str(ws(rng));
                s.push(',');
            }
            s.push_str(ws(rng));
            s.push('[');
            let cols = if rng.below(8) == 0 { 7 } else { 6 };
            for c in 0..cols {
                if c > 0 {
                    s.push_str(ws(rng));
                    s.push(',');
                }
                s.push_str(ws(rng));
                let x = match rng.below(10) {
                    0 => u64::MAX - rng.below(3),
                    1 => rng.next(),
                    2 => 0,
                    _ => rng.below(100_000),
                };
                s.push_str(&x.to_string());
                s.push_str(ws(rng));
            }
            s.push(']');
        }
        if rows > 0 && rng.below(10) == 0 {
            s.push(',');
        }
        s.push_str(ws(rng));
        s.push(']');
        if rng.below(4) == 0 {
            s.push_str(r#","tail":"x""#);
        }
        s.push('}');
        s.into_bytes()
    }

    /// A few random edits: bytes that matter to the readers, and cuts.
    fn mutate(rng: &mut Rng, mut d: Vec<u8>) -> Vec<u8> {
        const ALPHABET: &[u8] = b"[],0123456789 \n-.e+x\"{}:";
        for _ in 0..1 + rng.below(3) {
            if d.is_empty() {
                break;
            }
            let at = rng.below(d.len() as u64) as usize;
            let c = ALPHABET[rng.below(ALPHABET.len() as u64) as usize];
            match rng.below(4) {
                0 => d[at] = c,
                1 => d.insert(at, c),
                2 => {
                    d.remove(at);
                }
                _ => d.truncate(at),
            }
        }
        d
    }

    #[test]
    fn streaming_matches_the_block_reader() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut faults = 0;
        for case in 0..6000 {
            let doc = document(&mut rng);
            let doc = if case % 3 == 0 {
                doc
            } else {
                mutate(&mut rng, doc)
            };
            for (block, trickle) in [
                (1 << 20, 1 << 20),
                (1, 1),
                (3, 2),
                (7, 5),
                (16, 64),
                (61, 7),
            ] {
                let want = outcome(&doc, block, trickle, true);
                let got = outcome(&doc, block, trickle, false);
                assert_eq!(
                    got,
                    want,
                    "block {block} trickle {trickle}: {}",
                    String::from_utf8_lossy(&doc)
                );
                faults += usize::from(want.1.is_err());
            }
        }
        // The edits do reach the fault paths.
        assert!(faults > 1000, "{faults}");
    }
}

//! Streaming reader of `shaderdata_<se>_<i>.json` files.
//!
//! The files hold `{"records_schema": [...], "records": [[time, value, cu, simd, wave_id, flags],
//! ...]}`. A small scanner walks the top-level object through one read buffer, so memory does not
//! grow with the file ([`read_from`]).
//!
//! One row reader, `plain_rows`, takes the rows of plain integers straight from the buffer:
//! rocprofv3's compact rows in the default column order by its fast path `fast_row` (a few
//! 8-byte loads a row), any other plain row by `parse_row` (any column order, whitespace).
//! A row neither takes (a sign, a fraction, a number past `u64::MAX`) is serde's to read or
//! reject (`RowSeed`). `fast_row` takes only rows that `parse_row` reads the same way (a
//! test checks), and every path makes its record with `Record::of_row`.

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

    /// A row's fields as parsed, the 32-bit ones truncated.
    #[inline(always)]
    fn of_row(time: u64, value: u64, cu: u64, simd: u64, wave_id: u64, flags: u64) -> Record {
        Record {
            time,
            value: value as u32,
            cu: cu as u32,
            simd: simd as u32,
            wave_id: wave_id as u32,
            flags: flags as u32,
        }
    }

    /// A row's fields gathered in the default column order ([`DEFAULT_SCHEMA`]).
    #[inline(always)]
    fn of_columns(v: &[u64; COLS]) -> Record {
        Record::of_row(v[0], v[1], v[2], v[3], v[4], v[5])
    }
}

/// The column order of rocprofv3's `records_schema`.
pub const DEFAULT_SCHEMA: [&str; 6] = ["time", "value", "cu", "simd", "wave_id", "flags"];

const COLS: usize = 6;
const MAX_ROW: usize = 16;

/// Maps each row position to one of the six fields (or none).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Columns([u8; MAX_ROW]);

impl Columns {
    fn default_order() -> Columns {
        DEFAULT_ORDER
    }

    /// The columns of a `records_schema`: the first column of each name is used.
    fn from_schema(names: &[String]) -> Columns {
        let mut c = [u8::MAX; MAX_ROW];
        for (f, want) in DEFAULT_SCHEMA.iter().enumerate() {
            if let Some(i) = names.iter().take(MAX_ROW).position(|n| n == want) {
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
/// A file that breaks off or turns malformed part-way gives [`Error::Json`] or
/// [`Error::Syntax`] after the records before the fault have been handed over; `ReadStats` of
/// the good part is then the error's [`Error::records_before_fault`].
pub fn read_file<F: FnMut(&Record)>(path: &Path, f: F) -> Result<ReadStats, Error> {
    let file =
        crate::input::open_input(path, crate::input::MAX_STREAMED_JSON, "a shaderdata file")?;
    let reader = BufReader::with_capacity(1 << 20, file);
    read_from(reader, path, f)
}

/// How much of a file [`first_time`] reads.
const FIRST_TIME_BYTES: u64 = 64 << 10;

/// The time of the first record of `path`, from its first 64 KiB (`None` when the file cannot
/// be read or holds no record there). A chunk file's first record tells where it belongs among
/// the chunks of its shader engine, whatever order `filenames.json` lists them in.
pub fn first_time(path: &Path) -> Option<u64> {
    use std::io::Read as _;
    let file = crate::input::open_input(path, crate::input::MAX_STREAMED_JSON, "a shaderdata file")
        .ok()?;
    let mut first = None;
    // The read stops at the byte bound, an error the first record does not depend on.
    let _ = read_blocks(
        file.take(FIRST_TIME_BYTES),
        path,
        FIRST_TIME_BYTES as usize,
        |r| {
            first.get_or_insert(r.time);
        },
    );
    first
}

/// Like [`read_file`], from any reader.
///
/// A small scanner walks the top-level object (keys and other values go to serde). The rows of
/// the `records` array are parsed straight from the read buffer while they are plain
/// non-negative integers, the only form rocprofv3 writes; any other row is handed whole to
/// serde, which reads it or gives the error. So what is read, and whether it is an error, is
/// what serde reading the whole file would give (the property test below holds the two side
/// by side), while memory stays at one buffer whatever the file size.
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
        // Zeroed memory from the allocator (calloc): only what is read into is touched.
        buf: vec![0; block],
        pos: 0,
        end: 0,
        eof: false,
        consumed: 0,
    };
    let mut count = 0u64;
    let res = walk(&mut sc, &mut f, &mut count);
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
        Err(Fault::Syntax(at, what)) => Err(Error::Syntax {
            path: path.to_path_buf(),
            records: count,
            what,
            at,
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
    /// Read so far: `buf[pos..end]` is still to be scanned.
    buf: Vec<u8>,
    pos: usize,
    end: usize,
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
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.consumed += self.pos as u64;
            self.pos = 0;
        }
        // As much as the buffer holds, straight into it: a read this large passes by a
        // `BufReader` in front. It grows only for a value longer than it.
        if self.end == self.buf.len() {
            self.buf.resize(2 * self.buf.len().max(1), 0);
        }
        let mut got = 0;
        while self.end < self.buf.len() {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => {
                    self.end += n;
                    got += n;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Fault::Io(e)),
            }
        }
        Ok(got > 0)
    }

    fn at(&self) -> u64 {
        self.consumed + self.pos as u64
    }

    fn peek(&mut self) -> Result<Option<u8>, Fault> {
        while self.pos >= self.end {
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
    f: &mut F,
    count: &mut u64,
) -> Result<bool, Fault> {
    let mut cols = Columns::default_order();
    let (mut found, mut schema) = (false, false);
    sc.expect(b'{', "expected an object")?;
    if sc.skip_ws()? == Some(b'}') {
        sc.pos += 1;
        return end_of_document(sc).map(|()| false);
    }
    loop {
        let key: String = serde_json::from_slice(&sc.value_bytes()?).map_err(Fault::Json)?;
        sc.expect(b':', "expected ':'")?;
        if key == "records" {
            if found {
                return Err(Fault::Syntax(sc.at(), "a second \"records\" array"));
            }
            sc.expect(b'[', "\"records\" is not an array")?;
            records(sc, cols, f, count)?;
            found = true;
        } else {
            let v = sc.value_bytes()?;
            if key == "records_schema" {
                if schema {
                    return Err(Fault::Syntax(sc.at(), "a second \"records_schema\""));
                }
                schema = true;
                let names: Option<Vec<String>> = serde_json::from_slice(&v).map_err(Fault::Json)?;
                let given = names.map_or(Columns::default_order(), |n| Columns::from_schema(&n));
                if found && given != cols {
                    // The rows were read in another order already.
                    return Err(Fault::Syntax(
                        sc.at(),
                        "\"records_schema\" after \"records\" names another column order",
                    ));
                }
                cols = given;
            } else {
                // Skipped, but only when it is JSON.
                serde_json::from_slice::<de::IgnoredAny>(&v).map_err(Fault::Json)?;
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
    end_of_document(sc)?;
    Ok(found)
}

/// Only whitespace may follow the top-level object.
fn end_of_document<R: Read>(sc: &mut Scanner<R>) -> Result<(), Fault> {
    match sc.skip_ws()? {
        None => Ok(()),
        Some(_) => Err(Fault::Syntax(
            sc.at(),
            "trailing characters after the object",
        )),
    }
}

/// The rows of the records array, after its '['; consumes the closing ']'.
fn records<R: Read, F: FnMut(&Record)>(
    sc: &mut Scanner<R>,
    cols: Columns,
    f: &mut F,
    count: &mut u64,
) -> Result<(), Fault> {
    const EOF: &str = "unexpected end of file in records";
    match sc.skip_ws()? {
        Some(b']') => {
            sc.pos += 1;
            return Ok(());
        }
        None => return Err(Fault::Syntax(sc.at(), EOF)),
        Some(_) => {}
    }
    loop {
        // At a row. Plain rows go straight from the buffer.
        let (taken, stop) = plain_rows(&sc.buf[sc.pos..sc.end], &cols, f, count);
        sc.pos += taken;
        match stop {
            Stop::Cut => {
                // The rest of the row is still to be read (`fill` keeps what is not taken).
                if !sc.fill()? {
                    return Err(Fault::Syntax(sc.at(), EOF));
                }
                continue;
            }
            Stop::Other => {
                let row = sc.value_bytes()?;
                let mut de = serde_json::Deserializer::from_slice(&row);
                let r = RowSeed { cols }
                    .deserialize(&mut de)
                    .and_then(|r| de.end().map(|()| r))
                    .map_err(Fault::Json)?;
                *count += 1;
                f(&r);
            }
            Stop::AfterRow => {}
        }
        match sc.skip_ws()? {
            Some(b',') => {
                sc.pos += 1;
                if sc.skip_ws()?.is_none() {
                    return Err(Fault::Syntax(sc.at(), EOF));
                }
            }
            Some(b']') => {
                sc.pos += 1;
                return Ok(());
            }
            None => return Err(Fault::Syntax(sc.at(), EOF)),
            Some(_) => return Err(Fault::Syntax(sc.at(), "expected ',' or ']' after a record")),
        }
    }
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t')
}

/// Why [`plain_rows`] stopped.
enum Stop {
    /// A row was handed over; what follows it is not a comma in these bytes.
    AfterRow,
    /// The bytes end inside the row at the index given.
    Cut,
    /// The row at the index given is not plain: serde reads it.
    Other,
}

/// Hands over the plain rows `[1,2,3,...]` at the start of `b`, separated by commas; gives the
/// bytes taken (up to the start of the row it stopped at, or after the last row) and why it
/// stopped.
#[inline]
fn plain_rows<F: FnMut(&Record)>(
    b: &[u8],
    cols: &Columns,
    f: &mut F,
    count: &mut u64,
) -> (usize, Stop) {
    let default = *cols == DEFAULT_ORDER;
    let mut i = 0;
    loop {
        if default {
            // Rows as rocprofv3 writes them, while a whole window is left.
            let last = b.len().saturating_sub(FAST_SPAN);
            let mut n = 0;
            while i <= last && b.len() >= FAST_SPAN {
                let w: &[u8; FAST_SPAN] = b[i..i + FAST_SPAN].try_into().expect("a window");
                let Some((r, next)) = fast_row(w) else { break };
                n += 1;
                f(&r);
                if w[next] != b',' {
                    *count += n;
                    return (i + next, Stop::AfterRow);
                }
                i += next + 1;
            }
            *count += n;
        }
        match parse_row(b, i, cols) {
            Ok((r, next)) => {
                *count += 1;
                f(&r);
                if b.get(next) == Some(&b',') {
                    i = next + 1;
                } else {
                    return (next, Stop::AfterRow);
                }
            }
            Err(RowFault::Cut) => return (i, Stop::Cut),
            Err(RowFault::Odd) => return (i, Stop::Other),
        }
    }
}

/// The bytes [`fast_row`] looks at: the longest row it takes, and the byte after it, with room
/// for its eight-byte loads.
const FAST_SPAN: usize = 128;

/// The eight bytes at `w[i..]`, the first lowest.
#[inline(always)]
fn load8(w: &[u8; FAST_SPAN], i: usize) -> u64 {
    u64::from_le_bytes(w[i..i + 8].try_into().expect("8 bytes"))
}

/// How many of the 8 bytes of `v` (first byte lowest) are ASCII digits before the first that
/// is not.
#[inline(always)]
fn leading_digits(v: u64) -> usize {
    // A digit's byte xor '0' is 0..=9: adding 0x76 leaves its high bit clear. Any other byte
    // has its high bit set, by the sum or by itself; a carry out of it reaches only bytes after.
    let t = v ^ ASCII_ZEROS;
    let bad = (t.wrapping_add(0x7676_7676_7676_7676) | t) & 0x8080_8080_8080_8080;
    bad.trailing_zeros() as usize / 8
}

/// The value of the first `n` (1..=8) bytes of `v`, all ASCII digits, most significant first.
#[inline(always)]
fn leading_value(v: u64, n: usize) -> u64 {
    // The digits to the top bytes (zeros, as leading digits, below), then pairs, quads, all.
    let d = (v & 0x0F0F_0F0F_0F0F_0F0F) << (8 * (8 - n));
    let d = (d.wrapping_mul(10 << 8 | 1) >> 8) & 0x00FF_00FF_00FF_00FF;
    let d = (d.wrapping_mul(100 << 16 | 1) >> 16) & 0x0000_FFFF_0000_FFFF;
    d.wrapping_mul(10_000 << 32 | 1) >> 32
}

/// The number of 1 to 16 digits at `w[i..]` without a leading zero, followed by `sep`: its
/// value and the index after `sep`. `i` is at most 86.
#[inline(always)]
fn fast_field(w: &[u8; FAST_SPAN], i: usize, sep: u8) -> Option<(u64, usize)> {
    let v = load8(w, i);
    let n = leading_digits(v);
    let (x, n) = match n {
        0 => return None,
        8 => {
            let v2 = load8(w, i + 8);
            match leading_digits(v2) {
                0 => (leading_value(v, 8), 8),
                // Past 16 digits, the byte after them is no `sep`.
                m => (leading_value(v, 8) * POW10[m] + leading_value(v2, m), 8 + m),
            }
        }
        n => (leading_value(v, n), n),
    };
    // No leading zero (serde refuses "01").
    if v as u8 == b'0' && n > 1 {
        return None;
    }
    (w[i + n] == sep).then_some((x, i + n + 1))
}

/// The row at the start of `w` when it has exactly the form rocprofv3 writes in the default
/// column order: `[` six numbers of at most 16 digits, without leading zeros, separated by
/// single commas `]`, no whitespace. The record and the index after the `]`, at most 103; `None`
/// for anything else (which [`parse_row`] then reads: what this takes, it reads the same way).
#[inline(always)]
fn fast_row(w: &[u8; FAST_SPAN]) -> Option<(Record, usize)> {
    if w[0] != b'[' {
        return None;
    }
    let (time, i) = fast_field(w, 1, b',')?;
    let (value, i) = fast_field(w, i, b',')?;
    // Most often cu, simd, wave_id and flags are one digit each: `d,d,d,d]`, one load.
    let t = load8(w, i) ^ 0x5D30_2C30_2C30_2C30;
    let bad = ((t.wrapping_add(0x7676_7676_7676_7676) | t) & 0x8080_8080_8080_8080)
        | (t & 0xFF00_FF00_FF00_FF00);
    let (cu, simd, wave_id, flags, i) = if bad == 0 {
        (
            t & 0xFF,
            t >> 16 & 0xFF,
            t >> 32 & 0xFF,
            t >> 48 & 0xFF,
            i + 8,
        )
    } else {
        let (cu, i) = fast_field(w, i, b',')?;
        let (simd, i) = fast_field(w, i, b',')?;
        let (wave_id, i) = fast_field(w, i, b',')?;
        let (flags, i) = fast_field(w, i, b']')?;
        (cu, simd, wave_id, flags, i)
    };
    Some((Record::of_row(time, value, cu, simd, wave_id, flags), i))
}

const ASCII_ZEROS: u64 = 0x3030_3030_3030_3030;
const HIGH_NIBBLES: u64 = 0xF0F0_F0F0_F0F0_F0F0;
const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// How many of the 8 bytes of `v` (first byte lowest) are ASCII digits before the first that
/// is not.
#[inline(always)]
fn digit_run(v: u64) -> usize {
    // A digit is 0x30..=0x39: high nibble 3, and still 3 after adding 6. A carry out of a
    // byte that is no digit only reaches bytes after it.
    let bad = ((v & HIGH_NIBBLES) ^ ASCII_ZEROS)
        | ((v.wrapping_add(0x0606_0606_0606_0606) & HIGH_NIBBLES) ^ ASCII_ZEROS);
    if bad == 0 {
        8
    } else {
        bad.trailing_zeros() as usize / 8
    }
}

/// The value of the first `n` (1..=8) bytes of `v`, all ASCII digits, most significant first.
#[inline(always)]
fn digits_value(v: u64, n: usize) -> u64 {
    // Drop the bytes after the digits; the digits' places below become zeros.
    let mut d = v.wrapping_sub(ASCII_ZEROS) << (8 * (8 - n));
    d = (d.wrapping_mul(10) + (d >> 8)) & 0x00FF_00FF_00FF_00FF;
    d = (d.wrapping_mul(100) + (d >> 16)) & 0x0000_FFFF_0000_FFFF;
    (d.wrapping_mul(10_000) + (d >> 32)) & 0xFFFF_FFFF
}

/// The decimal number at `b[i..]` (possibly no digits at all): its value and the index after
/// it. Eight bytes at a time while that many are left.
#[inline(always)]
fn number(b: &[u8], start: usize) -> Result<(u64, usize), RowFault> {
    let (mut x, mut i) = (0u64, start);
    while let Some(chunk) = b.get(i..i + 8) {
        let v = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let n = digit_run(v);
        if n == 0 {
            return Ok((x, i));
        }
        if i - start + n > 19 {
            return number_checked(b, start);
        }
        x = x * POW10[n] + digits_value(v, n);
        i += n;
        if n < 8 {
            return Ok((x, i));
        }
    }
    while i < b.len() {
        let d = b[i].wrapping_sub(b'0');
        if d > 9 {
            return Ok((x, i));
        }
        if i - start == 19 {
            return number_checked(b, start);
        }
        x = x * 10 + u64::from(d);
        i += 1;
    }
    Err(RowFault::Cut)
}

/// [`number`] for 20 digits and more: `Odd` past `u64::MAX`.
#[cold]
fn number_checked(b: &[u8], mut i: usize) -> Result<(u64, usize), RowFault> {
    let mut x = 0u64;
    while let Some(d) = b.get(i).map(|c| c.wrapping_sub(b'0')).filter(|d| *d <= 9) {
        x = x
            .checked_mul(10)
            .and_then(|y| y.checked_add(u64::from(d)))
            .ok_or(RowFault::Odd)?;
        i += 1;
    }
    if i == b.len() {
        return Err(RowFault::Cut);
    }
    Ok((x, i))
}

/// Why [`parse_row`] did not give a row.
enum RowFault {
    /// Not a row of plain non-negative integers (or one that does not fit), or not a row.
    Odd,
    /// The bytes end inside the row.
    Cut,
}

const DEFAULT_ORDER: Columns = {
    let mut c = [u8::MAX; MAX_ROW];
    let mut i = 0;
    while i < COLS {
        c[i] = i as u8;
        i += 1;
    }
    Columns(c)
};

/// Parses the plain integer row, in any column order and width, `[1,2,3,...]` that starts at `b[i]` after optional whitespace;
/// gives the record and the index after its ']'. Takes only what serde reads the same way:
/// no leading zeros, no signs, fractions or exponents, nothing past `u64::MAX`.
#[inline(always)]
fn parse_row(b: &[u8], mut i: usize, cols: &Columns) -> Result<(Record, usize), RowFault> {
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    match b.get(i) {
        Some(b'[') => i += 1,
        Some(_) => return Err(RowFault::Odd),
        None => return Err(RowFault::Cut),
    }
    let mut v = [0u64; COLS];
    let (mut n, mut seen) = (0usize, 0usize);
    loop {
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        let start = i;
        let x;
        (x, i) = number(b, i)?;
        if i == start || (b[start] == b'0' && i - start > 1) {
            return Err(RowFault::Odd);
        }
        if let Some(&c) = cols.0.get(n) {
            if (c as usize) < COLS {
                v[c as usize] = x;
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
    Ok((Record::of_columns(&v), i))
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
        Ok(Record::of_columns(&v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

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
        // The same among compact rows (which a large block reads by the fast path); 16 digits
        // are still fast, more go to serde too.
        let rows = "[1,2,3,4,5,6],".repeat(20);
        for odd in [
            "[01,2,3,4,5,6]",
            "[1,2,3,4,5,06]",
            "[1,2,3,4,5,-6]",
            "[1,2,3,4,5,6.0]",
            "[1,2,3,4,5,18446744073709551616]",
            "[1,2,3,4,5]",
            "[1,2,3,4,5,6,]",
            "[1,2,3,4,5,6][1,2,3,4,5,6]",
        ] {
            let doc = format!("{{\"records\":[{rows}{odd},{rows}[1,2,3,4,5,6]]}}");
            let e = read(&doc, 1 << 20).unwrap_err();
            let good = 20 + usize::from(odd.starts_with("[1,2,3,4,5,6]"));
            let after = format!("after {good} records");
            assert!(e.to_string().contains(&after), "{odd}: {e}");
        }
        let doc = format!(
            "{{\"records\":[{rows}[1234567890123456,9876543210123456,3,40,5,0],\
             [12345678901234567,1,2,3,4,5]]}}"
        );
        let v = read(&doc, 1 << 20).unwrap();
        assert_eq!(v.len(), 22);
        assert_eq!(v[20].time, 1234567890123456);
        assert_eq!(v[20].value, 9876543210123456u64 as u32);
        assert_eq!((v[20].cu, v[20].simd, v[20].wave_id), (3, 40, 5));
        assert_eq!((v[21].time, v[21].flags), (12345678901234567, 5));
    }

    /// The fast path takes the compact rows in rocprofv3's form with at most 16 digits a
    /// number, and reads them as the general row parser does (the record and where the row
    /// ends); everything else, edited rows too, it leaves to that parser.
    #[test]
    fn fast_rows_read_as_the_general_parser() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let (mut fast, mut short_tails, mut edited) = (0, 0, 0);
        for _ in 0..200_000 {
            let mut row = b"[".to_vec();
            let mut plain = true;
            let mut short_tail = true;
            for c in 0..COLS {
                if c > 0 {
                    row.push(b',');
                }
                let digits = match rng.below(4) {
                    0 => 1,
                    1 => 1 + rng.below(8),
                    _ => 1 + rng.below(20),
                } as usize;
                let start = row.len();
                row.extend((0..digits).map(|_| b'0' + rng.below(10) as u8));
                plain &= digits <= 16 && (digits == 1 || row[start] != b'0');
                short_tail &= c < 2 || digits == 1;
            }
            row.push(b']');
            if rng.below(8) == 0 {
                edit_once(&mut rng, &mut row);
                plain = false;
                edited += 1;
            }
            // What follows: the next row, the end of the array, or anything.
            row.extend_from_slice([&b",["[..], b"]}", b" ,", b"9"][rng.below(4) as usize]);
            while row.len() < FAST_SPAN {
                row.push(ALPHABET[rng.below(ALPHABET.len() as u64) as usize]);
            }
            let w: &[u8; FAST_SPAN] = row[..FAST_SPAN].try_into().unwrap();
            let got = fast_row(w);
            let want = parse_row(w, 0, &DEFAULT_ORDER).ok();
            let text = String::from_utf8_lossy(w);
            if plain {
                assert_eq!(got, want, "{text}");
                assert!(got.is_some(), "{text}");
                fast += 1;
                short_tails += usize::from(short_tail);
            } else {
                assert!(got.is_none() || got == want, "{text}");
            }
        }
        assert!(
            fast > 50_000 && short_tails > 1_000 && edited > 20_000,
            "{fast} {short_tails} {edited}"
        );
    }

    #[test]
    fn numbers_eight_bytes_at_a_time_match_byte_by_byte() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for _ in 0..20_000 {
            let x = rng.next();
            let digits = (x % 23) as usize;
            let mut text: String = (0..digits)
                .map(|k| char::from(b'0' + ((x >> (k % 60)) % 10) as u8))
                .collect();
            text.push_str([",", "]", " ", ":", "/", "\u{ff}"][(x % 6) as usize]);
            text.push_str(&"9".repeat((x % 9) as usize));
            let b = text.as_bytes();
            let want = match b.iter().take_while(|c| c.is_ascii_digit()).count() {
                n if n == b.len() => Err(()),
                n => text[..n].parse::<u64>().map(|v| (v, n)).or(if n == 0 {
                    Ok((0, 0))
                } else {
                    Err(())
                }),
            };
            let got = number(b, 0).map_err(|_| ());
            assert_eq!(got, want, "{text}");
        }
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

    /// What serde reading the whole document gives: the records, or that it is an error.
    fn by_serde(doc: &[u8]) -> Option<Vec<Record>> {
        #[derive(serde::Deserialize)]
        struct Doc {
            records_schema: Option<Vec<String>>,
            records: Vec<Vec<u64>>,
        }
        let d: Doc = serde_json::from_slice(doc).ok()?;
        let names = d
            .records_schema
            .unwrap_or_else(|| DEFAULT_SCHEMA.map(String::from).to_vec());
        // Where each column is; a schema without one makes every row an error.
        let at = DEFAULT_SCHEMA.map(|want| names.iter().take(MAX_ROW).position(|n| n == want));
        d.records
            .iter()
            .map(|row| {
                let v = |f: usize| row.get(at[f]?).copied();
                Some(Record {
                    time: v(0)?,
                    value: v(1)? as u32,
                    cu: v(2)? as u32,
                    simd: v(3)? as u32,
                    wave_id: v(4)? as u32,
                    flags: v(5)? as u32,
                })
            })
            .collect()
    }

    fn streamed(doc: &[u8], block: usize, trickle: usize) -> (Vec<Record>, Result<u64, String>) {
        let mut v = Vec::new();
        let res = read_blocks(Trickle(doc, trickle), Path::new("t.json"), block, |r| {
            v.push(*r)
        });
        (v, res.map(|s| s.records).map_err(|e| e.to_string()))
    }

    /// A generated document and what the generator knows of it.
    struct Doc {
        text: Vec<u8>,
        /// `records_schema` comes after `records` and orders the columns otherwise: the rows
        /// were read before the schema was known, so the reader must refuse the file.
        late_schema: bool,
    }

    /// A shaderdata document of the shapes rocprofv3 and att_tool write, and around them:
    /// whitespace, field order, unknown fields with escapes and nesting, schemas with other
    /// column orders and extra columns, numbers at the edges and (rarely) numbers serde reads
    /// differently or not at all.
    fn document(rng: &mut Rng) -> Doc {
        // A third of the documents have no whitespace at all, as rocprofv3 writes them.
        let compact = rng.below(3) == 0;
        let ws = |rng: &mut Rng| {
            if compact {
                ""
            } else {
                *rng.pick(&["", "", "", " ", "\n", " \r\n\t "])
            }
        };
        let mut schema: Vec<&str> = DEFAULT_SCHEMA.to_vec();
        if rng.below(3) == 0 {
            for i in (1..schema.len()).rev() {
                schema.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
        if rng.below(4) == 0 {
            let at = rng.below(schema.len() as u64 + 1) as usize;
            schema.insert(at, *rng.pick(&["extra", "time", "pc"]));
        }
        let width = schema.len();
        let schema_text = format!(
            "{}\"records_schema\"{}:{}[{}]",
            ws(rng),
            ws(rng),
            ws(rng),
            schema
                .iter()
                .map(|n| format!("\"{n}\""))
                .collect::<Vec<_>>()
                .join(&format!("{},{}", ws(rng), ws(rng)))
        );
        let mut rows = String::new();
        let n = rng.below(40);
        for r in 0..n {
            if r > 0 {
                rows.push_str(ws(rng));
                rows.push(',');
            }
            rows.push_str(ws(rng));
            rows.push('[');
            let cols = if rng.below(300) == 0 {
                width - 1
            } else {
                width + usize::from(rng.below(10) == 0)
            };
            for c in 0..cols {
                if c > 0 {
                    rows.push_str(ws(rng));
                    rows.push(',');
                }
                rows.push_str(ws(rng));
                let x = match rng.below(1000) {
                    0..=9 => (u64::MAX - rng.below(3)).to_string(),
                    10 => "18446744073709551616".into(),
                    11..=30 => "0".into(),
                    31 => (*rng.pick(&["-0", "1.0", "1e2", "007", "-3", "\"7\"", "null", "[1]"]))
                        .into(),
                    32..=130 => rng.next().to_string(),
                    131..=160 => (rng.next() >> rng.below(64)).to_string(),
                    161..=500 => rng.below(10).to_string(),
                    _ => rng.below(100_000).to_string(),
                };
                rows.push_str(&x);
                rows.push_str(ws(rng));
            }
            rows.push(']');
        }
        if n > 0 && rng.below(30) == 0 {
            rows.push(',');
        }
        let records = format!(
            "{}\"records\"{}:{}[{rows}{}]",
            ws(rng),
            ws(rng),
            ws(rng),
            ws(rng)
        );
        let unknown = [
            r#""meta":{"a":[1,"]\"[",{"b":[]}],"c":-1.5e3}"#,
            r#""m\u0065ta2":"\\\"\u005d}""#,
            r#""tail":[[1,2,3,4,5,6],"x"]"#,
            r#""n":null"#,
        ];
        let mut fields = Vec::new();
        for u in unknown {
            if rng.below(4) == 0 {
                fields.push(format!("{}{u}", ws(rng)));
            }
        }
        fields.insert(rng.below(fields.len() as u64 + 1) as usize, records);
        let with_schema = rng.below(3) != 0;
        let mut late_schema = false;
        if with_schema {
            let at = rng.below(fields.len() as u64 + 1) as usize;
            let records_at = fields
                .iter()
                .position(|f| f.contains("\"records\""))
                .unwrap();
            let names: Vec<String> = schema.iter().map(|s| s.to_string()).collect();
            late_schema =
                at > records_at && Columns::from_schema(&names) != Columns::default_order();
            fields.insert(at, schema_text);
        }
        let text = format!("{}{{{}{}}}{}", ws(rng), fields.join(","), ws(rng), ws(rng));
        Doc {
            text: text.into_bytes(),
            late_schema,
        }
    }

    /// Bytes that matter to the readers.
    const ALPHABET: &[u8] = b"[],0123456789 \n-.e+x\"{}:\\";

    /// One random edit of a non-empty `d`: a byte of [`ALPHABET`] replaces, joins or a byte goes.
    fn edit_once(rng: &mut Rng, d: &mut Vec<u8>) {
        let at = rng.below(d.len() as u64) as usize;
        let c = ALPHABET[rng.below(ALPHABET.len() as u64) as usize];
        match rng.below(3) {
            0 => d[at] = c,
            1 => d.insert(at, c),
            _ => {
                d.remove(at);
            }
        }
    }

    /// A few random edits.
    fn mutate(rng: &mut Rng, mut d: Vec<u8>) -> Vec<u8> {
        for _ in 0..1 + rng.below(3) {
            if d.is_empty() {
                break;
            }
            edit_once(rng, &mut d);
        }
        d
    }

    /// The streaming reader agrees with serde reading the whole document: the same records
    /// when serde reads it, an error when serde refuses it; a file cut short hands over a
    /// prefix of its records and then gives an error.
    #[test]
    fn streaming_reader_agrees_with_serde() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut read, mut refused, mut cut) = (0, 0, 0);
        let splits = [
            (1 << 20, 1 << 20),
            (1, 1),
            (3, 2),
            (7, 5),
            (16, 64),
            (61, 7),
        ];
        for case in 0..4000 {
            let doc = document(&mut rng);
            let whole = by_serde(&doc.text);
            let (block, trickle) = splits[case % splits.len()];
            let text = String::from_utf8_lossy(&doc.text).into_owned();
            let (got, res) = streamed(&doc.text, block, trickle);
            match (&whole, doc.late_schema) {
                (Some(_), true) => assert!(res.is_err(), "late schema read: {text}"),
                (Some(want), false) => {
                    assert_eq!(res, Ok(want.len() as u64), "{text}");
                    assert_eq!(&got, want, "{text}");
                    read += 1;
                }
                (None, _) => {
                    assert!(
                        res.is_err(),
                        "serde refuses, the reader took {got:?}: {text}"
                    );
                    refused += 1;
                }
            }
            // Cut short anywhere: a prefix of the records, then an error.
            if let (Some(want), false) = (&whole, doc.late_schema) {
                let at = rng.below(doc.text.len() as u64) as usize;
                let head = &doc.text[..at];
                if by_serde(head).is_none() {
                    let (got, res) = streamed(head, block, trickle);
                    assert!(res.is_err(), "cut at {at}: {text}");
                    assert!(want.starts_with(&got), "cut at {at}: {text}");
                    cut += 1;
                }
            }
            // Edited: never records serde would not give.
            let edited = mutate(&mut rng, doc.text.clone());
            let (got, res) = streamed(&edited, block, trickle);
            match by_serde(&edited) {
                Some(want) if res.is_ok() => assert_eq!(got, want),
                Some(_) => {} // a schema moved after the records by the edit
                None => assert!(
                    res.is_err(),
                    "edited: serde refuses, the reader took {got:?}: {}",
                    String::from_utf8_lossy(&edited)
                ),
            }
        }
        // The generator reaches every outcome often.
        assert!(
            read > 1000 && refused > 400 && cut > 1000,
            "{read} {refused} {cut}"
        );
    }
}

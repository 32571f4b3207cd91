//! Static libraries (`ar` archives, GNU and BSD name tables): each ELF member is read like a
//! `.o` file, its code objects' locations prefixed with the member name.
//!
//! ```text
//! "!<arch>\n", then members: 60-byte header { name[16] mtime[12] uid[6] gid[6] mode[8]
//! size[10] "`\n" }, data (padded to an even length). GNU: "/" symbol table, "//" long-name
//! table, "/N" names at offset N of it; BSD: "#1/N" names of N bytes at the start of the data.
//! ```

use crate::{elf, CodeObject, Error};

pub const MAGIC: &[u8] = b"!<arch>\n";

pub fn read(d: &[u8], origin: &str, out: &mut Vec<CodeObject>) -> Result<(), Error> {
    let mut pos = MAGIC.len();
    let mut long_names: &[u8] = &[];
    while pos < d.len() {
        if d.len() - pos < 60 {
            if d[pos..].iter().all(|b| *b == b'\n') {
                break;
            }
            return Err(Error::corrupt(
                origin,
                pos as u64,
                "archive member header truncated",
            ));
        }
        let h = &d[pos..pos + 60];
        if &h[58..60] != b"`\n" {
            return Err(Error::corrupt(
                origin,
                pos as u64,
                "bad archive member header",
            ));
        }
        let field = |r: std::ops::Range<usize>| String::from_utf8_lossy(&h[r]).trim().to_string();
        let size: usize = field(48..58)
            .parse()
            .map_err(|_| Error::corrupt(origin, pos as u64 + 48, "bad archive member size"))?;
        let start = pos + 60;
        let end = start
            .checked_add(size)
            .filter(|e| *e <= d.len())
            .ok_or_else(|| {
                Error::corrupt(origin, pos as u64, "archive member runs past the end")
            })?;
        let raw = field(0..16);
        let mut data = &d[start..end];
        let name = if raw == "//" {
            long_names = data;
            None
        } else if raw == "/" || raw == "/SYM64/" || raw.starts_with("__.SYMDEF") {
            None
        } else if let Some(off) = raw.strip_prefix('/') {
            let off: usize = off.parse().unwrap_or(usize::MAX);
            let n = long_names.get(off..).unwrap_or(&[]);
            let n = n.split(|b| *b == b'\n').next().unwrap_or(&[]);
            Some(String::from_utf8_lossy(n).trim_end_matches('/').to_string())
        } else if let Some(len) = raw.strip_prefix("#1/") {
            let len: usize = len.parse().unwrap_or(0).min(data.len());
            let n = String::from_utf8_lossy(&data[..len])
                .trim_end_matches('\0')
                .to_string();
            data = &data[len..];
            Some(n)
        } else {
            Some(raw.trim_end_matches('/').to_string())
        };
        if let Some(name) = name {
            if data.starts_with(b"\x7fELF") && !elf::is_amdgpu(data) {
                let member = format!("{origin}({name})");
                let first = out.len();
                elf::read_host(data, &member, out)?;
                for co in &mut out[first..] {
                    co.location = format!("member {name}: {}", co.location);
                }
            }
        }
        pos = end + (end & 1);
    }
    Ok(())
}

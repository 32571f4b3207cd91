//! Static libraries (`ar` archives, GNU and BSD name tables), read by `object`'s archive reader:
//! each ELF member is read like a `.o` file, its code objects' locations prefixed with the
//! member name.

use object::read::archive::ArchiveFile;

use crate::{elf, CodeObject, Error};

pub const MAGIC: &[u8] = b"!<arch>\n";

pub fn read(d: &[u8], origin: &str, out: &mut Vec<CodeObject>) -> Result<(), Error> {
    let archive = ArchiveFile::parse(d)
        .map_err(|e| Error::corrupt(origin, 0, format!("bad archive: {e}")))?;
    // Where the next member starts, for the offset of an error (the reader names none).
    let mut next = MAGIC.len() as u64;
    for member in archive.members() {
        let member = member.map_err(|e| Error::corrupt(origin, next, format!("{e}")))?;
        let (start, size) = member.file_range();
        next = start + size + ((start + size) & 1);
        let data = member
            .data(d)
            .map_err(|e| Error::corrupt(origin, start, format!("{e}")))?;
        if data.starts_with(b"\x7fELF") && !elf::is_amdgpu(data) {
            let name = String::from_utf8_lossy(member.name());
            let first = out.len();
            elf::read_host(data, &format!("{origin}({name})"), out)?;
            for co in &mut out[first..] {
                co.location = format!("member {name}: {}", co.location);
            }
        }
    }
    Ok(())
}

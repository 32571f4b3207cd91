//! Reading input files: only regular files, never blocking, bounded. Every
//! crate's inputs are read here: the configuration file, the code objects (`sqtt_codeobj`), the
//! trace tools' files and the raw thread traces.
//!
//! A FIFO, a directory, a device (`/dev/zero`) or a file of a pseudo file system (`/proc`,
//! `/sys`) is refused with a message saying what it is, before anything is read, so nothing
//! blocks and nothing is read without limit. The kind is tested on the path and again on the
//! opened descriptor (`fstat`, `fstatfs`), so a file swapped between the two is still refused
//! (no time-of-check/time-of-use gap), and the size read is the descriptor's. Files are read with
//! `pread` into a buffer of the size `fstat` reported (refused above a limit); a file that shrinks
//! while it is read gives an error and a file rewritten underneath gives stale data, never a
//! signal (a mapped file that is truncated gives SIGBUS: the raw traces, which are mapped, are
//! guarded against it by [`crate::mapped`]).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What a non-regular file is, as words for a message (`None`: a regular file).
pub fn not_regular(ft: &std::fs::FileType) -> Option<&'static str> {
    if ft.is_file() {
        None
    } else if ft.is_dir() {
        Some("a directory")
    } else if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// The pseudo file system a file lives on (`/proc`, `/sys`, ...), whose files report a size of 0
/// or 4096 whatever they hold, or grow without end.
fn pseudo_fs(file: &File) -> Option<&'static str> {
    use std::os::fd::AsRawFd;
    // SAFETY: fstatfs writes a statfs into the zeroed buffer we own; the fd is open.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    // Compared as u64: the field's type differs between targets.
    #[allow(clippy::unnecessary_cast)]
    match st.f_type as u64 {
        0x9fa0 => Some("/proc"),
        0x6265_6572 => Some("sysfs (/sys)"),
        0x6462_6720 => Some("debugfs"),
        0x7472_6163 => Some("tracefs"),
        0x6367_7270 | 0x0027_e0eb => Some("cgroup"),
        0x6c6f_6f70 => Some("securityfs"),
        _ => None,
    }
}

/// Opens a regular file for reading without blocking, and its size. Anything else is an error
/// saying what it is ("it is a FIFO (named pipe), not a regular file").
pub fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    // Looked at before opening, so opening a FIFO or a device has no effect at all.
    if let Some(what) = not_regular(&std::fs::metadata(path)?.file_type()) {
        return Err(invalid(format!("it is {what}, not a regular file")));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if let Some(what) = not_regular(&meta.file_type()) {
        return Err(invalid(format!("it is {what}, not a regular file")));
    }
    if let Some(fs) = pseudo_fs(&file) {
        return Err(invalid(format!(
            "it is a file of the {fs} pseudo file system, not a regular file"
        )));
    }
    Ok((file, meta.len()))
}

/// A buffer of `len` zero bytes, or an error when the memory cannot be had (a size read from an
/// input, or an input's size, must not abort the process: under `ulimit -v` it did, exit 134).
///
/// The memory comes zeroed from the allocator (calloc: fresh pages are zero until written), so a
/// large buffer costs nothing until it is read into; `Vec::resize` wrote every byte first (1 GiB
/// took 20 s in a debug build, and touched every page even when the read then stopped at once).
pub fn zeroed(len: usize) -> io::Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(len).map_err(|_| out_of_memory(len as u64))?;
    // SAFETY: `layout` is of non-zero size. A non-null block from `alloc_zeroed` holds `len`
    // initialised (zero) bytes, allocated by the global allocator with the layout `Vec<u8>` of
    // capacity `len` frees it with (`u8`'s alignment), so the Vec owns it.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(out_of_memory(len as u64));
    }
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// Why `len` bytes could not be had.
pub fn out_of_memory(len: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::OutOfMemory,
        format!("cannot allocate {len} bytes to read it (out of memory, or above `ulimit -v`)"),
    )
}

/// Reads `len` bytes at `offset` (fewer at the end of the file).
pub fn read_at(file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = zeroed(len)?;
    let mut got = 0;
    while got < len {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// Reads all of an open regular file of `len` bytes (its `fstat` size). A file that shrinks while
/// it is read is an error; bytes appended meanwhile are not read.
pub fn read_all(file: &File, len: u64) -> io::Result<Vec<u8>> {
    let want = usize::try_from(len)
        .map_err(|_| invalid(format!("it is {len} bytes, too large for this machine")))?;
    let buf = read_at(file, 0, want)?;
    if buf.len() < want {
        return Err(invalid(format!(
            "it shrank from {want} to {} bytes while it was read (is it being rewritten?)",
            buf.len()
        )));
    }
    Ok(buf)
}

/// Reads a whole regular file of at most `max` bytes; `what` names the kind of input in the
/// message of a file too large ("a configuration file").
pub fn read_regular(path: &Path, max: u64, what: &str) -> io::Result<Vec<u8>> {
    let (file, len) = open_regular(path)?;
    read_opened(&file, len, max, what)
}

/// Reads all of a file [`open_regular`] opened (`len`: its size then), refusing more than `max`
/// bytes.
pub fn read_opened(file: &File, len: u64, max: u64, what: &str) -> io::Result<Vec<u8>> {
    within(len, max, what)?;
    read_all(file, len)
}

/// An error when a file of `len` bytes is more than `max` may be (`what`, the kind of input, as
/// the message names it).
pub fn within(len: u64, max: u64, what: &str) -> io::Result<()> {
    if len > max {
        return Err(invalid(format!(
            "it is {len} bytes; {what} may have at most {max} bytes"
        )));
    }
    Ok(())
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_string(path: &Path, max: u64, what: &str) -> io::Result<String> {
    let (file, len) = open_regular(path)?;
    read_opened_string(&file, len, max, what)
}

/// [`read_opened`] as UTF-8 text.
pub fn read_opened_string(file: &File, len: u64, max: u64, what: &str) -> io::Result<String> {
    String::from_utf8(read_opened(file, len, max, what)?).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it is not UTF-8 text ({e})"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(path: &Path) -> String {
        read_regular(path, 1 << 20, "a test input")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn non_regular_files_are_named_and_never_block() {
        let dir = tempfile::Builder::new()
            .prefix("sqtt-files-input-")
            .tempdir()
            .unwrap()
            .keep();
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(err(&dir), "it is a directory, not a regular file");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Nobody writes to the FIFO: this returns at once only because it is refused.
        assert_eq!(err(&fifo), "it is a FIFO (named pipe), not a regular file");
        let zero = crate::device::char_device(&dir);
        assert_eq!(err(&zero), "it is a character device, not a regular file");
        assert_eq!(
            err(Path::new("/proc/self/status")),
            "it is a file of the /proc pseudo file system, not a regular file"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn zeroed_buffers_are_zero_and_impossible_sizes_are_errors() {
        assert!(zeroed(0).unwrap().is_empty());
        let b = zeroed(3 << 20).unwrap();
        assert_eq!(b.len(), 3 << 20);
        assert!(b.iter().all(|&x| x == 0));
        for len in [usize::MAX, isize::MAX as usize + 1] {
            let e = zeroed(len).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
            assert!(e.to_string().contains(&len.to_string()), "{e}");
        }
    }

    #[test]
    fn size_bound_and_contents() {
        let dir = tempfile::Builder::new()
            .prefix("sqtt-files-size-")
            .tempdir()
            .unwrap()
            .keep();
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f");
        std::fs::write(&f, b"hello").unwrap();
        assert_eq!(read_regular(&f, 5, "x").unwrap(), b"hello");
        assert_eq!(
            read_regular(&f, 4, "a test input").unwrap_err().to_string(),
            "it is 5 bytes; a test input may have at most 4 bytes"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

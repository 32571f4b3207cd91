//! Reading input files safely: only regular files, never blocking, never mapped, bounded.
//!
//! A FIFO, a directory, a device (`/dev/zero`) or a file of a pseudo file system (`/proc`,
//! `/sys`) is refused with a message saying what it is, before anything is read, so nothing
//! blocks and nothing is read without limit. Files are read with `pread` into a buffer of the size
//! `fstat` reported (refused above a limit); a file that shrinks while it is read gives an error
//! and a file rewritten underneath gives stale data, never a signal (a mapped file that is
//! truncated gives SIGBUS).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use sqtt_config::file::not_regular as kind_of;

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
    if let Some(what) = kind_of(&std::fs::metadata(path)?.file_type()) {
        return Err(invalid(format!("it is {what}, not a regular file")));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if let Some(what) = kind_of(&meta.file_type()) {
        return Err(invalid(format!("it is {what}, not a regular file")));
    }
    if let Some(fs) = pseudo_fs(&file) {
        return Err(invalid(format!(
            "it is a file of the {fs} pseudo file system, not a regular file"
        )));
    }
    Ok((file, meta.len()))
}

/// Reads `len` bytes at `offset` (fewer at the end of the file).
pub fn read_at(file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
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
    if len > max {
        return Err(invalid(format!(
            "it is {len} bytes; {what} may have at most {max} bytes"
        )));
    }
    read_all(&file, len)
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_string(path: &Path, max: u64, what: &str) -> io::Result<String> {
    String::from_utf8(read_regular(path, max, what)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not UTF-8 text: {e}")))
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
        let dir = std::env::temp_dir().join(format!("sqtt-codeobj-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(err(&dir), "it is a directory, not a regular file");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Nobody writes to the FIFO: this returns at once only because it is refused.
        assert_eq!(err(&fifo), "it is a FIFO (named pipe), not a regular file");
        assert_eq!(
            err(Path::new("/dev/zero")),
            "it is a character device, not a regular file"
        );
        assert_eq!(
            err(Path::new("/proc/self/status")),
            "it is a file of the /proc pseudo file system, not a regular file"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn size_bound_and_contents() {
        let dir = std::env::temp_dir().join(format!("sqtt-codeobj-size-{}", std::process::id()));
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

#[cfg(test)]
mod race {
    use std::io::{Seek, SeekFrom, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// A bundle whose last entry lies 256 KiB into the file, so reading it touches pages a
    /// truncation removes: mapped, this died with SIGBUS (issue 15).
    fn bundle() -> Vec<u8> {
        let mut far = vec![0x5au8; 256 << 10];
        far[..4].copy_from_slice(crate::elf::BITCODE_MAGIC);
        crate::bundle::write_plain(
            &[
                ("host-x86_64-unknown-linux-gnu", &[][..]),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", &far[..]),
            ],
            4096,
        )
    }

    /// A rewriter truncates and rewrites the file in place (same inode) while `read_path` reads
    /// it thousands of times: every read gives a result or an error, the process gets no signal
    /// (a signal would kill this test), and the loop ends in bounded time.
    #[test]
    fn reading_while_rewritten_in_place_never_signals() {
        let dir = std::env::temp_dir().join(format!("sqtt-codeobj-race-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("racy.bundle");
        let full = bundle();
        std::fs::write(&path, &full).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (path, stop, full) = (path.clone(), stop.clone(), full.clone());
            std::thread::spawn(move || {
                let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                let mut rounds = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for len in [0, 4096, full.len() as u64 / 2] {
                        f.set_len(len).unwrap();
                        f.seek(SeekFrom::Start(0)).unwrap();
                        f.write_all(&full).unwrap();
                    }
                    rounds += 1;
                }
                rounds
            })
        };
        let start = Instant::now();
        let (mut ok, mut errors) = (0, 0);
        let mut shrank = 0;
        while ok + errors < 3000 && start.elapsed() < Duration::from_secs(20) {
            match crate::read_path(&path) {
                Ok(cos) => {
                    // Whole data, never a mix of a truncated and a rewritten file.
                    assert_eq!(cos.len(), 1);
                    assert_eq!(cos[0].size, 256 << 10);
                    ok += 1
                }
                Err(e) => {
                    errors += 1;
                    if e.to_string().contains("shrank") {
                        shrank += 1;
                    }
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        let rounds = writer.join().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(ok + errors, 3000, "3000 reads did not finish in 20 s");
        assert!(rounds > 10, "the rewriter ran only {rounds} rounds");
        eprintln!("{ok} read, {errors} errors ({shrank} saw the file shrink), {rounds} rewrites");
    }
}

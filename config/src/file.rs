//! Reading the configuration file: only a regular file, never blocking, at most
//! [`MAX_CONFIG_BYTES`]. [`not_regular`] is also the code-object reader's test of its inputs
//! (`sqtt_codeobj::file`): this crate is the lowest one, used by the pass plugin, which needs no
//! code-object reader.

use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest configuration file read (1 MiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

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

/// The text of a configuration file, or why it cannot be read ("it is a FIFO (named pipe), not
/// a regular file", "it is 5000000 bytes; ...").
pub fn read_config(path: &Path) -> io::Result<String> {
    if let Some(what) = not_regular(&std::fs::metadata(path)?.file_type()) {
        return Err(invalid(format!("it is {what}, not a regular file")));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if let Some(what) = not_regular(&meta.file_type()) {
        return Err(invalid(format!("it is {what}, not a regular file")));
    }
    {
        use std::os::fd::AsRawFd;
        // SAFETY: fstatfs fills the zeroed statfs we own; the fd is open.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        #[allow(clippy::unnecessary_cast)]
        if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } == 0
            && matches!(st.f_type as u64, 0x9fa0 | 0x6265_6572)
        {
            return Err(invalid(
                "it is a file of the /proc or /sys pseudo file system, not a regular file".into(),
            ));
        }
    }
    let len = meta.len();
    if len > MAX_CONFIG_BYTES {
        return Err(invalid(format!(
            "it is {len} bytes; a configuration file may have at most {MAX_CONFIG_BYTES} bytes"
        )));
    }
    let mut buf = vec![0u8; len as usize];
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    String::from_utf8(buf).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it is not UTF-8 text ({e})"),
        )
    })
}

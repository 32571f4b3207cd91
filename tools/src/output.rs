//! Output files that replace an existing file only on success: written to a temporary file in
//! the same directory and renamed over the target when complete.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file being written; [`AtomicFile::commit`] renames it over its target, and dropping it
/// uncommitted removes it, so a failed run leaves the target as it was.
pub struct AtomicFile {
    target: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

impl AtomicFile {
    /// Creates the temporary file beside `target`.
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        let tmp = dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let f = File::options().write(true).create_new(true).open(&tmp)?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            tmp,
            out: Some(BufWriter::with_capacity(64 << 10, f)),
        })
    }

    /// The file the output will replace.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes the file and renames it over the target.
    pub fn commit(mut self) -> io::Result<()> {
        if let Some(out) = self.out.take() {
            let f = out.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()?;
        }
        std::fs::rename(&self.tmp, &self.target)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.out.as_mut() {
            Some(o) => o.write(buf),
            None => Err(io::Error::other("output already committed")),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self.out.as_mut() {
            Some(o) => o.write_all(buf),
            None => Err(io::Error::other("output already committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.out.as_mut() {
            Some(o) => o.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.out.take().is_some() || self.tmp.exists() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

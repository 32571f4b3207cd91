//! Writing outputs: every command's (the trace tools' files, standard output of `sqtt` and of
//! `sqtt-hipcc`) are written here, beside [`crate::input`] for inputs.
//!
//! An output is written through what its path names, never over it:
//! - a regular file, or a name that does not exist yet, is written to a temporary file in the
//!   same directory and renamed over it only when the run succeeded ([`Output::commit`]), so a
//!   failed run leaves an existing file as it was; the new file keeps the old one's permissions;
//! - a symbolic link is followed, never replaced: what it points to is written as above (a link
//!   to a regular file gets a new file under the link's target name, the link stays);
//! - anything else (a character or block device such as `/dev/null`, a FIFO, a terminal, and
//!   `/dev/stdout` or `/proc/self/fd/N`, whose target is whatever the descriptor is) is opened for
//!   writing and written directly: renaming a file over a device node would replace the device;
//! - a directory is refused before anything is written.
//!
//! An output that is one of the run's inputs (the same device and inode, however it is reached:
//! the same name, a symbolic or a hard link) is refused before anything is written
//! ([`Inputs::check`]); so is standard output when it is redirected into an input.
//!
//! Every write error names what failed ("cannot write out.json: No space left on device"); a
//! closed pipe ([`is_broken_pipe`]) is a reader that stopped early (`| head`), which the commands
//! end quietly on.

use std::collections::HashMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// An output that failed to be written: its name and the cause. The `io::Error` that carries it
/// keeps the cause's kind, so a closed pipe is still recognised.
#[derive(Debug)]
struct WriteError {
    what: String,
    source: io::Error,
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write {}: {}", self.what, self.source)
    }
}

/// No `source()`: the message already holds the cause, which a chain printer would repeat.
impl std::error::Error for WriteError {}

/// `e` as an error naming the output it happened on (`what`: a path, or "to stdout"). An error
/// already naming its output is returned as it is.
pub fn write_error(what: &str, e: io::Error) -> io::Error {
    if e.get_ref().is_some_and(|inner| inner.is::<WriteError>()) {
        return e;
    }
    io::Error::new(
        e.kind(),
        WriteError {
            what: what.to_string(),
            source: e,
        },
    )
}

/// Whether `e` is a closed pipe (EPIPE): the reader stopped early (`sqtt flamegraph DIR | head`),
/// which is no failure of the command. Rust ignores SIGPIPE, so the write returns this error
/// instead of killing the process.
pub fn is_broken_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

/// Buffered standard output whose write errors say "cannot write to stdout: ...". Call
/// [`Write::flush`] at the end: the buffer's last write happens there, and an error dropped
/// with it would be lost.
pub struct Stdout(BufWriter<io::StdoutLock<'static>>);

/// Standard output for a report, see [`Stdout`].
pub fn stdout() -> Stdout {
    Stdout(BufWriter::with_capacity(64 << 10, io::stdout().lock()))
}

const STDOUT: &str = "to stdout";

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(|e| write_error(STDOUT, e))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf).map_err(|e| write_error(STDOUT, e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(|e| write_error(STDOUT, e))
    }
}

/// Writes all of `text` to standard output and flushes it.
pub fn print(text: &str) -> io::Result<()> {
    let mut out = stdout();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// `s` as it may be shown on a terminal or put into a line-based output (folded stacks, tables,
/// CSV, messages): control characters (C0 and C1, DEL: escape sequences that a terminal would
/// act on, newlines and carriage returns that would split or overwrite a line) and the Unicode
/// line separators and direction overrides become visible escapes (`\n`, `\t`, `\r`, `\x1b`,
/// `\u{202e}`); everything else is kept. The one escaping function for names read from inputs
/// (trace file names, kernel, function and scope names); JSON outputs escape by themselves.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if unsafe_char(c) && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Writes `line` and a newline to standard error. A failure is ignored: there is nowhere left to
/// report it, and the exit status still tells (`eprintln!` would panic on a closed or full
/// stderr instead).
pub fn stderr_line(line: impl fmt::Display) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// A file's identity: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    /// The identity of what `path` names, through symbolic links (`None`: nothing there).
    pub fn of(path: &Path) -> Option<FileId> {
        std::fs::metadata(path).ok().map(|m| FileId::from(&m))
    }
}

impl From<&std::fs::Metadata> for FileId {
    fn from(m: &std::fs::Metadata) -> FileId {
        FileId {
            dev: m.dev(),
            ino: m.ino(),
        }
    }
}

/// The input files of a run, by identity, so that no output is written over one of them.
#[derive(Debug, Default, Clone)]
pub struct Inputs {
    files: HashMap<FileId, PathBuf>,
}

impl Inputs {
    /// The inputs among `paths` that exist (others cannot be overwritten).
    pub fn new<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Inputs {
        let mut files = HashMap::new();
        for p in paths {
            let p = p.as_ref();
            if let Some(id) = FileId::of(p) {
                files.entry(id).or_insert_with(|| p.to_path_buf());
            }
        }
        Inputs { files }
    }

    /// The input that `id` is, if any.
    pub fn get(&self, id: FileId) -> Option<&Path> {
        self.files.get(&id).map(PathBuf::as_path)
    }

    /// An error when the output `path` (as reached through symbolic links) is one of the inputs.
    pub fn check(&self, path: &Path) -> io::Result<()> {
        match FileId::of(path).and_then(|id| self.get(id)) {
            None => Ok(()),
            Some(input) => Err(write_error(
                &path.display().to_string(),
                overwrite(path, input),
            )),
        }
    }

    /// An error when standard output is redirected into one of the inputs
    /// (`sqtt flamegraph DIR > DIR/ui/shaderdata_0_0.json`): it would be overwritten as it is read.
    pub fn check_stdout(&self) -> io::Result<()> {
        // SAFETY: fstat writes into the zeroed buffer we own; a closed descriptor is an error.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(libc::STDOUT_FILENO, &mut st) } != 0
            || st.st_mode & libc::S_IFMT != libc::S_IFREG
        {
            return Ok(());
        }
        #[allow(clippy::unnecessary_cast)]
        let id = FileId {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
        };
        match self.get(id) {
            None => Ok(()),
            Some(input) => Err(write_error(STDOUT, overwrite(Path::new(""), input))),
        }
    }
}

/// Why an output that is the input `input` is refused.
fn overwrite(output: &Path, input: &Path) -> io::Error {
    if output == input {
        invalid("it is one of the inputs, which it would overwrite".into())
    } else {
        invalid(format!(
            "it is the input {}, which it would overwrite",
            input.display()
        ))
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Where an output path leads once symbolic links are followed.
enum Target {
    /// A path to create or replace atomically (it names a regular file or nothing yet).
    Replace(PathBuf),
    /// Something to open and write directly (a device, a FIFO, `/dev/stdout`).
    Direct(PathBuf),
}

/// How many symbolic links are followed (as the kernel's own limit, ELOOP).
const MAX_LINKS: usize = 40;

/// Whether `dir` is on the /proc file system, whose `fd/N` links are descriptors, not paths.
fn on_proc(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs writes into the zeroed buffer we own; `c` is a valid NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    // Compared as u64: the field's type differs between targets.
    #[allow(clippy::unnecessary_cast)]
    let proc = st.f_type as u64 == 0x9fa0;
    proc
}

fn parent_of(p: &Path) -> &Path {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Follows the symbolic links of `path`'s last component to what it names.
fn target(path: &Path) -> io::Result<Target> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            // Nothing there (or a dangling link's target): created there.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Target::Replace(p)),
            Err(e) => return Err(e),
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            if on_proc(parent_of(&p)) {
                // `/proc/self/fd/1` (what `/dev/stdout` points to) names a descriptor.
                return Ok(Target::Direct(p));
            }
            let link = std::fs::read_link(&p)?;
            p = if link.is_absolute() {
                link
            } else {
                parent_of(&p).join(link)
            };
            continue;
        }
        if ft.is_dir() {
            return Err(invalid("it is a directory".into()));
        }
        return Ok(if ft.is_file() {
            Target::Replace(p)
        } else {
            Target::Direct(p)
        });
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

fn named(path: &Path, e: io::Error) -> io::Error {
    write_error(&path.display().to_string(), e)
}

/// A file output being written.
pub struct Output {
    /// The path as the user gave it, for messages.
    path: PathBuf,
    /// The temporary file and the path it is renamed to on commit (atomic replace only).
    replace: Option<(PathBuf, PathBuf)>,
    out: Option<BufWriter<File>>,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

impl Output {
    /// Opens the output `path` as the module documentation says: a temporary file beside a
    /// regular file (or a new name), or what a device, FIFO or `/dev/stdout` path names, opened
    /// for writing. A directory, or a path that cannot be written, is an error naming it.
    pub fn create(path: &Path) -> io::Result<Output> {
        let what = path.display().to_string();
        let create_err = |e: io::Error| write_error(&what, e);
        match target(path).map_err(create_err)? {
            Target::Direct(p) => {
                // Appending: a regular file behind `/dev/stdout` keeps what the shell's
                // redirection (`>>`) or earlier output put there. O_NOCTTY: a terminal named
                // here does not become the controlling one.
                let f = OpenOptions::new()
                    .append(true)
                    .custom_flags(libc::O_NOCTTY)
                    .open(&p)
                    .map_err(create_err)?;
                Ok(Output {
                    path: path.to_path_buf(),
                    replace: None,
                    out: Some(BufWriter::with_capacity(64 << 10, f)),
                })
            }
            Target::Replace(p) => {
                let dir = parent_of(&p);
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "output".into());
                let tmp = dir.join(format!(
                    ".{name}.{}.{}.tmp",
                    std::process::id(),
                    SEQ.fetch_add(1, Ordering::Relaxed)
                ));
                let mode = std::fs::metadata(&p)
                    .ok()
                    .map(|m| m.permissions().mode() & 0o777);
                let f = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(mode.unwrap_or(0o666))
                    .open(&tmp)
                    .map_err(|e| {
                        write_error(
                            &what,
                            io::Error::new(
                                e.kind(),
                                format!("cannot create a file in {}: {e}", dir.display()),
                            ),
                        )
                    })?;
                if let Some(mode) = mode {
                    // Exactly the old file's permissions, whatever the umask.
                    let _ = f.set_permissions(std::fs::Permissions::from_mode(mode));
                }
                Ok(Output {
                    path: path.to_path_buf(),
                    replace: Some((tmp, p)),
                    out: Some(BufWriter::with_capacity(64 << 10, f)),
                })
            }
        }
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: io::Error) -> io::Error {
        named(&self.path, e)
    }

    /// Finishes the output: flushes it and, for a replaced file, renames it over its target.
    pub fn commit(mut self) -> io::Result<()> {
        if let Some(out) = self.out.take() {
            let f = out.into_inner().map_err(|e| self.err(e.into_error()))?;
            if self.replace.is_some() {
                f.sync_all().map_err(|e| self.err(e))?;
            }
        }
        if let Some((tmp, target)) = &self.replace {
            std::fs::rename(tmp, target).map_err(|e| self.err(e))?;
        }
        self.replace = None;
        Ok(())
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.out.as_mut() {
            Some(o) => o.write(buf).map_err(|e| named(&self.path, e)),
            None => Err(io::Error::other("output already committed")),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self.out.as_mut() {
            Some(o) => o.write_all(buf).map_err(|e| named(&self.path, e)),
            None => Err(io::Error::other("output already committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.out.as_mut() {
            Some(o) => o.flush().map_err(|e| named(&self.path, e)),
            None => Ok(()),
        }
    }
}

impl Drop for Output {
    /// An output dropped uncommitted (a failed run) leaves no temporary file and its target as
    /// it was.
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.replace.take() {
            drop(self.out.take());
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod tests;

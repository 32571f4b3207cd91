//! Large inputs mapped instead of read, guarded against truncation: a raw thread trace of tens
//! of megabytes is decoded straight from the page cache, with no copy and no fresh memory (a
//! read into a buffer of its size cost more than the decoding: every page of the buffer faulted
//! in and zeroed, then filled).
//!
//! A mapped file that another process truncates makes every read of a page past its new end a
//! SIGBUS, which would kill the tool. Here a SIGBUS at an address inside a live mapping of this
//! module puts a page of zeros there (`mmap` of anonymous memory over that page) and the read
//! goes on; the mapping then says it [`Mapped::shrank`], and the caller throws away what it
//! made of the bytes, as it does for a file that shrinks while it is read. A SIGBUS anywhere
//! else goes to the action that was there before (the default: the process ends as without
//! this module). Bytes rewritten underneath are read as they are then: stale or mixed data, as
//! with `read`, never a crash (the decoders take any bytes).
//!
//! [`Bytes::open`] opens a file as [`crate::input`] does (a regular file, bounded) and maps it,
//! or reads it where it cannot be mapped (a file system without `mmap`, all guard slots taken).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// A regular file mapped read-only, whole, as the bytes it had when mapped.
pub struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
    slot: usize,
}

// SAFETY: the mapping is read-only and owned; nothing in it is tied to a thread.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

/// One live mapping, as the SIGBUS handler sees it: `[start, end)`, and whether a read past the
/// file's end was turned into zeros.
struct Guard {
    taken: AtomicBool,
    start: AtomicUsize,
    end: AtomicUsize,
    hit: AtomicBool,
}

/// How many mappings may be live at once (the handler looks at each, so few).
const SLOTS: usize = 32;
/// The largest file whose pages are all mapped at once.
const POPULATE_MAX: usize = 1 << 30;

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Guard = Guard {
    taken: AtomicBool::new(false),
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    hit: AtomicBool::new(false),
};
static GUARDS: [Guard; SLOTS] = [FREE; SLOTS];
static PAGE: AtomicUsize = AtomicUsize::new(4096);

/// The SIGBUS action before ours, given back a SIGBUS that is not ours.
struct Previous(libc::sigaction);
// SAFETY: a plain C struct, written once before the handler is installed, then only read.
unsafe impl Send for Previous {}
unsafe impl Sync for Previous {}
static PREVIOUS: OnceLock<Option<Previous>> = OnceLock::new();

extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    for g in &GUARDS {
        let start = g.start.load(Ordering::Acquire);
        if start != 0 && start <= addr && addr < g.end.load(Ordering::Acquire) {
            let at = addr & !(page - 1);
            // SAFETY: the page lies inside a live mapping of ours (it is unmapped only after its
            // guard is cleared, and only when nothing reads it); mmap is a plain system call,
            // safe in a signal handler. The faulting read is retried on the zeros.
            let p = unsafe {
                libc::mmap(
                    at as *mut libc::c_void,
                    page,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                g.hit.store(true, Ordering::Release);
                return;
            }
        }
    }
    // Not ours: the previous action takes it when the read faults again on return.
    let previous = match PREVIOUS.get() {
        Some(Some(p)) => &p.0 as *const libc::sigaction,
        _ => std::ptr::null(),
    };
    // SAFETY: sigaction is async-signal-safe; a null action resets to the default below.
    unsafe {
        if previous.is_null() {
            libc::signal(libc::SIGBUS, libc::SIG_DFL);
        } else {
            libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut());
        }
    }
}

/// Installs the SIGBUS handler once; false if it could not be.
fn install() -> bool {
    PREVIOUS
        .get_or_init(|| {
            // SAFETY: sysconf has no preconditions; sigaction reads and writes structs we own.
            unsafe {
                let page = libc::sysconf(libc::_SC_PAGESIZE);
                if page > 0 {
                    PAGE.store(page as usize, Ordering::Relaxed);
                }
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) != 0 {
                    return None;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_sigbus
                    as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                    as libc::sighandler_t;
                new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut new.sa_mask);
                if libc::sigaction(libc::SIGBUS, &new, std::ptr::null_mut()) != 0 {
                    return None;
                }
                Some(Previous(old))
            }
        })
        .is_some()
}

impl Mapped {
    /// Maps `file`, opened by [`crate::input::open_regular`], of `len` bytes (its size then).
    /// `Ok(None)` where it is not mapped: an empty file, a file system that cannot map it, or
    /// too many mappings live; the caller reads it then.
    pub fn map(file: &File, len: u64) -> io::Result<Option<Mapped>> {
        let Ok(len) = usize::try_from(len) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("it is {len} bytes, too large for this machine"),
            ));
        };
        if len == 0 || !install() {
            return Ok(None);
        }
        let Some(slot) = GUARDS.iter().position(|g| {
            g.taken
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        }) else {
            return Ok(None);
        };
        // MAP_POPULATE maps the pages in one go (they are all read, in order); a file larger than
        // that is faulted in as it is read, with read-ahead, so that it need not fit in memory.
        let populate = if len <= POPULATE_MAX {
            libc::MAP_POPULATE
        } else {
            0
        };
        // SAFETY: a new private read-only mapping of an open file; the kernel picks the place.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | populate,
                file.as_raw_fd(),
                0,
            )
        };
        if populate == 0 && ptr != libc::MAP_FAILED {
            // SAFETY: advice on the mapping just made; it changes no contents.
            unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        }
        let g = &GUARDS[slot];
        if ptr == libc::MAP_FAILED {
            g.taken.store(false, Ordering::Release);
            return Ok(None);
        }
        g.hit.store(false, Ordering::Relaxed);
        g.end.store(ptr as usize + len, Ordering::Release);
        g.start.store(ptr as usize, Ordering::Release);
        Ok(Some(Mapped { ptr, len, slot }))
    }

    /// Whether the file was found shorter than when it was mapped: a page past its new end was
    /// read (as zeros), or its size is now smaller. What was made of the bytes is then not the
    /// file's.
    pub fn shrank(&self, file: &File) -> bool {
        GUARDS[self.slot].hit.load(Ordering::Acquire)
            || file.metadata().map_or(true, |m| m.len() < self.len as u64)
    }
}

/// A regular file's bytes: mapped, or read where it cannot be.
pub enum Bytes {
    Mapped(Mapped, File),
    Read(Vec<u8>),
}

impl Bytes {
    /// Opens `path` as [`crate::input::open_regular`] does (a FIFO, a directory or a device is
    /// refused with what it is), refusing more than `max` bytes (`what`, the kind of input, as
    /// the message names it), mapped where it can be, else read no further than its size when
    /// opened ([`crate::input::read_opened`]). [`Bytes::intact`] says, once the bytes were used,
    /// whether they were the file's.
    pub fn open(path: &std::path::Path, max: u64, what: &str) -> io::Result<Bytes> {
        let (f, len) = crate::input::open_regular(path)?;
        crate::input::within(len, max, what)?;
        match Mapped::map(&f, len)? {
            Some(m) => Ok(Bytes::Mapped(m, f)),
            None => crate::input::read_opened(&f, len, max, what).map(Bytes::Read),
        }
    }

    /// An error when the file shrank while it was mapped (a read of a page it lost gave zeros),
    /// as a read that comes short is an error.
    pub fn intact(&self) -> io::Result<()> {
        match self {
            Bytes::Mapped(m, f) if m.shrank(f) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "it shrank from {} bytes while it was read, or part of it could not be read \
                     (is it being rewritten?)",
                    m.len()
                ),
            )),
            _ => Ok(()),
        }
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m, _) => m,
            Bytes::Read(b) => b,
        }
    }
}

impl std::ops::Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` readable bytes from `ptr` for as long as the mapping lives (self); pages
        // the file lost read as zeros (the handler), never fault.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        let g = &GUARDS[self.slot];
        // The guard goes first: no SIGBUS can be ours once nothing reads the mapping.
        g.start.store(0, Ordering::Release);
        g.end.store(0, Ordering::Release);
        // SAFETY: the mapping (and any page of zeros put over part of it) is ours to unmap.
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
        g.taken.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_file_reads_as_its_bytes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t");
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        let (f, len) = crate::input::open_regular(&p).unwrap();
        let m = Mapped::map(&f, len).unwrap().unwrap();
        assert_eq!(&m[..], &bytes[..]);
        assert!(!m.shrank(&f));
        // An empty file is not mapped (but read: no bytes); a file above the bound is refused
        // before anything is mapped or read.
        std::fs::write(&p, b"").unwrap();
        let (f, len) = crate::input::open_regular(&p).unwrap();
        assert!(Mapped::map(&f, len).unwrap().is_none());
        let b = Bytes::open(&p, 10, "a test input").unwrap();
        assert!(matches!(b, Bytes::Read(ref v) if v.is_empty()));
        std::fs::write(&p, b"hello").unwrap();
        let e = Bytes::open(&p, 4, "a test input").err().unwrap();
        assert_eq!(
            e.to_string(),
            "it is 5 bytes; a test input may have at most 4 bytes"
        );
    }

    /// A file too large to map at once (sparse here) is faulted in as it is read, and guarded
    /// the same way.
    #[test]
    fn a_large_file_is_mapped_lazily_and_guarded() {
        use std::os::unix::fs::FileExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t");
        let len = (POPULATE_MAX + 8192) as u64;
        let w = std::fs::File::create(&p).unwrap();
        w.set_len(len).unwrap();
        w.write_all_at(b"end", len - 3).unwrap();
        let (f, n) = crate::input::open_regular(&p).unwrap();
        let m = Mapped::map(&f, n).unwrap().unwrap();
        assert_eq!(&m[m.len() - 3..], b"end");
        w.set_len(4096).unwrap();
        assert_eq!((m[100], m[m.len() - 1]), (0, 0));
        assert!(m.shrank(&f));
    }

    #[test]
    fn a_file_truncated_while_mapped_reads_as_zeros_and_says_so() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t");
        std::fs::write(&p, vec![0xA5u8; 1 << 20]).unwrap();
        let m = Bytes::open(&p, 1 << 20, "a test input").unwrap();
        assert!(matches!(m, Bytes::Mapped(..)));
        assert!(m.intact().is_ok());
        // Another writer cuts it to one page and a bit: the pages past that SIGBUS when read.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(5000)
            .unwrap();
        let sum: u64 = m.iter().map(|&b| u64::from(b)).sum();
        assert_eq!(m.len(), 1 << 20);
        // What the file still holds reads as it is, the rest as zeros.
        assert_eq!(sum, 0xA5 * 5000);
        assert_eq!((m[4999], m[5000], m[(1 << 20) - 1]), (0xA5, 0, 0));
        let e = m.intact().unwrap_err().to_string();
        assert!(
            e.starts_with("it shrank from 1048576 bytes while it was read"),
            "{e}"
        );
        drop(m);
        // A mapping frees its guard: more mappings than guards, one after another, all map.
        std::fs::write(&p, b"abc").unwrap();
        let (f, len) = crate::input::open_regular(&p).unwrap();
        for _ in 0..2 * SLOTS {
            let m = Mapped::map(&f, len).unwrap().unwrap();
            assert_eq!(&m[..], b"abc");
            assert!(!m.shrank(&f));
        }
    }
}

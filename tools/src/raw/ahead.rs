//! Raw traces decoded ahead of the engine, on worker threads.
//!
//! The engine reads one trace's records at a time, on the calling thread, in the order of the
//! directory's time domains and each domain's shader engines. The mapping and decoding of a
//! trace need nothing from the engine, so workers do them for the traces that come next (across
//! dispatches: a run rocprofv3 traces on shader engine 0 alone has one trace a dispatch) while
//! the engine reads; the engine takes each trace's result in its turn, so the output and the
//! warnings are those of one thread. The workers stay for the whole run, and so do their
//! buffers; at most [`Ahead::jobs`] traces are decoded beyond the one the engine is at, which
//! bounds the memory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use super::{read_engine, Buffers, EngineRead};
use crate::input::TraceDir;

/// The most threads started when the user does not say: each holds a shader engine's mapped
/// trace and its records while it works, and the one engine that reads the records is kept
/// busy by a few.
pub const MAX_DEFAULT_JOBS: usize = 8;

/// The least size of a run's raw traces, together, decoded ahead on threads by default: a
/// worker costs some 0.1 ms to start, and each trace it hands over some 35 us more CPU time than
/// the engine's own decoding (400 traces of 200 KB: 100 -> 114 to 117 ms, for 67% of the wall
/// time; the waits, the wake-ups and the TLB flushes of unmapping with two threads running); a
/// run of less is read in a few milliseconds anyway.
pub const AHEAD_MIN_BYTES: u64 = 4 << 20;

/// How many threads decode at once when the user does not say: the CPUs this process may use,
/// at most [`MAX_DEFAULT_JOBS`].
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_DEFAULT_JOBS))
}

/// What a worker made of a trace: the read, or the panic it met (passed on to the engine's
/// thread).
type Outcome = std::thread::Result<(EngineRead, Buffers)>;

/// Where a trace is.
enum Stage {
    /// No worker has started it.
    Waiting,
    /// A worker is decoding it.
    Working,
    Done(Box<Outcome>),
    /// The engine took it (or decoded it itself).
    Taken,
}

/// The state the engine's thread and the workers share.
struct State {
    /// The next trace a worker starts: those before it are taken, or started.
    next: usize,
    /// The trace the engine is at (taken, or waited for): workers start at most `jobs` beyond
    /// it.
    at: usize,
    traces: Vec<Stage>,
    /// Buffers the engine has given back.
    spare: Vec<Buffers>,
    /// The run is over: workers stop.
    stop: bool,
}

struct Shared {
    /// `(se, path)` of every raw trace of the run, in the order the engine reads them.
    files: Vec<(u32, PathBuf)>,
    jobs: usize,
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, g: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(g).unwrap_or_else(PoisonError::into_inner)
    }

    fn work(&self) {
        let n = self.files.len();
        loop {
            let (i, mut buffers) = {
                let mut g = self.lock();
                while !g.stop && g.next < n && g.next > g.at + self.jobs {
                    g = self.wait(g);
                }
                if g.stop || g.next >= n {
                    return;
                }
                let i = g.next;
                g.next += 1;
                g.traces[i] = Stage::Working;
                (i, g.spare.pop().unwrap_or_default())
            };
            let (se, path) = &self.files[i];
            // A panic (a bug) reaches the engine's thread, which waits for this trace.
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let read = read_engine(*se, path, &mut buffers);
                (read, buffers)
            }));
            self.lock().traces[i] = Stage::Done(Box::new(outcome));
            self.changed.notify_all();
        }
    }
}

/// The raw traces of a run, decoded ahead by worker threads.
pub struct Ahead {
    shared: Arc<Shared>,
    /// Each trace's place in the engine's order.
    index: HashMap<PathBuf, usize>,
    workers: Vec<JoinHandle<()>>,
}

impl Ahead {
    /// Workers for the raw traces of `dir`, `jobs` of them (`None`: [`default_jobs`], when the
    /// traces come to [`AHEAD_MIN_BYTES`] or more); `None` when the engine is to decode them
    /// itself (one job, or no raw traces).
    pub fn start(dir: &TraceDir, jobs: Option<usize>) -> Option<Ahead> {
        let files: Vec<(u32, PathBuf)> = dir
            .ui_dirs
            .iter()
            .filter(|u| u.raw.is_some())
            .flat_map(|u| u.shaderdata.iter().cloned())
            .collect();
        let jobs = match jobs {
            Some(j) => j,
            None if crate::input::files_bytes(&files) < AHEAD_MIN_BYTES => 1,
            None => default_jobs(),
        };
        Ahead::new(files, jobs)
    }

    /// `jobs` workers for the traces `files`, in the order the engine reads them; `None` for
    /// one job or one trace.
    fn new(files: Vec<(u32, PathBuf)>, jobs: usize) -> Option<Ahead> {
        let jobs = jobs.min(files.len());
        if jobs <= 1 {
            return None;
        }
        let index = files
            .iter()
            .enumerate()
            .map(|(i, (_, p))| (p.clone(), i))
            .collect();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                next: 0,
                at: 0,
                traces: (0..files.len()).map(|_| Stage::Waiting).collect(),
                spare: Vec::new(),
                stop: false,
            }),
            files,
            jobs,
            changed: Condvar::new(),
        });
        let mut workers = Vec::new();
        for n in 0..jobs {
            let s = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name(format!("sqtt-decode-{n}"))
                .spawn(move || s.work());
            // Fewer workers than asked for when the system has no more threads to give.
            match spawned {
                Ok(w) => workers.push(w),
                Err(_) => break,
            }
        }
        if workers.is_empty() {
            return None;
        }
        Some(Ahead {
            shared,
            index,
            workers,
        })
    }

    /// How many workers decode (fewer than asked for when the system would not start more).
    pub fn jobs(&self) -> usize {
        self.workers.len()
    }

    /// The trace of shader engine `se` at `path` read and decoded: by a worker (`own`, buffers
    /// the engine is done with, go to the workers), or here (into `own`, or spare buffers) when
    /// no worker has it or will: a trace read again, or one the run does not list.
    pub fn take(&self, se: u32, path: &Path, own: Option<Buffers>) -> (EngineRead, Buffers) {
        let s = &*self.shared;
        let mut g = s.lock();
        let here = |mut g: MutexGuard<'_, State>, own: Option<Buffers>| {
            let buffers = own.or_else(|| g.spare.pop()).unwrap_or_default();
            drop(g);
            decode_here(se, path, buffers)
        };
        let Some(&i) = self.index.get(path) else {
            return here(g, own);
        };
        g.at = g.at.max(i);
        s.changed.notify_all();
        loop {
            match std::mem::replace(&mut g.traces[i], Stage::Taken) {
                Stage::Done(outcome) => {
                    g.spare.extend(own);
                    drop(g);
                    match *outcome {
                        Ok(r) => return r,
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                }
                Stage::Working => {
                    g.traces[i] = Stage::Working;
                    g = s.wait(g);
                }
                Stage::Waiting => {
                    // Not started: the workers skip it (they go on from the next one).
                    g.next = g.next.max(i + 1);
                    return here(g, own);
                }
                Stage::Taken => return here(g, own),
            }
        }
    }

    /// Buffers the engine is done with, for the workers' next traces.
    pub fn give_back(&self, buffers: Buffers) {
        self.shared.lock().spare.push(buffers);
    }
}

/// Reads and decodes a trace on this thread.
pub fn decode_here(se: u32, path: &Path, mut buffers: Buffers) -> (EngineRead, Buffers) {
    let read = read_engine(se, path, &mut buffers);
    (read, buffers)
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        for w in self.workers.drain(..) {
            // A worker's panic was passed on when its trace was taken, or the trace never was.
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqtt_thread_trace::synth::{Encoder, Form, Slot};
    use sqtt_thread_trace::Generation;

    /// What a read gives, comparable: the size, the waves and the decoder's summary (or the
    /// error), and the records.
    fn seen(read: EngineRead, buffers: &Buffers) -> String {
        let records: Vec<_> = buffers.records().collect();
        match read.decoded {
            Ok(Some(d)) => format!("{:?} {:?} {:?} {records:?}", read.bytes, d.waves, d.summary),
            Ok(None) => format!("{:?} not a trace", read.bytes),
            Err(e) => format!("{:?} {e}", read.bytes),
        }
    }

    /// Traces of every generation and size, a file of no trace and a missing one.
    fn files(dir: &Path) -> Vec<(u32, PathBuf)> {
        let mut out = Vec::new();
        for i in 0..14u32 {
            let p = dir.join(format!("1_1_shader_engine_{i}_1.att"));
            match i {
                5 => std::fs::write(&p, b"not a trace").unwrap(),
                9 => {}
                _ => {
                    let g =
                        [Generation::Gfx11, Generation::Gfx12, Generation::Gfx9][i as usize % 3];
                    let mut e = Encoder::new(g);
                    let slot = Slot {
                        sa: 0,
                        wgp: i % 4,
                        simd: 1,
                        slot: 2,
                    };
                    e.start(slot, true);
                    for v in 0..(200 * i + 10) {
                        e.gap(u64::from(v % 17));
                        e.shader_data(slot, v, Form::Full, true);
                    }
                    e.end(slot, true);
                    e.flush();
                    std::fs::write(&p, e.bytes()).unwrap();
                }
            }
            out.push((i, p));
        }
        out
    }

    /// The workers' reads, taken in order, out of order and again, are what the engine's own
    /// would be; a trace the run does not list is read here.
    #[test]
    fn workers_read_what_the_engine_would() {
        let dir = tempfile::tempdir().unwrap();
        let files = files(dir.path());
        let want: Vec<String> = files
            .iter()
            .map(|(se, p)| {
                let (r, b) = decode_here(*se, p, Buffers::default());
                seen(r, &b)
            })
            .collect();
        assert!(want[5].ends_with("not a trace") && want[9].starts_with("None"));
        for jobs in [2, 3, 8, 40] {
            let ahead = Ahead::new(files.clone(), jobs).unwrap();
            assert_eq!(ahead.jobs(), jobs.min(files.len()));
            let mut own = None;
            // In order, but the fourth trace first and the second one twice.
            for i in [3, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13] {
                let (se, p) = &files[i];
                let (r, b) = ahead.take(*se, p, own.take());
                assert_eq!(seen(r, &b), want[i], "jobs {jobs}, trace {i}");
                own = Some(b);
            }
            let other = dir.path().join("1_1_shader_engine_0_2.att");
            std::fs::copy(&files[4].1, &other).unwrap();
            let (r, b) = ahead.take(4, &other, own.take());
            assert_eq!(seen(r, &b), want[4]);
            ahead.give_back(b);
        }
        assert!(Ahead::new(files.clone(), 1).is_none());
        assert!(Ahead::new(files[..1].to_vec(), 4).is_none());
    }

    /// The workers start no trace more than `jobs` beyond the one the engine is at.
    #[test]
    fn workers_stay_within_jobs_of_the_engine() {
        let dir = tempfile::tempdir().unwrap();
        let files = files(dir.path());
        let ahead = Ahead::new(files.clone(), 3).unwrap();
        let beyond = || {
            let g = ahead.shared.lock();
            let at = g.at;
            g.traces
                .iter()
                .enumerate()
                .filter(|(i, t)| *i > at && !matches!(t, Stage::Waiting))
                .count()
        };
        let mut own = None;
        for (i, (se, p)) in files.iter().enumerate() {
            let (_, b) = ahead.take(*se, p, own.take());
            own = Some(b);
            // The workers run ahead as far as they may, and no further.
            let want = 3.min(files.len() - 1 - i);
            let since = std::time::Instant::now();
            loop {
                let n = beyond();
                assert!(n <= 3, "{n} traces started beyond {i}");
                if n == want {
                    break;
                }
                assert!(
                    since.elapsed().as_secs() < 30,
                    "{n} of {want} started beyond {i}"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            assert_eq!(beyond(), want, "after {i}");
        }
    }
}

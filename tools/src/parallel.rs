//! Work on several threads whose results are used in order on the calling thread: each shader
//! engine's raw trace is mapped and decoded on a worker while the engine reads the records of
//! the ones before it (the engine's state is one, so records go through it in file order).

use std::sync::{Condvar, Mutex, PoisonError};

/// The most threads started when the user does not say: each holds a shader engine's mapped
/// trace and its records while it works, and the one engine that reads the records is kept
/// busy by a few.
pub const MAX_DEFAULT_JOBS: usize = 8;

/// How many threads work at once when the user does not say: the CPUs this process may use,
/// at most [`MAX_DEFAULT_JOBS`].
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_DEFAULT_JOBS))
}

/// The state of [`in_order`] the threads share.
struct Shared<S, R> {
    /// The next item to start.
    next: usize,
    /// The item `use_` is at: items are started at most `ahead` beyond it.
    at: usize,
    /// Finished items not yet used, with their scratch.
    done: Vec<Option<(R, S)>>,
    /// Scratch returned by `use_`, for the next item started.
    spare: Vec<S>,
    /// A worker panicked, or the use is over: nothing more is started or waited for.
    stop: bool,
}

/// Sets `stop` when a worker unwinds, so that the calling thread does not wait for its item
/// (the scope then passes the panic on).
struct StopOnPanic<'a, S, R>(&'a Mutex<Shared<S, R>>, &'a Condvar);

impl<S, R> Drop for StopOnPanic<'_, S, R> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().unwrap_or_else(PoisonError::into_inner).stop = true;
            self.1.notify_all();
        }
    }
}

/// Runs `work` on the items `0..n`, on up to `jobs` threads, and hands each result to `use_`
/// on the calling thread in item order. Each item is worked with a scratch `S` (made by
/// `Default` when no used one is spare) that `use_` gets with the result, so that buffers are
/// reused: at most `jobs` items are started beyond the one being used, which bounds memory.
/// With one job or one item everything runs on the calling thread, one item after another.
pub fn in_order<S, R>(
    n: usize,
    jobs: usize,
    work: impl Fn(usize, &mut S) -> R + Sync,
    mut use_: impl FnMut(usize, R, &mut S),
) where
    S: Default + Send,
    R: Send,
{
    let jobs = jobs.clamp(1, n.max(1));
    if jobs == 1 {
        let mut scratch = S::default();
        for i in 0..n {
            let r = work(i, &mut scratch);
            use_(i, r, &mut scratch);
        }
        return;
    }
    let shared = Mutex::new(Shared {
        next: 0,
        at: 0,
        done: (0..n).map(|_| None).collect(),
        spare: Vec::new(),
        stop: false,
    });
    let ready = Condvar::new();
    let lock = || shared.lock().unwrap_or_else(PoisonError::into_inner);
    let wait = |g| ready.wait(g).unwrap_or_else(PoisonError::into_inner);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                let _guard = StopOnPanic(&shared, &ready);
                loop {
                    let (i, mut scratch) = {
                        let mut g = lock();
                        while !g.stop && g.next < n && g.next >= g.at + jobs {
                            g = wait(g);
                        }
                        if g.stop || g.next >= n {
                            return;
                        }
                        g.next += 1;
                        (g.next - 1, g.spare.pop().unwrap_or_default())
                    };
                    let r = work(i, &mut scratch);
                    lock().done[i] = Some((r, scratch));
                    ready.notify_all();
                }
            });
        }
        for i in 0..n {
            let item = {
                let mut g = lock();
                loop {
                    if let Some(item) = g.done[i].take() {
                        break Some(item);
                    }
                    if g.stop {
                        break None;
                    }
                    g = wait(g);
                }
            };
            // A worker panicked: the scope's end passes its panic on.
            let Some((r, mut scratch)) = item else { break };
            use_(i, r, &mut scratch);
            let mut g = lock();
            g.spare.push(scratch);
            g.at = i + 1;
            drop(g);
            ready.notify_all();
        }
        lock().stop = true;
        ready.notify_all();
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Results come in item order whatever order the workers finish in, each item is worked
    /// once, and no more than `jobs` items are started beyond the one in use.
    #[test]
    fn results_are_used_in_order_and_work_stays_within_the_window() {
        for jobs in [1, 2, 3, 8] {
            let started = AtomicUsize::new(0);
            let in_use = AtomicUsize::new(0);
            let mut seen = Vec::new();
            in_order(
                40,
                jobs,
                |i, scratch: &mut Vec<usize>| {
                    let s = started.fetch_add(1, Ordering::SeqCst);
                    assert!(
                        s <= in_use.load(Ordering::SeqCst) + jobs,
                        "jobs {jobs}: item {i} started {s} items in, {} in use",
                        in_use.load(Ordering::SeqCst)
                    );
                    // Later items finish first now and then.
                    if i % 3 == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                    }
                    scratch.push(i);
                    i * 10
                },
                |i, r, scratch| {
                    assert_eq!(r, i * 10);
                    assert_eq!(scratch.last(), Some(&i), "the item's own scratch");
                    seen.push(i);
                    in_use.store(i + 1, Ordering::SeqCst);
                },
            );
            assert_eq!(seen, (0..40).collect::<Vec<_>>(), "jobs {jobs}");
            assert_eq!(started.load(Ordering::SeqCst), 40);
        }
    }

    /// A worker that panics stops the run and its panic reaches the caller: nothing waits for
    /// the item it never finished.
    #[test]
    fn a_worker_s_panic_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| {
            in_order(
                10,
                2,
                |i, _: &mut ()| {
                    if i == 3 {
                        panic!("item 3");
                    }
                    i
                },
                |_, _, _| {},
            )
        });
        assert!(r.is_err());
    }
}

//! A child process timed by `wait4`: how the benchmarks measure a `sqtt` run's own CPU time and
//! peak RSS, apart from their own (and its wall time).
// Each benchmark reads the figures it reports.
#![allow(dead_code)]

use std::process::Command;

/// What a child used.
pub struct Usage {
    /// Whether it exited with status 0.
    pub ok: bool,
    /// Its wait status.
    pub status: i32,
    /// User plus system CPU seconds.
    pub cpu: f64,
    /// Peak resident set, KiB.
    pub rss_kib: u64,
    /// Seconds from its start to its end.
    pub wall: f64,
}

/// Runs `cmd` to its end.
pub fn run(cmd: &mut Command) -> Usage {
    // Reaped by the wait4 below, which also gives its CPU time and peak RSS.
    let start = std::time::Instant::now();
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: `pid` is our child, not yet reaped; the pointers are to live locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid, "wait4");
    let wall = start.elapsed().as_secs_f64();
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Usage {
        ok: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        status,
        cpu: secs(ru.ru_utime) + secs(ru.ru_stime),
        rss_kib: ru.ru_maxrss as u64,
        wall,
    }
}

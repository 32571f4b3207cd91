//! Starting the compiler, behind a trait so that tests put a recording fake in its place.
//!
//! The wrapper starts a process in two ways: it hands itself over to the compiler (`exec`,
//! when nothing is left to do afterwards) or runs it and waits (to check its outputs). Either
//! way the compiler's stdin, stdout and stderr are the wrapper's own, and its exit status (or
//! the signal that killed it) becomes the wrapper's.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// One command to start: everything that decides what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Variables set (over the wrapper's own environment), in order.
    pub set_env: Vec<(String, String)>,
    /// Variables removed from it.
    pub remove_env: Vec<String>,
    /// Where it runs (`None`: where the wrapper runs). A step's command names the directory its
    /// outputs are resolved against.
    pub cwd: Option<PathBuf>,
}

impl Invocation {
    /// The value this command sees for `name`, when the invocation sets it.
    #[cfg(test)]
    pub fn env(&self, name: &str) -> Option<&str> {
        self.set_env
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args);
        if let Some(dir) = &self.cwd {
            c.current_dir(dir);
        }
        for k in &self.remove_env {
            c.env_remove(k);
        }
        for (k, v) in &self.set_env {
            c.env(k, v);
        }
        c
    }
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

impl Status {
    pub const SUCCESS: Status = Status::Exited(0);

    pub fn success(self) -> bool {
        self == Status::SUCCESS
    }

    fn of(status: std::process::ExitStatus) -> Status {
        match (status.code(), status.signal()) {
            (Some(code), _) => Status::Exited(code),
            (None, Some(sig)) => Status::Signaled(sig),
            (None, None) => Status::Exited(1),
        }
    }

    /// Ends the wrapper the way the command ended: with its exit code, or by the same signal
    /// (raised on ourselves with the default action, so the parent sees a killed process).
    pub fn pass_on(self) -> ! {
        match self {
            Status::Exited(code) => std::process::exit(code),
            Status::Signaled(sig) => {
                // SAFETY: resetting a handler to the default and raising a signal have no
                // preconditions.
                unsafe {
                    libc::signal(sig, libc::SIG_DFL);
                    libc::raise(sig);
                }
                // A signal whose default action is not to terminate.
                std::process::exit(128 + sig)
            }
        }
    }
}

/// What a command printed, for the wrapper to read (`hipcc --version`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    pub status: Status,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Starts commands.
pub trait Launcher {
    /// Runs `cmd` to its end.
    fn run(&mut self, cmd: &Invocation) -> io::Result<Status>;
    /// Runs `cmd` to its end with no input, and returns what it printed.
    fn capture(&mut self, cmd: &Invocation) -> io::Result<Captured>;
    /// Replaces the wrapper by `cmd`. The real launcher returns only when that fails; a fake
    /// returns the status the command would have ended with.
    fn exec(&mut self, cmd: &Invocation) -> io::Result<Status>;
}

/// The real launcher: `std::process`, standard streams inherited. While it waits for a
/// command, the signals that ask a process to end (SIGTERM, SIGINT, SIGHUP, SIGQUIT) are passed
/// on to it, and the wrapper ends as the command does ([`Status::pass_on`]).
pub struct System;

impl Launcher for System {
    fn run(&mut self, cmd: &Invocation) -> io::Result<Status> {
        let status = forward::while_waiting(|| cmd.command().spawn(), |mut c| c.wait())?;
        Ok(Status::of(status))
    }

    fn capture(&mut self, cmd: &Invocation) -> io::Result<Captured> {
        let spawn = || {
            cmd.command()
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
        };
        let out = forward::while_waiting(spawn, |c| c.wait_with_output())?;
        Ok(Captured {
            status: Status::of(out.status),
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }

    fn exec(&mut self, cmd: &Invocation) -> io::Result<Status> {
        Err(cmd.command().exec())
    }
}

/// Passing the signals that end a process on to the command the wrapper waits for, so that a
/// build tool or a shell that stops the wrapper stops the compiler too (an exec'd command gets
/// them directly).
mod forward {
    use std::io;
    use std::process::Child;
    use std::sync::atomic::{AtomicI32, Ordering};

    /// The signals passed on.
    const SIGNALS: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

    /// The command waited for (0: none yet).
    static CHILD: AtomicI32 = AtomicI32::new(0);
    /// A signal that came before the command had a process id.
    static PENDING: AtomicI32 = AtomicI32::new(0);

    extern "C" fn pass_on(sig: libc::c_int) {
        let pid = CHILD.load(Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: kill is async-signal-safe.
            unsafe { libc::kill(pid, sig) };
        } else {
            PENDING.store(sig, Ordering::SeqCst);
        }
    }

    /// Starts a command with `spawn` and waits for it with `wait`, passing the signals on
    /// meanwhile. A signal the wrapper ignores (a background job's SIGINT) stays ignored, for the
    /// command too.
    pub fn while_waiting<T>(
        spawn: impl FnOnce() -> io::Result<Child>,
        wait: impl FnOnce(Child) -> io::Result<T>,
    ) -> io::Result<T> {
        let mut saved = Vec::new();
        for sig in SIGNALS {
            // SAFETY: sigaction reads and writes the structs we own; the handler only does
            // async-signal-safe work (atomics, kill).
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction == libc::SIG_IGN
                {
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = pass_on as extern "C" fn(libc::c_int) as libc::sighandler_t;
                new.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut new.sa_mask);
                if libc::sigaction(sig, &new, std::ptr::null_mut()) == 0 {
                    saved.push((sig, old));
                }
            }
        }
        let result = spawn().and_then(|child| {
            CHILD.store(child.id() as i32, Ordering::SeqCst);
            let early = PENDING.swap(0, Ordering::SeqCst);
            if early != 0 {
                // SAFETY: a signal to the process we started.
                unsafe { libc::kill(child.id() as i32, early) };
            }
            wait(child)
        });
        CHILD.store(0, Ordering::SeqCst);
        for (sig, old) in saved {
            // SAFETY: restores the disposition saved above.
            unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
        }
        // A signal that came after the command ended is the wrapper's own again.
        let late = PENDING.swap(0, Ordering::SeqCst);
        if late != 0 {
            // SAFETY: raising a signal has no preconditions.
            unsafe { libc::raise(late) };
        }
        result
    }
}

/// A launcher that records what it was asked to start and starts nothing.
#[cfg(test)]
pub mod fake {
    use super::*;

    /// How the wrapper asked for a command.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Mode {
        Run,
        Capture,
        Exec,
    }

    type Effect = Box<dyn FnMut(&Invocation) -> io::Result<Status>>;

    /// Records every call; each call ends with `status`, after `effect` (a stand-in for what
    /// the compiler would write) when one is given; a captured call printed `stdout`.
    pub struct Recorder {
        pub calls: Vec<(Mode, Invocation)>,
        pub status: Status,
        pub effect: Option<Effect>,
        pub stdout: Vec<u8>,
    }

    impl Recorder {
        pub fn ending(status: Status) -> Recorder {
            Recorder {
                calls: Vec::new(),
                status,
                effect: None,
                stdout: Vec::new(),
            }
        }

        /// A compiler that does `effect` (write its outputs, fail to start, ...).
        pub fn doing(effect: impl FnMut(&Invocation) -> io::Result<Status> + 'static) -> Recorder {
            Recorder {
                calls: Vec::new(),
                status: Status::SUCCESS,
                effect: Some(Box::new(effect)),
                stdout: Vec::new(),
            }
        }

        /// A command that prints `text` and succeeds.
        pub fn printing(text: &str) -> Recorder {
            Recorder {
                stdout: text.as_bytes().to_vec(),
                ..Recorder::ending(Status::SUCCESS)
            }
        }

        fn call(&mut self, mode: Mode, cmd: &Invocation) -> io::Result<Status> {
            self.calls.push((mode, cmd.clone()));
            match &mut self.effect {
                Some(f) => f(cmd),
                None => Ok(self.status),
            }
        }
    }

    impl Launcher for Recorder {
        fn run(&mut self, cmd: &Invocation) -> io::Result<Status> {
            self.call(Mode::Run, cmd)
        }
        fn capture(&mut self, cmd: &Invocation) -> io::Result<Captured> {
            Ok(Captured {
                status: self.call(Mode::Capture, cmd)?,
                stdout: self.stdout.clone(),
                stderr: Vec::new(),
            })
        }
        fn exec(&mut self, cmd: &Invocation) -> io::Result<Status> {
            self.call(Mode::Exec, cmd)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Invocation {
        Invocation {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            set_env: vec![("SQTT_T_SET".into(), "v".into())],
            remove_env: vec!["HOME".into()],
            cwd: Some("/".into()),
        }
    }

    #[test]
    fn the_real_launcher_passes_status_signal_env_and_cwd() {
        let mut l = System;
        assert_eq!(l.run(&sh("exit 7")).unwrap(), Status::Exited(7));
        assert_eq!(l.run(&sh("kill -TERM $$")).unwrap(), Status::Signaled(15));
        let ok = "[ \"$SQTT_T_SET\" = v ] && [ -z \"${HOME+x}\" ] && [ \"$(pwd)\" = / ]";
        assert_eq!(l.run(&sh(ok)).unwrap(), Status::SUCCESS);
        let missing = Invocation {
            program: "/nonexistent/hipcc".into(),
            ..sh("")
        };
        assert_eq!(l.run(&missing).unwrap_err().kind(), io::ErrorKind::NotFound);
        let printed = l
            .capture(&sh("echo out; echo err >&2; read x; exit 2"))
            .unwrap();
        assert_eq!(printed.status, Status::Exited(2));
        assert_eq!(
            (&printed.stdout[..], &printed.stderr[..]),
            (&b"out\n"[..], &b"err\n"[..])
        );
        // exec that cannot start returns its error (and the test process lives on).
        assert_eq!(
            l.exec(&missing).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn invocation_env_reads_the_last_setting() {
        let mut i = sh("");
        i.set_env.push(("SQTT_T_SET".into(), "w".into()));
        assert_eq!(i.env("SQTT_T_SET"), Some("w"));
        assert_eq!(i.env("HOME"), None);
    }
}

//! Runs a short-lived helper program (the Python probe of [`super`]) under a
//! time limit, without trusting it to behave.
//!
//! The program may hang, flood its output, or exit while a child it started keeps the output
//! pipes open (a `sitecustomize.py` that forks, a wrapper script with a background job).
//! Waiting for the pipes to close, as [`std::process::Command::output`] does, then waits for that
//! child, maybe forever. Here the program gets its own process group; both pipes are drained as
//! they fill (each kept up to [`MAX_OUTPUT`], the rest read and dropped); the wait is for the
//! program's exit, not for the pipes, until the deadline; what is in the pipes then is taken
//! without waiting for more; and the whole group is killed, whatever it left behind. On Linux the
//! group is killed while the exited program is still a zombie, so that its id cannot have been
//! reused.

use std::io;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The most bytes kept of each of standard output and standard error.
pub const MAX_OUTPUT: usize = 1 << 20;

/// What the program did.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status; `None` when it was still running at the deadline (and was killed).
    pub status: Option<ExitStatus>,
    /// Its standard output, up to [`MAX_OUTPUT`] bytes.
    pub stdout: Vec<u8>,
    /// Its standard error, up to [`MAX_OUTPUT`] bytes.
    pub stderr: Vec<u8>,
}

/// Runs `command` (stdin from `/dev/null`) for at most `limit`, then kills its process group.
///
/// # Errors
/// The program cannot be started.
pub fn run(command: &mut Command, limit: Duration) -> io::Result<Finished> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    imp::run(command, limit)
}

/// Appends what fits of `bytes` to `kept`.
fn keep(kept: &mut Vec<u8>, bytes: &[u8]) {
    let room = MAX_OUTPUT.saturating_sub(kept.len());
    kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

#[cfg(unix)]
mod imp {
    use std::fs::File;
    use std::io::{self, Read};
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};

    use super::{keep, Duration, Finished, Instant};

    pub fn run(command: &mut Command, limit: Duration) -> io::Result<Finished> {
        // Its own process group (id = its pid): killing the group takes what it started.
        let mut child = command.process_group(0).spawn()?;
        let file = |fd: OwnedFd| Pipe::new(File::from(fd));
        let mut pipes = [
            child.stdout.take().map(|p| file(p.into())),
            child.stderr.take().map(|p| file(p.into())),
        ];
        let deadline = Instant::now() + limit;
        let exited = loop {
            if has_exited(&mut child)? {
                break true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break false;
            }
            // Wake up for output (so the program never blocks on a full pipe) or every 10 ms to
            // look at its state.
            drain(&mut pipes, left.min(Duration::from_millis(10)));
        };
        // What is in the pipes now, without waiting for whoever still holds them.
        drain(&mut pipes, Duration::ZERO);
        kill_group(&child);
        let status = child.wait()?;
        let [stdout, stderr] = pipes.map(|pipe| pipe.map(|p| p.kept).unwrap_or_default());
        Ok(Finished {
            status: exited.then_some(status),
            stdout,
            stderr,
        })
    }

    /// One output pipe of the program and what was read from it.
    struct Pipe {
        reader: File,
        kept: Vec<u8>,
        open: bool,
    }

    impl Pipe {
        fn new(reader: File) -> Pipe {
            Pipe {
                reader,
                kept: Vec::new(),
                open: true,
            }
        }
    }

    /// Reads what is ready in the pipes, waiting at most `wait` for the first of it; with a zero
    /// `wait`, reads until nothing is ready.
    fn drain(pipes: &mut [Option<Pipe>; 2], wait: Duration) {
        let mut timeout = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
        loop {
            let mut fds: Vec<libc::pollfd> = Vec::new();
            let mut which = Vec::new();
            for (i, pipe) in pipes.iter().enumerate() {
                if let Some(pipe) = pipe.as_ref().filter(|p| p.open) {
                    fds.push(libc::pollfd {
                        fd: pipe.reader.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    });
                    which.push(i);
                }
            }
            if fds.is_empty() {
                if timeout > 0 {
                    std::thread::sleep(Duration::from_millis(u64::try_from(timeout).unwrap_or(0)));
                }
                return;
            }
            // SAFETY: `fds` is a live array of `fds.len()` pollfd structs.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if ready <= 0 {
                // Nothing ready (or EINTR: looked at again on the next round).
                return;
            }
            for (fd, &i) in fds.iter().zip(&which) {
                if fd.revents == 0 {
                    continue;
                }
                let Some(pipe) = pipes[i].as_mut() else { continue };
                // Ready: this read does not block (data, or the end of the pipe).
                let mut chunk = [0u8; 64 << 10];
                match pipe.reader.read(&mut chunk) {
                    Ok(0) => pipe.open = false,
                    Ok(n) => keep(&mut pipe.kept, &chunk[..n]),
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => pipe.open = false,
                }
            }
            // Keep reading while data comes, without waiting again.
            timeout = 0;
        }
    }

    /// Whether the program has exited, leaving it unreaped where the system allows (Linux), so
    /// that its process group id stays its own until [`kill_group`].
    #[cfg(target_os = "linux")]
    fn has_exited(child: &mut Child) -> io::Result<bool> {
        let pid = libc::id_t::from(child.id());
        // SAFETY: an all-zero siginfo_t is a valid value; waitid writes into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a live siginfo_t; WNOWAIT leaves the child waitable.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: reading si_pid of a siginfo_t filled by waitid (0 when nothing happened).
        Ok(unsafe { info.si_pid() } != 0)
    }

    #[cfg(not(target_os = "linux"))]
    fn has_exited(child: &mut Child) -> io::Result<bool> {
        // Reaps the program: killing its group afterwards leaves a tiny window for id reuse.
        Ok(child.try_wait()?.is_some())
    }

    /// Kills the program's process group (the program and all it started that stayed in it).
    fn kill_group(child: &Child) {
        if let Ok(group) = libc::pid_t::try_from(child.id()) {
            // SAFETY: a plain system call; the group is the program's own (see `has_exited`).
            let _ = unsafe { libc::killpg(group, libc::SIGKILL) };
        }
    }
}

#[cfg(not(unix))]
mod imp {
    use std::io::{self, Read};
    use std::process::Command;
    use std::sync::{Arc, Mutex};

    use super::{keep, Duration, Finished, Instant};

    pub fn run(command: &mut Command, limit: Duration) -> io::Result<Finished> {
        let mut child = command.spawn()?;
        let collect = |reader: Option<Box<dyn Read + Send>>| {
            let kept = Arc::new(Mutex::new(Vec::new()));
            if let Some(mut reader) = reader {
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || {
                    let mut chunk = [0u8; 64 << 10];
                    while let Ok(n @ 1..) = reader.read(&mut chunk) {
                        keep(&mut kept.lock().unwrap_or_else(|e| e.into_inner()), &chunk[..n]);
                    }
                });
            }
            kept
        };
        let stdout = collect(child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
        let stderr = collect(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        // A moment for the readers to take what the program wrote last.
        std::thread::sleep(Duration::from_millis(50));
        let take = |kept: &Arc<Mutex<Vec<u8>>>| kept.lock().map(|k| k.clone()).unwrap_or_default();
        Ok(Finished {
            status,
            stdout: take(&stdout),
            stderr: take(&stderr),
        })
    }
}

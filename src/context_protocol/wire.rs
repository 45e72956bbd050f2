//! One candidate process at the end of a pipe: spawn, bounded lines, deadlines, and a
//! kill that reaches the whole process group.
//!
//! Owns: everything real about a candidate process (the only wall-clock reads of the
//! context protocol are the deadlines here). Invariant: nothing a peer does hangs or crashes
//! the suite — a silent peer is a timeout, an endless line is an error, a peer that spawned
//! children loses them with it (`SIGKILL` to its process group), and dropping a [`Peer`]
//! always reaps the process.
//!
//! Threads: one writer (a peer that never reads its stdin cannot block us), one stdout
//! reader, one stderr reader keeping the last lines for error messages. Each ends when its
//! pipe closes.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest line either side reads, in bytes.
pub use crate::limits::PEER_LINE_BYTES_MAX as MAX_LINE_BYTES;
/// Lines of a peer's stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 5;

/// Why a peer gave no usable line. Codes are stable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("cannot start the candidate: {0}")]
    Spawn(String),
    #[error("no line within {0} ms while {1}")]
    Timeout(u128, String),
    #[error("the candidate exited or closed its stdout while {0}")]
    Exited(String),
    #[error("the candidate wrote {0} while {1}")]
    Garbage(&'static str, String),
}

impl WireError {
    pub fn code(&self) -> &'static str {
        match self {
            WireError::Spawn(_) => "spawn",
            WireError::Timeout(..) => "timeout",
            WireError::Exited(_) => "exited",
            WireError::Garbage(..) => "protocol",
        }
    }
}

/// What [`read_bounded_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    Text(String),
    Eof,
    TooLong,
    NotUtf8,
}

/// Read one `\n`-terminated line of at most `max` bytes (the newline and a `\r` before it
/// dropped). A too-long line is consumed to its end and reported, never buffered.
pub(crate) fn read_bounded_line<R: BufRead + ?Sized>(
    reader: &mut R,
    max: usize,
) -> io::Result<Line> {
    let mut buf = Vec::new();
    let mut too_long = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            if buf.is_empty() && !too_long {
                return Ok(Line::Eof);
            }
            break;
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if !too_long {
            if buf.len() + take > max + 1 {
                too_long = true;
                buf = Vec::new();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        reader.consume(take);
        if done {
            break;
        }
    }
    if too_long {
        return Ok(Line::TooLong);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(String::from_utf8(buf).map_or(Line::NotUtf8, Line::Text))
}

/// Shorten a peer's line for an error message.
pub(crate) fn clip(line: &str) -> String {
    use crate::limits::PEER_LINE_CLIP_BYTES as MAX;
    let line = line.trim_end();
    if line.len() <= MAX {
        return format!("{line:?}");
    }
    let mut end = MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}… ({} bytes)", &line[..end], line.len())
}

type Tail = Arc<Mutex<VecDeque<String>>>;

/// A live candidate process.
pub(crate) struct Peer {
    child: Child,
    to_child: Option<Sender<String>>,
    from_child: Receiver<io::Result<Line>>,
    stderr_tail: Tail,
    /// Lines read so far (the session's cost counter for the bench and errors).
    pub(crate) lines_in: u64,
}

impl Peer {
    /// Start `argv` in its own process group (so a kill reaches everything it started).
    pub(crate) fn spawn(argv: &[String]) -> Result<Peer, WireError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(WireError::Spawn("the command is empty".into()));
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        let mut child = command
            .spawn()
            .map_err(|e| WireError::Spawn(format!("{program:?}: {e}")))?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(WireError::Spawn("the child's pipes are missing".into()));
        };
        let (to_child, outbox) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in outbox {
                if stdin
                    .write_all(line.as_bytes())
                    .and_then(|()| stdin.flush())
                    .is_err()
                {
                    break;
                }
            }
        });
        let (inbox, from_child) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let line = read_bounded_line(&mut reader, MAX_LINE_BYTES);
                let end = matches!(line, Ok(Line::Eof) | Err(_));
                if inbox.send(line).is_err() || end {
                    break;
                }
            }
        });
        let stderr_tail: Tail = Arc::default();
        let tail = Arc::clone(&stderr_tail);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            loop {
                let line = match read_bounded_line(&mut reader, 64 * 1024) {
                    Ok(Line::Text(t)) => clip(&t),
                    Ok(Line::NotUtf8) => "(a line that is not UTF-8)".to_owned(),
                    Ok(Line::TooLong) => "(an overlong line)".to_owned(),
                    Ok(Line::Eof) | Err(_) => break,
                };
                if let Ok(mut tail) = tail.lock() {
                    if tail.len() == STDERR_TAIL_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            }
        });
        Ok(Peer {
            child,
            to_child: Some(to_child),
            from_child,
            stderr_tail,
            lines_in: 0,
        })
    }

    /// Queue one message line. `false` when the peer's stdin is gone.
    pub(crate) fn send(&self, message: &serde_json::Value) -> bool {
        let line = format!("{message}\n");
        self.to_child
            .as_ref()
            .is_some_and(|tx| tx.send(line).is_ok())
    }

    /// The next non-blank line within `timeout`.
    pub(crate) fn recv(
        &mut self,
        timeout: Duration,
        waiting_for: &str,
    ) -> Result<String, WireError> {
        #[allow(clippy::disallowed_methods)] // real time: a deadline on a real process
        let deadline = Instant::now() + timeout;
        loop {
            #[allow(clippy::disallowed_methods)] // real time: a deadline on a real process
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from_child.recv_timeout(left) {
                Ok(Ok(Line::Text(t))) if t.trim().is_empty() => {}
                Ok(Ok(Line::Text(t))) => {
                    self.lines_in += 1;
                    return Ok(t);
                }
                Ok(Ok(Line::TooLong)) => {
                    return Err(WireError::Garbage(
                        "a line longer than 16 MiB",
                        self.with_stderr(waiting_for),
                    ));
                }
                Ok(Ok(Line::NotUtf8)) => {
                    return Err(WireError::Garbage(
                        "a line that is not UTF-8",
                        self.with_stderr(waiting_for),
                    ));
                }
                Ok(Ok(Line::Eof) | Err(_)) | Err(RecvTimeoutError::Disconnected) => {
                    // Give the stderr reader a moment: the exit message is often the reason.
                    std::thread::sleep(Duration::from_millis(20));
                    return Err(WireError::Exited(self.with_stderr(waiting_for)));
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(WireError::Timeout(
                        timeout.as_millis(),
                        self.with_stderr(waiting_for),
                    ));
                }
            }
        }
    }

    fn with_stderr(&self, waiting_for: &str) -> String {
        let tail = self
            .stderr_tail
            .lock()
            .map(|t| t.iter().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        if tail.is_empty() {
            waiting_for.to_owned()
        } else {
            format!("{waiting_for}; its stderr ended with: {}", tail.join(" | "))
        }
    }

    /// A real crash: `SIGKILL` to the whole process group, then reap.
    pub(crate) fn kill(&mut self) {
        self.to_child = None;
        #[cfg(unix)]
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) with a negative pid signals the process group we created
            // (process_group(0) made the child its leader); no memory is touched.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded() {
        let mut input: &[u8] = b"short\r\nxxxxxxxxxx\n\xff\n";
        assert_eq!(
            read_bounded_line(&mut input, 8).ok(),
            Some(Line::Text("short".into()))
        );
        assert_eq!(read_bounded_line(&mut input, 8).ok(), Some(Line::TooLong));
        assert_eq!(read_bounded_line(&mut input, 8).ok(), Some(Line::NotUtf8));
        assert_eq!(read_bounded_line(&mut input, 8).ok(), Some(Line::Eof));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_kill_reaches_the_grandchildren_and_a_silent_peer_times_out() {
        let argv: Vec<String> = ["sh", "-c", "sleep 30 & echo $!; wait"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let mut peer = Peer::spawn(&argv).expect("sh starts");
        let grandchild = peer
            .recv(Duration::from_secs(5), "the grandchild's pid")
            .expect("pid line");
        let err = peer
            .recv(Duration::from_millis(50), "testing")
            .expect_err("silent");
        assert_eq!(err.code(), "timeout");
        peer.kill();
        std::thread::sleep(Duration::from_millis(100));
        // Gone, or a zombie waiting for a reaper: either way it no longer runs.
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", grandchild.trim()));
        let running = stat.is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        });
        assert!(!running, "the background sleep survived the kill");
    }
}

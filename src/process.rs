//! The one process layer: a peer process at the end of a pipe, for both process protocols
//! (the adapter protocol's client in `conformance::process`, the context protocol's engine
//! and host seams in `context_protocol`).
//!
//! Owns: spawning a child as the leader of its own process group ([`Peer::spawn`]); the
//! bounded line reader ([`read_line`]: at most `max` bytes of a line are ever held, a longer
//! line is reported by its length and skipped) that every reader of a peer's stdout or
//! stdin uses, the peer's side (`adapter serve`, `engine serve`, `eval`) too; one stdout
//! reader thread handing lines over through a channel of [`PEER_READER_QUEUE_LINES`]
//! (back-pressure: a flooding peer blocks on its own pipe); one writer thread (a peer that
//! never reads its stdin cannot block us); one stderr thread keeping the last
//! [`STDERR_TAIL_LINES`] lines for error messages; the handshake ([`Peer::handshake`]: send
//! the hello, read one line within the startup timeout, hand it to the protocol's parser);
//! and the end of a peer ([`Peer::kill`]: `SIGKILL` to the whole process group, then reap;
//! [`Peer::stop`]: close stdin, a grace period, then the kill). [`Deadline`] is the overall
//! wall-clock bound of a suite run against real processes.
//!
//! Invariant: nothing a peer does hangs or crashes the suite, or makes it hold more than
//! `max` bytes per line times the channel's capacity — a silent peer is a timeout, an endless
//! line an error, a peer that spawned children loses them with it, and dropping a [`Peer`]
//! always kills and reaps it. The only wall-clock reads of the process seams are here.
//!
//! May not touch: what a line means. Messages, their shapes and their errors are the
//! protocols' (`conformance::protocol`, `context_protocol`); this module moves lines.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::limits::{
    PEER_EXIT_GRACE, PEER_LINE_BYTES_MAX, PEER_LINE_CLIP_BYTES, PEER_READER_QUEUE_LINES,
    STDERR_DRAIN, STDERR_LINE_BYTES_MAX, STDERR_TAIL_LINES,
};

/// One line as read by [`read_line`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// The line's bytes, without its `\n` (and a `\r` before it).
    Complete(Vec<u8>),
    /// A line longer than the bound: only its length was counted.
    TooLong { bytes: usize },
}

impl Line {
    /// The line as text: `Err` names what was wrong with it (too long, not UTF-8).
    pub(crate) fn into_text(self) -> Result<String, String> {
        match self {
            Line::Complete(bytes) => {
                String::from_utf8(bytes).map_err(|_| "a line that is not UTF-8".to_owned())
            }
            Line::TooLong { .. } => Err(format!("a line longer than {PEER_LINE_BYTES_MAX} bytes")),
        }
    }
}

/// The next line of `reader`, holding at most `max` bytes of it; `Ok(None)` at end of input.
/// A longer line is consumed to its end and reported by its length, never buffered.
pub(crate) fn read_line<R: BufRead + ?Sized>(
    reader: &mut R,
    max: usize,
) -> io::Result<Option<Line>> {
    let mut buf = Vec::new();
    let mut total = 0usize;
    let mut saw_any = false;
    let mut newline = false;
    let bound = max.saturating_add(1);
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            if !saw_any {
                return Ok(None);
            }
            break;
        }
        saw_any = true;
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        total = total.saturating_add(take);
        if total <= bound {
            buf.extend_from_slice(&chunk[..take]);
        } else if !buf.is_empty() {
            buf = Vec::new(); // over the bound: stop holding it
        }
        reader.consume(take);
        if done {
            newline = true;
            break;
        }
    }
    if total > bound {
        return Ok(Some(Line::TooLong {
            bytes: total.saturating_sub(usize::from(newline)),
        }));
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    if buf.len() > max {
        return Ok(Some(Line::TooLong { bytes: buf.len() }));
    }
    Ok(Some(Line::Complete(buf)))
}

/// Shorten a peer's line for an error message (at most [`PEER_LINE_CLIP_BYTES`], quoted).
pub(crate) fn clip(line: &str) -> String {
    let line = line.trim_end();
    if line.len() <= PEER_LINE_CLIP_BYTES {
        return format!("{line:?}");
    }
    let mut end = PEER_LINE_CLIP_BYTES;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}… ({} bytes)", &line[..end], line.len())
}

/// Why a peer gave no usable line. Codes are stable; the message names the peer, what the
/// suite was waiting for and the end of the peer's stderr.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProcessError {
    /// The process could not be started.
    #[error("{0}")]
    Spawn(String),
    /// No line within the timeout.
    #[error("{0}")]
    Timeout(String),
    /// The process exited, closed its stdout or its stdin, or its stdout failed.
    #[error("{0}")]
    Exited(String),
    /// A line too long or not UTF-8.
    #[error("{0}")]
    Garbage(String),
}

impl ProcessError {
    /// The stable machine code.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            ProcessError::Spawn(_) => "spawn",
            ProcessError::Timeout(_) => "timeout",
            ProcessError::Exited(_) => "exited",
            ProcessError::Garbage(_) => "protocol",
        }
    }
}

/// Why a handshake failed: the peer (a [`ProcessError`]) or its answer (the protocol's
/// parser's reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HandshakeError {
    #[error("{0}")]
    Process(#[from] ProcessError),
    #[error("{0}")]
    Refused(String),
}

/// The last lines of a peer's stderr, and a signal that its reader saw the end.
struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// Disconnected once the stderr reader has seen EOF (it holds the only sender).
    done: Receiver<()>,
}

impl StderrTail {
    fn spawn<R: Read + Send + 'static>(stderr: R) -> Self {
        let lines: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let tail = Arc::clone(&lines);
        let (eof, done) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            let _eof = eof; // dropped when this reader ends
            let mut reader = BufReader::new(stderr);
            while let Ok(Some(line)) = read_line(&mut reader, STDERR_LINE_BYTES_MAX) {
                let line = match line {
                    Line::Complete(bytes) => String::from_utf8(bytes)
                        .map_or_else(|_| "(a line that is not UTF-8)".to_owned(), |t| clip(&t)),
                    Line::TooLong { .. } => "(an overlong line)".to_owned(),
                };
                if let Ok(mut tail) = tail.lock() {
                    if tail.len() == STDERR_TAIL_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            }
        });
        StderrTail { lines, done }
    }

    /// `"; its stderr ended with: a | b"`, or nothing when it wrote nothing.
    fn note(&self) -> String {
        let tail = self
            .lines
            .lock()
            .map(|t| t.iter().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        if tail.is_empty() {
            String::new()
        } else {
            format!("; its stderr ended with: {}", tail.join(" | "))
        }
    }
}

/// A live peer process: its own process group, a writer, a bounded stdout reader and a
/// stderr tail. Dropping it kills the group and reaps the process.
pub(crate) struct Peer {
    child: Child,
    /// The peer as messages name it ("the adapter", "the candidate", "the host").
    noun: &'static str,
    /// Dropping this closes the child's stdin (the writer thread ends).
    to_child: Option<Sender<String>>,
    from_child: Receiver<io::Result<Option<Line>>>,
    stderr: StderrTail,
    /// Killed and reaped: its pid may be reused, so it is never signalled again.
    reaped: bool,
}

impl Peer {
    /// Start `argv` as the leader of a new process group (Unix), so [`Peer::kill`] reaches
    /// everything it forks. `noun` names the peer in messages.
    pub(crate) fn spawn(argv: &[String], noun: &'static str) -> Result<Peer, ProcessError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(ProcessError::Spawn("the command is empty".to_owned()));
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
            .map_err(|e| ProcessError::Spawn(format!("cannot start {program:?}: {e}")))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            // Unreachable with Stdio::piped(), but a missing pipe is reported, not unwrapped.
            kill_group(&mut child);
            return Err(ProcessError::Spawn(
                "the child's pipes are missing".to_owned(),
            ));
        };
        Ok(Peer {
            child,
            noun,
            to_child: Some(spawn_writer(stdin)),
            from_child: spawn_line_reader(stdout, PEER_LINE_BYTES_MAX, PEER_READER_QUEUE_LINES),
            stderr: StderrTail::spawn(stderr),
            reaped: false,
        })
    }

    /// Queue one message line. `false` when the peer's stdin is gone.
    pub(crate) fn send(&self, message: &serde_json::Value) -> bool {
        let line = format!("{message}\n");
        self.to_child
            .as_ref()
            .is_some_and(|tx| tx.send(line).is_ok())
    }

    /// The next non-blank line within `timeout`, or why there is none; `waiting_for` says
    /// what the suite was doing ("waiting for the ack to the hello").
    pub(crate) fn recv(
        &mut self,
        timeout: Duration,
        waiting_for: &str,
    ) -> Result<String, ProcessError> {
        #[allow(clippy::disallowed_methods)] // real time: a timeout on a real process
        let deadline = Instant::now() + timeout;
        loop {
            #[allow(clippy::disallowed_methods)] // real time: a timeout on a real process
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from_child.recv_timeout(left) {
                Ok(Ok(Some(line))) => match line.into_text() {
                    Ok(t) if t.trim().is_empty() => {}
                    Ok(t) => return Ok(t),
                    Err(what) => {
                        return Err(ProcessError::Garbage(format!(
                            "wrote {what} while {waiting_for}{}",
                            self.stderr_note()
                        )));
                    }
                },
                Ok(Ok(None)) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.exited(waiting_for));
                }
                Ok(Err(e)) => {
                    return Err(ProcessError::Exited(format!(
                        "cannot read {}'s stdout while {waiting_for}: {e}{}",
                        self.noun,
                        self.stderr_note()
                    )));
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(ProcessError::Timeout(format!(
                        "no answer within {} ms while {waiting_for}{}",
                        timeout.as_millis(),
                        self.stderr_note()
                    )));
                }
            }
        }
    }

    /// The peer's stdout ended: how (its exit status, if it exited), and its stderr read
    /// to the end when the process is gone.
    fn exited(&mut self, waiting_for: &str) -> ProcessError {
        let status = self.exit_status();
        let how = match status {
            Some(s) => format!("exited ({s})"),
            None => "closed its stdout".to_owned(),
        };
        if status.is_some() {
            // The process is gone: its stderr ends soon; read it to the end.
            let _ = self.stderr.done.recv_timeout(STDERR_DRAIN);
        }
        ProcessError::Exited(format!(
            "{} {how} while {waiting_for}{}",
            self.noun,
            self.stderr_note()
        ))
    }

    /// The exit status, waiting briefly: stdout can close a moment before the exit.
    fn exit_status(&mut self) -> Option<ExitStatus> {
        for _ in 0..20 {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// `"; its stderr ended with: …"` (the last lines of the peer's stderr), or nothing.
    pub(crate) fn stderr_note(&self) -> String {
        self.stderr.note()
    }

    /// Send `hello` and read the answer within `timeout`; `parse` is the protocol's check
    /// of the answer line. The peer closing its stdin first is [`ProcessError::Exited`].
    pub(crate) fn handshake<T>(
        &mut self,
        hello: &serde_json::Value,
        timeout: Duration,
        waiting_for: &str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<T, HandshakeError> {
        if !self.send(hello) {
            return Err(ProcessError::Exited(format!(
                "{} closed its stdin before the hello{}",
                self.noun,
                self.stderr_note()
            ))
            .into());
        }
        let line = self.recv(timeout, waiting_for)?;
        parse(&line).map_err(HandshakeError::Refused)
    }

    /// Close stdin, give the peer [`PEER_EXIT_GRACE`] to exit, then kill its group.
    pub(crate) fn stop(mut self) {
        self.to_child = None;
        let mut waited = Duration::ZERO;
        while waited < PEER_EXIT_GRACE {
            if let Ok(Some(_)) = self.child.try_wait() {
                // It exited; anything it forked into its group goes with it below.
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
            waited += Duration::from_millis(5);
        }
        self.kill();
    }

    /// A real crash: `SIGKILL` to the whole process group, then reap (once: a second
    /// call, or the drop after it, does nothing).
    pub(crate) fn kill(&mut self) {
        self.to_child = None;
        if !self.reaped {
            self.reaped = true;
            kill_group(&mut self.child);
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A writer thread: each queued line is written and flushed; it ends when the queue's
/// sender is dropped or the pipe fails.
fn spawn_writer(mut stdin: impl Write + Send + 'static) -> Sender<String> {
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
    to_child
}

/// Read lines of `source` on a thread and hand them over through a channel holding at most
/// `capacity` lines: a child that writes faster than its user reads blocks on its own pipe
/// (back-pressure) instead of filling the parent's memory. The channel ends after EOF or
/// an I/O error (sent last).
fn spawn_line_reader<R: Read + Send + 'static>(
    source: R,
    max: usize,
    capacity: usize,
) -> Receiver<io::Result<Option<Line>>> {
    let (tx, rx) = mpsc::sync_channel(capacity.max(1));
    std::thread::spawn(move || {
        let mut reader = BufReader::new(source);
        loop {
            let next = read_line(&mut reader, max);
            let end = matches!(next, Ok(None) | Err(_));
            if tx.send(next).is_err() || end {
                break;
            }
        }
    });
    rx
}

/// Kill `child`'s whole process group (Unix; elsewhere the child alone) and reap it.
fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    {
        if let Ok(pid) = i32::try_from(child.id())
            && pid > 0
        {
            // SAFETY: kill(2) with a negative pid signals the process group `pid`, which
            // `Peer::spawn` created for this child alone; no memory is touched.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// An overall wall-clock deadline (for a whole suite run, or one session, against real
/// processes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    at: Option<Instant>,
    total: Duration,
}

impl Deadline {
    /// A deadline `total` from now; `None` never passes.
    pub(crate) fn after(total: Option<Duration>) -> Self {
        #[allow(clippy::disallowed_methods)] // real time: a deadline on real processes
        let now = Instant::now();
        Deadline {
            at: total.map(|t| now + t),
            total: total.unwrap_or_default(),
        }
    }

    /// Time left (`None`: unbounded).
    pub(crate) fn left(&self) -> Option<Duration> {
        #[allow(clippy::disallowed_methods)] // real time: a deadline on real processes
        let now = Instant::now();
        self.at.map(|at| at.saturating_duration_since(now))
    }

    pub(crate) fn passed(&self) -> bool {
        self.left().is_some_and(|l| l.is_zero())
    }

    /// `timeout`, shortened to what is left of the deadline.
    pub(crate) fn clamp(&self, timeout: Duration) -> Duration {
        self.left().map_or(timeout, |l| l.min(timeout))
    }

    pub(crate) fn total(&self) -> Duration {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut r = io::BufReader::with_capacity(3, input);
        let mut out = Vec::new();
        while let Ok(Some(l)) = read_line(&mut r, max) {
            out.push(l);
        }
        out
    }

    #[test]
    fn lines_are_bounded_and_reading_goes_on() {
        let got = lines(b"ab\r\n\xff\xfe\ntoolongline\nok", 5);
        assert_eq!(
            got,
            vec![
                Line::Complete(b"ab".to_vec()),
                Line::Complete(vec![0xff, 0xfe]),
                Line::TooLong { bytes: 11 },
                Line::Complete(b"ok".to_vec()),
            ]
        );
        assert_eq!(lines(b"", 5), vec![]);
        assert_eq!(
            lines(b"12345\n", 5),
            vec![Line::Complete(b"12345".to_vec())]
        );
        assert_eq!(lines(b"123456", 5), vec![Line::TooLong { bytes: 6 }]);
        assert_eq!(lines(b"1234567", 5), vec![Line::TooLong { bytes: 7 }]);
        assert_eq!(
            Line::Complete(vec![0xff]).into_text(),
            Err("a line that is not UTF-8".to_owned())
        );
        assert!(
            Line::TooLong { bytes: 9 }
                .into_text()
                .is_err_and(|e| e.contains("longer than"))
        );
    }

    #[test]
    fn the_reader_channel_is_bounded() {
        let input: Vec<u8> = b"x\n".repeat(100);
        let rx = spawn_line_reader(io::Cursor::new(input), 10, 2);
        let mut n = 0;
        while let Ok(Ok(Some(_))) = rx.recv() {
            n += 1;
        }
        assert_eq!(n, 100);
    }

    #[test]
    fn long_lines_are_clipped_on_a_char_boundary() {
        assert_eq!(clip("short\n"), "\"short\"");
        let long = "é".repeat(PEER_LINE_CLIP_BYTES);
        let clipped = clip(&long);
        assert!(
            clipped.ends_with(&format!("… ({} bytes)", long.len())),
            "{clipped}"
        );
        assert!(clipped.len() < PEER_LINE_CLIP_BYTES + 30, "{clipped}");
    }

    fn sh(script: &str) -> Vec<String> {
        ["sh", "-c", script]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    }

    /// Gone, or a zombie waiting for a reaper: either way it no longer runs.
    #[cfg(target_os = "linux")]
    fn running(pid: &str) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        stat.is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_kill_reaches_the_grandchildren_and_a_silent_peer_times_out() {
        let mut peer = Peer::spawn(&sh("sleep 30 & echo $!; wait"), "the peer").expect("sh");
        let grandchild = peer
            .recv(Duration::from_secs(5), "the grandchild's pid")
            .expect("pid line");
        let err = peer
            .recv(Duration::from_millis(50), "testing")
            .expect_err("silent");
        assert_eq!(err.code(), "timeout");
        assert!(
            err.to_string()
                .starts_with("no answer within 50 ms while testing"),
            "{err}"
        );
        peer.kill();
        let mut alive = true;
        for _ in 0..100 {
            alive = running(grandchild.trim());
            if !alive {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive, "the background sleep survived the kill");
    }

    #[cfg(unix)]
    #[test]
    fn an_exit_names_its_status_and_the_stderr_tail() {
        let mut peer = Peer::spawn(
            &sh("for i in 1 2 3 4 5 6 7; do echo line$i >&2; done; exit 3"),
            "the peer",
        )
        .expect("sh");
        let err = peer
            .recv(Duration::from_secs(5), "testing")
            .expect_err("exit");
        assert_eq!(err.code(), "exited");
        let said = err.to_string();
        assert!(
            said.starts_with("the peer exited (exit status: 3) while testing"),
            "{said}"
        );
        // Only the last lines are kept.
        let tail = r#""line3" | "line4" | "line5" | "line6" | "line7""#;
        assert!(said.ends_with(tail), "{said}");
        assert!(!said.contains("line2"), "{said}");
    }

    #[cfg(unix)]
    #[test]
    fn a_handshake_sends_the_hello_and_parses_one_line() {
        let mut peer = Peer::spawn(&sh("read hello; echo \"$hello\""), "the peer").expect("sh");
        let hello = serde_json::json!({"hello": 1});
        let echoed = peer.handshake(&hello, Duration::from_secs(5), "the ack", |line| {
            serde_json::from_str::<serde_json::Value>(line).map_err(|e| e.to_string())
        });
        assert_eq!(echoed, Ok(hello.clone()));
        let mut peer = Peer::spawn(&sh("read hello; echo nope"), "the peer").expect("sh");
        let refused = peer.handshake(&hello, Duration::from_secs(5), "the ack", |line| {
            Err::<(), _>(format!("refused {line}"))
        });
        assert_eq!(refused, Err(HandshakeError::Refused("refused nope".into())));
        assert!(Peer::spawn(&[], "the peer").is_err_and(|e| e.code() == "spawn"));
    }
}

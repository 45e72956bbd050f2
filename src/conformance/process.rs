//! The client side of the adapter protocol: a candidate host as a child process.
//!
//! Owns: splitting the `--adapter` command line, spawning it, the hello/ack handshake,
//! per-request timeouts, restarting after a crash, and turning every way a process can
//! misbehave (exit, silence, garbage, wrong ids) into an [`AdapterError`] — never a hang
//! or a panic. Refuses to know what the requests mean.
//!
//! Threads: one writer (so a peer that never reads its stdin cannot block us), one stdout
//! reader (so a silent peer is a timeout, not a hang) and one stderr reader (whose last
//! lines go into error messages). They are detached: each ends when its pipe closes.
//!
//! Bounds (issue 12 item 7, plumbing in [`super::child`]): the adapter runs in its own
//! process group, killed whole when the suite is done with it (nothing it forked outlives
//! the suite); its stdout reader holds at most [`READER_QUEUE`] lines of at most
//! `MAX_LINE_BYTES` each (back-pressure: a flooding adapter blocks on its own pipe); an
//! overall deadline (`ProcessOptions::deadline`, default [`DEFAULT_DEADLINE`]) ends the
//! run: every case after it fails at once, naming the deadline.

use std::collections::VecDeque;
use std::io::{self, BufReader, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::child::{self, Deadline};
use super::protocol::{self, Line, MAX_LINE_BYTES, clip};
use super::{Adapter, AdapterError};

/// How many lines of the adapter's stderr are kept for error messages.
const STDERR_TAIL_LINES: usize = 5;
/// How long an adapter gets to exit after its stdin closes before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(1000);
/// How many stdout lines the reader may queue before it stops reading (back-pressure).
pub(crate) const READER_QUEUE: usize = 16;
/// The default overall deadline of a suite run against an adapter process: ample for
/// the whole suite (the reference answers it in about a second), short enough that an
/// adapter that alternates answering and hanging cannot keep CI busy for an hour.
pub use crate::limits::DEFAULT_DEADLINE;

/// Timeouts and restart policy of a [`ProcessAdapter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOptions {
    /// How long one request may take.
    pub request_timeout: Duration,
    /// How long the adapter may take to start and answer the hello.
    pub startup_timeout: Duration,
    /// After this many transport failures in a row the adapter is not restarted again and
    /// every remaining case fails at once (so a broken adapter cannot cost
    /// cases × timeout).
    pub max_consecutive_failures: u32,
    /// The whole run's wall-clock bound, from the adapter's start (`None`: unbounded).
    pub deadline: Option<Duration>,
}

impl Default for ProcessOptions {
    fn default() -> Self {
        ProcessOptions {
            request_timeout: Duration::from_secs(10),
            startup_timeout: Duration::from_secs(30),
            max_consecutive_failures: 3,
            deadline: Some(DEFAULT_DEADLINE),
        }
    }
}

/// Split a command line into words with a small, shell-like, platform-independent rule
/// set (no shell runs): whitespace separates words; `'…'` is literal; inside `"…"` a
/// backslash escapes only `"` and `\`; outside quotes a backslash escapes the next
/// character; quoted and unquoted pieces next to each other join into one word. No
/// variables, globs, pipes or redirections — wrap in `sh -c '…'` for those.
pub fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unterminated ' quote".to_owned()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("unterminated \" quote".to_owned()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("unterminated \" quote".to_owned()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err("a trailing \\ escapes nothing".to_owned()),
            },
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err("the adapter command is empty".to_owned());
    }
    Ok(words)
}

type StderrTail = Arc<Mutex<VecDeque<String>>>;

/// One live child process.
struct Running {
    child: Child,
    /// Dropping this closes the child's stdin (the writer thread ends).
    to_child: Option<Sender<String>>,
    from_child: Receiver<io::Result<Option<child::Line>>>,
    stderr_tail: StderrTail,
    /// Disconnected once the stderr reader has seen EOF (it holds the only sender).
    stderr_done: Receiver<()>,
}

/// How long an exited adapter's stderr reader gets to drain the pipe before the message is
/// composed: stdout's EOF can be seen before the last stderr line has been read.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

impl Running {
    fn spawn(argv: &[String]) -> Result<Running, AdapterError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(AdapterError::Spawn(
                "the adapter command is empty".to_owned(),
            ));
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = child::spawn_in_group(&mut command)
            .map_err(|e| AdapterError::Spawn(format!("cannot start {program:?}: {e}")))?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            // Unreachable with Stdio::piped(), but a missing pipe is reported, not unwrapped.
            child::kill_group(&mut child);
            return Err(AdapterError::Spawn(
                "the child's pipes are missing".to_owned(),
            ));
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
        let from_child = child::spawn_line_reader(stdout, MAX_LINE_BYTES, READER_QUEUE);
        let stderr_tail: StderrTail = Arc::default();
        let tail = Arc::clone(&stderr_tail);
        let (stderr_eof, stderr_done) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            let _eof = stderr_eof; // dropped when this reader ends
            let mut reader = BufReader::new(stderr);
            loop {
                let line = match protocol::read_line(&mut reader) {
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
        Ok(Running {
            child,
            to_child: Some(to_child),
            from_child,
            stderr_tail,
            stderr_done,
        })
    }

    fn send(&self, message: &Value) -> bool {
        let line = format!("{message}\n");
        self.to_child
            .as_ref()
            .is_some_and(|tx| tx.send(line).is_ok())
    }

    /// The next non-blank line, or why there is none.
    fn recv(&mut self, timeout: Duration, waiting_for: &str) -> Result<String, AdapterError> {
        #[allow(clippy::disallowed_methods)] // real time: a timeout on a real process
        let deadline = Instant::now() + timeout;
        loop {
            #[allow(clippy::disallowed_methods)] // real time: a timeout on a real process
            let left = deadline.saturating_duration_since(Instant::now());
            let next = self.from_child.recv_timeout(left).map(|r| {
                r.map(|line| match line {
                    None => Line::Eof,
                    Some(child::Line::TooLong { .. }) => Line::TooLong,
                    Some(child::Line::Complete(bytes)) => {
                        String::from_utf8(bytes).map_or(Line::NotUtf8, Line::Text)
                    }
                })
            });
            match next {
                Ok(Ok(Line::Text(t))) if t.trim().is_empty() => {}
                Ok(Ok(Line::Text(t))) => return Ok(t),
                Ok(Ok(Line::TooLong)) => {
                    return Err(AdapterError::Protocol(format!(
                        "wrote a line longer than {MAX_LINE_BYTES} bytes while {waiting_for}"
                    )));
                }
                Ok(Ok(Line::NotUtf8)) => {
                    return Err(AdapterError::Protocol(format!(
                        "wrote a line that is not UTF-8 while {waiting_for}"
                    )));
                }
                Ok(Ok(Line::Eof)) | Err(RecvTimeoutError::Disconnected) => {
                    let status = self.exit_status();
                    let how = match status {
                        Some(s) => format!("exited ({s})"),
                        None => "closed its stdout".to_owned(),
                    };
                    if status.is_some() {
                        // The process is gone: its stderr ends soon; read it to the end.
                        let _ = self.stderr_done.recv_timeout(STDERR_DRAIN);
                    }
                    return Err(AdapterError::Exited(format!(
                        "the adapter {how} while {waiting_for}{}",
                        self.stderr_note()
                    )));
                }
                Ok(Err(e)) => {
                    return Err(AdapterError::Exited(format!(
                        "cannot read the adapter's stdout while {waiting_for}: {e}{}",
                        self.stderr_note()
                    )));
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(AdapterError::Timeout(format!(
                        "no answer within {} ms while {waiting_for}{}",
                        timeout.as_millis(),
                        self.stderr_note()
                    )));
                }
            }
        }
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

    fn stderr_note(&self) -> String {
        let tail = self
            .stderr_tail
            .lock()
            .map(|t| t.iter().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        if tail.is_empty() {
            String::new()
        } else {
            format!("; its stderr ended with: {}", tail.join(" | "))
        }
    }

    /// Close stdin, give the adapter [`EXIT_GRACE`] to exit, then kill it.
    fn stop(mut self) {
        self.to_child = None;
        let mut waited = Duration::ZERO;
        while waited < EXIT_GRACE {
            if let Ok(Some(_)) = self.child.try_wait() {
                // It exited; anything it forked into its group goes with it.
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
            waited += Duration::from_millis(5);
        }
        self.kill();
    }

    /// Kill the adapter's whole process group (whatever it forked too) and reap it.
    fn kill(mut self) {
        child::kill_group(&mut self.child);
    }
}

/// A candidate host spoken to through the adapter protocol.
pub struct ProcessAdapter {
    command: String,
    argv: Vec<String>,
    options: ProcessOptions,
    running: Option<Running>,
    name: Option<String>,
    /// Set once the adapter is given up on; every later request fails with it.
    broken: Option<AdapterError>,
    consecutive_failures: u32,
    next_id: u64,
    deadline: Deadline,
    /// The profile the ack declared (`capabilities`), if any.
    declared: Option<super::Capabilities>,
}

impl ProcessAdapter {
    /// Split `command`, start it and shake hands. `Err` only when the command cannot be
    /// parsed or started at all (a usage problem); a process that starts but then fails
    /// the handshake yields an adapter whose every request fails with that reason.
    pub fn start(command: &str, options: ProcessOptions) -> Result<Self, AdapterError> {
        let argv = split_command(command)
            .map_err(|e| AdapterError::Spawn(format!("cannot parse {command:?}: {e}")))?;
        let mut adapter = ProcessAdapter {
            command: command.to_owned(),
            argv,
            deadline: Deadline::after(options.deadline),
            options,
            running: None,
            name: None,
            broken: None,
            consecutive_failures: 0,
            next_id: 0,
            declared: None,
        };
        let running = Running::spawn(&adapter.argv)?;
        adapter.handshake(running);
        Ok(adapter)
    }

    fn handshake(&mut self, mut running: Running) {
        let result = if running.send(&protocol::hello()) {
            running
                .recv(
                    self.deadline.clamp(self.options.startup_timeout),
                    "waiting for the ack to the hello",
                )
                .and_then(|line| {
                    let name = protocol::parse_ack(&line).map_err(AdapterError::Handshake)?;
                    let profile =
                        protocol::ack_capabilities(&line).map_err(AdapterError::Handshake)?;
                    Ok((name, profile))
                })
        } else {
            Err(AdapterError::Exited(format!(
                "the adapter closed its stdin before the hello{}",
                running.stderr_note()
            )))
        };
        match result {
            Ok((name, profile)) => {
                self.name = Some(name);
                if let Some(p) = profile {
                    self.declared = Some(p);
                }
                self.next_id = 0;
                self.running = Some(running);
            }
            Err(e) => {
                running.kill();
                self.broken = Some(AdapterError::Handshake(e.message().to_owned()));
            }
        }
    }

    fn exchange(&mut self, request: &Value) -> Result<Value, AdapterError> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        if self.deadline.passed() {
            if let Some(r) = self.running.take() {
                r.kill();
            }
            let e = AdapterError::Unavailable(format!(
                "the run's overall deadline of {} s passed; this and every later case were not sent (--deadline)",
                self.deadline.total().as_secs()
            ));
            self.broken = Some(e.clone());
            return Err(e);
        }
        if self.running.is_none() {
            // The previous process failed; start a fresh one so one crash costs one case.
            match Running::spawn(&self.argv) {
                Ok(r) => self.handshake(r),
                Err(e) => self.broken = Some(e),
            }
            if let Some(e) = &self.broken {
                return Err(e.clone());
            }
        }
        let Some(running) = self.running.as_mut() else {
            return Err(AdapterError::Unavailable(
                "the adapter is not running".to_owned(),
            ));
        };
        self.next_id += 1;
        let id = self.next_id;
        if !running.send(&protocol::request(id, request)) {
            return Err(AdapterError::Exited(format!(
                "the adapter closed its stdin before request {id}{}",
                running.stderr_note()
            )));
        }
        let waiting_for = format!("waiting for the response to request {id}");
        let line = running.recv(
            self.deadline.clamp(self.options.request_timeout),
            &waiting_for,
        )?;
        let message: Value = serde_json::from_str(&line).map_err(|e| {
            AdapterError::Protocol(format!(
                "wrote a line that is not JSON ({e}) while {waiting_for}: {}",
                clip(&line)
            ))
        })?;
        if message.get("id").and_then(Value::as_u64) != Some(id) {
            return Err(AdapterError::Protocol(format!(
                "expected {{\"id\": {id}, \"response\": …}}, got {}",
                clip(&line)
            )));
        }
        if let Some(response) = message.get("response") {
            return Ok(response.clone());
        }
        let why = message.get("protocolError").map_or_else(
            || "neither \"response\" nor \"protocolError\"".to_owned(),
            |e| format!("protocolError {e}"),
        );
        Err(AdapterError::Protocol(format!(
            "answered request {id} with {why}"
        )))
    }
}

impl Adapter for ProcessAdapter {
    fn name(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.command.clone())
    }

    /// What the ack declared (`capabilities`); everything when it declared nothing.
    fn capabilities(&self) -> super::Capabilities {
        self.declared.clone().unwrap_or_default()
    }

    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
        let result = self.exchange(request);
        match &result {
            Ok(_) => self.consecutive_failures = 0,
            Err(_) if self.broken.is_some() => {}
            Err(e) => {
                // The process's state is unknown after any transport failure: replace it.
                if let Some(r) = self.running.take() {
                    r.kill();
                }
                self.consecutive_failures += 1;
                if self.consecutive_failures >= self.options.max_consecutive_failures {
                    self.broken = Some(AdapterError::Unavailable(format!(
                        "gave up after {} failures in a row; the last: {e}",
                        self.consecutive_failures
                    )));
                }
            }
        }
        result
    }
}

impl Drop for ProcessAdapter {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_like_a_small_shell() {
        let ok = |s: &str| split_command(s).expect(s);
        assert_eq!(ok("a b  c"), ["a", "b", "c"]);
        assert_eq!(
            ok(r#"sh -c 'exec "x y" z'"#),
            ["sh", "-c", r#"exec "x y" z"#]
        );
        assert_eq!(ok(r#""a \" \\ \n" b\ c ''"#), [r#"a " \ \n"#, "b c", ""]);
        assert_eq!(ok("pre'fix'\"ed\""), ["prefixed"]);
        for bad in ["", "   ", "'open", "\"open", "end\\"] {
            assert!(split_command(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_unstartable_command_is_a_spawn_error() {
        let err = ProcessAdapter::start("/nonexistent/w6w-adapter", ProcessOptions::default())
            .err()
            .expect("cannot start");
        assert_eq!(err.code(), "spawn");
        assert!(
            err.to_string().contains("/nonexistent/w6w-adapter"),
            "{err}"
        );
    }
}

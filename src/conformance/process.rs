//! The client side of the adapter protocol: a candidate host as a child process.
//!
//! Owns: splitting the `--adapter` command line, spawning it, the hello/ack handshake,
//! per-request timeouts, restarting after a crash, and turning every way a process can
//! misbehave (exit, silence, garbage, wrong ids) into an [`AdapterError`] — never a hang
//! or a panic. Refuses to know what the requests mean.
//!
//! The process itself — its process group, threads, bounded lines, stderr tail, handshake
//! and kill — is [`crate::process::Peer`] (issue 12 item 7, issue 43 item 4). An overall
//! deadline (`ProcessOptions::deadline`, default [`DEFAULT_DEADLINE`]) ends the run: every
//! case after it fails at once, naming the deadline.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::protocol;
use super::{Adapter, AdapterError};
use crate::process::{Deadline, HandshakeError, Peer, ProcessError, clip};

/// How the adapter is named in messages.
const NOUN: &str = "the adapter";
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

impl From<ProcessError> for AdapterError {
    fn from(e: ProcessError) -> Self {
        match e {
            ProcessError::Spawn(m) => AdapterError::Spawn(m),
            ProcessError::Timeout(m) => AdapterError::Timeout(m),
            ProcessError::Exited(m) => AdapterError::Exited(m),
            ProcessError::Garbage(m) => AdapterError::Protocol(m),
        }
    }
}

/// A candidate host spoken to through the adapter protocol.
pub struct ProcessAdapter {
    command: String,
    argv: Vec<String>,
    options: ProcessOptions,
    running: Option<Peer>,
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
        let running = Peer::spawn(&adapter.argv, NOUN)?;
        adapter.handshake(running);
        Ok(adapter)
    }

    fn handshake(&mut self, mut running: Peer) {
        let result = running.handshake(
            &protocol::hello(),
            self.deadline.clamp(self.options.startup_timeout),
            "waiting for the ack to the hello",
            |line| {
                Ok((
                    protocol::parse_ack(line)?,
                    protocol::ack_capabilities(line)?,
                ))
            },
        );
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
                let why = match e {
                    HandshakeError::Process(e) => e.to_string(),
                    HandshakeError::Refused(why) => why,
                };
                self.broken = Some(AdapterError::Handshake(why));
            }
        }
    }

    /// Before a request: refuse once broken or past the run's deadline, and start a fresh
    /// process when the previous one failed (so one crash costs one case).
    fn ensure_running(&mut self) -> Result<(), AdapterError> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        if self.deadline.passed() {
            if let Some(mut r) = self.running.take() {
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
            match Peer::spawn(&self.argv, NOUN) {
                Ok(r) => self.handshake(r),
                Err(e) => self.broken = Some(e.into()),
            }
            if let Some(e) = &self.broken {
                return Err(e.clone());
            }
        }
        Ok(())
    }

    fn exchange(&mut self, request: &Value) -> Result<Value, AdapterError> {
        self.ensure_running()?;
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
        let reply = protocol::Reply::deserialize(message)
            .ok()
            .filter(|reply| reply.id == id)
            .ok_or_else(|| {
                AdapterError::Protocol(format!(
                    "expected {{\"id\": {id}, \"response\": …}}, got {}",
                    clip(&line)
                ))
            })?;
        match (reply.response, reply.protocol_error) {
            (Some(response), _) => Ok(response),
            (None, error) => {
                let why = error.map_or_else(
                    || "neither \"response\" nor \"protocolError\"".to_owned(),
                    |e| format!("protocolError {e}"),
                );
                Err(AdapterError::Protocol(format!(
                    "answered request {id} with {why}"
                )))
            }
        }
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
                if let Some(mut r) = self.running.take() {
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

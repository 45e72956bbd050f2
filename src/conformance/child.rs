//! Reusable child-process plumbing for every client of a process protocol (the adapter
//! client today; an engine-protocol client can use the same parts).
//!
//! Owns: spawning a child in its own process group ([`spawn_in_group`]), killing that whole
//! group ([`kill_group`]) so nothing the child forked outlives its user, a bounded line
//! reader ([`BoundedLines`]: at most `max` bytes of a line are ever held; a longer line is
//! reported by its length and skipped), a reader thread that applies back-pressure through
//! a bounded channel ([`spawn_line_reader`]), and an overall [`Deadline`].
//!
//! Invariant: nothing here panics on what a child writes, and nothing it writes can make
//! the parent hold more than `max` bytes per line times the channel's capacity.

use std::io::{self, BufRead, Read};
use std::process::{Child, Command};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// One line as read by [`BoundedLines`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// The line's bytes, without its `\n` (and a `\r` before it).
    Complete(Vec<u8>),
    /// A line longer than the bound: only its length was counted.
    TooLong { bytes: usize },
}

/// A line reader that never holds more than `max` bytes of one line.
pub struct BoundedLines<R> {
    reader: R,
    max: usize,
}

impl<R: BufRead> BoundedLines<R> {
    pub fn new(reader: R, max: usize) -> Self {
        BoundedLines { reader, max }
    }

    /// The next line; `Ok(None)` at end of input.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut buf = Vec::new();
        let mut total = 0usize;
        let mut saw_any = false;
        loop {
            let chunk = match self.reader.fill_buf() {
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
            if total <= self.max.saturating_add(1) {
                buf.extend_from_slice(&chunk[..take]);
            } else if !buf.is_empty() {
                buf = Vec::new(); // over the bound: stop holding it
            }
            self.reader.consume(take);
            if done {
                break;
            }
        }
        let mut len = total;
        if buf.last() == Some(&b'\n') || total > self.max.saturating_add(1) {
            len = len.saturating_sub(1);
        }
        if total > self.max.saturating_add(1) {
            return Ok(Some(Line::TooLong { bytes: len }));
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        if buf.len() > self.max {
            return Ok(Some(Line::TooLong { bytes: buf.len() }));
        }
        Ok(Some(Line::Complete(buf)))
    }
}

/// Read lines of `source` on a thread and hand them over through a channel holding at most
/// `capacity` lines: a child that writes faster than its user reads blocks on its own pipe
/// (back-pressure) instead of filling the parent's memory. The channel ends after EOF or
/// an I/O error (sent last).
pub fn spawn_line_reader<R: Read + Send + 'static>(
    source: R,
    max: usize,
    capacity: usize,
) -> Receiver<io::Result<Option<Line>>> {
    let (tx, rx) = mpsc::sync_channel(capacity.max(1));
    std::thread::spawn(move || {
        let mut lines = BoundedLines::new(io::BufReader::new(source), max);
        loop {
            let next = lines.next_line();
            let end = matches!(next, Ok(None) | Err(_));
            if tx.send(next).is_err() || end {
                break;
            }
        }
    });
    rx
}

/// Start `command` as the leader of a new process group (Unix), so [`kill_group`] reaches
/// everything it forks.
pub fn spawn_in_group(command: &mut Command) -> io::Result<Child> {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    command.spawn()
}

/// Kill `child`'s whole process group (Unix; elsewhere the child alone) and reap it.
pub fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    {
        if let Ok(pid) = i32::try_from(child.id())
            && pid > 0
        {
            // SAFETY: kill(2) with a negative pid signals the process group `pid`, which
            // `spawn_in_group` created for this child alone; no memory is touched.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// An overall wall-clock deadline (for a whole suite run against real processes).
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Option<Instant>,
    total: Duration,
}

impl Deadline {
    /// A deadline `total` from now; `None` never passes.
    pub fn after(total: Option<Duration>) -> Self {
        #[allow(clippy::disallowed_methods)] // real time: a deadline on real processes
        let now = Instant::now();
        Deadline {
            at: total.map(|t| now + t),
            total: total.unwrap_or_default(),
        }
    }

    /// Time left (`None`: unbounded).
    pub fn left(&self) -> Option<Duration> {
        #[allow(clippy::disallowed_methods)] // real time: a deadline on real processes
        let now = Instant::now();
        self.at.map(|at| at.saturating_duration_since(now))
    }

    pub fn passed(&self) -> bool {
        self.left().is_some_and(|l| l.is_zero())
    }

    /// `timeout`, shortened to what is left of the deadline.
    pub fn clamp(&self, timeout: Duration) -> Duration {
        self.left().map_or(timeout, |l| l.min(timeout))
    }

    pub fn total(&self) -> Duration {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut r = BoundedLines::new(io::BufReader::with_capacity(3, input), max);
        let mut out = Vec::new();
        while let Ok(Some(l)) = r.next_line() {
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

    #[cfg(unix)]
    #[test]
    fn the_whole_group_is_killed() {
        // The child forks a grandchild that would outlive it; killing the group ends both.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped());
        let Ok(mut child) = spawn_in_group(&mut cmd) else {
            return; // no sh on this machine: nothing to prove
        };
        let mut out = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = io::BufReader::new(stdout).read_line(&mut out);
        }
        let grandchild: i32 = out.trim().parse().unwrap_or(0);
        kill_group(&mut child);
        assert!(grandchild > 0, "{out:?}");
        let mut alive = true;
        for _ in 0..100 {
            // SAFETY: signal 0 only checks whether the process exists.
            let exists = unsafe { libc::kill(grandchild, 0) } == 0;
            // A killed process whose new parent has not reaped it yet is a zombie: dead.
            let zombie = std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
                .map(|s| {
                    s.rsplit(')')
                        .next()
                        .unwrap_or_default()
                        .trim_start()
                        .starts_with('Z')
                })
                .unwrap_or(false);
            alive = exists && !zombie;
            if !alive {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive, "the grandchild outlived the group kill");
    }
}

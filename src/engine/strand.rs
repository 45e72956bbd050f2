//! In-flight work of the strand scheduler (FAN-2…6): a deterministic join set.
//!
//! Owns: polling several borrowed futures from one task. Invariant: children are polled
//! in the order they were launched, and the first ready one is returned, so ties (two
//! steps finishing at the same virtual instant) go to the earlier launch — never to
//! whatever a waker happened to fire first. Dropping an entry cancels it (foreach
//! fail-fast, race/any losers); no runtime, no `'static`, no `Send` needed.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

pub(crate) type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Futures in flight, each tagged with a caller key.
pub(crate) struct InFlight<'a, T> {
    /// Launch order. A finished entry leaves a hole (`None`) instead of shifting the rest:
    /// removing from the front of a 1,000-wide fan-out made every completion O(width).
    entries: Vec<Option<(usize, LocalFuture<'a, T>)>>,
    /// Index of the first entry that may be live.
    head: usize,
    live: usize,
}

impl<'a, T> InFlight<'a, T> {
    pub(crate) fn new() -> Self {
        InFlight {
            entries: Vec::new(),
            head: 0,
            live: 0,
        }
    }

    pub(crate) fn push(&mut self, key: usize, fut: LocalFuture<'a, T>) {
        self.entries.push(Some((key, fut)));
        self.live += 1;
    }

    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// The keys still in flight, in launch order.
    pub(crate) fn keys(&self) -> Vec<usize> {
        self.entries.iter().flatten().map(|(k, _)| *k).collect()
    }

    /// Drop (cancel) every entry still in flight; returns their keys in launch order.
    pub(crate) fn cancel_all(&mut self) -> Vec<usize> {
        let keys = self.keys();
        self.entries.clear();
        self.head = 0;
        self.live = 0;
        keys
    }

    /// Take out the finished entry at `i`; drop leading holes, and compact when most of
    /// the vector is holes, so both stay amortised O(1) per entry.
    fn take(&mut self, i: usize) -> Option<usize> {
        let (key, _) = self.entries.get_mut(i)?.take()?;
        self.live -= 1;
        while self.entries.get(self.head).is_some_and(Option::is_none) {
            self.head += 1;
        }
        if self.head > 32 && self.head * 2 > self.entries.len() {
            self.entries.drain(..self.head);
            self.head = 0;
        }
        Some(key)
    }

    /// The next entry to finish: `None` when nothing is in flight.
    pub(crate) async fn next(&mut self) -> Option<(usize, T)> {
        if self.live == 0 {
            return None;
        }
        std::future::poll_fn(|cx| {
            for i in self.head..self.entries.len() {
                let Some((_, fut)) = self.entries[i].as_mut() else {
                    continue;
                };
                if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                    return Poll::Ready(self.take(i).map(|key| (key, v)));
                }
            }
            Poll::Pending
        })
        .await
    }
}

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
    entries: Vec<(usize, LocalFuture<'a, T>)>,
}

impl<'a, T> InFlight<'a, T> {
    pub(crate) fn new() -> Self {
        InFlight {
            entries: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, key: usize, fut: LocalFuture<'a, T>) {
        self.entries.push((key, fut));
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The keys still in flight, in launch order.
    pub(crate) fn keys(&self) -> Vec<usize> {
        self.entries.iter().map(|(k, _)| *k).collect()
    }

    /// Drop (cancel) every entry still in flight; returns their keys in launch order.
    pub(crate) fn cancel_all(&mut self) -> Vec<usize> {
        let keys = self.keys();
        self.entries.clear();
        keys
    }

    /// The next entry to finish: `None` when nothing is in flight.
    pub(crate) async fn next(&mut self) -> Option<(usize, T)> {
        if self.entries.is_empty() {
            return None;
        }
        std::future::poll_fn(|cx| {
            for i in 0..self.entries.len() {
                if let Poll::Ready(v) = self.entries[i].1.as_mut().poll(cx) {
                    let (key, _) = self.entries.remove(i);
                    return Poll::Ready(Some((key, v)));
                }
            }
            Poll::Pending
        })
        .await
    }
}

//! The simulator's executor: a virtual-time executor on this thread.
//!
//! Invariant: deterministic by construction — one future (the engine's), polled in a
//! loop; every concurrent strand lives inside it and is polled in launch order. When the
//! future is pending and nothing woke it, the clock jumps to the earliest pending timer
//! (deadline order, then creation order) and the future is polled again; nothing ever
//! waits for real. `Pending` with no timer left means a simulated crash (the caller drops
//! the future, like a dead process), a halted simulation, or a bug (`sim_stalled`).

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use super::world::World;

pub(crate) enum Exec<T> {
    Done(T),
    Crashed,
    Halted(String),
    /// A candidate engine behind the context protocol refused the run or broke the
    /// protocol: its `{code, message, …}` (never produced by [`block_on`]).
    Refused(serde_json::Value),
}

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

pub(crate) fn block_on<F: Future>(fut: F, world: &RefCell<World>) -> Exec<F::Output> {
    // On the heap: an engine future is large, and the caller's stack may be small.
    let mut fut = Box::pin(fut);
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    loop {
        flag.0.store(false, Ordering::SeqCst);
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Exec::Done(v);
        }
        let mut w = world.borrow_mut();
        if let Some(h) = &w.halt {
            return Exec::Halted(h.clone());
        }
        if w.crash_pending {
            return Exec::Crashed;
        }
        // Something became ready during the poll (a lock released): poll again at the
        // same virtual instant before any time passes.
        if flag.0.load(Ordering::SeqCst) {
            continue;
        }
        if !w.fire_next_timer() {
            if let Some(h) = &w.halt {
                return Exec::Halted(h.clone());
            }
            return Exec::Halted(
                "sim_stalled: the engine awaited something the simulator never completes".into(),
            );
        }
    }
}

/// A virtual-time sleep until `deadline_ms`; dropping it cancels its timer.
pub(crate) struct Sleep<'a> {
    world: &'a RefCell<World>,
    deadline_ms: u64,
    timer: Option<u64>,
}

impl<'a> Sleep<'a> {
    pub(crate) fn until(world: &'a RefCell<World>, deadline_ms: u64) -> Self {
        Sleep {
            world,
            deadline_ms,
            timer: None,
        }
    }
}

impl Future for Sleep<'_> {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        let mut w = self.world.borrow_mut();
        if w.now_ms() >= self.deadline_ms {
            if let Some(id) = self.timer.take() {
                w.timers.remove(&(self.deadline_ms, id));
            }
            return Poll::Ready(());
        }
        if self.timer.is_none() {
            let id = w.add_timer(self.deadline_ms);
            drop(w);
            self.timer = Some(id);
        }
        Poll::Pending
    }
}

impl Drop for Sleep<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.timer.take()
            && let Ok(mut w) = self.world.try_borrow_mut()
        {
            w.timers.remove(&(self.deadline_ms, id));
        }
    }
}

//! The simulator's executor: poll the engine future to completion on this thread.
//!
//! Invariant: deterministic by construction — one future, polled in a loop, no timers,
//! no wakers. In the sequential simulator nothing ever waits for real (virtual time
//! advances instantly), so `Pending` means exactly one of: a simulated crash (the caller
//! drops the future, like a dead process), a halted simulation, or a bug. Issue 5's
//! strands will grow this into a virtual-time executor (timers in deadline order, then by
//! id; the clock jumps to the next deadline when every task is pending).

use std::cell::RefCell;
use std::future::Future;
use std::task::{Context, Poll, Waker};

use super::world::World;

pub(crate) enum Exec<T> {
    Done(T),
    Crashed,
    Halted(String),
}

pub(crate) fn block_on<F: Future>(fut: F, world: &RefCell<World>) -> Exec<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(v) => Exec::Done(v),
        Poll::Pending => {
            let w = world.borrow();
            if let Some(h) = &w.halt {
                Exec::Halted(h.clone())
            } else if w.crash_pending {
                Exec::Crashed
            } else {
                Exec::Halted(
                    "sim_stalled: the engine awaited something the simulator never completes"
                        .into(),
                )
            }
        }
    }
}

//! PLAN-3's report: one actual cycle per cyclic strongly connected component of the
//! steps Kahn's algorithm could not consume, each found by a breadth-first search from
//! the component's earliest-declared step, and its message. Nothing here recurses.

use std::collections::VecDeque;

use super::MAX_CYCLE_IDS_IN_MESSAGE;
use super::graph::Successors;
use crate::model::{ValidationCode, ValidationError};

/// One actual cycle per cyclic strongly connected component among the unconsumed nodes,
/// ordered by each component's earliest-declared step. Each cycle starts at that step and
/// lists the steps in edge order (the closing edge back to the first step is implied).
pub(super) fn cycles(graph: &Successors, consumed: &[bool]) -> Vec<Vec<usize>> {
    let (components, component) = components(graph, consumed);
    let mut found: Vec<Vec<usize>> = Vec::new();
    let mut parent = vec![UNSEEN; graph.len()];
    for (id, members) in components.iter().enumerate() {
        let Some(&first) = members.iter().min() else {
            continue;
        };
        let self_loop = graph.targets(first).any(|w| w as usize == first);
        if members.len() == 1 && !self_loop {
            continue; // behind a cycle, not on one
        }
        if let Some(cycle) =
            shortest_cycle_through(graph, first, |w| component[w] == id, &mut parent)
        {
            found.push(cycle);
        }
        for &m in members {
            parent[m] = UNSEEN;
        }
    }
    found.sort_by_key(|c| c.first().copied());
    found
}

/// A step no search has reached yet, or no component holds.
const UNSEEN: usize = usize::MAX;

/// The strongly connected components among the unconsumed steps (iterative Tarjan:
/// `frames` is the depth-first search's call stack of `(step, next out-edge position)`),
/// and each step's component (`UNSEEN` for a consumed one).
fn components(graph: &Successors, consumed: &[bool]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let n = graph.len();
    let mut order_of = vec![UNSEEN; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut component = vec![UNSEEN; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut frames: Vec<(usize, usize)> = Vec::new();
    let mut counter = 0usize;
    let mut components: Vec<Vec<usize>> = Vec::new();
    for root in 0..n {
        if consumed[root] || order_of[root] != UNSEEN {
            continue;
        }
        order_of[root] = counter;
        low[root] = counter;
        counter += 1;
        stack.push(root);
        on_stack[root] = true;
        frames.push((root, graph.range(root).start));
        while let Some(&(v, pos)) = frames.last() {
            if pos < graph.range(v).end {
                if let Some(frame) = frames.last_mut() {
                    frame.1 += 1;
                }
                let w = graph.target_at(pos) as usize;
                if consumed[w] {
                    continue;
                }
                if order_of[w] == UNSEEN {
                    order_of[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    frames.push((w, graph.range(w).start));
                } else if on_stack[w] {
                    low[v] = low[v].min(order_of[w]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == order_of[v] {
                let id = components.len();
                let mut members = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component[w] = id;
                    members.push(w);
                    if w == v {
                        break;
                    }
                }
                components.push(members);
            }
        }
    }
    (components, component)
}

/// Breadth-first search from `start` inside the component (`inside`), returning the
/// shortest cycle through `start`. `parent` is scratch space, all `usize::MAX` on entry.
fn shortest_cycle_through(
    graph: &Successors,
    start: usize,
    inside: impl Fn(usize) -> bool,
    parent: &mut [usize],
) -> Option<Vec<usize>> {
    let mut queue = VecDeque::from([start]);
    parent[start] = start;
    while let Some(v) = queue.pop_front() {
        for w in graph.targets(v) {
            let w = w as usize;
            if w == start {
                let mut cycle = vec![v];
                let mut at = v;
                while at != start {
                    at = parent[at];
                    cycle.push(at);
                }
                cycle.reverse();
                return Some(cycle);
            }
            if inside(w) && parent[w] == usize::MAX {
                parent[w] = v;
                queue.push_back(w);
            }
        }
    }
    None
}

pub(super) fn cycle_error<'a>(
    id_of: impl Fn(usize) -> Option<&'a str>,
    cycle: &[usize],
) -> ValidationError {
    let name = |i: usize| match id_of(i) {
        Some(id) => format!("{id:?}"),
        None => format!("/steps/{i}"),
    };
    let mut names: Vec<String> = cycle
        .iter()
        .take(MAX_CYCLE_IDS_IN_MESSAGE)
        .map(|&i| name(i))
        .collect();
    if cycle.len() > MAX_CYCLE_IDS_IN_MESSAGE {
        names.push(format!(
            "… ({} more steps)",
            cycle.len() - MAX_CYCLE_IDS_IN_MESSAGE
        ));
    }
    if let Some(&first) = cycle.first() {
        names.push(name(first));
    }
    ValidationError::new(
        ValidationCode::Cycle,
        "/edges",
        format!(
            "the edges form a cycle: {}; a workflow must be acyclic, so remove or reverse one of these edges",
            names.join(" → ")
        ),
    )
}

//! Planning (PLAN-1…7): step ids → indices, adjacency, in-degrees, the deterministic order.
//!
//! Owns: the graph view of a validated workflow. Invariant: planning is a pure function of
//! the document — no expressions, no host, no clock. The order is Kahn's algorithm with a
//! min-heap on declared index, so ties always go to the earlier-declared step (PLAN-5).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::model::{ValidationCode, ValidationError, When, Workflow};

/// One edge of the main graph, by step index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanEdge {
    /// Position of the edge in `Workflow.edges` (declared order).
    pub index: usize,
    pub from: usize,
    pub to: usize,
    pub when: When,
}

/// The planned graph. Indices are positions in `Workflow.steps`.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Step indices in execution order.
    pub order: Vec<usize>,
    /// Position of each step index in `order`.
    pub rank: Vec<usize>,
    /// Outgoing edges per step, in declared edge order.
    pub outgoing: Vec<Vec<PlanEdge>>,
    /// Incoming edges per step, in declared edge order.
    pub incoming: Vec<Vec<PlanEdge>>,
    /// Whether the workflow declared no edges (PLAN-4 implicit chain).
    pub implicit_chain: bool,
}

impl Plan {
    /// The plan as step ids.
    pub fn ids<'w>(&self, workflow: &'w Workflow) -> Vec<&'w str> {
        self.order
            .iter()
            .map(|&i| workflow.steps[i].id.as_str())
            .collect()
    }
}

/// Plan a workflow, returning every planning problem found.
pub fn plan(workflow: &Workflow) -> Result<Plan, Vec<ValidationError>> {
    let n = workflow.steps.len();
    let mut errors = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(n);
    for (i, step) in workflow.steps.iter().enumerate() {
        if index.insert(step.id.as_str(), i).is_some() {
            errors.push(ValidationError::new(
                ValidationCode::DuplicateStepId,
                format!("/steps/{i}/id"),
                format!("step id {:?} is declared more than once", step.id),
            ));
        }
    }
    let edges = workflow.edges();
    let mut outgoing = vec![Vec::new(); n];
    let mut incoming = vec![Vec::new(); n];
    for (e, edge) in edges.iter().enumerate() {
        let from = index.get(edge.from.as_str()).copied();
        let to = index.get(edge.to.as_str()).copied();
        if from.is_none() {
            errors.push(ValidationError::new(
                ValidationCode::DanglingEdge,
                format!("/edges/{e}/from"),
                format!("edge {e} starts at {:?}, which names no step", edge.from),
            ));
        }
        if to.is_none() {
            errors.push(ValidationError::new(
                ValidationCode::DanglingEdge,
                format!("/edges/{e}/to"),
                format!("edge {e} ends at {:?}, which names no step", edge.to),
            ));
        }
        if let (Some(from), Some(to)) = (from, to) {
            let pe = PlanEdge {
                index: e,
                from,
                to,
                when: edge.when(),
            };
            outgoing[from].push(pe);
            incoming[to].push(pe);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let implicit_chain = edges.is_empty();
    let order: Vec<usize> = if implicit_chain {
        (0..n).collect()
    } else {
        let mut indegree: Vec<usize> = incoming.iter().map(Vec::len).collect();
        let mut ready: BinaryHeap<Reverse<usize>> =
            (0..n).filter(|&i| indegree[i] == 0).map(Reverse).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(Reverse(i)) = ready.pop() {
            order.push(i);
            for edge in &outgoing[i] {
                indegree[edge.to] -= 1;
                if indegree[edge.to] == 0 {
                    ready.push(Reverse(edge.to));
                }
            }
        }
        if order.len() < n {
            let left: Vec<&str> = (0..n)
                .filter(|&i| indegree[i] > 0)
                .map(|i| workflow.steps[i].id.as_str())
                .collect();
            return Err(vec![ValidationError::new(
                ValidationCode::Cycle,
                "/edges",
                format!("the edges form a cycle through steps {}", left.join(", ")),
            )]);
        }
        order
    };
    let mut rank = vec![0; n];
    for (pos, &i) in order.iter().enumerate() {
        rank[i] = pos;
    }
    Ok(Plan {
        order,
        rank,
        outgoing,
        incoming,
        implicit_chain,
    })
}

//! Plan-time sub-block structure (PLAN-7, CTRL-4, CTRL-9): claiming members, nesting levels
//! and ownership cycles, internal edges, and one `SubPlan` per body or branch.

use super::*;

impl Analyser<'_, '_> {
    /// Resolve and claim a sub-block's ids; returns the new block's index.
    pub(super) fn claim(
        &mut self,
        control: usize,
        kind: SubBlockKind,
        list: Vec<(usize, &str)>,
    ) -> usize {
        let graph = self.graph;
        let block = self.drafts.len();
        self.drafts.push(Draft {
            control,
            kind,
            members: Vec::with_capacity(list.len()),
        });
        for (k, name) in list {
            let path = self.block_path(block, k);
            let steps = self.steps;
            let Some(s) = graph.index.get(name, |i| steps.get(i).and_then(|v| v.id)) else {
                let where_ = self.block_name(block);
                self.invalid(
                    path,
                    format!("{where_} lists {name:?}, but no step has that id"),
                );
                continue;
            };
            if s == control {
                let where_ = self.block_name(block);
                self.invalid(
                    path,
                    format!("{where_} lists the control step itself; a control cannot own itself"),
                );
                continue;
            }
            if let Some(prev) = self.slot[s] {
                let (this, earlier) = (self.block_name(block), self.block_name(prev.block));
                let at = self.drafts[prev.block]
                    .members
                    .get(prev.position)
                    .map_or(0, |m| m.1);
                let earlier_path = self.block_path(prev.block, at);
                let message = if prev.block == block {
                    format!(
                        "{this} lists step {name:?} twice (first at {earlier_path}); a step belongs to one sub-block, once"
                    )
                } else {
                    format!(
                        "{this} lists step {name:?}, which {earlier} already owns ({earlier_path}); a step belongs to one sub-block"
                    )
                };
                self.invalid(path, message);
                continue;
            }
            let position = self.drafts[block].members.len();
            self.drafts[block].members.push((s, k));
            self.owner[s] = Some(control);
            self.slot[s] = Some(BlockSlot { block, position });
        }
        block
    }
    /// Nesting level per step (0 on the main graph), `CYCLIC` on or under an ownership
    /// cycle. Reports each cycle once and each control whose sub-block is one level too
    /// deep. Iterative: every step is walked up its owner chain once.
    pub(super) fn levels(&mut self) -> Vec<usize> {
        let n = self.owner.len();
        let mut level = vec![UNSEEN; n];
        let mut chain: Vec<usize> = Vec::new();
        for s in 0..n {
            if level[s] != UNSEEN {
                continue;
            }
            chain.clear();
            let mut v = s;
            // The level of the step just above the chain's top, or CYCLIC.
            let above = loop {
                match level[v] {
                    UNSEEN => {
                        level[v] = IN_PROGRESS;
                        chain.push(v);
                        match self.owner[v] {
                            Some(o) => v = o,
                            None => break None,
                        }
                    }
                    IN_PROGRESS => {
                        let start = chain.iter().position(|&c| c == v).unwrap_or(0);
                        let cycle = chain[start..].to_vec();
                        self.ownership_cycle(&cycle);
                        break Some(CYCLIC);
                    }
                    known => break Some(known),
                }
            };
            let mut next = match above {
                None => 0,
                Some(CYCLIC) => CYCLIC,
                Some(l) => l + 1,
            };
            // `chain` runs from s up to the top; assign from the top down.
            for &c in chain.iter().rev() {
                level[c] = next;
                if next != CYCLIC {
                    next += 1;
                }
            }
        }
        for c in 0..self.controls.len() {
            let step = self.controls[c].step;
            if level[step] == MAX_CONTROL_NESTING {
                let blocks = block_indices(&self.controls[c].params);
                if let Some(&b) = blocks.first() {
                    let path = match self.drafts[b].kind {
                        SubBlockKind::Body => format!("/steps/{step}/with/body"),
                        SubBlockKind::Branch(_) => format!("/steps/{step}/with/branches"),
                    };
                    let name = self.name(step);
                    self.invalid(
                        path,
                        format!("control step {name} already sits {MAX_CONTROL_NESTING} sub-blocks deep; its own sub-block would exceed the nesting limit of {MAX_CONTROL_NESTING}"),
                    );
                }
            }
        }
        level
    }

    pub(super) fn ownership_cycle(&mut self, cycle: &[usize]) {
        let Some(&first) = cycle.iter().min() else {
            return;
        };
        let Some(slot) = self.slot[first] else {
            return;
        };
        let at = self.drafts[slot.block].members[slot.position].1;
        let path = self.block_path(slot.block, at);
        // Name the cycle from `first` upward: first is owned by its owner, and so on.
        let start = cycle.iter().position(|&c| c == first).unwrap_or(0);
        let mut names: Vec<String> = cycle[start..]
            .iter()
            .chain(&cycle[..start])
            .map(|&c| self.name(c))
            .collect();
        names.push(self.name(first));
        self.invalid(
            path,
            format!(
                "sub-block ownership forms a cycle: {} (each is listed in the sub-block of the next); a control cannot contain itself",
                names.join(" inside ")
            ),
        );
    }

    /// PLAN-7 / CTRL-9: classify every edge. Returns the internal success edges per block.
    pub(super) fn edges(&mut self) -> Vec<Vec<usize>> {
        let graph = self.graph;
        let mut internal = vec![Vec::new(); self.drafts.len()];
        for e in 0..graph.endpoints.len() {
            let Some((from, to)) = graph.endpoint(e) else {
                continue;
            };
            let (bf, bt) = (
                self.slot[from].map(|s| s.block),
                self.slot[to].map(|s| s.block),
            );
            let place = |a: &Self, s: usize, b: Option<usize>| match b {
                None => format!("{} (main graph)", a.name(s)),
                Some(b) => format!("{} (in {})", a.name(s), a.block_name(b)),
            };
            if bf != bt {
                let message = format!(
                    "edge {e} runs from {} to {}; an edge must stay inside one sub-block or on the main graph, so connect sub-block steps only to steps of the same sub-block",
                    place(self, from, bf),
                    place(self, to, bt)
                );
                self.push(Code::SubBlockEdge, format!("/edges/{e}"), message);
                continue;
            }
            let Some(b) = bf else { continue };
            if graph.whens.get(e) == Some(&When::Error) {
                let message = format!(
                    "edge {e} is a when: \"error\" edge inside {}; error edges exist only on the main graph, a failure inside a sub-block is handled by its control",
                    self.block_name(b)
                );
                self.push(Code::SubBlockEdge, format!("/edges/{e}"), message);
                continue;
            }
            internal[b].push(e);
        }
        internal
    }

    /// Each sub-block's plan; reports roots that are not the first listed step and steps
    /// the root cannot reach (a sub-block is rooted at its first id, CTRL-4/6).
    pub(super) fn structure(&mut self, internal: &[Vec<usize>], levels: &[usize]) -> Vec<SubPlan> {
        let mut plans = Vec::with_capacity(self.drafts.len());
        for (b, edges) in internal.iter().enumerate() {
            let members: Vec<usize> = self.drafts[b].members.iter().map(|m| m.0).collect();
            let Some(&root) = members.first() else {
                continue;
            };
            let m = members.len();
            let (outgoing, incoming) = self.block_edges(edges, m);
            let implicit_chain = edges.is_empty();
            let order: Vec<usize> = if implicit_chain {
                members.clone()
            } else {
                self.block_order(b, root, &members, &outgoing, &incoming)
            };
            if order.len() < m {
                continue; // a cycle inside the block, reported by the graph analysis
            }
            let mut rank = vec![0; m];
            for (pos, &s) in order.iter().enumerate() {
                if let Some(slot) = self.slot[s] {
                    rank[slot.position] = pos;
                }
            }
            let last = order.last().copied().unwrap_or(root);
            let sinks = order
                .iter()
                .copied()
                .filter(|&s| {
                    if implicit_chain {
                        s == last
                    } else {
                        self.slot[s].is_some_and(|x| outgoing[x.position].is_empty())
                    }
                })
                .collect();
            let draft = &self.drafts[b];
            plans.push(SubPlan {
                control: draft.control,
                kind: draft.kind,
                level: levels.get(root).copied().unwrap_or(0),
                steps: members,
                order,
                rank,
                outgoing,
                incoming,
                implicit_chain,
                root,
                last,
                sinks,
            });
        }
        plans
    }

    /// Sub-block edges `edges` (declared indices) as lists per member position, over
    /// the block's `m` members.
    fn block_edges(&self, edges: &[usize], m: usize) -> (Vec<Vec<PlanEdge>>, Vec<Vec<PlanEdge>>) {
        let graph = self.graph;
        let mut outgoing: Vec<Vec<PlanEdge>> = vec![Vec::new(); m];
        let mut incoming: Vec<Vec<PlanEdge>> = vec![Vec::new(); m];
        for &e in edges {
            let Some((from, to)) = graph.endpoint(e) else {
                continue;
            };
            let (Some(f), Some(t)) = (self.slot[from], self.slot[to]) else {
                continue;
            };
            // `analyse` checked that every step and edge index fits a `u32`.
            let pe = PlanEdge {
                index: e as u32,
                from: from as u32,
                to: to as u32,
                when: When::Success,
            };
            outgoing[f.position].push(pe);
            incoming[t.position].push(pe);
        }
        (outgoing, incoming)
    }

    /// Block `b`'s order over its edges, after CTRL-4's checks: no edge enters its root
    /// (the first listed member), and every member is reached from it.
    fn block_order(
        &mut self,
        b: usize,
        root: usize,
        members: &[usize],
        outgoing: &[Vec<PlanEdge>],
        incoming: &[Vec<PlanEdge>],
    ) -> Vec<usize> {
        if let Some(first_in) = incoming.first().and_then(|edges| edges.first()) {
            let (path, where_) = (
                self.block_path(b, self.drafts[b].members[0].1),
                self.block_name(b),
            );
            let message = format!(
                "{where_} is rooted at its first listed step {}, but edge {} enters it; list the sub-block's entry step first",
                self.name(root),
                first_in.index
            );
            self.invalid(path, message);
        }
        let reached = reachable(outgoing, |s| self.slot[s].map_or(0, |x| x.position));
        for (k, seen) in reached.iter().enumerate() {
            if !seen {
                let (path, where_) = (
                    self.block_path(b, self.drafts[b].members[k].1),
                    self.block_name(b),
                );
                let message = format!(
                    "{} in {where_} cannot be reached from the sub-block's root {} (its first listed step) along the sub-block's edges",
                    self.name(members[k]),
                    self.name(root)
                );
                self.invalid(path, message);
            }
        }
        local_kahn(outgoing, incoming, |s| {
            self.slot[s].map_or(0, |x| x.position)
        })
        .into_iter()
        .map(|k| members[k])
        .collect()
    }
}

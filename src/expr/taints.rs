//! The SEC-1 taint marks of a run scope (D-274, D-373): the dotted paths of the data root
//! whose values are secret-derived, kept as a tree of path segments.
//!
//! Owns: [`Taints`] — a mark, a read's check ([`Taints::touches`]) and a query for the
//! marks at, around or inside a path ([`Taints::at`]) each walk the path's segments once,
//! so they cost the path's length, not the number of marks. (They were a list scanned on
//! every mark and every read: an action output with thousands of tainted leaves made a run
//! quadratic — 3.8 s for 8,000 leaves.) Each mark keeps the number of the mark that made
//! it, so the marks inside a path come back in the order they were made, as the list gave
//! them.
//!
//! Invariant: a node without a mark has a marked node below it (marks are only removed
//! with [`Taints::unmark`], which prunes what it empties), so "a node below" means "a mark
//! below".

use std::collections::BTreeMap;

use super::scope::TaintAt;

/// The taint marks of one scope (see the module doc).
#[derive(Debug, Clone, Default)]
pub(crate) struct Taints {
    root: Node,
    /// The number the next new mark gets.
    next: u64,
}

#[derive(Debug, Clone, Default)]
struct Node {
    /// Set when this path itself is marked: the mark's number.
    mark: Option<u64>,
    children: BTreeMap<String, Node>,
}

impl Node {
    /// Every mark strictly below this node, as (number, path relative to it).
    fn marks_below(&self, prefix: &mut Vec<String>, out: &mut Vec<(u64, Vec<String>)>) {
        for (segment, child) in &self.children {
            prefix.push(segment.clone());
            if let Some(n) = child.mark {
                out.push((n, prefix.clone()));
            }
            child.marks_below(prefix, out);
            prefix.pop();
        }
    }

    fn is_empty(&self) -> bool {
        self.mark.is_none() && self.children.is_empty()
    }
}

impl Taints {
    /// Whether nothing is marked.
    pub(crate) fn is_empty(&self) -> bool {
        self.root.is_empty()
    }

    /// Mark `path` (a mark already there keeps its number).
    pub(crate) fn mark<S: AsRef<str>>(&mut self, path: &[S]) {
        let mut node = &mut self.root;
        for segment in path {
            node = node
                .children
                .entry(segment.as_ref().to_owned())
                .or_default();
        }
        if node.mark.is_none() {
            node.mark = Some(self.next);
            self.next += 1;
        }
    }

    /// Remove the mark at exactly `path`, if any (marks inside it stay).
    pub(crate) fn unmark<S: AsRef<str>>(&mut self, path: &[S]) {
        fn remove<S: AsRef<str>>(node: &mut Node, path: &[S]) {
            let Some((first, rest)) = path.split_first() else {
                node.mark = None;
                return;
            };
            let Some(child) = node.children.get_mut(first.as_ref()) else {
                return;
            };
            remove(child, rest);
            if child.is_empty() {
                node.children.remove(first.as_ref());
            }
        }
        remove(&mut self.root, path);
    }

    /// Whether a mark sits at `path`, on a prefix of it, or inside it.
    pub(crate) fn touches<S: AsRef<str>>(&self, path: &[S]) -> bool {
        match self.walk(path) {
            Walked::Marked => true,
            Walked::Off => false,
            Walked::At(node) => !node.children.is_empty(),
        }
    }

    /// Which parts of the value at `path` are marked: all of it (a mark at it or on a
    /// prefix), the places inside it in the order they were marked, or none.
    pub(crate) fn at<S: AsRef<str>>(&self, path: &[S]) -> TaintAt {
        let node = match self.walk(path) {
            Walked::Marked => return TaintAt::Whole,
            Walked::Off => return TaintAt::Clean,
            Walked::At(node) => node,
        };
        let mut below = Vec::new();
        node.marks_below(&mut Vec::new(), &mut below);
        if below.is_empty() {
            return TaintAt::Clean;
        }
        below.sort_by_key(|(n, _)| *n);
        TaintAt::Below(below.into_iter().map(|(_, place)| place).collect())
    }

    /// The marks in the order they were made: what two scopes compare by.
    fn in_order(&self) -> Vec<Vec<String>> {
        let mut all = Vec::new();
        if let Some(n) = self.root.mark {
            all.push((n, Vec::new()));
        }
        self.root.marks_below(&mut Vec::new(), &mut all);
        all.sort_by_key(|(n, _)| *n);
        all.into_iter().map(|(_, path)| path).collect()
    }

    /// Follow `path` from the root: stop at the first marked node on it (the root
    /// included), or where it leaves the tree.
    fn walk<S: AsRef<str>>(&self, path: &[S]) -> Walked<'_> {
        let mut node = &self.root;
        if node.mark.is_some() {
            return Walked::Marked;
        }
        for segment in path {
            let Some(child) = node.children.get(segment.as_ref()) else {
                return Walked::Off;
            };
            if child.mark.is_some() {
                return Walked::Marked;
            }
            node = child;
        }
        Walked::At(node)
    }
}

/// Where [`Taints::walk`] ended.
enum Walked<'t> {
    /// A mark at the path or on a prefix of it.
    Marked,
    /// The path leaves the tree: nothing at, around or inside it is marked.
    Off,
    /// The path's own node, unmarked, as are all above it.
    At(&'t Node),
}

impl PartialEq for Taints {
    /// The same marks, made in the same order.
    fn eq(&self, other: &Taints) -> bool {
        self.in_order() == other.in_order()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition the tree is held to: the list of marks it replaced (D-373).
    #[derive(Default)]
    struct Plain(Vec<Vec<String>>);

    impl Plain {
        fn mark(&mut self, path: &[String]) {
            if !self.0.iter().any(|t| t == path) {
                self.0.push(path.to_vec());
            }
        }
        fn unmark(&mut self, path: &[String]) {
            self.0.retain(|t| t != path);
        }
        fn shared(t: &[String], path: &[String]) -> bool {
            t.iter().zip(path).all(|(a, b)| a == b)
        }
        fn touches(&self, path: &[String]) -> bool {
            self.0.iter().any(|t| Plain::shared(t, path))
        }
        fn at(&self, path: &[String]) -> TaintAt {
            let mut below = Vec::new();
            for t in &self.0 {
                if !Plain::shared(t, path) {
                    continue;
                }
                if t.len() <= path.len() {
                    return TaintAt::Whole;
                }
                below.push(t[path.len()..].to_vec());
            }
            if below.is_empty() {
                TaintAt::Clean
            } else {
                TaintAt::Below(below)
            }
        }
    }

    /// Short paths over a three-letter alphabet, so marks share prefixes, nest and repeat.
    fn path() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 0..4)
            .prop_map(|p| p.into_iter().map(str::to_owned).collect())
    }

    proptest! {
        /// Marks and removals in any order, then every query of every short path: the
        /// tree answers as the list did, `Below` in the order the marks were made.
        #[test]
        fn the_tree_answers_as_the_list_of_marks(
            ops in prop::collection::vec((any::<bool>(), path()), 0..24),
            probes in prop::collection::vec(path(), 1..12),
        ) {
            let (mut tree, mut plain) = (Taints::default(), Plain::default());
            for (mark, p) in &ops {
                if *mark {
                    tree.mark(p);
                    plain.mark(p);
                } else {
                    tree.unmark(p);
                    plain.unmark(p);
                }
                prop_assert_eq!(tree.is_empty(), plain.0.is_empty());
                prop_assert_eq!(tree.in_order(), plain.0.clone());
            }
            for p in &probes {
                prop_assert_eq!(tree.touches(p), plain.touches(p), "{:?}", p);
                prop_assert_eq!(tree.at(p), plain.at(p), "{:?}", p);
            }
        }
    }

    #[test]
    fn marks_inside_a_path_come_back_in_the_order_they_were_made() {
        let mut t = Taints::default();
        for p in [
            &["s", "x", "2"][..],
            &["s", "y"],
            &["s", "x", "1"],
            &["s", "x", "2"],
        ] {
            t.mark(p);
        }
        let want = [vec!["x", "2"], vec!["y"], vec!["x", "1"]];
        let want = want
            .iter()
            .map(|p| p.iter().map(|s| (*s).to_owned()).collect())
            .collect();
        assert_eq!(t.at(&["s"]), TaintAt::Below(want));
        assert_eq!(t.at(&["s", "x", "2", "deep"]), TaintAt::Whole);
        assert_eq!(t.at(&["z"]), TaintAt::Clean);
        t.unmark(&["s", "y"]);
        t.unmark(&["s", "x", "1"]);
        t.unmark(&["s", "x", "2"]);
        assert!(t.is_empty());
    }
}

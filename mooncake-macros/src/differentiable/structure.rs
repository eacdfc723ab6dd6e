//! Structured control flow from the IR's control-flow graph.
//!
//! Rust has no `goto`, and a `loop { match state { .. } }` state machine would hide from rustc
//! that each local is assigned before it is read. So codegen rebuilds structured Rust:
//! labelled blocks (`'b: { .. break 'b; }`) and labelled loops (`'l: loop { .. continue 'l; }`),
//! following N. Ramsey, "Beyond Relooper: recursive translation of unstructured control flow to
//! structured control flow" (ICFP 2022), which applies to every reducible graph, and the IR's
//! graphs are reducible (invariant 7). Every edge of the graph becomes exactly one `break`,
//! `continue`, or a nested copy-free inline of a block dominated by its only predecessor, so
//! the generated code has the same control flow as the IR.
//!
//! One departure from the paper: a block that a loop's exits lead to, and that the loop's
//! header dominates, is placed after the loop (`'bN: { 'lH: loop { .. break 'bN; .. } } N`)
//! rather than inline in the exit's arm inside the loop, where the paper puts it. Code after a
//! loop then follows it instead of nesting in it, so that sequential loops are siblings: the
//! reverse sweep can peel and guard each (it handles only loops without loops inside), and the
//! nesting depth, which the passes over the tree pay for, stays that of the source.

use super::ir::*;

/// A structured program over the IR's blocks.
#[derive(Debug)]
pub(crate) enum Node {
    /// Run these in order.
    Seq(Vec<Node>),
    /// `'bN: { body }`; `break 'bN` continues after it, at block N.
    Block(BlockId, Box<Node>),
    /// `'lN: loop { body }`; `continue 'lN` goes back to block N.
    Loop(BlockId, Box<Node>),
    /// The statements of block N.
    Statements(BlockId),
    /// `if cond { then } else { otherwise }`.
    If(Local, Box<Node>, Box<Node>),
    /// `break 'bN`.
    Break(BlockId),
    /// `continue 'lN`.
    Continue(BlockId),
    /// The terminator of block N when it leaves the function (`return`, `panic!`).
    Exit(BlockId),
}

struct Cfg<'a> {
    body: &'a Body,
    preds: Vec<Vec<BlockId>>,
    /// Reverse-postorder number of each block.
    rpo: Vec<usize>,
    idom: Vec<usize>,
    /// Dominator-tree children of each block, in reverse postorder.
    children: Vec<Vec<BlockId>>,
    /// Per block, the loop header it follows (it is placed after that loop): see
    /// [`followers`].
    follows: Vec<Option<BlockId>>,
    /// Per loop header, the blocks that follow its loop.
    followers: Vec<Vec<BlockId>>,
}

impl Cfg<'_> {
    fn is_backward(&self, from: BlockId, to: BlockId) -> bool {
        self.rpo[to.index()] <= self.rpo[from.index()]
    }

    fn is_loop_header(&self, b: BlockId) -> bool {
        self.preds[b.index()].iter().any(|p| self.is_backward(*p, b))
    }

    fn is_merge(&self, b: BlockId) -> bool {
        self.preds[b.index()].iter().filter(|p| !self.is_backward(**p, b)).count() >= 2
    }
}

/// Builds the structured form of `body`. Returns `None` if the graph is not reducible (which
/// lowering never produces).
pub(crate) fn structure(body: &Body) -> Option<Node> {
    let n = body.blocks.len();
    let preds = body.predecessors();
    // Postorder by iterative DFS.
    let mut post = Vec::with_capacity(n);
    let mut visited = vec![false; n];
    let mut stack: Vec<(BlockId, usize)> = vec![(BlockId::ENTRY, 0)];
    visited[0] = true;
    while let Some((b, i)) = stack.pop() {
        let succs = body.blocks[b.index()].terminator.kind.successors();
        if i < succs.len() {
            stack.push((b, i + 1));
            let s = succs[i];
            if !visited[s.index()] {
                visited[s.index()] = true;
                stack.push((s, 0));
            }
        } else {
            post.push(b);
        }
    }
    let order: Vec<BlockId> = post.iter().rev().copied().collect();
    let mut rpo = vec![usize::MAX; n];
    for (i, b) in order.iter().enumerate() {
        rpo[b.index()] = i;
    }
    // Dominators (Cooper, Harvey, Kennedy), indices in rpo numbering.
    let mut idom = vec![usize::MAX; n];
    idom[0] = 0;
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().skip(1) {
            let bi = rpo[b.index()];
            let mut new: Option<usize> = None;
            for p in &preds[b.index()] {
                let pi = rpo[p.index()];
                if pi == usize::MAX || idom[pi] == usize::MAX {
                    continue;
                }
                new = Some(match new {
                    None => pi,
                    Some(mut a) => {
                        let mut c = pi;
                        while a != c {
                            while a > c {
                                a = idom[a];
                            }
                            while c > a {
                                c = idom[c];
                            }
                        }
                        a
                    }
                });
            }
            if let Some(d) = new
                && idom[bi] != d
            {
                idom[bi] = d;
                changed = true;
            }
        }
    }
    let mut children = vec![Vec::new(); n];
    for &b in order.iter().skip(1) {
        let parent = order[idom[rpo[b.index()]]];
        children[parent.index()].push(b);
    }
    let mut cfg = Cfg {
        body,
        preds,
        rpo,
        idom,
        children,
        follows: vec![None; n],
        followers: vec![Vec::new(); n],
    };
    // Reducibility: every backward edge must go to a block that dominates its source.
    for (i, b) in body.blocks.iter().enumerate() {
        for s in b.terminator.kind.successors() {
            let from = BlockId(i as u32);
            if cfg.is_backward(from, s) && !dominates(&cfg, s, from) {
                return None;
            }
        }
    }
    followers(&mut cfg);
    Some(do_tree(&cfg, BlockId::ENTRY))
}

fn dominates(cfg: &Cfg<'_>, a: BlockId, b: BlockId) -> bool {
    let target = cfg.rpo[a.index()];
    let mut x = cfg.rpo[b.index()];
    loop {
        if x == target {
            return true;
        }
        if x == 0 {
            return false;
        }
        x = cfg.idom[x];
    }
}

/// The blocks placed after a loop: a block outside the (natural) loop of a header whose
/// immediate dominator is inside it (the first blocks reached on leaving the loop) follows the
/// outermost such loop. Every edge into it becomes a `break` to the block around the loop.
fn followers(cfg: &mut Cfg<'_>) {
    let n = cfg.body.blocks.len();
    let headers: Vec<BlockId> =
        (0..n).map(|b| BlockId(b as u32)).filter(|b| cfg.is_loop_header(*b)).collect();
    if headers.is_empty() {
        return;
    }
    // Each header's natural loop: the blocks that reach a back edge into it without passing
    // through it.
    let loops: Vec<Vec<bool>> = headers
        .iter()
        .map(|&h| {
            let mut inside = vec![false; n];
            inside[h.index()] = true;
            let mut stack: Vec<BlockId> =
                cfg.preds[h.index()].iter().copied().filter(|p| cfg.is_backward(*p, h)).collect();
            while let Some(b) = stack.pop() {
                if std::mem::replace(&mut inside[b.index()], true) {
                    continue;
                }
                stack.extend(cfg.preds[b.index()].iter().copied());
            }
            inside
        })
        .collect();
    let order: Vec<usize> = {
        let mut o: Vec<usize> = (0..n).filter(|b| cfg.rpo[*b] != usize::MAX).collect();
        o.sort_by_key(|b| cfg.rpo[*b]);
        o
    };
    for &y in order.iter().skip(1) {
        let parent = order[cfg.idom[cfg.rpo[y]]];
        // The outermost loop that holds the dominator but not the block.
        let h = headers
            .iter()
            .zip(&loops)
            .filter(|(_, l)| l[parent] && !l[y])
            .map(|(h, _)| *h)
            .min_by_key(|h| cfg.rpo[h.index()]);
        if let Some(h) = h {
            cfg.follows[y] = Some(h);
            cfg.followers[h.index()].push(BlockId(y as u32));
        }
    }
}

fn do_tree(cfg: &Cfg<'_>, x: BlockId) -> Node {
    // Merge children, the one latest in reverse postorder first (outermost); the blocks that
    // follow a loop are placed after it instead.
    let mut merges: Vec<BlockId> = cfg.children[x.index()]
        .iter()
        .copied()
        .filter(|c| cfg.is_merge(*c) && cfg.follows[c.index()].is_none())
        .collect();
    merges.sort_by_key(|b| std::cmp::Reverse(cfg.rpo[b.index()]));
    let code = node_within(cfg, x, &merges);
    let mut node = if cfg.is_loop_header(x) { Node::Loop(x, Box::new(code)) } else { code };
    // The loop's followers around it, the one latest in reverse postorder outermost.
    let mut after = cfg.followers[x.index()].clone();
    after.sort_by_key(|b| cfg.rpo[b.index()]);
    for y in after {
        node = Node::Seq(vec![Node::Block(y, Box::new(node)), do_tree(cfg, y)]);
    }
    node
}

fn node_within(cfg: &Cfg<'_>, x: BlockId, merges: &[BlockId]) -> Node {
    match merges.split_first() {
        Some((y, rest)) => {
            Node::Seq(vec![Node::Block(*y, Box::new(node_within(cfg, x, rest))), do_tree(cfg, *y)])
        }
        None => {
            let block = &cfg.body.blocks[x.index()];
            let exit = match &block.terminator.kind {
                TerminatorKind::Goto(t) => do_branch(cfg, x, *t),
                TerminatorKind::Branch { cond, then, otherwise } => Node::If(
                    *cond,
                    Box::new(do_branch(cfg, x, *then)),
                    Box::new(do_branch(cfg, x, *otherwise)),
                ),
                TerminatorKind::Return | TerminatorKind::Panic(_) => Node::Exit(x),
            };
            Node::Seq(vec![Node::Statements(x), exit])
        }
    }
}

fn do_branch(cfg: &Cfg<'_>, from: BlockId, to: BlockId) -> Node {
    if cfg.is_backward(from, to) {
        Node::Continue(to)
    } else if cfg.is_merge(to) || cfg.follows[to.index()].is_some() {
        Node::Break(to)
    } else {
        do_tree(cfg, to)
    }
}

impl std::fmt::Display for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn go(n: &Node, depth: usize, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let pad = "    ".repeat(depth);
            match n {
                Node::Seq(nodes) => nodes.iter().try_for_each(|n| go(n, depth, f)),
                Node::Block(b, inner) => {
                    writeln!(f, "{pad}block {b} {{")?;
                    go(inner, depth + 1, f)?;
                    writeln!(f, "{pad}}}")
                }
                Node::Loop(b, inner) => {
                    writeln!(f, "{pad}loop {b} {{")?;
                    go(inner, depth + 1, f)?;
                    writeln!(f, "{pad}}}")
                }
                Node::Statements(b) => writeln!(f, "{pad}{b}"),
                Node::If(c, t, e) => {
                    writeln!(f, "{pad}if {c} {{")?;
                    go(t, depth + 1, f)?;
                    writeln!(f, "{pad}}} else {{")?;
                    go(e, depth + 1, f)?;
                    writeln!(f, "{pad}}}")
                }
                Node::Break(b) => writeln!(f, "{pad}break {b}"),
                Node::Continue(b) => writeln!(f, "{pad}continue {b}"),
                Node::Exit(b) => writeln!(f, "{pad}exit {b}"),
            }
        }
        go(self, 0, f)
    }
}

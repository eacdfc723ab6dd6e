//! Shrinking at the token-tree level, after proptest's shrinking of the choice sequence: delete
//! each tree, replace each group by its contents, empty each group, in the attribute's
//! arguments and in the input, for as long as the input still fails the same way.

use super::Case;
use super::tree::{Node, from_stream, node_paths, stream_mut, to_stream};

/// The most predicate calls one shrink makes.
const BUDGET: usize = 20_000;

/// A smaller `case` for which `fails` still holds (`case` itself if none is found).
pub(crate) fn minimise(case: &Case, mut fails: impl FnMut(&Case) -> bool) -> Case {
    let mut best = case.clone();
    let mut calls = 0;
    loop {
        let mut progress = false;
        for in_attr in [false, true] {
            let mut i = 0;
            loop {
                let nodes =
                    from_stream(if in_attr { best.attr.clone() } else { best.input.clone() });
                let paths = node_paths(&nodes);
                let Some(path) = paths.get(i) else { break };
                let mut improved = false;
                for edit in 0..3 {
                    if calls >= BUDGET {
                        return best;
                    }
                    let Some(candidate) = edited(&nodes, path, edit) else { continue };
                    let mut c = best.clone();
                    if in_attr {
                        c.attr = to_stream(&candidate);
                    } else {
                        c.input = to_stream(&candidate);
                    }
                    calls += 1;
                    if fails(&c) {
                        best = c;
                        improved = true;
                        progress = true;
                        break;
                    }
                }
                // After a change the same index names the next candidate.
                if !improved {
                    i += 1;
                }
            }
        }
        if !progress {
            return best;
        }
    }
}

/// `nodes` with the tree at `path` deleted (edit 0), unwrapped (1) or emptied (2).
fn edited(nodes: &[Node], path: &[usize], edit: usize) -> Option<Vec<Node>> {
    let mut out = nodes.to_vec();
    let (&i, parent) = path.split_last()?;
    let stream = stream_mut(&mut out, parent)?;
    match (edit, stream.get(i)?.clone()) {
        (0, _) => {
            stream.remove(i);
        }
        (1, Node::Group(_, _, inner)) => {
            stream.splice(i..=i, inner);
        }
        (2, Node::Group(d, span, inner)) if !inner.is_empty() => {
            stream[i] = Node::Group(d, span, Vec::new());
        }
        _ => return None,
    }
    Some(out)
}

#[test]
fn shrinks_to_the_tokens_that_matter() {
    use super::{Target, lex};
    let case = Case {
        target: Target::ZeroAdjoint,
        attr: Default::default(),
        input: lex("fn f(x: f64, y: [u8; 3]) -> f64 { let z = (x + 1.0) * BOOM; z }"),
    };
    let small = minimise(&case, |c| c.input.to_string().contains("BOOM"));
    assert_eq!(small.input.to_string(), "BOOM");
}

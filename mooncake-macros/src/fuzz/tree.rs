//! A token stream as an editable tree: the mutators and the shrinker delete, insert and wrap
//! token trees at any depth, which `proc_macro2::TokenStream` (immutable groups) makes awkward.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};

/// One token tree: a leaf (ident, punct, literal) or a delimited group of trees.
#[derive(Clone)]
pub(crate) enum Node {
    Leaf(TokenTree),
    Group(Delimiter, Span, Vec<Node>),
}

/// A stream as nodes.
pub(crate) fn from_stream(stream: TokenStream) -> Vec<Node> {
    stream
        .into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => Node::Group(g.delimiter(), g.span(), from_stream(g.stream())),
            other => Node::Leaf(other),
        })
        .collect()
}

/// Nodes back to a stream (groups keep their spans).
pub(crate) fn to_stream(nodes: &[Node]) -> TokenStream {
    nodes
        .iter()
        .map(|n| match n {
            Node::Leaf(t) => t.clone(),
            Node::Group(d, span, inner) => {
                let mut g = Group::new(*d, to_stream(inner));
                g.set_span(*span);
                TokenTree::Group(g)
            }
        })
        .collect()
}

/// The position of a node: the indices of the groups leading to its stream, then its index.
pub(crate) type Path = Vec<usize>;

/// Every node's path, in pre-order.
pub(crate) fn node_paths(nodes: &[Node]) -> Vec<Path> {
    fn walk(nodes: &[Node], prefix: &mut Path, out: &mut Vec<Path>) {
        for (i, n) in nodes.iter().enumerate() {
            prefix.push(i);
            out.push(prefix.clone());
            if let Node::Group(_, _, inner) = n {
                walk(inner, prefix, out);
            }
            prefix.pop();
        }
    }
    let mut out = Vec::new();
    walk(nodes, &mut Vec::new(), &mut out);
    out
}

/// Every stream's path (the root's is empty, a group's is the group's node path).
pub(crate) fn stream_paths(nodes: &[Node]) -> Vec<Path> {
    let mut out = vec![Vec::new()];
    for p in node_paths(nodes) {
        if matches!(node(nodes, &p), Some(Node::Group(..))) {
            out.push(p);
        }
    }
    out
}

/// The node at `path`.
pub(crate) fn node<'a>(nodes: &'a [Node], path: &[usize]) -> Option<&'a Node> {
    let (&last, parents) = path.split_last()?;
    stream(nodes, parents)?.get(last)
}

/// The stream at `path` (a group's contents, or the root).
pub(crate) fn stream<'a>(nodes: &'a [Node], path: &[usize]) -> Option<&'a [Node]> {
    match path.split_first() {
        None => Some(nodes),
        Some((&i, rest)) => match nodes.get(i)? {
            Node::Group(_, _, inner) => stream(inner, rest),
            Node::Leaf(_) => None,
        },
    }
}

/// The stream at `path`, mutably (the root for the empty path).
pub(crate) fn stream_mut<'a>(
    nodes: &'a mut Vec<Node>,
    path: &[usize],
) -> Option<&'a mut Vec<Node>> {
    match path.split_first() {
        None => Some(nodes),
        Some((&i, rest)) => match nodes.get_mut(i)? {
            Node::Group(_, _, inner) => stream_mut(inner, rest),
            Node::Leaf(_) => None,
        },
    }
}

/// The number of nodes (leaves and groups) at every depth.
pub(crate) fn size(nodes: &[Node]) -> usize {
    nodes
        .iter()
        .map(|n| match n {
            Node::Leaf(_) => 1,
            Node::Group(_, _, inner) => 1 + size(inner),
        })
        .sum()
}

#[test]
fn round_trip_and_paths() {
    let src: TokenStream = "fn f(x: f64) -> f64 { x * [1, 2][0] as f64 }".parse().expect("lexes");
    let nodes = from_stream(src.clone());
    assert_eq!(to_stream(&nodes).to_string(), src.to_string());
    // fn f ( .. ) -> f64 { .. } at the root: 7 nodes; 3 + 11 inside.
    assert_eq!(nodes.len(), 7);
    assert_eq!(size(&nodes), node_paths(&nodes).len());
    assert_eq!(stream_paths(&nodes).len(), 1 + 4);
    let Some(Node::Leaf(t)) = node(&nodes, &[2, 0]) else { panic!("x in the arguments") };
    assert_eq!(t.to_string(), "x");
    let mut nodes = nodes;
    stream_mut(&mut nodes, &[6]).expect("the body").truncate(1);
    assert_eq!(to_stream(&nodes).to_string(), "fn f (x : f64) -> f64 { x }");
}

//! Mutations of real inputs at the token-tree level: delete, duplicate, swap, move, truncate
//! (a stream, or the whole input at any token), replace with an odd token, insert, wrap in a
//! group (`None` groups too, as `macro_rules!` fragments arrive), unwrap, change a delimiter,
//! splice a tree from another seed, insert odd attributes, set odd attribute arguments, and
//! hand the input to another macro.

use super::choices::Choices;
use super::corpus::Seed;
use super::tree::{
    Node, from_stream, node, node_paths, stream, stream_mut, stream_paths, to_stream,
};
use super::{Case, Target, lex};
use proc_macro2::{Delimiter, TokenTree};

/// Replacement and inserted tokens: keywords, odd identifiers, literals, punctuation. Not
/// `try` and `gen`: syn takes these reserved words of newer editions for identifiers, so that
/// `=> try` passes the macros' parsers and comes out as `try()`, which the compiler reports
/// at the user's `try` ("found reserved keyword") but the output check cannot parse.
const TOKENS: &[&str] = &[
    "x",
    "fn",
    "let",
    "mut",
    "self",
    "Self",
    "super",
    "crate",
    "async",
    "await",
    "unsafe",
    "const",
    "static",
    "impl",
    "dyn",
    "where",
    "for",
    "in",
    "loop",
    "while",
    "if",
    "else",
    "match",
    "return",
    "break",
    "continue",
    "move",
    "ref",
    "yield",
    "r#try",
    "struct",
    "enum",
    "union",
    "trait",
    "type",
    "pub",
    "extern",
    "use",
    "mod",
    "macro_rules",
    "_",
    "r#fn",
    "r#self_",
    "f64",
    "f32",
    "usize",
    "i32",
    "u8",
    "bool",
    "str",
    "Vec",
    "Option",
    "Box",
    "Some",
    "None",
    "sin",
    "len",
    "iter",
    "zip",
    "enumerate",
    "rev",
    "step_by",
    "sum",
    "push",
    "pop",
    "clone",
    "to_vec",
    "differentiable",
    "cache",
    "frule",
    "rrule",
    "mode",
    "forward",
    "NoTangent",
    "Dual",
    "CoDual",
    "__l0",
    "__t0",
    "x_frule",
    "'a",
    "'static",
    "'__b0",
    "0",
    "1",
    "0.5",
    "-1.0",
    "1e400",
    "0usize",
    "1u8",
    "340282366920938463463374607431768211456",
    "0x10",
    "1.0f32",
    "2_usize",
    "\"s\"",
    "r\"raw\"",
    "b\"b\"",
    "b'x'",
    "'c'",
    "c\"c\"",
    "true",
    "false",
    "+",
    "-",
    "*",
    "/",
    "%",
    "^",
    "!",
    "&",
    "|",
    "=",
    "<",
    ">",
    "@",
    ".",
    ",",
    ";",
    ":",
    "#",
    "$",
    "?",
    "~",
    "::",
    "->",
    "=>",
    "..",
    "..=",
    "...",
    "&&",
    "||",
    "+=",
    "==",
    "<<",
    ">>=",
    "()",
    "[]",
    "{}",
    "(x)",
    "[0]",
    "{ x }",
    "< T >",
    "#[inline]",
    "|x| x",
    "&mut",
    "& &",
    "x . y",
    "x [ 0 ]",
];

/// Attributes inserted before a token.
const ATTRS: &[&str] = &[
    "#[differentiable]",
    "#[differentiable(debug)]",
    "#[differentiable(forward_only, reverse_only)]",
    "#[allow(unused)]",
    "#[cfg(test)]",
    "#[cfg(any())]",
    "#[inline]",
    "#[doc = \"x\"]",
    "#[must_use]",
    "#[derive(Tangent)]",
    "#[derive(Clone, Tangent)]",
    "#[mooncake_overlay]",
    "#[frule(for = f)]",
    "#[rrule(for = f)]",
    "#![allow(unused)]",
    "#![differentiable]",
    "#[track_caller]",
    "#[cfg_attr(test, differentiable)]",
    "#[rustfmt::skip]",
    "#[repr(C)]",
    "#[repr(packed)]",
    "#[tangent(skip)]",
    "#[differentiable = 1]",
    "#[path::to::attr(a b c)]",
    "#[]",
];

/// Words of `#[differentiable(..)]` arguments, joined in odd combinations. `dump_ir` is rare:
/// it prints the IR on stderr, which the test harness keeps in memory.
const ATTR_WORDS: &[&str] = &[
    "debug",
    "recursive",
    "forward_only",
    "reverse_only",
    "foo = 1",
    "debug = true",
    "debug = false",
    "debug = \"yes\"",
    "forward_only(1)",
    "reverse_only = 1",
    "recursive = recursive",
    "1",
    "\"str\"",
    "::path",
    "a::b",
    "for = f",
    "for = ",
    "= f",
    "for",
    "for = m::f",
    "for = f::<T>",
    "for = 1",
    "(debug)",
    "",
    "debug debug",
];

/// The input of the seed `corpus[choice]` after up to five mutations.
pub(crate) fn mutated(corpus: &[Seed], c: &mut Choices<'_>) -> Case {
    let seed = c.pick(corpus);
    let mut target = seed.target;
    let mut attr = from_stream(lex(&seed.attr));
    let mut input = from_stream(lex(&seed.input));
    for _ in 0..c.below(6) {
        let on_attr = target.is_attribute() && c.maybe(15);
        let op = c.below(17);
        if op == 11 {
            if target.is_attribute() {
                attr = odd_attr_args(c);
            }
            continue;
        }
        if op == 12 {
            target = retarget(target, c);
            continue;
        }
        let tree = if on_attr { &mut attr } else { &mut input };
        mutate(tree, op, corpus, c);
    }
    Case { target, attr: to_stream(&attr), input: to_stream(&input) }
}

/// Another macro taking the same kind of input (an item, or a macro's tokens).
fn retarget(target: Target, c: &mut Choices<'_>) -> Target {
    use Target::*;
    let items = [Differentiable, Overlay, DeriveTangent, Frule, Rrule];
    let tokens =
        [ZeroAdjoint, FromRrule, ValueAndDerivative, ValueAndGradient, ValueAndPullback, TestRule];
    if items.contains(&target) || c.maybe(10) { *c.pick(&items) } else { *c.pick(&tokens) }
}

/// `#[differentiable(..)]` / `#[frule(..)]` arguments: zero to four words, commas optional.
fn odd_attr_args(c: &mut Choices<'_>) -> Vec<Node> {
    let mut text = String::new();
    for i in 0..c.below(5) {
        if i > 0 {
            text.push_str(c.pick::<&str>(&[", ", " ", ",, "]));
        }
        if c.maybe(3) {
            text.push_str("dump_ir");
        } else {
            text.push_str(c.pick::<&str>(ATTR_WORDS));
        }
    }
    from_stream(lex(&text))
}

fn pick_node(tree: &[Node], c: &mut Choices<'_>) -> Option<Vec<usize>> {
    let paths = node_paths(tree);
    if paths.is_empty() { None } else { Some(paths[c.below(paths.len())].clone()) }
}

/// A stream and a position in it (`0..=len`).
fn pick_slot(tree: &[Node], c: &mut Choices<'_>) -> (Vec<usize>, usize) {
    let streams = stream_paths(tree);
    let s = streams[c.below(streams.len())].clone();
    let len = stream(tree, &s).map_or(0, <[Node]>::len);
    let at = c.below(len + 1);
    (s, at)
}

fn pool_nodes(pool: &[&str], c: &mut Choices<'_>) -> Vec<Node> {
    from_stream(lex(c.pick::<&str>(pool)))
}

const DELIMITERS: [Delimiter; 4] =
    [Delimiter::Parenthesis, Delimiter::Bracket, Delimiter::Brace, Delimiter::None];

/// Applies mutation number `op` (see the list at the top) to `tree`.
fn mutate(tree: &mut Vec<Node>, op: usize, corpus: &[Seed], c: &mut Choices<'_>) {
    let split = |p: &[usize]| -> (Vec<usize>, usize) {
        let (&last, parent) = p.split_last().expect("a node path is not empty");
        (parent.to_vec(), last)
    };
    match op {
        // Delete a tree.
        0 => {
            if let Some(p) = pick_node(tree, c) {
                let (parent, i) = split(&p);
                stream_mut(tree, &parent).expect("path exists").remove(i);
            }
        }
        // Duplicate a tree.
        1 => {
            if let Some(p) = pick_node(tree, c) {
                let copy = node(tree, &p).expect("path exists").clone();
                let (parent, i) = split(&p);
                stream_mut(tree, &parent).expect("path exists").insert(i + 1, copy);
            }
        }
        // Swap a tree with its next sibling.
        2 => {
            if let Some(p) = pick_node(tree, c) {
                let (parent, i) = split(&p);
                let s = stream_mut(tree, &parent).expect("path exists");
                if i + 1 < s.len() {
                    s.swap(i, i + 1);
                }
            }
        }
        // Truncate one stream.
        3 => {
            let (s, at) = pick_slot(tree, c);
            stream_mut(tree, &s).expect("path exists").truncate(at);
        }
        // Replace a tree with an odd token.
        4 => {
            if let Some(p) = pick_node(tree, c) {
                let with = pool_nodes(TOKENS, c);
                let (parent, i) = split(&p);
                stream_mut(tree, &parent).expect("path exists").splice(i..=i, with);
            }
        }
        // Insert an odd token.
        5 => {
            let (s, at) = pick_slot(tree, c);
            let with = pool_nodes(TOKENS, c);
            stream_mut(tree, &s).expect("path exists").splice(at..at, with);
        }
        // Wrap one to four trees in a group.
        6 => {
            let (s, at) = pick_slot(tree, c);
            let delim = *c.pick(&DELIMITERS);
            let n = 1 + c.below(4);
            let st = stream_mut(tree, &s).expect("path exists");
            let end = (at + n).min(st.len());
            let inner: Vec<Node> = st.drain(at..end).collect();
            let span = match inner.first() {
                Some(Node::Leaf(t)) => t.span(),
                Some(Node::Group(_, span, _)) => *span,
                None => proc_macro2::Span::call_site(),
            };
            st.insert(at, Node::Group(delim, span, inner));
        }
        // Unwrap a group.
        7 => {
            if let Some(p) = pick_node(tree, c) {
                let (parent, i) = split(&p);
                let st = stream_mut(tree, &parent).expect("path exists");
                if let Node::Group(_, _, inner) = st[i].clone() {
                    st.splice(i..=i, inner);
                }
            }
        }
        // Change a group's delimiter.
        8 => {
            if let Some(p) = pick_node(tree, c) {
                let delim = *c.pick(&DELIMITERS);
                let (parent, i) = split(&p);
                if let Node::Group(d, _, _) =
                    &mut stream_mut(tree, &parent).expect("path exists")[i]
                {
                    *d = delim;
                }
            }
        }
        // Insert an odd attribute.
        9 | 11 => {
            let (s, at) = pick_slot(tree, c);
            let with = pool_nodes(ATTRS, c);
            stream_mut(tree, &s).expect("path exists").splice(at..at, with);
        }
        // Splice in a tree of another seed.
        10 => {
            let other = from_stream(lex(&c.pick(corpus).input));
            if let Some(p) = pick_node(&other, c) {
                let graft = node(&other, &p).expect("path exists").clone();
                let (s, at) = pick_slot(tree, c);
                stream_mut(tree, &s).expect("path exists").insert(at, graft);
            }
        }
        // Replace an identifier with another identifier of the same input.
        13 => {
            let idents: Vec<Vec<usize>> = node_paths(tree)
                .into_iter()
                .filter(|p| matches!(node(tree, p), Some(Node::Leaf(TokenTree::Ident(_)))))
                .collect();
            if idents.len() >= 2 {
                let from = c.pick(&idents).clone();
                let to = c.pick(&idents).clone();
                let with = node(tree, &from).expect("path exists").clone();
                let (parent, i) = split(&to);
                stream_mut(tree, &parent).expect("path exists")[i] = with;
            }
        }
        // Move a tree elsewhere.
        14 => {
            if let Some(p) = pick_node(tree, c) {
                let (parent, i) = split(&p);
                let moved = stream_mut(tree, &parent).expect("path exists").remove(i);
                let (s, at) = pick_slot(tree, c);
                stream_mut(tree, &s).expect("path exists").insert(at, moved);
            }
        }
        // Truncate the whole input just before a token, at any depth (the enclosing groups
        // stay closed): a body cut off mid-statement.
        _ => {
            if let Some(p) = pick_node(tree, c) {
                for depth in 0..p.len() {
                    let keep = if depth + 1 == p.len() { p[depth] } else { p[depth] + 1 };
                    stream_mut(tree, &p[..depth]).expect("path exists").truncate(keep);
                }
            }
        }
    }
}

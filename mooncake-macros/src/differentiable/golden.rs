//! Golden tests of the IR text for each pass: lowering (the primal IR), structuring, and the
//! forward transform. The expected texts live in `mooncake-macros/golden/NAME.ir`; regenerate
//! them with `MOONCAKE_BLESS=1 cargo test -p mooncake-macros golden` and review the diff.

use super::errors::Errors;
use super::lower::{Signature, lower};
use super::{forward, parse, structure, verify};

fn lowered(src: &str) -> super::ir::Body {
    let f: syn::ItemFn = syn::parse_str(src).expect("test source parses");
    let mut errors = Errors::new();
    let sig = parse::signature(&f.sig, &mut errors);
    let lsig = Signature::of(&f.sig.ident, &sig);
    let body = lower(&lsig, &f.block, &mut errors);
    assert!(errors.finish().is_ok(), "lowering reported errors");
    let problems = verify::verify(&body);
    assert!(problems.is_empty(), "verifier: {problems:?}");
    body
}

fn passes(src: &str) -> String {
    let body = lowered(src);
    let structured = structure::structure(&body).expect("reducible");
    format!(
        "== primal IR\n{body}\n== structured\n{structured}\n== forward\n{}",
        forward::forward_text(&body)
    )
}

fn check(name: &str, src: &str) {
    let actual = passes(src);
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden").join(format!("{name}.ir"));
    if std::env::var_os("MOONCAKE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("has a parent")).expect("create golden/");
        std::fs::write(&path, &actual).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing {}; run with MOONCAKE_BLESS=1", path.display()));
    assert_eq!(
        actual, expected,
        "IR text of `{name}` changed; if intended, re-bless with MOONCAKE_BLESS=1"
    );
}

#[test]
fn golden_branch() {
    check("branch", "fn f(x: f64) -> f64 { if x > 0.0 { x.sin() } else { -x } }");
}

#[test]
fn golden_loop_continue() {
    check(
        "loop_continue",
        "fn g(x: &[f64], y: f64) -> f64 { let mut s = 0.0; for i in 0..x.len() { if x[i] > 1.0 { continue; } s += x[i] * y; } s }",
    );
}

#[test]
fn golden_loop_break_match() {
    check(
        "loop_break_match",
        "fn h(x: f64, n: usize) -> f64 { let mut k = 0; let r = loop { k += 1; if k > n { break x * 2.0; } }; match k { 0 => 1.0, 1..=3 if n > 2 => r, _ => x } }",
    );
}

#[test]
fn golden_iterators_and_calls() {
    check(
        "iterators_calls",
        "fn z(x: &[f64], y: &[f64]) -> f64 { let mut s = 0.0; for (a, b) in x.iter().zip(y.iter()) { s += m::dot(a, b); } s + x.iter().sum::<f64>() }",
    );
}

#[test]
fn golden_early_return_and_structs() {
    check(
        "early_return_structs",
        "fn e(p: &Params, v: &mut [f64]) -> Point { for i in 0..v.len() { v[i] *= p.scale; if v[i] > 10.0 { return Point { x: v[i], y: 0.0 }; } } Point { x: p.b, y: v[0] } }",
    );
}

#[test]
fn golden_short_circuit_and_casts() {
    check(
        "short_circuit_casts",
        "fn c(x: f64, n: i32) -> f64 { let ok = x > 0.0 && n > 1 || !(x < -5.0); if ok { x * (n as f64) } else { vec![x; 3][0] } }",
    );
}

/// Integer arithmetic (loop counters, index computations) gets no reverse code; float
/// arithmetic keeps its rules.
#[test]
fn integer_arithmetic_has_no_reverse_code() {
    let body = super::reverse::normalise(&lowered(
        "fn f(x: &[f64], n: usize) -> f64 { let mut s = 0.0; for i in 0..n { let j = i * 2 + 1; let k = (j as f64) as u32; s += x[j % n] * 2.0 + (k as f64); } s }",
    ));
    let (ints, floats) = super::reverse::arithmetic_kinds(&body);
    // `i * 2`, `+ 1`, `j % n`, `as u32`, and the counter's `+ 1`.
    assert_eq!(ints, (5, 0), "(integer statements without, with reverse code)");
    // `* 2.0`, `+ k as f64` (the sum), `s + ..` (the compound assignment), and `as f64` twice.
    assert_eq!(floats.0, 0, "float arithmetic must keep its rules");
    assert!(floats.1 >= 4, "float statements with rules: {}", floats.1);
}

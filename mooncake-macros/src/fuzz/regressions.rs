//! The inputs the fuzz tests found failing, shrunk, each with the fix it pins: every one must
//! now expand or give `compile_error!`s, never panic, and its output must be well formed.

use super::{Case, Target, Verdict, lex, run};
use proc_macro2::TokenStream;

/// Runs `target` on `attr` and `input` and returns what it gave (panicking, with the failure,
/// if the input still fails).
fn passes(target: Target, attr: &str, input: &str) -> Verdict {
    let case = Case { target, attr: lex(attr), input: lex(input) };
    run(&case).unwrap_or_else(|f| panic!("{f}\n{}", target.show(&case.attr, &case.input)))
}

/// Whether the expansion of `input` contains `text` (spaces as `TokenStream` prints them).
fn expansion_contains(target: Target, attr: &str, input: &str, text: &str) -> bool {
    target.expand(lex(attr), lex(input)).to_string().contains(text)
}

/// `check_rule!` stands where an expression must: several errors at once were several
/// `compile_error!`s side by side, which rustc reported as "macro expansion ignores `!`" and an
/// "ambiguous associated type"; they now come in one block. A call that names no function was
/// also reported twice (once per rule).
#[test]
fn test_rule_errors_are_one_expression() {
    for target in [Target::CheckRule, Target::TestRule] {
        assert!(matches!(passes(target, "", "() ()"), Verdict::Errors { .. }));
        let out = target.expand(TokenStream::new(), lex("() ()")).to_string();
        assert_eq!(out.matches("expected a path to the primal function").count(), 1, "{out}");
        assert!(out.starts_with('{'), "{out}");
    }
}

/// A where clause with no predicates, or ending in a comma (rustfmt's layout for every
/// multi-line where clause), was pasted before the added bounds as `where ,` / `T: Float,,`.
#[test]
fn where_clauses_empty_or_with_a_trailing_comma() {
    assert_eq!(passes(Target::Overlay, "", "fn f() -> T where {}"), Verdict::Expanded);
    for target in [Target::Differentiable, Target::Overlay] {
        let f = "fn scale<T>(x: T, k: T) -> T where T: Float, { x * k }";
        assert_eq!(passes(target, "", f), Verdict::Expanded);
        assert!(!expansion_contains(target, "", f, ", ,"));
    }
    let imp = "impl<T> P<T> where T: Float, { fn get(&self, y: f64) -> f64 { y * 2.0 } }";
    assert_eq!(passes(Target::Differentiable, "", imp), Verdict::Expanded);
}

/// `fn() -> dyn A + 'b` is an ambiguous `+` in the signature checks of `#[mooncake_overlay]`
/// and `#[frule(for = ..)]`: such types are now put in parentheses.
#[test]
fn trait_objects_with_plus_in_function_pointer_types() {
    assert_eq!(passes(Target::Overlay, "", "fn f() -> dyn Tr + 'static {}"), Verdict::Expanded);
    assert_eq!(
        passes(Target::Frule, "for = f", "fn f_rule() -> Dual<dyn Tr + 'static, f64> {}"),
        Verdict::Expanded
    );
    assert_eq!(
        passes(
            Target::Rrule,
            "for = f",
            "fn f_rule(x: CoDual<dyn Tr + Send, F>) -> (CoDual<f64, NoFData>, P) {}"
        ),
        Verdict::Expanded
    );
}

/// `#[derive(Tangent)]` on a field of a trait-object type with `+` (here a bare one, with a
/// trailing `+`) pasted it into `<f32 + as Primal>`.
#[test]
fn derive_tangent_trait_object_field() {
    assert_eq!(
        passes(Target::DeriveTangent, "", "struct Point { x: f64, y: f32 + }"),
        Verdict::Expanded
    );
    assert_eq!(
        passes(
            Target::DeriveTangent,
            "",
            "struct S { b: Box<dyn Fn(f64) -> f64>, d: dyn Tr + Send }"
        ),
        Verdict::Expanded
    );
}

/// A by-value `self` method in a `#[differentiable] impl` with bounded parameters: the
/// pullback's `use<..>` listed the parameters with their bounds (`use<T: Float>`).
#[test]
fn impl_parameters_with_bounds_in_use_lists() {
    let imp = "impl<T: Float, const N: usize, 'a> P<T> { fn get(self, y: f64) -> f64 { y * 2.0 } }";
    assert_eq!(passes(Target::Differentiable, "", imp), Verdict::Expanded);
    assert!(expansion_contains(Target::Differentiable, "", imp, "use < T , N , 'a >"));
}

/// An empty statement (`let y = x;;`) was refused as "this expression is not supported", at
/// no span of the input.
#[test]
fn empty_statements_are_skipped() {
    let f = "fn f(x: f64) -> f64 { ; let y = x * 2.0;; y }";
    assert_eq!(passes(Target::Differentiable, "", f), Verdict::Expanded);
}

/// `test_rule!(f(x), frule = expr)` pasted `expr` before the call's arguments: a cast or a
/// closure took them in (`|a| g(a)(x)`, `x as F(..)`). Now anything but a path is put in
/// parentheses.
#[test]
fn test_rule_rules_given_as_expressions() {
    for rule in ["x.y.z as f64", "|a, b| g_frule(a, b)", "if c { f } else { g }"] {
        for key in ["frule", "rrule"] {
            let input = format!("f(x), {key} = {rule}");
            assert!(matches!(passes(Target::TestRule, "", &input), Verdict::Expanded));
            assert!(expansion_contains(Target::TestRule, "", &input, &format!("({})", lex(rule))));
        }
    }
}

/// A sum of 1,200 terms: lowering recursed once per term, about 10 KiB a level in a debug build,
/// and overflowed the 8 MiB stack the compiler runs macros on at about 850 terms (an abort,
/// worse than a panic). The left spine of a chain of operators is now walked in a loop. Run on
/// an 8 MiB thread, as in the compiler.
#[test]
fn long_sums_do_not_overflow_the_stack() {
    let body = vec!["x[0] * y"; 1200].join(" + ");
    let input = format!("fn f(x: &[f64], y: f64) -> f64 {{ {body} }}");
    let verdict = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || passes(Target::Differentiable, "", &input))
        .expect("spawn")
        .join()
        .expect("no panic");
    assert_eq!(verdict, Verdict::Expanded);
}

/// `tokens` in a `None`-delimited group.
fn invisible(tokens: TokenStream) -> TokenStream {
    proc_macro2::TokenTree::Group(proc_macro2::Group::new(proc_macro2::Delimiter::None, tokens))
        .into()
}

/// An item followed by an empty invisible group (here one holding another), given back beside an error: syn takes the
/// input for one item (it skips the group) but not the output for items. No compiler input
/// holds such a group; the output check drops them (this pins that it does).
#[test]
fn empty_invisible_groups_are_ignored() {
    let case = Case {
        target: Target::Frule,
        attr: TokenStream::new(),
        input: [lex("fn early_exit() -> f64 {}"), invisible(invisible(TokenStream::new()))]
            .into_iter()
            .collect(),
    };
    assert!(matches!(run(&case), Ok(Verdict::Errors { .. })));
}

/// `zero_adjoint!` and `from_rrule!` pasted a trait-object type with `+` into `<T as Primal>`
/// (`zero_adjoint! { fn f() -> f64 +; }`, or `-> Box<..>` mistyped as `dyn Tr + Send`).
#[test]
fn hand_rule_signatures_with_trait_objects() {
    for sig in ["fn every_method() -> f64 +", "fn f(x: dyn Tr + Send) -> dyn Tr + 'static"] {
        assert_eq!(passes(Target::ZeroAdjoint, "", &format!("{sig};")), Verdict::Expanded);
        assert_eq!(passes(Target::FromRrule, "", &format!("{sig} => g;")), Verdict::Expanded);
    }
}

/// `#[differentiable]` pasted an argument or result type that is a trait object with `+` into
/// `<T as Primal>` (`fn f(y: f64 +)`, a bare trait object with a trailing `+`).
#[test]
fn differentiable_signatures_with_trait_objects() {
    for f in ["fn f(x: f64) -> f64 + { x }", "fn f(x: Box<dyn Tr + Send>, y: f64 +) -> f64 { 1.0 }"]
    {
        assert_eq!(passes(Target::Differentiable, "", f), Verdict::Expanded);
    }
}

/// `let .. else` on a value of any expression was rewritten as a `match` by parsing tokens,
/// which panicked when the expression could not stand where the scrutinee goes
/// (`_ = return x`); the `match` is now built as syntax. (`passes` fails on a panic.)
#[test]
fn let_else_on_any_expression() {
    let _ = passes(Target::Differentiable, "", "fn f() -> f64 { let () = _ = return x else { }; }");
    for body in [
        "fn f(o: Option<f64>) -> f64 { let Some(v) = o else { return 0.0; }; v }",
        "fn f(o: Option<f64>) -> f64 { if let Some(v) = o { v } else { 1.0 } }",
        "fn f(o: Option<f64>) -> f64 { let mut s = 0.0; while let Some(v) = o { s += v; break; } s }",
        "fn f(o: Option<f64>) -> f64 { o.map(|v| v * 2.0).unwrap_or(0.0) }",
    ] {
        assert_eq!(passes(Target::Differentiable, "", body), Verdict::Expanded, "{body}");
    }
    let bad = "fn f(o: Option<f64>) -> f64 { o.map(1.0 + 2.0).unwrap_or(0.0) }";
    assert!(matches!(passes(Target::Differentiable, "", bad), Verdict::Errors { .. }));
}

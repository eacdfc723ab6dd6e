//! The macros never panic: a fuzz test of every expansion function (issue 12).
//!
//! Each input is one call of one macro's expansion function on `proc_macro2` tokens (which run
//! outside a compiler): `#[differentiable]`, `#[mooncake_overlay]`, `#[derive(Tangent)]`,
//! `#[frule(for = ..)]`, `#[rrule(for = ..)]`, `zero_adjoint!`, `from_rrule!`,
//! `value_and_derivative!`, `value_and_gradient!`, `value_and_pullback!`, `test_rule!`,
//! `check_rule!`, `hvp!` and `hessian!` (these two from the corpus's inputs only). Two tests draw
//! the inputs:
//!
//! * `fuzz_mutated_corpus`: the real inputs of the workspace ([`corpus`]), mutated at the
//!   token-tree level ([`mutate`]);
//! * `fuzz_generated_items`: Rust outside the accepted subset, generated from a grammar
//!   ([`generate`]).
//!
//! An input passes when the expansion returns (a panic is caught and reported with the panic's
//! message and place) and its output is well formed ([`check`]): it parses as items (attribute
//! macros, `derive`, `zero_adjoint!`, `from_rrule!`) or as one expression (the API macros,
//! `test_rule!`), every `compile_error!` in it has a message, and an input the compiler could not
//! have parsed may come back unchanged (beside errors), for rustc to report. A failing input is
//! shrunk, first by proptest (its choice sequence, [`choices`]), then token tree by token tree
//! ([`shrink`]), and printed; each one found is kept in [`regressions`].
//!
//! `MOONCAKE_FUZZ_CASES` sets the number of inputs of each of the two tests (default 1,000: a
//! few seconds in a debug build), `MOONCAKE_FUZZ_SEED` the seed (default 0, so CI runs the same
//! inputs each time), `MOONCAKE_FUZZ_TRACE=text` prints the first inputs with an error whose
//! message contains `text` (`@text`: only errors at the call site). The documented run
//! (README, "Testing"; a debug build, as the compiler runs a proc macro built by Cargo's dev
//! profile: debug assertions on, and the stack frames whose depth the 8 MiB thread checks):
//!
//! ```text
//! MOONCAKE_FUZZ_CASES=100000 cargo test -p mooncake-macros fuzz_ -- --nocapture
//! ```
//!
//! `show_expansion` (ignored) prints the expansion of one input and its verdict.

mod choices;
mod corpus;
mod generate;
mod mutate;
mod regressions;
mod shrink;
mod tree;

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// The macro an input is given to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Target {
    Differentiable,
    Overlay,
    DeriveTangent,
    Frule,
    Rrule,
    ZeroAdjoint,
    FromRrule,
    ValueAndDerivative,
    ValueAndGradient,
    ValueAndPullback,
    TestRule,
    CheckRule,
    Hvp,
    Hessian,
}

/// What a macro's output must parse as.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Output {
    Items,
    Expr,
}

impl Target {
    /// An attribute macro (it takes arguments besides the item).
    pub(crate) fn is_attribute(self) -> bool {
        matches!(self, Target::Differentiable | Target::Overlay | Target::Frule | Target::Rrule)
    }

    fn output(self) -> Output {
        match self {
            Target::ValueAndDerivative
            | Target::ValueAndGradient
            | Target::ValueAndPullback
            | Target::TestRule
            | Target::CheckRule
            | Target::Hvp
            | Target::Hessian => Output::Expr,
            _ => Output::Items,
        }
    }

    /// The compiler parses the input of these as an item before calling the macro.
    fn input_is_item(self) -> bool {
        self.is_attribute() || self == Target::DeriveTangent
    }

    /// The macro's expansion function.
    fn expand(self, attr: TokenStream, input: TokenStream) -> TokenStream {
        use crate::rule_check::Mode;
        use crate::test_rule::OnFailure;
        match self {
            Target::Differentiable => crate::differentiable::expand(attr, input),
            Target::Overlay => crate::differentiable::expand_overlay(attr, input),
            Target::DeriveTangent => crate::derive_tangent::expand(input),
            Target::Frule => crate::rule_check::expand(attr, input, Mode::Forward),
            Target::Rrule => crate::rule_check::expand(attr, input, Mode::Reverse),
            Target::ZeroAdjoint => crate::zero_adjoint::expand(input),
            Target::FromRrule => crate::from_rrule::expand(input),
            Target::ValueAndDerivative => crate::api::value_and_derivative(input),
            Target::ValueAndGradient => crate::api::value_and_gradient(input, false),
            Target::ValueAndPullback => crate::api::value_and_gradient(input, true),
            Target::TestRule => crate::test_rule::expand(input, OnFailure::Panic),
            Target::CheckRule => crate::test_rule::expand(input, OnFailure::Return),
            Target::Hvp => crate::hessian::hvp(input),
            Target::Hessian => crate::hessian::hessian(input),
        }
    }

    /// How the input is written in Rust, for the report.
    fn show(self, attr: &TokenStream, input: &TokenStream) -> String {
        let name = match self {
            Target::Differentiable => "differentiable",
            Target::Overlay => "mooncake_overlay",
            Target::Frule => "frule",
            Target::Rrule => "rrule",
            Target::DeriveTangent => return format!("#[derive(Tangent)]\n{input}"),
            Target::ZeroAdjoint => "zero_adjoint",
            Target::FromRrule => "from_rrule",
            Target::ValueAndDerivative => "value_and_derivative",
            Target::ValueAndGradient => "value_and_gradient",
            Target::ValueAndPullback => "value_and_pullback",
            Target::TestRule => "test_rule",
            Target::CheckRule => "check_rule",
            Target::Hvp => "hvp",
            Target::Hessian => "hessian",
        };
        if self.is_attribute() {
            if attr.is_empty() {
                format!("#[{name}]\n{input}")
            } else {
                format!("#[{name}({attr})]\n{input}")
            }
        } else {
            format!("{name}! {{ {input} }}")
        }
    }
}

/// One input: a macro, the attribute's arguments (attribute macros) and the tokens it is given.
#[derive(Clone)]
pub(crate) struct Case {
    pub(crate) target: Target,
    pub(crate) attr: TokenStream,
    pub(crate) input: TokenStream,
}

/// Tokens of a text (the fuzz tests' own texts always lex).
pub(crate) fn lex(text: &str) -> TokenStream {
    text.parse().unwrap_or_else(|e| panic!("fuzz input does not lex: {e}: {text}"))
}

/// What an expansion gave, when well formed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Code without errors.
    Expanded,
    /// At least one `compile_error!`: each one's message, and whether it carries no span of
    /// the input (it points at the whole macro call).
    Errors { messages: Vec<(String, bool)> },
    /// The input, which does not parse, given back for the compiler to report.
    Untouched,
}

/// Why an input fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The expansion panicked (the hook's message: place and payload).
    Panic(String),
    /// The output is malformed.
    Malformed(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Panic(m) => write!(f, "the expansion panicked: {m}"),
            Failure::Malformed(m) => write!(f, "malformed output: {m}"),
        }
    }
}

thread_local! {
    /// Set while an expansion runs under the fuzz harness: its panics are expected and caught,
    /// so the hook records them instead of printing.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once) a panic hook that is silent on threads running fuzz inputs and defers to the
/// previous hook elsewhere.
fn install_quiet_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(info.to_string()));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs one input and checks its output.
pub(crate) fn run(case: &Case) -> Result<Verdict, Failure> {
    install_quiet_hook();
    QUIET.with(|q| q.set(true));
    let (attr, input) = (case.attr.clone(), case.input.clone());
    let result = catch_unwind(AssertUnwindSafe(|| case.target.expand(attr, input)));
    QUIET.with(|q| q.set(false));
    match result {
        Ok(output) => check(case, &output),
        Err(payload) => {
            let hook = LAST_PANIC.with(|p| p.borrow_mut().take());
            let payload = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Failure::Panic(hook.unwrap_or(payload)))
        }
    }
}

/// The `compile_error!` invocations of `tokens` (at any depth): whether each is at the call
/// site, and its message if it has one.
fn compile_errors(tokens: &TokenStream, out: &mut Vec<(bool, Option<String>)>) {
    let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
    for (i, t) in trees.iter().enumerate() {
        match t {
            TokenTree::Ident(id) if id == "compile_error" => {
                let bang =
                    matches!(trees.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!');
                if let (true, Some(TokenTree::Group(g))) = (bang, trees.get(i + 2)) {
                    let message = g.stream().into_iter().find_map(|t| match t {
                        TokenTree::Literal(l) => {
                            let s = l.to_string();
                            (s.len() > 2 && s.starts_with('"')).then_some(s)
                        }
                        _ => None,
                    });
                    out.push((id.span().source_text().is_none(), message));
                }
            }
            TokenTree::Group(g) => compile_errors(&g.stream(), out),
            _ => {}
        }
    }
}

/// `tokens` without its top-level `::core::compile_error! {..}` invocations.
fn without_errors(tokens: &TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < trees.len() {
        let is_error = trees.len() >= i + 8
            && matches!(&trees[i + 5], TokenTree::Ident(id) if id == "compile_error")
            && matches!(&trees[i + 2], TokenTree::Ident(id) if id == "core");
        if is_error {
            i += 8;
        } else {
            out.push(trees[i].clone());
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// The first `n` characters of a long text.
fn abridged(text: &str, n: usize) -> String {
    match text.char_indices().nth(n) {
        Some((i, _)) => format!("{} ..", &text[..i]),
        None => text.to_string(),
    }
}

/// `tokens` without `None`-delimited groups that hold nothing, at any depth.
fn without_empty_invisible_groups(tokens: &TokenStream) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .filter_map(|t| match t {
            TokenTree::Group(g) => {
                // Inside first: a group that holds only empty groups is empty too.
                let inner = without_empty_invisible_groups(&g.stream());
                if g.delimiter() == Delimiter::None && inner.is_empty() {
                    return None;
                }
                let mut out = Group::new(g.delimiter(), inner);
                out.set_span(g.span());
                Some(TokenTree::Group(out))
            }
            other => Some(other),
        })
        .collect()
}

/// Whether `output` is well formed for `case` (see the module's documentation).
fn check(case: &Case, output: &TokenStream) -> Result<Verdict, Failure> {
    let mut errors = Vec::new();
    compile_errors(output, &mut errors);
    if errors.iter().any(|(_, m)| m.is_none()) {
        return Err(Failure::Malformed(format!(
            "a compile_error! without a message: {}",
            abridged(&output.to_string(), 600)
        )));
    }
    // An empty invisible group is in no input a compiler gives (a `macro_rules!` fragment is
    // never empty), but the mutations make them, and syn skips them in some places and not in
    // others: they are dropped before the output is parsed.
    let output = &without_empty_invisible_groups(output);
    let parsed = match case.target.output() {
        Output::Items => syn::parse2::<syn::File>(output.clone()).map(drop),
        Output::Expr => syn::parse2::<syn::Expr>(output.clone()).map(drop),
    };
    match parsed {
        Ok(()) if errors.is_empty() => Ok(Verdict::Expanded),
        Ok(()) => Ok(Verdict::Errors {
            messages: errors.into_iter().map(|(at, m)| (m.unwrap_or_default(), at)).collect(),
        }),
        Err(e) => {
            let input_parses = syn::parse2::<syn::Item>(case.input.clone()).is_ok();
            if case.target.input_is_item()
                && !input_parses
                && without_errors(output).to_string()
                    == without_empty_invisible_groups(&case.input).to_string()
            {
                return Ok(Verdict::Untouched);
            }
            let what = match case.target.output() {
                Output::Items => "items",
                Output::Expr => "one expression",
            };
            Err(Failure::Malformed(format!(
                "the output does not parse as {what} ({e}): {}",
                abridged(&output.to_string(), 600)
            )))
        }
    }
}

/// The fuzz tests' settings, from the environment.
struct Settings {
    cases: u32,
    seed: u64,
}

fn settings() -> Settings {
    let var = |name: &str, default: u64| -> u64 {
        match std::env::var(name) {
            Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{name}={v} is not a number")),
            Err(_) => default,
        }
    };
    let cases = var("MOONCAKE_FUZZ_CASES", 1000);
    Settings { cases: u32::try_from(cases).unwrap_or(u32::MAX), seed: var("MOONCAKE_FUZZ_SEED", 0) }
}

/// Counts of what the inputs gave, printed at the end of a run.
#[derive(Default)]
struct Stats {
    inputs: u64,
    by_target: BTreeMap<Target, u64>,
    expanded: u64,
    errors: u64,
    untouched: u64,
    call_site_errors: BTreeMap<String, u64>,
    all_errors: BTreeMap<String, u64>,
    slowest: Duration,
    slowest_input: String,
    traced: usize,
}

/// The longest one expansion may take before the input counts as a hang.
const TOO_SLOW: Duration = Duration::from_secs(20);

/// Runs `settings().cases` inputs made by `make` from proptest's choice sequences.
fn fuzz(name: &'static str, make: fn(&[corpus::Seed], &[u32]) -> Case) {
    // The compiler runs macros on a thread of 8 MiB: so does the fuzz test (a test thread has
    // 2 MiB). An input that overflows it aborts the test (`has overflowed its stack`, named by
    // the thread): a bug as much as a panic.
    let run = std::thread::Builder::new()
        .name(name.into())
        .stack_size(8 << 20)
        .spawn(move || fuzz_on_this_thread(name, make))
        .expect("spawn the fuzz thread");
    if let Err(e) = run.join() {
        std::panic::resume_unwind(e);
    }
}

fn fuzz_on_this_thread(name: &str, make: fn(&[corpus::Seed], &[u32]) -> Case) {
    let Settings { cases, seed } = settings();
    let corpus = corpus::seeds();
    assert!(corpus.len() > 100, "the seed corpus has only {} inputs", corpus.len());
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..8 + name.len().min(24)].copy_from_slice(&name.as_bytes()[..name.len().min(24)]);
    let config =
        Config { cases, failure_persistence: None, max_shrink_iters: 4096, ..Config::default() };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &key));
    let stats = RefCell::new(Stats::default());
    // `MOONCAKE_FUZZ_TRACE=text` prints the first inputs with an error whose message contains
    // `text` (`@text`: an error at the call site).
    let trace = std::env::var("MOONCAKE_FUZZ_TRACE").ok();
    let start = Instant::now();
    let strategy = proptest::collection::vec(proptest::num::u32::ANY, 0..400);
    let result = runner.run(&strategy.boxed(), |choices| {
        let case = make(&corpus, &choices);
        let t = Instant::now();
        let verdict = run(&case);
        let took = t.elapsed();
        let mut s = stats.borrow_mut();
        s.inputs += 1;
        *s.by_target.entry(case.target).or_default() += 1;
        if took > s.slowest {
            s.slowest = took;
            s.slowest_input = case.target.show(&case.attr, &case.input);
        }
        drop(s);
        // Spans of this input are not needed any more; without this the thread's source map
        // grows with every input.
        proc_macro2::extra::invalidate_current_thread_spans();
        if took > TOO_SLOW {
            return Err(TestCaseError::fail(format!("the expansion took {took:?}")));
        }
        let mut s = stats.borrow_mut();
        match verdict {
            Ok(Verdict::Expanded) => s.expanded += 1,
            Ok(Verdict::Errors { messages }) => {
                s.errors += 1;
                if let Some(trace) = &trace
                    && s.traced < 5
                    && messages.iter().any(|(m, at_call_site)| match trace.strip_prefix('@') {
                        Some(t) => *at_call_site && m.contains(t),
                        None => m.contains(trace.as_str()),
                    })
                {
                    s.traced += 1;
                    println!(
                        "{name}: traced: {}",
                        case.target.show(&case.attr, &case.input).replace('\n', " ")
                    );
                }
                for (m, at_call_site) in messages {
                    let m = abridged(&m, 90);
                    if at_call_site {
                        *s.call_site_errors.entry(m.clone()).or_default() += 1;
                    }
                    *s.all_errors.entry(m).or_default() += 1;
                }
            }
            Ok(Verdict::Untouched) => s.untouched += 1,
            Err(f) => return Err(TestCaseError::fail(f.to_string())),
        }
        Ok(())
    });
    let s = stats.into_inner();
    let elapsed = start.elapsed();
    match result {
        Ok(()) => {
            let call_site: u64 = s.call_site_errors.values().sum();
            let mut common: Vec<(&String, &u64)> = s.call_site_errors.iter().collect();
            common.sort_by(|a, b| b.1.cmp(a.1));
            println!(
                "{name}: {cases} inputs (seed {seed}, {} seeds in the corpus) in {:.1} s: 0 \
                 panics, 0 malformed outputs; {} expanded without errors, {} with \
                 compile_error! ({call_site} errors at the call site), {} untouched; by macro: \
                 {:?}; slowest {:?}:\n{}",
                corpus.len(),
                elapsed.as_secs_f64(),
                s.expanded,
                s.errors,
                s.untouched,
                s.by_target,
                s.slowest,
                s.slowest_input,
            );
            println!("{name}: the commonest errors at the call site:");
            for (m, n) in common.iter().take(12) {
                println!("  {n:>6} {m}");
            }
            let mut all: Vec<(&String, &u64)> = s.all_errors.iter().collect();
            all.sort_by(|a, b| b.1.cmp(a.1));
            println!("{name}: the commonest errors ({} different messages):", all.len());
            for (m, n) in all.iter().take(25) {
                println!("  {n:>6} {m}");
            }
        }
        Err(TestError::Abort(why)) => panic!("{name}: proptest aborted: {why}"),
        Err(TestError::Fail(why, choices)) => {
            let case = make(&corpus, &choices);
            let first = run(&case);
            let minimal = shrink::minimise(&case, |c| same_kind(&run(c), &first));
            let last = run(&minimal);
            panic!(
                "{name} (seed {seed}) found a failing input after {} inputs: {why}\n\
                 shrunk to:\n{}\n=> {}\n\nchoice sequence: {choices:?}",
                s.inputs,
                minimal.target.show(&minimal.attr, &minimal.input),
                last.err().map_or_else(|| "(passes once shrunk)".to_string(), |f| f.to_string()),
            );
        }
    }
}

/// Whether two results fail the same way (a panic, or a malformed output).
fn same_kind(a: &Result<Verdict, Failure>, b: &Result<Verdict, Failure>) -> bool {
    match (a, b) {
        (Err(Failure::Panic(x)), Err(Failure::Panic(y))) => panic_place(x) == panic_place(y),
        (Err(Failure::Malformed(_)), Err(Failure::Malformed(_))) => true,
        _ => false,
    }
}

/// The `file:line` of a panic message (`panicked at file:line:col:`), so that shrinking keeps
/// the bug it started with.
fn panic_place(message: &str) -> &str {
    message.split_once(":\n").map_or(message, |(place, _)| place)
}

#[test]
fn fuzz_mutated_corpus() {
    fuzz("fuzz_mutated_corpus", |corpus, choices| {
        mutate::mutated(corpus, &mut choices::Choices::new(choices))
    });
}

#[test]
fn fuzz_generated_items() {
    fuzz("fuzz_generated_items", |_, choices| {
        generate::generated(&mut choices::Choices::new(choices))
    });
}

/// Every seed as it is: the checks accept the real inputs' expansions, and the inputs of the
/// tests (which compile) expand without errors.
#[test]
fn every_seed_expands() {
    let corpus = corpus::seeds();
    let mut with_errors = 0;
    for seed in &corpus {
        let case = Case { target: seed.target, attr: lex(&seed.attr), input: lex(&seed.input) };
        let verdict = run(&case).unwrap_or_else(|f| {
            panic!("{}: {f}\n{}", seed.origin, case.target.show(&case.attr, &case.input))
        });
        let compiled = seed.origin.starts_with("tests/") || seed.origin.starts_with("examples/");
        if compiled && matches!(verdict, Verdict::Errors { .. }) {
            with_errors += 1;
        }
        proc_macro2::extra::invalidate_current_thread_spans();
    }
    // The companions of a function (its signature given to `zero_adjoint!`, ..) may be refused;
    // most inputs are not.
    assert!(with_errors * 4 < corpus.len(), "{with_errors} of {} seeds give errors", corpus.len());
}

/// The harness catches a panic and reports its place and message.
#[test]
fn a_panic_is_caught_and_reported() {
    install_quiet_hook();
    QUIET.with(|q| q.set(true));
    let r = catch_unwind(|| panic!("boom"));
    QUIET.with(|q| q.set(false));
    assert!(r.is_err());
    let message = LAST_PANIC.with(|p| p.borrow_mut().take()).expect("the hook recorded it");
    assert!(message.contains("boom") && message.contains("fuzz/mod.rs"), "{message}");
}

/// The output checks refuse a malformed output.
#[test]
fn malformed_output_is_refused() {
    let case =
        Case { target: Target::ValueAndGradient, attr: TokenStream::new(), input: lex("f(x)") };
    let two_errors = lex("::core::compile_error!{\"a\"} ::core::compile_error!{\"b\"}");
    assert!(matches!(check(&case, &two_errors), Err(Failure::Malformed(_))));
    assert!(matches!(check(&case, &lex("::core::compile_error!{}")), Err(Failure::Malformed(_))));
    assert_eq!(check(&case, &lex("{ f(x) }")), Ok(Verdict::Expanded));
    let item =
        Case { target: Target::Differentiable, attr: TokenStream::new(), input: lex("fn f(x)") };
    assert_eq!(check(&item, &lex("fn f(x)")), Ok(Verdict::Untouched));
    assert!(matches!(check(&item, &lex("fn g(x)")), Err(Failure::Malformed(_))));
}

/// Prints the expansion of one input, for investigating a failure: `MOONCAKE_FUZZ_SHOW` names
/// the macro (`Differentiable`, `ZeroAdjoint`, .. as in [`Target`]), `MOONCAKE_FUZZ_ATTR` the
/// attribute's arguments, `MOONCAKE_FUZZ_INPUT` the input.
/// `cargo test -p mooncake-macros show_expansion -- --ignored --nocapture`
#[test]
#[ignore = "a tool: run by hand with MOONCAKE_FUZZ_SHOW and MOONCAKE_FUZZ_INPUT"]
fn show_expansion() {
    let var = |n: &str| std::env::var(n).unwrap_or_default();
    let target = [
        Target::Differentiable,
        Target::Overlay,
        Target::DeriveTangent,
        Target::Frule,
        Target::Rrule,
        Target::ZeroAdjoint,
        Target::FromRrule,
        Target::ValueAndDerivative,
        Target::ValueAndGradient,
        Target::ValueAndPullback,
        Target::TestRule,
        Target::CheckRule,
        Target::Hvp,
        Target::Hessian,
    ]
    .into_iter()
    .find(|t| format!("{t:?}") == var("MOONCAKE_FUZZ_SHOW"))
    .expect("MOONCAKE_FUZZ_SHOW names a macro");
    let (attr, input) = (lex(&var("MOONCAKE_FUZZ_ATTR")), lex(&var("MOONCAKE_FUZZ_INPUT")));
    let output = target.expand(attr.clone(), input.clone());
    println!("{output}");
    println!("=> {:?}", check(&Case { target, attr, input }, &output));
}

//! How long `#[differentiable]` takes to expand each function of the benchmark problems
//! (`benches/src/problems/`), measured on the macro's own expansion function.
//!
//! A proc-macro crate exports only its macros, so this bench compiles the macro's module
//! itself (`src/differentiable/`, declared as in `src/lib.rs`, with the three modules it uses
//! for nested gradients: `api`, `from_rrule`, `rule_sig`); it works on `proc_macro2` tokens,
//! which run outside a compiler too.
//! `cargo bench -p mooncake-macros --bench expand` prints one criterion entry per function,
//! `expand/NAME`; `bash benches/report.sh` copies the medians into `BENCHMARKS.md`.
#![allow(dead_code, unreachable_pub)]

#[path = "../src/api.rs"]
mod api;
#[path = "../src/differentiable/mod.rs"]
mod differentiable;
#[path = "../src/from_rrule.rs"]
mod from_rrule;
#[path = "../src/rule_sig.rs"]
mod rule_sig;

use criterion::{Criterion, criterion_group, criterion_main};
use proc_macro2::TokenStream;
use quote::ToTokens;
use std::hint::black_box;

/// The sources of the benchmark problems.
const SOURCES: [(&str, &str); 6] = [
    ("sums.rs", include_str!("../../benches/src/problems/sums.rs")),
    ("kron.rs", include_str!("../../benches/src/problems/kron.rs")),
    ("mlp.rs", include_str!("../../benches/src/problems/mlp.rs")),
    ("gmm.rs", include_str!("../../benches/src/problems/gmm.rs")),
    ("ode.rs", include_str!("../../benches/src/problems/ode.rs")),
    ("recursive.rs", include_str!("../../benches/src/problems/recursive.rs")),
];

/// Every `#[differentiable]` function of the sources: its name, the attribute's arguments and
/// the function without the attribute (what the compiler hands the macro).
fn differentiable_functions() -> Vec<(String, TokenStream, TokenStream)> {
    let mut out = Vec::new();
    for (file, source) in SOURCES {
        let parsed = syn::parse_file(source).unwrap_or_else(|e| panic!("{file}: {e}"));
        for item in parsed.items {
            let syn::Item::Fn(mut func) = item else { continue };
            let Some(at) = func.attrs.iter().position(|a| a.path().is_ident("differentiable"))
            else {
                continue;
            };
            let attr = func.attrs.remove(at);
            let args = match attr.meta {
                syn::Meta::List(list) => list.tokens,
                _ => TokenStream::new(),
            };
            out.push((func.sig.ident.to_string(), args, func.into_token_stream()));
        }
    }
    out
}

fn expand(c: &mut Criterion) {
    let functions = differentiable_functions();
    assert!(functions.len() >= 10, "found only {} functions", functions.len());
    let mut group = c.benchmark_group("expand");
    for (name, args, item) in &functions {
        let out = differentiable::expand(args.clone(), item.clone()).to_string();
        assert!(!out.contains("compile_error"), "{name} expands to an error:\n{out}");
        assert!(out.contains(&format!("{name}_rrule")), "{name}: no reverse rule in the expansion");
        println!("expand/{name}: {} bytes of tokens", out.len());
        group.bench_function(name.as_str(), |b| {
            b.iter(|| differentiable::expand(black_box(args.clone()), black_box(item.clone())))
        });
    }
    group.finish();
}

criterion_group!(benches, expand);
criterion_main!(benches);

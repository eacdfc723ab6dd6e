use mooncake_runtime::prelude::*;

// `Option`s are supported made and taken apart at once (tests/tests/options.rs) and as values
// (tests/tests/enum_values.rs); a guard in a `match` on one made at once, and one holding a
// reference kept in a variable, are not, and each gets a message saying what to write.
#[differentiable]
fn f(x: &[f64], o: Option<f64>) -> f64 {
    let a = match x.get(1) {
        Some(v) if *v > 0.0 => *v,
        _ => 0.0,
    };
    let b = if let Some(v) = o { v } else { 0.0 };
    let Some(c) = o else { return 0.0; };
    let d = x.first().copied().map_or(0.0, |v| v * 2.0);
    let e = x.last();
    a + b + c + d + *e.unwrap()
}

fn main() {}

use mooncake_runtime::prelude::*;

fn cube(x: f64) -> f64 {
    x * x * x
}

fn cube_chainrule(x: f64) -> (f64, impl FnOnce(f64) -> (f64,)) {
    (cube(x), move |dy| (3.0 * x * x * dy,))
}

// No chain rule named.
from_rrule!(fn cube(x: f64) -> f64);

// `->` instead of `=>`.
from_rrule!(fn cube(x: f64) -> f64 -> cube_chainrule);

// Not a signature.
from_rrule!(cube => cube_chainrule);

// A mutating argument and a reference output.
fn push(v: &mut Vec<f64>, x: f64) -> &f64 {
    v.push(x);
    &v[0]
}
from_rrule!(fn push(v: &mut Vec<f64>, x: f64) -> &f64 => push_chainrule);

fn main() {
    let _ = (cube, cube_chainrule, push);
}

use mooncake_runtime::prelude::*;

fn count(x: &[f64]) -> usize {
    x.len()
}

// A body.
zero_adjoint! {
    fn count(x: &[f64]) -> usize { x.len() }
}

// A missing `;` between signatures.
zero_adjoint! {
    fn count(x: &[f64]) -> usize
    fn count(x: &[f64]) -> usize;
}

// A receiver.
zero_adjoint! {
    fn len(&self) -> usize;
}

// A pattern instead of a name.
zero_adjoint! {
    fn count((a, b): (f64, f64)) -> usize;
}

// Nothing at all.
zero_adjoint! {}

// `impl Trait`.
zero_adjoint! {
    fn count(x: impl AsRef<[f64]>) -> usize;
}

fn main() {
    let _ = count;
}

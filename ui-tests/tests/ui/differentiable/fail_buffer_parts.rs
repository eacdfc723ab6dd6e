use mooncake_runtime::prelude::*;

// A part of a buffer kept in a local is read and written through the buffer: a macro naming
// it is refused (it would see the part itself), and so is `split_at_mut` of a buffer that is
// not named by a variable or a field.
#[differentiable]
fn f(x: &mut [f64]) -> f64 {
    let (a, b) = x.split_at_mut(1);
    println!("{:?}", a);
    a[0] + b[0]
}

#[differentiable]
fn g(x: &mut Vec<f64>, k: usize) -> f64 {
    let (a, _b) = (&mut x[..]).split_at_mut(k);
    a[0]
}

#[differentiable]
fn h(x: &mut [f64]) -> f64 {
    let (a, b) = x.split_at_mut(1);
    println!("{a:?}");
    a[0] + b[0]
}

fn main() {}

use mooncake_runtime::prelude::*;

fn largest(x: &[f64]) -> &f64 {
    x.iter().fold(&x[0], |m, v| if v > m { v } else { m })
}

fn pick(x: &mut [f64]) -> &mut f64 {
    &mut x[0]
}

fn pair(x: &[f64]) -> (&f64, usize) {
    (&x[0], x.len())
}

zero_adjoint! {
    fn largest(x: &[f64]) -> &f64;
    fn pick(x: &[f64]) -> &mut f64;
    fn pair(x: &[f64]) -> (&f64, usize);
}

fn main() {
    let _ = (largest, pick, pair);
}

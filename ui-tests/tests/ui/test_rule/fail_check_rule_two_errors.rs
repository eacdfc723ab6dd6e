use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {
    // Two mistakes at once, where an expression must stand: each is reported at its tokens.
    let r = check_rule!(f(1.5), fruel = f_frule, mode = sideways);
    let _ = r;
}

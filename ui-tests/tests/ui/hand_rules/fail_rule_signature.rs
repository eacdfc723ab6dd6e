use mooncake_runtime::prelude::*;

fn scale(x: &[f64], a: f64) -> f64 {
    x[0] * a
}

// The primal type of an argument is not the function's.
#[frule(for = scale)]
fn scale_frule(x: Dual<&[f64], &[f64]>, a: Dual<f32, f32>) -> Dual<f64, f64> {
    Dual::new(x.primal[0] * a.primal as f64, 0.0)
}

// The tangent type is not the one `Primal` gives the argument.
#[rrule(for = scale)]
fn scale_rrule(
    x: CoDual<&[f64], Vec<f64>>,
    a: CoDual<f64, NoFData>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, f64)) {
    let _ = x;
    (CoDual::new(0.0, NoFData), move |_| (NoRData, a.primal))
}

fn twice(x: f64) -> f64 {
    2.0 * x
}

// An argument that is not a `Dual`.
#[frule(for = twice)]
fn twice_frule(x: f64) -> Dual<f64, f64> {
    Dual::new(2.0 * x, 0.0)
}

fn main() {}

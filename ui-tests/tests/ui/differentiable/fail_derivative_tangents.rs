use mooncake_runtime::prelude::*;

#[differentiable]
fn scale(x: &[f64], a: f64) -> f64 {
    x[0] * a
}

fn main() {
    let x = vec![1.0, 2.0];
    // Tangents given as one tuple must have one per argument.
    let ts = (vec![1.0, 0.0],);
    let _ = value_and_derivative!(scale(&x, 2.0), ts);
    // `NoTangent` stands only for an argument with no differentiable part.
    let _ = value_and_derivative!(scale(&x, 2.0), (vec![1.0, 0.0], NoTangent));
    // A tangent of the wrong type, by name.
    let _ = value_and_derivative!(scale(&x, 2.0), (vec![1.0, 0.0], 1.0_f32));
}

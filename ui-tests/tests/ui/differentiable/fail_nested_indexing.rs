use mooncake_runtime::prelude::*;

// Reverse mode reads and writes buffers of buffers (`m[i][j]`) and reads structs inside
// buffers (`layers[k].b[o]`); a write into a struct inside a buffer is refused with a message
// that points at it. Forward mode covers it.
#[derive(Tangent, Clone, Debug)]
struct Layer {
    b: Vec<f64>,
}

#[differentiable]
fn shift_biases(layers: &mut Vec<Layer>, x: f64) -> f64 {
    for k in 0..layers.len() {
        layers[k].b[0] = x * x;
    }
    layers[0].b[0]
}

fn main() {
    let mut layers = vec![Layer { b: vec![1.0, 2.0] }];
    let _ = value_and_derivative!(
        shift_biases(&mut layers, 1.5),
        (vec![LayerTangent { b: vec![0.0; 2] }], 1.0)
    );
    let _ = value_and_gradient!(shift_biases(&mut layers, 1.5));
}

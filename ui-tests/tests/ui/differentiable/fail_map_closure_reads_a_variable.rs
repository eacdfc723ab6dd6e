use mooncake_runtime::prelude::*;

// `mapv(|v| ..)` (and `map` of a matrix) runs the closure as a function of one element: it may
// read only its parameter, constants and functions, not a variable of the function.
trait MapV {
    fn mapv(&self, f: impl Fn(f64) -> f64) -> Vec<f64>;
}

impl MapV for Vec<f64> {
    fn mapv(&self, f: impl Fn(f64) -> f64) -> Vec<f64> {
        self.iter().map(|&v| f(v)).collect()
    }
}

#[differentiable]
fn f(g: &Vec<f64>, scale: f64) -> f64 {
    let m = g.mapv(|v| v * scale);
    m[0]
}

fn main() {}

use mooncake_runtime::prelude::*;

// The closure given to `mapv` (or to `map` of a matrix) takes its element by value, as a plain
// name: ndarray's `map`, which passes `&v`, is written `mapv`.
trait MapV {
    fn mapv(&self, f: impl Fn(&f64) -> f64) -> Vec<f64>;
}

impl MapV for Vec<f64> {
    fn mapv(&self, f: impl Fn(&f64) -> f64) -> Vec<f64> {
        self.iter().map(f).collect()
    }
}

#[differentiable]
fn f(g: &Vec<f64>) -> f64 {
    let m = g.mapv(|&v| v * 2.0);
    m[0]
}

fn main() {}

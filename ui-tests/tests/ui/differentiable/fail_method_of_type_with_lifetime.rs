use mooncake_runtime::prelude::*;

// A method of a type with a lifetime parameter (a struct holding borrowed data, as argmin
// problems often do): forward mode covers it; reverse mode does not yet, and says so where its
// rule is called, pointing at the lifetime. A free function taking `&Data` is covered.
#[derive(Tangent, Clone, Debug)]
pub struct Data<'a> {
    pub x: &'a [f64],
}

#[differentiable]
impl<'a> Data<'a> {
    fn cost(&self, p: f64) -> f64 {
        self.x[0] * p * p
    }
}

fn main() {
    let x = vec![0.5, 1.0];
    let d = Data { x: &x };
    let _ = value_and_gradient!(Data::cost(Const(&d), 0.7));
}

// A function generic over a trait of the user's own: refused at the bound, since the derived
// rules cannot reach the rules of the trait's methods through the type parameter. The same in
// an `impl` block generic over one.
use mooncake_runtime::prelude::*;

pub trait Potential {
    fn energy(&self, x: f64) -> f64;
}

#[derive(Tangent, Clone, Debug)]
pub struct Well {
    pub k: f64,
}

#[differentiable]
impl Potential for Well {
    fn energy(&self, x: f64) -> f64 {
        self.k * x * x
    }
}

#[differentiable]
fn total_energy<P: Potential>(p: &P, x: f64) -> f64 {
    p.energy(x) + p.energy(2.0 * x)
}

#[derive(Tangent, Clone, Debug)]
pub struct Chain<P> {
    pub links: Vec<P>,
}

#[differentiable]
impl<P> Chain<P>
where
    P: Potential + Clone,
{
    fn first(&self, x: f64) -> f64 {
        self.links[0].energy(x)
    }
}

fn main() {}

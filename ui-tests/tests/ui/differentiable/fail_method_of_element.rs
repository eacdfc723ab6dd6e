use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
struct Body {
    pos: [f64; 3],
    mass: f64,
}

#[differentiable]
impl Body {
    fn dist2(&self, other: &Body) -> f64 {
        let mut s = 0.0;
        for k in 0..3 {
            let d = self.pos[k] - other.pos[k];
            s += d * d;
        }
        s
    }
}

// Forward mode covers a method of a user type called on an element of a buffer it may write
// (`&mut`, or held by the function); reverse mode does not yet, and says so at the method. (An
// element behind a shared reference is read by its methods, and reverse mode copies it:
// `tests/tests/lent_elements.rs`.)
#[differentiable]
fn potential(bodies: &mut [Body]) -> f64 {
    let mut e = 0.0;
    for i in 0..bodies.len() {
        for j in (i + 1)..bodies.len() {
            e -= bodies[i].mass * bodies[j].mass / bodies[i].dist2(&bodies[j]).sqrt();
        }
    }
    e
}

fn main() {
    let mut b = vec![Body { pos: [0.0; 3], mass: 1.0 }, Body { pos: [1.0; 3], mass: 1.0 }];
    let _ = value_and_gradient!(potential(&mut b));
}

use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
struct Body {
    pos: [f64; 3],
    vel: [f64; 3],
}

#[derive(Tangent, Clone, Debug)]
struct World {
    bodies: Vec<Body>,
}

#[differentiable]
impl Body {
    fn advance(&mut self, dt: f64) {
        for k in 0..3 {
            self.pos[k] += dt * self.vel[k];
        }
    }
}

// Forward mode covers a method of a user type called on an element of a buffer inside a struct
// the function builds itself; reverse mode does not yet, and says so at the method. (On an
// element of a buffer argument, `&[Body]`, `&mut [Body]`, `Vec<Body>`, a field of a `&mut`
// argument, or of a buffer the function builds, `init.to_vec()`, `Vec::new()` and `push`,
// reverse mode runs the method on a copy of the element, put back after it:
// `tests/tests/written_elements.rs`.)
#[differentiable]
fn moved(a: &Body, b: &Body, dt: f64) -> f64 {
    let mut world = World { bodies: vec![a.clone(), b.clone()] };
    world.bodies[0].advance(dt);
    world.bodies[0].pos[0] + world.bodies[1].pos[1]
}

fn main() {
    let b = Body { pos: [0.0; 3], vel: [1.0; 3] };
    let _ = value_and_gradient!(moved(&b, &b, 0.1));
}

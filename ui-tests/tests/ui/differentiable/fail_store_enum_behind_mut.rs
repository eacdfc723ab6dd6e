use mooncake_runtime::prelude::*;

// Enums and `Option`s are values of derived code (tests/tests/enum_values.rs), but reverse mode
// does not yet store one through a `&mut` reference (a field of `&mut self` here).
#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
enum Phase {
    Warmup(f64),
    Run,
}

#[derive(Tangent, Clone, Debug)]
struct Sim {
    x: f64,
    phase: Phase,
}

#[differentiable]
fn advance(s: &mut Sim, dt: f64) {
    let d = match s.phase {
        Phase::Warmup(d) => d,
        Phase::Run => 0.0,
    };
    s.x -= dt * d * s.x;
    s.phase = Phase::Run;
}

fn main() {
    let mut s = Sim { x: 1.0, phase: Phase::Warmup(0.5) };
    let _ = value_and_gradient!(advance(&mut s, 0.1));
}

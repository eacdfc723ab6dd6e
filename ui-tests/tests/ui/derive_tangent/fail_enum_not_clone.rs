use mooncake_runtime::prelude::*;

#[derive(Tangent)]
enum Mode {
    Fast,
    Slow,
}

#[derive(Tangent)]
enum Act {
    Relu,
    Leaky(f64),
}

fn main() {}

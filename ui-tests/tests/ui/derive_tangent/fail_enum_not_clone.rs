use mooncake_runtime::prelude::*;

#[derive(Tangent)]
enum Mode {
    Fast,
    Slow,
}

fn main() {}

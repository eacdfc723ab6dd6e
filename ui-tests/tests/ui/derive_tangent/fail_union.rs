use mooncake_runtime::prelude::*;

#[derive(Tangent)]
union Bits {
    f: f64,
    u: u64,
}

fn main() {}

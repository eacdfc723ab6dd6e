use mooncake_runtime::prelude::*;

#[derive(Tangent)]
#[repr(C, packed)]
struct Packed {
    x: f64,
    n: u8,
}

#[derive(Tangent)]
#[repr(packed(2))]
struct Packed2 {
    x: f64,
}

fn main() {}

use mooncake_runtime::prelude::*;
use std::cell::Cell;

#[derive(Tangent)]
struct Gen<T> {
    x: T,
}

fn main() {
    let g = Gen { x: Cell::new(1.0) };
    let _ = g.zero_tangent();
}

use mooncake_runtime::prelude::*;
use std::cell::Cell;

/// A user type without `#[derive(Tangent)]`.
struct Config {
    rate: f64,
}

#[derive(Tangent)]
struct Model {
    w: Vec<f64>,
    config: Config,
    cells: Vec<Cell<f64>>,
}

#[derive(Tangent)]
struct View<'a> {
    config: &'a Config,
}

fn main() {
    let _ = Config { rate: 0.1 }.rate;
}

use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone)]
enum Shape {
    Empty,
    Circle(f64),
    Rect { w: f64, h: f64 },
}

#[derive(Tangent, Clone)]
enum Named {
    Origin,
    Point { x: f64, y: f64 },
}

fn main() {}

use mooncake_runtime::prelude::*;

// Tuple variants with data are supported (tests/tests/enum_values.rs); variants with named
// fields and generic enums with data are not.
#[derive(Tangent, Clone)]
enum Shape {
    Empty,
    Circle(f64),
    Rect { w: f64, h: f64 },
}

#[derive(Tangent, Clone)]
enum Either<T> {
    Left(T),
    Right(f64),
}

fn main() {}

use mooncake_runtime::prelude::*;
use std::sync::Mutex;

static SCALE: Mutex<f64> = Mutex::new(2.0);
static mut TOTAL: f64 = 0.0;

#[differentiable]
fn f(x: f64) -> f64 {
    let _scale = SCALE.lock();
    x * 2.0
}

#[differentiable]
fn g(x: f64) -> f64 {
    unsafe {
        TOTAL += x;
    }
    x
}

fn main() {}

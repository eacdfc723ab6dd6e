use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter().chain(y.iter()) {
        if *v > 1.0 {
            break;
        }
        s += v;
    }
    let i = x.iter().map_while(|v| v.is_finite().then_some(*v)).count();
    let m = x.windows(2).max_by(|a, b| a[0].total_cmp(&b[0])).unwrap()[1];
    let k = x.iter().copied().max_by(|a, b| if a < b { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater }).unwrap();
    let o = x.iter().copied().reduce(f64::max);
    s + m + k + x[i] + x.iter().scan(0.0, |acc, v| if *v > 0.0 { Some(*acc + v) } else { None }).sum::<f64>()
}

fn main() {}

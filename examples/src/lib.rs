//! Helpers shared by the examples (`cargo run --release --example NAME`, the programs beside
//! this crate's manifest): a small deterministic random generator for their synthetic data,
//! finite differences, and the way an example reports its checks.

/// A small deterministic random generator (SplitMix64), so that each example draws the same
/// synthetic data on every machine without a dependency.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform on `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u = 1.0 - self.uniform(); // in (0, 1]
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// The gradient of `f` at `x` by central finite differences with step `h`.
pub fn finite_difference_gradient(f: impl Fn(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
    let mut point = x.to_vec();
    (0..x.len())
        .map(|i| {
            point[i] = x[i] + h;
            let plus = f(&point);
            point[i] = x[i] - h;
            let minus = f(&point);
            point[i] = x[i];
            (plus - minus) / (2.0 * h)
        })
        .collect()
}

/// The largest `|a_i - b_i|` relative to `1 + |b_i|`; infinite if the lengths differ.
pub fn max_relative_difference(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter().zip(b).map(|(u, v)| (u - v).abs() / (1.0 + v.abs())).fold(0.0, f64::max)
}

/// The Euclidean norm of `v`.
pub fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// `v` printed with `digits` decimals, as `[a, b, ..]`.
pub fn show(v: &[f64], digits: usize) -> String {
    let parts: Vec<String> = v.iter().map(|x| format!("{x:.digits$}")).collect();
    format!("[{}]", parts.join(", "))
}

/// Collects the checks an example makes and ends it: exit status 0 if every check held, else
/// one `FAILED: ..` line per failed check and exit status 1.
#[derive(Debug, Default)]
pub struct Checks {
    failures: Vec<String>,
}

impl Checks {
    /// No checks yet.
    pub fn new() -> Self {
        Checks::default()
    }

    /// Records `what` as failed unless `ok`.
    pub fn check(&mut self, ok: bool, what: impl Into<String>) {
        if !ok {
            self.failures.push(what.into());
        }
    }

    /// Prints `summary` with `ok` if every check held and returns; otherwise prints each failure
    /// and exits with status 1.
    pub fn finish(self, summary: &str) {
        if self.failures.is_empty() {
            println!("{summary}: ok");
        } else {
            for failure in &self.failures {
                println!("FAILED: {failure}");
            }
            std::process::exit(1);
        }
    }
}

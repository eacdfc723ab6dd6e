//! Derived tangents compile without warnings, documentation lints included, in a public module.
#![deny(warnings, missing_docs, rust_2018_idioms, unused_qualifications)]

use mooncake_runtime::prelude::*;

/// A public module, so that `missing_docs` looks at the generated items.
pub mod model {
    use mooncake_runtime::prelude::*;

    /// A model.
    #[derive(Tangent, Clone, Debug)]
    pub struct Model {
        /// Weights.
        pub w: Vec<f64>,
        /// Bias.
        pub b: f64,
        /// Steps.
        pub n: usize,
    }

    /// A pair.
    #[derive(Tangent, Clone, Debug)]
    pub struct Pair(pub f64, pub Vec<f32>);

    /// Nothing.
    #[derive(Tangent, Clone, Debug)]
    pub struct Unit;

    /// Generic, with a lifetime and a const parameter.
    #[derive(Tangent, Clone, Debug)]
    pub struct Gen<'a, T: Clone, const N: usize>
    where
        T: Default,
    {
        /// A borrowed slice.
        pub x: &'a [T],
        /// An array.
        pub a: [T; N],
        /// Nested.
        pub inner: Pair,
    }

    /// A private field of a private type in a public struct.
    #[derive(Tangent, Clone, Debug)]
    pub struct WithPrivate {
        hidden: Hidden,
        /// Public.
        pub x: f64,
    }

    #[derive(Tangent, Clone, Debug)]
    struct Hidden {
        y: f64,
    }

    impl WithPrivate {
        /// A value.
        pub fn new() -> Self {
            WithPrivate { hidden: Hidden { y: 1.0 }, x: 2.0 }
        }
        /// Reads the private field.
        pub fn y(&self) -> f64 {
            self.hidden.y
        }
    }

    /// Modes.
    #[derive(Tangent, Clone, Copy, Debug)]
    pub enum Mode {
        /// Fast.
        Fast,
        /// Slow.
        Slow = 10,
    }

    /// An enum with data: its tangent's flat view is its variant's fields.
    #[derive(Tangent, Clone, Debug)]
    pub enum Setting {
        /// None.
        Off,
        /// Two fields.
        Scaled(f64, Vec<f64>),
    }

    /// No variants.
    #[derive(Tangent, Clone, Debug)]
    pub enum Never {}

    /// Unsized.
    #[derive(Tangent)]
    pub struct Tail {
        /// Scale.
        pub s: f64,
        /// The rest.
        pub rest: [f64],
    }
}

fn main() {
    use model::*;
    let m = Model { w: vec![1.0], b: 2.0, n: 3 };
    let t: ModelTangent = m.zero_tangent();
    assert_eq!(t.w, vec![0.0]);
    let data = [1.0_f32, 2.0];
    let g = Gen::<'_, f32, 2> { x: &data, a: [3.0, 4.0], inner: Pair(1.0, vec![2.0]) };
    let gt: GenTangent<'_, f32, 2> = g.zero_tangent();
    assert_eq!(gt.x, vec![0.0, 0.0]);
    assert_eq!(gt.inner.1, vec![0.0]);
    let w = WithPrivate::new();
    let wt = w.zero_tangent();
    assert_eq!(wt.x, 0.0);
    assert_eq!(w.y(), 1.0);
    assert!(Mode::Fast.approx_eq(&Mode::Fast, 0.0, 0.0));
    let _ = Unit.zero_tangent();
    let r = &m;
    let _: ModelShadow = <&Model as Primal>::zero_fdata(&r);
    // The flat views (`FlatTangent`) of the derived tangents.
    assert_eq!(t.flat_len(), 2);
    assert_eq!(gt.flat_len(), 6);
    assert_eq!(Unit.zero_tangent().flat_len(), 0);
    let mut wt = wt;
    assert!(wt.set_flat(1, 3.0));
    assert_eq!(wt.x, 3.0);
    let mut ht = Setting::Scaled(1.0, vec![2.0]).zero_tangent();
    assert!(ht.set_flat(1, 4.0));
    let mut flat = Vec::new();
    ht.extend_flat(&mut flat);
    assert_eq!(flat, [0.0, 4.0]);
}


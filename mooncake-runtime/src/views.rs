//! Arguments that derived code holds in another form than the caller passes them: views of
//! arrays (ndarray's `ArrayView1`, `ArrayView2`, with the feature `ndarray`), which a derived
//! rule copies into owned arrays at entry, keeping their tangents and shadows, so that the rules
//! of owned arrays apply to them (see `nd::views`).

/// A rule's argument (a `Dual` or a `CoDual`) that derived code holds as another value: a view
/// as an owned array with the same tangent or shadow.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an argument type derived code can hold",
    label = "a view argument",
    note = "views of ndarray's arrays (`ArrayView1<f64>`, `ArrayView2<f64>`) need the `ndarray` feature of `mooncake-runtime`"
)]
pub trait OwnedArg {
    /// What derived code holds.
    type Owned;
    /// The argument, as derived code holds it.
    fn owned_arg(self) -> Self::Owned;
}

/// The free-function form generated code calls: `let a = owned_arg(a);` at the entry of a
/// derived rule, for an argument declared with a view type.
#[inline]
pub fn owned_arg<A: OwnedArg>(a: A) -> A::Owned {
    a.owned_arg()
}

//! UI tests of `#[derive(Tangent)]`: what it refuses, what the user sees when a field has no
//! tangent, and what must compile warning-free. The `.stderr` files are committed; regenerate them
//! with `TRYBUILD=overwrite` and read them before committing.

#[test]
fn ui_derive_tangent() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/derive_tangent/fail_*.rs");
    cases.pass("tests/ui/derive_tangent/pass_*.rs");
}

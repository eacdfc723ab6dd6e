//! UI tests of `#[differentiable]`: each unsupported construct is refused with a compile error
//! at the offending tokens that says what to do instead, and generated code compiles
//! warning-free. The `.stderr` files are committed; regenerate them with `TRYBUILD=overwrite`
//! and read them before committing.

#[test]
fn ui_differentiable() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/differentiable/fail_*.rs");
    cases.pass("tests/ui/differentiable/pass_*.rs");
}

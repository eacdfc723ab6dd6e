//! UI tests of `test_rule!` and `check_rule!`: malformed input gives a compile error at the
//! offending tokens, also where the macro stands as an expression. The `.stderr` files are
//! committed; regenerate them with `TRYBUILD=overwrite` and read them before committing.

#[test]
fn ui_test_rule() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/test_rule/fail_*.rs");
}

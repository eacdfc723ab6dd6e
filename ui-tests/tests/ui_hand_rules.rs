//! UI tests of `zero_adjoint!` and `from_rrule!`: refused signatures and malformed input give a
//! compile error at the offending tokens that says why and what to do instead, and generated
//! rules compile warning-free. The `.stderr` files are committed; regenerate them with
//! `TRYBUILD=overwrite` and read them before committing.

#[test]
fn ui_hand_rules() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/hand_rules/fail_*.rs");
    cases.pass("tests/ui/hand_rules/pass_*.rs");
}

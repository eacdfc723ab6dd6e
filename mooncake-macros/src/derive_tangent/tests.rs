//! Unit tests of the expansion as tokens: what is refused, that nothing panics, and the shape of
//! the output. The behaviour of the generated code is tested in `tests/tests/derive_tangent.rs`
//! and the messages in `ui-tests/tests/ui/derive_tangent/`.

use super::expand;
use proc_macro2::{TokenStream, TokenTree};
use quote::quote;

fn expand_str(input: TokenStream) -> String {
    expand(input).to_string()
}

/// Whether `output` is `::core::compile_error! {..}` invocations and nothing else.
fn is_only_errors(output: &TokenStream) -> bool {
    let trees: Vec<TokenTree> = output.clone().into_iter().collect();
    !trees.is_empty()
        && trees.chunks(8).all(|c| {
            c.len() == 8
                && matches!(&c[2], TokenTree::Ident(i) if i == "core")
                && matches!(&c[5], TokenTree::Ident(i) if i == "compile_error")
                && matches!(&c[7], TokenTree::Group(_))
        })
}

#[test]
fn a_struct_gets_five_siblings_and_a_primal_impl() {
    let out = expand_str(quote! {
        pub struct S { pub w: Vec<f64>, pub b: f64, n: usize }
    });
    for name in ["STangent", "SFData", "SRData", "SShadow", "SHandle"] {
        assert!(out.contains(&format!("pub struct {name}")), "{name} in {out}");
    }
    assert!(out.contains(":: mooncake_runtime :: __private :: Primal for S"));
    assert!(out.contains("type Tangent = STangent"));
    assert!(!out.contains("compile_error"));
    // Concrete field types are bounded higher-ranked, and checked once each.
    assert!(
        out.contains(
            "for < '__mooncake > Vec < f64 > : :: mooncake_runtime :: __private :: Primal"
        )
    );
    assert_eq!(out.matches("__mooncake_field_has_tangent :: < Vec < f64 > >").count(), 1);
}

#[test]
fn generic_parameters_are_bounded_plainly_and_kept_used() {
    let out = expand_str(quote! {
        struct G<'a, T, const N: usize> { x: &'a [T], a: [f64; N] }
    });
    assert!(out.contains("& 'a [T] : :: mooncake_runtime :: __private :: Primal"));
    assert!(out.contains("[f64 ; N] : :: mooncake_runtime :: __private :: Primal"));
    assert!(out.contains("pub _marker : :: mooncake_runtime :: __private :: core :: marker :: PhantomData < (fn () -> & 'a () , fn () -> * const T ,) >"));
    // Neither field type can be checked without its parameters.
    assert!(!out.contains("__mooncake_field_has_tangent ::"));
}

#[test]
fn a_lifetime_named_like_the_bound_lifetime_is_avoided() {
    let out = expand_str(quote! {
        struct G<'__mooncake> { x: &'__mooncake [f64], y: f64 }
    });
    assert!(out.contains("for < '__mooncake_ > f64"));
}

#[test]
fn self_in_a_field_type_is_the_struct() {
    let out = expand_str(quote! {
        struct L<T> { x: Option<Box<Self>>, y: <Self as Tr>::A, t: T }
    });
    assert!(out.contains("Option < Box < L < T > > >"));
    assert!(out.contains("< L < T > as Tr > :: A"));
    assert!(!out.contains("Self >"));
}

#[test]
fn refusals_emit_only_errors() {
    for input in [
        quote!(
            enum E<T> {
                A,
                B(T),
            }
        ),
        quote!(
            enum E {
                A { x: f64 },
            }
        ),
        quote!(union U { a: f64, b: u64 }),
        quote!(
            #[repr(packed)]
            struct P {
                x: f64,
            }
        ),
        quote!(
            #[repr(C)]
            #[repr(packed(4))]
            struct P(f64);
        ),
    ] {
        let out = expand(input.clone());
        assert!(is_only_errors(&out), "{input} gave {out}");
        assert_eq!(out.to_string().matches("compile_error").count(), 1, "{out}");
    }
}

#[test]
fn the_enum_error_names_the_variant_with_named_fields() {
    let out = expand_str(quote!(
        enum E {
            A,
            B(f64),
            C { x: f64 },
        }
    ));
    assert!(out.contains("supports enum variants with unnamed fields"));
    assert_eq!(out.matches("compile_error").count(), 1, "{out}");
}

#[test]
fn an_enum_with_data_gets_sibling_enums_and_variants() {
    let out = expand_str(quote!(
        enum Act {
            Relu,
            Leaky(f64),
            Affine(f64, Vec<f64>),
        }
    ));
    for name in ["ActTangent", "ActFData", "ActRData", "ActShadow"] {
        assert!(out.contains(&format!("enum {name} {{")), "{name}: {out}");
    }
    assert!(
        out.contains("Leaky (< f64 as :: mooncake_runtime :: __private :: Primal > :: Tangent)")
    );
    assert!(out.contains("type Fields = (f64 , Vec < f64 > ,)"));
    // One `Variant` impl per variant with data, none for `Relu`.
    assert_eq!(out.matches(":: enums :: Variant <").count(), 2, "{out}");
    assert!(!out.contains("compile_error"));
}

#[test]
fn derived_tangents_get_a_flat_view_bounded_on_the_fields() {
    let out = expand_str(quote!(
        struct S<T> {
            w: Vec<f64>,
            t: T,
            n: usize,
        }
    ));
    assert!(out.contains("FlatTangent for STangent < T >"), "{out}");
    assert!(out.contains(
        "for < '__mooncake > < Vec < f64 > as :: mooncake_runtime :: __private :: Primal > :: \
         Tangent : :: mooncake_runtime :: __private :: jac :: FlatTangent"
    ));
    assert!(out.contains(
        "< T as :: mooncake_runtime :: __private :: Primal > :: Tangent : :: mooncake_runtime :: \
         __private :: jac :: FlatTangent"
    ));
    // No fields: no components, and no unused parameters.
    let out = expand_str(quote!(
        struct E;
    ));
    assert!(out.contains("FlatTangent for ETangent"), "{out}");
    assert!(out.contains("fn set_flat (& mut self , _ :"), "{out}");
    let out = expand_str(quote!(
        enum Act {
            Relu,
            Leaky(f64),
            Empty(),
        }
    ));
    assert!(out.contains("FlatTangent for ActTangent"), "{out}");
    assert!(out.contains("ActTangent :: Zero => 0"), "{out}");
}

#[test]
fn a_fieldless_enum_is_non_differentiable() {
    let out = expand_str(quote!(
        #[repr(u8)]
        enum Mode {
            A = 1,
            B,
        }
    ));
    assert!(out.contains("type Tangent = :: mooncake_runtime :: __private :: NoTangent"));
    assert!(out.contains("type Handle = :: mooncake_runtime :: __private :: SharedRef < Self >"));
    assert!(out.contains("core :: mem :: discriminant"));
    assert!(!out.contains("compile_error"));
}

#[test]
fn never_panics() {
    for input in [
        quote!(),
        quote!(
            fn f() {}
        ),
        quote!(struct),
        quote!(struct S { x: }),
        quote!(
            enum E {}
        ),
        quote!(
            struct S<T>;
        ),
        quote!(
            struct S(#[cfg(x)] f64, f64);
        ),
        quote!(
            struct S {
                x: m!(T),
            }
        ),
        quote!(
            #[repr(packed = 3)]
            struct S {
                x: f64,
            }
        ),
    ] {
        let _ = expand(input);
    }
}

#[test]
fn unparsable_input_is_an_error() {
    assert!(is_only_errors(&expand(quote!(
        fn f() {}
    ))));
    assert!(is_only_errors(&expand(quote!())));
}

#[test]
#[ignore = "prints an expansion"]
fn print_expansion() {
    println!(
        "{}",
        expand(quote!(
            pub struct S {
                pub w: Vec<f64>,
                pub b: f64,
            }
        ))
    );
}

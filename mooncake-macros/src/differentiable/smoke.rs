#[cfg(test)]
mod smoke {
    use super::super::errors::Errors;
    use super::super::lower::{lower, Signature};
    use super::super::{structure, verify};

    fn go(src: &str) -> String {
        let f: syn::ItemFn = syn::parse_str(src).unwrap();
        let args = f.sig.inputs.iter().map(|a| match a {
            syn::FnArg::Typed(pt) => match &*pt.pat { syn::Pat::Ident(pi) => (pi.ident.clone(), (*pt.ty).clone(), false), _ => panic!() },
            _ => panic!(),
        }).collect();
        let ret_ty = match &f.sig.output { syn::ReturnType::Type(_, t) => (**t).clone(), _ => syn::parse_quote!(()) };
        let sig = Signature { name: &f.sig.ident, args, ret_ty };
        let mut errors = Errors::new();
        let body = lower(&sig, &f.block, &mut errors);
        let e = errors.finish();
        assert!(e.is_ok(), "{:?}", e.err().map(|t| t.to_string()));
        let problems = verify::verify(&body);
        assert!(problems.is_empty(), "{problems:?}");
        let s = structure::structure(&body).expect("reducible");
        format!("{body}\n{s:#?}")
    }

    #[test]
    fn smoke() {
        println!("{}", go("fn f(x: f64) -> f64 { if x > 0.0 { x.sin() } else { -x } }"));
        println!("{}", go("fn g(x: &[f64], y: f64) -> f64 { let mut s = 0.0; for i in 0..x.len() { if x[i] > 1.0 { continue; } s += x[i] * y; } s }"));
        println!("{}", go("fn h(n: usize) -> f64 { let mut k = 0; let r = loop { k += 1; if k > n { break 2.0; } }; match k { 0 => 1.0, 1..=3 if n > 2 => r, _ => 3.0 } }"));
    }
}

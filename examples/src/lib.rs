//! The examples live beside this crate's manifest; run them with `cargo run --release --example NAME`.

//! Benchmark problems shared by the benches in `benches/`.

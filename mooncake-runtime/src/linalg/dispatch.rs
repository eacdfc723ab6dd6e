//! Dispatch of methods and operators on heap matrices in derived code (see `ARCHITECTURE.md`).

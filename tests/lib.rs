//! Cross-crate tests of taskweave live in this package's test targets.

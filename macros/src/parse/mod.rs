//! Parsing: one `impl Parse` per piece of syntax.
//!
//! | syntax | type |
//! | --- | --- |
//! | `reads = a[lo..hi], writes = [b[..], c[i..]]` | [`Spec`] |
//! | `reads = …` | [`Entry`] |
//! | `blocks = K` | [`Blocks`] |
//! | `a[lo..hi]` | [`AccessExpr`] |

mod spec;

pub use spec::{Blocks, Key, Spec};

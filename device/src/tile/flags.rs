//! BLAS's operation flags.

/// Whether an operand is used as stored or transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// As stored.
    N,
    /// Transposed.
    T,
}

/// Which triangle of a square operand holds the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uplo {
    /// On and below the diagonal.
    Lower,
    /// On and above the diagonal.
    Upper,
}

/// Which side a triangular matrix multiplies from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// `op(A)·X = α·B`.
    Left,
    /// `X·op(A) = α·B`.
    Right,
}

/// Whether a triangular matrix's diagonal is taken as ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Diag {
    /// The stored diagonal.
    NonUnit,
    /// Ones, whatever is stored.
    Unit,
}

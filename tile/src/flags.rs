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

/// `α`, the scale of a product (`C = α·op(A)·op(B) + β·C`, `op(A)·X = α·B`). A type of its own,
/// so that `α` and `β` cannot trade places unnoticed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Alpha<T>(pub T);

/// `β`, the scale of the output's old value in `C = α·op(A)·op(B) + β·C`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Beta<T>(pub T);

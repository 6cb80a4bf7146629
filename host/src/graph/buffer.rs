//! Helpers for the vectors kept from one inspection to the next ([`Spare`](super::Spare)): a leaf
//! module, so that the modules whose buffers are kept import it without importing each other.

/// Bytes of capacity of `v`.
pub(super) fn bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * size_of::<T>()
}

/// `v` cleared, to be written from the start.
pub(super) fn cleared<T>(mut v: Vec<T>) -> Vec<T> {
    v.clear();
    v
}

//! Task arguments: how captured scalars travel from the host to a task body.
//!
//! A spawned task stores each scalar as one `u64` word in the region's argument table. The device
//! side reads the words back with [`Scalar::from_bits`]. Only plain `Copy` values with a lossless
//! 64-bit encoding qualify; references and pointers do not, since the host's addresses mean nothing
//! on the GPU.

/// A value a task can capture: `Copy`, and losslessly packed into one `u64`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a task scalar",
    label = "task scalars must be integers, floats, `bool` or `char`",
    note = "scalars are copied into the task table at spawn time; pass arrays as `&[T]` or `&mut [T]`"
)]
pub trait Scalar: Copy + 'static {
    /// The value's bits.
    fn to_bits(self) -> u64;
    /// The value back from [`Scalar::to_bits`].
    fn from_bits(bits: u64) -> Self;
    /// Writes the value that `bits` holds, as errors print a task's arguments: the built-in
    /// scalars write it as `{:?}` does (`2.0`, `-3`, `true`, `'x'`); the default writes the word
    /// in hex.
    fn fmt_bits(bits: u64, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{bits:#x}")
    }
}

/// [`Scalar::fmt_bits`] through `Debug`.
macro_rules! fmt_bits_as_debug {
    () => {
        fn fmt_bits(bits: u64, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            core::fmt::Debug::fmt(&<Self as Scalar>::from_bits(bits), f)
        }
    };
}

macro_rules! int_scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            #[inline(always)]
            fn to_bits(self) -> u64 { self as u64 }
            #[inline(always)]
            fn from_bits(bits: u64) -> Self { bits as $t }
            fmt_bits_as_debug!();
        }
    )*};
}
int_scalar!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl Scalar for f32 {
    #[inline(always)]
    fn to_bits(self) -> u64 {
        u64::from(f32::to_bits(self))
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    fmt_bits_as_debug!();
}

impl Scalar for f64 {
    #[inline(always)]
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    fmt_bits_as_debug!();
}

impl Scalar for bool {
    #[inline(always)]
    fn to_bits(self) -> u64 {
        u64::from(self)
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        bits != 0
    }
    fmt_bits_as_debug!();
}

impl Scalar for char {
    #[inline(always)]
    fn to_bits(self) -> u64 {
        u64::from(u32::from(self))
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        char::from_u32(bits as u32).unwrap_or(char::REPLACEMENT_CHARACTER)
    }
    fmt_bits_as_debug!();
}

#[cfg(test)]
mod tests {
    use super::Scalar;

    fn round_trip<T: Scalar + PartialEq + core::fmt::Debug>(v: T) {
        assert_eq!(T::from_bits(v.to_bits()), v);
    }

    /// Errors print a scalar argument by value, as written in the spawn.
    #[test]
    fn scalars_print_their_values() {
        struct Word<T>(u64, core::marker::PhantomData<T>);
        impl<T: Scalar> core::fmt::Display for Word<T> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                T::fmt_bits(self.0, f)
            }
        }
        fn shown<T: Scalar>(v: T) -> std::string::String {
            std::format!("{}", Word::<T>(v.to_bits(), core::marker::PhantomData))
        }
        assert_eq!(shown(2.0f32), "2.0");
        assert_eq!(shown(-0.5f64), "-0.5");
        assert_eq!(shown(-3i32), "-3");
        assert_eq!(shown(60usize), "60");
        assert_eq!(shown(true), "true");
        assert_eq!(shown('x'), "'x'");
    }

    #[test]
    fn every_scalar_round_trips() {
        round_trip(-5i8);
        round_trip(-123_456i32);
        round_trip(i64::MIN);
        round_trip(usize::MAX);
        round_trip(-0.0f32);
        round_trip(core::f64::consts::PI);
        round_trip(true);
        round_trip('λ');
    }
}

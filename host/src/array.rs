//! What a region takes for an array parameter: a host array (copied to the GPU, and back when the
//! region writes it) or a [`DeviceArray`] (resident: nothing is copied), through one trait per
//! access, as cudarc's kernel launches take any device slice.
//!
//! 1. A region declared with `a: &[f64]` accepts `&[f64]`, `&Vec<f64>`, `&[f64; N]` and
//!    `&DeviceArray<f64>` ([`ArrayRef`]); one declared with `a: &mut [f64]` accepts their `mut`
//!    forms ([`ArrayMut`]). (A parameter declared as `&DeviceArray<f64>` is the same parameter.)
//! 2. So one region runs on host data and on resident data alike: a call decides, by what it
//!    passes, whether the array is copied.
//! 3. An `#[output]` parameter passed a host array skips copying its contents up; passed a device
//!    array, nothing is copied anyway.
//!
//! ```ignore
//! task_region! {
//!     pub fn scale(x: &mut [f32], by: f32) { /* … */ }
//! }
//! let mut host = vec![1.0f32; 1024];
//! scale(&mut host, 2.0).run(&rt)?;                 // copied there and back
//! let mut resident = rt.upload(&host)?;
//! scale(&mut resident, 2.0).run(&rt)?;             // nothing copied
//! ```

use crate::inspect::{ArrayArg, ReadOnly, ReadWrite};
use crate::pinned::Pinned;
use crate::region::Region;
use crate::resident::DeviceArray;

/// An array a region reads: a host slice, vector or array, or a [`DeviceArray`] (or a `mut`
/// reference to any of them).
pub trait ArrayRef<'a, T: Copy> {
    /// Binds the array to `region` as its parameter `name`. Called by the code `task_region!`
    /// generates.
    #[doc(hidden)]
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadOnly>;
}

/// An array a region writes (and may read): a `mut` host slice, vector or array, or a
/// `&mut DeviceArray`.
pub trait ArrayMut<'a, T: Copy> {
    /// Binds the array to `region` as its parameter `name`. Called by the code `task_region!`
    /// generates.
    #[doc(hidden)]
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadWrite>;

    /// Binds the array as an `#[output]` parameter: a host array's contents are not copied up
    /// (see [`Region::bind_output`]).
    #[doc(hidden)]
    fn bind_output_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadWrite>;
}

impl<'a, T: Copy> ArrayRef<'a, T> for &'a [T] {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadOnly> {
        region.bind(self, name)
    }
}

impl<'a, T: Copy> ArrayRef<'a, T> for &'a mut [T] {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadOnly> {
        region.bind(self, name)
    }
}

impl<'a, T: Copy> ArrayRef<'a, T> for &'a Vec<T> {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadOnly> {
        region.bind(self, name)
    }
}

impl<'a, T: Copy> ArrayRef<'a, T> for &'a mut Vec<T> {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadOnly> {
        region.bind(self, name)
    }
}

impl<'a, T: Copy, const N: usize> ArrayRef<'a, T> for &'a [T; N] {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadOnly> {
        region.bind(self, name)
    }
}

impl<'a, T: Copy, const N: usize> ArrayRef<'a, T> for &'a mut [T; N] {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadOnly> {
        region.bind(self, name)
    }
}

/// The region keeps a device array's memory alive itself, so its borrow ends at the call.
impl<'a, T: Copy> ArrayRef<'a, T> for &DeviceArray<T> {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadOnly> {
        region.bind_resident(self, name)
    }
}

impl<'a, T: Copy> ArrayRef<'a, T> for &mut DeviceArray<T> {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadOnly> {
        region.bind_resident(self, name)
    }
}

impl<'a, T: Copy> ArrayMut<'a, T> for &'a mut [T] {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadWrite> {
        region.bind_mut(self, name)
    }
    fn bind_output_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadWrite> {
        region.bind_output(self, name)
    }
}

impl<'a, T: Copy> ArrayMut<'a, T> for &'a mut Vec<T> {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadWrite> {
        region.bind_mut(self, name)
    }
    fn bind_output_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadWrite> {
        region.bind_output(self, name)
    }
}

impl<'a, T: Copy, const N: usize> ArrayMut<'a, T> for &'a mut [T; N] {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadWrite> {
        region.bind_mut(self, name)
    }
    fn bind_output_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadWrite> {
        region.bind_output(self, name)
    }
}

/// The region keeps a device array's memory alive itself, so its borrow ends at the call; an
/// `#[output]` device array is bound as any other, nothing being copied either way.
impl<'a, T: Copy> ArrayMut<'a, T> for &mut DeviceArray<T> {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadWrite> {
        region.bind_resident_mut(self, name)
    }
    fn bind_output_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadWrite> {
        region.bind_resident_mut(self, name)
    }
}

/// Pinned host memory is a host array, which the runtime copies without staging.
impl<'a, T: Copy> ArrayRef<'a, T> for &'a Pinned<T> {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadOnly> {
        region.bind(self, name)
    }
}

impl<'a, T: Copy> ArrayRef<'a, T> for &'a mut Pinned<T> {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadOnly> {
        region.bind(self, name)
    }
}

impl<'a, T: Copy> ArrayMut<'a, T> for &'a mut Pinned<T> {
    fn bind_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadWrite> {
        region.bind_mut(self, name)
    }
    fn bind_output_to(self, region: &mut Region<'a>, name: &'static str) -> ArrayArg<T, ReadWrite> {
        region.bind_output(self, name)
    }
}

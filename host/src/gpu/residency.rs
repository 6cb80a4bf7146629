//! Admission of kernels whose blocks must all be resident at once.

use std::sync::{Condvar, Mutex, PoisonError};

/// Admission of kernels whose blocks must all be resident at once (the persistent scheduler, the
/// grid barrier). Two such kernels that do not fit together could each hold half the GPU while
/// waiting for blocks of their own that cannot start: each launch reserves its blocks' share of
/// the SMs (blocks / blocks per SM) and waits while the reservations in force leave too little.
#[derive(Default)]
pub(crate) struct Residency {
    /// Reserved, in millionths of an SM.
    used: Mutex<u64>,
    freed: Condvar,
}

/// A share of the GPU held until dropped.
pub(crate) struct Reservation<'a> {
    residency: &'a Residency,
    amount: u64,
}

impl Residency {
    const UNIT: u64 = 1_000_000;

    /// Waits until `blocks` blocks of a kernel with `per_sm` resident blocks per SM fit beside the
    /// kernels already admitted on `sms` SMs, and reserves them.
    pub(crate) fn reserve(&self, sms: u32, blocks: u32, per_sm: u32) -> Reservation<'_> {
        let capacity = u64::from(sms) * Self::UNIT;
        let amount = (u64::from(blocks) * Self::UNIT)
            .div_ceil(u64::from(per_sm.max(1)))
            .min(capacity);
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        while *used + amount > capacity {
            used = self
                .freed
                .wait(used)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *used += amount;
        Reservation {
            residency: self,
            amount,
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut used = self
            .residency
            .used
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *used -= self.amount;
        self.residency.freed.notify_all();
    }
}

//! Every kind of task scalar round-trips through the task table; tasks are spawned from nested
//! control flow and through a module path, and `unsafe fn` tasks work.

use taskweave::{task, task_region};

mod kernels {
    use taskweave::{Block, task};

    /// Records every scalar argument as a `u64` word.
    #[task(writes = out[0..10])]
    #[allow(clippy::too_many_arguments)]
    pub fn scalars(
        b: &Block,
        out: &mut [u64],
        a: u8,
        c: i16,
        d: i32,
        e: i64,
        f: isize,
        g: f32,
        h: f64,
        i: bool,
        j: char,
    ) {
        if b.thread() == 0 {
            out[0] = u64::from(a);
            out[1] = c as u64;
            out[2] = d as u64;
            out[3] = e as u64;
            out[4] = f as u64;
            out[5] = g.to_bits().into();
            out[6] = h.to_bits();
            out[7] = u64::from(i);
            out[8] = u64::from(u32::from(j));
            out[9] = 1;
        }
        b.sync();
    }
}

/// An `unsafe fn` task.
///
/// # Safety
/// None needed; it checks that the attribute keeps `unsafe`.
#[task(reads = out[k..k + 1], writes = out[k..k + 1])]
unsafe fn bump(out: &mut [u64], k: usize) {
    out[k] += 100;
}

task_region! {
    fn record(out: &mut [u64], flag: bool) {
        if flag {
            spawn!(kernels::scalars(out, 200, -3, -70000, i64::MIN, -1, 1.5, -2.25, true, 'λ'));
        } else {
            spawn!(kernels::scalars(out, 0, 0, 0, 0, 0, 0.0, 0.0, false, 'a'));
        }
        let mut k = 0;
        loop {
            match k {
                0 | 2 => spawn!(bump(out, k)),
                _ => {}
            }
            k += 1;
            if k == 3 {
                break;
            }
        }
    }
}

fn main() {
    let mut out = vec![0u64; 10];
    record(&mut out, true)
        .run(&taskweave::Runtime::cpu())
        .expect("the region runs");
    assert_eq!(
        out,
        [
            300,
            -3i64 as u64,
            -70000i64 as u64 + 100,
            i64::MIN as u64,
            u64::MAX,
            u64::from(1.5f32.to_bits()),
            (-2.25f64).to_bits(),
            1,
            u64::from(u32::from('λ')),
            1,
        ]
    );
}

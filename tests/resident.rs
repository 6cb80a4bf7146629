//! Arrays resident on the device across regions (`DeviceArray`), on the CPU backend: nothing is
//! copied around a run, a chain of regions keeps its data, and a failing region says which array.

use taskweave::{Block, DeviceArray, Error, Runtime, task, task_region};

/// `acc[i] += add[i]` over one chunk.
#[task(reads = [add[c * n..(c + 1) * n], acc[c * n..(c + 1) * n]], writes = acc[c * n..(c + 1) * n])]
fn accumulate(b: &Block, acc: &mut [u64], add: &[u64], c: usize, n: usize) {
    b.par_for(c * n..(c + 1) * n, |i| acc[i] += add[i]);
}

task_region! {
    /// Adds `add` into the resident `acc`, one task per chunk of `n`.
    fn add_into(acc: &mut DeviceArray<u64>, add: &[u64], n: usize) {
        for c in 0..acc.len() / n {
            spawn!(accumulate(acc, add, c, n));
        }
    }
}

task_region! {
    /// Adds the resident `add` into the host array `acc`.
    fn add_from(acc: &mut [u64], add: &DeviceArray<u64>, n: usize) {
        for c in 0..acc.len() / n {
            spawn!(accumulate(acc, add, c, n));
        }
    }
}

#[test]
fn a_resident_array_keeps_its_data_across_regions() {
    let rt = Runtime::cpu_with(2);
    let start: Vec<u64> = (0..64).collect();
    let mut acc = rt.upload(&start).unwrap();
    assert_eq!(acc.len(), 64);
    assert!(!acc.on_gpu());
    let add: Vec<u64> = (0..64).map(|i| 1000 + i).collect();
    for _ in 0..3 {
        let report = add_into(&mut acc, &add, 16).run(&rt).unwrap();
        assert_eq!(report.tasks, 4);
    }
    let out = acc.download().unwrap();
    assert_eq!(
        out,
        (0..64).map(|i| i + 3 * (1000 + i)).collect::<Vec<u64>>()
    );

    // A resident array can also be read by a region that writes a host array.
    let mut host = vec![1u64; 64];
    add_from(&mut host, &acc, 32).run(&rt).unwrap();
    assert_eq!(host, out.iter().map(|v| v + 1).collect::<Vec<u64>>());
}

#[test]
fn a_resident_array_is_validated_like_any_other() {
    let rt = Runtime::cpu();
    let mut acc: DeviceArray<u64> = rt.upload(&[0; 10]).unwrap();
    // `add` is shorter than `acc`: the chunk past its end is out of bounds at inspection.
    let err = add_into(&mut acc, &[1; 5], 5).run(&rt).unwrap_err();
    match err {
        Error::OutOfBounds {
            array, len, range, ..
        } => {
            assert_eq!((array, len, range), ("add", 5, 5..10));
        }
        other => panic!("expected OutOfBounds, got {other}"),
    }
    assert_eq!(acc.download().unwrap(), vec![0; 10], "nothing ran");
}

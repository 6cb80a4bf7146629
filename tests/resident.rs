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

/// One region takes a host array or a device array for any parameter, in any form the call has:
/// the results are the same, and only the host arrays are copied.
#[test]
fn one_region_takes_host_and_device_arrays_alike() {
    let rt = Runtime::cpu_with(2);
    let add: Vec<u64> = (0..32).collect();
    let expected: Vec<u64> = (0..32).map(|i| 7 + i).collect();
    // Host: a `Vec`, a slice of it, a fixed-size array; read as a `Vec`, a slice, a device array.
    let mut vec = vec![7u64; 32];
    add_from(&mut vec, &add, 8).run(&rt).unwrap();
    assert_eq!(vec, expected);
    let mut whole = vec![7u64; 40];
    add_from(&mut whole[..32], &add[..], 8).run(&rt).unwrap();
    assert_eq!(whole[..32], expected[..]);
    assert!(
        whole[32..].iter().all(|&v| v == 7),
        "past the slice, untouched"
    );
    let mut fixed = [7u64; 32];
    let resident_add = rt.upload(&add).unwrap();
    add_from(&mut fixed, &resident_add, 8).run(&rt).unwrap();
    assert_eq!(fixed[..], expected[..]);
    // Device: the region declared `&mut DeviceArray` takes a host array too.
    let mut acc = vec![7u64; 32];
    add_into(&mut acc, &add, 8).run(&rt).unwrap();
    assert_eq!(acc, expected);
    let mut resident = rt.upload(&[7u64; 32]).unwrap();
    let r: &mut DeviceArray<u64> = &mut resident;
    // A `&mut` reference is moved by a call; reborrow it to call again.
    add_from(&mut *r, &add, 8).run(&rt).unwrap();
    add_from(r, &add, 8).run(&rt).unwrap();
    assert_eq!(
        resident.download().unwrap(),
        (0..32).map(|i| 7 + 2 * i).collect::<Vec<u64>>()
    );
}

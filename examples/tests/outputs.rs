//! The self-check's `#[output]` region on the CPU backend, which works in place: the chunks no task
//! writes keep the host's values, the chunk that reads an earlier write sees it, and an element a
//! task declares but does not write keeps the host's value too (the GPU backends zero it, which
//! `selfcheck` checks).

use taskweave::Runtime;
use taskweave_kernels::dags::{output_chunks, output_chunks_expected};

#[test]
fn an_output_region_leaves_what_its_tasks_do_not_write() {
    let rt = Runtime::cpu_with(2);
    let (n, chunk) = (80, 8);
    let mut x = vec![7u32; n];
    output_chunks(&mut x, chunk, false)
        .run(&rt)
        .expect("the region runs");
    assert_eq!(x, output_chunks_expected(n, chunk, false, 7));

    let mut x = vec![7u32; n];
    output_chunks(&mut x, chunk, true)
        .run(&rt)
        .expect("the region runs");
    let gpu = output_chunks_expected(n, chunk, true, 7);
    let in_place: Vec<u32> = gpu
        .iter()
        .zip(output_chunks_expected(n, chunk, false, 7))
        .map(|(&g, full)| if g == 0 { 7 } else { full })
        .collect();
    assert_eq!(x, in_place);
    assert_ne!(x, gpu);
}

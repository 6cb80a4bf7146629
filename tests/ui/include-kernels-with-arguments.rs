fn main() {
    let _ptx: &str = taskweave::include_ptx!("kernels");
}

fn main() {
    let _code = taskweave::include_kernels!("kernels");
}

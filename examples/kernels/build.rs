//! Compiles this crate for the GPU as well (see `taskweave_build`).

fn main() -> Result<(), taskweave_build::Error> {
    taskweave_build::Builder::new(".").build()
}

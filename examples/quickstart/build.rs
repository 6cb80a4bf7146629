fn main() -> Result<(), taskweave_build::Error> {
    taskweave_build::Builder::new(".").build()
}

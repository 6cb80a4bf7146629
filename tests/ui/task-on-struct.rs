use taskweave::task;

#[task]
struct NotAFunction;

fn main() {}

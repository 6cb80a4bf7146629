//! Two regions of one name, `step`, in two modules: each gets its own kernels (their symbols carry
//! a hash of where the region is written), so the device build of this crate links both, and each
//! runs its own tasks.

/// Adds 1 to every element.
pub mod add {
    use taskweave::{Block, task, task_region};

    /// `x[i] += 1` over the whole array.
    #[task]
    pub fn bump(b: &Block, x: &mut [u32]) {
        b.par_for(0..x.len(), |i| x[i] += 1);
    }

    task_region! {
        /// One `bump`.
        pub fn step(x: &mut [u32]) {
            spawn!(bump(x));
        }
    }
}

/// Doubles every element.
pub mod double {
    use taskweave::{Block, task, task_region};

    /// `x[i] *= 2` over the whole array.
    #[task]
    pub fn twice(b: &Block, x: &mut [u32]) {
        b.par_for(0..x.len(), |i| x[i] *= 2);
    }

    task_region! {
        /// One `twice`.
        pub fn step(x: &mut [u32]) {
            spawn!(twice(x));
        }
    }
}

#[cfg(test)]
mod tests {
    use taskweave::Runtime;

    #[test]
    fn each_region_runs_its_own_tasks() {
        let rt = Runtime::cpu();
        let mut x = vec![3u32; 64];
        super::add::step(&mut x).run(&rt).unwrap();
        super::double::step(&mut x).run(&rt).unwrap();
        assert!(x.iter().all(|&v| v == 8), "{x:?}");
    }

    /// The device build kept both regions, under distinct symbols, each in a module of its own.
    #[test]
    fn the_bundle_holds_a_kernel_for_each() {
        let taskweave::gpu::Code::Bundle(bytes) = crate::CODE else {
            panic!("the crate's code is a bundle");
        };
        let bundle = taskweave::gpu::bundle::Bundle::parse(bytes).unwrap();
        let kernels: std::collections::BTreeSet<(&str, &str)> = bundle
            .kernels()
            .filter(|k| k.name.starts_with("taskweave_region_step_") && !k.name.contains("__"))
            .map(|k| (k.name, bundle.module(k.module).unwrap().region))
            .collect();
        let regions: std::collections::BTreeSet<&str> = kernels.iter().map(|k| k.1).collect();
        assert_eq!((kernels.len(), regions.len()), (2, 2), "{kernels:?}");
    }
}

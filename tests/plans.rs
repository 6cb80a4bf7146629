//! Plans on the CPU backend: a region inspected once and run again on other arrays of the same
//! shapes, what a plan refuses, and the verifying mode that inspects every call again.

use taskweave::{Block, Error, Plan, Policy, Runtime, task, task_region};

/// `dst[i] = (src[i - 1] + src[i] + src[i + 1]) / 3` over one chunk of the interior; the ends
/// stay as they were.
#[task(reads = src[lo - 1..hi + 1], writes = dst[lo..hi])]
fn smooth(b: &Block, dst: &mut [f64], src: &[f64], lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| {
        dst[i] = (src[i - 1] + src[i] + src[i + 1]) / 3.0
    });
}

/// Copies an end element across.
#[task(reads = src[i..i + 1], writes = dst[i..i + 1])]
fn keep(dst: &mut [f64], src: &[f64], i: usize) {
    dst[i] = src[i];
}

task_region! {
    /// One smoothing step from `src` into `dst`, in chunks of `chunk`.
    fn step(dst: &mut [f64], src: &[f64], chunk: usize) {
        let n = dst.len();
        spawn!(keep(dst, src, 0));
        spawn!(keep(dst, src, n - 1));
        let mut lo = 1;
        while lo < n - 1 {
            let hi = (lo + chunk).min(n - 1);
            spawn!(smooth(dst, src, lo, hi));
            lo = hi;
        }
    }
}

task_region! {
    /// Another region of the same shape.
    fn other(dst: &mut [f64], src: &[f64], chunk: usize) {
        let _ = chunk;
        spawn!(keep(dst, src, 0));
    }
}

/// The step, sequentially.
fn reference(src: &[f64]) -> Vec<f64> {
    let n = src.len();
    let mut dst = src.to_vec();
    for i in 1..n - 1 {
        dst[i] = (src[i - 1] + src[i] + src[i + 1]) / 3.0;
    }
    dst
}

fn start(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 37) % 11) as f64).collect()
}

#[test]
fn a_call_that_inspects_splits_its_inspection_into_phases_and_a_plan_run_has_none() {
    let rt = Runtime::cpu_with(2);
    let n = if cfg!(miri) { 40 } else { 4000 };
    let (u, mut v) = (start(n), vec![0.0; n]);
    let report = step(&mut v, &u, 16).run(&rt).unwrap();
    let phases = report.phases;
    assert!(phases.record > std::time::Duration::ZERO, "{phases}");
    assert!(phases.edges > std::time::Duration::ZERO, "{phases}");
    assert_eq!(phases.record + phases.edges, report.inspect_time);
    // The CPU backend stages nothing and launches no kernel.
    assert_eq!(
        (phases.plan, phases.upload, phases.launch, phases.wait),
        Default::default()
    );
    let mut plan = step(&mut v, &u, 16).plan(&rt).unwrap().verify(false);
    let again = plan.run(step(&mut v, &u, 16), &rt).unwrap();
    assert_eq!(again.phases, taskweave::Phases::default());
    assert!(format!("{phases}").starts_with("record "), "{phases}");
}

/// Runs `plan` on `u` into `v` until a run reports the static policy (at most `tries` runs, a
/// millisecond apart), checking each result; the runs' policies, in order.
fn runs_until_static(plan: &mut Plan, rt: &Runtime, u: &[f64], v: &mut [f64]) -> Vec<Policy> {
    let mut policies = Vec::new();
    for _ in 0..2000 {
        v.fill(-1.0);
        let report = plan.run(step(&mut *v, u, 16), rt).unwrap();
        assert_eq!(v, reference(u));
        policies.push(report.policy);
        if report.policy == Policy::Static {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    policies
}

#[test]
#[cfg_attr(
    miri,
    ignore = "waits, a millisecond between runs, for a thread to make the static plan: at Miri's \
              speed, thousands of runs"
)]
fn the_default_policy_starts_at_once_and_a_plan_run_again_takes_up_its_static_plan() {
    let rt = Runtime::cpu_with(3);
    let (u, mut v) = (start(4000), vec![0.0; 4000]);
    // A call that inspects runs under grr, which needs no plan.
    assert_eq!(step(&mut v, &u, 16).run(&rt).unwrap().policy, Policy::Grr);
    // A plan runs its first call under grr too, and the static plan once it is made, for good.
    let mut plan = step(&mut v, &u, 16).plan(&rt).unwrap().verify(false);
    let policies = runs_until_static(&mut plan, &rt, &u, &mut v);
    assert_eq!(policies[0], Policy::Grr);
    assert_eq!(policies.last(), Some(&Policy::Static), "{policies:?}");
    for _ in 0..3 {
        let report = plan.run(step(&mut v, &u, 16), &rt).unwrap();
        assert_eq!(report.policy, Policy::Static);
        assert_eq!(v, reference(&u));
    }
    // The plan still takes the region's own options, which left the policy unset.
    assert_eq!(plan.options().policy, None);
    // A policy the region names is kept.
    let mut grr = step(&mut v, &u, 16)
        .policy(Policy::Grr)
        .plan(&rt)
        .unwrap()
        .verify(false);
    for _ in 0..20 {
        assert_eq!(
            grr.run(step(&mut v, &u, 16), &rt).unwrap().policy,
            Policy::Grr
        );
    }
    // The runtime's cached plans are upgraded too.
    rt.cache_plans(4);
    let mut last = Policy::Grr;
    for _ in 0..2000 {
        last = step(&mut v, &u, 16).run(&rt).unwrap().policy;
        assert_eq!(v, reference(&u));
        if last == Policy::Static {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(last, Policy::Static);
}

#[test]
fn a_plan_runs_again_on_other_arrays_of_the_same_shapes() {
    let rt = Runtime::cpu_with(3);
    let (mut u, mut v) = (start(100), vec![0.0; 100]);
    let mut plan = step(&mut v, &u, 16).plan(&rt).unwrap().verify(false);
    assert_eq!(plan.region(), "step");
    assert_eq!(plan.inspection().task_count(), 2 + 7);
    let mut expected = u.clone();
    for _ in 0..10 {
        // Ping-pong: one plan serves both directions.
        let report = plan.run(step(&mut v, &u, 16), &rt).unwrap();
        assert_eq!(report.tasks, 9);
        assert_eq!(
            report.inspect_time,
            std::time::Duration::ZERO,
            "no inspection"
        );
        expected = reference(&expected);
        assert_eq!(v, expected);
        plan.run(step(&mut u, &v, 16), &rt).unwrap();
        expected = reference(&expected);
        assert_eq!(u, expected);
    }
}

#[test]
fn a_plan_runs_on_resident_arrays() {
    let rt = Runtime::cpu_with(2);
    let mut u = rt.upload(&start(64)).unwrap();
    let mut v = rt.upload(&vec![0.0; 64]).unwrap();
    let mut plan = step(&mut v, &u, 8).plan(&rt).unwrap();
    let mut expected = start(64);
    for _ in 0..5 {
        plan.run(step(&mut v, &u, 8), &rt).unwrap();
        plan.run(step(&mut u, &v, 8), &rt).unwrap();
        expected = reference(&reference(&expected));
    }
    assert_eq!(u.download().unwrap(), expected);
}

#[test]
fn a_plan_refuses_another_region_other_shapes_and_other_options() {
    let rt = Runtime::cpu_with(2);
    let (u, mut v) = (start(50), vec![0.0; 50]);
    let mut plan = step(&mut v, &u, 10)
        .policy(Policy::Static)
        .plan(&rt)
        .unwrap();
    let message = |e: Error| {
        assert!(
            matches!(e, Error::PlanMismatch { region: "step", .. }),
            "{e}"
        );
        e.to_string()
    };

    let (short, mut short_out) = (start(40), vec![0.0; 40]);
    let e = plan.run(step(&mut short_out, &short, 10), &rt).unwrap_err();
    assert_eq!(
        message(e),
        "region `step` does not match its plan: array `dst` has 40 elements of 8 bytes, the plan \
         was made for 50 of 8"
    );
    let e = plan.run(other(&mut v, &u, 10), &rt).unwrap_err();
    assert!(message(e).contains("a call of region `other`"));
    let e = plan.run(step(&mut v, &u, 10).workers(1), &rt).unwrap_err();
    assert!(message(e).contains("set them before making the plan"));
    // The plan's own options, or none, are fine.
    plan.run(step(&mut v, &u, 10).policy(Policy::Static), &rt)
        .unwrap();
    let report = plan.run(step(&mut v, &u, 10), &rt).unwrap();
    assert_eq!(report.policy, Policy::Static);
    assert_eq!(v, reference(&u));
}

#[test]
fn a_verifying_plan_refuses_scalars_that_build_another_dag() {
    let rt = Runtime::cpu_with(2);
    let (u, mut v) = (start(64), vec![0.0; 64]);
    let mut plan = step(&mut v, &u, 8).plan(&rt).unwrap().verify(true);
    assert!(plan.verifies());
    // The same scalars: inspected again, the same DAG, and it runs.
    let report = plan.run(step(&mut v, &u, 8), &rt).unwrap();
    assert!(report.inspect_time > std::time::Duration::ZERO);
    assert_eq!(v, reference(&u));
    // Another chunk builds another DAG: refused before anything runs.
    v.fill(-1.0);
    let e = plan.run(step(&mut v, &u, 16), &rt).unwrap_err();
    assert_eq!(
        e.to_string(),
        "region `step` does not match its plan: task #2 is `smooth(dst, src, 1, 17)` where the \
         plan has `smooth(dst, src, 1, 9)`; its scalar arguments steer the control flow \
         differently: make a new plan for them"
    );
    assert!(v.iter().all(|&x| x == -1.0), "nothing ran");
}

#[test]
fn without_verification_a_plan_runs_its_own_dag_whatever_the_scalars() {
    let rt = Runtime::cpu_with(2);
    let (u, mut v) = (start(64), vec![0.0; 64]);
    let mut plan = step(&mut v, &u, 8).plan(&rt).unwrap().verify(false);
    // The call's scalars are not looked at: the caller vouched for them.
    let report = plan.run(step(&mut v, &u, 32), &rt).unwrap();
    assert_eq!(report.tasks, 2 + 8);
    assert_eq!(v, reference(&u));
}

#[test]
fn plans_verify_by_default_in_debug_builds() {
    let rt = Runtime::cpu_with(1);
    let (u, mut v) = (start(16), vec![0.0; 16]);
    let plan: Plan = step(&mut v, &u, 4).plan(&rt).unwrap();
    let expected = match std::env::var(taskweave::VERIFY_PLANS_ENV).as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => cfg!(debug_assertions),
    };
    assert_eq!(plan.verifies(), expected);
}

#[test]
fn an_edited_plan_runs_the_edited_dag() {
    // The seam for mutation tests: skip the last task, and the result shows it.
    let rt = Runtime::cpu_with(2);
    let (u, mut v) = (start(32), vec![0.0; 32]);
    let mut plan = step(&mut v, &u, 8).plan(&rt).unwrap();
    assert_eq!(
        plan.inspection().dag.edge_count(),
        0,
        "the tasks are independent"
    );
    plan.edit_inspection(|ins| {
        let n = ins.task_count() - 1;
        // The last record becomes the sentinel that ends the task before it.
        ins.tasks.truncate(n + 1);
        ins.locations.truncate(n);
        ins.dag = taskweave::graph::Dag::from_parent_lists(&vec![0; n + 1], &[], &[]);
    });
    assert!(
        !plan.verifies(),
        "an edited plan no longer matches its region"
    );
    let report = plan.run(step(&mut v, &u, 8), &rt).unwrap();
    assert_eq!(report.tasks, 5);
    let expected = reference(&u);
    assert_eq!(v[..25], expected[..25]);
    assert!(v[25..31].iter().all(|&x| x == 0.0), "the skipped chunk");
    assert_eq!(v[31], expected[31]);
}

#[test]
fn a_plan_for_a_gpu_backend_is_refused_on_the_cpu_runtime() {
    let rt = Runtime::cpu_with(1);
    let (u, mut v) = (start(16), vec![0.0; 16]);
    let e = step(&mut v, &u, 4)
        .backend(taskweave::Backend::Graph)
        .plan(&rt)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "no GPU: backend `graph` runs on the GPU, and this runtime is the CPU backend"
    );
}

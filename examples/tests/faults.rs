//! Every fault check passes on the CPU backend.

#[test]
fn every_fault_is_reported_and_loses_nothing() {
    let outcomes = taskweave_examples::faults::check_all(&taskweave::Runtime::cpu());
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.ok)
        .map(|o| format!("{}: {}", o.name, o.detail))
        .collect();
    assert!(failed.is_empty(), "failed checks:\n{}", failed.join("\n"));
}

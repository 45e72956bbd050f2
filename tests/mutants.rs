//! The suite must catch bugs (issue 6 item 6): every mutant — a reference engine or host
//! with one clause deliberately broken — fails at least one case, and at least one of the
//! failing cases names the mutant's clause; the unbroken reference passes everything.
//!
//! The kill table is printed (`cargo test --test mutants -- --nocapture`).

use w6w_sim::conformance::mutants::{AnyMutant, Mutant, kill_table, kill_table_text, with_mutant};
use w6w_sim::conformance::{self, Reference, RunOptions, Selection, SimulatedHost, Suite};

#[test]
fn the_suite_kills_every_mutant_naming_its_clause() {
    let suite = Suite::load_default().unwrap_or_else(|e| panic!("the suite does not load:\n{e}"));
    let selection = Selection::new(&[], None).expect("no filters");
    let all = AnyMutant::all();
    assert!(all.len() >= 15, "issue 6 asks for at least 15 mutants");
    let rows = kill_table(&suite, &selection, &all);
    let text = kill_table_text(&rows);
    println!("{text}");
    let survivors: Vec<String> = rows
        .iter()
        .filter(|r| !r.killed() || r.killed_by.is_empty())
        .map(|r| format!("{} ({})", r.mutant.name(), r.mutant.clause()))
        .collect();
    assert!(
        survivors.is_empty(),
        "mutants not killed by a case naming their clause: {survivors:?}\n{text}"
    );
}

#[test]
fn the_reference_passes_in_process_and_as_a_host() {
    conformance::run(&mut Reference, &RunOptions::default())
        .expect("suite loads")
        .assert_all_passed();
    conformance::run_host(SimulatedHost, &RunOptions::default())
        .expect("suite loads")
        .assert_all_passed();
}

#[test]
fn a_mutant_is_active_only_inside_with_mutant() {
    // The same request answers differently inside and outside the closure: the hook is
    // live, and it is inert by default.
    let request = serde_json::json!({"op": "resolve", "with": {"c": {"$expr": {"var": ""}}},
                                     "scope": {"vars": {}, "secrets": {"K": "plaintext-k"}}});
    let clean = w6w_sim::service::handle(&request).to_string();
    let broken = with_mutant(Mutant::SecretsOnDataRoot, || {
        w6w_sim::service::handle(&request).to_string()
    });
    let after = w6w_sim::service::handle(&request).to_string();
    assert!(!clean.contains("plaintext-k"), "{clean}");
    assert!(broken.contains("plaintext-k"), "{broken}");
    assert_eq!(clean, after, "the mutant was restored");
}

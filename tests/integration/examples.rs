//! Snapshots of the full reports for every bundled example (`examples/*.workflow.json`
//! with its `*.scenario.json`), kept under the top-level `snapshots/` directory. Each
//! snapshot was reviewed by hand; CI writes none (`INSTA_UPDATE=no`), so a change in any
//! report fails until it is reviewed again.

use std::path::PathBuf;

use w6w_sim::sim;

#[test]
fn example_reports() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("examples/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|f| f.strip_suffix(".workflow.json").map(str::to_owned))
        .collect();
    names.sort();
    assert!(names.len() >= 4, "the examples are bundled: {names:?}");
    for name in names {
        let read = |suffix: &str| -> serde_json::Value {
            let path = dir.join(format!("{name}.{suffix}.json"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        };
        let workflow = sim::load_workflow(&read("workflow")).expect("valid example workflow");
        let scenario = sim::load_scenario(&read("scenario")).expect("valid example scenario");
        let report = sim::Simulation::new(&workflow, &scenario)
            .run()
            .unwrap_or_else(|e| panic!("{name}: {}", e.to_json()));
        insta::with_settings!({
            snapshot_path => "../../snapshots",
            prepend_module_to_snapshot => false,
            input_file => format!("examples/{name}.workflow.json"),
        }, {
            insta::assert_json_snapshot!(format!("example-{name}"), report.to_json());
        });
    }
}

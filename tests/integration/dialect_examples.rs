//! The worked dialect examples (`examples/*.woml.xml`, `examples/*.yaml`, each with its
//! `<name>.scenario.json`): the imported w6w workflow, the import notes and the full run
//! report, pinned as reviewed snapshots under `snapshots/example-<name>.snap`. CI writes
//! none (`INSTA_UPDATE=no`), so any change fails until it is reviewed again.

use std::path::PathBuf;

use serde_json::{Value, json};
use w6w_sim::__internals::dialect::{self, Dialect, Manifest};
use w6w_sim::sim::SimOptions;

#[test]
fn dialect_example_reports() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut docs: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .expect("examples/")
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_name()?.to_str()?.to_owned();
            let stem = name
                .strip_suffix(".woml.xml")
                .or_else(|| name.strip_suffix(".yaml"))?
                .to_owned();
            Some((stem, path))
        })
        .collect();
    docs.sort();
    assert_eq!(
        docs.len(),
        3,
        "WOML order, YAML helpdesk and triage: {docs:?}"
    );
    for (name, path) in docs {
        let source = std::fs::read(&path).expect("example");
        let scenario_path = dir.join(format!("{name}.scenario.json"));
        let scenario: Value =
            serde_json::from_str(&std::fs::read_to_string(&scenario_path).expect("scenario"))
                .expect("scenario JSON");
        let (scenario, manifest) = dialect::split_manifest(&scenario);
        let manifest = manifest.map(|m| Manifest::from_json(&m).expect("manifest"));
        let d = Dialect::from_path(&path);
        let imported = dialect::import(d, &source, manifest.as_ref())
            .unwrap_or_else(|p| panic!("{name}: {p:?}"));
        let report = dialect::run(&imported, &scenario, &SimOptions::default(), None, None)
            .unwrap_or_else(|e| panic!("{name}: {}", e.to_json()));
        insta::with_settings!({
            snapshot_path => "../../snapshots",
            prepend_module_to_snapshot => false,
            input_file => path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(&path),
        }, {
            insta::assert_json_snapshot!(
                format!("example-{name}"),
                json!({"import": imported.to_json(), "report": report})
            );
        });
    }
}

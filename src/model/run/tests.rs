//! The run model's tests: JSON forms, typed frames and blocks, and the fold.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::*;

/// The record's one JSON form (its `Serialize` impl, written by hand to place typed
/// blocks) and its derived `Deserialize` agree on every field: a record with each field
/// present (a present `null` output too) and extensions writes every field once, in
/// declaration order before its extensions, and reads back equal.
#[test]
fn every_field_of_a_record_is_written_and_read_back() {
    let mut full = StepExecution::new("b", StepStatus::Failed, 3);
    full.input = Some(json!({"x": [1, {"y": null}]}).into());
    full.output = Some(Value::Null.into());
    full.error = Some(Box::new(
        StepError::new("boom", "it broke", Phase::Execute).for_step("b"),
    ));
    full.started_at = Some("2026-01-01T00:00:00.000Z".into());
    full.finished_at = Some("2026-01-01T00:00:01.000Z".into());
    full.meta = Some(Box::new(StepMeta {
        app: "app".into(),
        version: "1".into(),
        action: "act".into(),
        connection_id: None,
    }));
    full.extra.insert("secretDerived".into(), json!(true));
    let text = serde_json::to_string(&full).unwrap();
    let keys = [
        "stepId",
        "status",
        "attempt",
        "input",
        "output",
        "error",
        "startedAt",
        "finishedAt",
        "meta",
        "secretDerived",
    ];
    let at: Vec<usize> = keys
        .iter()
        .map(|k| text.find(&format!("\"{k}\":")).unwrap_or(usize::MAX))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
    let back: StepExecution = serde_json::from_str(&text).unwrap();
    assert_eq!(back, full);
    let bare = StepExecution::new("a", StepStatus::Skipped, 0);
    let text = serde_json::to_string(&bare).unwrap();
    assert_eq!(text, r#"{"stepId":"a","status":"skipped","attempt":0}"#);
    assert_eq!(serde_json::from_str::<StepExecution>(&text).unwrap(), bare);
}

fn record(id: &str, status: StepStatus, output: Value) -> Arc<StepExecution> {
    let mut r = StepExecution::new(id, status, 1);
    r.input = Some(json!({"k": id}).into());
    r.output = Some(output.into());
    Arc::new(r)
}

/// `apply` (by reference), `apply_owned` (by value) and `apply_draining` (which leaves the
/// patch empty for reuse) are three spellings of one fold: every field, the upsert order
/// and `null` removal agree, and a drained patch is an empty one.
// long: three patches that between them set every patch field, built and folded in one
// scenario read top to bottom.
#[test]
fn apply_by_reference_and_by_value_fold_alike() {
    let mut p1 = RunStatePatch {
        run_id: "r".into(),
        workflow_id: Some("wf".into()),
        status: Some(RunStatus::Running),
        variables: Some(json!({"v": 1}).as_object().cloned().unwrap_or_default()),
        ..RunStatePatch::default()
    };
    p1.steps
        .insert("a".into(), record("a", StepStatus::Running, json!(null)));
    p1.steps
        .insert("b".into(), record("b", StepStatus::Succeeded, json!(2)));
    p1.extra.insert("x".into(), json!({"keep": true}));
    p1.extra.insert("y".into(), json!(1));
    p1.step_errors
        .push(StepError::new("e", "m", Phase::Execute));
    let mut p2 = RunStatePatch {
        run_id: "r".into(),
        output: Some(Value::Null),
        error: Some(StepError::new("f", "n", Phase::Output)),
        clear: vec![PatchField::StepErrors],
        ..RunStatePatch::default()
    };
    p2.steps
        .insert("c".into(), record("c", StepStatus::Skipped, json!(3)));
    p2.steps
        .insert("a".into(), record("a", StepStatus::Succeeded, json!([1])));
    p2.extra.insert("y".into(), Value::Null);
    let f = |id: &str| -> Arc<FrameRecords> {
        let r = record(id, StepStatus::Succeeded, json!(id));
        Arc::new([(id.to_owned(), r)].into_iter().collect())
    };
    p1.frames
        .insert("frame:/l.iterations[0]".into(), Some(f("b0")));
    p1.frames
        .insert("frame:/l.iterations[1]".into(), Some(f("b1")));
    p2.frames.insert("frame:/l.iterations[0]".into(), None);
    p2.frames
        .insert("frame:/l.iterations[1]".into(), Some(f("b2")));
    let p3 = RunStatePatch {
        run_id: "r".into(),
        reset_steps: true,
        clear: vec![PatchField::Output, PatchField::Error],
        status: Some(RunStatus::Failed),
        ..RunStatePatch::default()
    };
    for patches in [vec![&p1], vec![&p1, &p2], vec![&p1, &p2, &p3]] {
        let mut by_ref = RunState::new("r", "");
        let mut by_value = RunState::new("r", "");
        let mut drained = RunState::new("r", "");
        // D-186: one patch refilled for every fold, as the engine's journal reuses it.
        let mut spare = RunStatePatch::default();
        for p in &patches {
            by_ref.apply(p);
            by_value.apply_owned((*p).clone());
            spare.clone_from(p);
            drained.apply_draining(&mut spare);
            let empty = RunStatePatch {
                run_id: p.run_id.clone(),
                ..RunStatePatch::default()
            };
            assert_eq!(spare, empty, "a drained patch is an empty one");
        }
        assert_eq!(by_ref, by_value);
        assert_eq!(by_ref, drained);
        let drained_order: Vec<&String> = drained.steps.keys().collect();
        assert_eq!(drained_order, by_ref.steps.keys().collect::<Vec<_>>());
        let order: Vec<&String> = by_ref.steps.keys().collect();
        let want_order: Vec<&String> = by_value.steps.keys().collect();
        assert_eq!(order, want_order);
    }
    let mut s = RunState::new("r", "");
    s.apply(&p1);
    s.apply(&p2);
    assert_eq!(s.steps.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    assert_eq!(s.steps["a"].output, Some(json!([1]).into()));
    assert!(s.step_errors.is_empty() && !s.extra.contains_key("y"));
    assert_eq!(
        s.frames.keys().collect::<Vec<_>>(),
        ["frame:/l.iterations[1]"]
    );
    assert!(s.frames["frame:/l.iterations[1]"].contains_key("b2"));
}

/// A frame's record as `serde_json::to_value` writes it.
fn frame_value(records: &[&StepExecution]) -> Value {
    let m: Map<String, Value> = records
        .iter()
        .map(|r| (r.step_id.clone(), serde_json::to_value(r).unwrap()))
        .collect();
    Value::Object(m)
}

/// D-188: typed frames are the run-level JSON keys they stand for. A state or patch
/// holding a frame writes exactly what it wrote with the frame as `extra` JSON, and
/// reads back typed; `into_json` agrees.
#[test]
fn a_typed_frame_is_the_json_key_it_stands_for() {
    let mut a = StepExecution::new("a", StepStatus::Succeeded, 2);
    a.input = Some(json!({"item": 3}).into());
    a.output = Some(Value::Null.into());
    a.error = Some(Box::new(StepError::new("c", "m", Phase::Execute)));
    a.extra.insert("secretDerived".into(), json!(true));
    let b = StepExecution::new("b", StepStatus::Running, 1);
    let key = "frame:/loop.iterations[3]";
    let frame: FrameRecords = [&a, &b]
        .into_iter()
        .map(|r| (r.step_id.clone(), Arc::new(r.clone())))
        .collect();
    let mut typed = RunState::new("r", "wf");
    typed.extra.insert("waitSeq".into(), json!(2));
    typed.frames.insert(key.into(), Arc::new(frame.clone()));
    let mut plain = RunState::new("r", "wf");
    plain.extra.insert("waitSeq".into(), json!(2));
    plain.extra.insert(key.into(), frame_value(&[&a, &b]));
    let text = serde_json::to_string(&typed).unwrap();
    assert_eq!(text, serde_json::to_string(&plain).unwrap());
    assert_eq!(typed.clone().into_json().to_string(), text);
    let back: RunState = serde_json::from_str(&text).unwrap();
    assert_eq!(back, typed, "read back typed, nothing left in extra");

    let mut patch = RunStatePatch {
        run_id: "r".into(),
        ..RunStatePatch::default()
    };
    patch.extra.insert("waitSeq".into(), json!(3));
    patch.frames.insert(key.into(), Some(Arc::new(frame)));
    patch
        .frames
        .insert("frame:/loop.iterations[0]".into(), None);
    let doc = json!({"runId": "r", "waitSeq": 3, key: frame_value(&[&a, &b]),
                     "frame:/loop.iterations[0]": null});
    assert_eq!(serde_json::to_value(&patch).unwrap(), doc);
    let back: RunStatePatch = serde_json::from_value(doc).unwrap();
    assert_eq!(back, patch);
}

/// D-188: a frame key whose value typed records would not give back equal (not an
/// object, a record that does not parse, a member typed records would drop or change)
/// is kept as JSON in `extra`, byte for byte; so is a record-shaped value under a key
/// that is not a frame's. A frame whose records only have their members in another
/// order is typed, and gives back an equal value.
#[test]
fn an_odd_frame_stays_json_untouched() {
    let a = StepExecution::new("a", StepStatus::Succeeded, 1);
    let good = frame_value(&[&a]);
    let key = "frame:/loop.iterations[0]";
    let odd = [
        json!([1]),
        json!({"a": {"stepId": "a"}}),
        json!({"a": {"stepId": "a", "status": "succeeded", "attempt": 1, "error": null}}),
        json!({"a": {"stepId": "a", "status": "failed", "attempt": 1,
                     "error": {"code": "c", "message": "m", "phase": "execute",
                               "retryable": false, "more": 1}}}),
    ];
    for value in odd {
        let doc = json!({"runId": "r", "workflowId": "wf", "status": "running",
                         "variables": {}, "steps": {}, key: value});
        let s: RunState = serde_json::from_value(doc.clone()).unwrap();
        assert!(s.frames.is_empty(), "{value}");
        assert_eq!(serde_json::to_string(&s).unwrap(), doc.to_string());
        let p: RunStatePatch = serde_json::from_value(json!({"runId": "r", key: value})).unwrap();
        assert!(p.frames.is_empty() && p.extra[key] == value, "{value}");
    }
    let s: RunState = serde_json::from_value(json!({"runId": "r", "workflowId": "wf",
        "status": "running", "frames": good, "frame:x": good}))
    .unwrap();
    assert_eq!(s.extra.keys().collect::<Vec<_>>(), ["frames"]);
    assert_eq!(s.frames.keys().collect::<Vec<_>>(), ["frame:x"]);
    let p: RunStatePatch = serde_json::from_value(json!({"runId": "r", "other": null})).unwrap();
    assert!(p.frames.is_empty() && p.extra["other"].is_null());
    let reordered = json!({"a": {"attempt": 1, "status": "succeeded", "stepId": "a"}});
    let s: RunState = serde_json::from_value(json!({"runId": "r", "workflowId": "wf",
        "status": "running", key: reordered}))
    .unwrap();
    assert!(
        s.extra.is_empty(),
        "typed although its members are in another order"
    );
    assert_eq!(serde_json::to_value(&s).unwrap()[key], reordered);
}

/// D-189: a control record's typed blocks are the record-level key they stand for: a
/// record holding them writes exactly what it wrote with them as `extra` JSON (in the
/// same place among the other keys), reads back typed, and `into_json` agrees; nested
/// blocks too.
#[test]
fn typed_blocks_are_the_json_key_they_stand_for() {
    let mut inner = StepExecution::new("a", StepStatus::Succeeded, 1);
    inner.output = Some(json!({"x": [1, 2]}).into());
    let mut nested = StepExecution::new("inner", StepStatus::Succeeded, 1);
    let frame: FrameRecords = [("a".to_owned(), Arc::new(inner.clone()))]
        .into_iter()
        .collect();
    nested.blocks = Some(Box::new(Blocks {
        kind: BlockKind::Branches,
        frames: vec![Arc::new(frame.clone())],
        after: None,
    }));
    let nested_frame: FrameRecords = [("inner".to_owned(), Arc::new(nested.clone()))]
        .into_iter()
        .collect();
    for &kind in BlockKind::ALL {
        let mut typed = StepExecution::new("loop", StepStatus::Succeeded, 1);
        typed.extra.insert("secretDerived".into(), json!(true));
        typed.blocks = Some(Box::new(Blocks {
            kind,
            frames: vec![
                Arc::new(frame.clone()),
                Arc::new(FrameRecords::default()),
                Arc::new(nested_frame.clone()),
            ],
            after: Some("secretDerived".into()),
        }));
        // A key set after the blocks is written after them, as it was set.
        typed.extra.insert("failedIterations".into(), json!([1]));
        let mut plain = typed.clone();
        plain.blocks = None;
        plain.extra.shift_remove("failedIterations");
        let nested_json = json!({"inner": {"stepId": "inner", "status": "succeeded",
            "attempt": 1, "branches": [{"a": serde_json::to_value(&inner).unwrap()}]}});
        plain.extra.insert(
            kind.key().into(),
            json!([{"a": serde_json::to_value(&inner).unwrap()}, {}, nested_json]),
        );
        plain.extra.insert("failedIterations".into(), json!([1]));
        let text = serde_json::to_string(&typed).unwrap();
        assert_eq!(text, serde_json::to_string(&plain).unwrap());
        assert_eq!(typed.clone().into_json().to_string(), text);
        let back: StepExecution = serde_json::from_str(&text).unwrap();
        assert_eq!(back, typed, "read back typed, nested blocks too");
    }
}

/// D-189: an `iterations` / `branches` value typed records would not give back equal
/// stays JSON in `extra`, byte for byte.
#[test]
fn odd_blocks_stay_json_untouched() {
    let a = serde_json::to_value(StepExecution::new("a", StepStatus::Running, 1)).unwrap();
    let mut with_null = a.clone();
    with_null["error"] = Value::Null;
    for value in [
        json!({"a": a}),
        json!([1]),
        json!([{"a": a}, []]),
        json!([{"a": with_null}]),
        json!([{"a": {"stepId": "a"}}]),
    ] {
        let doc = json!({"stepId": "loop", "status": "succeeded", "attempt": 1,
                         "iterations": value});
        let r: StepExecution = serde_json::from_value(doc.clone()).unwrap();
        assert!(r.blocks.is_none(), "{value}");
        assert_eq!(serde_json::to_string(&r).unwrap(), doc.to_string());
    }
}

/// A record as JSON: what this crate writes, or (`odd`) the same with one change a
/// foreign store might make — a `null` member, a member removed, a member added to
/// its error — or any small JSON value.
fn record_doc() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let written = (
        0usize..5,
        0u32..3,
        proptest::option::of(0i64..9),
        any::<bool>(),
    )
        .prop_map(|(status, attempt, output, failed)| {
            let statuses = [
                StepStatus::Pending,
                StepStatus::Running,
                StepStatus::Succeeded,
                StepStatus::Failed,
                StepStatus::Skipped,
            ];
            let mut r = StepExecution::new("s", statuses[status], attempt);
            r.output = output.map(|n| json!({"n": n}).into());
            if failed {
                r.error = Some(Box::new(StepError::new("c", "m", Phase::Execute)));
            }
            serde_json::to_value(&r).unwrap()
        });
    (written, 0usize..5).prop_map(|(mut doc, odd)| {
        match odd {
            1 => doc["finishedAt"] = Value::Null,
            2 => {
                doc.as_object_mut().map(|m| m.remove("status"));
            }
            3 if doc.get("error").is_some() => doc["error"]["more"] = json!(1),
            4 => doc = json!([doc]),
            _ => {}
        }
        doc
    })
}

/// A frame's JSON: records by id (some perhaps odd), or any small value.
fn frame_doc() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    prop_oneof![
        4 => proptest::collection::vec(record_doc(), 0..3).prop_map(|records| {
            let m: Map<String, Value> = records
                .into_iter()
                .enumerate()
                .map(|(i, r)| (format!("s{i}"), r))
                .collect();
            Value::Object(m)
        }),
        1 => Just(json!([1])),
        1 => Just(Value::Null),
    ]
}

proptest::proptest! {
    /// D-188 / D-189: whatever a store gives back, reading it as a RunState or a patch
    /// and writing it again gives an equal JSON value: typed frames and blocks lose
    /// nothing, and what they cannot type is kept as it was.
    #[test]
    fn any_state_or_patch_reads_and_writes_back_equal(
        frames in proptest::collection::vec((0usize..4, frame_doc()), 0..4),
        blocks in proptest::collection::vec(frame_doc(), 0..3),
        branches in proptest::bool::ANY,
    ) {
        let keys = ["frame:/a.iterations[0]", "frame:/b.branches[1]", "other", "frames"];
        let mut control = serde_json::to_value(StepExecution::new("c", StepStatus::Succeeded, 1)).unwrap();
        control["secretDerived"] = json!(true);
        control[if branches { "branches" } else { "iterations" }] = Value::Array(blocks);
        control["failedIterations"] = json!([0]);
        control["z1"] = json!(1);
        control["z2"] = json!(2);
        let mut doc = json!({"runId": "r", "workflowId": "wf", "status": "running",
                             "variables": {}, "steps": {"c": control}});
        let mut patch = json!({"runId": "r", "steps": {"c": doc["steps"]["c"].clone()}});
        for (k, v) in frames {
            patch[keys[k]] = v.clone();
            if !v.is_null() {
                doc[keys[k]] = v;
            }
        }
        let state: RunState = serde_json::from_value(doc.clone()).unwrap();
        proptest::prop_assert_eq!(serde_json::to_value(&state).unwrap(), doc.clone());
        // A record's keys keep their order, its blocks where they stood.
        proptest::prop_assert_eq!(
            serde_json::to_string(&state.steps["c"]).unwrap(),
            doc["steps"]["c"].to_string()
        );
        proptest::prop_assert_eq!(state.into_json(), doc);
        let p: RunStatePatch = serde_json::from_value(patch.clone()).unwrap();
        proptest::prop_assert_eq!(serde_json::to_value(&p).unwrap(), patch);
    }
}

/// D-188: a key lives in `frames` or in `extra`, never both, whichever a patch set last
/// (a patch's frames after its extra keys), by reference and by value alike.
#[test]
fn a_key_is_a_frame_or_an_extra_never_both() {
    let key = "frame:/loop.iterations[0]";
    let frame: Arc<FrameRecords> = Arc::new(
        [("a".to_owned(), record("a", StepStatus::Succeeded, json!(1)))]
            .into_iter()
            .collect(),
    );
    let patch = |extra: Option<Value>, frame: Option<Option<Arc<FrameRecords>>>| {
        let mut p = RunStatePatch {
            run_id: "r".into(),
            ..RunStatePatch::default()
        };
        if let Some(v) = extra {
            p.extra.insert(key.into(), v);
        }
        if let Some(f) = frame {
            p.frames.insert(key.into(), f);
        }
        p
    };
    let steps = [
        (patch(Some(json!("foreign")), None), Some(false)),
        (patch(None, Some(Some(frame.clone()))), Some(true)),
        (patch(Some(json!("again")), None), Some(false)),
        (
            patch(Some(json!("both")), Some(Some(frame.clone()))),
            Some(true),
        ),
        (patch(None, Some(None)), None),
        (patch(Some(json!("x")), None), Some(false)),
        (patch(Some(Value::Null), None), None),
    ];
    let mut by_ref = RunState::new("r", "wf");
    let mut by_value = RunState::new("r", "wf");
    for (p, want) in steps {
        by_ref.apply(&p);
        by_value.apply_owned(p);
        for s in [&by_ref, &by_value] {
            let got = match (s.frames.contains_key(key), s.extra.contains_key(key)) {
                (false, false) => None,
                (true, false) => Some(true),
                (false, true) => Some(false),
                (true, true) => panic!("{key} is both a frame and an extra key"),
            };
            assert_eq!(got, want);
        }
    }
}

/// D-182: folding a patch shares its records with the state (no copy), and a writer
/// through `Arc::make_mut` copies a shared record instead of changing the patch's.
#[test]
fn folding_shares_records_and_a_writer_copies_a_shared_one() {
    let mut p = RunStatePatch {
        run_id: "r".into(),
        ..RunStatePatch::default()
    };
    p.steps
        .insert("a".into(), record("a", StepStatus::Succeeded, json!(1)));
    let mut s = RunState::new("r", "");
    s.apply(&p);
    assert!(Arc::ptr_eq(&s.steps["a"], &p.steps["a"]));
    let mut owned = RunState::new("r", "");
    owned.apply_owned(p.clone());
    assert!(Arc::ptr_eq(&owned.steps["a"], &p.steps["a"]));
    if let Some(r) = s.steps.get_mut("a") {
        Arc::make_mut(r).output = Some(json!(2).into());
    }
    assert_eq!(p.steps["a"].output, Some(json!(1).into()));
    assert_eq!(s.steps["a"].output, Some(json!(2).into()));
    // Serialized, a shared record is the record itself.
    let text = serde_json::to_string(&owned).unwrap_or_default();
    assert!(text.contains(r#""steps":{"a":{"stepId":"a","status":"succeeded""#));
}

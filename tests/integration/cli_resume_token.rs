//! `w6w-sim resume --token` is the schedule firing (issue 14 item 6, D-125, CTRL-7): the
//! virtual clock moves to the time the wait was scheduled for, in a new process, so the
//! times after a manual resume are those of the run that fired its schedule itself.

use std::process::Output;

use crate::support::{bin, example, report};

fn w6w(args: &[&str], store: &std::path::Path) -> Output {
    bin()
        .args(args)
        .arg(example("wait.workflow.json"))
        .arg("--scenario")
        .arg(example("wait.scenario.json"))
        .arg("--store")
        .arg(store)
        .output()
        .expect("spawn w6w-sim")
}

#[test]
fn a_manual_resume_moves_the_clock_to_the_scheduled_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let queued = report(&w6w(&["run", "--stop-at-suspend"], dir.path()));
    assert_eq!(queued["run"]["status"], "queued");
    let token = queued["run"]["resumeToken"]
        .as_str()
        .expect("a resume token")
        .to_owned();
    let fire_at = queued["schedules"][0]["fireAtMs"]
        .as_u64()
        .expect("fireAtMs");
    assert!(
        queued["clockMs"].as_u64() < Some(fire_at),
        "suspended before its time"
    );
    let resumed = report(&w6w(
        &["resume", "--run", "run_1", "--token", &token],
        dir.path(),
    ));
    assert_eq!(resumed["run"]["status"], "succeeded");
    assert!(resumed["clockMs"].as_u64() >= Some(fire_at), "{resumed}");
    // The same run with the schedule fired by the simulator itself: the same times.
    let other = tempfile::tempdir().expect("tempdir");
    let automatic = report(&w6w(&["run"], other.path()));
    assert_eq!(resumed["run"]["steps"], automatic["run"]["steps"]);
    assert_eq!(resumed["clockMs"], automatic["clockMs"]);
}

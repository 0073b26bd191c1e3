//! A server whose job the switch refused to admit (no room: zero
//! configuration, `docs/HOTPATH.md`, "Several jobs on one switch") steps
//! aside, and counts again once the switch admits the job: its link keeps
//! asking, and the switch's memory frees when another job ends.

use std::sync::Arc;
use std::time::Duration;

use zebra_agent::{AgentConfig, Aside, HotSet, KeyRanges, OnlineConfig, ServerAgent, SwitchHeard};
use zebra_proto::Timestamp;

/// A zero-configuration server: no hot key yet, room for 64 values, online.
fn agent() -> ServerAgent {
    let hot = HotSet::new(std::iter::empty(), KeyRanges::pslite(1))
        .unwrap()
        .with_capacity(64)
        .unwrap();
    let mut c = AgentConfig::new(1, 2, 1);
    c.online = Some(OnlineConfig::new(10));
    ServerAgent::new(c, Arc::new(hot), 0).unwrap()
}

fn aside(s: &ServerAgent) -> Option<Aside> {
    s.online_decision().and_then(|d| d.aside)
}

#[test]
fn a_job_refused_at_admission_counts_again_once_the_switch_admits_it() {
    // Admitted before `register_wait_ms` passed, or after the server took
    // the switch as silent.
    for silent in [None, Some(Duration::from_secs(2))] {
        let mut s = agent();
        s.on_switch(SwitchHeard::Waiting);
        s.step_aside(Aside::NotAdmitted);
        assert_eq!(aside(&s), Some(Aside::NotAdmitted));
        if let Some(waited) = silent {
            s.on_switch(SwitchHeard::Silent(waited));
            assert_eq!(aside(&s), Some(Aside::NotAdmitted), "still the reason");
        }
        // Not on a timer: the switch says when there is room.
        s.poll(Timestamp(3_600_000_000));
        assert_eq!(s.poll_at(), None, "{silent:?}");
        assert_eq!(
            (s.stats().online_aside, s.stats().online_recounts),
            (1, 0),
            "{silent:?}"
        );
        s.on_switch(SwitchHeard::Answered);
        assert_eq!(s.stats().online_recounts, 1, "{silent:?}: counts again");
        assert_eq!(aside(&s), None, "{silent:?}: no longer aside");
        s.on_switch(SwitchHeard::Answered);
        assert_eq!(s.stats().online_recounts, 1, "once");
    }
}

/// An answer that admits the job from the start changes nothing.
#[test]
fn a_job_admitted_at_once_does_not_count_again() {
    let mut s = agent();
    s.on_switch(SwitchHeard::Waiting);
    s.on_switch(SwitchHeard::Answered);
    assert_eq!((s.stats().online_aside, s.stats().online_recounts), (0, 0));
    assert_eq!(aside(&s), None);
}

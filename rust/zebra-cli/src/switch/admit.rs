//! `zebra switch --admit`: the admission decision of a switch that admits
//! jobs as their servers register, for a control plane that keeps the
//! switch's state itself (the P4 control plane, `p4/controller`). It reads
//! one JSON document on standard input — the jobs the switch holds, each
//! with the first slot of its region, and the REGISTER asking to be
//! admitted — and prints the decision as JSON, decided by the rules the
//! software switch runs ([`zebra_hotpath::admission`],
//! [`zebra_proto::admission_base`]), so they are written once.
//!
//! ```text
//! in:  {"jobs": [{"id": 7, "workers": 2, "hot_keys": 64, "base": 0}],
//!       "register": {"job": 8, "server": 0, "workers": 2, "capacity": 64, "token": 0}}
//! out: {"capacity": 64, "base": 8, "job": {...}, "reason": null}
//! ```
//!
//! `capacity` 0 is a refusal, `reason` says why; `job` and `base` are set
//! when the job is new to the switch (`base`: its region's first slot). A
//! switch whose settings size its jobs holds those, whatever `jobs` says,
//! and grants a REGISTER for one of them its capacity when the sizes agree.

use serde::{Deserialize, Serialize};
use zebra_hotpath::admission::{admission_request, admitted_job, AdmissionRequest};
use zebra_hotpath::HotpathConfig;
use zebra_proto::wire::{Admission, RegisterRepr};

use super::plan::JobPlan;

/// A job the switch holds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeldJob {
    pub id: u16,
    pub workers: u16,
    pub hot_keys: u32,
    /// First slot of its region in every register.
    pub base: u32,
}

/// A REGISTER asking to be admitted.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdmitRegister {
    pub job: u16,
    pub server: u16,
    pub workers: u16,
    pub capacity: u32,
    pub token: u32,
}

/// The document `zebra switch --admit` reads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdmitQuery {
    pub jobs: Vec<HeldJob>,
    pub register: AdmitRegister,
}

/// The document it prints.
#[derive(Debug, Serialize)]
pub struct AdmitAnswer {
    /// Hot values granted (0: refused).
    pub capacity: u32,
    /// A new job's first slot.
    pub base: Option<u32>,
    /// A new job, as the switch holds it.
    pub job: Option<JobPlan>,
    /// Why it is refused.
    pub reason: Option<String>,
}

fn refused(reason: String) -> AdmitAnswer {
    AdmitAnswer {
        capacity: 0,
        base: None,
        job: None,
        reason: Some(reason),
    }
}

/// The decision for `query` on a switch of `config` (its template or its
/// jobs, key and protocol settings).
pub fn decide(config: &HotpathConfig, query: &AdmitQuery) -> AdmitAnswer {
    // A switch that admits jobs holds the ones the query names; one whose
    // settings size its jobs holds those (and admits no other).
    let mut proto = config.proto.clone();
    let mut used = Vec::new();
    if let Some(template) = &config.admit {
        proto.jobs = query
            .jobs
            .iter()
            .map(|j| admitted_job(template, j.id, j.workers, j.hot_keys, 0))
            .collect();
        used = query
            .jobs
            .iter()
            .zip(&proto.jobs)
            .map(|(held, cfg)| (held.base, held.base.saturating_add(proto.region_slots(cfg))))
            .collect();
    }
    let q = &query.register;
    let r = RegisterRepr {
        job: q.job,
        server: q.server,
        ack: false,
        admit: Some(Admission {
            workers: q.workers,
            capacity: q.capacity,
        }),
        epoch: 0,
        token: q.token,
    };
    let a = Admission {
        workers: q.workers,
        capacity: q.capacity,
    };
    match admission_request(
        &proto,
        config.admit.as_ref(),
        config.job_key.as_ref(),
        &r,
        a,
    ) {
        Err(why) => refused(why),
        Ok(AdmissionRequest::Known(capacity)) => AdmitAnswer {
            capacity,
            base: None,
            job: None,
            reason: None,
        },
        Ok(AdmissionRequest::New(job)) => match zebra_proto::admission_base(&proto, &job, &used) {
            Err(e) => refused(format!("job {}: {e}", job.id)),
            Ok(base) => AdmitAnswer {
                capacity: job.hot_keys,
                base: Some(base),
                job: Some(JobPlan::of(&job, &proto)),
                reason: None,
            },
        },
    }
}

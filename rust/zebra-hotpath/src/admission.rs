//! What a REGISTER asking to be admitted (its 20-byte form) gets from a
//! switch that admits jobs as their servers register: the rule both the
//! software switch (`SwitchNode`) and the P4 control plane (through
//! `zebra switch --admit`) follow, so it is written once.
//!
//! A job the switch has answers with its capacity when the REGISTER's
//! worker count and server agree; a job it does not have is built from the
//! switch's template (the REGISTER's id, workers and hot values, one
//! server, the token the jobs' key derives) when the REGISTER shows that
//! token and comes from server 0. Where the new job goes in memory is
//! [`zebra_proto::admission_base`]'s rule.

use zebra_config::JobKey;
use zebra_proto::wire::{Admission, RegisterRepr};
use zebra_proto::{job_token, Config, JobConfig};

/// What a REGISTER with admission asks of the switch.
#[derive(Debug, Clone, PartialEq)]
pub enum AdmissionRequest {
    /// A job the switch has, of the REGISTER's size: its hot values.
    Known(u32),
    /// A job to admit, as the switch would hold it.
    New(JobConfig),
}

/// The job a switch whose admitted jobs are like `template` holds for job
/// `id` of `workers` workers and `capacity` hot values, with `token` (0: no
/// key; the switch draws one).
pub fn admitted_job(
    template: &JobConfig,
    id: u16,
    workers: u16,
    capacity: u32,
    token: u32,
) -> JobConfig {
    JobConfig {
        id,
        workers,
        hot_keys: capacity,
        servers: 1,
        owners: None,
        token,
        ..template.clone()
    }
}

/// What REGISTER `r` asking for `a` gets from a switch with the jobs of
/// `config`, admitting jobs like `template` (`None`: it admits none) under
/// the jobs' key `job_key`; `Err` says why it is refused.
pub fn admission_request(
    config: &Config,
    template: Option<&JobConfig>,
    job_key: Option<&JobKey>,
    r: &RegisterRepr,
    a: Admission,
) -> Result<AdmissionRequest, String> {
    if let Some(job) = config.job(r.job) {
        return if job.workers == a.workers && r.server < job.servers {
            Ok(AdmissionRequest::Known(job.hot_keys))
        } else {
            Err(format!(
                "job {} server {} of {} workers: the job has {} workers and {} servers",
                r.job, r.server, a.workers, job.workers, job.servers
            ))
        };
    }
    let Some(template) = template else {
        return Err(format!(
            "job {}: this switch admits no job (its settings size its jobs)",
            r.job
        ));
    };
    let token = job_key.map_or(0, |k| job_token(k.as_bytes(), r.job));
    if token != 0 && r.token != token {
        return Err(format!("job {} without the token of the jobs' key", r.job));
    }
    if r.server != 0 {
        return Err(format!(
            "job {} for server {}: an admitted job has one server, 0",
            r.job, r.server
        ));
    }
    Ok(AdmissionRequest::New(admitted_job(
        template, r.job, a.workers, a.capacity, token,
    )))
}

//! `zebra config`: the check the library makes at start-up (`zebra_config` for the
//! `ZEBRA_*` variables, then `zebra_runtime::Plan` for the hot path: the settings file,
//! the hot-keys file, PS-lite's `DMLC_*`), run from the shell, and its result in the
//! names the user typed. `--list`: every setting of the one table
//! ([`zebra_config::SETTINGS`]): its variable, settings-file key and `zebra switch`
//! flag, its default and what it does.

use std::process::ExitCode;

use zebra_config::{Config, SETTINGS};
use zebra_hotpath::Settings;
use zebra_runtime::{hot_path_problems, JobEnv, Plan};

/// The settings table as `zebra config --list` prints it: a header and one
/// line per setting (`-` where it has no variable, key or flag), each column
/// but the last as wide as its widest entry.
pub fn settings_table() -> String {
    let rows: Vec<[String; 5]> =
        [["VARIABLE", "FILE KEY", "FLAG", "DEFAULT", "MEANING"].map(String::from)]
            .into_iter()
            .chain(SETTINGS.iter().map(|s| {
                [
                    s.env.unwrap_or("-").to_string(),
                    s.key.unwrap_or("-").to_string(),
                    s.flag.map_or("-".to_string(), |f| format!("--{f}")),
                    s.default.to_string(),
                    s.help.to_string(),
                ]
            }))
            .collect();
    let width = |c: usize| rows.iter().map(|r| r[c].len()).max().unwrap_or(0);
    let widths = [width(0), width(1), width(2), width(3)];
    rows.iter()
        .map(|r| {
            let mut line = String::new();
            for (cell, w) in r.iter().zip(widths) {
                line.push_str(&format!("{cell:<w$}  "));
            }
            line.push_str(&r[4]);
            line.push('\n');
            line
        })
        .collect()
}

/// The variables of this environment that the check reads, as typed (a job
/// key never shown).
fn typed() -> Vec<String> {
    let mut vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        .filter(|(k, _)| {
            k.starts_with("ZEBRA_")
                || [
                    "DMLC_ROLE",
                    "DMLC_NUM_WORKER",
                    "DMLC_NUM_SERVER",
                    "DMLC_PS_ROOT_URI",
                    "DMLC_PS_ROOT_PORT",
                ]
                .contains(&k.as_str())
        })
        .collect();
    vars.sort();
    vars.into_iter()
        .map(|(k, v)| match k.as_str() {
            "ZEBRA_JOB_KEY" => format!("{k} is set (never shown)"),
            _ => format!("{k}={v:?}"),
        })
        .collect()
}

/// `zebra config`: exit 2 with every problem the library would refuse, else
/// what it would run with.
pub fn check() -> ExitCode {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(errors) => {
            eprintln!("zebra config: {errors}");
            return ExitCode::from(2);
        }
    };
    let mut job = JobEnv::from_env();
    let mut notes = Vec::new();
    let hot_path = config.enable && (config.switch.is_some() || config.trace.is_some());
    if hot_path && job.role.is_none() {
        // The launcher sets it in each process; every role checks the same.
        job.role = Some("worker".into());
        notes.push("DMLC_ROLE is not set here (PS-lite's launcher sets it in each process): the hot path is checked as every role checks it".to_string());
    }
    let plan = match Plan::from_config(&config, &job) {
        Ok(plan) => plan,
        Err(problems) => {
            eprintln!("zebra config: {}", hot_path_problems(&problems));
            return ExitCode::from(2);
        }
    };
    for line in typed() {
        println!("{line}");
    }
    if let (Some(path), true) = (&config.hot_config, hot_path) {
        // Read by the plan just now; shown line by line as written.
        if let Ok(settings) = Settings::load(path) {
            for line in settings.given() {
                println!("{line}");
            }
        }
    }
    println!(
        "mode: {}",
        if config.enable {
            "on (Zebra's engine carries the zmq calls)"
        } else {
            "off (every zmq call goes to the real libzmq)"
        }
    );
    if !config.enable && (config.switch.is_some() || config.trace.is_some()) {
        notes.push(
            "ZEBRA_SWITCH and ZEBRA_TRACE are not used in mode off: set ZEBRA_ENABLE=1".into(),
        );
    }
    if let Some(plan) = &plan {
        println!("hot path: {}", plan.summary());
    }
    for note in notes {
        println!("note: {note}");
    }
    println!("zebra config: OK");
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_table_is_aligned() {
        let table = settings_table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), SETTINGS.len() + 1);
        let column = |word: &str| lines[0].find(word).unwrap();
        let (key, flag) = (column("FILE KEY"), column("FLAG"));
        let (default, meaning) = (column("DEFAULT"), column("MEANING"));
        for (line, s) in lines[1..].iter().zip(SETTINGS) {
            assert!(line.starts_with(s.env.unwrap_or("-")), "{line}");
            assert!(line[key..].starts_with(s.key.unwrap_or("-")), "{line}");
            let f = s.flag.map_or("-".into(), |f| format!("--{f}"));
            assert!(line[flag..].starts_with(&f), "{line}");
            assert!(line[default..].starts_with(s.default), "{line}");
            assert_eq!(&line[meaning..], s.help, "{line}");
        }
    }
}

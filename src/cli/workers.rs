//! `cohort workers` (the workers for a human) and `cohort hook` (what the agents'
//! hooks run: record the event, wake the servers, print nothing, always succeed).

use std::io::Read;
use std::process::ExitCode;

use crate::{config::Config, engine::Engine};
use cohort_workers::events;

/// The most of a hook's input read from stdin.
const PAYLOAD_MAX: u64 = 16 << 20;

/// `cohort hook [--worker ID] EVENT [PAYLOAD]`: the worker comes from `--worker` or
/// `COHORT_WORKER_ID`; the payload from the argument (Codex's notify passes it so)
/// or stdin. Runs without the async runtime: a hook must be quick.
pub fn hook(config: &Config, worker: Option<&str>, event: &str, payload: Option<&str>) -> ExitCode {
    let worker = worker
        .map(str::to_string)
        .or_else(|| std::env::var("COHORT_WORKER_ID").ok())
        .filter(|w| !w.trim().is_empty() && !w.contains(['/', '\0']) && w != "..");
    let Some(worker) = worker else {
        // Not a worker's agent (a hook file shared with a human's session): nothing to do.
        return ExitCode::SUCCESS;
    };
    let input = match payload {
        Some(p) => p.to_string(),
        None => {
            let mut text = String::new();
            let _ = std::io::stdin().take(PAYLOAD_MAX).read_to_string(&mut text);
            text
        }
    };
    // The worker's own hooks inherit its key from the agent's environment; a hook
    // run from anywhere else records a line the server will not take.
    let key = std::env::var(events::HOOK_KEY_ENV)
        .ok()
        .and_then(|k| cohort_terminal::seal::SealKey::from_hex(&k).ok());
    let mut input = input;
    if event == "PermissionRequest" {
        match cohort_workers::policy::answer_by_policy(
            &config.state_dir,
            &worker,
            &input,
            key.as_ref(),
        ) {
            Some(Ok(answer)) => {
                // The agent reads the decision from the hook's output: no dialog.
                println!("{answer}");
                return ExitCode::SUCCESS;
            }
            // The request goes to the dialog with why the policy did not decide.
            Some(Err(explained)) => input = explained,
            None => {}
        }
    }
    events::record(&config.state_dir, &worker, event, &input, key.as_ref());
    ExitCode::SUCCESS
}

/// `cohort workers`: every worker with its state, branch and directory.
pub async fn list(config: &Config) -> Result<(), String> {
    let engine = Engine::start(config).await.map_err(|e| e.to_string())?;
    let views = engine
        .workers
        .list_workers()
        .await
        .map_err(|e| e.to_string())?;
    if views.is_empty() {
        println!("no workers (start some through MCP with spawn_workers)");
        return Ok(());
    }
    let now = events::now_ms();
    let rows: Vec<[String; 6]> = views
        .iter()
        .map(|v| {
            let a = &v.observation.assessment;
            [
                v.row.name.clone(),
                v.row.agent.name().to_string(),
                a.state.name().to_string(),
                format!("{}s", ((now - a.since_ms).max(0)) / 1000),
                v.row.branch.clone().unwrap_or_else(|| "-".into()),
                a.reason.clone(),
            ]
        })
        .collect();
    print!(
        "{}",
        super::table(["NAME", "AGENT", "STATE", "SINCE", "BRANCH", "WHY"], &rows)
    );
    Ok(())
}

/// `cohort workers rules`: the screen words in use, as a `screens.toml` (or with
/// `transcripts` the transcript rules, as a `transcripts.toml`); which files they
/// come from, and the price table's, on stderr; failure when a user's file was
/// refused.
pub fn rules(transcripts: bool) -> std::process::ExitCode {
    use cohort_workers::{prices, screen_rules, transcript_rules};
    let standing = screen_rules::standing();
    let read = transcript_rules::standing();
    match transcripts {
        true => print!("{}", transcript_rules::current().to_toml()),
        false => print!("{}", screen_rules::current().to_toml()),
    }
    eprintln!("{}", screen_rules::describe(&standing));
    eprintln!("{}", transcript_rules::describe(&read));
    let priced = prices::standing();
    match (&priced.file, &priced.error) {
        (_, Some(error)) => eprintln!("no price table: the user's file was refused: {error}"),
        (Some(file), None) => eprintln!(
            "price table {} ({} model(s))",
            file.display(),
            prices::current().model.len()
        ),
        (None, None) => eprintln!("no price table: costs only where the CLI states them"),
    }
    match (standing.error, read.error, priced.error) {
        (None, None, None) => std::process::ExitCode::SUCCESS,
        _ => std::process::ExitCode::FAILURE,
    }
}

/// `cohort workers explain NAME`: why the worker is in its state.
pub async fn explain(config: &Config, name: &str) -> Result<(), String> {
    let engine = Engine::start(config).await.map_err(|e| e.to_string())?;
    let row = engine
        .workers
        .worker_row(name)
        .await
        .map_err(|e| e.to_string())?;
    let x = engine
        .workers
        .examine_worker(&row)
        .await
        .map_err(|e| e.to_string())?;
    println!("{}", row.name);
    for line in x.explanation {
        println!("  {line}");
    }
    Ok(())
}

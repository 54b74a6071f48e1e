//! `cohort playbook run FILE` and `cohort events --follow [TARGETS]`.
//!
//! The event feed prints one line per event, each once, in order: commands ending,
//! programs exiting, sessions opening and closing, locks, agents' states and every
//! notification (watcher hits among them), including what other cohort processes
//! publish. A tool that turns each line of a command's output into a notification
//! (Claude Code's Monitor) makes it a push channel for a manager agent.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use cohort_backends::PaneId;
use tokio::sync::broadcast::error::RecvError;

use crate::{config::Config, engine::Engine};
use cohort_orchestration::playbook::{run::Runner, Playbook};
use cohort_terminal::{events::EngineEvent, SendOptions};

/// `cohort playbook run` arguments.
#[derive(Debug, Args)]
pub struct PlaybookRunArgs {
    /// The playbook: a TOML or JSON file.
    pub file: PathBuf,
    /// Print the report as JSON (the playbook tool's result).
    #[arg(long)]
    pub json: bool,
    /// Who is typing (an agent name), checked against locks.
    #[arg(long, value_name = "NAME")]
    pub owner: Option<String>,
    /// Only check the file; run nothing.
    #[arg(long)]
    pub check: bool,
}

/// `cohort events` arguments.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Keep printing events as they happen (until interrupted); without it, print the
    /// recent ones.
    #[arg(long, short)]
    pub follow: bool,
    /// How many recent events to print (without --follow).
    #[arg(long, short = 'n', default_value_t = 30, value_name = "N")]
    pub last: usize,
    /// One JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also output arrivals and command starts (many lines).
    #[arg(long)]
    pub all: bool,
    /// Only events of these sessions, agents, teams or paths (default: all).
    pub targets: Vec<String>,
}

/// Runs a playbook file; exit status 0 when it succeeded, 1 when not, 2 when the
/// file is not a usable playbook.
pub async fn playbook_run(config: &Config, args: &PlaybookRunArgs) -> std::process::ExitCode {
    use std::process::ExitCode;
    let book = match Playbook::from_file(&args.file) {
        Ok(book) => book,
        Err(e) => {
            eprintln!("cohort: {e}");
            return ExitCode::from(2);
        }
    };
    if args.check {
        println!(
            "{}: a playbook of {} steps; nothing was run",
            args.file.display(),
            book.steps.len()
        );
        return ExitCode::SUCCESS;
    }
    let engine = match Engine::start(config).await {
        Ok(engine) => engine,
        Err(e) => {
            eprintln!("cohort: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("cohort: cancelling the playbook (what was typed keeps running)");
            on_interrupt.cancel();
        }
    });
    let runner = Runner {
        send: SendOptions::default(),
        caller: cohort_terminal::Caller::new("cli").as_owner(args.owner.clone()),
    };
    let report = engine
        .orchestrator
        .run_playbook(&book, &runner, &cancel, |p| {
            eprintln!("[{}/{}] {}", p.done, p.total, p.message);
        })
        .await;
    let ok = report.ok;
    let result = crate::mcp::PlaybookResult::from(report);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&result).unwrap_or_default()
        );
    } else {
        print!("{}", result.text());
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// What the targets reach: their panes, and the names they and their agents go by.
async fn reached(
    engine: &Engine,
    targets: &[String],
) -> Result<(HashSet<PaneId>, HashSet<String>), String> {
    let mut panes: HashSet<PaneId> = HashSet::new();
    let mut names: HashSet<String> = HashSet::new();
    if targets.is_empty() {
        return Ok((panes, names));
    }
    for (label, pane) in engine
        .terminal
        .expand_targets(targets)
        .await
        .map_err(|e| e.to_string())?
    {
        let pane = pane.map_err(|e| e.to_string())?;
        names.insert(label);
        if let Some(identity) = &pane.identity {
            names.insert(identity.name.clone());
            names.extend(identity.agent.clone());
        }
        if let Some(agent) = engine.orchestrator.agent_in(&pane).await {
            names.insert(agent);
        }
        panes.insert(pane.id);
    }
    Ok((panes, names))
}

/// Prints the recent events (from the history every cohort process of the state
/// directory keeps), or with `--follow` the events as they happen, one line each.
pub async fn events(config: &Config, args: &EventsArgs) -> Result<(), String> {
    let engine = Engine::start(config).await.map_err(|e| e.to_string())?;
    let (panes, names) = reached(&engine, &args.targets).await?;
    let mut sessions: HashMap<PaneId, String> = HashMap::new();
    if !args.follow {
        return recent(config, args, &engine, &panes, &names, &mut sessions).await;
    }
    let bus = engine.terminal.bus();
    let (mut events, mut states) = bus.subscribe_states();
    eprintln!(
        "cohort: following events{} (interrupt to stop)",
        of_targets(&args.targets)
    );
    let mut stdout = std::io::stdout();
    // After a lag: the state each agent holds now, if it changed meanwhile.
    let mut missed: std::collections::VecDeque<EngineEvent> = Default::default();
    loop {
        let event = match missed.pop_front() {
            Some(event) => event,
            None => {
                let event = tokio::select! {
                    e = events.recv() => e,
                    _ = tokio::signal::ctrl_c() => return Ok(()),
                };
                match event {
                    Ok(event) if states.fresh(&event) => event,
                    Ok(_) => continue,
                    Err(RecvError::Lagged(n)) => {
                        let _ = writeln!(
                            stdout,
                            "# {n} events were missed (this reader fell behind); agents' states follow as they are now"
                        );
                        missed.extend(states.missed(bus).into_iter().map(|(event, _)| event));
                        continue;
                    }
                    Err(RecvError::Closed) => return Ok(()),
                }
            }
        };
        if !args.all
            && matches!(
                event,
                EngineEvent::Output { .. } | EngineEvent::CommandStarted { .. }
            )
        {
            continue;
        }
        if !args.targets.is_empty() && !concerns(&event, &panes, &names) {
            continue;
        }
        // Named as people name them: the session, beside the pane id.
        let session = match event.pane() {
            Some(pane) => Some(session_of(&engine, &mut sessions, pane).await),
            None => None,
        };
        let line = line(&event, session, None, args.json);
        if writeln!(stdout, "{line}").is_err() {
            // The reader went away.
            return Ok(());
        }
        let _ = stdout.flush();
    }
}

/// Prints the last `args.last` events of the history that concern the targets.
async fn recent(
    config: &Config,
    args: &EventsArgs,
    engine: &Engine,
    panes: &HashSet<PaneId>,
    names: &HashSet<String>,
    sessions: &mut HashMap<PaneId, String>,
) -> Result<(), String> {
    let history = cohort_orchestration::history::History::new(&config.state_dir);
    let entries: Vec<_> = history
        .recent(usize::MAX)
        .into_iter()
        .filter(|e| args.targets.is_empty() || concerns(&e.event, panes, names))
        .collect();
    if entries.is_empty() {
        eprintln!(
            "cohort: no events yet{}; `cohort events --follow` prints them as they happen",
            of_targets(&args.targets)
        );
    }
    let mut stdout = std::io::stdout();
    for entry in &entries[entries.len().saturating_sub(args.last)..] {
        let session = match entry.event.pane() {
            Some(pane) => Some(session_of(engine, sessions, pane).await),
            None => None,
        };
        let line = line(&entry.event, session, Some(entry.at_ms), args.json);
        if writeln!(stdout, "{line}").is_err() {
            break;
        }
    }
    Ok(())
}

/// ` of A, B` for the targets given, nothing without any.
fn of_targets(targets: &[String]) -> String {
    match targets.is_empty() {
        true => String::new(),
        false => format!(" of {}", targets.join(", ")),
    }
}

/// The line printed for `event` in `session`: JSON with the session (and the time it
/// happened, `at_ms`, when it is from the history), or text after the time (`at_ms`,
/// else now).
fn line(event: &EngineEvent, session: Option<String>, at_ms: Option<u64>, json: bool) -> String {
    if !json {
        return match at_ms {
            Some(at) => format!("{} {}", clock_of(at), body(event, session.as_deref())),
            None => describe(event, session.as_deref()),
        };
    }
    let mut value = serde_json::to_value(event).unwrap_or_default();
    if let Some(fields) = value.as_object_mut() {
        if let Some(at) = at_ms {
            fields.insert("at_ms".into(), at.into());
        }
        if let Some(session) = session {
            fields.insert("session".into(), session.into());
        }
    }
    value.to_string()
}

/// Whether `event` is about one of the followed panes or names.
fn concerns(event: &EngineEvent, panes: &HashSet<PaneId>, names: &HashSet<String>) -> bool {
    if let Some(pane) = event.pane() {
        return panes.contains(pane);
    }
    match event {
        EngineEvent::Notification { to, from, .. } => names.contains(to) || names.contains(from),
        EngineEvent::LockChanged { session, .. } => names.contains(session),
        EngineEvent::AgentState { agent, .. } => names.contains(agent),
        _ => false,
    }
}

/// The session name of `pane` (looked up once).
async fn session_of(engine: &Engine, cache: &mut HashMap<PaneId, String>, pane: &PaneId) -> String {
    if let Some(name) = cache.get(pane) {
        return name.clone();
    }
    let name = engine
        .terminal
        .session_record(pane)
        .await
        .ok()
        .flatten()
        .map_or_else(|| pane.to_string(), |s| s.name);
    cache.insert(pane.clone(), name.clone());
    name
}

/// Hours, minutes, seconds and milliseconds of now (UTC).
fn clock() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    clock_of(now.as_millis() as u64)
}

/// Hours, minutes, seconds and milliseconds (UTC) of a time in milliseconds since the
/// Unix epoch.
fn clock_of(ms: u64) -> String {
    let secs = ms / 1000 % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        ms % 1000
    )
}

/// One line for an event happening now.
pub fn describe(event: &EngineEvent, session: Option<&str>) -> String {
    format!("{} {}", clock(), body(event, session))
}

/// What an event says, without its time.
fn body(event: &EngineEvent, session: Option<&str>) -> String {
    let session = session.unwrap_or("?");
    let status = |s: &Option<i32>| s.map_or_else(|| "unknown".to_string(), |s| s.to_string());
    match event {
        EngineEvent::Output { from, to, .. } => {
            format!(
                "output session={session} bytes={}",
                to.saturating_sub(*from)
            )
        }
        EngineEvent::CommandStarted { .. } => format!("command_started session={session}"),
        EngineEvent::CommandEnded { exit_status, .. } => {
            format!(
                "command_ended session={session} exit={}",
                status(exit_status)
            )
        }
        EngineEvent::PaneExited { exit_status, .. } => {
            format!(
                "session_exited session={session} exit={}",
                status(exit_status)
            )
        }
        EngineEvent::SessionOpened { session, .. } => format!("session_opened session={session}"),
        EngineEvent::SessionClosed { session, .. } => format!("session_closed session={session}"),
        EngineEvent::Notification {
            to,
            from,
            kind,
            message,
        } => {
            let mut lines = message.lines();
            let first = lines.next().unwrap_or_default();
            let more = lines.count();
            let more = if more > 0 {
                format!(" (+{more} lines)")
            } else {
                String::new()
            };
            format!("notification kind={kind} from={from} to={to}: {first}{more}")
        }
        EngineEvent::LockChanged { session, holder } => match holder {
            Some(h) => format!("locked session={session} holder={h}"),
            None => format!("unlocked session={session}"),
        },
        EngineEvent::AppearanceChanged { session, .. } => {
            format!("appearance_changed session={session}")
        }
        EngineEvent::RecordingChanged { session, path, .. } => match path {
            Some(p) => format!("recording session={session} file={p}"),
            None => format!("recording_ended session={session}"),
        },
        EngineEvent::AgentState {
            agent,
            state,
            reason,
            ..
        } => format!("agent_state agent={agent} state={state}: {reason}"),
        EngineEvent::Signal { payload, .. } => {
            format!("signal session={session}: {payload}")
        }
        EngineEvent::Focused { .. } => format!("focused session={session}"),
        EngineEvent::LayoutChanged { window } => format!("layout_changed window={window}"),
        EngineEvent::OutsidePaneOpened { pane, window } => {
            format!("outside_pane_opened pane={pane} window={window:?}")
        }
        EngineEvent::OutsidePaneClosed { pane, window } => {
            format!("outside_pane_closed pane={pane} window={window:?}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_is_one_line() {
        let line = describe(
            &EngineEvent::Notification {
                to: "*".into(),
                from: "watch w-1".into(),
                kind: "watch".into(),
                message: "GET /\nbefore it:\nx".into(),
            },
            None,
        );
        assert!(
            line.ends_with("notification kind=watch from=watch w-1 to=*: GET / (+2 lines)"),
            "{line}"
        );
        let line = describe(
            &EngineEvent::CommandEnded {
                pane: PaneId::new("%1"),
                exit_status: Some(3),
                offset: 0,
            },
            Some("build"),
        );
        assert!(
            line.ends_with("command_ended session=build exit=3"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }
}

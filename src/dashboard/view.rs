//! What the page shows, as JSON: every session and agent grouped by team, with the
//! agent's state and why, the last command and its verdict, the lock, unread
//! notifications and the attach line; and each pane's screen as HTML rows.

use std::collections::{BTreeMap, HashMap};

use cohort_backends::PaneId;
use serde::Serialize;

use super::ansi::row_to_html;
use crate::engine::Engine;
use cohort_terminal::{sessions::session_name, TerminalError};

/// The page's whole state except the screens.
#[derive(Clone, Debug, Serialize)]
pub struct View {
    /// Teams in name order; sessions and agents without a team come last, under "".
    pub teams: Vec<TeamView>,
    /// Notifications not handed out yet (the most recent 50), oldest first.
    pub notifications: Vec<NoteView>,
    /// Whether the page may type into sessions.
    pub input: bool,
    /// The terminal backend.
    pub backend: String,
}

/// One team (or, with an empty name, everything outside teams).
#[derive(Clone, Debug, Serialize)]
pub struct TeamView {
    /// Its name; empty for sessions outside any team.
    pub name: String,
    /// Its parent team.
    pub parent: Option<String>,
    /// Its colour (`#rrggbb`), the one its panes show in the terminal.
    pub colour: Option<String>,
    /// Its sessions, by name.
    pub sessions: Vec<SessionView>,
    /// Its agents that have no open session.
    pub idle_agents: Vec<AgentView>,
}

/// One session.
#[derive(Clone, Debug, Serialize)]
pub struct SessionView {
    /// Session name.
    pub name: String,
    /// Backend pane id.
    pub pane: String,
    /// Window (tmux) or tab (iTerm2) name.
    pub window: String,
    /// Foreground program.
    pub command: String,
    /// Its title, when one was set (a program's, or `set_appearance`'s), not the
    /// terminal's default.
    pub title: Option<String>,
    /// Its badge (`set_appearance`; a team's name on a team's pane).
    pub badge: Option<String>,
    /// Whether its program exited.
    pub exited: bool,
    /// The agent working there.
    pub agent: Option<AgentView>,
    /// The last command typed through cohort.
    pub last_command: Option<String>,
    /// `running`, `exit 0`, `exit 2`, `exited 1`… (`None` when nothing ran yet).
    pub verdict: Option<String>,
    /// Whether the verdict is a success (`None` while running or unknown).
    pub ok: Option<bool>,
    /// Who holds its lock.
    pub locked_by: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// The `cohort attach` line a human runs to watch or take over.
    pub cohort_attach: String,
    /// The terminal's own command for the same (tmux's), or what to do.
    pub attach: String,
    /// Whether it is being recorded, and where.
    pub recording: Option<String>,
}

/// One agent.
#[derive(Clone, Debug, Serialize)]
pub struct AgentView {
    /// Agent name.
    pub name: String,
    /// Role.
    pub role: Option<String>,
    /// Teams.
    pub teams: Vec<String>,
    /// Its state as last reported (`idle`, `busy`, `needs_approval`…).
    pub state: Option<String>,
    /// Why, in words.
    pub reason: Option<String>,
    /// Notifications left for it and not read yet.
    pub unread: usize,
    /// When the agent is one of cohort's workers: its CLI, branch and spending.
    pub worker: Option<WorkerInfo>,
}

/// What the page shows of a worker besides its state.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerInfo {
    /// The agent CLI (`claude`, `codex`…).
    pub cli: String,
    /// Its worktree's branch.
    pub branch: Option<String>,
    /// What it spent so far (`32.7k tokens (…)`), once its transcript says.
    pub spent: Option<String>,
    /// What it changed since its base: commits, the diff's size, untracked files.
    pub changes: Option<String>,
    /// The permission request it waits on. Present while it waits for one.
    pub approval: Option<ApprovalView>,
}

/// A permission request a worker waits on, as the page shows it. The page answers
/// it by decision (`allow`, `allow_always`, `deny`) for this request only (its
/// `since_ms`), or, for a program whose dialogs cohort does not know, by keys.
#[derive(Clone, Debug, Serialize)]
pub struct ApprovalView {
    /// The tool and its input as the worker's hook reported them, else the
    /// dialog's question.
    pub request: String,
    /// Since when it waits (Unix ms): the page answers this request and no other.
    pub since_ms: i64,
    /// The keys that answer it instead (yes, no), for a custom program.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<ApprovalKeys>,
}

/// The keys a page sends to answer a custom program's dialog.
#[derive(Clone, Debug, Serialize)]
pub struct ApprovalKeys {
    /// Accepts (the highlighted first choice).
    pub yes: Vec<String>,
    /// Declines.
    pub no: Vec<String>,
}

/// One notification.
#[derive(Clone, Debug, Serialize)]
pub struct NoteView {
    /// For whom.
    pub to: String,
    /// From whom.
    pub from: String,
    /// Its kind.
    pub kind: String,
    /// The message.
    pub message: String,
}

/// A pane's screen.
#[derive(Clone, Debug, Serialize)]
pub struct ScreenView {
    /// Backend pane id.
    pub pane: String,
    /// Rows as HTML (colours kept).
    pub rows: Vec<String>,
    /// Columns.
    pub cols: u16,
    /// Cursor `[column, row]`.
    pub cursor: [u16; 2],
    /// Whether a full-screen program is showing.
    pub alternate: bool,
}

/// Agents' states as last reported, by agent name: `(state, reason)`.
pub type AgentStates = HashMap<String, (String, String)>;

/// A worker as the view takes it: what the page shows, and its state as last
/// recorded (for a page that has not heard it yet).
struct KnownWorker {
    info: WorkerInfo,
    state: String,
    reason: String,
}

/// The workers by name, with what the page shows of each. A worker whose state the
/// page has not heard yet shows its last recorded one.
async fn worker_infos(engine: &Engine, states: &AgentStates) -> HashMap<String, KnownWorker> {
    let Ok(rows) = engine.workers.worker_rows().await else {
        return HashMap::new();
    };
    let mut out = HashMap::new();
    for row in rows {
        let state = states
            .get(&row.name)
            .map(|s| s.0.clone())
            .unwrap_or_else(|| row.state.name().to_string());
        let spent = engine.workers.usage_of(&row).await.map(|u| u.summary());
        let changes = engine.workers.change_line(&row).await;
        // Only a permission: a question or a sign-in page is answered in the pane.
        let approval = match state.as_str() {
            "needs_approval" => {
                engine
                    .workers
                    .pending_request(&row)
                    .await
                    .map(|(request, since_ms)| ApprovalView {
                        request,
                        since_ms,
                        keys: (row.agent == cohort_workers::AgentKind::Custom).then(|| {
                            ApprovalKeys {
                                yes: vec!["Enter".into()],
                                no: vec!["Escape".into()],
                            }
                        }),
                    })
            }
            _ => None,
        };
        out.insert(
            row.name.clone(),
            KnownWorker {
                info: WorkerInfo {
                    cli: row.agent.name().to_string(),
                    branch: row.branch.clone(),
                    spent,
                    changes,
                    approval,
                },
                state: row.state.name().to_string(),
                reason: row.reason.clone(),
            },
        );
    }
    out
}

/// Builds the view from the engine's registry and panes.
pub async fn build(
    engine: &Engine,
    states: &AgentStates,
    input: bool,
) -> Result<View, TerminalError> {
    let panes = engine.terminal.list().await?;
    let agents = engine.terminal.agents().await?;
    let teams = engine.terminal.teams().await?;
    let records = engine.terminal.registry_sessions().await?;
    let pending = engine.orchestrator.pending_notifications().await?;
    let mut unread: HashMap<&str, usize> = HashMap::new();
    for note in &pending {
        *unread.entry(note.target.as_str()).or_default() += 1;
    }
    let workers = worker_infos(engine, states).await;
    let agent_view = |a: &cohort_terminal::registry::AgentRecord| AgentView {
        name: a.name.clone(),
        role: a.role.clone(),
        teams: a.teams.clone(),
        state: states
            .get(&a.name)
            .map(|s| s.0.clone())
            .or_else(|| workers.get(&a.name).map(|w| w.state.clone())),
        reason: states
            .get(&a.name)
            .map(|s| s.1.clone())
            .or_else(|| workers.get(&a.name).map(|w| w.reason.clone())),
        unread: unread.get(a.name.as_str()).copied().unwrap_or(0),
        worker: workers.get(&a.name).map(|w| w.info.clone()),
    };
    let mut grouped: BTreeMap<String, TeamView> = teams
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                TeamView {
                    name: t.name.clone(),
                    parent: t.parent.clone(),
                    colour: None,
                    sessions: Vec::new(),
                    idle_agents: Vec::new(),
                },
            )
        })
        .collect();
    let mut seen_agents = std::collections::HashSet::new();
    // Badges live in the terminal: asked of every pane at once.
    let backend = engine.terminal.backend();
    let looks =
        futures_util::future::join_all(panes.iter().map(|p| backend.appearance(&p.id))).await;
    let host = host_name();
    for (pane, look) in panes.iter().zip(looks) {
        let name = session_name(pane);
        let record = records.iter().find(|r| r.pane == pane.id.as_str());
        let agent = agents
            .iter()
            .find(|a| a.session.as_deref() == Some(name.as_str()))
            .or_else(|| {
                let stamped = pane.identity.as_ref()?.agent.as_deref()?;
                agents.iter().find(|a| a.name == stamped)
            });
        if let Some(a) = agent {
            seen_agents.insert(a.name.clone());
        }
        let team = agent
            .and_then(|a| a.teams.first().cloned())
            .or_else(|| pane.identity.as_ref().and_then(|i| i.team.clone()))
            .unwrap_or_default();
        let last = engine.terminal.last_command(&pane.id);
        let (verdict, ok) = verdict(&last, pane.dead);
        let locked_by = engine
            .terminal
            .lock_of(&pane.id)
            .await
            .ok()
            .flatten()
            .map(|l| l.owner);
        let view = SessionView {
            name: name.clone(),
            pane: pane.id.to_string(),
            window: pane.window_name.clone(),
            command: pane.command.clone(),
            title: Some(pane.title.clone())
                .filter(|t| !t.trim().is_empty() && Some(t.as_str()) != host.as_deref()),
            badge: look.ok().and_then(|l| l.badge).filter(|b| !b.is_empty()),
            exited: pane.dead,
            agent: agent.map(agent_view),
            last_command: last
                .typed
                .clone()
                .or_else(|| record.and_then(|r| r.last_command.clone())),
            verdict,
            ok,
            locked_by,
            tags: record.map(|r| r.tags.clone()).unwrap_or_default(),
            cohort_attach: cohort_attach(engine, &name),
            attach: engine.terminal.attach_text(&pane.id),
            // This process's recording, or one another process stamped on the pane.
            recording: engine
                .terminal
                .recording(&pane.id)
                .filter(|r| r.recording)
                .map(|r| r.path.display().to_string())
                .or_else(|| pane.recording.clone()),
        };
        team_entry(&mut grouped, &team).sessions.push(view);
    }
    for agent in agents.iter().filter(|a| !seen_agents.contains(&a.name)) {
        let team = agent.teams.first().cloned().unwrap_or_default();
        team_entry(&mut grouped, &team)
            .idle_agents
            .push(agent_view(agent));
    }
    // A team with nothing of its own to show (only sub-teams, or nothing yet) draws
    // no section: its sub-teams name it as their parent.
    let mut teams: Vec<TeamView> = grouped
        .into_values()
        .filter(|t| !t.sessions.is_empty() || !t.idle_agents.is_empty())
        .collect();
    for team in teams.iter_mut().filter(|t| !t.name.is_empty()) {
        team.colour = engine
            .terminal
            .team_colour(&team.name)
            .await
            .ok()
            .map(|c| c.hex);
    }
    // Outside any team last.
    teams.sort_by_key(|t| t.name.is_empty());
    for team in &mut teams {
        team.sessions.sort_by(|a, b| a.name.cmp(&b.name));
    }
    let skip = pending.len().saturating_sub(50);
    Ok(View {
        teams,
        notifications: pending
            .into_iter()
            .skip(skip)
            .map(|n| NoteView {
                to: n.target,
                from: n.source,
                kind: n.kind,
                message: n.message,
            })
            .collect(),
        input,
        backend: engine.terminal.backend().kind().name().to_string(),
    })
}

/// This machine's name: the title tmux gives a pane nobody titled.
fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that.
    let done = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if done != 0 {
        return None;
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

fn team_entry<'a>(grouped: &'a mut BTreeMap<String, TeamView>, team: &str) -> &'a mut TeamView {
    grouped.entry(team.to_string()).or_insert_with(|| TeamView {
        name: team.to_string(),
        parent: None,
        colour: None,
        sessions: Vec::new(),
        idle_agents: Vec::new(),
    })
}

/// `cohort attach NAME`, with the options that reach this engine's terminal server.
fn cohort_attach(engine: &Engine, name: &str) -> String {
    let key = engine.terminal.server_key();
    let server = if let Some(name) = key.strip_prefix("-L ") {
        (name != "cohort").then(|| format!("--socket {} ", shell_word(name)))
    } else if let Some(path) = key.strip_prefix("-S ") {
        Some(format!("--socket {} ", shell_word(path)))
    } else {
        Some(format!(
            "--backend {} ",
            engine.terminal.backend().kind().name()
        ))
    };
    format!(
        "cohort {}attach {}",
        server.unwrap_or_default(),
        shell_word(name)
    )
}

/// `word` quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The verdict in words, and whether it is a success.
fn verdict(
    last: &cohort_terminal::observe::LastCommand,
    dead: bool,
) -> (Option<String>, Option<bool>) {
    if let Some(exited) = last.exited.filter(|_| dead) {
        return match exited {
            Some(status) => (Some(format!("exited {status}")), Some(status == 0)),
            None => (Some("exited".into()), None),
        };
    }
    if last.running {
        return (Some("running".into()), None);
    }
    match last.exit {
        Some(Some(status)) => (Some(format!("exit {status}")), Some(status == 0)),
        Some(None) => (Some("done".into()), None),
        None if dead => (Some("exited".into()), None),
        None => (None, None),
    }
}

/// The screen of `pane` with its colours, as HTML rows.
pub async fn screen(engine: &Engine, pane: &PaneId) -> Result<ScreenView, TerminalError> {
    // A person's own pane beside cohort's sessions is not shown.
    if !engine.terminal.is_known_session(pane) {
        return Err(TerminalError::NotAdopted {
            pane: pane.clone(),
            window: String::new(),
        });
    }
    let screen = engine.terminal.screen_styled(pane).await?;
    Ok(ScreenView {
        pane: pane.to_string(),
        rows: screen.rows.iter().map(|r| row_to_html(r)).collect(),
        cols: screen.size.cols,
        cursor: [screen.cursor.x, screen.cursor.y],
        alternate: screen.alternate,
    })
}

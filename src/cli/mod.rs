//! The `cohort` command line.

mod doctor;
mod hosts;
pub mod init;
mod observe;
mod orchestrate;
mod reduce;
mod remote;
mod serve;
mod workers;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use unicode_width::UnicodeWidthStr;

use crate::{config::Config, engine::Engine};

/// cohort: persistent terminals for AI agents, served over MCP.
#[derive(Debug, Parser)]
#[command(name = "cohort", version, about, long_about = None)]
pub struct Cli {
    /// tmux server socket: a name (`-L`) or a path containing `/` (`-S`).
    #[arg(
        long,
        global = true,
        env = "COHORT_TMUX_SOCKET",
        value_name = "NAME|PATH"
    )]
    pub socket: Option<String>,
    /// Directory for cohort's state (default: the platform state directory).
    #[arg(long, global = true, env = "COHORT_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Terminal backend: tmux (default), iterm2, or auto (iTerm2 when running inside it and it answers, else tmux).
    #[arg(
        long,
        global = true,
        env = "COHORT_BACKEND",
        value_name = "tmux|iterm2|auto"
    )]
    pub backend: Option<String>,
    /// iTerm2's API socket (default: iTerm2's own), e.g. a fake server's.
    #[arg(long, global = true, env = "COHORT_ITERM2_SOCKET", value_name = "PATH")]
    pub iterm2_socket: Option<PathBuf>,
    /// More logging on stderr (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio (what an MCP host runs).
    Mcp {
        /// Toolsets to offer: core, layout, team, workers, orchestration
        /// (comma-separated), or all. The default, core, is what a single agent
        /// needs, in a short tool list.
        #[arg(
            long,
            env = "COHORT_TOOLSETS",
            default_value = "core",
            value_name = "LIST"
        )]
        toolsets: String,
        /// Serve this registered agent: only the tools its role allows.
        #[arg(
            long,
            env = "COHORT_AGENT",
            value_name = "NAME",
            conflicts_with = "role"
        )]
        agent: Option<String>,
        /// Serve with this role: readonly, monitor, tester, builder, devops,
        /// orchestrator, or a custom one.
        #[arg(long, env = "COHORT_ROLE", value_name = "ROLE")]
        role: Option<String>,
        /// Custom roles (TOML; default .cohort/roles.toml in the project, then
        /// roles.toml in the user's config directory), loaded into the registry.
        #[arg(long, env = "COHORT_ROLES", value_name = "FILE")]
        roles: Option<PathBuf>,
    },
    /// Serve MCP over streamable HTTP (path /mcp, with the dashboard at /dashboard/).
    Serve(serve::ServeArgs),
    /// Serve the live dashboard: every session and agent, their screens, states,
    /// locks and notifications, updated as they change.
    Dashboard(observe::DashboardArgs),
    /// Record a session to an asciicast v2 file until it ends or Ctrl-C.
    Record(observe::RecordArgs),
    /// Write a project .mcp.json for cohort and print how to add it to Claude Code,
    /// Codex and Cursor.
    Init(init::InitArgs),
    /// Print the tool reference generated from the tools' schemas.
    Tools {
        /// As Markdown (the README's tool reference).
        #[arg(long)]
        markdown: bool,
    },
    /// List cohort's sessions: name, pane, command, state.
    Ls {
        /// Also the panes cohort neither opened nor adopted (AGENT shows
        /// `(not cohort's)`); `cohort adopt PANE` makes one a session.
        #[arg(long)]
        all: bool,
    },
    /// Make a pane cohort did not open (listed by `ls --all`) one of its sessions.
    Adopt {
        /// The pane's id (`%7`) or its window name.
        pane: String,
        /// Its session name (default: its window name when free, else `pane-<number>`).
        #[arg(long)]
        name: Option<String>,
        /// The agent working there.
        #[arg(long)]
        agent: Option<String>,
        /// That agent's team.
        #[arg(long)]
        team: Option<String>,
    },
    /// List the workers: name, agent, state and why, branch; `explain NAME` says
    /// why one is in its state.
    Workers {
        /// `explain`.
        #[command(subcommand)]
        command: Option<WorkersCommand>,
    },
    /// Record an agent's hook event for its worker (what workers' hooks run).
    #[command(hide = true)]
    Hook {
        /// The worker (default: COHORT_WORKER_ID).
        #[arg(long)]
        worker: Option<String>,
        /// The event (`Stop`, `UserPromptSubmit`…, or `notify`).
        event: String,
        /// The event's JSON (default: read from stdin).
        payload: Option<String>,
    },
    /// Attach a human to a session or worker (replaces this process with tmux).
    Attach {
        /// Worker name, session name, persistent id or pane id.
        name: String,
        /// Print the attach command instead of running it.
        #[arg(long)]
        print: bool,
    },
    /// Check tmux, the socket and shell integration (and iTerm2 on macOS).
    Doctor,
    /// List the remote hosts declared in hosts.toml: whether each answers over ssh,
    /// its tmux, the round trip.
    Hosts,
    /// Run playbooks (TOML or JSON files).
    Playbook {
        /// What to do.
        #[command(subcommand)]
        command: PlaybookCommand,
    },
    /// Print one line per event: commands ending, sessions, locks, agents' states,
    /// notifications and watcher hits: the recent ones, or with `--follow` as they
    /// happen.
    Events(orchestrate::EventsArgs),
    /// Reduce a command's output to fewer tokens: `--command "git log" < file`, or
    /// `-- git log -n 30` to run it (its exit status passes through).
    Reduce(reduce::ReduceArgs),
}

/// `cohort workers` subcommands.
#[derive(Debug, Subcommand)]
pub enum WorkersCommand {
    /// Why a worker is in its state: the signal that decided and since when, its
    /// newest report, the screen rule and row that matched, its output, the bounds.
    Explain {
        /// The worker's name.
        name: String,
    },
    /// The screen words in use: the built-in ones with the user's screens.toml
    /// (`$XDG_CONFIG_HOME/cohort`, default `~/.config/cohort`, or
    /// `COHORT_SCREENS_FILE`), printed as such a file; exit status 1 when a user's
    /// file (screen words, transcript rules, prices) was refused (the reason names
    /// its line).
    Rules {
        /// Print the transcript rules in use instead, as a transcripts.toml (the
        /// user's from the same directory, or `COHORT_TRANSCRIPTS_FILE`).
        #[arg(long)]
        transcripts: bool,
    },
}

/// `cohort playbook` subcommands.
#[derive(Debug, Subcommand)]
pub enum PlaybookCommand {
    /// Run a playbook file: per-step, per-target results; exit status 1 when a
    /// step failed, 2 when the file is not a usable playbook.
    Run(orchestrate::PlaybookRunArgs),
}

/// The role a server enforces: the agent's, the one named, or none; custom roles
/// are loaded into the registry first.
pub(crate) fn server_role(
    config: &Config,
    agent: Option<&str>,
    role: Option<&str>,
    roles: Option<&std::path::Path>,
) -> Result<Option<cohort_orchestration::roles::Role>, String> {
    use cohort_orchestration::roles;
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let file = roles::roles_file(roles, &cwd);
    if agent.is_none() && role.is_none() && file.is_none() {
        return Ok(None);
    }
    let registry = cohort_terminal::registry::Registry::open(&config.state_dir.join("registry.db"))
        .map_err(|e| e.to_string())?;
    if let Some(file) = file {
        roles::load(&registry, &file)?;
    }
    match (agent, role) {
        (Some(agent), _) => roles::of_agent(&registry, agent).map(Some),
        (None, Some(role)) => roles::find(&registry, role).map(Some),
        (None, None) => Ok(None),
    }
}

/// Keeps the resident set small after big outputs: glibc raises its mmap threshold
/// each time a large block is freed, after which large buffers (a command's whole
/// output, its reduction) come from the heap arenas and stay resident. A fixed
/// threshold keeps them mmapped, so they go back to the system when freed. (Limiting
/// the number of arenas instead saves as much but makes threads contend for the
/// allocator, which showed up as milliseconds of completion latency.)
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only adjusts allocator parameters; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Sends logs to stderr (stdout is the MCP channel; `COHORT_LOG`/`RUST_LOG`
/// override), and traces over OTLP when built with `otel` and configured (see
/// [`crate::telemetry`]). Keep what it returns until the end.
pub fn init_logging(verbose: u8) -> crate::telemetry::Telemetry {
    crate::telemetry::init(verbose)
}

fn config(cli: &Cli) -> Result<Config, String> {
    let mut config = Config::from_env();
    if let Some(socket) = &cli.socket {
        config.tmux_socket = socket.parse()?;
    }
    if let Some(dir) = &cli.state_dir {
        config.state_dir = dir.clone();
    }
    if let Some(backend) = &cli.backend {
        config.backend = backend
            .parse()
            .map_err(|e: cohort_backends::BackendError| e.to_string())?;
    }
    if let Some(socket) = &cli.iterm2_socket {
        config.iterm2_socket = Some(socket.clone());
    }
    Ok(config)
}

/// Runs `cohort hook` without starting the async runtime (a hook must be quick);
/// `None` for every other command.
pub fn run_hook(cli: &Cli) -> Option<ExitCode> {
    let Command::Hook {
        worker,
        event,
        payload,
    } = &cli.command
    else {
        return None;
    };
    let config = config(cli).unwrap_or_else(|_| Config::from_env());
    Some(workers::hook(
        &config,
        worker.as_deref(),
        event,
        payload.as_deref(),
    ))
}

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> ExitCode {
    if let Some(code) = run_hook(&cli) {
        return code;
    }
    let config = match config(&cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cohort: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Mcp {
            toolsets,
            agent,
            role,
            roles,
        } => match (
            crate::mcp::Toolset::parse_list(&toolsets),
            server_role(&config, agent.as_deref(), role.as_deref(), roles.as_deref()),
        ) {
            (Ok(sets), Ok(role)) => crate::mcp::serve_stdio(&config, &sets, role, agent)
                .await
                .map_err(|e| e.to_string()),
            (Err(e), _) | (_, Err(e)) => Err(e),
        },
        Command::Serve(args) => serve::run(&config, args).await,
        Command::Dashboard(args) => observe::dashboard(&config, args).await,
        Command::Record(args) => observe::record(&config, args).await,
        Command::Init(args) => init::run(&args),
        Command::Tools { markdown } => tools(markdown),
        Command::Ls { all } => ls(&config, all).await,
        Command::Adopt {
            pane,
            name,
            agent,
            team,
        } => adopt(&config, &pane, name, agent, team).await,
        Command::Workers { command: None } => workers::list(&config).await,
        Command::Workers {
            command: Some(WorkersCommand::Explain { name }),
        } => workers::explain(&config, &name).await,
        Command::Workers {
            command: Some(WorkersCommand::Rules { transcripts }),
        } => return workers::rules(transcripts),
        // Handled before the match (see run_hook).
        Command::Hook { .. } => Ok(()),
        Command::Attach { name, print } => attach(&config, &name, print).await,
        Command::Doctor => return doctor::run(&config).await,
        Command::Hosts => return remote::list(&config).await,
        Command::Reduce(args) => return reduce::run(&args),
        Command::Playbook {
            command: PlaybookCommand::Run(args),
        } => return orchestrate::playbook_run(&config, &args).await,
        Command::Events(args) => orchestrate::events(&config, &args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cohort: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints the tool reference; needs no terminal server.
fn tools(markdown: bool) -> Result<(), String> {
    let text = crate::mcp::offline_reference(markdown);
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        // A reader that stopped early (`| head`) is not an error.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("could not write the tool reference: {e}"))
        }
        _ => Ok(()),
    }
}

async fn ls(config: &Config, all: bool) -> Result<(), String> {
    let engine = Engine::start(config).await.map_err(|e| e.to_string())?;
    let panes = match all {
        true => engine.terminal.list_all().await,
        false => engine.terminal.list().await,
    }
    .map_err(|e| e.to_string())?;
    if panes.is_empty() {
        println!("no sessions (open one through MCP, e.g. the `open` tool)");
        return Ok(());
    }
    let rows: Vec<[String; 5]> = panes
        .iter()
        .map(|p| {
            let name = p
                .identity
                .as_ref()
                .map(|i| i.name.clone())
                .unwrap_or_else(|| p.window_name.clone());
            let agent = match &p.identity {
                Some(identity) => identity.agent.clone().unwrap_or_else(|| "-".into()),
                None => "(not cohort's)".into(),
            };
            let state = match (p.dead, p.exit_status) {
                (true, Some(status)) => format!("exited ({status})"),
                (true, None) => "exited".to_string(),
                (false, _) => "running".to_string(),
            };
            [name, p.id.to_string(), p.command.clone(), state, agent]
        })
        .collect();
    print!(
        "{}",
        table(["NAME", "PANE", "COMMAND", "STATE", "AGENT"], &rows)
    );
    Ok(())
}

/// Makes a pane cohort did not open one of its sessions, and says how to reach it.
async fn adopt(
    config: &Config,
    pane: &str,
    name: Option<String>,
    agent: Option<String>,
    team: Option<String>,
) -> Result<(), String> {
    let engine = Engine::start(config).await.map_err(|e| e.to_string())?;
    let options = cohort_terminal::ownership::AdoptOptions { name, agent, team };
    let adopted = engine
        .terminal
        .adopt_pane(pane, options)
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "{} is cohort's session {:?} now",
        adopted.id,
        cohort_terminal::sessions::session_name(&adopted)
    );
    Ok(())
}

/// Columns aligned by display width (a CJK character takes two cells).
fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(UnicodeWidthStr::width);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(UnicodeWidthStr::width(&cell[..]));
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        for (i, cell) in cells.iter().enumerate() {
            out.push_str(cell);
            if i + 1 < cells.len() {
                out.push_str(&" ".repeat(widths[i] - UnicodeWidthStr::width(*cell) + 2));
            }
        }
        out.push('\n');
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

async fn attach(config: &Config, name: &str, print: bool) -> Result<(), String> {
    let engine = Engine::start(config).await.map_err(|e| e.to_string())?;
    // A worker's name first: its pane, wherever it is now.
    let worker = match engine.workers.worker_row(name).await {
        Ok(row) => engine
            .workers
            .worker_pane(&row)
            .await
            .map_err(|e| e.to_string())?,
        Err(_) => None,
    };
    let pane = match worker {
        Some(pane) => pane,
        None => engine
            .terminal
            .resolve(name)
            .await
            .map_err(|e| e.to_string())?,
    };
    let hint = engine.terminal.attach_hint(&pane.id);
    if print || hint.argv.is_empty() {
        if hint.argv.is_empty() {
            println!("{}", hint.description);
            return Ok(());
        }
        println!("{}", hint.command_line);
        return Ok(());
    }
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new(&hint.argv[0])
        .args(&hint.argv[1..])
        .env_remove("TMUX")
        .exec();
    Err(format!("could not run {}: {error}", hint.argv[0]))
}

#[cfg(test)]
mod tests {
    #[test]
    fn tables_align_by_display_width() {
        let rows = [
            ["世界".to_string(), "%1".to_string()],
            ["ab".to_string(), "%22".to_string()],
        ];
        let text = super::table(["NAME", "PANE"], &rows);
        // Where the second column starts, in display cells, on every line.
        let columns: Vec<usize> = text
            .lines()
            .map(|l| {
                let second = l.rfind(' ').unwrap() + 1;
                unicode_width::UnicodeWidthStr::width(&l[..second])
            })
            .collect();
        assert_eq!(columns, vec![6, 6, 6], "{text}");
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}

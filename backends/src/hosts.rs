//! Panes on several machines behind one [`TerminalBackend`]: this machine's terminal
//! and cohort's tmux server on each remote host, reached over SSH
//! ([`crate::tmux::remote`]).
//!
//! The layers above see one backend. A remote pane's id is its host's name and its
//! tmux id (`build-box:%3`; windows `build-box:@2`), so ids stay unique across
//! servers that number their panes alike, and every call goes to the server that
//! holds the pane. Hosts connect on first use: a spawn that names one, or a call on
//! one of its panes (after a restart, from the registry's ids).
//!
//! Every server delivers its events on this machine's backend's hub, a remote
//! server's with its ids qualified ([`crate::event::EventSink`]), on the task that
//! reads them: one subscription sees them all, and an answer to a command never
//! overtakes the events its server sent before it. Sync barriers
//! ([`TerminalBackend::sync`]) take their tokens from that one hub.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use crate::backend::TerminalBackend;
use crate::error::{BackendError, Result};
use crate::event::{EventHub, EventSink, EventStream};
use crate::keys::{Guarded, Key, Keystrokes};
use crate::layout::LayoutNode;
use crate::remote_procs::ProcSnapshot;
use crate::tmux::config::TmuxConfig;
use crate::tmux::remote::{check_name, SshHost};
use crate::tmux::TmuxBackend;
use crate::types::{
    Appearance, AttachHint, BackendKind, Capabilities, Identity, LineRange, Lines, PaneId,
    PaneInfo, PaneState, Screen, SpawnOptions, SplitOptions, WindowId, WindowInfo,
};

/// This machine's terminal and the remote hosts, as one backend; see the module docs.
pub struct Hosts {
    local: Server,
    hub: Arc<EventHub>,
    /// Hosts declared in the configuration, by name.
    declared: HashMap<String, SshHost>,
    /// What a remote server is configured like (socket, session, sizes), and where
    /// the shared SSH connections keep their sockets.
    template: TmuxConfig,
    remotes: Mutex<HashMap<String, Server>>,
    /// One connection attempt at a time per host: a host that does not answer holds
    /// up only the calls that need it.
    connecting: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Hosts that could not be reached, and when: [`TerminalBackend::reach`] does not
    /// try them again before [`RETRY_AFTER`].
    unreachable: Mutex<HashMap<String, std::time::Instant>>,
}

/// How long a host that could not be reached is left alone by listings (calls on its
/// panes still try, and say what ssh said).
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// One terminal server.
#[derive(Clone)]
struct Server {
    backend: Arc<dyn TerminalBackend>,
}

impl std::fmt::Debug for Hosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hosts")
            .field("declared", &self.declared.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Hosts {
    /// This machine's `local` backend, the `declared` hosts, and the configuration
    /// remote servers copy (`template`: socket, session name, sizes; its state
    /// directory keeps the shared SSH connections).
    pub fn new(
        local: Arc<dyn TerminalBackend>,
        template: TmuxConfig,
        declared: Vec<SshHost>,
    ) -> Hosts {
        let hub = local.event_hub();
        let local = Server { backend: local };
        Hosts {
            local,
            hub,
            declared: declared.into_iter().map(|h| (h.name.clone(), h)).collect(),
            template,
            remotes: Mutex::new(HashMap::new()),
            connecting: Mutex::new(HashMap::new()),
            unreachable: Mutex::new(HashMap::new()),
        }
    }

    /// The server of `host` (`None`: this machine), connecting to it when it is not
    /// yet. A host not declared is taken as an SSH destination of the same name.
    async fn server(&self, host: Option<&str>) -> Result<Server> {
        let Some(name) = host else {
            return Ok(self.local.clone());
        };
        if let Some(server) = lock(&self.remotes).get(name) {
            return Ok(server.clone());
        }
        let attempt = lock(&self.connecting)
            .entry(name.to_string())
            .or_default()
            .clone();
        let _one = attempt.lock().await;
        if let Some(server) = lock(&self.remotes).get(name) {
            return Ok(server.clone());
        }
        let ssh = match self.declared.get(name) {
            Some(ssh) => ssh.clone(),
            None => SshHost::new(name, name)?,
        };
        let mut config = self.template.clone();
        let mut ssh = ssh;
        if ssh.control_dir.is_none() {
            ssh.control_dir = Some(self.template.state_dir.join("ssh"));
        }
        config.host = Some(ssh);
        // The far side's own: its login shell, its environment.
        config.shell = None;
        config.server_env.clear();
        let events = EventSink::on_host(self.hub.clone(), name);
        let server = Server {
            backend: Arc::new(TmuxBackend::connect_into(config, events).await?),
        };
        lock(&self.remotes).insert(name.to_string(), server.clone());
        tracing::info!(target: "cohort::hosts", host = name, "connected to the remote host");
        Ok(server)
    }

    /// The connected remote servers, by host name.
    fn remotes(&self) -> Vec<(String, Server)> {
        lock(&self.remotes)
            .iter()
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect()
    }

    /// The server holding `pane` and the pane's id there.
    async fn route(&self, pane: &PaneId) -> Result<(Server, PaneId)> {
        let (host, id) = split(pane.as_str());
        let server = self.server(host).await?;
        Ok((server, PaneId(id.to_string())))
    }
}

/// The host named in a pane or window id (`far:%3` → `far`, `%3`), when the id is a
/// remote tmux id; any other id is this machine's.
pub fn split(id: &str) -> (Option<&str>, &str) {
    match id.split_once(':') {
        Some((host, rest)) if rest.starts_with(['%', '@']) && check_name(host).is_ok() => {
            (Some(host), rest)
        }
        _ => (None, id),
    }
}

/// `id` as the layers above know it: with its host's name when it has one.
pub fn qualify(host: Option<&str>, id: &str) -> String {
    match host {
        Some(host) => format!("{host}:{id}"),
        None => id.to_string(),
    }
}

fn pane_of(host: Option<&str>, pane: PaneId) -> PaneId {
    PaneId(qualify(host, pane.as_str()))
}

fn info_of(host: Option<&str>, mut info: PaneInfo) -> PaneInfo {
    info.id = pane_of(host, info.id);
    info.window = WindowId(qualify(host, &info.window.0));
    info
}

fn layout_of(host: Option<&str>, node: LayoutNode) -> LayoutNode {
    match node {
        LayoutNode::Pane { id, rect } => LayoutNode::Pane {
            id: pane_of(host, id),
            rect,
        },
        LayoutNode::Split {
            direction,
            rect,
            children,
        } => LayoutNode::Split {
            direction,
            rect,
            children: children.into_iter().map(|c| layout_of(host, c)).collect(),
        },
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[async_trait]
impl TerminalBackend for Hosts {
    fn kind(&self) -> BackendKind {
        self.local.backend.kind()
    }

    fn capabilities(&self) -> Capabilities {
        self.local.backend.capabilities()
    }

    fn attach_hint(&self, pane: &PaneId) -> AttachHint {
        let (host, id) = split(pane.as_str());
        let server = match host {
            None => Some(self.local.clone()),
            Some(name) => lock(&self.remotes).get(name).cloned(),
        };
        match server {
            Some(server) => server.backend.attach_hint(&PaneId(id.to_string())),
            None => AttachHint {
                argv: Vec::new(),
                command_line: String::new(),
                description: format!(
                    "host {} is not connected yet: use the session once, then ask again",
                    host.unwrap_or_default()
                ),
            },
        }
    }

    async fn spawn(&self, options: SpawnOptions) -> Result<PaneInfo> {
        let host = options.host.clone();
        let server = self.server(host.as_deref()).await?;
        let mut options = options;
        options.host = None;
        let info = server.backend.spawn(options).await?;
        Ok(info_of(host.as_deref(), info))
    }

    async fn split(&self, pane: &PaneId, options: SplitOptions) -> Result<PaneInfo> {
        let (host, _) = split(pane.as_str());
        if options
            .spawn
            .host
            .as_deref()
            .is_some_and(|h| Some(h) != host)
        {
            return Err(BackendError::InvalidArgument(
                "a split stays on the host of the pane it splits: open a session on the other host instead".into(),
            ));
        }
        let (server, id) = self.route(pane).await?;
        let mut options = options;
        options.spawn.host = None;
        let info = server.backend.split(&id, options).await?;
        Ok(info_of(host, info))
    }

    async fn close(&self, pane: &PaneId) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.close(&id).await
    }

    async fn list_panes(&self) -> Result<Vec<PaneInfo>> {
        let mut panes = self.local.backend.list_panes().await?;
        for (name, server) in self.remotes() {
            match server.backend.list_panes().await {
                Ok(list) => panes.extend(list.into_iter().map(|p| info_of(Some(&name), p))),
                // An unreachable host's panes are not listed; calls on them say why.
                Err(e) => {
                    tracing::warn!(target: "cohort::hosts", host = %name, error = %e, "the remote host's panes could not be listed")
                }
            }
        }
        Ok(panes)
    }

    async fn list_panes_if_running(&self) -> Result<Option<Vec<PaneInfo>>> {
        // Every server's or none: a listing missing a host's panes would read as
        // those panes gone.
        let mut panes = self.local.backend.list_panes_if_running().await?;
        for (name, server) in self.remotes() {
            match server.backend.list_panes_if_running().await? {
                Some(list) => panes
                    .get_or_insert_with(Vec::new)
                    .extend(list.into_iter().map(|p| info_of(Some(&name), p))),
                None => return Ok(None),
            }
        }
        Ok(panes)
    }

    async fn list_windows(&self) -> Result<Vec<WindowInfo>> {
        let mut windows = self.local.backend.list_windows().await?;
        for (name, server) in self.remotes() {
            if let Ok(list) = server.backend.list_windows().await {
                windows.extend(list.into_iter().map(|mut w| {
                    w.id = WindowId(qualify(Some(&name), &w.id.0));
                    w.layout = layout_of(Some(&name), w.layout);
                    w
                }));
            }
        }
        Ok(windows)
    }

    async fn send_text(&self, pane: &PaneId, text: &str) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.send_text(&id, text).await
    }

    async fn send_keys(&self, pane: &PaneId, keys: &[Key]) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.send_keys(&id, keys).await
    }

    async fn send_input(&self, pane: &PaneId, input: &[Keystrokes]) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.send_input(&id, input).await
    }

    async fn send_input_guarded(
        &self,
        pane: &PaneId,
        shell: Option<&str>,
        input: &[Keystrokes],
    ) -> Result<Guarded> {
        let (server, id) = self.route(pane).await?;
        server.backend.send_input_guarded(&id, shell, input).await
    }

    async fn paste(&self, pane: &PaneId, text: &str) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.paste(&id, text).await
    }

    async fn read_lines(&self, pane: &PaneId, range: LineRange) -> Result<Lines> {
        let (server, id) = self.route(pane).await?;
        server.backend.read_lines(&id, range).await
    }

    async fn read_screen(&self, pane: &PaneId) -> Result<Screen> {
        let (server, id) = self.route(pane).await?;
        server.backend.read_screen(&id).await
    }

    async fn read_screen_styled(&self, pane: &PaneId) -> Result<Screen> {
        let (server, id) = self.route(pane).await?;
        server.backend.read_screen_styled(&id).await
    }

    fn subscribe(&self) -> EventStream {
        self.hub.subscribe()
    }

    fn event_hub(&self) -> Arc<EventHub> {
        self.hub.clone()
    }

    async fn pane_state(&self, pane: &PaneId) -> Result<PaneState> {
        let (server, id) = self.route(pane).await?;
        server.backend.pane_state(&id).await
    }

    async fn sync(&self, pane: &PaneId) -> Result<u64> {
        let (server, id) = self.route(pane).await?;
        server.backend.sync(&id).await
    }

    async fn reach(&self, pane: &PaneId) -> bool {
        let (Some(host), _) = split(pane.as_str()) else {
            return true;
        };
        if lock(&self.remotes).contains_key(host) {
            return true;
        }
        if lock(&self.unreachable)
            .get(host)
            .is_some_and(|at| at.elapsed() < RETRY_AFTER)
        {
            return false;
        }
        match self.server(Some(host)).await {
            Ok(_) => {
                lock(&self.unreachable).remove(host);
                true
            }
            Err(e) => {
                tracing::warn!(target: "cohort::hosts", host, error = %e, "the remote host cannot be reached: its sessions are kept, not listed");
                lock(&self.unreachable).insert(host.to_string(), std::time::Instant::now());
                false
            }
        }
    }

    async fn process_snapshot(&self, pane: &PaneId) -> Result<Option<ProcSnapshot>> {
        let (server, id) = self.route(pane).await?;
        server.backend.process_snapshot(&id).await
    }

    async fn run_on_host(
        &self,
        host: &str,
        script: &str,
        input: &[u8],
        limit: Duration,
    ) -> Result<Vec<u8>> {
        check_name(host)?;
        let server = self.server(Some(host)).await?;
        server.backend.run_on_host(host, script, input, limit).await
    }

    async fn stamp_identity(&self, pane: &PaneId, identity: &Identity) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.stamp_identity(&id, identity).await
    }

    async fn stamp_mark_state(
        &self,
        pane: &PaneId,
        anchor: Option<&str>,
        announces_start: bool,
    ) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server
            .backend
            .stamp_mark_state(&id, anchor, announces_start)
            .await
    }

    async fn stamp_recording(&self, pane: &PaneId, path: Option<&str>) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.stamp_recording(&id, path).await
    }

    async fn set_title(&self, pane: &PaneId, title: &str) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.set_title(&id, title).await
    }

    async fn alert(&self, pane: &PaneId, message: &str) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.alert(&id, message).await
    }

    async fn set_status_line(&self, pane: &PaneId, line: Option<&str>) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.set_status_line(&id, line).await
    }

    async fn broadcast_groups(&self) -> Result<Vec<Vec<PaneId>>> {
        let mut groups = self.local.backend.broadcast_groups().await?;
        for (name, server) in self.remotes() {
            match server.backend.broadcast_groups().await {
                Ok(found) => groups.extend(
                    found
                        .into_iter()
                        .map(|g| g.into_iter().map(|p| pane_of(Some(&name), p)).collect()),
                ),
                // An unreachable host's groups are not listed, as its panes are not.
                Err(e) => {
                    tracing::warn!(target: "cohort::hosts", host = %name, error = %e, "the remote host's broadcast groups could not be read")
                }
            }
        }
        Ok(groups)
    }

    /// Each host gets its own groups (a group lies in one window, so on one host);
    /// only a host whose groups change is written to.
    async fn set_broadcast_groups(&self, groups: &[Vec<PaneId>]) -> Result<()> {
        let mut by_host: Vec<(Option<String>, Vec<Vec<PaneId>>)> = vec![(None, Vec::new())];
        for (name, _) in self.remotes() {
            by_host.push((Some(name), Vec::new()));
        }
        for group in groups {
            let hosts: Vec<Option<&str>> = group.iter().map(|p| split(p.as_str()).0).collect();
            if hosts.iter().any(|h| *h != hosts[0]) {
                return Err(BackendError::InvalidArgument(
                    "a broadcast group's panes are on different hosts: a group lies in one window, on one host".into(),
                ));
            }
            let host = hosts.first().copied().flatten().map(str::to_string);
            let ids: Vec<PaneId> = group
                .iter()
                .map(|p| PaneId(split(p.as_str()).1.to_string()))
                .collect();
            match by_host.iter_mut().find(|(h, _)| *h == host) {
                Some((_, list)) => list.push(ids),
                None => {
                    return Err(BackendError::InvalidArgument(format!(
                        "host {} is not connected: use one of its sessions first",
                        host.unwrap_or_default()
                    )))
                }
            }
        }
        for (host, wanted) in by_host {
            let server = self.server(host.as_deref()).await?;
            let now = match server.backend.broadcast_groups().await {
                Ok(now) => now,
                // Unreachable and asked for nothing: nothing to change there.
                Err(_) if wanted.is_empty() && host.is_some() => continue,
                Err(e) => return Err(e),
            };
            if now != wanted {
                server.backend.set_broadcast_groups(&wanted).await?;
            }
        }
        Ok(())
    }

    async fn in_broadcast_group(&self, pane: &PaneId) -> Result<bool> {
        let (server, id) = self.route(pane).await?;
        server.backend.in_broadcast_group(&id).await
    }

    /// The local terminal's: a remote tmux keeps no profiles.
    async fn set_team_profiles(&self, profiles: &[crate::types::TeamProfile]) -> Result<()> {
        self.local.backend.set_team_profiles(profiles).await
    }

    /// The local terminal's windows only: a remote tmux keeps no arrangements.
    async fn save_native_arrangement(
        &self,
        windows: &[WindowId],
        name: &str,
    ) -> Result<Vec<String>> {
        let local: Vec<WindowId> = windows
            .iter()
            .filter(|w| split(&w.0).0.is_none())
            .cloned()
            .collect();
        if local.is_empty() {
            return Ok(Vec::new());
        }
        self.local
            .backend
            .save_native_arrangement(&local, name)
            .await
    }

    /// The local terminal's: a remote tmux keeps none.
    async fn native_arrangements(&self) -> Result<Vec<String>> {
        self.local.backend.native_arrangements().await
    }

    async fn set_hidden(&self, pane: &PaneId, hidden: bool) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.set_hidden(&id, hidden).await
    }

    async fn cancel_copy_mode(&self, pane: &PaneId) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.cancel_copy_mode(&id).await
    }

    async fn set_appearance(&self, pane: &PaneId, appearance: &Appearance) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.set_appearance(&id, appearance).await
    }

    async fn appearance(&self, pane: &PaneId) -> Result<Appearance> {
        let (server, id) = self.route(pane).await?;
        server.backend.appearance(&id).await
    }

    async fn focus(&self, pane: &PaneId) -> Result<()> {
        let (server, id) = self.route(pane).await?;
        server.backend.focus(&id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_ids_carry_their_host_and_others_stay_as_they_are() {
        assert_eq!(split("far:%3"), (Some("far"), "%3"));
        assert_eq!(split("build-box.lan:@2"), (Some("build-box.lan"), "@2"));
        assert_eq!(split("%3"), (None, "%3"));
        // iTerm2's session ids hold a colon of their own.
        let iterm = "w0t0p0:6F6E2C1A-8D0B-4E2B-9E7C-1D2A3B4C5D6E";
        assert_eq!(split(iterm), (None, iterm));
        assert_eq!(split("bad host:%3"), (None, "bad host:%3"));
        assert_eq!(qualify(Some("far"), "%3"), "far:%3");
        assert_eq!(qualify(None, "%3"), "%3");
    }
}

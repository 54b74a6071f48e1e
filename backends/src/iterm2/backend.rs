//! [`TerminalBackend`] for iTerm2: each trait method as the iTerm2 requests that
//! carry it out.

use async_trait::async_trait;

use crate::backend::TerminalBackend;
use crate::error::{BackendError, Result};
use crate::event::{BackendEvent, EventStream};
use crate::keys::{Key, Keystrokes};
use crate::types::{
    Appearance, AttachHint, BackendKind, Capabilities, Identity, LineRange, Lines, PaneId,
    PaneInfo, PaneState, Screen, Size, SpawnOptions, SplitDirection, SplitOptions, WindowId,
    WindowInfo,
};

use super::events::Signer;
use super::layout::{layout_from, sessions_of};
use super::literal;
use super::proto::client_originated_message::Submessage as Req;
use super::proto::server_originated_message::Submessage as Rep;
use super::proto::*;
use super::requests::*;
use super::{
    identity_from, identity_values, lock, Iterm2Backend, ANCHOR_VAR, ANNOUNCES_VAR, ID_VARS,
};

use std::sync::atomic::Ordering;

#[async_trait]
impl TerminalBackend for Iterm2Backend {
    fn kind(&self) -> BackendKind {
        BackendKind::Iterm2
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            splits: true,
            // Output is the screen's text read by line number, not the program's bytes.
            raw_output_stream: false,
            prompt_marks: true,
            titles: true,
            badges: true,
            tab_colors: true,
            background_colors: true,
            cursor_colors: true,
            focus: true,
            foreground_process: true,
            // The shell also reports each mark signed, through a user variable
            // iTerm2 reports the changes of (see `marks`).
            signed_marks: self.inner.signed_marks.load(Ordering::Relaxed),
            // Each mark's signature carries a one-time token of the shell's pad.
            one_time_marks: self.inner.signed_marks.load(Ordering::Relaxed),
            // SplitPane has no size; the split is sized after with SetTabLayout.
            split_sizes: true,
            broadcast_input: true,
            broadcast_groups_share_windows: true,
            hide_panes: true,
            team_profiles: self.inner.config.dynamic_profiles.is_some(),
            native_arrangements: true,
        }
    }

    fn attach_hint(&self, pane: &PaneId) -> AttachHint {
        AttachHint {
            argv: Vec::new(),
            command_line: String::new(),
            description: format!(
                "switch to iTerm2: the pane is session {pane} in cohort's iTerm2 window \
                 (cohort can bring it to the front)"
            ),
        }
    }

    async fn spawn(&self, options: SpawnOptions) -> Result<PaneInfo> {
        if options.name.trim().is_empty() {
            return Err(BackendError::InvalidArgument(
                "a window needs a name".into(),
            ));
        }
        let mut props = self.profile_properties(&options)?;
        let Size { cols, rows } = options.size.unwrap_or(self.inner.config.default_size);
        if !(2..=10_000).contains(&cols) || !(2..=10_000).contains(&rows) {
            return Err(BackendError::InvalidArgument(format!(
                "window size {cols}x{rows} is out of range: use 2 to 10000 columns and rows"
            )));
        }
        let window = lock(&self.inner.window).clone();
        if window.is_none() || options.size.is_some() {
            props.push(property("Columns", cols.to_string()));
            props.push(property("Rows", rows.to_string()));
        }
        let mut profile = options.profile.clone();
        let request =
            |window: Option<String>, props: &[ProfileProperty], profile: &Option<String>| {
                Req::CreateTabRequest(CreateTabRequest {
                    profile_name: profile.clone(),
                    window_id: window,
                    tab_index: None,
                    custom_profile_properties: props.to_vec(),
                    select_tab: Some(false),
                    ..Default::default()
                })
            };
        let target = if options.size.is_some() { None } else { window };
        let mut reply = self.call(request(target.clone(), &props, &profile)).await?;
        if let Rep::CreateTabResponse(r) = &reply {
            // A team's profile iTerm2 no longer has (its file edited away): the
            // default profile, coloured as the pane joins its team.
            if profile.is_some() && r.status() == create_tab_response::Status::InvalidProfileName {
                tracing::warn!(target: "cohort::iterm2", profile = ?profile, "iTerm2 does not have the team's profile: starting from the default one");
                profile = None;
                reply = self.call(request(target.clone(), &props, &profile)).await?;
            }
        }
        if let Rep::CreateTabResponse(r) = &reply {
            if target.is_some() && r.status() == create_tab_response::Status::InvalidWindowId {
                props.push(property("Columns", cols.to_string()));
                props.push(property("Rows", rows.to_string()));
                reply = self.call(request(None, &props, &profile)).await?;
            }
        }
        let created = match reply {
            Rep::CreateTabResponse(r) => match r.status() {
                create_tab_response::Status::Ok => r,
                other => {
                    return Err(BackendError::Protocol(format!(
                        "iTerm2 could not open a tab: {other:?}"
                    )))
                }
            },
            other => return Err(unexpected("CreateTab", &other)),
        };
        let session = created
            .session_id
            .clone()
            .ok_or_else(|| BackendError::Protocol("CreateTab answered no session id".into()))?;
        if options.size.is_none() {
            *lock(&self.inner.window) = created.window_id.clone();
        }
        self.track(&session, options.identity.as_ref());
        let pane = PaneId(session);
        if let Some(tab) = created.tab_id {
            // The title is a format inside a string literal: both encoded, so it
            // shows as written.
            let title = literal::string_literal(&literal::interpolated(&options.name));
            self.invoke(
                &tab.to_string(),
                format!("iterm2.set_title(title: {title})"),
            )
            .await?;
        }
        if let Some(identity) = &options.identity {
            self.stamp_identity(&pane, identity).await?;
        }
        self.pane_info(&pane).await
    }

    async fn split(&self, pane: &PaneId, options: SplitOptions) -> Result<PaneInfo> {
        check_session_id(pane)?;
        let direction = match options.direction {
            // Side by side is a vertical divider.
            SplitDirection::Horizontal => split_pane_request::SplitDirection::Vertical,
            SplitDirection::Vertical => split_pane_request::SplitDirection::Horizontal,
        };
        let props = self.profile_properties(&options.spawn)?;
        let request = |profile: Option<String>| {
            Req::SplitPaneRequest(SplitPaneRequest {
                session: Some(pane.0.clone()),
                split_direction: Some(direction as i32),
                before: Some(false),
                profile_name: profile,
                custom_profile_properties: props.clone(),
            })
        };
        let mut reply = self.call(request(options.spawn.profile.clone())).await?;
        if let Rep::SplitPaneResponse(r) = &reply {
            if options.spawn.profile.is_some()
                && r.status() == split_pane_response::Status::InvalidProfileName
            {
                tracing::warn!(target: "cohort::iterm2", profile = ?options.spawn.profile, "iTerm2 does not have the team's profile: starting from the default one");
                reply = self.call(request(None)).await?;
            }
        }
        let new = match reply {
            Rep::SplitPaneResponse(r) => match r.status() {
                split_pane_response::Status::Ok => {
                    r.session_id.first().cloned().ok_or_else(|| {
                        BackendError::Protocol("SplitPane answered no session".into())
                    })?
                }
                split_pane_response::Status::SessionNotFound => {
                    return Err(BackendError::PaneGone(pane.clone()))
                }
                other => {
                    return Err(BackendError::Protocol(format!(
                        "iTerm2 could not split {pane}: {other:?}"
                    )))
                }
            },
            other => return Err(unexpected("SplitPane", &other)),
        };
        self.track(&new, options.spawn.identity.as_ref());
        let new = PaneId(new);
        if let Some(size) = options.size {
            // SplitPane has no size: the new pane takes half, then the tab's layout is
            // set with the two panes' sizes changed.
            if let Err(e) = self.size_split(pane, &new, options.direction, size).await {
                tracing::warn!(target: "cohort::iterm2", pane = %new, error = %e, "the split keeps iTerm2's default size");
            }
        }
        if let Some(identity) = &options.spawn.identity {
            self.stamp_identity(&new, identity).await?;
        }
        self.pane_info(&new).await
    }

    async fn close(&self, pane: &PaneId) -> Result<()> {
        check_session_id(pane)?;
        let reply = self
            .call(Req::CloseRequest(CloseRequest {
                target: Some(close_request::Target::Sessions(
                    close_request::CloseSessions {
                        session_ids: vec![pane.0.clone()],
                    },
                )),
                force: Some(true),
            }))
            .await?;
        match reply {
            Rep::CloseResponse(r) => match r.statuses.first().copied() {
                Some(0) => Ok(()),
                Some(1) | None => Err(BackendError::PaneGone(pane.clone())),
                Some(other) => Err(BackendError::Protocol(format!(
                    "iTerm2 did not close {pane}: status {other}"
                ))),
            },
            other => Err(unexpected("Close", &other)),
        }
    }

    async fn list_panes(&self) -> Result<Vec<PaneInfo>> {
        let conn = self.conn().await?;
        let layout = list_sessions(&conn).await?;
        // Which session is active in each tab: FocusResponse lists them.
        let focus = conn.send(Req::FocusRequest(FocusRequest {}))?;
        let mut rows = Vec::new();
        for window in &layout.windows {
            for tab in &window.tabs {
                let tab_id = tab.tab_id.clone().unwrap_or_default();
                let mut sessions = Vec::new();
                if let Some(root) = &tab.root {
                    sessions_of(root, &mut sessions);
                }
                let first = sessions.first().and_then(|s| s.unique_identifier.clone());
                let tab_vars = conn.send(variable_get(
                    variable_request::Scope::TabId(tab_id.clone()),
                    &["title"],
                ))?;
                let mut pending = Vec::new();
                for s in sessions {
                    pending.push(ask_about_session(&conn, s)?);
                }
                rows.push((tab_id, first, Some(tab_vars), pending));
            }
        }
        // Buried sessions run in no tab: listed, hidden, under no window's name.
        *lock(&self.inner.buried) = layout
            .buried_sessions
            .iter()
            .filter_map(|s| s.unique_identifier.clone())
            .collect();
        let mut buried = Vec::new();
        for s in layout.buried_sessions.iter().cloned() {
            buried.push(ask_about_session(&conn, s)?);
        }
        if !buried.is_empty() {
            rows.push((BURIED_WINDOW.to_string(), None, None, buried));
        }
        let mut panes = Vec::new();
        let mut adopt = Vec::new();
        let active_sessions = active_sessions(focus.wait().await?);
        for (tab_id, first, tab_vars, pending) in rows {
            let active = |id: &str| match &active_sessions {
                Some(active) => active.contains(id),
                None => first.as_deref() == Some(id),
            };
            let hidden = tab_vars.is_none();
            let title = match tab_vars {
                Some(vars) => tab_title(&tab_id, vars.wait().await?),
                None => String::new(),
            };
            for (summary, vars, probe) in pending {
                let id = PaneId(summary.unique_identifier.clone().unwrap_or_default());
                let vars = match parse_variables(&id, ID_VARS.len() + 1, vars.wait().await?) {
                    Ok(v) => v,
                    Err(BackendError::PaneGone(_)) => continue,
                    Err(e) => return Err(e),
                };
                let identity = identity_from(&vars[..ID_VARS.len()]);
                if identity.is_some() && !lock(&self.inner.tracks).contains_key(id.as_str()) {
                    adopt.push(id.clone());
                }
                let size = summary.grid_size.unwrap_or_default();
                panes.push(PaneInfo {
                    active: active(id.as_str()),
                    id,
                    window: WindowId(tab_id.clone()),
                    window_name: title.clone(),
                    title: summary.title.clone().unwrap_or_default(),
                    size: Size {
                        cols: size.width.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
                        rows: size.height.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
                    },
                    command: vars[ID_VARS.len()].clone().unwrap_or_default(),
                    dead: exited(probe.wait().await?)?,
                    exit_status: None,
                    recording: None,
                    identity,
                    hidden,
                });
            }
        }
        for pane in adopt {
            if let Err(e) = self.adopt(pane.as_str()).await {
                tracing::debug!(target: "cohort::iterm2", pane = %pane, error = %e, "could not follow an adopted pane");
            }
        }
        {
            let mut tracks = lock(&self.inner.tracks);
            // A session followed before its identity was read (adopted) learns what
            // its shell signs with; the anchor read back may lag behind the tokens
            // another process saw.
            for pane in &panes {
                if let (Some(track), Some(identity)) =
                    (tracks.get_mut(pane.id.as_str()), &pane.identity)
                {
                    if track.signer == Signer::Unknown {
                        track.signer = Signer::of(identity, false);
                    }
                }
            }
        }
        Ok(panes)
    }

    async fn list_windows(&self) -> Result<Vec<WindowInfo>> {
        let conn = self.conn().await?;
        let layout = list_sessions(&conn).await?;
        let mut pending = Vec::new();
        for window in &layout.windows {
            for tab in &window.tabs {
                let Some(root) = &tab.root else { continue };
                let id = tab.tab_id.clone().unwrap_or_default();
                let vars = conn.send(variable_get(
                    variable_request::Scope::TabId(id.clone()),
                    &["title"],
                ))?;
                pending.push((id, layout_from(root, 0, 0), vars));
            }
        }
        let mut windows = Vec::new();
        for (id, layout, vars) in pending {
            let name = tab_title(&id, vars.wait().await?);
            windows.push(WindowInfo {
                id: WindowId(id),
                name,
                layout,
            });
        }
        Ok(windows)
    }

    async fn send_text(&self, pane: &PaneId, text: &str) -> Result<()> {
        check_session_id(pane)?;
        if text.is_empty() {
            return Ok(());
        }
        let reply = self
            .call(Req::SendTextRequest(SendTextRequest {
                session: Some(pane.0.clone()),
                text: Some(text.to_string()),
                suppress_broadcast: Some(true),
            }))
            .await?;
        match reply {
            Rep::SendTextResponse(r) => match r.status() {
                send_text_response::Status::Ok => Ok(()),
                send_text_response::Status::SessionNotFound => {
                    Err(BackendError::PaneGone(pane.clone()))
                }
            },
            other => Err(unexpected("SendText", &other)),
        }
    }

    async fn send_keys(&self, pane: &PaneId, keys: &[Key]) -> Result<()> {
        self.send_text(pane, &keys_text(keys)?).await
    }

    /// Text and keys as the bytes they type, in one `SendText`: one round trip.
    async fn send_input(&self, pane: &PaneId, input: &[Keystrokes]) -> Result<()> {
        let mut text = String::new();
        for part in input {
            match part {
                Keystrokes::Text(t) => text.push_str(t),
                Keystrokes::Keys(keys) => text.push_str(&keys_text(keys)?),
            }
        }
        self.send_text(pane, &text).await
    }

    async fn paste(&self, pane: &PaneId, text: &str) -> Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        let body = text.replace("\r\n", "\r").replace('\n', "\r");
        // The end code cannot appear inside the paste.
        let body = body.replace("\x1b[201~", "");
        self.send_text(pane, &format!("\x1b[200~{body}\x1b[201~"))
            .await
    }

    async fn read_lines(&self, pane: &PaneId, range: LineRange) -> Result<Lines> {
        check_session_id(pane)?;
        let conn = self.conn().await?;
        let counts = line_counts(&conn, pane).await?;
        let total = (counts.history + counts.grid).max(0) as u64;
        let start = range.start.min(total);
        let end = range.end.min(total);
        if start >= end {
            return Ok(Lines {
                first: start,
                lines: Vec::new(),
                total,
            });
        }
        let base = counts.overflow;
        let buffer = get_buffer(
            &conn,
            pane.as_str(),
            lines_between(base + start as i64, base + end as i64),
        )
        .await?;
        Ok(Lines {
            first: start,
            lines: buffer
                .contents
                .iter()
                .map(|l| l.text.clone().unwrap_or_default().trim_end().to_string())
                .collect(),
            total,
        })
    }

    async fn read_screen(&self, pane: &PaneId) -> Result<Screen> {
        check_session_id(pane)?;
        let conn = self.conn().await?;
        let vars = conn.send(variable_get(
            variable_request::Scope::SessionId(pane.0.clone()),
            &["columns", "rows", "showingAlternateScreen"],
        ))?;
        let buffer = get_buffer(&conn, pane.as_str(), screen_only()).await?;
        let vars = parse_variables(pane, 3, vars.wait().await?)?;
        let num = |v: &Option<String>| v.as_deref().and_then(|s| s.parse::<u16>().ok());
        let rows: Vec<String> = buffer
            .contents
            .iter()
            .map(|l| l.text.clone().unwrap_or_default().trim_end().to_string())
            .collect();
        Ok(Screen {
            cursor: cursor_on_screen(&buffer),
            size: Size {
                cols: num(&vars[0]).unwrap_or(0),
                rows: num(&vars[1]).unwrap_or(rows.len() as u16),
            },
            rows,
            alternate: vars[2].as_deref() == Some("true"),
        })
    }

    fn subscribe(&self) -> EventStream {
        self.inner.hub.subscribe()
    }

    fn event_hub(&self) -> std::sync::Arc<crate::event::EventHub> {
        self.inner.hub.clone()
    }

    async fn pane_state(&self, pane: &PaneId) -> Result<PaneState> {
        check_session_id(pane)?;
        let conn = self.conn().await?;
        let names = [
            "jobName",
            "jobPid",
            "pid",
            "columns",
            "rows",
            "path",
            "name",
            "showingAlternateScreen",
            "tty",
        ];
        let vars = conn.send(variable_get(
            variable_request::Scope::SessionId(pane.0.clone()),
            &names,
        ))?;
        let probe = ask_exited(&conn, pane.as_str())?;
        let buffer = get_buffer(&conn, pane.as_str(), screen_only()).await?;
        let counts = line_counts(&conn, pane).await?;
        let v = parse_variables(pane, names.len(), vars.wait().await?)?;
        // The session is there (its variables answered): a refused probe means its
        // program ended.
        let dead = exited(probe.wait().await?)?;
        let pid = |s: &Option<String>| {
            s.as_deref()
                .and_then(|p| p.parse::<u32>().ok())
                .filter(|p| *p > 0)
        };
        let job_pid = pid(&v[1]);
        let shell_pid = pid(&v[2]);
        let job = v[0].clone().unwrap_or_default();
        let shell_command = if job_pid.is_some() && job_pid == shell_pid {
            job.clone()
        } else {
            shell_pid
                .and_then(crate::process::process_name)
                .unwrap_or_default()
        };
        let num = |s: &Option<String>| {
            s.as_deref()
                .and_then(|p| p.parse::<u16>().ok())
                .unwrap_or(0)
        };
        Ok(PaneState {
            foreground_command: job,
            foreground_pid: job_pid,
            shell_pid,
            shell_command,
            dead,
            exit_status: if dead {
                self.exit_status(pane.as_str())
            } else {
                None
            },
            cursor: cursor_on_screen(&buffer),
            size: Size {
                cols: num(&v[3]),
                rows: num(&v[4]),
            },
            // iTerm2 keeps `showingAlternateScreen` up to date as the program switches.
            alternate_screen: v[7].as_deref() == Some("true"),
            // iTerm2's copy mode takes keys typed at the keyboard; text sent through
            // the API always reaches the program, so for cohort there is none.
            copy_mode: false,
            bracketed_paste: None,
            title: v[6].clone().unwrap_or_default(),
            cwd: v[5].clone().filter(|s| !s.is_empty()),
            history_lines: counts.history.max(0) as u64,
            tty: v[8].clone().filter(|s| !s.is_empty()),
        })
    }

    async fn stamp_identity(&self, pane: &PaneId, identity: &Identity) -> Result<()> {
        check_session_id(pane)?;
        let json = |v: &Option<String>| match v {
            Some(s) => serde_json::Value::String(s.clone()).to_string(),
            None => "null".to_string(),
        };
        let values = identity_values(identity);
        let reply = self
            .call(Req::VariableRequest(VariableRequest {
                scope: Some(variable_request::Scope::SessionId(pane.0.clone())),
                set: ID_VARS
                    .iter()
                    .zip(values.iter())
                    .map(|(name, value)| variable_request::Set {
                        name: Some(name.to_string()),
                        value: Some(json(value)),
                    })
                    .collect(),
                get: Vec::new(),
            }))
            .await?;
        parse_variables(pane, 0, reply).map(|_| ())
    }

    async fn sync(&self, pane: &PaneId) -> Result<u64> {
        // A round trip on the connection notifications come on: what iTerm2 notified
        // before its answer is in the events task's queue by then.
        check_session_id(pane)?;
        self.variables(pane, &["jobName"]).await?;
        // The barrier goes through the events task, behind the notifications it has
        // not handled yet (it reads a session's new text in batches).
        let token = self.inner.hub.sync_token();
        if !self.conn().await?.barrier(token, pane.as_str()) {
            self.inner.hub.emit(BackendEvent::Synced { token });
        }
        Ok(token)
    }

    async fn stamp_mark_state(
        &self,
        pane: &PaneId,
        anchor: Option<&str>,
        announces_start: bool,
    ) -> Result<()> {
        check_session_id(pane)?;
        let json = |s: &str| serde_json::Value::String(s.to_string()).to_string();
        let mut set = Vec::new();
        if let Some(anchor) = anchor {
            set.push((ANCHOR_VAR, json(anchor)));
        }
        if announces_start {
            set.push((ANNOUNCES_VAR, json("1")));
        }
        if set.is_empty() {
            return Ok(());
        }
        let reply = self
            .call(Req::VariableRequest(VariableRequest {
                scope: Some(variable_request::Scope::SessionId(pane.0.clone())),
                set: set
                    .into_iter()
                    .map(|(name, value)| variable_request::Set {
                        name: Some(name.to_string()),
                        value: Some(value),
                    })
                    .collect(),
                get: Vec::new(),
            }))
            .await?;
        parse_variables(pane, 0, reply).map(|_| ())
    }

    async fn set_title(&self, pane: &PaneId, title: &str) -> Result<()> {
        check_session_id(pane)?;
        let name = literal::string_literal(&literal::interpolated(title));
        self.invoke(pane.as_str(), format!("iterm2.set_name(name: {name})"))
            .await
    }

    async fn alert(&self, pane: &PaneId, message: &str) -> Result<()> {
        check_session_id(pane)?;
        // As if the program had written them: iTerm2 posts the notification and
        // asks for attention (the Dock icon bounces once).
        let mut data = crate::types::alert_sequence(&crate::types::alert_text(message));
        data.extend_from_slice(b"\x1b]1337;RequestAttention=once\x07");
        let reply = self
            .call(Req::InjectRequest(InjectRequest {
                session_id: vec![pane.0.clone()],
                data: Some(data),
            }))
            .await?;
        match reply {
            Rep::InjectResponse(r) => match r.status.first().copied() {
                Some(0) => Ok(()),
                _ => Err(BackendError::PaneGone(pane.clone())),
            },
            other => Err(unexpected("Inject", &other)),
        }
    }

    async fn set_status_line(&self, pane: &PaneId, line: Option<&str>) -> Result<()> {
        check_session_id(pane)?;
        let value = match line {
            Some(line) => serde_json::Value::String(line.to_string()).to_string(),
            None => "null".to_string(),
        };
        self.set_variables(pane, &[("user.cohortStatus", value)])
            .await
    }

    async fn set_appearance(&self, pane: &PaneId, appearance: &Appearance) -> Result<()> {
        self.apply_appearance(pane, appearance).await?;
        if let Some(title) = &appearance.title {
            self.set_title(pane, title).await?;
        }
        Ok(())
    }

    async fn appearance(&self, pane: &PaneId) -> Result<Appearance> {
        self.read_appearance(pane).await
    }

    async fn broadcast_groups(&self) -> Result<Vec<Vec<PaneId>>> {
        self.groups().await
    }

    async fn set_broadcast_groups(&self, groups: &[Vec<PaneId>]) -> Result<()> {
        self.set_groups(groups).await
    }

    async fn in_broadcast_group(&self, pane: &PaneId) -> Result<bool> {
        self.in_group(pane).await
    }

    async fn set_team_profiles(&self, profiles: &[crate::types::TeamProfile]) -> Result<()> {
        self.write_team_profiles(profiles).await
    }

    async fn save_native_arrangement(
        &self,
        windows: &[WindowId],
        name: &str,
    ) -> Result<Vec<String>> {
        self.save_window_arrangements(windows, name).await
    }

    async fn native_arrangements(&self) -> Result<Vec<String>> {
        self.arrangement_names().await
    }

    /// Buries the session, or disinters it (iTerm2 puts it back in its tab, else
    /// its window, else a new window).
    async fn set_hidden(&self, pane: &PaneId, hidden: bool) -> Result<()> {
        check_session_id(pane)?;
        let reply = self
            .call(Req::SetPropertyRequest(SetPropertyRequest {
                identifier: Some(set_property_request::Identifier::SessionId(pane.0.clone())),
                name: Some("buried".into()),
                json_value: Some(hidden.to_string()),
            }))
            .await?;
        match reply {
            Rep::SetPropertyResponse(r) => match r.status() {
                set_property_response::Status::Ok => {
                    let mut buried = lock(&self.inner.buried);
                    if hidden {
                        buried.insert(pane.0.clone());
                    } else {
                        buried.remove(pane.as_str());
                    }
                    Ok(())
                }
                set_property_response::Status::InvalidTarget => {
                    Err(BackendError::PaneGone(pane.clone()))
                }
                other => Err(BackendError::Protocol(format!(
                    "iTerm2 did not {} {pane}: {other:?}",
                    if hidden { "bury" } else { "disinter" }
                ))),
            },
            other => Err(unexpected("SetProperty", &other)),
        }
    }

    async fn focus(&self, pane: &PaneId) -> Result<()> {
        check_session_id(pane)?;
        let reply = self
            .call(Req::ActivateRequest(ActivateRequest {
                identifier: Some(activate_request::Identifier::SessionId(pane.0.clone())),
                order_window_front: Some(true),
                select_tab: Some(true),
                select_session: Some(true),
                activate_app: None,
            }))
            .await?;
        match reply {
            Rep::ActivateResponse(r) => match r.status() {
                activate_response::Status::Ok => Ok(()),
                activate_response::Status::BadIdentifier => {
                    Err(BackendError::PaneGone(pane.clone()))
                }
                other => Err(BackendError::Protocol(format!(
                    "iTerm2 could not focus {pane}: {other:?}"
                ))),
            },
            other => Err(unexpected("Activate", &other)),
        }
    }
}

/// The window id under which buried sessions are listed: they are in no tab.
pub const BURIED_WINDOW: &str = "buried";

/// Sends what listing asks about one session: its identity variables and foreground
/// job, and whether its program ended.
fn ask_about_session(
    conn: &crate::iterm2::Connection,
    summary: SessionSummary,
) -> Result<(
    SessionSummary,
    super::conn::PendingReply,
    super::conn::PendingReply,
)> {
    let id = summary.unique_identifier.clone().unwrap_or_default();
    let mut names: Vec<&str> = ID_VARS.to_vec();
    names.push("jobName");
    let vars = conn.send(variable_get(
        variable_request::Scope::SessionId(id.clone()),
        &names,
    ))?;
    let probe = ask_exited(conn, &id)?;
    Ok((summary, vars, probe))
}

/// The bytes `keys` type, as the text iTerm2 sends.
fn keys_text(keys: &[Key]) -> Result<String> {
    let mut bytes = Vec::new();
    for key in keys {
        bytes.extend(key.to_bytes());
    }
    String::from_utf8(bytes).map_err(|_| {
        BackendError::InvalidArgument("these keys do not encode as text for iTerm2".into())
    })
}

//! The [`TerminalBackend`] operations on tmux: panes spawned, split and closed,
//! text, keys and pastes, lines and screens read, state asked, identities stamped.

use super::*;

#[async_trait]
impl TerminalBackend for TmuxBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Tmux
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            splits: true,
            raw_output_stream: true,
            prompt_marks: true,
            titles: true,
            badges: true,
            tab_colors: true,
            background_colors: true,
            cursor_colors: true,
            focus: true,
            // Remote pids name processes over there.
            foreground_process: self.inner.remote.is_none(),
            signed_marks: true,
            one_time_marks: true,
            split_sizes: true,
            broadcast_input: true,
            broadcast_groups_share_windows: false,
            hide_panes: true,
            team_profiles: false,
            native_arrangements: false,
        }
    }

    fn attach_hint(&self, pane: &PaneId) -> AttachHint {
        let config = &self.inner.config;
        let program = match &self.inner.remote {
            Some(_) => "tmux".to_string(),
            None => config.program.to_string_lossy().into_owned(),
        };
        let mut argv: Vec<String> = vec![program];
        argv.extend(config.socket.args());
        // A grouped session per viewer: each human picks windows independently, the
        // agents' window sizes stay fixed (window-size manual), and the viewer session
        // disappears when the human detaches.
        argv.extend(
            [
                "new-session",
                "-t",
                &format!("={}", config.session),
                ";",
                "set-option",
                "destroy-unattached",
                "on",
                ";",
                "select-window",
                "-t",
                pane.as_str(),
                ";",
                "select-pane",
                "-t",
                pane.as_str(),
            ]
            .map(String::from),
        );
        let command_line = argv
            .iter()
            .map(|a| {
                if a == ";" {
                    "\\;".to_string()
                } else {
                    quote::sh(a)
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        let (argv, command_line) = match &self.inner.remote {
            None => (argv, command_line),
            // The same line on the far side, in a terminal ssh gives it.
            Some(remote) => {
                let mut ssh = vec![
                    remote.host.program.to_string_lossy().into_owned(),
                    "-t".into(),
                ];
                ssh.extend(remote.host.ssh_args.iter().cloned());
                ssh.extend(["--".into(), remote.host.destination.clone(), command_line]);
                let line = ssh
                    .iter()
                    .map(|a| quote::sh(a))
                    .collect::<Vec<_>>()
                    .join(" ");
                (ssh, line)
            }
        };
        AttachHint {
            description: format!("run `{command_line}` in a terminal; detach with C-b d"),
            argv,
            command_line,
        }
    }

    async fn spawn(&self, options: SpawnOptions) -> Result<PaneInfo> {
        if options.name.trim().is_empty() {
            return Err(BackendError::InvalidArgument(
                "a window needs a name".into(),
            ));
        }
        let Size { cols, rows } = options.size.unwrap_or(self.inner.config.default_size);
        if !(2..=10_000).contains(&cols) || !(2..=10_000).contains(&rows) {
            return Err(BackendError::InvalidArgument(format!(
                "window size {cols}x{rows} is out of range: use 2 to 10000 columns and rows"
            )));
        }
        let (args, pad) = self.spawn_args(&options).await?;
        let line = format!(
            "new-window -d -P -F {} -t {} -n {}{args}",
            quote::single("#{pane_id}"),
            self.window_target(),
            quote::arg(&quote::format_literal(&options.name)),
        );
        let reply = match self.cmd(&line).await {
            Ok(reply) => reply,
            Err(e) => {
                self.forget_pad(pad).await;
                return Err(e);
            }
        };
        let pane = PaneId(reply.text().trim().to_string());
        check_pane_id(&pane)?;
        // Pins the window's size (window-size manual for this window only), in the
        // same round trip as the pane's stamps.
        let resize = format!("resize-window -t {pane} -x {cols} -y {rows}");
        self.stamp_new_pane(&pane, &options, Some(resize)).await?;
        self.pane_info(&pane).await
    }

    async fn split(&self, pane: &PaneId, options: SplitOptions) -> Result<PaneInfo> {
        check_pane_id(pane)?;
        let direction = match options.direction {
            SplitDirection::Horizontal => "-h",
            SplitDirection::Vertical => "-v",
        };
        let size = match options.size {
            None => String::new(),
            Some(SplitSize::Percent(p)) if (1..=99).contains(&p) => format!(" -l {p}%"),
            Some(SplitSize::Percent(p)) => {
                return Err(BackendError::InvalidArgument(format!(
                    "split size {p}% is out of range: use 1 to 99"
                )))
            }
            Some(SplitSize::Cells(0)) => {
                return Err(BackendError::InvalidArgument(
                    "split size 0 cells: use at least 1".into(),
                ))
            }
            Some(SplitSize::Cells(n)) => format!(" -l {n}"),
        };
        let (args, pad) = self.spawn_args(&options.spawn).await?;
        let line = format!(
            "split-window -d {direction}{size} -P -F {} -t {pane}{args}",
            quote::single("#{pane_id}")
        );
        let reply = match self.pane_cmd(pane, &line).await {
            Ok(reply) => reply,
            Err(e) => {
                self.forget_pad(pad).await;
                return Err(e);
            }
        };
        let new_pane = PaneId(reply.text().trim().to_string());
        check_pane_id(&new_pane)?;
        self.stamp_new_pane(&new_pane, &options.spawn, None).await?;
        self.pane_info(&new_pane).await
    }

    async fn process_snapshot(
        &self,
        pane: &PaneId,
    ) -> Result<Option<crate::remote_procs::ProcSnapshot>> {
        self.remote_snapshot(pane).await
    }

    async fn run_on_host(
        &self,
        host: &str,
        script: &str,
        input: &[u8],
        limit: std::time::Duration,
    ) -> Result<Vec<u8>> {
        match &self.inner.remote {
            Some(remote) if remote.host.name == host => {
                remote.host.run_within(script, input, limit).await
            }
            Some(remote) => Err(BackendError::InvalidArgument(format!(
                "this tmux server is on host {}, not {host}",
                remote.host.name
            ))),
            None => Err(BackendError::Unsupported {
                backend: "tmux",
                what: "run commands on a remote host from a local server",
            }),
        }
    }

    async fn close(&self, pane: &PaneId) -> Result<()> {
        self.pane_cmd(pane, &format!("kill-pane -t {pane}")).await?;
        if let Some(file) = lock(&self.inner.streams).forget(pane.as_str()) {
            self.ask(LogRequest::Delete(file));
        }
        if !self.inner.config.keep_server {
            self.stop_server_if_unused().await;
        }
        Ok(())
    }

    async fn list_panes(&self) -> Result<Vec<PaneInfo>> {
        let line = format!(
            "list-panes -s -t {} -F {}",
            quote::single(&format!("={}", self.inner.config.session)),
            quote::arg(&pane_format())
        );
        let mut rows = self.pane_rows(&line).await?;
        // A dead pane without its status: tmux may have missed the exit (see
        // `nudge_reaping`); once nudged, it knows.
        let unreaped = rows
            .iter()
            .any(|(info, _)| info.dead && info.exit_status.is_none());
        if unreaped && self.nudge_reaping().await {
            rows = self.pane_rows(&line).await?;
        }
        let mut panes = Vec::new();
        for (info, pid) in rows {
            if info.window_name == LOBBY_WINDOW {
                continue;
            }
            if let (false, Some(pid)) = (info.dead, pid) {
                self.watch_exit(&info.id, pid);
            }
            panes.push(info);
        }
        Ok(panes)
    }

    async fn list_panes_if_running(&self) -> Result<Option<Vec<PaneInfo>>> {
        if self.inner.link.live().is_none() {
            return Ok(None);
        }
        self.list_panes().await.map(Some)
    }

    async fn list_windows(&self) -> Result<Vec<WindowInfo>> {
        let format = ["#{window_id}", "#{window_name}", "#{window_layout}"].join(&SEP.to_string());
        let line = format!(
            "list-windows -t {} -F {}",
            quote::single(&format!("={}", self.inner.config.session)),
            quote::arg(&format)
        );
        let reply = self.cmd(&line).await?;
        let mut windows = Vec::new();
        for line in &reply.lines {
            let line = String::from_utf8_lossy(line);
            let fields: Vec<&str> = line.split(SEP).collect();
            if fields.len() != 3 || fields[1] == LOBBY_WINDOW {
                continue;
            }
            windows.push(WindowInfo {
                id: WindowId(fields[0].to_string()),
                name: fields[1].to_string(),
                layout: parse_tmux_layout(fields[2])?,
            });
        }
        Ok(windows)
    }

    async fn send_text(&self, pane: &PaneId, text: &str) -> Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        self.type_alone(pane, text_lines(pane, text)).await
    }

    async fn send_keys(&self, pane: &PaneId, keys: &[Key]) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        self.type_alone(pane, vec![keys_line(pane, keys)]).await
    }

    /// Every part as its `send-keys` lines, all written at once: one round trip.
    async fn send_input(&self, pane: &PaneId, input: &[Keystrokes]) -> Result<()> {
        let lines: Vec<String> = input
            .iter()
            .flat_map(|part| match part {
                Keystrokes::Text(text) => text_lines(pane, text),
                Keystrokes::Keys(keys) if keys.is_empty() => Vec::new(),
                Keystrokes::Keys(keys) => vec![keys_line(pane, keys)],
            })
            .collect();
        if lines.is_empty() {
            return Ok(());
        }
        self.type_alone(pane, lines).await
    }

    /// One round trip: the line is put in a buffer of its own and the pane marked
    /// with the buffer's name, then one `if-shell` in which tmux checks the pane
    /// (alive, taking input, in no mode, its foreground program named `shell` when
    /// one is given, the line not expired by tmux's clock: `line_expiry_s`) and,
    /// when it is so, pastes the buffer into it and deletes it (`paste-buffer -d`:
    /// the bytes as they are, to this pane alone, whatever the window's synchronised
    /// panes do); else it answers `refused`. A connection lost on the way is asked,
    /// once a new one is up, whether the line went in (the pane's mark is the
    /// buffer's name and the buffer is gone), so it is typed once or not at all.
    async fn send_input_guarded(
        &self,
        pane: &PaneId,
        shell: Option<&str>,
        input: &[Keystrokes],
    ) -> Result<Guarded> {
        check_pane_id(pane)?;
        let named_plainly = shell.is_none_or(|shell| {
            !shell.is_empty()
                && shell
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
        });
        let text = crate::keys::pasteable(input);
        let (Some(text), true) = (text, named_plainly) else {
            return Ok(Guarded::Unsupported);
        };
        let n = self
            .inner
            .paste_counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let buffer = format!("cohort-line-{}-{n}", std::process::id());
        let program = match shell {
            Some(shell) => format!("#{{==:#{{pane_current_command}},{shell}}}"),
            None => "1".into(),
        };
        // The line expires by tmux's own clock (the host's, for another machine): a
        // link that went silent delivers what it held when it comes back, a server
        // that stalled runs its queue, after the call was given up; then it is
        // refused, never typed late. `#{T:…}` reads a pane option of `%s` as now.
        let expiry = self.inner.config.line_expiry_s;
        let lines = |deadline: i64| {
            let on_time = format!("#{{e|<=:#{{T:{CLOCK}}},{deadline}}}");
            let guard = format!(
                "#{{&&:#{{==:#{{pane_dead}},0}},#{{&&:#{{==:#{{pane_input_off}},0}},#{{&&:#{{==:#{{pane_in_mode}},0}},#{{&&:{program},{on_time}}}}}}}}}}}"
            );
            [
                format!("set-option -p -t {pane} {LINE_MARK} {buffer}"),
                format!("set-option -p -t {pane} {CLOCK} '%s'"),
                format!("set-buffer -b {buffer} -- {}", quote::arg(&text)),
                format!(
                    "if-shell -t {pane} -F {} {} {}",
                    quote::single(&guard),
                    quote::single(&format!("paste-buffer -d -b {buffer} -t {pane}")),
                    quote::single(&format!(
                        "display-message -p -t {pane} 'refused#{{?{on_time},,-late}}'"
                    ))
                ),
            ]
        };
        // The deadline is taken once the connection is in hand: a slow reconnect
        // does not eat into it. Past `expires` (this machine's clock, with a margin
        // for the clocks' seconds), the line can no longer go in.
        let client = self.client().await?;
        let mut expires = expiry_instant(expiry);
        let sent = match client.try_branching(&lines(self.tmux_now() + expiry)).await {
            Err(control::Failure::Unsent(e)) => {
                tracing::debug!(target: "cohort::tmux", error = %e, "the connection was gone before the line left: sending it on a new one");
                let client = self.client().await?;
                expires = expiry_instant(expiry);
                client.try_branching(&lines(self.tmux_now() + expiry)).await
            }
            other => other,
        };
        let lost = |e: &BackendError| matches!(e, BackendError::Disconnected { .. });
        let branch = match sent {
            Ok((replies, branch)) => {
                if let Some(Err(e)) = replies.into_iter().find(Result::is_err) {
                    return Err(pane_error(pane, e));
                }
                branch
            }
            Err(control::Failure::Sent(e)) if matches!(e, BackendError::HostSilent { .. }) => {
                // Given up after longer than the line's expiry: it can no longer go
                // in. Its buffer is deleted once the host answers again.
                lock(&self.inner.stale_lines).push(buffer);
                return Err(pane_error(pane, e));
            }
            Err(control::Failure::Sent(e) | control::Failure::Unsent(e)) if !lost(&e) => {
                return Err(pane_error(pane, e))
            }
            Err(control::Failure::Sent(e) | control::Failure::Unsent(e)) => Err(e),
        };
        match branch {
            Ok(reply) if reply.text().trim() == "refused" => {
                self.forget_line(&buffer).await;
                Ok(Guarded::Refused)
            }
            Ok(reply) if reply.text().trim() == "refused-late" => {
                self.forget_line(&buffer).await;
                Ok(Guarded::Late)
            }
            Ok(_) => Ok(typed_under_guard()),
            Err(e) if lost(&e) => {
                // Bytes of the broken connection may still reach the far side: the
                // line's fate is known once it can no longer go in.
                if self.inner.remote.is_some() {
                    tokio::time::sleep_until(expires.into()).await;
                }
                tracing::debug!(target: "cohort::tmux", error = %e, "the connection broke under a guarded line: asking whether it went in");
                self.line_went_in(pane, &buffer).await
            }
            Err(e) => {
                self.forget_line(&buffer).await;
                Err(pane_error(pane, e))
            }
        }
    }

    async fn paste(&self, pane: &PaneId, text: &str) -> Result<()> {
        check_pane_id(pane)?;
        if text.is_empty() {
            return Ok(());
        }
        let n = self
            .inner
            .paste_counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let buffer = format!("cohort-{}-{n}", std::process::id());
        let mut lines: Vec<String> = chunks(text, CHUNK_BYTES)
            .into_iter()
            .enumerate()
            .map(|(i, chunk)| {
                let append = if i == 0 { "" } else { " -a" };
                format!("set-buffer{append} -b {buffer} -- {}", quote::arg(chunk))
            })
            .collect();
        lines.push(format!(
            "list-buffers -F {}",
            quote::single("#{buffer_name} #{buffer_size}")
        ));
        let replies = self.pane_pipeline(pane, &lines).await?;
        let listing = replies.last().map(|r| r.text()).unwrap_or_default();
        let size = listing
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{buffer} ")))
            .and_then(|s| s.trim().parse::<usize>().ok());
        if size != Some(text.len()) {
            let _ = self.cmd(&format!("delete-buffer -b {buffer}")).await;
            return Err(BackendError::InputLost {
                pane: pane.clone(),
                detail: format!(
                    "the paste buffer holds {} bytes, expected {}; nothing was pasted",
                    size.map_or("no".to_string(), |s| s.to_string()),
                    text.len()
                ),
            });
        }
        self.pane_cmd(pane, &format!("paste-buffer -p -d -b {buffer} -t {pane}"))
            .await
            .map(|_| ())
    }

    async fn read_lines(&self, pane: &PaneId, range: LineRange) -> Result<Lines> {
        let info = self
            .display(pane, &["#{history_size}", "#{pane_height}"])
            .await?;
        let history: u64 = info[0].parse().unwrap_or(0);
        let height: u64 = info[1].parse().unwrap_or(0);
        let total = history + height;
        let start = range.start.min(total);
        let end = range.end.min(total);
        if start >= end {
            return Ok(Lines {
                first: start,
                lines: Vec::new(),
                total,
            });
        }
        // tmux counts the top of the screen as line 0 and history as negative.
        let from = start as i64 - history as i64;
        let to = end as i64 - 1 - history as i64;
        let reply = self
            .pane_cmd(
                pane,
                &format!("capture-pane -p -t {pane} -S {from} -E {to}"),
            )
            .await?;
        Ok(Lines {
            first: start,
            lines: reply
                .lines
                .iter()
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect(),
            total,
        })
    }

    async fn read_screen(&self, pane: &PaneId) -> Result<Screen> {
        self.capture_screen(pane, false).await
    }

    async fn read_screen_styled(&self, pane: &PaneId) -> Result<Screen> {
        self.capture_screen(pane, true).await
    }

    fn subscribe(&self) -> EventStream {
        self.inner.hub.subscribe()
    }

    fn event_hub(&self) -> Arc<crate::event::EventHub> {
        self.inner.hub.hub().clone()
    }

    async fn pane_state(&self, pane: &PaneId) -> Result<PaneState> {
        let mut f = self.pane_state_fields(pane).await?;
        if f[2] == "1" && f[3].is_empty() && f[13].is_empty() && self.nudge_reaping().await {
            f = self.pane_state_fields(pane).await?;
        }
        self.pane_state_from(pane, f)
    }

    async fn sync(&self, pane: &PaneId) -> Result<u64> {
        // tmux writes a control client's notifications and command replies in the order
        // it has them, and the reader emits each notification before it reads the next
        // line: once this reply is in, every byte tmux read from the pane before the
        // command ran has been emitted.
        check_pane_id(pane)?;
        let client = self.client().await?;
        client
            .command(&format!("display-message -p -t {pane} ''"))
            .await
            .map_err(|e| pane_error(pane, e))?;
        Ok(self.inner.hub.synced())
    }

    async fn stamp_identity(&self, pane: &PaneId, identity: &Identity) -> Result<()> {
        self.pane_pipeline(pane, &identity_lines(pane, identity))
            .await
            .map(|_| ())
    }

    async fn stamp_mark_state(
        &self,
        pane: &PaneId,
        anchor: Option<&str>,
        announces_start: bool,
    ) -> Result<()> {
        let mut lines = Vec::new();
        if let Some(anchor) = anchor {
            lines.push(format!(
                "set-option -p -t {pane} @cohort_anchor {}",
                quote::arg(anchor)
            ));
        }
        if announces_start {
            lines.push(format!("set-option -p -t {pane} @cohort_announces 1"));
        }
        if lines.is_empty() {
            return Ok(());
        }
        // Over the connection that is open only: a stamp never starts a server (the
        // pane's may have ended with cohort's last session), and an anchor that
        // trails is allowed for.
        check_pane_id(pane)?;
        let Some(client) = self.inner.link.live() else {
            return Ok(());
        };
        for reply in client.pipeline(&lines).await? {
            reply.map_err(|e| pane_error(pane, e))?;
        }
        Ok(())
    }

    async fn stamp_recording(&self, pane: &PaneId, path: Option<&str>) -> Result<()> {
        let line = match path {
            Some(path) => format!(
                "set-option -p -t {pane} @cohort_recording {}",
                quote::arg(&path.replace(|c: char| c.is_control(), " "))
            ),
            None => format!("set-option -p -u -t {pane} @cohort_recording"),
        };
        self.pane_cmd(pane, &line).await.map(|_| ())
    }

    async fn broadcast_groups(&self) -> Result<Vec<Vec<PaneId>>> {
        self.groups().await
    }

    async fn set_broadcast_groups(&self, groups: &[Vec<PaneId>]) -> Result<()> {
        self.set_groups(groups).await
    }

    async fn set_hidden(&self, pane: &PaneId, hidden: bool) -> Result<()> {
        self.hide(pane, hidden).await
    }

    async fn set_title(&self, pane: &PaneId, title: &str) -> Result<()> {
        self.pane_cmd(
            pane,
            &format!(
                "select-pane -t {pane} -T {}",
                quote::arg(&quote::format_literal(title))
            ),
        )
        .await
        .map(|_| ())
    }

    async fn alert(&self, pane: &PaneId, message: &str) -> Result<()> {
        let text = crate::types::alert_text(message);
        // The pane must be there; then every person's client of this server sees
        // the message, and its terminal gets the notification and the bell.
        self.pane_cmd(pane, &format!("display-message -p -t {pane} ''"))
            .await?;
        let format =
            ["#{client_name}", "#{client_tty}", "#{client_control_mode}"].join(&SEP.to_string());
        let reply = self
            .cmd(&format!("list-clients -F {}", quote::arg(&format)))
            .await?;
        for line in &reply.lines {
            let line = String::from_utf8_lossy(line);
            let fields: Vec<&str> = line.split(SEP).collect();
            let [name, tty, control] = fields[..] else {
                continue;
            };
            if control == "1" {
                continue;
            }
            let shown = format!(
                "display-message -c {} -d 5000 {}",
                quote::arg(name),
                quote::arg(&quote::format_literal(&format!("cohort: {text}")))
            );
            if let Err(e) = self.cmd(&shown).await {
                tracing::debug!(target: "cohort::tmux", client = %name, error = %e, "alert not shown");
            }
            // A remote client's terminal is on its own machine.
            if self.inner.remote.is_none() && tty.starts_with("/dev/") {
                let (tty, bytes) = (tty.to_string(), crate::types::alert_sequence(&text));
                let _ = tokio::task::spawn_blocking(move || write_to_terminal(&tty, &bytes)).await;
            }
        }
        Ok(())
    }

    async fn set_status_line(&self, pane: &PaneId, line: Option<&str>) -> Result<()> {
        let command = match line {
            // The status line's style parser acts on `#[…]`: every `#` is doubled,
            // so a team's name shows as written.
            Some(line) => format!(
                "set-option -p -t {pane} @cohort_status {}",
                quote::arg(&line.replace('#', "##"))
            ),
            None => format!("set-option -p -u -t {pane} @cohort_status"),
        };
        self.pane_cmd(pane, &command).await.map(|_| ())
    }

    async fn cancel_copy_mode(&self, pane: &PaneId) -> Result<()> {
        let in_mode = self.display(pane, &["#{pane_in_mode}"]).await?.remove(0);
        if in_mode.trim() == "1" {
            self.pane_cmd(pane, &format!("send-keys -t {pane} -X cancel"))
                .await?;
        }
        Ok(())
    }

    async fn set_appearance(&self, pane: &PaneId, look: &Appearance) -> Result<()> {
        check_pane_id(pane)?;
        let lines = appearance::commands(pane, look).map_err(BackendError::InvalidArgument)?;
        if !lines.is_empty() {
            self.pane_pipeline(pane, &lines).await?;
        }
        if look.tab_color.is_some() {
            // The window's entry in the status line takes a tab colour only while its
            // panes agree on one: panes of several teams leave it plain.
            let reply = self
                .pane_cmd(
                    pane,
                    &format!(
                        "list-panes -t {pane} -F {}",
                        quote::single("#{@cohort_tab_color}")
                    ),
                )
                .await?;
            let colours: std::collections::BTreeSet<String> = reply
                .lines
                .iter()
                .map(|l| String::from_utf8_lossy(l).trim().to_string())
                .filter(|c| !c.is_empty())
                .collect();
            if colours.len() > 1 {
                let unset = ["window-status-style", "window-status-current-style"]
                    .map(|option| format!("set-option -w -u -t {pane} {option}"));
                self.pane_pipeline(pane, &unset).await?;
            }
        }
        if let Some(title) = &look.title {
            self.set_title(pane, title).await?;
        }
        Ok(())
    }

    async fn appearance(&self, pane: &PaneId) -> Result<Appearance> {
        let values = self.display(pane, &appearance::READ_FIELDS).await?;
        Ok(appearance::parse(&values))
    }

    async fn focus(&self, pane: &PaneId) -> Result<()> {
        self.pane_pipeline(
            pane,
            &[
                format!("select-window -t {pane}"),
                format!("select-pane -t {pane}"),
            ],
        )
        .await
        .map(|_| ())
    }
}

impl TmuxBackend {
    /// The name of the shell remote panes start with (`bash`), as tmux names the
    /// foreground command when the shell is at its prompt.
    fn remote_shell_name(&self) -> String {
        self.inner
            .shell
            .file_name()
            .map(|n| n.to_string_lossy().trim_start_matches('-').to_string())
            .unwrap_or_default()
    }

    /// Stamps a pane just made with the command it runs and its identity, after
    /// `first` (a resize), all in one round trip. A pane any of them failed on is
    /// closed: half stamped, it would pass for a session the caller was told failed.
    async fn stamp_new_pane(
        &self,
        pane: &PaneId,
        options: &SpawnOptions,
        first: Option<String>,
    ) -> Result<()> {
        let mut lines: Vec<String> = first.into_iter().collect();
        lines.extend(options.command.as_deref().map(|c| command_line(pane, c)));
        if let Some(identity) = &options.identity {
            lines.extend(identity_lines(pane, identity));
        }
        if lines.is_empty() {
            return Ok(());
        }
        let stamped = self.pane_pipeline(pane, &lines).await.map(|_| ());
        if stamped.is_err() {
            let _ = self.pane_cmd(pane, &format!("kill-pane -t {pane}")).await;
        }
        stamped
    }
}

/// The line that stamps a one-shot command as it was given on its pane
/// (`@cohort_command`), to show once the pane is dead, where tmux would show the first
/// word of cohort's wrapper: one line of plain text (pane rows are lines of fields
/// split by a control character).
fn command_line(pane: &PaneId, command: &str) -> String {
    let mut shown: String = command
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    if command.chars().count() > 200 {
        shown.push('…');
    }
    format!(
        "set-option -p -t {pane} @cohort_command {}",
        quote::arg(&shown)
    )
}

/// The lines that stamp `identity` on `pane` (an unset field is removed).
fn identity_lines(pane: &PaneId, identity: &Identity) -> [String; 6] {
    let set = |key: &str, value: &Option<String>| match value {
        Some(v) => format!("set-option -p -t {pane} @cohort_{key} {}", quote::arg(v)),
        None => format!("set-option -p -u -t {pane} @cohort_{key}"),
    };
    [
        set("id", &Some(identity.id.clone())),
        set("name", &Some(identity.name.clone())),
        set("agent", &identity.agent),
        set("team", &identity.team),
        set("key", &identity.key),
        set("anchor", &identity.anchor),
    ]
}

impl TmuxBackend {
    /// The fields [`TerminalBackend::pane_state`] reads, in its order.
    async fn pane_state_fields(&self, pane: &PaneId) -> Result<Vec<String>> {
        self.display(
            pane,
            &[
                "#{pane_current_command}",
                "#{pane_pid}",
                "#{pane_dead}",
                "#{pane_dead_status}",
                "#{cursor_x}",
                "#{cursor_y}",
                "#{pane_width}",
                "#{pane_height}",
                "#{alternate_on}",
                "#{pane_in_mode}",
                "#{history_size}",
                "#{pane_current_path}",
                "#{pane_title}",
                "#{pane_dead_signal}",
                "#{pane_tty}",
            ],
        )
        .await
    }

    /// A pane's state from [`TmuxBackend::pane_state_fields`].
    fn pane_state_from(&self, pane: &PaneId, f: Vec<String>) -> Result<PaneState> {
        let num = |s: &str| s.parse::<u16>().unwrap_or(0);
        let dead = f[2] == "1";
        // A remote pane's pid and terminal are the far side's: nothing here is asked
        // about them, and the shell is known by name.
        let remote = self.inner.remote.is_some();
        let shell_pid = f[1].parse::<u32>().ok().filter(|p| *p > 0 && !remote);
        let foreground = if dead {
            None
        } else {
            shell_pid.and_then(crate::process::foreground_pid)
        };
        let shell_command = match shell_pid {
            Some(pid) => crate::process::process_name(pid).unwrap_or_default(),
            None if remote => self.remote_shell_name(),
            None => String::new(),
        };
        Ok(PaneState {
            foreground_command: f[0].clone(),
            foreground_pid: foreground,
            shell_pid,
            shell_command,
            dead,
            exit_status: if dead {
                f[3].parse::<i32>()
                    .ok()
                    .or(f[13].parse::<i32>().ok().map(|s| 128 + s))
                    .or_else(|| lock(&self.inner.last_marks).get(pane.as_str()).copied())
            } else {
                None
            },
            cursor: Cursor {
                x: num(&f[4]),
                y: num(&f[5]),
            },
            size: Size {
                cols: num(&f[6]),
                rows: num(&f[7]),
            },
            alternate_screen: f[8] == "1",
            copy_mode: f[9] == "1",
            bracketed_paste: None,
            history_lines: f[10].parse().unwrap_or(0),
            cwd: (!f[11].is_empty()).then(|| f[11].clone()),
            title: f[12].clone(),
            tty: (!f[14].is_empty() && !remote).then(|| f[14].clone()),
        })
    }

    /// The rows a `list-panes` command line prints, parsed.
    async fn pane_rows(&self, line: &str) -> Result<Vec<(PaneInfo, Option<u32>)>> {
        Ok(self
            .cmd(line)
            .await?
            .lines
            .iter()
            .filter_map(|l| parse_pane_row(&String::from_utf8_lossy(l)))
            .collect())
    }

    /// Makes tmux reap children it missed. Seen on a loaded machine (tmux 3.3a): a
    /// pane's program exits and stays a zombie of the tmux server, which never records
    /// its status, until another child of the server exits; then its reaping loop
    /// collects them all. A `run-shell true` is such a child, and it has been reaped
    /// when the command answers. True when the nudge ran.
    pub(super) async fn nudge_reaping(&self) -> bool {
        match self.cmd("run-shell true").await {
            Ok(_) => true,
            Err(e) => {
                tracing::debug!(target: "cohort::tmux", error = %e, "could not nudge tmux to reap exited panes");
                false
            }
        }
    }
}

/// The `send-keys` lines that type `text` literally, in chunks.
fn text_lines(pane: &PaneId, text: &str) -> Vec<String> {
    chunks(text, CHUNK_BYTES)
        .into_iter()
        .map(|chunk| {
            if quote::is_plain(chunk) {
                // `--`: text that starts with `-` is text, not flags.
                format!("send-keys -t {pane} -l -- {}", quote::single(chunk))
            } else {
                // Control characters go in as exact bytes.
                let hex: Vec<String> = chunk.bytes().map(|b| format!("{b:02x}")).collect();
                format!("send-keys -t {pane} -H {}", hex.join(" "))
            }
        })
        .collect()
}

/// The `send-keys` line that presses `keys` in order.
fn keys_line(pane: &PaneId, keys: &[Key]) -> String {
    let names: Vec<String> = keys.iter().map(|k| quote::single(&k.tmux_name())).collect();
    format!("send-keys -t {pane} {}", names.join(" "))
}

/// Writes `bytes` to a person's terminal (`tty`, one of this user's), without making
/// it this process's controlling terminal.
fn write_to_terminal(tty: &str, bytes: &[u8]) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(tty);
    match opened.and_then(|mut t| t.write_all(bytes)) {
        Ok(()) => {}
        Err(e) => {
            tracing::debug!(target: "cohort::tmux", tty, error = %e, "alert not written to the terminal")
        }
    }
}

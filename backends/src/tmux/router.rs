//! Each control connection's notifications, turned into backend events: output
//! shaped per pane with its prompt marks, foreground changes and exits from the
//! state subscription, windows and sessions coming and going.

use super::*;

/// Per-connection notification handling, run on the control client's reader task.
pub(super) struct EventRouter {
    pub(super) hub: Arc<EventSink>,
    /// Every pane's stream, kept across connections (see [`super::outlog`]).
    pub(super) streams: Arc<Mutex<Streams>>,
    /// Where the panes' logs are asked for (remote servers only).
    pub(super) logs: Option<tokio::sync::mpsc::UnboundedSender<LogRequest>>,
    /// Last subscription value per pane: (exit reported, foreground command).
    pub(super) pane_state: HashMap<String, (bool, String)>,
    pub(super) client: Arc<std::sync::OnceLock<Weak<ControlClient>>>,
    pub(super) exits_reported: Arc<Mutex<HashSet<String>>>,
    pub(super) last_marks: Arc<Mutex<HashMap<String, i32>>>,
}

impl EventRouter {
    pub(super) fn into_handler(mut self) -> control::EventHandler {
        Box::new(move |event| self.handle(event))
    }

    fn ask(&self, request: LogRequest) {
        if let Some(logs) = &self.logs {
            let _ = logs.send(request);
        }
    }

    fn handle(&mut self, event: ControlEvent) {
        let notification = match event {
            ControlEvent::Notification(n) => n,
            ControlEvent::Marker(marker) => {
                if let Some(old) = lock(&self.streams).switched(marker) {
                    self.ask(LogRequest::Delete(old));
                }
                return;
            }
            ControlEvent::Closed { reason, by_server } => {
                let logged = lock(&self.streams).connection_closed();
                if self.logs.is_none() {
                    self.hub.emit(BackendEvent::Disconnected { reason });
                } else {
                    // A remote server says which of its panes lost output, pane by
                    // pane, once it is reached again (see `outlog`).
                    tracing::info!(target: "cohort::tmux", %reason, "the connection to the remote server broke");
                }
                // The link broke under a remote server that lives on: connect again
                // without waiting for a call, so what its panes print is read back
                // and waits on them end with their real verdicts.
                if logged && !by_server {
                    self.ask(LogRequest::Reconnect);
                }
                return;
            }
        };
        match notification {
            Notification::Output { pane, data }
            | Notification::ExtendedOutput { pane, data, .. } => {
                let want = lock(&self.streams).output(&pane, &data);
                if want == outlog::Want::Log {
                    self.ask(LogRequest::Start(PaneId(pane)));
                }
            }
            Notification::Pause { pane } => {
                // Output is being discarded: ask for it to resume, and tell subscribers
                // to resynchronise once it does.
                if let Some(client) = self.client.get().and_then(Weak::upgrade) {
                    let line = format!(
                        "refresh-client -A {}",
                        quote::single(&format!("{pane}:continue"))
                    );
                    tokio::spawn(async move {
                        if let Err(e) = client.command(&line).await {
                            tracing::warn!(target: "cohort::tmux", error = %e, "could not resume paused output");
                        }
                    });
                }
            }
            Notification::Continue { pane } => {
                lock(&self.streams).output_dropped(&pane);
                self.hub
                    .emit(BackendEvent::OutputLost { pane: PaneId(pane) });
            }
            Notification::SubscriptionChanged { name, pane, value } if name == SUBSCRIPTION => {
                let mut fields = value.splitn(4, '|');
                let dead = fields.next() == Some("1");
                let status = fields.next().and_then(|s| s.parse::<i32>().ok());
                let signal = fields.next().and_then(|s| s.parse::<i32>().ok());
                let command = fields.next().unwrap_or_default().to_string();
                // tmux can flag a pane dead a moment before it has reaped the process;
                // the exit is reported once the status (or the signal) is known.
                let exit_status = status.or(signal.map(|s| 128 + s)).or_else(|| {
                    if dead {
                        lock(&self.last_marks).get(&pane).copied()
                    } else {
                        None
                    }
                });
                let reported = dead && exit_status.is_some();
                let previous = self
                    .pane_state
                    .insert(pane.clone(), (reported, command.clone()));
                let (was_reported, old_command) =
                    previous.clone().unwrap_or((false, String::new()));
                if reported && !was_reported && first_report(&self.exits_reported, &pane) {
                    let exited = BackendEvent::PaneExited {
                        pane: PaneId(pane.clone()),
                        exit_status,
                    };
                    if let Some(file) = lock(&self.streams).pane_exited(&pane, exited) {
                        self.ask(LogRequest::Delete(file));
                    }
                } else if !dead && command != old_command && previous.is_some() {
                    self.hub.emit(BackendEvent::ForegroundChanged {
                        pane: PaneId(pane),
                        command,
                    });
                }
            }
            Notification::PaneModeChanged { pane } => self
                .hub
                .emit(BackendEvent::ModeChanged { pane: PaneId(pane) }),
            Notification::LayoutChange { window, .. } => {
                self.hub.emit(BackendEvent::LayoutChanged {
                    window: WindowId(window),
                })
            }
            Notification::WindowClose { window } => self.hub.emit(BackendEvent::WindowClosed {
                window: WindowId(window),
            }),
            // A new window is a layout that changed; its panes are listed from it.
            Notification::WindowAdd { window } => self.hub.emit(BackendEvent::LayoutChanged {
                window: WindowId(window),
            }),
            Notification::WindowPaneChanged { window, pane } => {
                self.hub.emit(BackendEvent::Focused {
                    window: Some(WindowId(window)),
                    pane: Some(PaneId(pane)),
                })
            }
            Notification::SessionWindowChanged { window, .. } => {
                self.hub.emit(BackendEvent::Focused {
                    window: Some(WindowId(window)),
                    pane: None,
                })
            }
            other => tracing::trace!(target: "cohort::tmux", notification = ?other, "ignored"),
        }
    }
}

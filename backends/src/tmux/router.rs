//! Each control connection's notifications, turned into backend events: output
//! shaped per pane with its prompt marks, foreground changes and exits from the
//! state subscription, windows and sessions coming and going.

use super::*;

/// Per-connection notification handling, run on the control client's reader task.
pub(super) struct EventRouter {
    pub(super) hub: Arc<EventSink>,
    pub(super) splitters: HashMap<String, OutputSplitter>,
    /// Last subscription value per pane: (exit reported, foreground command).
    pub(super) pane_state: HashMap<String, (bool, String)>,
    pub(super) client: Arc<std::sync::OnceLock<Weak<ControlClient>>>,
    pub(super) exits_reported: Arc<Mutex<HashSet<String>>>,
    pub(super) last_marks: Arc<Mutex<HashMap<String, i32>>>,
}

impl EventRouter {
    pub(super) fn into_handler(mut self) -> control::EventHandler {
        let mut pieces = Vec::new();
        Box::new(move |event| self.handle(event, &mut pieces))
    }

    fn handle(&mut self, event: ControlEvent, pieces: &mut Vec<Piece>) {
        let notification = match event {
            ControlEvent::Notification(n) => n,
            ControlEvent::Closed { reason } => {
                for (pane, mut splitter) in self.splitters.drain() {
                    if let Some(bytes) = splitter.flush() {
                        self.hub.emit(BackendEvent::Output {
                            pane: PaneId(pane),
                            bytes: Bytes::from(bytes),
                        });
                    }
                }
                self.hub.emit(BackendEvent::Disconnected { reason });
                return;
            }
        };
        match notification {
            Notification::Output { pane, data }
            | Notification::ExtendedOutput { pane, data, .. } => {
                let splitter = self.splitters.entry(pane.clone()).or_default();
                pieces.clear();
                splitter.push(&data, pieces);
                for piece in pieces.drain(..) {
                    let pane = PaneId(pane.clone());
                    self.hub.emit(match piece {
                        Piece::Bytes(bytes) => BackendEvent::Output {
                            pane,
                            bytes: Bytes::from(bytes),
                        },
                        Piece::Mark(mark, params) => {
                            if let PromptMark::CommandFinished {
                                exit_status: Some(status),
                            } = mark
                            {
                                lock(&self.last_marks).insert(pane.0.clone(), status);
                            }
                            BackendEvent::Prompt { pane, mark, params }
                        }
                    });
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
                self.splitters.remove(&pane);
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
                    if let Some(mut splitter) = self.splitters.remove(&pane) {
                        if let Some(bytes) = splitter.flush() {
                            self.hub.emit(BackendEvent::Output {
                                pane: PaneId(pane.clone()),
                                bytes: Bytes::from(bytes),
                            });
                        }
                    }
                    self.hub.emit(BackendEvent::PaneExited {
                        pane: PaneId(pane),
                        exit_status,
                    });
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
            other => tracing::trace!(target: "cohort::tmux", notification = ?other, "ignored"),
        }
    }
}

//! Sessions once they are up: opening a session or a layout and waiting until each
//! new shell shows its first prompt (or a command given instead has had a moment),
//! so every front end answers with the session as it then is and the same notices.

use cohort_backends::PaneInfo;
use futures_util::future::join_all;

use crate::{
    layout::SplitTree,
    record::RecordOptions,
    sessions::{session_name, LayoutPane, OpenOptions},
    Terminal, TerminalError,
};

/// A session opened and up.
#[derive(Clone, Debug)]
pub struct Opened {
    /// Its pane, as it is once up (what runs in it now).
    pub pane: PaneInfo,
    /// Set when the shell showed no prompt in time, or the command ended at once.
    pub notice: Option<String>,
}

/// The panes of a layout, once their shells are up.
#[derive(Clone, Debug)]
pub struct LaidOut {
    /// The panes in reading order, as they are once up.
    pub panes: Vec<PaneInfo>,
    /// `session: why` for each shell that showed no prompt in time.
    pub notices: Vec<String>,
}

/// The split tree a caller asked for: a preset by name, or a tree of its own (not
/// both); neither is fine for a single pane.
pub fn layout_tree(
    preset: Option<&str>,
    tree: Option<SplitTree>,
    rows: Option<u16>,
    cols: Option<u16>,
    panes: usize,
) -> Result<SplitTree, TerminalError> {
    let invalid = TerminalError::InvalidArgument;
    match (preset, tree) {
        (Some(preset), None) => SplitTree::preset(preset, rows, cols).map_err(invalid),
        (None, Some(tree)) => Ok(tree),
        (Some(_), Some(_)) => Err(invalid(
            "give either layout (a preset) or tree, not both".into(),
        )),
        (None, None) if panes <= 1 => SplitTree::preset("single", None, None).map_err(invalid),
        (None, None) => Err(invalid(
            "give a layout preset (e.g. \"quad\") or a tree".into(),
        )),
    }
}

impl Terminal {
    /// Opens a session and waits until it is up; with `record`, records it to an
    /// asciicast file from its start.
    pub async fn open_up(
        &self,
        options: OpenOptions,
        record: bool,
    ) -> Result<Opened, TerminalError> {
        let has_command = options.command.is_some();
        let pane = self.open(options).await?;
        if record {
            // From the start, so the recording shows the shell coming up.
            self.record(&pane.id, RecordOptions::default()).await?;
        }
        Ok(self.once_up(pane, has_command).await)
    }

    /// Waits until a new session is up: its shell's first prompt (without a command),
    /// or a moment to see whether the command given ended at once.
    pub async fn once_up(&self, pane: PaneInfo, has_command: bool) -> Opened {
        let notice = match has_command {
            false => self.wait_shell_up(&pane.id).await,
            true => self.command_ended_at_once(&pane.id).await,
        };
        // What runs in it now that the shell is up.
        let pane = self.resolve(pane.id.as_str()).await.unwrap_or(pane);
        Opened { pane, notice }
    }

    /// Opens a layout (see [`Terminal::create_layout`]) and waits until every new shell
    /// is up, before anyone types into it.
    pub async fn create_layout_up(
        &self,
        window: &str,
        tree: &SplitTree,
        panes: &[LayoutPane],
    ) -> Result<LaidOut, TerminalError> {
        let opened = self.create_layout(window, tree, panes).await?;
        let shells = opened
            .iter()
            .enumerate()
            .filter(|(i, _)| panes.get(*i).is_none_or(|p| p.command.is_none()))
            .map(|(_, pane)| async move {
                let notice = self.wait_shell_up(&pane.id).await?;
                Some(format!("{}: {notice}", session_name(pane)))
            });
        let notices: Vec<String> = join_all(shells).await.into_iter().flatten().collect();
        let now = self.list().await.unwrap_or_default();
        let panes = opened
            .iter()
            .map(|p| now.iter().find(|n| n.id == p.id).unwrap_or(p).clone())
            .collect();
        Ok(LaidOut { panes, notices })
    }
}

//! The *layout* toolset: create_layout, split, focus, set_appearance, adopt (a pane
//! cohort did not open becomes a session), broadcast_input (sessions whose typing
//! reaches each other), hide (sessions out of the person's sight, still running) and
//! arrange (windows saved under a name and opened again).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};

use super::reply::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use cohort_backends::{Appearance, SplitDirection, SplitSize};

use super::team::ManyResult;
use super::types::*;
use super::CohortServer;
use cohort_terminal::{
    colours::AppearanceChange,
    layout::{Child, Direction, SplitTree},
    ready::layout_tree,
    LayoutPane, OpenOptions,
};

/// Which way a split goes.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DirectionArg {
    /// Side by side.
    Horizontal,
    /// Stacked.
    Vertical,
}

/// A split tree: leaves are panes, numbered in reading order.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TreeArg {
    /// A split of the area into children.
    Split {
        /// "horizontal" (side by side) or "vertical" (stacked).
        split: DirectionArg,
        /// The children, left to right or top to bottom.
        children: Vec<ChildArg>,
    },
    /// One pane (its index in the pane list).
    Pane {
        /// Index into the layout's pane list, in reading order.
        pane: usize,
    },
}

/// A child of a split, with an optional share of its parent.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ChildArg {
    /// The child's subtree.
    #[serde(flatten)]
    pub tree: TreeArg,
    /// Share of the parent in percent (the rest is divided evenly among children
    /// without a size).
    #[serde(default)]
    pub size: Option<u8>,
}

impl From<TreeArg> for SplitTree {
    fn from(tree: TreeArg) -> Self {
        match tree {
            TreeArg::Pane { pane } => SplitTree::Pane { pane },
            TreeArg::Split { split, children } => SplitTree::Split {
                split: match split {
                    DirectionArg::Horizontal => Direction::Horizontal,
                    DirectionArg::Vertical => Direction::Vertical,
                },
                children: children
                    .into_iter()
                    .map(|c| Child {
                        tree: c.tree.into(),
                        size: c.size,
                    })
                    .collect(),
            },
        }
    }
}

/// One pane of a layout.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PaneArg {
    /// Session name (default: the layout's name and the pane's number).
    #[serde(default)]
    pub name: Option<String>,
    /// Agent working there.
    #[serde(default)]
    pub agent: Option<String>,
    /// Team of that agent.
    #[serde(default)]
    pub team: Option<String>,
    /// Command instead of a shell.
    #[serde(default)]
    pub command: Option<String>,
    /// Working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
}

impl From<PaneArg> for LayoutPane {
    fn from(p: PaneArg) -> Self {
        LayoutPane {
            name: p.name,
            agent: p.agent,
            team: p.team,
            command: p.command,
            cwd: p.cwd,
            env: p.env,
        }
    }
}

/// `create_layout` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateLayoutArgs {
    /// Window name (also the prefix of unnamed sessions: "web-1", "web-2"…).
    pub name: String,
    /// A preset: single, horizontal (side by side), vertical (stacked), quad, triple_vertical
    /// (three side by side), triple_bottom (one on top, two below), grid (with rows and cols).
    /// Omit it to give `tree` instead.
    #[serde(default)]
    pub layout: Option<String>,
    /// For grid: rows (1-8; rows × cols at most 16 panes).
    #[serde(default)]
    pub rows: Option<u16>,
    /// For grid: columns (1-8; rows × cols at most 16 panes).
    #[serde(default)]
    pub cols: Option<u16>,
    /// A split tree instead of a preset, e.g. {"split": "horizontal", "children": [{"pane": 0, "size": 30},
    /// {"split": "vertical", "children": [{"pane": 1}, {"pane": 2}]}]}; panes are numbered in reading order.
    #[serde(default)]
    pub tree: Option<TreeArg>,
    /// The panes in reading order: name, agent, team, command, cwd, env (all optional).
    #[serde(default)]
    pub panes: Vec<PaneArg>,
}

/// `create_layout` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CreateLayoutResult {
    /// The sessions created, in reading order.
    pub sessions: Vec<SessionSummary>,
    /// How a human watches the window.
    pub attach: String,
    /// Sessions whose shell was not ready (no prompt yet), and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

/// `split` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SplitArgs {
    /// The session whose pane is split (name, persistent id, agent name or pane id).
    pub target: String,
    /// Name of the new session.
    pub name: String,
    /// "horizontal" (new pane to the right, the default) or "vertical" (new pane below).
    #[serde(default)]
    pub direction: Option<String>,
    /// Size of the new pane in percent of the split pane (1-99; default 50).
    #[serde(default)]
    pub percent: Option<u8>,
    /// Command instead of a shell.
    #[serde(default)]
    pub command: Option<String>,
    /// Working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Agent working in the new session.
    #[serde(default)]
    pub agent: Option<String>,
    /// Team of that agent.
    #[serde(default)]
    pub team: Option<String>,
}

/// `set_appearance` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppearanceArgs {
    /// One session (name, id, agent or pane id).
    #[serde(default)]
    pub target: Option<String>,
    /// Or many: sessions, agents, teams, paths.
    #[serde(default)]
    pub targets: Vec<String>,
    /// Pane title.
    #[serde(default)]
    pub title: Option<String>,
    /// Badge text (tmux: on the pane's border).
    #[serde(default)]
    pub badge: Option<String>,
    /// Tab colour #rrggbb (tmux: pane border and status).
    #[serde(default)]
    pub tab_color: Option<String>,
    /// Background colour #rrggbb.
    #[serde(default)]
    pub background: Option<String>,
    /// Cursor colour #rrggbb.
    #[serde(default)]
    pub cursor_color: Option<String>,
    /// Show the team colour of the agent there.
    #[serde(default)]
    pub team_colour: bool,
    /// Make it the active pane of its window.
    #[serde(default)]
    pub active: bool,
    /// Bring it to the front for a human.
    #[serde(default)]
    pub focus: bool,
    /// First undo cohort's badge and colours.
    #[serde(default)]
    pub reset: bool,
}

/// `broadcast_input` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BroadcastInputArgs {
    /// Sessions (names, persistent ids, agent names or pane ids) to put in one group:
    /// two or more, in one window (split or create_layout puts them there). Omit to see
    /// the groups.
    #[serde(default)]
    pub targets: Vec<String>,
    /// Take the targets out of their groups instead (default false).
    #[serde(default)]
    pub off: bool,
    /// Who is asking (your agent name); a locked session's group is changed only by
    /// its lock's holder.
    #[serde(default)]
    pub owner: Option<String>,
}

/// What `arrange` does.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ArrangeAction {
    /// List the saved arrangements.
    List,
    /// Save the windows of the targets under the name.
    Save,
    /// Open the arrangement again.
    Restore,
    /// Forget it.
    Delete,
}

/// `arrange` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArrangeArgs {
    /// list (default), save, restore or delete.
    #[serde(default = "list_action")]
    pub action: ArrangeAction,
    /// The arrangement's name (save, restore, delete).
    #[serde(default)]
    pub name: Option<String>,
    /// For save: sessions whose windows are saved (names, ids, agent names, teams, tags).
    #[serde(default)]
    pub targets: Vec<String>,
}

fn list_action() -> ArrangeAction {
    ArrangeAction::List
}

/// One saved window, as listed.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ArrangedWindowView {
    /// The window's name.
    pub name: String,
    /// Its sessions in reading order.
    pub sessions: Vec<String>,
}

/// One arrangement, as listed.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ArrangementView {
    /// Its name.
    pub name: String,
    /// Its windows.
    pub windows: Vec<ArrangedWindowView>,
    /// The names the terminal keeps it under as its own arrangement, for a person
    /// to restore from its menu (iTerm2's Window › Restore Window Arrangement).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub native: Vec<String>,
}

/// What `arrange` did.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ArrangeResult {
    /// The arrangements listed, saved or deleted.
    pub arrangements: Vec<ArrangementView>,
    /// The sessions a restore opened.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opened: Vec<SessionSummary>,
    /// Shells that showed no prompt in time, after a restore; the terminal's own
    /// copy not kept, or an older one left, after a save; what stays behind a
    /// delete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// For list, where the terminal keeps arrangements of its own (iTerm2): every
    /// name it holds, cohort's copies and the person's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_terminal: Option<Vec<String>>,
}

impl super::reply::Plain for ArrangeResult {}

impl From<&cohort_terminal::arrangements::Arrangement> for ArrangementView {
    fn from(a: &cohort_terminal::arrangements::Arrangement) -> Self {
        ArrangementView {
            name: a.name.clone(),
            windows: a
                .windows
                .iter()
                .map(|w| ArrangedWindowView {
                    name: w.name.clone(),
                    sessions: w.panes.iter().map(|p| p.name.clone()).collect(),
                })
                .collect(),
            native: a.native.clone(),
        }
    }
}

/// `hide` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HideArgs {
    /// Sessions to hide (names, persistent ids, agent names, pane ids, teams, tags).
    pub targets: Vec<String>,
    /// Show them again instead (default false).
    #[serde(default)]
    pub show: bool,
    /// Who is asking (your agent name); a locked session is hidden or shown only by
    /// its lock's holder.
    #[serde(default)]
    pub owner: Option<String>,
}

/// The sessions hidden or shown.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct HideResult {
    /// Each session as listed now.
    pub sessions: Vec<SessionSummary>,
}

impl super::reply::Plain for HideResult {}

/// One broadcast group.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct BroadcastGroupView {
    /// Its sessions (a pane that is not cohort's by its id).
    pub sessions: Vec<String>,
    /// Their pane ids.
    pub panes: Vec<String>,
}

/// The broadcast groups.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct BroadcastInputResult {
    /// Every group now.
    pub groups: Vec<BroadcastGroupView>,
    /// What a group does, on this terminal.
    pub note: String,
}

impl super::reply::Plain for BroadcastInputResult {}

/// What a broadcast group does on a terminal with these capabilities.
fn broadcast_note(caps: &cohort_backends::Capabilities) -> String {
    let mut note = "what a person types into a member reaches every member; send and key into a member reach the whole group unless alone: true; run types into its own session only".to_string();
    if !caps.broadcast_groups_share_windows {
        note.push_str("; on tmux a window holds one group");
    }
    note
}

#[tool_router(router = layout_router, vis = "pub(crate)")]
impl CohortServer {
    #[tool(
        description = "Saved arrangements of windows: action save (name, targets) keeps the windows holding the target sessions — split trees with sizes, each pane's name, agent, team, directory and the command it was opened with; restore (name) opens them again, by this server or another, after they were closed or a restart; list; delete (name). On iTerm2 (capability native_arrangements) a save is also kept as iTerm2's own arrangement `cohort NAME`, which a person restores from its Window menu; list shows iTerm2's names under in_terminal.",
        annotations(
            title = "Save and restore arrangements",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn arrange(
        &self,
        Parameters(args): Parameters<ArrangeArgs>,
    ) -> Result<Json<ArrangeResult>, String> {
        let engine = self.engine().await?;
        let terminal = &engine.terminal;
        let named = || {
            args.name
                .clone()
                .ok_or_else(|| "name is missing: say which arrangement".to_string())
        };
        let mut result = ArrangeResult {
            arrangements: Vec::new(),
            opened: Vec::new(),
            notices: Vec::new(),
            in_terminal: None,
        };
        match args.action {
            ArrangeAction::List => {
                for a in terminal.arrangements().await.map_err(err)? {
                    result.arrangements.push(ArrangementView::from(&a));
                }
                match terminal.native_arrangements().await {
                    Ok(names) => result.in_terminal = names,
                    Err(e) => result.notices.push(format!(
                        "the terminal's own arrangements are not listed: {e}"
                    )),
                }
            }
            ArrangeAction::Save => {
                if args.targets.is_empty() {
                    return Err("targets is empty: name the sessions whose windows to save".into());
                }
                let saved = terminal
                    .save_arrangement(&named()?, &args.targets)
                    .await
                    .map_err(err)?;
                result
                    .arrangements
                    .push(ArrangementView::from(&saved.arrangement));
                result.notices = saved.notices;
            }
            ArrangeAction::Restore => {
                let name = named()?;
                let arrangement = terminal.arrangement(&name).await.map_err(err)?;
                for laid in terminal.restore_arrangement(&name).await.map_err(err)? {
                    result
                        .opened
                        .extend(laid.panes.iter().map(SessionSummary::from));
                    result.notices.extend(laid.notices);
                }
                result
                    .arrangements
                    .push(ArrangementView::from(&arrangement));
            }
            ArrangeAction::Delete => {
                let name = named()?;
                let native = terminal
                    .arrangement(&name)
                    .await
                    .map(|a| a.native)
                    .unwrap_or_default();
                if !terminal.delete_arrangement(&name).await.map_err(err)? {
                    return Err(format!(
                        "no arrangement named {name:?}: list shows the saved ones"
                    ));
                }
                if !native.is_empty() {
                    result.notices.push(format!(
                        "the terminal keeps its own copy ({}): its Arrangements settings delete it",
                        native.join(", ")
                    ));
                }
            }
        }
        Ok(Json(result))
    }

    #[tool(
        description = "Hide sessions from the person's view (iTerm2 buries them; tmux moves each to a window of its own left out of the status line), or show them again with show: true. A hidden session keeps running and is read, typed into and waited on as before; list marks it hidden: true.",
        annotations(
            title = "Hide sessions",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn hide(
        &self,
        Parameters(args): Parameters<HideArgs>,
    ) -> Result<Json<HideResult>, String> {
        if args.targets.is_empty() {
            return Err("targets is empty: name the sessions to hide or show".into());
        }
        let engine = self.engine().await?;
        let terminal = &engine.terminal;
        let caller = self.caller(args.owner.clone());
        let mut panes = Vec::new();
        for (_, found) in terminal.expand_targets(&args.targets).await.map_err(err)? {
            let pane = found.map_err(err)?;
            if !panes
                .iter()
                .any(|p: &cohort_backends::PaneInfo| p.id == pane.id)
            {
                panes.push(pane);
            }
        }
        let mut sessions: Vec<SessionSummary> = Vec::new();
        for pane in panes {
            match terminal.set_hidden(&pane.id, !args.show, &caller).await {
                Ok(now) => sessions.push(SessionSummary::from(&now)),
                Err(e) if sessions.is_empty() => return Err(err(e)),
                Err(e) => {
                    let done: Vec<&str> = sessions.iter().map(|s| s.name.as_str()).collect();
                    return Err(format!(
                        "{} (already {}: {})",
                        err(e),
                        if args.show { "shown" } else { "hidden" },
                        done.join(", ")
                    ));
                }
            }
        }
        Ok(Json(HideResult { sessions }))
    }

    #[tool(
        description = "Group sessions for broadcast input: what is typed into one member (by a person, or by send and key unless alone: true) reaches them all, like typing into several servers at once. The sessions must share a window (open them with split or create_layout). off: true takes sessions out of their group; with no targets it lists the groups.",
        annotations(
            title = "Broadcast input",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn broadcast_input(
        &self,
        Parameters(args): Parameters<BroadcastInputArgs>,
    ) -> Result<Json<BroadcastInputResult>, String> {
        let engine = self.engine().await?;
        let terminal = &engine.terminal;
        let groups = if args.targets.is_empty() {
            if args.off {
                return Err(
                    "off: true needs targets: the sessions to take out of their groups".into(),
                );
            }
            terminal.broadcast_groups().await.map_err(err)?
        } else {
            let mut panes = Vec::new();
            for target in &args.targets {
                panes.push(terminal.resolve(target).await.map_err(err)?.id);
            }
            terminal
                .group_input(&panes, !args.off, &self.caller(args.owner.clone()))
                .await
                .map_err(err)?
        };
        Ok(Json(BroadcastInputResult {
            groups: groups
                .into_iter()
                .map(|g| BroadcastGroupView {
                    sessions: g.sessions,
                    panes: g.panes.iter().map(|p| p.to_string()).collect(),
                })
                .collect(),
            note: broadcast_note(&terminal.capabilities()),
        }))
    }

    #[tool(
        description = "Make a pane cohort did not open (listed by list with all=true, owned: false) one of its sessions, so it can be read and typed into: stamps a persistent identity on it and records it. A person's windows are never used until adopted. Its shell has no cohort integration: run with mark=true for exit statuses (else a run ends when the pane is quiet with its shell in front).",
        annotations(
            title = "Adopt a pane",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn adopt(
        &self,
        Parameters(args): Parameters<AdoptPaneArgs>,
    ) -> Result<Json<OpenResult>, String> {
        let engine = self.engine().await?;
        let options = cohort_terminal::ownership::AdoptOptions {
            name: args.name,
            agent: args.agent,
            team: args.team,
        };
        let pane = engine
            .terminal
            .adopt_pane(&args.pane, options)
            .await
            .map_err(err)?;
        Ok(Json(OpenResult {
            session: SessionSummary::from(&pane),
            attach: engine.terminal.attach_text(&pane.id),
            notice: None,
            recording: None,
        }))
    }

    #[tool(
        description = "Open several sessions in one window, arranged by a preset (single, horizontal, vertical, quad, triple_vertical, triple_bottom, grid) or a split tree with sizes. Each pane can be named and given an agent, team, command, cwd and env; panes with an agent are titled \"Team :: Agent\".",
        annotations(
            title = "Create a layout",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn create_layout(
        &self,
        Parameters(args): Parameters<CreateLayoutArgs>,
    ) -> Result<Json<CreateLayoutResult>, String> {
        let engine = self.engine().await?;
        let tree = layout_tree(
            args.layout.as_deref(),
            args.tree.map(SplitTree::from),
            args.rows,
            args.cols,
            args.panes.len(),
        )
        .map_err(err)?;
        let described: Vec<LayoutPane> = args.panes.into_iter().map(LayoutPane::from).collect();
        let laid = engine
            .terminal
            .create_layout_up(&args.name, &tree, &described)
            .await
            .map_err(err)?;
        let sessions = laid.panes.iter().map(SessionSummary::from).collect();
        let attach = laid
            .panes
            .first()
            .map(|p| engine.terminal.attach_text(&p.id))
            .unwrap_or_default();
        let notices = laid.notices;
        Ok(Json(CreateLayoutResult {
            sessions,
            attach,
            notices,
        }))
    }

    #[tool(
        description = "Split a session's pane and open a new session in the new pane (to the right by default, or below).",
        annotations(
            title = "Split a pane",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn split(
        &self,
        Parameters(args): Parameters<SplitArgs>,
    ) -> Result<Json<OpenResult>, String> {
        let engine = self.engine().await?;
        let direction = match args.direction.as_deref() {
            None | Some("horizontal") | Some("right") => SplitDirection::Horizontal,
            Some("vertical") | Some("below") | Some("down") => SplitDirection::Vertical,
            Some(other) => {
                return Err(format!(
                    "direction {other:?}: use \"horizontal\" (right) or \"vertical\" (below)"
                ))
            }
        };
        let size = match args.percent {
            None => None,
            Some(p @ 1..=99) => Some(SplitSize::Percent(p)),
            Some(p) => return Err(format!("percent {p} is out of range: use 1 to 99")),
        };
        let parent = engine.terminal.resolve(&args.target).await.map_err(err)?;
        let pane = engine
            .terminal
            .split(
                &parent.id,
                direction,
                size,
                OpenOptions {
                    name: args.name,
                    cwd: args.cwd,
                    command: args.command.clone(),
                    agent: args.agent,
                    team: args.team,
                    window: Some(parent.window_name.clone()),
                    ..Default::default()
                },
            )
            .await
            .map_err(err)?;
        Ok(Json(OpenResult::new(
            engine,
            engine.terminal.once_up(pane, args.command.is_some()).await,
        )))
    }

    #[tool(
        description = "Bring a session to the front for a human watching (selects its window and pane).",
        annotations(
            title = "Focus a session",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn focus(&self, Parameters(args): Parameters<TargetArgs>) -> Result<Json<Done>, String> {
        let engine = self.engine().await?;
        let pane = engine.terminal.resolve(&args.target).await.map_err(err)?;
        engine.terminal.focus(&pane.id).await.map_err(err)?;
        Ok(Json(Done::from(&pane)))
    }

    #[tool(
        description = "Change what a human sees of one or many sessions: title, badge, tab/background/cursor colour, team colour, active pane, focus, reset. Each target answers on its own.",
        annotations(
            title = "Set appearance",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn set_appearance(
        &self,
        Parameters(args): Parameters<AppearanceArgs>,
    ) -> Result<Json<ManyResult>, String> {
        let engine = self.engine().await?;
        let mut targets = args.targets;
        targets.extend(args.target);
        let change = AppearanceChange {
            look: Appearance {
                title: args.title,
                badge: args.badge,
                tab_color: args.tab_color,
                background: args.background,
                cursor_color: args.cursor_color,
                active: args.active,
                reset: args.reset,
            },
            focus: args.focus,
            team_colour: args.team_colour,
        };
        let results = engine
            .terminal
            .set_appearance_many(&targets, &change)
            .await
            .map_err(err)?;
        if results.len() == 1 {
            if let Some(e) = &results[0].error {
                return Err(e.clone());
            }
        }
        Ok(Json(ManyResult::from(results)))
    }
}

//! The fake's model of what iTerm2 shows: windows, their tabs, each tab's split tree
//! of sessions, and the ListSessions answer made from them.

use std::collections::HashMap;
use std::sync::Arc;

use cohort_backends::iterm2::proto::*;

use crate::lock;
use crate::session::Session;

/// A split tree.
#[derive(Clone, Debug)]
pub enum Node {
    /// One session.
    Leaf(String),
    /// `vertical`: a vertical divider, children side by side.
    Split { vertical: bool, children: Vec<Node> },
}

impl Node {
    pub(crate) fn contains(&self, session: &str) -> bool {
        match self {
            Node::Leaf(s) => s == session,
            Node::Split { children, .. } => children.iter().any(|c| c.contains(session)),
        }
    }

    pub(crate) fn sessions(&self, out: &mut Vec<String>) {
        match self {
            Node::Leaf(s) => out.push(s.clone()),
            Node::Split { children, .. } => children.iter().for_each(|c| c.sessions(out)),
        }
    }

    /// Inserts `new` next to `at`, in a split of the given orientation.
    pub(crate) fn split(&mut self, at: &str, new: &str, vertical: bool, before: bool) -> bool {
        match self {
            Node::Leaf(s) if s == at => {
                let old = Node::Leaf(s.clone());
                let new = Node::Leaf(new.to_string());
                *self = Node::Split {
                    vertical,
                    children: if before {
                        vec![new, old]
                    } else {
                        vec![old, new]
                    },
                };
                true
            }
            Node::Leaf(_) => false,
            Node::Split {
                vertical: v,
                children,
            } => {
                let v = *v;
                for i in 0..children.len() {
                    if matches!(&children[i], Node::Leaf(s) if s == at) && v == vertical {
                        let index = if before { i } else { i + 1 };
                        children.insert(index, Node::Leaf(new.to_string()));
                        return true;
                    }
                    if children[i].split(at, new, vertical, before) {
                        return true;
                    }
                }
                false
            }
        }
    }

    /// Removes a session; `false` when the node became empty.
    pub(crate) fn remove(&mut self, session: &str) -> bool {
        match self {
            Node::Leaf(s) => s != session,
            Node::Split { children, .. } => {
                children.retain_mut(|c| c.remove(session));
                if children.len() == 1 {
                    let only = children.remove(0);
                    *self = only;
                }
                !matches!(self, Node::Split { children, .. } if children.is_empty())
            }
        }
    }
}

/// One tab.
#[derive(Clone, Debug)]
pub struct Tab {
    pub id: String,
    pub root: Node,
    pub active: String,
    pub vars: HashMap<String, String>,
}

/// One window.
#[derive(Clone, Debug)]
pub struct Window {
    pub id: String,
    pub number: i32,
    pub tabs: Vec<Tab>,
    pub selected: String,
    pub size: (u16, u16),
    pub vars: HashMap<String, String>,
}

/// Everything the fake shows.
#[derive(Default)]
pub struct World {
    pub windows: Vec<Window>,
    pub sessions: HashMap<String, Arc<Session>>,
    pub(crate) next_tab: i32,
    pub(crate) next_window: i32,
    pub key_window: Option<String>,
    pub app_vars: HashMap<String, String>,
    /// Broadcast domains: the session ids that share typed input.
    pub broadcast: Vec<Vec<String>>,
    /// Buried sessions, in the order they were buried: running, in no tab.
    pub buried: Vec<String>,
    /// Where each buried session was: its window and tab.
    pub(crate) buried_from: HashMap<String, (String, String)>,
    /// Saved window arrangements, by name.
    pub(crate) arrangements: std::collections::BTreeMap<String, Vec<crate::handlers::SavedWindow>>,
}

impl World {
    pub(crate) fn tab_of(&self, session: &str) -> Option<(usize, usize)> {
        for (w, window) in self.windows.iter().enumerate() {
            for (t, tab) in window.tabs.iter().enumerate() {
                if tab.root.contains(session) {
                    return Some((w, t));
                }
            }
        }
        None
    }

    pub(crate) fn find_tab(&self, id: &str) -> Option<(usize, usize)> {
        for (w, window) in self.windows.iter().enumerate() {
            for (t, tab) in window.tabs.iter().enumerate() {
                if tab.id == id {
                    return Some((w, t));
                }
            }
        }
        None
    }

    pub(crate) fn active_session(&self) -> Option<String> {
        let window = self
            .key_window
            .as_ref()
            .and_then(|k| self.windows.iter().find(|w| &w.id == k))
            .or_else(|| self.windows.first())?;
        let tab = window.tabs.iter().find(|t| t.id == window.selected)?;
        Some(tab.active.clone())
    }

    /// Resolves `"active"` and checks the id.
    pub(crate) fn session(&self, id: &str) -> Option<Arc<Session>> {
        let id = if id == "active" {
            self.active_session()?
        } else {
            id.to_string()
        };
        self.sessions.get(&id).cloned()
    }

    pub(crate) fn remove_session(&mut self, id: &str) -> Option<Arc<Session>> {
        let session = self.sessions.remove(id)?;
        self.buried.retain(|s| s != id);
        self.buried_from.remove(id);
        self.detach(id);
        Some(session)
    }

    /// Buries `id`: out of its tab (a tab or window left empty closes), still
    /// running, listed among the buried sessions. False when it is not a live
    /// session in a tab.
    pub(crate) fn bury(&mut self, id: &str) -> bool {
        let Some((w, t)) = self.tab_of(id) else {
            return false;
        };
        if !self.sessions.contains_key(id) {
            return false;
        }
        let from = (
            self.windows[w].id.clone(),
            self.windows[w].tabs[t].id.clone(),
        );
        self.detach(id);
        self.buried.push(id.to_string());
        self.buried_from.insert(id.to_string(), from);
        true
    }

    /// Brings a buried session back where it was, as iTerm2's `restoreSession`
    /// does: into its tab when that is still there (beside its last pane), else as
    /// a new tab of its window, else in a new window. False when it is not buried.
    pub(crate) fn disinter(&mut self, id: &str) -> bool {
        let Some(at) = self.buried.iter().position(|s| s == id) else {
            return false;
        };
        self.buried.remove(at);
        let from = self.buried_from.remove(id);
        if let Some((window, tab)) = &from {
            if let Some((w, t)) = self.find_tab(tab) {
                let root = &mut self.windows[w].tabs[t].root;
                let mut all = Vec::new();
                root.sessions(&mut all);
                if let Some(last) = all.last().cloned() {
                    if root.split(&last, id, true, false) {
                        return true;
                    }
                }
            }
            if let Some(w) = self.windows.iter().position(|x| &x.id == window) {
                self.next_tab += 1;
                let tab_id = self.next_tab.to_string();
                self.windows[w].tabs.push(Tab {
                    id: tab_id,
                    root: Node::Leaf(id.to_string()),
                    active: id.to_string(),
                    vars: HashMap::new(),
                });
                return true;
            }
        }
        let size = self.sessions.get(id).map(|s| s.size()).unwrap_or((80, 24));
        self.next_tab += 1;
        self.next_window += 1;
        let tab_id = self.next_tab.to_string();
        let window = format!("pty-{}", uuid::Uuid::new_v4().to_string().to_uppercase());
        self.windows.push(Window {
            id: window.clone(),
            number: self.next_window,
            tabs: vec![Tab {
                id: tab_id.clone(),
                root: Node::Leaf(id.to_string()),
                active: id.to_string(),
                vars: HashMap::new(),
            }],
            selected: tab_id,
            size,
            vars: HashMap::new(),
        });
        if self.key_window.is_none() {
            self.key_window = Some(window);
        }
        true
    }

    /// Takes `id` out of its tab and its broadcast domain.
    fn detach(&mut self, id: &str) {
        for domain in &mut self.broadcast {
            domain.retain(|s| s != id);
        }
        self.broadcast.retain(|d| d.len() > 1);
        if let Some((w, t)) = self.tab_of(id) {
            let tab = &mut self.windows[w].tabs[t];
            if tab.root.remove(id) {
                if tab.active == id {
                    let mut all = Vec::new();
                    tab.root.sessions(&mut all);
                    tab.active = all.first().cloned().unwrap_or_default();
                }
            } else {
                let tab_id = tab.id.clone();
                let window = &mut self.windows[w];
                window.tabs.remove(t);
                if window.selected == tab_id {
                    window.selected = window
                        .tabs
                        .first()
                        .map(|t| t.id.clone())
                        .unwrap_or_default();
                }
                if window.tabs.is_empty() {
                    let gone = self.windows.remove(w);
                    if self.key_window.as_deref() == Some(gone.id.as_str()) {
                        self.key_window = self.windows.first().map(|w| w.id.clone());
                    }
                }
            }
        }
    }

    pub(crate) fn summary(&self, id: &str) -> SessionSummary {
        let (cols, rows, title) = match self.sessions.get(id) {
            Some(s) => {
                let (c, r) = s.size();
                (c, r, lock(&s.name).clone())
            }
            None => (0, 0, String::new()),
        };
        SessionSummary {
            unique_identifier: Some(id.to_string()),
            frame: Some(Frame {
                origin: Some(Point {
                    x: Some(0),
                    y: Some(0),
                }),
                size: Some(Size {
                    width: Some(cols as i32 * 7),
                    height: Some(rows as i32 * 15),
                }),
            }),
            grid_size: Some(Size {
                width: Some(cols as i32),
                height: Some(rows as i32),
            }),
            title: Some(title),
        }
    }

    pub(crate) fn tree(&self, node: &Node) -> SplitTreeNode {
        use split_tree_node::{split_tree_link::Child, SplitTreeLink};
        match node {
            // The root is always a node, even for a single session.
            Node::Leaf(id) => SplitTreeNode {
                vertical: Some(false),
                links: vec![SplitTreeLink {
                    child: Some(Child::Session(self.summary(id))),
                }],
            },
            Node::Split { vertical, children } => SplitTreeNode {
                vertical: Some(*vertical),
                links: children
                    .iter()
                    .map(|c| SplitTreeLink {
                        child: Some(match c {
                            Node::Leaf(id) => Child::Session(self.summary(id)),
                            split => Child::Node(self.tree(split)),
                        }),
                    })
                    .collect(),
            },
        }
    }

    /// The ListSessions answer.
    pub fn list(&self) -> ListSessionsResponse {
        ListSessionsResponse {
            windows: self
                .windows
                .iter()
                .filter(|w| !w.tabs.is_empty())
                .map(|w| list_sessions_response::Window {
                    tabs: w
                        .tabs
                        .iter()
                        .map(|t| list_sessions_response::Tab {
                            tab_id: Some(t.id.clone()),
                            root: Some(self.tree(&t.root)),
                            // Always set; "-1" when the tab is not a tmux tab.
                            tmux_window_id: Some("-1".into()),
                            tmux_connection_id: None,
                            minimized_sessions: Vec::new(),
                        })
                        .collect(),
                    window_id: Some(w.id.clone()),
                    frame: Some(Frame {
                        origin: Some(Point {
                            x: Some(0),
                            y: Some(0),
                        }),
                        size: Some(Size {
                            width: Some(w.size.0 as i32 * 7),
                            height: Some(w.size.1 as i32 * 15),
                        }),
                    }),
                    number: Some(w.number),
                })
                .collect(),
            // iTerm2 gives a buried session its id and title only.
            buried_sessions: self
                .buried
                .iter()
                .map(|id| SessionSummary {
                    unique_identifier: Some(id.clone()),
                    title: self.sessions.get(id).map(|s| lock(&s.name).clone()),
                    ..Default::default()
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_split_and_collapse() {
        let mut root = Node::Leaf("a".into());
        assert!(root.split("a", "b", true, false));
        assert!(root.split("b", "c", true, false));
        assert!(root.split("a", "d", false, false));
        let mut all = Vec::new();
        root.sessions(&mut all);
        assert_eq!(all, ["a", "d", "b", "c"]);
        assert!(root.remove("d"));
        assert!(root.remove("b"));
        assert!(root.remove("c"));
        assert!(matches!(root, Node::Leaf(ref s) if s == "a"));
        assert!(!root.remove("a"));
    }
}

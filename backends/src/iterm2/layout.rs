//! Layouts: iTerm2's split trees read as cohort's [`LayoutNode`]s, and splits sized
//! after the fact with SetTabLayout (SplitPane itself takes no size).

use crate::error::{BackendError, Result};
use crate::layout::{LayoutNode, Rect};
use crate::types::{PaneId, SplitDirection, SplitSize};

use super::proto::client_originated_message::Submessage as Req;
use super::proto::server_originated_message::Submessage as Rep;
use super::proto::*;
use super::requests::{list_sessions, unexpected};
use super::Iterm2Backend;

impl Iterm2Backend {
    /// Gives `new`, just split off `old`, its requested share of the two panes' space
    /// with a SetTabLayout request: the tab's tree as listed, with only these two
    /// sessions' grid sizes changed (their sum stays, as iTerm2 requires).
    pub(super) async fn size_split(
        &self,
        old: &PaneId,
        new: &PaneId,
        direction: SplitDirection,
        size: SplitSize,
    ) -> Result<()> {
        let listed = list_sessions(&*self.conn().await?).await?;
        let vertical_divider = direction == SplitDirection::Horizontal;
        let tab = listed
            .windows
            .iter()
            .flat_map(|w| &w.tabs)
            .find(|t| {
                t.root.as_ref().is_some_and(|r| {
                    let mut all = Vec::new();
                    sessions_of(r, &mut all);
                    all.iter()
                        .any(|s| s.unique_identifier.as_deref() == Some(new.as_str()))
                })
            })
            .ok_or_else(|| BackendError::PaneGone(new.clone()))?;
        let mut root = layout_request(tab.root.as_ref().expect("found by its root"));
        if !resize_pair(
            &mut root,
            old.as_str(),
            new.as_str(),
            vertical_divider,
            size,
        ) {
            return Err(BackendError::Protocol(format!(
                "{new} is not next to {old} in a {} split",
                if vertical_divider {
                    "side-by-side"
                } else {
                    "stacked"
                }
            )));
        }
        let reply = self
            .call(Req::SetTabLayoutRequest(SetTabLayoutRequest {
                root: Some(root),
                tab_id: tab.tab_id.clone(),
            }))
            .await?;
        match reply {
            Rep::SetTabLayoutResponse(r) => match r.status() {
                set_tab_layout_response::Status::Ok => Ok(()),
                other => Err(BackendError::Protocol(format!(
                    "iTerm2 did not resize the split: {other:?}"
                ))),
            },
            other => Err(unexpected("SetTabLayout", &other)),
        }
    }
}

/// Converts iTerm2's split tree into cohort's layout, with cell rectangles.
pub(super) fn layout_from(node: &SplitTreeNode, x: u16, y: u16) -> LayoutNode {
    use split_tree_node::split_tree_link::Child;
    let vertical_divider = node.vertical.unwrap_or(false);
    let mut children = Vec::new();
    let (mut cx, mut cy) = (x, y);
    for link in &node.links {
        let child = match &link.child {
            Some(Child::Session(s)) => {
                let size = s.grid_size.unwrap_or_default();
                LayoutNode::Pane {
                    id: PaneId(s.unique_identifier.clone().unwrap_or_default()),
                    rect: Rect {
                        x: cx,
                        y: cy,
                        cols: size.width.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
                        rows: size.height.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
                    },
                }
            }
            Some(Child::Node(n)) => layout_from(n, cx, cy),
            None => continue,
        };
        let r = child.rect();
        if vertical_divider {
            cx = cx.saturating_add(r.cols).saturating_add(1);
        } else {
            cy = cy.saturating_add(r.rows).saturating_add(1);
        }
        children.push(child);
    }
    if children.len() == 1 {
        return children.remove(0);
    }
    let cols = if vertical_divider {
        children
            .iter()
            .map(|c| c.rect().cols as u32 + 1)
            .sum::<u32>()
            .saturating_sub(1)
    } else {
        children
            .iter()
            .map(|c| c.rect().cols as u32)
            .max()
            .unwrap_or(0)
    };
    let rows = if vertical_divider {
        children
            .iter()
            .map(|c| c.rect().rows as u32)
            .max()
            .unwrap_or(0)
    } else {
        children
            .iter()
            .map(|c| c.rect().rows as u32 + 1)
            .sum::<u32>()
            .saturating_sub(1)
    };
    LayoutNode::Split {
        direction: if vertical_divider {
            SplitDirection::Horizontal
        } else {
            SplitDirection::Vertical
        },
        rect: Rect {
            x,
            y,
            cols: cols.min(u16::MAX as u32) as u16,
            rows: rows.min(u16::MAX as u32) as u16,
        },
        children,
    }
}

/// A tab's tree as SetTabLayout takes it: `vertical` on every node, sessions with
/// their id and grid size only.
pub(super) fn layout_request(node: &SplitTreeNode) -> SplitTreeNode {
    use split_tree_node::split_tree_link::Child;
    use split_tree_node::SplitTreeLink;
    SplitTreeNode {
        vertical: Some(node.vertical.unwrap_or(false)),
        links: node
            .links
            .iter()
            .filter_map(|link| {
                let child = match link.child.as_ref()? {
                    Child::Session(s) => Child::Session(SessionSummary {
                        unique_identifier: s.unique_identifier.clone(),
                        frame: None,
                        grid_size: s.grid_size,
                        title: None,
                    }),
                    Child::Node(n) => Child::Node(layout_request(n)),
                };
                Some(SplitTreeLink { child: Some(child) })
            })
            .collect(),
    }
}

/// Finds `old` directly followed by `new` in a node of the given orientation and
/// moves cells between them so `new` has `size` (as a share of the pane `old` was
/// before the split, divider included); `false` when they are not found so.
pub(super) fn resize_pair(
    node: &mut SplitTreeNode,
    old: &str,
    new: &str,
    vertical_divider: bool,
    size: SplitSize,
) -> bool {
    use split_tree_node::split_tree_link::Child;
    let session = |link: &split_tree_node::SplitTreeLink| match &link.child {
        Some(Child::Session(s)) => s.unique_identifier.clone(),
        _ => None,
    };
    if node.vertical.unwrap_or(false) == vertical_divider {
        for i in 0..node.links.len().saturating_sub(1) {
            if session(&node.links[i]).as_deref() == Some(old)
                && session(&node.links[i + 1]).as_deref() == Some(new)
            {
                let extent = |link: &split_tree_node::SplitTreeLink| match &link.child {
                    Some(Child::Session(s)) => {
                        let g = s.grid_size.unwrap_or_default();
                        if vertical_divider {
                            g.width.unwrap_or(0)
                        } else {
                            g.height.unwrap_or(0)
                        }
                    }
                    _ => 0,
                };
                let sum = extent(&node.links[i]) + extent(&node.links[i + 1]);
                if sum < 4 {
                    return false;
                }
                let wanted = match size {
                    SplitSize::Percent(p) => {
                        ((sum + 1) as f64 * f64::from(p.min(100)) / 100.0).round() as i32
                    }
                    SplitSize::Cells(c) => i32::from(c),
                };
                let new_extent = wanted.clamp(2, sum - 2);
                for (index, extent) in [(i, sum - new_extent), (i + 1, new_extent)] {
                    if let Some(Child::Session(s)) = &mut node.links[index].child {
                        let g = s.grid_size.get_or_insert_with(Default::default);
                        if vertical_divider {
                            g.width = Some(extent);
                        } else {
                            g.height = Some(extent);
                        }
                    }
                }
                return true;
            }
        }
    }
    node.links.iter_mut().any(|link| match &mut link.child {
        Some(Child::Node(n)) => resize_pair(n, old, new, vertical_divider, size),
        _ => false,
    })
}

/// Every session of a tab, in reading order, with its summary.
pub(super) fn sessions_of(node: &SplitTreeNode, out: &mut Vec<SessionSummary>) {
    use split_tree_node::split_tree_link::Child;
    for link in &node.links {
        match &link.child {
            Some(Child::Session(s)) => out.push(s.clone()),
            Some(Child::Node(n)) => sessions_of(n, out),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iterm2::proto;

    #[test]
    fn set_tab_layout_matches_the_reference_encoding() {
        use prost::Message;
        use split_tree_node::split_tree_link::Child;
        use split_tree_node::SplitTreeLink;
        // Made with the official client's schema (`api_pb2`).
        let reference = "08 09 d2 07 23 0a 1e 08 01 12 0c 0a 0a 0a 02 53 31 1a 04 08 1e 10 1e \
                         12 0c 0a 0a 0a 02 53 32 1a 04 08 45 10 1e 12 01 33";
        let reference: Vec<u8> = reference
            .split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect();
        let session = |id: &str, width: i32| SplitTreeLink {
            child: Some(Child::Session(SessionSummary {
                unique_identifier: Some(id.into()),
                frame: None,
                grid_size: Some(proto::Size {
                    width: Some(width),
                    height: Some(30),
                }),
                title: None,
            })),
        };
        let request = ClientOriginatedMessage {
            id: Some(9),
            submessage: Some(Req::SetTabLayoutRequest(SetTabLayoutRequest {
                root: Some(SplitTreeNode {
                    vertical: Some(true),
                    links: vec![session("S1", 30), session("S2", 69)],
                }),
                tab_id: Some("3".into()),
            })),
        };
        assert_eq!(request.encode_to_vec(), reference);
        let reply =
            ServerOriginatedMessage::decode(&[0x08, 0x09, 0xd2, 0x07, 0x02, 0x08, 0x03][..])
                .unwrap();
        match reply.submessage {
            Some(Rep::SetTabLayoutResponse(r)) => {
                assert_eq!(r.status(), set_tab_layout_response::Status::InvalidSize)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_split_is_sized_by_moving_cells_between_the_pair() {
        use split_tree_node::split_tree_link::Child;
        use split_tree_node::SplitTreeLink;
        let leaf = |id: &str, w: i32, h: i32| SplitTreeLink {
            child: Some(Child::Session(SessionSummary {
                unique_identifier: Some(id.into()),
                frame: None,
                grid_size: Some(proto::Size {
                    width: Some(w),
                    height: Some(h),
                }),
                title: Some("t".into()),
            })),
        };
        let listed = SplitTreeNode {
            vertical: None,
            links: vec![
                leaf("A", 100, 15),
                SplitTreeLink {
                    child: Some(Child::Node(SplitTreeNode {
                        vertical: Some(true),
                        links: vec![leaf("B", 50, 14), leaf("C", 49, 14)],
                    })),
                },
            ],
        };
        let mut tree = layout_request(&listed);
        assert_eq!(tree.vertical, Some(false));
        // C gets 30 % of the 100 columns B had before the split.
        assert!(resize_pair(
            &mut tree,
            "B",
            "C",
            true,
            SplitSize::Percent(30)
        ));
        let mut all = Vec::new();
        sessions_of(&tree, &mut all);
        let widths: Vec<_> = all
            .iter()
            .map(|s| (s.grid_size.unwrap().width.unwrap(), s.title.is_none()))
            .collect();
        assert_eq!(widths, [(100, true), (69, true), (30, true)]);
        // Not a side-by-side pair, or not next to each other: nothing to do.
        assert!(!resize_pair(
            &mut tree,
            "A",
            "B",
            true,
            SplitSize::Cells(10)
        ));
        assert!(!resize_pair(
            &mut tree,
            "C",
            "B",
            true,
            SplitSize::Cells(10)
        ));
        // Sizes never squeeze a pane below two cells.
        assert!(resize_pair(
            &mut tree,
            "B",
            "C",
            true,
            SplitSize::Cells(500)
        ));
        sessions_of(&tree, &mut all);
        let c = all
            .iter()
            .rev()
            .find(|s| s.unique_identifier.as_deref() == Some("C"));
        assert_eq!(c.unwrap().grid_size.unwrap().width, Some(97));
    }
}

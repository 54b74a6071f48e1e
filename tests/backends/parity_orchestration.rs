//! Orchestration on both backends: waits, a watcher's action, a playbook over two
//! teams, team colours and batch appearance, through [`Engine`] against tmux (a
//! private server per test) and iTerm2 (cohort's fake iTerm2 server, in-process).

use crate::support::parity;
use crate::{support::*, terminals::EngineOn};
use cohort_backends::{Appearance, PaneId};
use cohort_orchestration::{
    playbook::{run::Runner, Playbook},
    waits::{Condition, Quorum},
    watch::{Action, Trigger, WatchSpec},
};
use cohort_terminal::{
    colours::AppearanceChange, completion::Until, Caller, OpenOptions, SendOptions,
};
use tokio_util::sync::CancellationToken;

/// One engine under test, with the terminal program it drives.
type Ctx = EngineOn;

impl Ctx {
    /// A shell session at its first prompt, reading its terminal.
    async fn shell_from(&self, options: OpenOptions) -> PaneId {
        let pane = self.engine.terminal.open(options).await.expect("open");
        assert!(
            self.engine.terminal.wait_ready(&pane.id, WAIT).await,
            "no prompt on {:?}",
            self.which
        );
        self.engine.terminal.wait_reading(&pane.id, WAIT).await;
        pane.id
    }

    async fn type_line(&self, pane: &PaneId, text: &str) {
        self.engine
            .terminal
            .send(pane, text, &SendOptions::default(), &Caller::new("test"))
            .await
            .unwrap_or_else(|e| panic!("{text} on {:?}: {e}", self.which));
    }

    async fn wait(
        &self,
        targets: &[&str],
        condition: Condition,
        quorum: Quorum,
    ) -> Vec<(bool, Option<String>, Option<i32>)> {
        let targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
        let outcome = self
            .engine
            .orchestrator
            .wait_for(&targets, &condition, quorum, WAIT, |_, _, _| {})
            .await
            .unwrap_or_else(|e| panic!("wait on {:?}: {e}", self.which));
        outcome
            .results
            .into_iter()
            .map(|m| (m.met, m.line, m.exit_status))
            .collect()
    }
}

parity!(
    EngineOn::start,
    wait_for_pattern_then_exit,
    |ctx: Ctx| async move {
        let a = ctx.shell_from(OpenOptions::named("wa")).await;
        ctx.shell_from(OpenOptions::named("wb")).await;
        ctx.type_line(
            &a,
            "sleep 1; printf 'ready on %s\\n' 7070; sleep 0.3; (exit 2)",
        )
        .await;
        let pattern = Condition::Pattern {
            until: Until::new(r"ready on \d+", true).unwrap(),
            input: false,
        };
        let met = ctx.wait(&["wa", "wb"], pattern, Quorum::Any).await;
        assert_eq!(
            met,
            vec![
                (true, Some("ready on 7070".into()), None),
                (false, None, None)
            ],
            "{:?}",
            ctx.which
        );
        let ended = ctx.wait(&["wa", "wb"], Condition::Exit, Quorum::All).await;
        assert_eq!(ended[0], (true, None, Some(2)), "{:?}", ctx.which);
        assert!(ended[1].0, "{:?}: nothing ran in wb", ctx.which);
    }
);

parity!(
    local,
    EngineOn::start,
    the_status_line_shows_each_teams_agents,
    |ctx: Ctx| async move {
        ctx.engine.orchestrator.start_orchestration();
        let in_team = |name: &str, agent: &str| OpenOptions {
            name: name.into(),
            agent: Some(agent.into()),
            team: Some("web".into()),
            ..Default::default()
        };
        let a = ctx.shell_from(in_team("sa", "ann")).await;
        let b = ctx.shell_from(in_team("sb", "bob")).await;
        let solo = ctx.shell_from(OpenOptions::named("plain")).await;
        let until = |pane: PaneId, want: &'static str| {
            let ctx = &ctx;
            async move {
                let deadline = std::time::Instant::now() + WAIT;
                loop {
                    let now = ctx.terminal.status_line(&pane);
                    if now.as_deref() == Some(want) {
                        return;
                    }
                    assert!(
                        std::time::Instant::now() < deadline,
                        "{pane} on {:?} shows {now:?}, not {want:?}",
                        ctx.which
                    );
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        };
        let orchestrator = &ctx.engine.orchestrator;
        orchestrator.report_agent_state("ann", "busy", "working on it");
        orchestrator.report_agent_state("bob", "needs_approval", "Bash(rm -rf build)");
        until(a.clone(), "web ● 1 working · 1 needs approval").await;
        until(b.clone(), "web ● 1 working · 1 needs approval").await;
        orchestrator.report_agent_state("bob", "busy", "approved");
        until(a.clone(), "web ● 2 working").await;
        until(b, "web ● 2 working").await;
        // A session without an agent shows nothing.
        assert_eq!(ctx.terminal.status_line(&solo), None, "{:?}", ctx.which);
        // On iTerm2 the line shows in cohort's own status-bar component, answered
        // by the backend when iTerm2 draws the bar.
        if let crate::terminals::Terminal::Iterm2(fake) = &ctx.terminal {
            let shown = fake.server.status_bar_text(a.as_str()).await;
            assert_eq!(shown.as_deref(), Some("web ● 2 working"));
            let shown = fake.server.status_bar_text(solo.as_str()).await;
            assert_eq!(shown.as_deref(), Some(""));
        }
    }
);

parity!(
    EngineOn::start,
    a_watcher_types_into_another_session,
    |ctx: Ctx| async move {
        ctx.engine.orchestrator.start_orchestration();
        let server = ctx.shell_from(OpenOptions::named("server")).await;
        ctx.shell_from(OpenOptions::named("client")).await;
        ctx.engine
            .orchestrator
            .add_watch(WatchSpec {
                id: String::new(),
                target: "server".into(),
                trigger: Trigger::Pattern {
                    pattern: "GET /".into(),
                    regex: false,
                    input: false,
                },
                action: Some(Action::Send {
                    target: "client".into(),
                    text: "echo fetched-$((2*21))".into(),
                    enter: true,
                }),
                notify: "lead".into(),
                context: 1,
                once: true,
                owner: None,
            })
            .await
            .unwrap();
        ctx.type_line(&server, "sleep 1; printf '%s / 200\\n' GET")
            .await;
        let met = ctx
            .wait(
                &["client"],
                Condition::Pattern {
                    until: Until::new("fetched-42", false).unwrap(),
                    input: false,
                },
                Quorum::All,
            )
            .await;
        assert!(met[0].0, "{:?}: the action never ran", ctx.which);
        let notes = ctx
            .engine
            .orchestrator
            .notifications_for("lead", false, Some(WAIT))
            .await
            .unwrap();
        assert!(
            notes
                .iter()
                .any(|n| n.kind == "watch" && n.message.contains("GET / 200")),
            "{:?}: {notes:?}",
            ctx.which
        );
    }
);

parity!(
    EngineOn::start,
    a_playbook_over_two_teams_stops_at_the_failure,
    |ctx: Ctx| async move {
        for (name, agent, team) in [
            ("a1", "ann", "red"),
            ("a2", "abe", "red"),
            ("b1", "bea", "blue"),
            ("b2", "bob", "blue"),
        ] {
            ctx.shell_from(OpenOptions {
                agent: Some(agent.into()),
                team: Some(team.into()),
                ..OpenOptions::named(name)
            })
            .await;
        }
        let book = Playbook::from_value(serde_json::json!({
            "steps": [
                {"name": "hello", "targets": ["red", "blue"], "command": "echo hello"},
                {"name": "check", "commands": [
                    {"targets": ["red"], "command": "true"},
                    {"targets": ["blue/bob"], "command": "echo broken; false"},
                ]},
                {"name": "never", "targets": ["red"], "command": "echo never"},
            ]
        }))
        .unwrap();
        let report = ctx
            .engine
            .orchestrator
            .run_playbook(
                &book,
                &Runner::new(Caller::new("test")),
                &CancellationToken::new(),
                |_| {},
            )
            .await;
        let steps: Vec<(bool, bool, usize)> = report
            .steps
            .iter()
            .map(|s| (s.ran, s.ok, s.results.len()))
            .collect();
        assert_eq!(
            steps,
            vec![(true, true, 4), (true, false, 3), (false, false, 0)],
            "{:?}: {report:#?}",
            ctx.which
        );
        let bob = &report.steps[1].results[2];
        assert_eq!(bob.session, "b2");
        assert_eq!(
            bob.verdict.as_ref().and_then(|v| v.exit_status),
            Some(1),
            "{:?}",
            ctx.which
        );
    }
);

parity!(
    EngineOn::start,
    team_colours_and_batch_appearance,
    |ctx: Ctx| async move {
        let caps = ctx.engine.terminal.backend().capabilities();
        let mut panes = Vec::new();
        for (name, agent, team) in [("c1", "cy", "cyan"), ("c2", "ed", "edge")] {
            panes.push(
                ctx.shell_from(OpenOptions {
                    agent: Some(agent.into()),
                    team: Some(team.into()),
                    ..OpenOptions::named(name)
                })
                .await,
            );
        }
        if !caps.tab_colors {
            skip_reason(&ctx, "no tab colours");
            return;
        }
        let cyan = ctx.engine.terminal.team_colour("cyan").await.unwrap();
        let edge = ctx.engine.terminal.team_colour("edge").await.unwrap();
        assert!(cohort_terminal::colours::hue_distance(cyan.hue, edge.hue) >= 40.0);
        let shown = ctx
            .engine
            .terminal
            .backend()
            .appearance(&panes[0])
            .await
            .unwrap();
        assert_eq!(shown.tab_color, Some(cyan.hex.clone()), "{:?}", ctx.which);
        let shown = ctx
            .engine
            .terminal
            .backend()
            .appearance(&panes[1])
            .await
            .unwrap();
        assert_eq!(shown.tab_color, Some(edge.hex.clone()), "{:?}", ctx.which);

        // One call, many targets: both get a cursor colour; then a reset puts both back.
        let change = AppearanceChange {
            look: Appearance {
                cursor_color: Some("#00ff00".into()),
                ..Appearance::default()
            },
            ..AppearanceChange::default()
        };
        let done = ctx
            .engine
            .terminal
            .set_appearance_many(&["cyan".into(), "edge".into()], &change)
            .await
            .unwrap();
        assert!(
            done.iter().all(|d| d.error.is_none()),
            "{:?}: {done:?}",
            ctx.which
        );
        for pane in &panes {
            let shown = ctx
                .engine
                .terminal
                .backend()
                .appearance(pane)
                .await
                .unwrap();
            assert_eq!(
                shown.cursor_color.as_deref(),
                Some("#00ff00"),
                "{:?}",
                ctx.which
            );
        }
        let reset = AppearanceChange {
            look: Appearance {
                reset: true,
                ..Appearance::default()
            },
            ..AppearanceChange::default()
        };
        ctx.engine
            .terminal
            .set_appearance_many(&["c1".into(), "c2".into()], &reset)
            .await
            .unwrap();
        for pane in &panes {
            let shown = ctx
                .engine
                .terminal
                .backend()
                .appearance(pane)
                .await
                .unwrap();
            assert_eq!(
                (shown.tab_color, shown.cursor_color, shown.badge),
                (None, None, None),
                "{:?}",
                ctx.which
            );
        }
    }
);

/// Prints why a scenario, or part of one, does not apply to this backend.
fn skip_reason(ctx: &Ctx, reason: &str) {
    eprintln!("skipped on {:?}: {reason}", ctx.which);
}

parity!(
    local,
    EngineOn::start,
    a_team_with_alerts_raises_what_needs_a_person,
    |ctx: Ctx| async move {
        ctx.engine.orchestrator.start_orchestration();
        let terminal = &ctx.engine.terminal;
        for team in ["ops", "quiet"] {
            terminal.create_team(team, None).await.unwrap();
        }
        terminal.set_team_alerts("ops", true).await.unwrap();
        assert!(terminal.team_alerts("ops").await.unwrap());
        assert!(!terminal.team_alerts("quiet").await.unwrap());
        assert!(terminal.set_team_alerts("nobody", true).await.is_err());
        let in_team = |name: &str, agent: &str, team: &str| OpenOptions {
            name: name.into(),
            agent: Some(agent.into()),
            team: Some(team.into()),
            ..Default::default()
        };
        let loud = ctx.shell_from(in_team("oa", "ann", "ops")).await;
        let calm = ctx.shell_from(in_team("qa", "quin", "quiet")).await;
        let orchestrator = &ctx.engine.orchestrator;
        orchestrator.report_agent_state("quin", "needs_approval", "Bash(make deploy)");
        orchestrator.report_agent_state("ann", "needs_approval", "Bash(rm -rf build)");
        match &ctx.terminal {
            crate::terminals::Terminal::Iterm2(fake) => {
                let deadline = std::time::Instant::now() + WAIT;
                loop {
                    let alerts = fake.server.alerts();
                    let raised = alerts.iter().any(|(session, text)| {
                        session == loud.as_str()
                            && text.as_deref().is_some_and(|t| t.contains("needs_approval"))
                    });
                    if raised {
                        break;
                    }
                    assert!(std::time::Instant::now() < deadline, "no alert: {alerts:?}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                // The other team's, reported first, raised nothing.
                let alerts = fake.server.alerts();
                assert!(
                    !alerts.iter().any(|(session, _)| session == calm.as_str()),
                    "{alerts:?}"
                );
            }
            _ => eprintln!(
                "skipped on {:?}: nobody is attached to see it (a tmux alert reaching an attached person is checked in cli_and_mcp)",
                ctx.which
            ),
        }
    }
);

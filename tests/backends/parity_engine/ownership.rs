//! Whose panes these are: a pane a person opened beside cohort's sessions (iTerm2's
//! first window, a window made from an attached tmux client) is not listed, read or
//! typed into until it is adopted; adopted, it is a session like any other, for
//! this process and the next. Run on both backends like the rest of the engine
//! parity suite.

use super::*;
use crate::support::parity;
use cohort_terminal::{ownership::AdoptOptions, TerminalError};

async fn a_persons_pane_is_not_a_session_until_adopted(ctx: Ctx) {
    let person = ctx.terminal.persons_pane();
    let ours = ctx.shell("ours").await;
    let terminal = &ctx.engine.terminal;

    let listed = terminal.list().await.unwrap();
    assert!(listed.iter().any(|p| p.id == ours), "on {:?}", ctx.which);
    assert!(
        !listed.iter().any(|p| p.id == person),
        "a person's pane listed as a session on {:?}: {listed:?}",
        ctx.which
    );
    let all = terminal.list_all().await.unwrap();
    let theirs = all
        .iter()
        .find(|p| p.id == person)
        .unwrap_or_else(|| panic!("{person} not in every pane on {:?}: {all:?}", ctx.which))
        .clone();
    assert!(theirs.identity.is_none(), "on {:?}", ctx.which);

    // Named by its pane id or its window name, it is refused, and the refusal says
    // how to make it a session.
    let mut targets = vec![person.to_string()];
    if !theirs.window_name.is_empty()
        && !all
            .iter()
            .any(|p| p.id != person && p.window_name == theirs.window_name)
    {
        targets.push(theirs.window_name.clone());
    }
    for target in &targets {
        let refused = terminal.resolve(target).await.unwrap_err();
        assert!(
            matches!(refused, TerminalError::NotAdopted { ref pane, .. } if *pane == person),
            "{target:?} on {:?}: {refused}",
            ctx.which
        );
        assert!(refused.to_string().contains("adopt"), "{refused}");
    }
    let expanded = terminal
        .expand_targets(&[person.to_string(), "ours".into()])
        .await
        .unwrap();
    assert!(
        matches!(expanded[0].1, Err(TerminalError::NotAdopted { .. })),
        "on {:?}: {:?}",
        ctx.which,
        expanded[0]
    );
    assert!(expanded[1].1.as_ref().is_ok_and(|p| p.id == ours));

    // A name that is taken, or a target that is no pane, adopts nothing.
    let taken = terminal
        .adopt_pane(
            person.as_str(),
            AdoptOptions {
                name: Some("ours".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(taken, TerminalError::NameTaken { .. }), "{taken}");
    let nothing = terminal
        .adopt_pane("%99999", AdoptOptions::default())
        .await
        .unwrap_err();
    assert!(
        nothing.to_string().contains(person.as_str()),
        "the error lists the panes that could be adopted: {nothing}"
    );
    assert!(terminal
        .list_all()
        .await
        .unwrap()
        .iter()
        .any(|p| p.id == person && p.identity.is_none()));

    // Adopted, with an agent: a session by its name, its agent and its pane id.
    let adopted = terminal
        .adopt_pane(
            person.as_str(),
            AdoptOptions {
                name: Some("notes".into()),
                agent: Some("scribe".into()),
                team: Some("desk".into()),
            },
        )
        .await
        .unwrap_or_else(|e| panic!("adopt on {:?}: {e}", ctx.which));
    let identity = adopted.identity.clone().expect("stamped");
    assert_eq!(
        (
            identity.name.as_str(),
            identity.agent.as_deref(),
            identity.team.as_deref()
        ),
        ("notes", Some("scribe"), Some("desk"))
    );
    for target in ["notes", "scribe", person.as_str(), identity.id.as_str()] {
        assert_eq!(
            terminal.resolve(target).await.unwrap().id,
            person,
            "{target}"
        );
    }
    // Adopting it again is answered with the session; under another name, refused.
    let again = terminal
        .adopt_pane("notes", AdoptOptions::default())
        .await
        .unwrap();
    assert_eq!(again.identity.map(|i| i.id), Some(identity.id.clone()));
    let renamed = terminal
        .adopt_pane(
            person.as_str(),
            AdoptOptions {
                name: Some("other".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(renamed.to_string().contains("notes"), "{renamed}");

    // Its shell has no cohort integration: with a mark, a run has its exit status.
    let send = SendOptions {
        mark: Some("ad0pt".into()),
        ..SendOptions::default()
    };
    let out = ctx
        .run_with(
            &person,
            "echo adopted-$((6*7)); (exit 4)",
            &send,
            spec(15_000),
        )
        .await;
    assert_eq!(
        decided(&out),
        (true, Layer::Mark, Some(4)),
        "on {:?}: {:?}",
        ctx.which,
        out.verdict
    );
    assert!(
        out.output.text.contains("adopted-42"),
        "{:?}",
        out.output.text
    );

    // Another cohort process on the same terminal and registry sees it as a session.
    let second = ctx.second_engine().await;
    let seen = second.terminal.list().await.unwrap();
    let there = seen
        .iter()
        .find(|p| p.id == person)
        .expect("listed by the next process");
    assert_eq!(
        there.identity.as_ref().map(|i| i.name.as_str()),
        Some("notes")
    );
    let agents = second.terminal.agents().await.unwrap();
    assert!(
        agents
            .iter()
            .any(|a| a.name == "scribe" && a.session.as_deref() == Some("notes")),
        "{agents:?}"
    );
}
parity!(
    local,
    EngineOn::start,
    a_persons_pane_is_not_a_session_until_adopted_,
    a_persons_pane_is_not_a_session_until_adopted
);

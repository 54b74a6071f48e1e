//! Team profiles: a team's variables reach every new pane of the team (a variable
//! given for the pane wins), and where the terminal keeps profiles of its own
//! (iTerm2's Dynamic Profiles) the team has one with its colour, read back from the
//! terminal, that its new panes start from. Run on both backends like the rest of
//! the engine parity suite.

use super::*;
use crate::support::parity;
use crate::terminals::Terminal as Program;

/// What `name` prints for `$var`.
async fn value_in(ctx: &Ctx, pane: &PaneId, var: &str) -> String {
    let out = ctx
        .run(pane, &format!("echo \"[${var}]\""), spec(10_000))
        .await;
    assert!(
        out.verdict.complete,
        "on {:?}: {:?}",
        ctx.which, out.verdict
    );
    out.output
        .text
        .lines()
        .find_map(|l| l.strip_prefix('[').and_then(|l| l.strip_suffix(']')))
        .unwrap_or_else(|| panic!("no value of {var} in {:?}", out.output.text))
        .to_string()
}

async fn a_team_starts_its_panes_from_its_profile(ctx: Ctx) {
    let terminal = &ctx.engine.terminal;
    terminal.create_team("web", None).await.unwrap();
    let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    terminal
        .set_team_env(
            "web",
            &env(&[("DEPLOY_ENV", "staging"), ("API_URL", "http://api:8080")]),
        )
        .await
        .unwrap();
    for bad in [
        ("1ST", "x"),
        ("A-B", "x"),
        ("COHORT_SESSION", "spoof"),
        ("TERM", "dumb"),
        ("ITERM_PROFILE", "x"),
        ("OK", "a\0b"),
    ] {
        let refused = terminal
            .set_team_env("web", &env(&[bad]))
            .await
            .unwrap_err();
        assert!(refused.to_string().contains(bad.0), "{bad:?}: {refused}");
    }
    assert!(terminal.set_team_env("nobody", &[]).await.is_err());

    let open = |name: &str, pane_env: Vec<(String, String)>| OpenOptions {
        name: name.into(),
        agent: Some(format!("{name}-agent")),
        team: Some("web".into()),
        env: pane_env,
        ..Default::default()
    };
    let pane = terminal.open(open("web-1", Vec::new())).await.unwrap().id;
    assert!(terminal.wait_ready(&pane, WAIT).await, "on {:?}", ctx.which);
    assert_eq!(
        value_in(&ctx, &pane, "DEPLOY_ENV").await,
        "staging",
        "on {:?}",
        ctx.which
    );
    assert_eq!(value_in(&ctx, &pane, "API_URL").await, "http://api:8080");
    // A variable given for the pane wins over the team's.
    let own = terminal
        .open(open("web-2", env(&[("DEPLOY_ENV", "prod")])))
        .await
        .unwrap()
        .id;
    assert!(terminal.wait_ready(&own, WAIT).await);
    assert_eq!(
        value_in(&ctx, &own, "DEPLOY_ENV").await,
        "prod",
        "on {:?}",
        ctx.which
    );

    let colour = terminal.team_colour("web").await.unwrap();
    match &ctx.terminal {
        Program::Iterm2(fake) if ctx.backend().capabilities().team_profiles => {
            // The profile, as iTerm2 reads it from its folder.
            let file = fake.dynamic_profiles().join("cohort-teams.json");
            let json: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            let profile = json["Profiles"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["Name"] == "cohort team web")
                .unwrap_or_else(|| panic!("no profile of web in {json}"))
                .clone();
            assert_eq!(profile["Badge Text"], "web", "{profile}");
            let red = (profile["Tab Color"]["Red Component"].as_f64().unwrap() * 255.0).round();
            let hex = u8::from_str_radix(&colour.hex[1..3], 16).unwrap() as f64;
            assert_eq!(red, hex, "{profile} vs {}", colour.hex);
            // The pane started from it: only the profile carries its tags.
            let tags = fake.server.profile_property(pane.as_str(), "Tags");
            assert_eq!(tags.as_deref(), Some("[\"cohort\"]"), "on iTerm2");
            // A profile iTerm2 no longer has: the pane starts from Default.
            std::fs::remove_file(&file).unwrap();
            let plain = terminal.open(open("web-4", Vec::new())).await.unwrap().id;
            assert!(terminal.wait_ready(&plain, WAIT).await);
            assert_eq!(fake.server.profile_property(plain.as_str(), "Tags"), None);
            assert_eq!(value_in(&ctx, &plain, "DEPLOY_ENV").await, "staging");
        }
        _ => skip(
            &ctx,
            "the terminal keeps no profiles: the team's colour is shown on each pane",
        ),
    }

    // New variables for the team reach the panes opened after.
    terminal
        .set_team_env("web", &env(&[("DEPLOY_ENV", "canary")]))
        .await
        .unwrap();
    let later = terminal.open(open("web-3", Vec::new())).await.unwrap().id;
    assert!(terminal.wait_ready(&later, WAIT).await);
    assert_eq!(
        value_in(&ctx, &later, "DEPLOY_ENV").await,
        "canary",
        "on {:?}",
        ctx.which
    );
    assert_eq!(
        value_in(&ctx, &later, "API_URL").await,
        "",
        "on {:?}",
        ctx.which
    );
    assert_eq!(
        terminal.team_env("web").await.unwrap(),
        env(&[("DEPLOY_ENV", "canary")])
    );
}
parity!(
    local,
    EngineOn::start,
    a_team_starts_its_panes_from_its_profile_,
    a_team_starts_its_panes_from_its_profile
);

use super::*;
use crate::random::Random;

/// Each command's words (texts), in order.
fn words(line: &str) -> Vec<Vec<String>> {
    parse(line)
        .commands
        .iter()
        .map(|c| c.words.iter().map(|w| w.text.clone()).collect())
        .collect()
}

fn effective(line: &str) -> Vec<String> {
    let script = parse(line);
    script.commands[0]
        .effective()
        .iter()
        .map(|w| w.text.clone())
        .collect()
}

/// Every program [`walk`] finds, with its depth.
fn programs(line: &str) -> Vec<(usize, String)> {
    walk(line)
        .found
        .iter()
        .filter_map(|f| Some((f.depth, f.command.program()?.to_owned())))
        .collect()
}

#[test]
fn separators_split_commands() {
    let script = parse("a | b |& c && d || e; f & g\nh");
    let seps: Vec<Separator> = script.commands.iter().map(|c| c.then).collect();
    use Separator::*;
    assert_eq!(
        seps,
        [Pipe, PipeAll, And, Or, Semi, Background, Newline, End]
    );
    let pipelines: Vec<usize> = script.pipelines().map(<[Command]>::len).collect();
    assert_eq!(pipelines, [3, 1, 1, 1, 1, 1]);
    assert!(script.complete);
    // Empty commands are dropped; a pipe may continue on the next line.
    assert_eq!(words("a |\n b ;; ; c"), [["a"], ["b"], ["c"]]);
    assert_eq!(parse("a |\n b").commands[0].then, Pipe);
}

#[test]
fn quotes_and_escapes_are_removed_and_marked() {
    let script = parse(r#"grep -r 'DROP TABLE' "a \"b\" \$c" $'tab\there\x41\u00e9' x\ y plain"#);
    let ws = &script.commands[0].words;
    let got: Vec<(&str, bool)> = ws.iter().map(|w| (w.text.as_str(), w.quoted)).collect();
    assert_eq!(
        got,
        [
            ("grep", false),
            ("-r", false),
            ("DROP TABLE", true),
            ("a \"b\" $c", true),
            ("tab\thereAé", true),
            ("x y", true),
            ("plain", false),
        ]
    );
    assert_eq!(ws[2].raw, "'DROP TABLE'");
    assert_eq!(
        words("echo 'a|b; c' \"x&&y\""),
        [["echo", "a|b; c", "x&&y"]]
    );
    // Backslash-newline joins lines; inside double quotes other escapes stay.
    assert_eq!(words("ec\\\nho \"a\\nb\""), [["echo", "a\\nb"]]);
    assert_eq!(words("echo a#b # a comment | rm -rf /"), [["echo", "a#b"]]);
}

#[test]
fn redirections_are_items_of_their_own() {
    let script = parse("cmd 2>&1 >out.log < in 2> /dev/null &>> both >&- 3<>rw of=/dev/sda 9>x");
    let c = &script.commands[0];
    let words: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(words, ["cmd", "of=/dev/sda"]);
    let got: Vec<(Option<u32>, &str, &str)> = c
        .redirects
        .iter()
        .map(|r| {
            let target = r.target.as_ref().map_or("", |t| t.text.as_str());
            (r.fd, r.op.as_str(), target)
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some(2), ">&", "1"),
            (None, ">", "out.log"),
            (None, "<", "in"),
            (Some(2), ">", "/dev/null"),
            (None, "&>>", "both"),
            (None, ">&", "-"),
            (Some(3), "<>", "rw"),
            (Some(9), ">", "x"),
        ]
    );
    let writes: Vec<&str> = c.redirects.iter().filter_map(Redirect::writes_to).collect();
    assert_eq!(writes, ["out.log", "/dev/null", "both", "rw", "x"]);
    // Digits that are not a whole word are a word; `>& file` writes the file.
    let c = &parse("echo a2>x >& all").commands[0];
    assert_eq!(c.words[1].text, "a2");
    assert_eq!(c.redirects[1].writes_to(), Some("all"));
}

#[test]
fn here_documents_have_bodies() {
    let line = "cat <<EOF > x.sql\nDROP TABLE t;\n$(date)\nEOF\npsql <<-'END' | tee log\n\tSELECT 1;\n\tEND\necho done";
    let script = parse(line);
    assert!(script.complete);
    assert_eq!(
        words(line),
        [
            vec!["cat"],
            vec!["psql"],
            vec!["tee", "log"],
            vec!["echo", "done"]
        ]
    );
    let doc = script.commands[0].redirects[0].here_doc.as_ref().unwrap();
    assert_eq!(doc.text, "DROP TABLE t;\n$(date)\n");
    assert_eq!(doc.substitutions, ["date"]);
    let doc = script.commands[1].redirects[0].here_doc.as_ref().unwrap();
    assert!(doc.quoted && doc.substitutions.is_empty());
    assert_eq!(doc.text, "\tSELECT 1;\n");
    assert!(!parse("cat <<EOF\nno end").complete);
}

#[test]
fn subshells_groups_and_functions_keep_their_code() {
    let script =
        parse("(cd app && make) > log 2>&1; { make; make test; } | tee out; f() { rm -rf /; }");
    let c = &script.commands;
    assert_eq!(c.len(), 4, "{c:#?}");
    let body = |k: usize| c[k].body.as_ref().map(|b| (b.kind, b.text.as_str()));
    assert_eq!(body(0), Some((BodyKind::Subshell, "cd app && make")));
    assert_eq!(c[0].redirects.len(), 2);
    assert_eq!(body(1), Some((BodyKind::Group, " make; make test; ")));
    assert_eq!(c[1].then, Separator::Pipe);
    assert_eq!(c[2].words[0].text, "tee");
    assert_eq!(body(3), Some((BodyKind::Function, " rm -rf /; ")));
    assert!(c[3].effective().is_empty(), "defining runs nothing");
    // Brace expansion and quoted braces are words.
    assert_eq!(words("echo {a,b} '{' }"), [["echo", "{a,b}", "{", "}"]]);
    // Arrays are words.
    assert_eq!(words("arr=(a 'b c') cmd"), [["arr=(a 'b c')", "cmd"]]);
}

#[test]
fn substitutions_are_recorded() {
    let script = parse("echo \"$(git rev-parse HEAD)\" `date` $((1+2)) ${x:-$(id)} <(ls) x");
    let subs: Vec<&str> = script.commands[0]
        .words
        .iter()
        .flat_map(|w| w.substitutions.iter().map(String::as_str))
        .collect();
    assert_eq!(subs, ["git rev-parse HEAD", "date", "id", "ls"]);
    let texts: Vec<&str> = script.commands[0]
        .words
        .iter()
        .map(|w| w.text.as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "echo",
            "$(git rev-parse HEAD)",
            "`date`",
            "$((1+2))",
            "${x:-$(id)}",
            "<(ls)",
            "x"
        ]
    );
}

#[test]
fn wrappers_are_seen_through() {
    for (line, want) in [
        ("sudo -u root -E rm -rf /", "rm -rf /"),
        ("doas -u op rm x", "rm x"),
        ("env -i -u HOME PATH=/bin FOO=1 cargo build", "cargo build"),
        ("FOO=1 BAR+=2 make", "make"),
        ("command -p ls", "ls"),
        ("exec -a name nice -n 5 nohup time -p make", "make"),
        ("timeout -s KILL 5m go test ./...", "go test ./..."),
        ("timeout --signal=KILL 60 cargo test", "cargo test"),
        ("stdbuf -oL -e 0 ionice -c 3 tar cf x", "tar cf x"),
        ("xargs -0 -n 1 -I{} rm -f {}", "rm -f {}"),
        ("npx --yes tsc --noEmit", "tsc --noEmit"),
        ("pnpm dlx vitest run", "vitest run"),
        ("bunx eslint .", "eslint ."),
        ("bun x jest", "jest"),
        ("uvx --from ruff ruff check", "ruff check"),
        ("uv run --with rich pytest -q", "pytest -q"),
        ("uv tool run mypy .", "mypy ."),
        ("poetry run pytest", "pytest"),
        ("sudo -- rm x", "rm x"),
        ("! if then grep x", "grep x"),
        ("sudo -l", "sudo -l"),
        ("env", "env"),
        ("command -v rm", "command -v rm"),
        ("'rm' -rf x", "rm -rf x"),
    ] {
        assert_eq!(effective(line).join(" "), want, "{line}");
    }
    for line in ["FOO=1", "fi", "done < list", "for f in *", "case $x in"] {
        assert!(effective(line).is_empty(), "{line}");
    }
    // An assignment's name must be unquoted.
    assert_eq!(effective("\"FOO=1\" x"), ["FOO=1", "x"]);
    assert_eq!(parse("/usr/bin/git log").commands[0].program(), Some("git"));
}

#[test]
fn nested_command_text_is_followed() {
    for (line, want) in [
        ("bash -c 'rm -rf /'", vec![(0, "bash"), (1, "rm")]),
        (
            "sudo sh -ec \"cd x; make\"",
            vec![(0, "sh"), (1, "cd"), (1, "make")],
        ),
        (
            "bash -o pipefail -c 'a | b' arg0",
            vec![(0, "bash"), (1, "a"), (1, "b")],
        ),
        ("bash script.sh -c x", vec![(0, "bash")]),
        ("eval 'rm' '-rf /'", vec![(0, "eval"), (1, "rm")]),
        ("su -c 'rm x' root", vec![(0, "su"), (1, "rm")]),
        (
            "echo $(rm -rf ~) `id`",
            vec![(0, "echo"), (1, "rm"), (1, "id")],
        ),
        ("(cd / && rm -rf *)", vec![(1, "cd"), (1, "rm")]),
        ("{ rm -rf /; }", vec![(1, "rm")]),
        (
            "find . -name x -exec rm -rf {} \\; -print",
            vec![(0, "find"), (1, "rm")],
        ),
        (
            "find . -execdir sudo rm {} + -ok mv {} y ';'",
            vec![(0, "find"), (1, "rm"), (1, "mv")],
        ),
        ("xargs sh -c 'rm \"$@\"' _", vec![(0, "sh"), (1, "rm")]),
        (
            "watch -n 1 'df -h | grep sda'",
            vec![(0, "watch"), (1, "df"), (1, "grep")],
        ),
        ("watch -x rm x", vec![(0, "watch"), (1, "rm")]),
        ("env -S 'rm -rf /'", vec![(0, "env"), (1, "rm")]),
        ("npx -c 'rm -rf dist'", vec![(0, "npx"), (1, "rm")]),
        ("cat <<EOF\n$(rm x)\nEOF", vec![(0, "cat"), (1, "rm")]),
        (
            "bash -c \"sh -c 'eval \\\"rm x\\\"'\"",
            vec![(0, "bash"), (1, "sh"), (2, "eval"), (3, "rm")],
        ),
    ] {
        let got = programs(line);
        let want: Vec<(usize, String)> = want.into_iter().map(|(d, p)| (d, p.to_owned())).collect();
        assert_eq!(got, want, "{line}");
    }
}

#[test]
fn depth_is_bounded_and_reported() {
    let mut line = "rm -rf /".to_owned();
    for _ in 0..MAX_DEPTH {
        line = format!("echo $({line})");
    }
    let w = walk(&line);
    assert!(!w.too_deep);
    assert!(w
        .found
        .iter()
        .any(|f| f.depth == MAX_DEPTH && f.command.program() == Some("rm")));
    let deeper = format!("echo $({line})");
    let w = walk(&deeper);
    assert!(w.too_deep);
    assert!(!w.found.iter().any(|f| f.command.program() == Some("rm")));
    // Far deeper than any stack: read without recursion, reported, no overflow.
    let huge = "$(".repeat(100_000) + &")".repeat(100_000);
    let w = walk(&huge);
    assert!(w.too_deep);
    let huge = "bash -c '".repeat(50_001);
    let w = walk(&huge);
    assert!(!w.complete);
}

#[test]
fn unclosed_input_is_read_to_the_end() {
    for line in [
        "echo 'abc",
        "echo \"abc",
        "echo $(ls",
        "(cd x",
        "{ a; b",
        "echo `x",
        "echo $'x",
    ] {
        let script = parse(line);
        assert!(!script.complete, "{line}");
        assert!(!script.commands.is_empty(), "{line}");
    }
    assert_eq!(words("echo 'a b"), [["echo", "a b"]]);
}

/// Shell-like lines: quotes, expansions, heredocs, operators and wrappers that open
/// and close in any order, words and arbitrary text, up to 40 pieces.
fn shellish(random: &mut Random) -> String {
    const PIECES: &[&str] = &[
        "'",
        "\"",
        "$'",
        "\\",
        "$(",
        "$((",
        "${",
        "`",
        "(",
        ")",
        "{ ",
        " }",
        "<<EOF\n",
        "<<-",
        "\nEOF\n",
        " | ",
        " && ",
        ";",
        "&",
        "2>&1",
        ">",
        "#",
        "\n",
        " bash -c ",
        " sudo env X=1 ",
        " find . -exec ",
        " \\; ",
        "f() ",
        "é世🎉",
    ];
    let mut out = String::new();
    for _ in 0..random.below(41) {
        match random.below(PIECES.len() + 2) {
            n if n < PIECES.len() => out.push_str(PIECES[n]),
            n if n == PIECES.len() => {
                out.push_str(&random.string_of("abcdefghijklmnopqrstuvwxyz0123456789 =/.~*-", 8))
            }
            _ => out.push_str(&random.any_string(16)),
        }
    }
    out
}

#[test]
fn no_input_makes_it_panic() {
    for seed in 0..2000 {
        let mut random = Random::new(seed);
        let line = shellish(&mut random);
        let script = parse(&line);
        for c in &script.commands {
            let _ = c.effective();
            let _ = c.program();
            let _ = c.nested();
            for w in &c.words {
                let _ = read_path(&w.text);
            }
        }
        let w = walk(&line);
        assert!(
            w.found.iter().all(|f| f.depth <= MAX_DEPTH),
            "seed {seed}: {line:?}"
        );
        let _ = crate::choose_reducer(&line);
    }
}

#[test]
fn any_text_walks() {
    for seed in 0..2000 {
        let line = Random::new(seed).any_string(64);
        let _ = walk(&line);
        let _ = read_path(&line);
    }
}

/// The shape a destructive-command guard takes on top of this module: every command the
/// line runs, at any depth, by its effective program and what its paths name.
#[test]
fn a_guard_sees_through_spelling_and_nesting() {
    let deletes_precious = |line: &str| {
        walk(line).found.iter().any(|f| {
            let run = f.command.effective();
            f.command.program() == Some("rm")
                && run[1..]
                    .iter()
                    .any(|a| a.text.starts_with('-') && a.text.contains(['r', 'R']))
                && run[1..]
                    .iter()
                    .any(|a| read_path(&a.text).kind != PathKind::Other)
        })
    };
    for line in [
        "rm -rf /",
        "sudo rm -rf ~",
        "rm -fr $HOME",
        "rm -r -f .",
        "cd /tmp && rm -Rf ..",
        "FOO=1 rm -rf \"$HOME\"",
        "rm -rf //",
        "rm -rf /usr/..",
        "rm -rf ${HOME}/",
        "rm -rf ./*",
        "bash -c 'rm -rf /'",
        "echo $(rm -rf ~)",
        "xargs -0 rm -rf /",
        "timeout 5 nice -n 1 rm -rf /*",
    ] {
        assert!(deletes_precious(line), "{line}");
    }
    for line in [
        "echo 'rm -rf /'",
        "rm -rf build",
        "rm -rf ./target",
        "git rm -r .",
    ] {
        assert!(!deletes_precious(line), "{line}");
    }
    // A quoted pattern is one word, marked as quoted.
    let grep = &parse("grep -r 'DROP TABLE' docs/").commands[0];
    assert!(grep.words[2].quoted && grep.program() == Some("grep"));
}

//! `cohort-fake-iterm2`: runs the fake iTerm2 API server on its own, so an iTerm2
//! client (cohort's iTerm2 backend, the official Python `iterm2` package) can be
//! tried on any Unix.
//!
//! ```text
//! cargo run -p cohort-fake-iterm2 -- [--listen PATH | --tcp HOST:PORT] [--cookie C]... [--allow-all]
//! ```
//!
//! Without `--listen` or `--tcp` it listens where iTerm2 does:
//! `$HOME/Library/Application Support/iTerm2/private/socket`. As in iTerm2, a client
//! needs a cookie (`x-iterm2-cookie`, from `ITERM2_COOKIE`): each `--cookie` value is
//! accepted any number of times; without one, the fake makes one up and prints it.
//! `--allow-all` lets anyone in, like iTerm2's "allow all apps to connect".

use std::path::PathBuf;
use std::process::ExitCode;

use cohort_fake_iterm2::{Auth, FakeOptions, FakeServer};

const USAGE: &str =
    "usage: cohort-fake-iterm2 [--listen PATH | --tcp HOST:PORT] [--cookie C]... [--allow-all]

  --listen PATH     unix socket to listen on (default: iTerm2's own,
                    $HOME/Library/Application Support/iTerm2/private/socket)
  --tcp HOST:PORT   listen on TCP instead (iTerm2's legacy transport)
  --cookie C        accept this cookie, any number of times (repeatable); without
                    one the fake makes one up and prints it
  --allow-all       accept clients without a cookie";

/// The parsed command line.
#[derive(Debug)]
struct Args {
    listen: Option<PathBuf>,
    tcp: Option<String>,
    cookies: Vec<String>,
    allow_all: bool,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut parsed = Args {
        listen: None,
        tcp: None,
        cookies: Vec::new(),
        allow_all: false,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value; see --help"))
        };
        match arg.as_str() {
            "--listen" => parsed.listen = Some(PathBuf::from(value("--listen")?)),
            "--tcp" => parsed.tcp = Some(value("--tcp")?),
            "--cookie" => parsed.cookies.push(value("--cookie")?),
            "--allow-all" => parsed.allow_all = true,
            "--help" | "-h" => return Ok(None),
            other => return Err(format!("unknown argument {other:?}; see --help")),
        }
    }
    if parsed.listen.is_some() && parsed.tcp.is_some() {
        return Err("give --listen or --tcp, not both".into());
    }
    Ok(Some(parsed))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("cohort-fake-iterm2: {e}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cohort-fake-iterm2: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let options = FakeOptions {
        auth: if args.allow_all {
            Auth::AllowAll
        } else {
            Auth::Cookies
        },
        reusable_cookies: args.cookies.clone(),
        ..FakeOptions::default()
    };
    let server = match &args.tcp {
        Some(addr) => FakeServer::start_tcp(addr, options)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?,
        None => {
            let path = args
                .listen
                .clone()
                .unwrap_or_else(cohort_backends::iterm2::conn::Endpoint::default_socket);
            FakeServer::start(&path, options)
                .await
                .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?
        }
    };
    eprintln!(
        "fake iTerm2 listening on {} (Ctrl-C to stop)",
        server.endpoint()
    );
    if !args.allow_all && args.cookies.is_empty() {
        let cookie = server.issue_reusable_cookie();
        eprintln!("clients authenticate with this cookie:");
        println!("ITERM2_COOKIE={cookie}");
    }
    tokio::signal::ctrl_c()
        .await
        .map_err(|e| format!("waiting for Ctrl-C: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Result<Option<Args>, String> {
        parse(text.split_whitespace().map(str::to_string))
    }

    #[test]
    fn arguments_parse() {
        let a = args("--listen /tmp/s --cookie a --cookie b")
            .unwrap()
            .unwrap();
        assert_eq!(a.listen, Some(PathBuf::from("/tmp/s")));
        assert_eq!(a.cookies, ["a", "b"]);
        assert!(!a.allow_all);
        assert!(args("--help").unwrap().is_none());
        assert!(args("--listen").unwrap_err().contains("needs a value"));
        assert!(args("--listen a --tcp b").is_err());
        assert!(args("--bogus").unwrap_err().contains("--bogus"));
    }
}

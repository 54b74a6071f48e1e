//! `cohort-fake-iterm2`: runs the fake iTerm2 API server on its own.
//!
//! ```text
//! cohort-fake-iterm2 [--socket PATH | --tcp HOST:PORT] [--require-cookie] [--cookie C]...
//! ```
//!
//! Without `--socket` it listens where iTerm2 does:
//! `$HOME/Library/Application Support/iTerm2/private/socket`. With `--require-cookie`
//! only the `--cookie` values are accepted (each any number of times); otherwise
//! anyone may connect.

use std::path::PathBuf;

use cohort_fake_iterm2::{Auth, FakeOptions, FakeServer};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut socket: Option<PathBuf> = None;
    let mut tcp: Option<String> = None;
    let mut cookies = Vec::new();
    let mut options = FakeOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--socket" => socket = args.next().map(PathBuf::from),
            "--tcp" => tcp = args.next(),
            "--cookie" => cookies.extend(args.next()),
            "--require-cookie" => options.auth = Auth::Cookies,
            "--help" | "-h" => {
                println!("usage: cohort-fake-iterm2 [--socket PATH | --tcp HOST:PORT] [--require-cookie] [--cookie C]...");
                return Ok(());
            }
            other => {
                eprintln!("unknown argument {other:?}; see --help");
                std::process::exit(2);
            }
        }
    }
    let server = match tcp {
        Some(addr) => FakeServer::start_tcp(&addr, options).await?,
        None => {
            let path =
                socket.unwrap_or_else(cohort_backends::iterm2::conn::Endpoint::default_socket);
            FakeServer::start(&path, options).await?
        }
    };
    for cookie in cookies {
        server.accept_cookie(&cookie, true);
    }
    eprintln!("fake iTerm2 listening on {}", server.endpoint());
    tokio::signal::ctrl_c().await?;
    Ok(())
}

//! A fake iTerm2 server per test, on a unix socket in a temporary directory, with
//! single-use cookies handed to the backend through its credential callback.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use cohort_backends::iterm2::conn::{ConnectOptions, CredentialSource, Credentials, Endpoint};
use cohort_backends::iterm2::{Iterm2Backend, Iterm2Config};
use cohort_backends::Size;
use cohort_fake_iterm2::{Auth, FakeOptions, FakeServer};

/// A fake iTerm2 with its own socket and state directory.
pub struct FakeIterm2 {
    pub server: FakeServer,
    pub dir: tempfile::TempDir,
}

impl FakeIterm2 {
    pub async fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("cohort-fake-iterm2-")
            .tempdir()
            .expect("temp dir");
        let socket = dir.path().join("private/socket");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("test home");
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(&logs).expect("raw logs");
        let options = FakeOptions {
            auth: Auth::Cookies,
            env: vec![("HOME".into(), home.display().to_string())],
            raw_log_dir: Some(logs),
            dynamic_profiles: Some(dir.path().join("DynamicProfiles")),
            ..FakeOptions::default()
        };
        let server = FakeServer::start(&socket, options)
            .await
            .expect("start the fake iTerm2");
        FakeIterm2 { server, dir }
    }

    /// The raw output of a session, escape sequences and all, as iTerm2 logs it.
    pub fn raw_log(&self, session: &str) -> PathBuf {
        self.dir.path().join("logs").join(format!("{session}.log"))
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("private/socket")
    }

    /// A backend configuration that reaches this fake with fresh cookies.
    pub fn config(&self) -> Iterm2Config {
        let jar = self.server.cookie_jar();
        let mut config = Iterm2Config::new(self.dir.path().join("state"));
        config.connect = ConnectOptions {
            endpoint: Some(Endpoint::Unix(self.socket())),
            credentials: CredentialSource::Custom(Arc::new(move |_fresh| {
                Some(Credentials {
                    cookie: Some(jar.issue()),
                    key: None,
                })
            })),
            app_name: "cohort-tests".into(),
        };
        config.shell = Some(PathBuf::from(crate::support::bash_path()));
        config.default_size = Size {
            cols: 100,
            rows: 30,
        };
        config.dynamic_profiles = Some(self.dynamic_profiles());
        config
    }

    /// The DynamicProfiles folder the fake reads its profiles from.
    pub fn dynamic_profiles(&self) -> PathBuf {
        self.dir.path().join("DynamicProfiles")
    }

    pub async fn backend(&self) -> Iterm2Backend {
        Iterm2Backend::connect(self.config())
            .await
            .expect("connect to the fake iTerm2")
    }
}

//! A remote host for tests: a real OpenSSH server on a loopback port with its own host
//! key, `authorized_keys`, known hosts and home, killed on drop.
//!
//! The "remote" user's home is the server's own (`SetEnv HOME`), so the far side's
//! state, shell files and pads live apart from the test's local state. ssh is driven
//! with a config file of the test's own (`-F`), strict about the host key, so nothing
//! of the machine's `~/.ssh` is read or written.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cohort_backends::tmux::remote::SshHost;

/// Where Debian's OpenSSH server lives.
const SSHD: &str = "/usr/sbin/sshd";

/// Whether a remote host can be started here; says why not (and fails under
/// `COHORT_REQUIRE_SSH=1`, as CI runs).
pub fn available() -> bool {
    if Path::new(SSHD).exists() {
        return true;
    }
    let why = format!("{SSHD} is missing (Debian's openssh-server)");
    assert!(
        std::env::var_os("COHORT_REQUIRE_SSH").is_none(),
        "COHORT_REQUIRE_SSH is set but {why}"
    );
    eprintln!("skipped: {why}");
    false
}

/// A running sshd for one test.
pub struct SshServer {
    pub dir: tempfile::TempDir,
    pub port: u16,
    child: Child,
}

impl SshServer {
    /// Starts the server, or `None` (with the reason printed) on a machine without
    /// OpenSSH's server; with `COHORT_REQUIRE_SSH=1` (CI) that is a failure.
    pub fn start() -> Option<SshServer> {
        if !available() {
            return None;
        }
        // sshd refuses to start without its privilege separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let dir = tempfile::Builder::new()
            .prefix("cohort-ssh-")
            .tempdir()
            .expect("temp dir");
        let path = dir.path();
        std::fs::create_dir_all(path.join("home")).unwrap();
        // The far side's tmux sockets, apart from this machine's: a remote server of
        // the same socket name is another server, as on another machine.
        std::fs::create_dir_all(path.join("tmux")).unwrap();
        for key in ["host_key", "client_key"] {
            let made = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(path.join(key))
                .status()
                .expect("run ssh-keygen");
            assert!(made.success(), "ssh-keygen failed");
        }
        std::fs::copy(path.join("client_key.pub"), path.join("authorized_keys")).unwrap();
        let port = free_port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {dir}/host_key\n\
             AuthorizedKeysFile {dir}/authorized_keys\nPidFile {dir}/sshd.pid\n\
             UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             SetEnv HOME={dir}/home TMUX_TMPDIR={dir}/tmux\nLogLevel ERROR\nMaxStartups 100\nMaxSessions 100\n",
            dir = path.display()
        );
        std::fs::write(path.join("sshd_config"), config).unwrap();
        let host_key = std::fs::read_to_string(path.join("host_key.pub")).unwrap();
        std::fs::write(
            path.join("known_hosts"),
            format!("[127.0.0.1]:{port} {host_key}"),
        )
        .unwrap();
        std::fs::write(
            path.join("ssh_config"),
            client_config(path, port, "known_hosts"),
        )
        .unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(path.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            // Into a file: the connections' processes outlive a test that fails, and
            // must not hold its output open.
            .stderr(std::fs::File::create(path.join("sshd.log")).unwrap())
            .spawn()
            .expect("start sshd");
        let server = SshServer { dir, port, child };
        server.wait_listening();
        Some(server)
    }

    fn wait_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "sshd never listened on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The host as cohort is given it: the alias of the test's ssh config.
    pub fn host(&self, name: &str) -> SshHost {
        let mut host = SshHost::new(name, "cohort-test-host").unwrap();
        host.ssh_args = vec![
            "-F".into(),
            self.dir.path().join("ssh_config").display().to_string(),
        ];
        host.control_dir = Some(self.dir.path().join("mux"));
        host
    }

    /// The host as cohort is given it, reached over `link` (a relay to this server's
    /// port) rather than straight.
    pub fn host_through(&self, link: &crate::support::link::Link, name: &str) -> SshHost {
        let path = self.dir.path();
        let host_key = std::fs::read_to_string(path.join("host_key.pub")).unwrap();
        let known = format!("link_known_hosts_{}", link.port);
        std::fs::write(
            path.join(&known),
            format!("[127.0.0.1]:{} {host_key}", link.port),
        )
        .unwrap();
        let config = path.join(format!("link_ssh_config_{}", link.port));
        std::fs::write(&config, client_config(path, link.port, &known)).unwrap();
        let mut host = SshHost::new(name, "cohort-test-host").unwrap();
        host.ssh_args = vec!["-F".into(), config.display().to_string()];
        host.control_dir = Some(path.join(format!("mux-{}", link.port)));
        host
    }

    /// Stops the server and cuts its connections (its files stay): the host answers
    /// nothing any more.
    pub fn stop(&mut self) {
        self.cut();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Cuts every connection, as a network cut or an sshd restart does; the server
    /// stays up to take new ones. Whether there was one to cut.
    pub fn cut(&self) -> bool {
        // Each connection is a child process of the listener, which outlives it.
        Command::new("pkill")
            .args(["-KILL", "-P", &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Stops the listener without closing it: connections are taken and never
    /// answered, as behind a network that drops the packets, until
    /// [`SshServer::answer_again`].
    pub fn stop_answering(&self) {
        self.signal("STOP");
    }

    /// Undoes [`SshServer::stop_answering`]: connections that waited go on.
    pub fn answer_again(&self) {
        self.signal("CONT");
    }

    fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -{name} sshd");
    }

    /// The far side's tmux socket directory (`TMUX_TMPDIR` there).
    pub fn tmux_tmpdir(&self) -> PathBuf {
        self.dir.path().join("tmux")
    }

    /// The remote user's home.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// An ssh config that expects another host key for this server: what a user
    /// sees after the host was reinstalled, or under a man in the middle.
    pub fn host_with_another_key(&self, name: &str) -> SshHost {
        let path = self.dir.path();
        let made = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(path.join("other_key"))
            .status()
            .expect("run ssh-keygen");
        assert!(made.success());
        let other = std::fs::read_to_string(path.join("other_key.pub")).unwrap();
        std::fs::write(
            path.join("other_known_hosts"),
            format!("[127.0.0.1]:{} {other}", self.port),
        )
        .unwrap();
        std::fs::write(
            path.join("other_ssh_config"),
            client_config(path, self.port, "other_known_hosts"),
        )
        .unwrap();
        let mut host = SshHost::new(name, "cohort-test-host").unwrap();
        host.ssh_args = vec![
            "-F".into(),
            path.join("other_ssh_config").display().to_string(),
        ];
        host
    }
}

impl Drop for SshServer {
    fn drop(&mut self) {
        self.stop();
        // The far side's tmux servers, and their panes with them.
        for dir in std::fs::read_dir(self.tmux_tmpdir())
            .into_iter()
            .flatten()
            .flatten()
        {
            for socket in std::fs::read_dir(dir.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let _ = crate::support::deadline::output_within(
                    Command::new("tmux")
                        .arg("-S")
                        .arg(socket.path())
                        .arg("kill-server")
                        .env_remove("TMUX")
                        .stderr(Stdio::null()),
                    Duration::from_secs(5),
                );
            }
        }
        // The shared connections' masters (straight or over a link) end with their
        // sockets' directories.
        let sockets = std::fs::read_dir(self.dir.path())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|d| d.file_name().to_string_lossy().starts_with("mux"))
            .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten());
        {
            for entry in sockets {
                let _ = Command::new("ssh")
                    .args(["-F"])
                    .arg(self.dir.path().join("ssh_config"))
                    .arg("-o")
                    .arg(format!("ControlPath={}", entry.path().display()))
                    .args(["-O", "exit", "cohort-test-host"])
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

fn client_config(dir: &Path, port: u16, known_hosts: &str) -> String {
    format!(
        "Host cohort-test-host\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n\
         IdentityFile {dir}/client_key\n  IdentitiesOnly yes\n\
         UserKnownHostsFile {dir}/{known_hosts}\n  GlobalKnownHostsFile /dev/null\n\
         StrictHostKeyChecking yes\n  LogLevel ERROR\n",
        dir = dir.display(),
        user = user_name(),
    )
}

/// Who the tests run as: the remote user too.
fn user_name() -> String {
    let out = Command::new("id").arg("-un").output().expect("run id");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

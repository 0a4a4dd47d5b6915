//! A VIP's health checks on this host (`[[vip.check]]`, keepalived's `track_script`): one task
//! per check runs it every `interval_ms` with its timeout, and its verdict follows `rise` and
//! `fall` ([`super::health`]). The renewal loop asks [`Checks::verdict`] for every VIP it is a
//! candidate for; a host is ready for a VIP only while every check of it is up, so a failing
//! check hands the VIP to a healthy host.
//!
//! ```text
//!  candidacies (from the members' answers) ─▶ Checks::sync ─▶ a task per (VIP, check) whose
//!                                             definition is new; gone ones stopped
//!  task: every interval ─▶ probe (tcp │ http(s) GET │ command) within timeout ─▶ Health::record
//!  renewal ─▶ Checks::verdict(vip) ─▶ Ok │ Err("check 1 (tcp 127.0.0.1:8006) is down: ...")
//! ```
//!
//! Probes: `tcp` opens a connection; `http`/`https` send a GET and compare the status (HTTPS
//! does not verify the certificate: PVE's is self-signed, the check tells that the service
//! answers); `command` runs the argv without a shell, killed at the timeout, up on exit 0.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use protocol::agent::VipCandidacy;
use protocol::spec::{CheckType, VipCheck};
use tokio::task::JoinHandle;

use super::health::{Health, RiseFall};

/// One check's state, shared by its task and the verdicts.
#[derive(Debug, Clone)]
struct Verdict {
    health: Health,
    /// The last probe's failure, for the operator.
    last_error: Option<String>,
}

/// The running checks of one VIP.
struct Running {
    checks: Vec<VipCheck>,
    verdicts: Arc<Mutex<Vec<Verdict>>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Every VIP's checks on this host.
#[derive(Default)]
pub struct Checks {
    running: BTreeMap<String, Running>,
}

impl std::fmt::Debug for Checks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checks")
            .field("vips", &self.running.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What a check is, for messages.
pub fn describe(check: &VipCheck) -> String {
    let at = |scheme: &str| {
        let address = check.address.as_deref().unwrap_or("127.0.0.1");
        let port = check.port.unwrap_or(0);
        format!("{scheme} {address}:{port}")
    };
    match check.kind {
        CheckType::Tcp => at("tcp"),
        CheckType::Http | CheckType::Https => format!(
            "{}{}",
            at(if check.kind == CheckType::Http {
                "http"
            } else {
                "https"
            }),
            check.path.as_deref().unwrap_or("/")
        ),
        CheckType::Command => format!("command {}", check.command.join(" ")),
    }
}

impl Checks {
    /// No checks running.
    pub fn new() -> Checks {
        Checks::default()
    }

    /// Runs the checks of `vips` (a VIP whose checks changed starts over, down), stops those
    /// of VIPs no longer listed.
    pub fn sync<'a>(&mut self, vips: impl IntoIterator<Item = &'a VipCandidacy>) {
        let mut keep = BTreeMap::new();
        for vip in vips {
            if vip.checks.is_empty() {
                continue;
            }
            let same = self
                .running
                .get(&vip.name)
                .is_some_and(|r| r.checks == vip.checks);
            let running = match self.running.remove(&vip.name) {
                Some(r) if same => r,
                _ => start(&vip.checks),
            };
            keep.insert(vip.name.clone(), running);
        }
        self.running = keep;
    }

    /// Whether every check of `vip` is up (`Ok` for a VIP without checks); the first one down
    /// and why otherwise.
    pub fn verdict(&self, vip: &str) -> Result<(), String> {
        let Some(running) = self.running.get(vip) else {
            return Ok(());
        };
        let verdicts = running
            .verdicts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (i, (v, check)) in verdicts.iter().zip(&running.checks).enumerate() {
            if !v.health.is_up() {
                return Err(match &v.last_error {
                    Some(e) => format!("check {} ({}) is down: {e}", i + 1, describe(check)),
                    None => format!(
                        "check {} ({}) has not passed {} time(s) in a row yet",
                        i + 1,
                        describe(check),
                        check.rise
                    ),
                });
            }
        }
        Ok(())
    }
}

fn start(checks: &[VipCheck]) -> Running {
    let verdicts = Arc::new(Mutex::new(vec![
        Verdict {
            health: Health::default(),
            last_error: None,
        };
        checks.len()
    ]));
    let tasks = checks
        .iter()
        .enumerate()
        .map(|(i, check)| tokio::spawn(run(check.clone(), i, Arc::clone(&verdicts))))
        .collect();
    Running {
        checks: checks.to_vec(),
        verdicts,
        tasks,
    }
}

/// Runs one check forever (its task is aborted when it is no longer wanted).
async fn run(check: VipCheck, index: usize, verdicts: Arc<Mutex<Vec<Verdict>>>) {
    let counts = RiseFall {
        rise: check.rise,
        fall: check.fall,
    };
    let mut ticker = tokio::time::interval(Duration::from_millis(check.interval_ms));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // One client per check: its TLS configuration is built once, not per run.
    let http = http_client(&check);
    loop {
        ticker.tick().await;
        let timeout = Duration::from_millis(check.timeout_ms);
        let outcome = match tokio::time::timeout(timeout, probe(&check, http.as_ref())).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("no answer within {} ms", check.timeout_ms)),
        };
        let mut all = verdicts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = all.get_mut(index) {
            if v.health.record(outcome.is_ok(), counts) {
                tracing::info!(check = %describe(&check), up = v.health.is_up(), "VIP check flipped");
            }
            v.last_error = outcome.err();
        }
    }
}

/// The HTTP client of an `http`/`https` check (`Err` when it cannot be made: the check then
/// fails with that reason); `None` for other checks.
pub fn http_client(check: &VipCheck) -> Option<Result<reqwest::Client, String>> {
    matches!(check.kind, CheckType::Http | CheckType::Https).then(|| {
        reqwest::Client::builder()
            // PVE's certificate is self-signed: the check asks whether the service answers.
            .danger_accept_invalid_certs(true)
            .timeout(Duration::from_millis(check.timeout_ms))
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))
    })
}

/// One run of `check` (the caller bounds it by the timeout), with the client of
/// [`http_client`] for `http`/`https`.
pub async fn probe(
    check: &VipCheck,
    http: Option<&Result<reqwest::Client, String>>,
) -> Result<(), String> {
    match check.kind {
        CheckType::Tcp => {
            let at = target(check)?;
            tokio::net::TcpStream::connect(at)
                .await
                .map(drop)
                .map_err(|e| format!("cannot connect to {at}: {e}"))
        }
        CheckType::Http | CheckType::Https => match http {
            Some(Ok(client)) => get(check, client).await,
            Some(Err(e)) => Err(e.clone()),
            None => Err("no HTTP client".into()),
        },
        CheckType::Command => command(check).await,
    }
}

fn target(check: &VipCheck) -> Result<SocketAddr, String> {
    let ip = check.target().map_err(|e| e.to_string())?;
    Ok(SocketAddr::new(ip, check.port.unwrap_or(0)))
}

async fn get(check: &VipCheck, client: &reqwest::Client) -> Result<(), String> {
    let at = target(check)?;
    let scheme = if check.kind == CheckType::Http {
        "http"
    } else {
        "https"
    };
    let url = format!("{scheme}://{at}{}", check.path.as_deref().unwrap_or("/"));
    let status = client
        .get(&url)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?
        .status()
        .as_u16();
    let expected = check.expect_status.unwrap_or(200);
    if status == expected {
        Ok(())
    } else {
        Err(format!("GET {url} answered {status}, not {expected}"))
    }
}

async fn command(check: &VipCheck) -> Result<(), String> {
    let Some((program, args)) = check.command.split_first() else {
        return Err("no command".into());
    };
    let status = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // The timeout drops this future: the child must not outlive it.
        .kill_on_drop(true)
        .status()
        .await
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{program} exited with {status}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(kind: CheckType) -> VipCheck {
        VipCheck {
            kind,
            port: None,
            address: None,
            path: None,
            expect_status: None,
            command: vec![],
            interval_ms: 100,
            timeout_ms: 50,
            rise: 2,
            fall: 2,
        }
    }

    fn candidacy(checks: Vec<VipCheck>) -> VipCandidacy {
        VipCandidacy {
            name: "api".into(),
            address: "10.0.0.10/24".into(),
            interface: "vmbr0".into(),
            owner: None,
            epoch: 0,
            standby: None,
            claimed: false,
            vouching: None,
            owner_held: false,
            checks,
        }
    }

    async fn settle<F: Fn(&Result<(), String>) -> bool>(
        checks: &Checks,
        done: F,
    ) -> Result<(), String> {
        for _ in 0..100 {
            let v = checks.verdict("api");
            if done(&v) {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        checks.verdict("api")
    }

    #[tokio::test]
    async fn a_tcp_check_rises_after_its_passes_and_falls_when_the_port_closes() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accept = tokio::spawn(async move {
            loop {
                let _ = listener.accept().await;
            }
        });
        let mut c = check(CheckType::Tcp);
        c.port = Some(port);
        let mut checks = Checks::new();
        checks.sync([&candidacy(vec![c])]);
        // Down until it passed `rise` times.
        let first = checks.verdict("api").unwrap_err();
        assert!(first.contains("has not passed 2 time(s)"), "{first}");
        assert_eq!(settle(&checks, Result::is_ok).await, Ok(()));
        accept.abort();
        let _ = accept.await;
        let down = settle(&checks, Result::is_err).await.unwrap_err();
        assert!(
            down.contains(&format!("tcp 127.0.0.1:{port}")) && down.contains("is down"),
            "{down}"
        );
    }

    #[tokio::test]
    async fn a_command_check_is_up_on_exit_0_and_a_vip_without_checks_is_always_up() {
        let mut ok = check(CheckType::Command);
        ok.command = vec!["/bin/true".into()];
        ok.rise = 1;
        let mut checks = Checks::new();
        checks.sync([&candidacy(vec![ok.clone()])]);
        assert_eq!(settle(&checks, Result::is_ok).await, Ok(()));
        let mut bad = ok;
        bad.command = vec!["/bin/false".into()];
        // A changed definition starts over.
        checks.sync([&candidacy(vec![bad])]);
        let e = settle(&checks, |v| v.as_ref().is_err_and(|e| e.contains("exited"))).await;
        assert!(e.unwrap_err().contains("/bin/false exited"));
        checks.sync([&candidacy(vec![])]);
        assert_eq!(checks.verdict("api"), Ok(()));
    }

    #[tokio::test]
    async fn an_http_check_compares_the_status() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    return;
                };
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n")
                    .await;
            }
        });
        let mut c = check(CheckType::Http);
        c.port = Some(port);
        c.path = Some("/api2/json/version".into());
        c.timeout_ms = 500;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = http_client(&c);
        let e = probe(&c, http.as_ref()).await.unwrap_err();
        assert!(e.contains("answered 401, not 200"), "{e}");
        c.expect_status = Some(401);
        assert_eq!(probe(&c, http.as_ref()).await, Ok(()));
    }
}

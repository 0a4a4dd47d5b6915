//! [`AdminClient`]: connect to any member, follow the leader, retry within a deadline.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use protocol::join::RenewRequest;
use tokio::time::Instant;
use transport::{
    Connection, Endpoint, PeerIdentity, Rpc, Service, TlsMaterial, TransportConfig, TransportError,
};

use crate::error::{AttemptFailure, ClientError};
use crate::policy::{
    AttemptState, Outcome, attempt_order, attempt_timeout, classify, next_member_in,
};
use crate::race::Race;
use crate::renew::{self, DueCertificate, RenewalError};
use crate::schedule::Schedule;

use bootstrap::cli_config::{CliConfig, ConfigError, CoordinatorAddr};
use protocol::time::timestamp;
use protocol::time::{Now, secs_to_millis};

/// How long a call may take, retries included, unless [`AdminClient::with_timeout`] says
/// otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a call is tried, whatever the timeout: shorter than the time the cluster
/// remembers a request's reply (10 minutes), so a retry never applies a write twice.
pub const MAX_CALL: Duration = Duration::from_secs(9 * 60);

/// The deadline of a QUIC + TLS handshake with one member: a few round trips on a LAN or a
/// VPN; other members are dialed meanwhile after [`STAGGER`](crate::policy::STAGGER).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The longest a certificate renewal may delay the first call: the old certificate is still
/// valid, so a slow cluster costs a warning, not the command.
const RENEW_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a client's warnings go (e.g. a failed certificate renewal).
pub type WarningSink = fn(&str);

/// A client of the Admin service of a coordinator cluster. Cheap to clone; clones share the
/// endpoint, the open connections and what was learned about the leader.
#[derive(Clone, Debug)]
pub struct AdminClient {
    inner: Arc<Inner>,
    timeout: Duration,
    warn: WarningSink,
}

#[derive(Debug)]
struct Inner {
    endpoint: Endpoint,
    routes: Mutex<Routes>,
    /// The configured certificate, while it is due and not yet renewed. Held across the
    /// renewal so that concurrent first calls wait for it and then use the new certificate.
    renewal: tokio::sync::Mutex<Option<DueCertificate>>,
}

/// Which members to try: the configured ones, those learned from leader hints, the last one
/// that answered, and open connections.
#[derive(Debug, Default)]
struct Routes {
    known: Vec<CoordinatorAddr>,
    preferred: Option<CoordinatorAddr>,
    connections: HashMap<CoordinatorAddr, Connection>,
}

impl AdminClient {
    /// A client with the configuration's certificate and members. The key file must be private
    /// (0600). Must be called inside a Tokio runtime (the endpoint's socket is driven by it).
    ///
    /// An expired certificate is refused here ([`ClientError::CertificateExpired`]); one due
    /// for renewal is renewed before the first call and written over the configured `cert`
    /// file (a failure is reported to [`with_warnings`](Self::with_warnings)'s sink and the old
    /// certificate is used).
    pub fn from_config(config: &CliConfig) -> Result<AdminClient, ClientError> {
        let tls = config.load_material()?;
        let due = renew::plan(config, &tls, Now::read().secs())?;
        AdminClient::build(&tls, config.coordinators.clone(), due)
    }

    /// A client presenting `tls` (an admin or coordinator certificate) to `coordinators`.
    /// Must be called inside a Tokio runtime.
    pub fn new(
        tls: &TlsMaterial,
        coordinators: Vec<CoordinatorAddr>,
    ) -> Result<AdminClient, ClientError> {
        AdminClient::build(tls, coordinators, None)
    }

    fn build(
        tls: &TlsMaterial,
        coordinators: Vec<CoordinatorAddr>,
        due: Option<DueCertificate>,
    ) -> Result<AdminClient, ClientError> {
        if coordinators.is_empty() {
            return Err(ClientError::Config(ConfigError::Invalid {
                path: "<AdminClient::new>".into(),
                reason: "no coordinator to call".into(),
            }));
        }
        let cfg = TransportConfig {
            connect_timeout: CONNECT_TIMEOUT,
            ..TransportConfig::default()
        };
        let endpoint = Endpoint::client(tls, cfg).map_err(ClientError::Material)?;
        let mut known: Vec<CoordinatorAddr> = Vec::new();
        for c in coordinators {
            if !known.contains(&c) {
                known.push(c);
            }
        }
        let routes = Routes {
            known,
            ..Routes::default()
        };
        Ok(AdminClient {
            inner: Arc::new(Inner {
                endpoint,
                routes: Mutex::new(routes),
                renewal: tokio::sync::Mutex::new(due),
            }),
            timeout: DEFAULT_TIMEOUT,
            warn: log_warning,
        })
    }

    /// The same client reporting its warnings to `sink` instead of the log (the CLI prints
    /// them on standard error).
    pub fn with_warnings(mut self, sink: WarningSink) -> AdminClient {
        self.warn = sink;
        self
    }

    /// The same client with another overall deadline per call (retries included).
    pub fn with_timeout(mut self, timeout: Duration) -> AdminClient {
        self.timeout = timeout;
        self
    }

    /// The overall deadline of a call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The member that answered the last successful call (the leader, after a write).
    pub fn last_member(&self) -> Option<CoordinatorAddr> {
        self.inner.routes().preferred.clone()
    }

    /// Sends `req` to the cluster and returns its reply, following leader hints and retrying
    /// unreachable or unavailable members with back-off until the timeout. Every attempt
    /// carries one request id made for this call, so a write whose first attempt was applied
    /// (the leader died before it replied) is not applied again: the retry gets the first
    /// result ([`transport::once`]).
    pub async fn call<R: Rpc>(&self, req: &R) -> Result<R::Response, ClientError> {
        self.renew_if_due().await;
        let id = protocol::RequestId(rand::random());
        // Retried no longer than the cluster remembers the request.
        let timeout = self.timeout.min(MAX_CALL);
        transport::once::scope(id, Box::pin(self.call_within(req, timeout))).await
    }

    /// Renews the configured certificate if it is due and not renewed yet (once per client).
    async fn renew_if_due(&self) {
        let mut slot = self.inner.renewal.lock().await;
        let Some(due) = slot.take() else {
            return;
        };
        match self.renew(&due).await {
            Ok(renewed) => tracing::info!(
                path = %due.cert_path.display(),
                not_after = renewed.not_after,
                "renewed the admin certificate"
            ),
            Err(e) => (self.warn)(&format!(
                "the admin certificate {} is due for renewal but was not renewed ({e}); it is \
                 still valid and used until {}; the next command tries again",
                due.cert_path.display(),
                timestamp(secs_to_millis(due.current.not_after)),
            )),
        }
    }

    async fn renew(&self, due: &DueCertificate) -> Result<bootstrap::CertIdentity, RenewalError> {
        let (key, csr_pem) = due.csr_pem()?;
        let limit = self.timeout.min(RENEW_TIMEOUT);
        let reply = self.call_within(&RenewRequest { csr_pem }, limit).await?;
        let (material, renewed) = due.accept(&key, &reply.cert_pem)?;
        self.inner.endpoint.reload(&material)?;
        // Open connections were made with the old certificate: redial with the new one.
        let open: Vec<Connection> = self
            .inner
            .routes()
            .connections
            .drain()
            .map(|(_, c)| c)
            .collect();
        for connection in open {
            connection.close().await;
        }
        Ok(renewed)
    }

    /// [`call`](Self::call) with its own overall deadline and no renewal check.
    ///
    /// The members are tried in the [`Schedule`]'s order. One attempt runs at first; the next
    /// member is started as well when every running attempt is stalled (a handshake slower
    /// than `STAGGER`, or a call its member has not acknowledged within `SILENCE`: a dead
    /// member, [`next_member_in`]), when an attempt ends without an answer, or at once for a
    /// leader hint. The first reply or refusal ends the call and cancels the other attempts.
    /// Two attempts of one call are safe: both carry the call's request id, so a write is
    /// applied once.
    async fn call_within<R: Rpc>(
        &self,
        req: &R,
        timeout: Duration,
    ) -> Result<R::Response, ClientError> {
        let deadline = Instant::now() + timeout;
        let mut failures: Vec<AttemptFailure> = Vec::new();
        let mut schedule = Schedule::new(self.inner.order(), Instant::now());
        let mut race: Race<'_, Step<R::Response>> = Race::new();
        let mut running: Vec<Running> = Vec::new();
        loop {
            let members: Vec<CoordinatorAddr> = running.iter().map(|r| r.member.clone()).collect();
            let start_at = schedule.next_due(&members).and_then(|due| {
                if due.urgent {
                    Some(due.at)
                } else {
                    next_start(&running).map(|stalled| stalled.max(due.at))
                }
            });
            let now = Instant::now();
            if start_at.is_some_and(|at| at <= now)
                && let Some(member) = schedule.take_due(&members)
            {
                race.push(Box::pin(self.dial(member.clone(), deadline)));
                running.push(Running::dialing(member));
                continue;
            }
            if race.is_empty() && start_at.is_none() {
                // Nothing runs and nobody is left to try: only members that refused TLS.
                return Err(ClientError::Untrusted { failures });
            }
            let step = tokio::select! {
                step = race.next() => step,
                // Time to start the next member, or to look again whether attempts stalled.
                () = sleep_until_some(start_at) => continue,
                () = tokio::time::sleep_until(deadline) => {
                    return Err(ClientError::Unavailable {
                        after: timeout,
                        failures,
                    });
                }
            };
            let (member, outcome) = match step {
                Step::Dialed(member, Ok(connection)) => {
                    if let Some(r) = running.iter_mut().find(|r| r.member == member) {
                        r.calling(&connection);
                    }
                    race.push(Box::pin(self.call_on(member, connection, req, deadline)));
                    continue;
                }
                Step::Dialed(member, Err(outcome)) | Step::Called(member, Err(outcome)) => {
                    (member, outcome)
                }
                Step::Called(member, Ok(reply)) => {
                    self.inner.routes().preferred = Some(member);
                    return Ok(reply);
                }
            };
            running.retain(|r| r.member != member);
            let now = Instant::now();
            match outcome {
                Outcome::Final(e) => return Err(e),
                Outcome::Redirect(leader) => {
                    let reason = format!("not the leader; the leader is {leader}");
                    record(&mut failures, &member, reason);
                    if schedule.follow_hint(member, leader.clone(), now) {
                        self.inner.learn_leader(leader);
                    }
                }
                Outcome::Retry {
                    reason,
                    untrusted: false,
                } => {
                    record(&mut failures, &member, reason);
                    schedule.retry_later(member, now);
                }
                Outcome::Retry {
                    reason,
                    untrusted: true,
                } => {
                    record(&mut failures, &member, reason);
                    schedule.distrust(member);
                    if running.is_empty() && schedule.only_untrusted_left() {
                        return Err(ClientError::Untrusted { failures });
                    }
                }
            }
        }
    }

    /// Closes the open connections gracefully (replies in flight are delivered first).
    pub async fn close(&self) {
        let connections: Vec<Connection> = self
            .inner
            .routes()
            .connections
            .drain()
            .map(|(_, c)| c)
            .collect();
        for connection in connections {
            connection.close().await;
        }
        self.inner.endpoint.close(Duration::from_millis(200)).await;
    }

    /// Gets a connection to `member`: the open one if alive, else a new handshake.
    async fn dial<T>(&self, member: CoordinatorAddr, deadline: Instant) -> Step<T> {
        let dialed = self.inner.connection(&member, self.timeout, deadline).await;
        Step::Dialed(member, dialed)
    }

    async fn call_on<R: Rpc>(
        &self,
        member: CoordinatorAddr,
        connection: Connection,
        req: &R,
        deadline: Instant,
    ) -> Step<R::Response> {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let limit = attempt_timeout(self.timeout, remaining);
        match connection.call_with_timeout(req, limit).await {
            Ok(reply) => Step::Called(member, Ok(reply)),
            Err(e) => {
                if !matches!(e, TransportError::Remote(_)) {
                    self.inner.routes().connections.remove(&member);
                }
                let outcome = classify(e, &member);
                Step::Called(member, Err(outcome))
            }
        }
    }
}

/// What one future of a round's race finished.
enum Step<T> {
    /// A handshake (or the open connection) for the member.
    Dialed(CoordinatorAddr, Result<Connection, Outcome>),
    /// The member's answer to the call.
    Called(CoordinatorAddr, Result<T, Outcome>),
}

/// A member a round is trying, for deciding when to try the next one.
struct Running {
    member: CoordinatorAddr,
    since: Instant,
    /// While calling: the connection and how many datagrams it had received when the call
    /// started (more since means the member is alive and has the request).
    call: Option<(Connection, u64)>,
}

impl Running {
    fn dialing(member: CoordinatorAddr) -> Running {
        Running {
            member,
            since: Instant::now(),
            call: None,
        }
    }

    fn calling(&mut self, connection: &Connection) {
        self.since = Instant::now();
        let received = connection.quic().stats().udp_rx.datagrams;
        self.call = Some((connection.clone(), received));
    }

    fn state(&self, now: Instant) -> AttemptState {
        let for_ = now.saturating_duration_since(self.since);
        match &self.call {
            None => AttemptState::Dialing { for_ },
            Some((connection, at_start)) => AttemptState::Calling {
                for_,
                rtt: connection.rtt(),
                heard: connection.quic().stats().udp_rx.datagrams > *at_start,
            },
        }
    }
}

/// When the round should start its next member, given what runs ([`next_member_in`]).
fn next_start(running: &[Running]) -> Option<Instant> {
    let now = Instant::now();
    let states: Vec<AttemptState> = running.iter().map(|r| r.state(now)).collect();
    next_member_in(&states).map(|d| now + d)
}

/// Sleeps until `at`, or for ever when `None`.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Inner {
    fn routes(&self) -> MutexGuard<'_, Routes> {
        // The routes are only hints: a panic elsewhere cannot leave them unusable.
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn order(&self) -> Vec<CoordinatorAddr> {
        let routes = self.routes();
        attempt_order(&routes.known, routes.preferred.as_ref())
    }

    fn learn_leader(&self, leader: CoordinatorAddr) {
        let mut routes = self.routes();
        if !routes.known.contains(&leader) {
            routes.known.push(leader.clone());
        }
        routes.preferred = Some(leader);
    }

    /// An open connection to `member`, reused if still alive.
    async fn connection(
        &self,
        member: &CoordinatorAddr,
        timeout: Duration,
        deadline: Instant,
    ) -> Result<Connection, Outcome> {
        if let Some(c) = self.routes().connections.get(member)
            && c.closed_reason().is_none()
        {
            return Ok(c.clone());
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        let limit = attempt_timeout(timeout, remaining);
        let addr = resolve(&member.addr, limit).await?;
        let dial =
            self.endpoint
                .connect(addr, PeerIdentity::coordinator(member.id), Service::Admin);
        let connection = match tokio::time::timeout(limit, dial).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(classify(e, member)),
            Err(_) => {
                return Err(Outcome::Retry {
                    reason: format!("no handshake within {:.1}s", limit.as_secs_f64()),
                    untrusted: false,
                });
            }
        };
        self.routes()
            .connections
            .insert(member.clone(), connection.clone());
        Ok(connection)
    }
}

/// The default [`WarningSink`]: the log.
fn log_warning(message: &str) {
    tracing::warn!("{message}");
}

/// Replaces the member's earlier failure, or appends it.
fn record(failures: &mut Vec<AttemptFailure>, member: &CoordinatorAddr, reason: String) {
    match failures.iter_mut().find(|f| f.member == *member) {
        Some(f) => f.reason = reason,
        None => failures.push(AttemptFailure {
            member: member.clone(),
            reason,
        }),
    }
}

async fn resolve(addr: &str, limit: Duration) -> Result<SocketAddr, Outcome> {
    let retry = |reason: String| Outcome::Retry {
        reason,
        untrusted: false,
    };
    match tokio::time::timeout(limit, tokio::net::lookup_host(addr)).await {
        Ok(Ok(mut addrs)) => addrs
            .next()
            .ok_or_else(|| retry(format!("{addr} resolves to no address"))),
        Ok(Err(e)) => Err(retry(format!("cannot resolve {addr}: {e}"))),
        Err(_) => Err(retry(format!("cannot resolve {addr} in time"))),
    }
}

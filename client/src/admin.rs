//! [`AdminClient`]: connect to any member, follow the leader, retry within a deadline.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use protocol::join::RenewRequest;
use tokio::task::JoinSet;
use tokio::time::Instant;
use transport::{
    Connection, Endpoint, PeerIdentity, Rpc, Service, TlsMaterial, TransportConfig, TransportError,
};

use crate::error::{AttemptFailure, ClientError};
use crate::policy::{Outcome, attempt_order, attempt_timeout, backoff, classify};
use crate::renew::{self, DueCertificate, RenewalError};

use bootstrap::cli_config::{CliConfig, ConfigError, CoordinatorAddr};
use protocol::time::timestamp;
use protocol::time::{Now, secs_to_millis};

/// How long a call may take, retries included, unless [`AdminClient::with_timeout`] says
/// otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a call is tried, whatever the timeout: shorter than the time the cluster
/// remembers a request's reply (10 minutes), so a retry never applies a write twice.
pub const MAX_CALL: Duration = Duration::from_secs(9 * 60);

/// The deadline of a QUIC + TLS handshake with one member.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a handshake may take before the next member is dialed as well.
const STAGGER: Duration = Duration::from_millis(150);
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

/// How a round over the members ended without a reply.
enum RoundEnd<T> {
    /// A reply, or the cluster's refusal.
    Done(Result<T, ClientError>),
    /// A member named the leader: start again there.
    Redirect(CoordinatorAddr),
    /// Nobody answered; `untrusted`: every member tried failed the TLS handshake.
    Failed { untrusted: bool },
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
    async fn call_within<R: Rpc>(
        &self,
        req: &R,
        timeout: Duration,
    ) -> Result<R::Response, ClientError> {
        let deadline = Instant::now() + timeout;
        let mut failures: Vec<AttemptFailure> = Vec::new();
        let mut round: u32 = 0;
        let mut hops = 0;
        loop {
            let order = self.inner.order();
            // Stale hints can point in a circle during an election: follow a few, then back off.
            let follow_hints = hops < 2 * order.len() + 2;
            match self
                .round(req, order, deadline, &mut failures, follow_hints)
                .await
            {
                RoundEnd::Done(result) => return result,
                RoundEnd::Redirect(leader) => {
                    hops += 1;
                    self.inner.learn_leader(leader);
                    continue;
                }
                RoundEnd::Failed { untrusted: true } => {
                    return Err(ClientError::Untrusted { failures });
                }
                RoundEnd::Failed { untrusted: false } => {}
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(ClientError::Unavailable {
                    after: timeout,
                    failures,
                });
            }
            tokio::time::sleep(backoff(round).min(remaining)).await;
            round = round.saturating_add(1);
            hops = 0;
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

    /// Tries the members in `order` once: dials them staggered (the next one when a handshake
    /// is slow or fails) and calls each member as soon as its connection is ready.
    async fn round<R: Rpc>(
        &self,
        req: &R,
        order: Vec<CoordinatorAddr>,
        deadline: Instant,
        failures: &mut Vec<AttemptFailure>,
        follow_hints: bool,
    ) -> RoundEnd<R::Response> {
        let mut pending: VecDeque<CoordinatorAddr> = order.into();
        // Dropping the set when the round ends aborts the dials still running.
        let mut dials: JoinSet<(CoordinatorAddr, Result<Connection, Outcome>)> = JoinSet::new();
        let mut untrusted: Vec<bool> = Vec::new();
        let mut next_dial = Instant::now();
        loop {
            if dials.is_empty() {
                let Some(member) = pending.pop_front() else {
                    break;
                };
                self.spawn_dial(&mut dials, member, deadline);
                next_dial = Instant::now() + STAGGER;
            }
            let joined = tokio::select! {
                joined = dials.join_next() => joined,
                () = tokio::time::sleep_until(next_dial), if !pending.is_empty() => {
                    if let Some(member) = pending.pop_front() {
                        self.spawn_dial(&mut dials, member, deadline);
                    }
                    next_dial = Instant::now() + STAGGER;
                    continue;
                }
                () = tokio::time::sleep_until(deadline) => break,
            };
            // A dial task only ends early by being aborted, which happens when `dials` drops.
            let Some(Ok((member, dialed))) = joined else {
                continue;
            };
            let outcome = match dialed {
                Ok(connection) => match self.call_on(&member, &connection, req, deadline).await {
                    Ok(reply) => {
                        self.inner.routes().preferred = Some(member);
                        return RoundEnd::Done(Ok(reply));
                    }
                    Err(outcome) => outcome,
                },
                Err(outcome) => outcome,
            };
            match outcome {
                Outcome::Final(e) => return RoundEnd::Done(Err(e)),
                Outcome::Redirect(leader) => {
                    let reason = format!("not the leader; the leader is {leader}");
                    record(failures, &member, reason);
                    untrusted.push(false);
                    if follow_hints && leader != member {
                        return RoundEnd::Redirect(leader);
                    }
                    next_dial = Instant::now();
                }
                Outcome::Retry {
                    reason,
                    untrusted: u,
                } => {
                    record(failures, &member, reason);
                    untrusted.push(u);
                    // This member is done with: dial the next one now rather than after STAGGER.
                    next_dial = Instant::now();
                }
            }
        }
        RoundEnd::Failed {
            untrusted: !untrusted.is_empty() && untrusted.iter().all(|u| *u),
        }
    }

    /// Starts getting a connection to `member`: the open one if alive, else a new handshake.
    fn spawn_dial(
        &self,
        dials: &mut JoinSet<(CoordinatorAddr, Result<Connection, Outcome>)>,
        member: CoordinatorAddr,
        deadline: Instant,
    ) {
        let inner = Arc::clone(&self.inner);
        let timeout = self.timeout;
        dials.spawn(async move {
            let dialed = inner.connection(&member, timeout, deadline).await;
            (member, dialed)
        });
    }

    async fn call_on<R: Rpc>(
        &self,
        member: &CoordinatorAddr,
        connection: &Connection,
        req: &R,
        deadline: Instant,
    ) -> Result<R::Response, Outcome> {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let limit = attempt_timeout(self.timeout, remaining);
        match connection.call_with_timeout(req, limit).await {
            Ok(reply) => Ok(reply),
            Err(e) => {
                if !matches!(e, TransportError::Remote(_)) {
                    self.inner.routes().connections.remove(member);
                }
                Err(classify(e, member))
            }
        }
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

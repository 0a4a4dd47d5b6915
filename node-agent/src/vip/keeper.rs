//! The agent's VIP renewal loop (docs/design/vips.md): every renewal interval it sends every
//! member a [`VipRenew`] — its claims (the VIPs granted to this host, by epoch) and its
//! readiness for every VIP it is a candidate for — and drives each granted VIP's [`Holding`]
//! from the answers: the address is taken once a majority vouches, the gate refreshed while
//! it does, and dropped the moment it stops. A grant that moved to another host is let go at
//! once (address removed, then [`VipRelease`] to every member), as is everything at shutdown.
//!
//! ```text
//!  tick (100 ms; 20 ms while a grant waits for its majority; 1 s while no VIP admits the host)
//!    ─▶ VipRenew{claims, reports} stamped with its send time ─▶ one task per member ─▶ call
//!  reply from member i ─▶ candidacies (highest epoch per VIP wins) ─▶ grants: new ─▶ Holding
//!                                                                     moved away ─▶ let go
//!                      ─▶ vouches ─▶ Holding::vouched(i, sent) ─▶ step: take │ refresh │ drop
//!  lease end (timer at the earliest `until`) ─▶ step ─▶ drop
//! ```
//!
//! One task per member, fed the latest renewal through a `watch` channel: a dead or slow
//! member never delays the renewals to the others (it only skips the renewals sent while it
//! was busy).
//!
//! Fencing ([`Keeper::fenced_by`], docs/design/fencing-agent.md): when the agent's own lease
//! is about to run out, the fencer raises a flag; the keeper then lets go of every VIP at once
//! (as at shutdown), claims none and reports itself not ready for any, until the flag drops
//! again with a renewed lease.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use protocol::NodeId;
use protocol::agent::{VipCandidacy, VipClaim, VipRelease, VipRenew, VipRenewReply, VipReport};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use transport::{Connection, Endpoint, PeerIdentity, Service};

use super::checks::Checks;
use super::holder::Holder;
use super::holding::{Holding, Step};
use crate::session::Target;

/// The keeper's timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeeperConfig {
    /// How often renewals are sent while every grant is held (or there is none).
    pub renew_every: Duration,
    /// How often while a grant waits for its majority (a take-over is not delayed by the
    /// renewal interval).
    pub acquire_every: Duration,
    /// How often while no member names this host a candidate for any VIP and it holds none:
    /// the renewals then only ask whether a VIP admits the host now. Only a new candidacy (a
    /// VIP created, a label changed) is noticed up to this much later: a take-over is not,
    /// since every host a VIP's spec admits is its candidate and renews at `renew_every`.
    pub idle_every: Duration,
    /// The lease a member's vouch gives, counted from the send time.
    pub lease_ms: u64,
    /// How long a dead member is left alone after a failed dial.
    pub redial_after: Duration,
    /// At shutdown, how long the agent waits for its VIPs' new owners to claim them before
    /// it lets go anyway (no other host may be eligible).
    pub handover_wait: Duration,
}

impl KeeperConfig {
    /// The defaults, matching `fleet::vip::lease::LeaseConfig::DEFAULT` on the members.
    pub const DEFAULT: KeeperConfig = KeeperConfig {
        renew_every: Duration::from_millis(100),
        acquire_every: Duration::from_millis(20),
        idle_every: Duration::from_secs(1),
        lease_ms: 400,
        redial_after: Duration::from_millis(500),
        handover_wait: Duration::from_secs(1),
    };
}

/// One renewal as sent: its send time on the keeper's clock and its body.
type Sent = (u64, Arc<VipRenew>);

/// A member's answer to one renewal.
struct Answer {
    member: usize,
    sent_ms: u64,
    request: Arc<VipRenew>,
    reply: VipRenewReply,
}

/// A VIP granted to this host, and its lease.
struct Grant {
    vip: VipCandidacy,
    holding: Holding,
    /// The lease end last given to the holder (refresh only when it moves).
    given_until: Option<u64>,
    /// A standby's claim of the next epoch: the members vouch for it only once the owner's
    /// promise lapsed, so it waits at the renewal interval, not the acquiring one.
    standby: bool,
}

/// The renewal loop of one agent.
pub struct Keeper<H: Holder> {
    host: NodeId,
    endpoint: Endpoint,
    members: Vec<Target>,
    holder: H,
    cfg: KeeperConfig,
    fenced: Option<watch::Receiver<bool>>,
}

/// Why a fenced agent is not ready for any VIP (said to the members).
const FENCED: &str = "the agent's lease is running out: it holds no VIP until a leader                       acknowledges it again";

impl<H: Holder> Keeper<H> {
    /// The loop for host `host`, renewing with `members` through `endpoint` (the agent's
    /// client endpoint).
    pub fn new(
        host: NodeId,
        endpoint: Endpoint,
        members: Vec<Target>,
        holder: H,
        cfg: KeeperConfig,
    ) -> Keeper<H> {
        Keeper {
            host,
            endpoint,
            members,
            holder,
            cfg,
            fenced: None,
        }
    }

    /// Lets go of every VIP and claims none while `fenced` says `true` (the agent's fencer
    /// raises it when the lease runs out).
    pub fn fenced_by(mut self, fenced: watch::Receiver<bool>) -> Keeper<H> {
        self.fenced = Some(fenced);
        self
    }

    /// Runs until `stop`, then lets go of everything it holds.
    pub async fn run(mut self, stop: CancellationToken) {
        if let Err(e) = self.holder.sweep().await {
            tracing::warn!(error = %e, "VIP: cannot sweep the addresses of a previous run");
        }
        let started = Instant::now();
        let clock = move || u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (send, _) = watch::channel::<Option<Sent>>(None);
        let (answers_tx, mut answers) = mpsc::channel::<Answer>(64);
        let mut links = JoinSet::new();
        let mut connections = Vec::new();
        let member_stop = CancellationToken::new();
        let (endpoint, cfg) = (self.endpoint.clone(), self.cfg);
        let mut spawn_link = |i: usize, target: Target, connections: &mut Vec<_>| {
            let (conn_tx, conn_rx) = watch::channel(None);
            connections.push(conn_rx);
            links.spawn(
                MemberLink {
                    index: i,
                    target,
                    endpoint: endpoint.clone(),
                    renewals: send.subscribe(),
                    answers: answers_tx.clone(),
                    connection: conn_tx,
                    cfg,
                }
                .run(member_stop.clone()),
            );
        };
        let mut targets = self.members.clone();
        for (i, target) in targets.iter().enumerate() {
            spawn_link(i, target.clone(), &mut connections);
        }
        let mut state = KeeperState {
            host: self.host,
            members: self.members.len(),
            per_member: vec![Vec::new(); self.members.len()],
            grants: BTreeMap::new(),
            lease_ms: self.cfg.lease_ms,
            leaving: false,
            fenced: false,
        };
        let mut fence = self.fenced.take();
        if let Some(rx) = fence.as_mut() {
            state.fenced = *rx.borrow_and_update();
        }
        let mut checks = Checks::new();
        let mut next_renewal = tokio::time::Instant::now();
        // Set once `stop` fires while something is held: hand it over, then stop.
        let mut leaving_until: Option<tokio::time::Instant> = None;
        loop {
            let lease_end = state.earliest_end().map(|until| {
                tokio::time::Instant::from_std(started + Duration::from_millis(until))
            });
            tokio::select! {
                () = stop.cancelled(), if leaving_until.is_none() => {
                    if state.earliest_end().is_none() {
                        break;
                    }
                    tracing::info!("VIP: stopping, handing the VIPs held here over");
                    leaving_until = Some(tokio::time::Instant::now() + self.cfg.handover_wait);
                    state.leaving = true;
                    next_renewal = tokio::time::Instant::now();
                }
                () = sleep_until_opt(leaving_until) => break,
                fenced = fence_changed(&mut fence) => {
                    if fenced && !state.fenced {
                        tracing::warn!("VIP: the agent's lease is running out: letting go of every VIP");
                        let held = state.held();
                        self.let_go(held, &connections).await;
                        state.grants.clear();
                    } else if !fenced && state.fenced {
                        tracing::info!("VIP: the agent's lease is held again: VIPs may be claimed");
                    }
                    state.fenced = fenced;
                    next_renewal = tokio::time::Instant::now();
                }
                () = tokio::time::sleep_until(next_renewal) => {
                    let body = self.renewal(&state, &mut checks).await;
                    send.send_replace(Some((clock(), Arc::new(body))));
                    next_renewal = tokio::time::Instant::now() + state.renew_every(&self.cfg);
                }
                answer = answers.recv() => {
                    let Some(answer) = answer else { break };
                    // A member this agent's cluster.toml does not list (added since it
                    // joined): renew with it too, and count it.
                    for m in &answer.reply.members {
                        if !targets.iter().any(|t| t.id == m.id) {
                            let target = Target { id: m.id, addr: m.addr.clone() };
                            tracing::info!(member = %target, "VIP: renewing with a member learned from the cluster");
                            spawn_link(targets.len(), target.clone(), &mut connections);
                            targets.push(target);
                        }
                    }
                    state.count_members(targets.len());
                    let gone = state.answer(answer);
                    self.let_go(gone, &connections).await;
                    // A candidacy heard while idle: renew at the pace it needs from now on.
                    next_renewal = next_renewal
                        .min(tokio::time::Instant::now() + state.renew_every(&self.cfg));
                }
                () = sleep_until_opt(lease_end) => {}
            }
            let now = clock();
            state.step(&mut self.holder, now).await;
            if state.leaving && state.earliest_end().is_none() {
                break;
            }
        }
        // Let go first, while the member links (and their connections) still run: the
        // release must reach the members.
        let all = state.held();
        self.let_go(all, &connections).await;
        member_stop.cancel();
        links.shutdown().await;
    }

    /// The renewal to send now.
    async fn renewal(&mut self, state: &KeeperState, checks: &mut Checks) -> VipRenew {
        let candidacies = state.candidacies();
        checks.sync(candidacies.values());
        let mut reports = Vec::new();
        for vip in candidacies.into_values() {
            let ready = if state.fenced {
                Err(FENCED.to_string())
            } else {
                match self.holder.ready(&vip).await {
                    Ok(()) => checks.verdict(&vip.name),
                    Err(why) => Err(why),
                }
            };
            reports.push(VipReport {
                name: vip.name.clone(),
                ready,
            });
        }
        VipRenew {
            claims: state
                .grants
                .values()
                .map(|g| VipClaim {
                    name: g.vip.name.clone(),
                    epoch: g.vip.epoch,
                    standby: g.standby,
                })
                .collect(),
            reports,
            simulated: self.holder.simulated(),
            leaving: state.leaving,
        }
    }

    /// Removes each of `vips` from the host, then tells every member (in parallel, bounded by
    /// a lease) so the next owner need not wait out the promises.
    async fn let_go(
        &mut self,
        vips: Vec<VipCandidacy>,
        connections: &[watch::Receiver<Option<Connection>>],
    ) {
        if vips.is_empty() {
            return;
        }
        for vip in &vips {
            match self.holder.release(vip).await {
                Ok(()) => tracing::info!(vip = %vip.name, epoch = vip.epoch, "VIP let go"),
                Err(e) => {
                    // The address may still be there: telling the members could let another
                    // host take it while this one still answers. Their promises end by
                    // themselves; the gate stops answering at the lease end.
                    tracing::warn!(vip = %vip.name, error = %e, "VIP: cannot remove the address");
                    return;
                }
            }
        }
        let release = VipRelease {
            claims: vips
                .iter()
                .map(|v| VipClaim {
                    name: v.name.clone(),
                    epoch: v.epoch,
                    standby: false,
                })
                .collect(),
        };
        let mut calls = JoinSet::new();
        for conn in connections.iter().filter_map(|c| c.borrow().clone()) {
            let release = release.clone();
            let deadline = Duration::from_millis(self.cfg.lease_ms);
            calls.spawn(async move { conn.call_with_timeout(&release, deadline).await });
        }
        while calls.join_next().await.is_some() {}
    }
}

/// The fencing flag's next value; pending for ever without a flag (or once its sender is
/// gone: the last value stays).
async fn fence_changed(fence: &mut Option<watch::Receiver<bool>>) -> bool {
    match fence {
        Some(rx) => match rx.changed().await {
            Ok(()) => *rx.borrow_and_update(),
            Err(_) => {
                let last = *rx.borrow();
                *fence = None;
                last
            }
        },
        None => std::future::pending().await,
    }
}

async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What the keeper knows: each member's latest candidacies, and the grants.
struct KeeperState {
    host: NodeId,
    /// The largest member count heard (the agent's list, or what a member's state says).
    members: usize,
    per_member: Vec<Vec<VipCandidacy>>,
    grants: BTreeMap<String, Grant>,
    lease_ms: u64,
    /// The agent is stopping and hands its VIPs over.
    leaving: bool,
    /// The agent is fencing: no grant is taken.
    fenced: bool,
}

impl KeeperState {
    /// Per VIP, the candidacy with the highest epoch any member told.
    fn candidacies(&self) -> BTreeMap<String, VipCandidacy> {
        let mut merged: BTreeMap<String, VipCandidacy> = BTreeMap::new();
        for c in self.per_member.iter().flatten() {
            match merged.get(&c.name) {
                Some(have) if have.epoch >= c.epoch => {}
                _ => {
                    merged.insert(c.name.clone(), c.clone());
                }
            }
        }
        merged
    }

    /// The VIPs held now.
    fn held(&self) -> Vec<VipCandidacy> {
        self.grants
            .values()
            .filter(|g| g.holding.is_held())
            .map(|g| g.vip.clone())
            .collect()
    }

    /// Whether a grant (not a standby's claim) waits for its majority.
    fn waiting(&self) -> bool {
        self.grants
            .values()
            .any(|g| !g.standby && !g.holding.is_held())
    }

    /// How long until the next renewal: `acquire_every` while a grant waits for its majority
    /// or the agent hands over, `idle_every` while no member names the host a candidate and
    /// it holds nothing, `renew_every` otherwise.
    fn renew_every(&self, cfg: &KeeperConfig) -> Duration {
        if self.waiting() || self.leaving {
            cfg.acquire_every
        } else if self.grants.is_empty() && self.per_member.iter().all(Vec::is_empty) {
            cfg.idle_every
        } else {
            cfg.renew_every
        }
    }

    /// The earliest lease end of a held grant.
    fn earliest_end(&self) -> Option<u64> {
        self.grants
            .values()
            .filter(|g| g.holding.is_held())
            .filter_map(|g| g.holding.until())
            .min()
    }

    /// The agent knows `n` members now: majorities are counted over them (never fewer).
    fn count_members(&mut self, n: usize) {
        if n > self.members {
            self.members = n;
            self.per_member.resize(n, Vec::new());
            for g in self.grants.values_mut() {
                g.holding.grow(n);
            }
        }
    }

    /// Takes in one member's answer; returns the held VIPs that moved away (to let go now).
    fn answer(&mut self, a: Answer) -> Vec<VipCandidacy> {
        if let Some(slot) = self.per_member.get_mut(a.member) {
            *slot = a.reply.candidacies;
        }
        let merged = self.candidacies();
        let mut gone = Vec::new();
        let host = self.host;
        self.grants.retain(|name, g| {
            let keep = match merged.get(name) {
                // Deleted, or this host is no longer a candidate.
                None => false,
                Some(c) if c.epoch == g.vip.epoch => {
                    // A standby's claim the leader recorded is an owner's grant from now on.
                    g.standby &= c.owner != Some(host);
                    c.owner == Some(host)
                }
                // The standby's claim of the next epoch, while it is still the standby.
                Some(c) if g.standby => c.epoch + 1 == g.vip.epoch && c.standby == Some(host),
                // A member that has not applied the grant yet.
                Some(c) if c.epoch < g.vip.epoch => true,
                // Moved on: let go once the new owner is asking (the members will vouch for
                // it the moment this one releases), or at once if nobody is to hold it.
                Some(c) => g.holding.is_held() && c.owner.is_some() && !c.claimed,
            };
            if !keep && g.holding.is_held() {
                gone.push(g.vip.clone());
            }
            keep
        });
        // A fencing agent takes no grant (it reports itself not ready meanwhile).
        let merged = if self.fenced { BTreeMap::new() } else { merged };
        for (name, c) in merged {
            let replaced = self
                .grants
                .get(&name)
                .is_some_and(|g| g.vip.epoch < c.epoch);
            if c.owner == Some(self.host) && (replaced || !self.grants.contains_key(&name)) {
                if let Some(old) = self.grants.remove(&name)
                    && old.holding.is_held()
                {
                    gone.push(old.vip);
                }
                self.grants.insert(
                    name,
                    Grant {
                        holding: Holding::new(self.members, self.lease_ms),
                        vip: c,
                        given_until: None,
                        standby: false,
                    },
                );
            } else if c.standby == Some(self.host)
                && c.owner.is_some()
                && !self.grants.contains_key(&name)
            {
                // Claimed as the next epoch: members vouch for it only once the owner's
                // promise lapsed, which takes the VIP over even while no leader can commit.
                let vip = VipCandidacy {
                    epoch: c.epoch + 1,
                    owner: Some(self.host),
                    ..c
                };
                self.grants.insert(
                    name,
                    Grant {
                        holding: Holding::new(self.members, self.lease_ms),
                        vip,
                        given_until: None,
                        standby: true,
                    },
                );
            }
        }
        for (claim, vouch) in a.request.claims.iter().zip(&a.reply.vouches) {
            if vouch.name != claim.name || vouch.outcome.is_err() {
                continue;
            }
            if let Some(g) = self.grants.get_mut(&claim.name)
                && g.vip.epoch == claim.epoch
            {
                g.holding.vouched(a.member, a.sent_ms);
            }
        }
        gone
    }

    /// Applies each grant's lease at `now` through the holder.
    async fn step<H: Holder>(&mut self, holder: &mut H, now: u64) {
        for g in self.grants.values_mut() {
            match g.holding.step(now) {
                Step::Idle => {}
                Step::Acquire(until) => {
                    match holder.take(&g.vip, until.saturating_sub(now)).await {
                        Ok(()) => {
                            tracing::info!(vip = %g.vip.name, epoch = g.vip.epoch, "VIP held")
                        }
                        Err(e) => {
                            tracing::warn!(vip = %g.vip.name, error = %e, "VIP: cannot take it")
                        }
                    }
                    g.given_until = Some(until);
                }
                Step::Keep(until) => {
                    if g.given_until != Some(until) {
                        if let Err(e) = holder.refresh(&g.vip, until.saturating_sub(now)).await {
                            tracing::warn!(vip = %g.vip.name, error = %e, "VIP: cannot refresh the gate");
                        }
                        g.given_until = Some(until);
                    }
                }
                Step::Lose => {
                    tracing::warn!(vip = %g.vip.name, epoch = g.vip.epoch, "VIP lease ended: dropping it");
                    if let Err(e) = holder.release(&g.vip).await {
                        tracing::warn!(vip = %g.vip.name, error = %e, "VIP: cannot remove the address");
                    }
                    g.given_until = None;
                }
            }
        }
    }
}

/// The renewals to one member, on a connection of their own.
struct MemberLink {
    index: usize,
    target: Target,
    endpoint: Endpoint,
    renewals: watch::Receiver<Option<Sent>>,
    answers: mpsc::Sender<Answer>,
    connection: watch::Sender<Option<Connection>>,
    cfg: KeeperConfig,
}

impl MemberLink {
    async fn run(mut self, stop: CancellationToken) {
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                changed = self.renewals.changed() => if changed.is_err() { break },
            }
            let Some((sent_ms, request)) = self.renewals.borrow_and_update().clone() else {
                continue;
            };
            let Some(conn) = self.connect(&stop).await else {
                continue;
            };
            let deadline = Duration::from_millis(self.cfg.lease_ms);
            match conn.call_with_timeout(request.as_ref(), deadline).await {
                Ok(reply) => {
                    let answer = Answer {
                        member: self.index,
                        sent_ms,
                        request,
                        reply,
                    };
                    if self.answers.send(answer).await.is_err() {
                        break;
                    }
                }
                Err(e) => {
                    tracing::debug!(member = %self.target, error = %e, "VIP renewal failed");
                    self.connection.send_replace(None);
                }
            }
        }
        if let Some(conn) = self.connection.send_replace(None) {
            conn.close().await;
        }
    }

    /// The open connection, dialed if needed; `None` (after a pause) if the member cannot be
    /// reached.
    async fn connect(&mut self, stop: &CancellationToken) -> Option<Connection> {
        if let Some(conn) = self.connection.borrow().clone()
            && conn.closed_reason().is_none()
        {
            return Some(conn);
        }
        let dialed = match crate::session::resolve(&self.target.addr).await {
            Ok(addr) => self
                .endpoint
                .connect(
                    addr,
                    PeerIdentity::coordinator(self.target.id),
                    Service::Agent,
                )
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        match dialed {
            Ok(conn) => {
                self.connection.send_replace(Some(conn.clone()));
                Some(conn)
            }
            Err(e) => {
                tracing::debug!(member = %self.target, error = %e, "VIP: cannot reach the member");
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = tokio::time::sleep(self.cfg.redial_after) => {}
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: NodeId = 7;

    fn state(fenced: bool) -> KeeperState {
        KeeperState {
            host: HOST,
            members: 1,
            per_member: vec![Vec::new()],
            grants: BTreeMap::new(),
            lease_ms: 400,
            leaving: false,
            fenced,
        }
    }

    fn granted(name: &str) -> VipCandidacy {
        VipCandidacy {
            name: name.into(),
            address: "10.0.0.10/24".into(),
            interface: "vmbr0".into(),
            owner: Some(HOST),
            epoch: 3,
            standby: None,
            claimed: false,
            checks: Vec::new(),
        }
    }

    fn answer(candidacies: Vec<VipCandidacy>) -> Answer {
        Answer {
            member: 0,
            sent_ms: 100,
            request: Arc::new(VipRenew {
                claims: Vec::new(),
                reports: Vec::new(),
                simulated: true,
                leaving: false,
            }),
            reply: VipRenewReply {
                vouches: Vec::new(),
                candidacies,
                members: Vec::new(),
            },
        }
    }

    #[test]
    fn renewals_slow_down_only_while_no_vip_admits_the_host() {
        let cfg = KeeperConfig::DEFAULT;
        let mut s = state(false);
        assert_eq!(
            s.renew_every(&cfg),
            cfg.idle_every,
            "nothing to hold or claim"
        );
        // A candidacy owned by another host: this one may be its next owner.
        let elsewhere = VipCandidacy {
            owner: Some(HOST + 1),
            ..granted("web")
        };
        s.answer(answer(vec![elsewhere]));
        assert!(s.grants.is_empty());
        assert_eq!(s.renew_every(&cfg), cfg.renew_every);
        // Granted here, waiting for its majority.
        s.answer(answer(vec![granted("web")]));
        assert_eq!(s.renew_every(&cfg), cfg.acquire_every);
        // Gone from the answers: idle again.
        s.answer(answer(Vec::new()));
        assert_eq!(s.renew_every(&cfg), cfg.idle_every);
        s.leaving = true;
        assert_eq!(s.renew_every(&cfg), cfg.acquire_every);
    }

    #[test]
    fn a_fenced_agent_takes_no_grant_and_takes_them_again_once_unfenced() {
        let mut s = state(true);
        assert!(s.answer(answer(vec![granted("web")])).is_empty());
        assert!(s.grants.is_empty(), "no claim while fenced");
        assert!(s.held().is_empty());
        s.fenced = false;
        s.answer(answer(vec![granted("web")]));
        assert_eq!(s.grants.keys().collect::<Vec<_>>(), ["web"]);
        // Vouched by the only member: held after a step, then let go as a whole.
        s.grants.get_mut("web").unwrap().holding.vouched(0, 100);
        assert!(matches!(
            s.grants.get_mut("web").unwrap().holding.step(110),
            Step::Acquire(_)
        ));
        assert_eq!(s.held().len(), 1);
    }
}

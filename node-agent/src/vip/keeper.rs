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
    /// How long a side of a split that let go of its promises claims nothing (the other side
    /// gathers the majority meanwhile): longer than a lease and the members' drift wait.
    pub yield_for: Duration,
}

impl KeeperConfig {
    /// The defaults: the lease and renewal pace the members assume
    /// (`protocol::timing`, shared with `fleet::vip::lease::LeaseConfig::DEFAULT`).
    pub const DEFAULT: KeeperConfig = KeeperConfig {
        renew_every: Duration::from_millis(protocol::timing::VIP_RENEW_EVERY_MS),
        acquire_every: Duration::from_millis(20),
        idle_every: Duration::from_secs(1),
        lease_ms: protocol::timing::VIP_LEASE_MS,
        redial_after: Duration::from_millis(500),
        handover_wait: Duration::from_secs(1),
        yield_for: Duration::from_millis(500),
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
    /// When the grant was made (keeper clock): answers to renewals sent before it are not
    /// counted, so a grant made again at the same epoch (after a yield or a fence) never
    /// holds on promises its predecessor let go of.
    since_ms: u64,
    /// A standby's grant: since when, without a break, members have said the owner still
    /// holds the VIP while some member vouches for this host (a split), and when last.
    owner_held: Option<(u64, u64)>,
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
            answered_at: vec![None; self.members.len()],
            grants: BTreeMap::new(),
            yielded: BTreeMap::new(),
            lease_ms: self.cfg.lease_ms,
            yield_ms: u64::try_from(self.cfg.yield_for.as_millis()).unwrap_or(u64::MAX),
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
                    next_renewal = tokio::time::Instant::now() + state.renew_every(&self.cfg, clock());
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
                    let gone = state.answer(answer, clock());
                    self.let_go(gone, &connections).await;
                    // A candidacy heard while idle: renew at the pace it needs from now on.
                    next_renewal = next_renewal
                        .min(tokio::time::Instant::now() + state.renew_every(&self.cfg, clock()));
                }
                () = sleep_until_opt(lease_end) => {}
            }
            let now = clock();
            state.step(&mut self.holder, now).await;
            // One side of a split of promises lets go of them, so the other side can hold.
            let yielded = state.yields(now);
            if !yielded.is_empty() {
                self.let_go(yielded, &connections).await;
                next_renewal = tokio::time::Instant::now();
            }
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
                    held: g.holding.is_held(),
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
                    held: false,
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
    /// Per member: the send time of the renewal its latest answer was to.
    answered_at: Vec<Option<u64>>,
    grants: BTreeMap<String, Grant>,
    /// Per VIP: the epoch this host let go of in a split, and until when it claims nothing
    /// at that epoch.
    yielded: BTreeMap<String, (u64, u64)>,
    lease_ms: u64,
    /// How long a yield lasts (ms).
    yield_ms: u64,
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

    /// Whether a grant waits for its majority: an owner's not yet held, or a standby's that
    /// some member already vouches for (it is taking the VIP over).
    fn waiting(&self, now: u64) -> bool {
        self.grants
            .values()
            .any(|g| !g.holding.is_held() && (!g.standby || g.holding.any_vouch(now)))
    }

    /// How long until the next renewal: `acquire_every` while a grant waits for its majority
    /// or the agent hands over, `idle_every` while no member names the host a candidate and
    /// it holds nothing, `renew_every` otherwise.
    fn renew_every(&self, cfg: &KeeperConfig, now: u64) -> Duration {
        if self.waiting(now) || self.leaving {
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
            self.answered_at.resize(n, None);
            for g in self.grants.values_mut() {
                g.holding.grow(n);
            }
        }
    }

    /// Takes in one member's answer at `now`; returns the held VIPs that moved away (to let go
    /// now).
    fn answer(&mut self, a: Answer, now: u64) -> Vec<VipCandidacy> {
        if let Some(slot) = self.per_member.get_mut(a.member) {
            *slot = a.reply.candidacies;
        }
        if let Some(slot) = self.answered_at.get_mut(a.member) {
            *slot = Some(slot.map_or(a.sent_ms, |s| s.max(a.sent_ms)));
        }
        self.yielded.retain(|_, (_, until)| now < *until);
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
            let yielded = |epoch: u64| self.yielded.get(&name).is_some_and(|(e, _)| *e == epoch);
            if c.owner == Some(self.host)
                && (replaced || !self.grants.contains_key(&name))
                && !yielded(c.epoch)
            {
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
                        since_ms: now,
                        owner_held: None,
                        given_until: None,
                        standby: false,
                    },
                );
            } else if c.standby == Some(self.host)
                && c.owner.is_some()
                && !self.grants.contains_key(&name)
                && !yielded(c.epoch + 1)
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
                        since_ms: now,
                        owner_held: None,
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
                && a.sent_ms >= g.since_ms
            {
                g.holding.vouched(a.member, a.sent_ms);
            }
        }
        // A standby some member vouches for while the owner, by this member's word, still
        // holds the VIP: one side of a split. Since when, without a break.
        let recent = self.lease_ms / 2;
        for g in self.grants.values_mut().filter(|g| g.standby) {
            let owner_held = self.per_member.get(a.member).is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.name == g.vip.name && c.owner_held && c.epoch + 1 == g.vip.epoch)
            });
            if owner_held {
                g.owner_held = match g.owner_held {
                    Some((since, last)) if now.saturating_sub(last) < recent => Some((since, now)),
                    _ => Some((now, now)),
                };
            }
        }
        gone
    }

    /// The grants this host lets go of at `now` to end a split of promises (docs/design/vips.md,
    /// "Splits"), none of them held; neither is claimed again at its epoch for the yield time.
    ///
    /// - An owner that cannot hold its VIP while a member (answering within a lease) vouches
    ///   for another host at the next epoch (its standby taking over): it lets go at once and
    ///   is returned, to be released, so the members that still vouch for it can vouch for
    ///   the standby.
    /// - A standby that holds nothing while some member vouches for it and members have said,
    ///   for a whole lease, that the owner still holds the VIP: the owner lives, so the
    ///   standby stops claiming and its members go back to the owner when their promise runs
    ///   out. It releases nothing: a release is how an owner says it let go, and this one may
    ///   become the owner at that very epoch.
    fn yields(&mut self, now: u64) -> Vec<VipCandidacy> {
        let fresh: Vec<&VipCandidacy> = self
            .per_member
            .iter()
            .zip(&self.answered_at)
            .filter(|(_, at)| at.is_some_and(|at| now.saturating_sub(at) < self.lease_ms))
            .flat_map(|(cs, _)| cs.iter())
            .collect();
        let host = self.host;
        let (lease, recent) = (self.lease_ms, self.lease_ms / 4);
        let mut out = Vec::new();
        let mut quiet = Vec::new();
        self.grants.retain(|name, g| {
            if g.holding.is_held() {
                return true;
            }
            let split = if g.standby {
                g.holding.any_vouch(now)
                    && g.owner_held.is_some_and(|(since, last)| {
                        now.saturating_sub(since) >= lease && now.saturating_sub(last) < recent
                    })
            } else {
                fresh.iter().any(|c| {
                    &c.name == name
                        && c.vouching
                            .is_some_and(|(h, e)| h != host && e == g.vip.epoch + 1)
                })
            };
            if split {
                tracing::info!(
                    vip = %name,
                    epoch = g.vip.epoch,
                    standby = g.standby,
                    "VIP: split of promises between owner and standby: letting go of this side"
                );
                if g.standby {
                    quiet.push(g.vip.clone());
                } else {
                    out.push(g.vip.clone());
                }
            }
            !split
        });
        for vip in out.iter().chain(&quiet) {
            self.yielded.insert(
                vip.name.clone(),
                (vip.epoch, now.saturating_add(self.yield_ms)),
            );
        }
        out
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
        members(1, fenced)
    }

    fn members(n: usize, fenced: bool) -> KeeperState {
        KeeperState {
            host: HOST,
            members: n,
            per_member: vec![Vec::new(); n],
            answered_at: vec![None; n],
            grants: BTreeMap::new(),
            yielded: BTreeMap::new(),
            lease_ms: 400,
            yield_ms: 500,
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
            vouching: None,
            owner_held: false,
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
            s.renew_every(&cfg, 0),
            cfg.idle_every,
            "nothing to hold or claim"
        );
        // A candidacy owned by another host: this one may be its next owner.
        let elsewhere = VipCandidacy {
            owner: Some(HOST + 1),
            ..granted("web")
        };
        s.answer(answer(vec![elsewhere]), 100);
        assert!(s.grants.is_empty());
        assert_eq!(s.renew_every(&cfg, 0), cfg.renew_every);
        // Granted here, waiting for its majority.
        s.answer(answer(vec![granted("web")]), 100);
        assert_eq!(s.renew_every(&cfg, 0), cfg.acquire_every);
        // Gone from the answers: idle again.
        s.answer(answer(Vec::new()), 100);
        assert_eq!(s.renew_every(&cfg, 0), cfg.idle_every);
        s.leaving = true;
        assert_eq!(s.renew_every(&cfg, 0), cfg.acquire_every);
    }

    #[test]
    fn a_fenced_agent_takes_no_grant_and_takes_them_again_once_unfenced() {
        let mut s = state(true);
        assert!(s.answer(answer(vec![granted("web")]), 100).is_empty());
        assert!(s.grants.is_empty(), "no claim while fenced");
        assert!(s.held().is_empty());
        s.fenced = false;
        s.answer(answer(vec![granted("web")]), 100);
        assert_eq!(s.grants.keys().collect::<Vec<_>>(), ["web"]);
        // Vouched by the only member: held after a step, then let go as a whole.
        s.grants.get_mut("web").unwrap().holding.vouched(0, 100);
        assert!(matches!(
            s.grants.get_mut("web").unwrap().holding.step(110),
            Step::Acquire(_)
        ));
        assert_eq!(s.held().len(), 1);
    }

    /// Member `member`'s answer to a renewal sent at `sent` claiming `claims`, vouching for
    /// those listed in `ok`, with `candidacies`.
    fn reply(
        member: usize,
        sent: u64,
        claims: &[(&str, u64, bool)],
        ok: bool,
        candidacies: Vec<VipCandidacy>,
    ) -> Answer {
        let claims: Vec<VipClaim> = claims
            .iter()
            .map(|&(name, epoch, standby)| VipClaim {
                name: name.into(),
                epoch,
                standby,
                held: false,
            })
            .collect();
        Answer {
            member,
            sent_ms: sent,
            reply: VipRenewReply {
                vouches: claims
                    .iter()
                    .map(|c| protocol::agent::VipVouch {
                        name: c.name.clone(),
                        outcome: if ok { Ok(400) } else { Err("no".into()) },
                    })
                    .collect(),
                candidacies,
                members: Vec::new(),
            },
            request: Arc::new(VipRenew {
                claims,
                reports: Vec::new(),
                simulated: true,
                leaving: false,
            }),
        }
    }

    /// `web` owned here at epoch 3, with host 8 its standby.
    fn owned() -> VipCandidacy {
        VipCandidacy {
            standby: Some(HOST + 1),
            ..granted("web")
        }
    }

    /// `web` owned by host 6 at epoch 3, with this host its standby.
    fn standing_by() -> VipCandidacy {
        VipCandidacy {
            owner: Some(HOST - 1),
            standby: Some(HOST),
            ..granted("web")
        }
    }

    #[test]
    fn an_owner_that_cannot_hold_lets_go_when_a_member_vouches_for_its_standby() {
        let mut s = members(3, false);
        s.answer(reply(0, 100, &[], true, vec![owned()]), 100);
        // Vouched by member 0 only; member 1 vouches for the standby at the next epoch.
        s.answer(
            reply(0, 120, &[("web", 3, false)], true, vec![owned()]),
            130,
        );
        let split = VipCandidacy {
            vouching: Some((HOST + 1, 4)),
            ..owned()
        };
        s.answer(reply(1, 120, &[("web", 3, false)], false, vec![split]), 131);
        let g = &mut s.grants.get_mut("web").unwrap().holding;
        assert_eq!(g.step(140), Step::Idle, "one of three is no majority");
        let gone = s.yields(140);
        assert_eq!(gone.len(), 1, "let go, to be released");
        assert!(s.grants.is_empty());
        // Not claimed again at that epoch for the yield time, whatever the members say...
        s.answer(reply(0, 150, &[], true, vec![owned()]), 400);
        assert!(s.grants.is_empty());
        // ... then claimed afresh: an answer to a renewal sent before counts for nothing.
        s.answer(reply(0, 650, &[], true, vec![owned()]), 650);
        assert!(s.grants.contains_key("web"));
        s.answer(
            reply(0, 120, &[("web", 3, false)], true, vec![owned()]),
            660,
        );
        s.answer(
            reply(2, 130, &[("web", 3, false)], true, vec![owned()]),
            661,
        );
        let g = &mut s.grants.get_mut("web").unwrap().holding;
        assert_eq!(g.step(662), Step::Idle, "late answers are not a majority");
        // A new epoch is another grant: no yield holds it back.
        let moved = VipCandidacy {
            epoch: 5,
            ..owned()
        };
        let mut s = members(3, false);
        s.yielded.insert("web".into(), (3, 10_000));
        s.answer(reply(0, 100, &[], true, vec![moved]), 100);
        assert!(s.grants.contains_key("web"));
    }

    #[test]
    fn an_owner_keeps_its_claim_while_it_holds_or_waits_for_the_previous_owner() {
        let mut s = members(3, false);
        s.answer(reply(0, 100, &[], true, vec![owned()]), 100);
        // Waiting for the previous owner's promise (epoch 2) to run out: no split.
        let previous = VipCandidacy {
            vouching: Some((HOST + 2, 2)),
            ..owned()
        };
        s.answer(
            reply(1, 100, &[("web", 3, false)], false, vec![previous]),
            110,
        );
        assert!(s.yields(120).is_empty());
        assert!(s.grants.contains_key("web"));
        // Held with members 0 and 2: a member that vouches for the standby changes nothing.
        s.answer(
            reply(0, 130, &[("web", 3, false)], true, vec![owned()]),
            140,
        );
        s.answer(
            reply(2, 130, &[("web", 3, false)], true, vec![owned()]),
            141,
        );
        let split = VipCandidacy {
            vouching: Some((HOST + 1, 4)),
            ..owned()
        };
        s.answer(reply(1, 130, &[("web", 3, false)], false, vec![split]), 142);
        let g = &mut s.grants.get_mut("web").unwrap().holding;
        assert!(matches!(g.step(150), Step::Acquire(_)));
        assert!(s.yields(150).is_empty());
        // An answer older than a lease says nothing about now.
        let g = &mut s.grants.get_mut("web").unwrap().holding;
        assert_eq!(g.step(600), Step::Lose);
        assert!(s.yields(600).is_empty(), "member 1's word is 470 ms old");
    }

    #[test]
    fn a_standby_stops_claiming_once_members_say_for_a_lease_that_the_owner_holds() {
        let mut s = members(3, false);
        s.answer(reply(0, 100, &[], true, vec![standing_by()]), 100);
        let g = &s.grants["web"];
        assert!(g.standby && g.vip.epoch == 4);
        let held = VipCandidacy {
            owner_held: true,
            ..standing_by()
        };
        // Member 0 vouches for it (a split), members 1 and 2 hear the owner holding.
        let mut t = 120;
        while t <= 500 {
            s.answer(
                reply(0, t, &[("web", 4, true)], true, vec![standing_by()]),
                t + 5,
            );
            s.answer(
                reply(1, t, &[("web", 4, true)], false, vec![held.clone()]),
                t + 6,
            );
            let g = &mut s.grants.get_mut("web").unwrap().holding;
            assert_eq!(g.step(t + 7), Step::Idle);
            if t + 7 < 126 + 400 {
                assert!(s.yields(t + 7).is_empty(), "at {t}: not yet a whole lease");
            }
            t += 20;
        }
        let cfg = KeeperConfig::DEFAULT;
        assert_eq!(
            s.renew_every(&cfg, 510),
            cfg.acquire_every,
            "taking over, partly vouched"
        );
        assert!(s.yields(530).is_empty(), "a standby releases nothing");
        assert!(s.grants.is_empty(), "but stops claiming");
        assert_eq!(s.yielded["web"], (4, 1030));
        // A standby that holds the VIP never lets go on the members' word.
        let mut s = members(1, false);
        s.answer(reply(0, 100, &[], true, vec![standing_by()]), 100);
        let mut t = 120;
        while t <= 700 {
            s.answer(
                reply(0, t, &[("web", 4, true)], true, vec![held.clone()]),
                t + 5,
            );
            let g = &mut s.grants.get_mut("web").unwrap().holding;
            assert!(!matches!(g.step(t + 6), Step::Idle | Step::Lose));
            assert!(s.yields(t + 6).is_empty());
            t += 20;
        }
    }
}

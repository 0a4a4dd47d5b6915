//! The timings agents and coordinator members must agree on, defined once. One side acts at a
//! pace the other side's deadlines assume (an agent beats, the leader counts missed beats; a
//! VIP holder renews, the members' promises lapse), so each side's defaults start from these
//! constants and the checks at the end of this file keep them consistent at compile time.
//! docs/design/fencing.md and docs/design/vips.md argue the values.

/// How often an agent beats to the leader by default, in milliseconds (the agent's
/// `heartbeat_ms`).
pub const HEARTBEAT_MS: u64 = 1000;
/// The lease an acknowledged beat gives by default, in milliseconds (the coordinator's
/// `lease_secs`).
pub const HOST_LEASE_MS: u64 = 10_000;
/// The longest host lease: a coordinator refuses to grant more, and an agent caps what it is
/// granted at it (the safe direction: it only makes the agent fence itself sooner).
pub const MAX_HOST_LEASE_MS: u64 = 60_000;
/// How many beats in a row a host may miss before it is shown unreachable.
pub const MISSED_BEATS: u64 = 3;
/// A host silent this long is shown unreachable by default (nothing moves yet): three missed
/// beats. With another lease the leader keeps the same share of it.
pub const UNREACHABLE_AFTER_MS: u64 = HEARTBEAT_MS * MISSED_BEATS;
/// The longest an agent waits for the answer to one beat, in milliseconds, before it gives up
/// and beats again (its deadline is three heartbeats, at least 2 s, at most this). An agent
/// beats one at a time, so the leader counts a host whose beat it is still answering as heard,
/// up to this long after that beat came: a leader slow to answer (its own disk) must not show
/// the hosts it keeps waiting as silent.
pub const MAX_BEAT_WAIT_MS: u64 = 5_000;
/// The lease a VIP holder has from one member's promise, in milliseconds, counted from the
/// renewal's send time.
pub const VIP_LEASE_MS: u64 = 400;
/// How often a VIP holder renews with every member, in milliseconds: a third of the lease or
/// less, so one lost renewal never ends it.
pub const VIP_RENEW_EVERY_MS: u64 = 100;

const _: () = assert!(UNREACHABLE_AFTER_MS < HOST_LEASE_MS);
const _: () = assert!(HOST_LEASE_MS <= MAX_HOST_LEASE_MS);
const _: () = assert!(HEARTBEAT_MS * 2 < HOST_LEASE_MS);
const _: () = assert!(VIP_RENEW_EVERY_MS * 3 <= VIP_LEASE_MS);
const _: () = assert!(MAX_BEAT_WAIT_MS < HOST_LEASE_MS);

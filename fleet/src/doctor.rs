//! `pvefleet doctor`'s judgement: the facts the leader gathered (members, hosts, admins) in,
//! [`Finding`]s out, each saying what is wrong and what to do. Pure: the same facts at the
//! same `now` always give the same findings, most severe first.
//!
//! | check | problem | warning |
//! |---|---|---|
//! | `quorum` | a voter does not answer | — |
//! | `replication` | — | a member more than [`LAG_WARN`] entries behind |
//! | `versions` | — | a member or agent runs another version than the leader |
//! | `clock` | skew proven ≥ [`SKEW_PROBLEM_MS`] | skew proven ≥ [`SKEW_WARN_MS`] |
//! | `certificates` | expires within [`CERT_PROBLEM_SECS`] | within [`CERT_WARN_SECS`] (the CA: [`CA_WARN_SECS`]) |
//! | `agent` | offline, or no answer | — |
//! | `pve` | unreadable, older than 8 | 8.0 to 8.3 |
//! | `privileges` | each privilege the token lacks, with its path | — |
//! | `tls` | the agent does not verify PVE's certificate | — |
//! | `snippets` | — | no storage takes cloud-init snippets |
//! | `capabilities` | missing while the fleet has VIPs | missing, no VIPs yet |

use std::collections::BTreeMap;

use protocol::admin::{Finding, HostCheck, MemberCheck, Severity};
use protocol::agent::{ClockOffset, HostDiagnosis, PveFacts, PveTrust};
use protocol::fleet::AdminRecord;
use protocol::identity::NodeId;

/// A member this many entries behind is worth a look.
pub const LAG_WARN: u64 = 1_000;
/// A clock this far off (beyond the measurement's uncertainty) is worth a look.
pub const SKEW_WARN_MS: u64 = 500;
/// A clock this far off breaks certificates and join tokens issued by other members, and
/// PVE's own cluster.
pub const SKEW_PROBLEM_MS: u64 = 5_000;
/// A certificate expiring within this many seconds is a problem.
pub const CERT_PROBLEM_SECS: u64 = 2 * 86_400;
/// ... and within this many a warning (node certificates renew themselves when two thirds
/// of their 30 days have passed, so a healthy one always has 10 days left).
pub const CERT_WARN_SECS: u64 = 7 * 86_400;
/// The CA has no rotation yet: warn half a year ahead.
pub const CA_WARN_SECS: u64 = 180 * 86_400;

/// Everything the judgement reads.
#[derive(Debug, Clone, Copy)]
pub struct DoctorInput<'a> {
    /// The leader's wall clock, unix ms.
    pub now_ms: u64,
    /// The leader's node id.
    pub leader: NodeId,
    /// The leader's package version.
    pub leader_version: &'a str,
    /// Every member.
    pub members: &'a [MemberCheck],
    /// Every host.
    pub hosts: &'a [HostCheck],
    /// Every admin identity.
    pub admins: &'a [AdminRecord],
    /// The fleet holds VIPs (agents then need the capabilities).
    pub vips_configured: bool,
}

/// The findings, problems first, then by subject and check.
pub fn findings(input: &DoctorInput<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let now_secs = input.now_ms / 1000;
    members(input, now_secs, &mut out);
    for host in input.hosts {
        host_findings(input, host, now_secs, &mut out);
    }
    for admin in input.admins.iter().filter(|a| !a.is_revoked()) {
        let expires = admin.expires_at / 1000;
        if expires <= now_secs {
            continue;
        }
        let subject = format!("admin {} ({})", admin.id, admin.name);
        let renewable = admin.renew_until > admin.expires_at;
        let action = if renewable {
            "it renews itself when the admin uses the fleet (`pvefleet` with its configuration), \
             up to its renewal bound; or add a new admin with `pvefleet admin add` and revoke \
             this one"
        } else {
            "it cannot be renewed any further: add a new admin with `pvefleet admin add` and \
             revoke this one"
        };
        certificate(
            &mut out,
            &subject,
            "its certificate",
            expires,
            now_secs,
            false,
            action,
        );
    }
    out.sort_by(|a, b| (a.severity, &a.subject, &a.check).cmp(&(b.severity, &b.subject, &b.check)));
    out
}

fn push(
    out: &mut Vec<Finding>,
    severity: Severity,
    subject: &str,
    check: &str,
    message: String,
    action: &str,
) {
    out.push(Finding {
        severity,
        subject: subject.to_string(),
        check: check.to_string(),
        message,
        action: action.to_string(),
    });
}

fn members(input: &DoctorInput<'_>, now_secs: u64, out: &mut Vec<Finding>) {
    let voters = input.members.iter().filter(|m| m.voter).count();
    let answering = input
        .members
        .iter()
        .filter(|m| m.voter && m.facts.is_ok())
        .count();
    for m in input.members {
        let subject = format!("member {}", m.id);
        let facts = match &m.facts {
            Ok(f) => f,
            Err(why) => {
                let message = format!(
                    "member {} at {} does not answer ({why}); {answering} of {voters} voters \
                     answer",
                    m.id, m.addr
                );
                let action = if answering * 2 > voters && (answering - 1) * 2 <= voters {
                    "bring it back now (systemctl status pvefleet-coordinator on it): one more \
                     member down and the fleet loses its quorum"
                } else {
                    "bring it back (systemctl status pvefleet-coordinator on it), or replace it \
                     (`pvefleet member remove`, then join a new one)"
                };
                push(out, Severity::Problem, &subject, "quorum", message, action);
                continue;
            }
        };
        if let Some(lag) = m.lag.filter(|l| *l > LAG_WARN) {
            push(
                out,
                Severity::Warning,
                &subject,
                "replication",
                format!("member {} is {lag} entries behind the leader", m.id),
                "check its disk and network (it catches up by itself unless it is overloaded); \
                 `pvefleet cluster status` shows the lag",
            );
        }
        if facts.version != input.leader_version {
            push(
                out,
                Severity::Warning,
                &subject,
                "versions",
                format!(
                    "member {} runs pvefleet {}, the leader {}",
                    m.id, facts.version, input.leader_version
                ),
                "finish the rolling upgrade: upgrade the package on every member, one at a \
                 time (docs/design/upgrades.md)",
            );
        }
        if m.id != input.leader
            && let Some(c) = m.clock
        {
            clock(out, &subject, c, "the leader");
        }
        certificate(
            out,
            &subject,
            "its node certificate",
            facts.certificate_not_after,
            now_secs,
            false,
            "it renews itself at two thirds of its life: check the member's log for \
             'cannot renew the node certificate' and that a leader is elected",
        );
        certificate(
            out,
            &subject,
            "the cluster CA",
            facts.ca_not_after,
            now_secs,
            true,
            "plan a new cluster: the CA cannot be rotated in place yet",
        );
    }
}

fn host_findings(input: &DoctorInput<'_>, host: &HostCheck, now_secs: u64, out: &mut Vec<Finding>) {
    let subject = format!("host {}", host.name);
    let facts: &HostDiagnosis = match &host.facts {
        Ok(f) => f,
        Err(why) => {
            let message = if host.online {
                format!(
                    "the agent of {} did not answer the diagnosis: {why}",
                    host.name
                )
            } else {
                format!("the agent of {} is not online: {why}", host.name)
            };
            push(
                out,
                Severity::Problem,
                &subject,
                "agent",
                message,
                "check the agent on the host (systemctl status pvefleet-agent; journalctl -u \
                 pvefleet-agent) and `pvefleet host show`",
            );
            return;
        }
    };
    if facts.agent_version != input.leader_version {
        push(
            out,
            Severity::Warning,
            &subject,
            "versions",
            format!(
                "the agent of {} runs pvefleet {}, the leader {}",
                host.name, facts.agent_version, input.leader_version
            ),
            "upgrade the pvefleet package on the host (the agent restarts; its guests keep \
             running)",
        );
    }
    if let Some(c) = facts.clock {
        clock(out, &subject, c, "the leader");
    }
    certificate(
        out,
        &subject,
        "the agent's certificate",
        facts.certificate_not_after,
        now_secs,
        false,
        "it renews itself at two thirds of its life: check the agent's log for renewal \
         errors and that it reaches the members",
    );
    if !facts.missing_capabilities.is_empty() {
        let (severity, why) = if input.vips_configured {
            (Severity::Problem, "it cannot hold the fleet's VIPs")
        } else {
            (Severity::Warning, "it could not hold a VIP")
        };
        push(
            out,
            severity,
            &subject,
            "capabilities",
            format!(
                "the agent of {} runs without {}: {why}",
                host.name,
                facts.missing_capabilities.join(" and ")
            ),
            "run the agent with the packaged unit (AmbientCapabilities=CAP_NET_ADMIN \
             CAP_NET_RAW)",
        );
    }
    match &facts.pve {
        Ok(pve) => pve_findings(&subject, &host.name, pve, out),
        Err(why) => push(
            out,
            Severity::Problem,
            &subject,
            "pve",
            format!("the agent of {} cannot read PVE: {why}", host.name),
            "check [pve] in /etc/pvefleet/agent.toml (url, token_file, fingerprint) and that \
             pveproxy runs",
        ),
    }
}

fn pve_findings(subject: &str, node: &str, pve: &PveFacts, out: &mut Vec<Finding>) {
    let mut parts = pve.version.split('.').map(|p| p.parse::<u32>().ok());
    let major = parts.next().flatten().unwrap_or(0);
    let minor = parts.next().flatten().unwrap_or(0);
    if major < 8 {
        push(
            out,
            Severity::Problem,
            subject,
            "pve",
            format!(
                "{node} runs PVE {}: pvefleet supports PVE 8.4 and 9",
                pve.version
            ),
            "upgrade PVE on the host (pve8to9 / pve7to8 checklists)",
        );
    } else if major == 8 && minor < 4 {
        push(
            out,
            Severity::Warning,
            subject,
            "pve",
            format!(
                "{node} runs PVE {}: pvefleet is tested with 8.4 and 9",
                pve.version
            ),
            "upgrade the host to PVE 8.4 (apt full-upgrade)",
        );
    }
    match &pve.missing_privileges {
        Ok(missing) => {
            for m in missing {
                let privileges = m.privileges.join(" or ");
                push(
                    out,
                    Severity::Problem,
                    subject,
                    "privileges",
                    format!(
                        "the agent's API token on {node} lacks {privileges} on {}: needed for {}",
                        m.path, m.needed_for
                    ),
                    &format!(
                        "grant it on {} to the token (pveum acl modify {} --tokens \
                         'USER@REALM!TOKEN' --roles ROLE, with a role holding {}), or use a \
                         token without privilege separation of a user that holds it",
                        m.path, m.path, m.privileges[0]
                    ),
                );
            }
        }
        Err(why) => push(
            out,
            Severity::Problem,
            subject,
            "privileges",
            format!("the agent's API token privileges on {node} cannot be read: {why}"),
            "check that the token in [pve] token_file exists and is not expired (pveum user \
             token list)",
        ),
    }
    if pve.trust == PveTrust::Insecure {
        push(
            out,
            Severity::Problem,
            subject,
            "tls",
            format!("the agent of {node} does not verify PVE's TLS certificate (insecure = true)"),
            "pin it: set [pve] fingerprint to the SHA-256 fingerprint `pvenode cert info` shows \
             for pve-ssl.pem or pveproxy-ssl.pem, and remove insecure",
        );
    }
    if pve.snippet_storages.is_empty() {
        push(
            out,
            Severity::Warning,
            subject,
            "snippets",
            format!(
                "no active storage of {node} accepts snippets: VMs with cloud-init user data cannot be created there"
            ),
            "allow snippets on a storage, e.g. pvesm set local --content iso,vztmpl,backup,snippets",
        );
    }
}

fn clock(out: &mut Vec<Finding>, subject: &str, c: ClockOffset, reference: &str) {
    let proven = c.proven_ms();
    let severity = if proven >= SKEW_PROBLEM_MS {
        Severity::Problem
    } else if proven >= SKEW_WARN_MS {
        Severity::Warning
    } else {
        return;
    };
    let direction = if c.ahead_ms > 0 { "ahead of" } else { "behind" };
    push(
        out,
        severity,
        subject,
        "clock",
        format!(
            "its clock is {:.1} s {direction} {reference} (± {:.1} s)",
            c.ahead_ms.unsigned_abs() as f64 / 1000.0,
            c.uncertainty_ms as f64 / 1000.0
        ),
        "synchronise clocks with NTP on every host (timedatectl; chrony is PVE's default)",
    );
}

fn certificate(
    out: &mut Vec<Finding>,
    subject: &str,
    what: &str,
    not_after: u64,
    now_secs: u64,
    is_ca: bool,
    action: &str,
) {
    if not_after == 0 {
        push(
            out,
            Severity::Problem,
            subject,
            "certificates",
            format!("{what} cannot be read"),
            "check the node's data directory (node.pem, ca.pem)",
        );
        return;
    }
    let left = not_after.saturating_sub(now_secs);
    let warn = if is_ca { CA_WARN_SECS } else { CERT_WARN_SECS };
    let severity = if not_after <= now_secs || left < CERT_PROBLEM_SECS {
        Severity::Problem
    } else if left < warn {
        Severity::Warning
    } else {
        return;
    };
    let message = if not_after <= now_secs {
        format!("{what} has expired")
    } else {
        format!(
            "{what} expires in {} ({})",
            human_duration(left),
            protocol::time::timestamp(not_after * 1000)
        )
    };
    push(out, severity, subject, "certificates", message, action);
}

fn human_duration(secs: u64) -> String {
    match secs {
        s if s >= 2 * 86_400 => format!("{} days", s / 86_400),
        s if s >= 2 * 3_600 => format!("{} hours", s / 3_600),
        s => format!("{} minutes", s / 60),
    }
}

/// The number of findings of each severity.
pub fn counts(findings: &[Finding]) -> BTreeMap<Severity, usize> {
    let mut out = BTreeMap::new();
    for f in findings {
        *out.entry(f.severity).or_default() += 1;
    }
    out
}

#[cfg(test)]
#[path = "doctor_tests.rs"]
mod tests;

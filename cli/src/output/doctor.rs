//! `pvefleet doctor`'s report: the findings first (what is wrong, what to do), then what was
//! checked on each member and host.

use protocol::admin::{DoctorReport, Severity};
use protocol::agent::{ClockOffset, PveTrust};

use super::table::Table;
use super::{Context, Render};

impl Render for DoctorReport {
    fn table(&self, _ctx: &Context) -> String {
        let mut out = String::new();
        if self.findings.is_empty() {
            out.push_str("no findings: every check passed\n");
        }
        for f in &self.findings {
            let tag = match f.severity {
                Severity::Problem => "PROBLEM",
                Severity::Warning => "WARNING",
            };
            out.push_str(&format!(
                "{tag} {} [{}]: {}\n  fix: {}\n",
                f.subject, f.check, f.message, f.action
            ));
        }
        out.push('\n');
        let mut members = Table::new(&["MEMBER", "ADDRESS", "ROLE", "VERSION", "LAG", "CLOCK"]);
        for m in &self.members {
            let (version, clock) = match &m.facts {
                Ok(f) => (f.version.clone(), clock(m.clock)),
                Err(why) => (format!("no answer: {why}"), "-".into()),
            };
            members.row(vec![
                if m.id == self.leader {
                    format!("{} (leader)", m.id)
                } else {
                    m.id.to_string()
                },
                m.addr.clone(),
                if m.voter { "voter" } else { "learner" }.into(),
                version,
                m.lag.map_or("-".into(), |l| l.to_string()),
                clock,
            ]);
        }
        out.push_str(&members.render());
        out.push('\n');
        let mut hosts = Table::new(&["HOST", "AGENT", "PVE", "TLS", "MISSING PRIVILEGES", "CLOCK"]);
        for h in &self.hosts {
            match &h.facts {
                Ok(f) => {
                    let (pve, tls, missing) = match &f.pve {
                        Ok(p) => (
                            p.version.clone(),
                            trust(p.trust).to_string(),
                            match &p.missing_privileges {
                                Ok(m) if m.is_empty() => "none".to_string(),
                                Ok(m) => m.len().to_string(),
                                Err(_) => "unreadable".to_string(),
                            },
                        ),
                        Err(_) => ("unreadable".into(), "-".into(), "-".into()),
                    };
                    hosts.row(vec![
                        h.name.clone(),
                        f.agent_version.clone(),
                        pve,
                        tls,
                        missing,
                        clock(f.clock),
                    ]);
                }
                Err(_) => {
                    hosts.row(vec![
                        h.name.clone(),
                        if h.online { "no answer" } else { "offline" }.into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                    ]);
                }
            }
        }
        out.push_str(&hosts.render());
        out
    }
}

fn trust(t: PveTrust) -> &'static str {
    match t {
        PveTrust::Fingerprint => "pinned",
        PveTrust::CaFile => "ca file",
        PveTrust::SystemRoots => "system roots",
        PveTrust::Insecure => "NOT VERIFIED",
        PveTrust::Local => "local",
    }
}

fn clock(c: Option<ClockOffset>) -> String {
    match c {
        None => "-".into(),
        Some(c) => format!("{:+} ms (±{})", c.ahead_ms, c.uncertainty_ms),
    }
}

#[cfg(test)]
mod tests {
    use protocol::admin::{Finding, HostCheck, MemberCheck, MemberFacts};

    use super::*;

    #[test]
    fn findings_come_first_with_their_fix_then_members_and_hosts() {
        let report = DoctorReport {
            leader: 1,
            checked_at_ms: 0,
            members: vec![MemberCheck {
                id: 1,
                addr: "10.0.0.1:7400".into(),
                voter: true,
                lag: Some(0),
                facts: Ok(MemberFacts {
                    node_id: 1,
                    version: "0.1.0".into(),
                    clock_ms: 0,
                    certificate_not_after: 0,
                    ca_not_after: 0,
                }),
                clock: Some(ClockOffset {
                    ahead_ms: 0,
                    uncertainty_ms: 0,
                }),
            }],
            hosts: vec![HostCheck {
                id: 5,
                name: "pve2".into(),
                online: false,
                facts: Err("silent".into()),
            }],
            findings: vec![Finding {
                severity: Severity::Problem,
                subject: "host pve2".into(),
                check: "agent".into(),
                message: "the agent of pve2 is not online".into(),
                action: "check the agent".into(),
            }],
        };
        let text = report.table(&Context::default());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "PROBLEM host pve2 [agent]: the agent of pve2 is not online"
        );
        assert_eq!(lines[1], "  fix: check the agent");
        assert!(text.contains("1 (leader)"), "{text}");
        assert!(text.contains("+0 ms (±0)"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("pve2") && l.contains("offline")),
            "{text}"
        );
        let healthy = DoctorReport {
            findings: vec![],
            ..report
        };
        assert!(
            healthy
                .table(&Context::default())
                .starts_with("no findings: every check passed\n")
        );
    }
}

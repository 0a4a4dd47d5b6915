//! What the demo tells its user once the fleet is ready: for people, how to point the CLI at
//! it from another shell; with `--output json`, one document naming the directory, the CLI
//! configuration and every process, for scripts that drive the demo's fleet.

use std::path::PathBuf;

use serde::Serialize;

/// The running demo, as `--output json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct DemoReady {
    /// The demo's directory.
    pub(crate) dir: PathBuf,
    /// The CLI configuration (`PVEFLEET_CONFIG`).
    pub(crate) cli_config: PathBuf,
    /// Where the processes log.
    pub(crate) logs: PathBuf,
    /// Where the binaries are (for `PATH`).
    pub(crate) bin_dir: PathBuf,
    /// The coordinator members.
    pub(crate) coordinators: Vec<MemberInfo>,
    /// The simulated hosts.
    pub(crate) hosts: Vec<HostInfo>,
    /// The VMs applied.
    pub(crate) vms: Vec<String>,
    /// The VIPs applied.
    pub(crate) vips: Vec<String>,
    /// The web dashboard of coordinator 1, if it could be reached.
    pub(crate) dashboard: Option<DashboardInfo>,
}

/// The demo's dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct DashboardInfo {
    /// Its address (`https://127.0.0.1:PORT`).
    pub(crate) base: String,
    /// A one-time login link to it.
    pub(crate) login: String,
    /// The process id of the last host's agent (stop it to watch the host fail).
    pub(crate) host_pid: Option<u32>,
    /// That host's name.
    pub(crate) host: String,
}

/// One coordinator member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct MemberInfo {
    /// Its node id.
    pub(crate) node_id: u64,
    /// Its QUIC address.
    pub(crate) addr: String,
    /// Its process id.
    pub(crate) pid: Option<u32>,
}

/// One simulated host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct HostInfo {
    /// Its PVE node name.
    pub(crate) name: String,
    /// Its agent's node id.
    pub(crate) node_id: u64,
}

impl DemoReady {
    /// How to use the fleet from another shell, with commands on the fleet's own VMs;
    /// `keeps_running`: the demo waits for Ctrl-C (else it stops right after).
    pub(crate) fn instructions(&self, keeps_running: bool) -> String {
        let lead = if keeps_running {
            "The fleet runs until Ctrl-C. Use it from another shell:"
        } else {
            "The demo stops now (--exit-when-ready). Without that flag the fleet keeps running \
             until Ctrl-C, and you use it from another shell:"
        };
        let mut text = format!(
            "{lead}\n\n  \
             export PVEFLEET_CONFIG={}\n  \
             export PATH={}:$PATH\n  \
             pvefleet vm ls\n  \
             pvefleet host ls\n",
            self.cli_config.display(),
            self.bin_dir.display(),
        );
        if let Some(vm) = self.vms.first() {
            text.push_str(&format!(
                "  pvefleet vm explain {vm}         # why it runs where it runs\n  \
                 pvefleet vm stop {vm}            # the fleet keeps it stopped\n  \
                 pvefleet vm start {vm}\n"
            ));
        }
        if let Some(vip) = self.vips.first() {
            let to = self.hosts.last().map_or("pve-b", |h| h.name.as_str());
            text.push_str(&format!(
                "  pvefleet vip show {vip}         # its holder (simulated) and who could take it\n  \
                 pvefleet vip move {vip} {to}      # hand it over\n"
            ));
        }
        text.push_str("  pvefleet events --follow\n");
        if let Some(d) = &self.dashboard {
            text.push_str(&format!(
                "\nThe dashboard (a self-signed certificate of the demo's CA: accept it once):\n\n  \
                 {}\n\nThe link works once, for 1 hour; another: \
                 pvefleet dashboard login --url {}\n",
                d.login, d.base
            ));
            if let Some(pid) = d.host_pid {
                text.push_str(&format!(
                    "Watch a host fail and its guests and VIPs move: kill -STOP {pid}   \
                     (host {}; kill -CONT {pid} brings it back)\n",
                    d.host
                ));
            }
        }
        text.push_str(&format!("\nLogs: {}\n", self.logs.display()));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(vms: &[&str]) -> DemoReady {
        DemoReady {
            dir: "/tmp/d".into(),
            cli_config: "/tmp/d/cli.toml".into(),
            logs: "/tmp/d/logs".into(),
            bin_dir: "/opt/bin".into(),
            coordinators: vec![MemberInfo {
                node_id: 1,
                addr: "127.0.0.1:7400".into(),
                pid: None,
            }],
            hosts: vec![HostInfo {
                name: "pve-a".into(),
                node_id: 2,
            }],
            vms: vms.iter().map(|v| v.to_string()).collect(),
            vips: vec!["web".into()],
            dashboard: Some(DashboardInfo {
                base: "https://127.0.0.1:7443".into(),
                login: "https://127.0.0.1:7443/login#token=t".into(),
                host_pid: Some(42),
                host: "pve-a".into(),
            }),
        }
    }

    #[test]
    fn the_instructions_point_the_cli_at_the_demo_and_name_one_of_its_vms() {
        let text = ready(&["web-1", "db-1"]).instructions(true);
        assert!(text.starts_with("The fleet runs until Ctrl-C"), "{text}");
        assert!(
            text.contains("export PVEFLEET_CONFIG=/tmp/d/cli.toml\n"),
            "{text}"
        );
        assert!(text.contains("export PATH=/opt/bin:$PATH\n"), "{text}");
        assert!(text.contains("pvefleet vm explain web-1"), "{text}");
        assert!(text.contains("Logs: /tmp/d/logs"), "{text}");
        assert!(
            text.contains("https://127.0.0.1:7443/login#token=t"),
            "{text}"
        );
        assert!(text.contains("kill -STOP 42"), "{text}");
        // A fleet without VMs gets no VM commands.
        assert!(!ready(&[]).instructions(true).contains("vm explain"));
        assert!(
            ready(&[])
                .instructions(false)
                .starts_with("The demo stops now")
        );
    }

    #[test]
    fn the_json_report_names_the_configuration_and_every_process() {
        let v = serde_json::to_value(ready(&["web-1"])).unwrap();
        assert_eq!(v["cli_config"], "/tmp/d/cli.toml");
        assert_eq!(v["coordinators"][0]["addr"], "127.0.0.1:7400");
        assert_eq!(v["hosts"][0]["name"], "pve-a");
        assert_eq!(v["vms"][0], "web-1");
    }
}

//! Tables for VMs: `vm ls` (one line per VM) and `vm show` (the spec, what the fleet decided,
//! and what the agents observed, with its conditions).

use protocol::admin::VmListReply;
use protocol::fleet::VmRecord;
use protocol::spec::{
    DiskSpec, HaDefaults, HaSpec, NicIp, NicSpec, Placement, TemplateSpec, VmSpec,
};

use super::human::{age, gib, mib, or_dash};
use super::table::{Table, fields};
use super::{Context, Render};
use protocol::time::timestamp;

/// The phase shown for a VM: `deleting` as soon as the operator deleted it, else the agents'.
pub(crate) fn phase(vm: &VmRecord) -> String {
    if vm.deleting {
        "deleting".to_string()
    } else {
        vm.status.phase.to_string()
    }
}

/// The addresses of a VM: those its guest reported, else those allocated from pools (what it
/// gets once it reports).
fn addresses(vm: &VmRecord) -> String {
    let ips: Vec<String> = if vm.status.ips.is_empty() {
        vm.assignment
            .ips
            .iter()
            .map(|a| a.address.to_string())
            .collect()
    } else {
        vm.status.ips.iter().map(ToString::to_string).collect()
    };
    if ips.is_empty() {
        "-".to_string()
    } else {
        ips.join(",")
    }
}

impl Render for VmListReply {
    fn table(&self, ctx: &Context) -> String {
        if self.vms.is_empty() {
            return "no VMs: apply one with `pvefleet vm apply -f FILE`\n".to_string();
        }
        let mut t = Table::new(&["NAME", "HOST", "VMID", "STATE", "HA", "IPS", "AGE"]);
        for vm in &self.vms {
            // A VM being recovered from a fenced host says so until it settled; one being
            // moved, until its agent reported the move.
            let state = match (
                self.recoveries.get(&vm.spec.name),
                self.migrations.get(&vm.spec.name),
            ) {
                (Some(r), _) if r.is_waiting() => "recovering (waiting)".to_string(),
                (Some(_), _) => "recovering".to_string(),
                (None, Some(m)) => format!("migrating to {}", m.to_node),
                (None, None) => phase(vm),
            };
            t.row(vec![
                vm.spec.name.clone(),
                ctx.host(vm.assignment.host),
                or_dash(vm.assignment.vmid),
                state,
                or_dash(vm.spec.ha.state),
                addresses(vm),
                age(ctx.now, vm.created_at),
            ]);
        }
        t.render()
    }
}

impl Render for VmRecord {
    fn table(&self, ctx: &Context) -> String {
        let s = &self.spec;
        let generation = match self.status.observed_generation {
            g if g == self.generation => g.to_string(),
            0 => format!("{} (not yet observed by an agent)", self.generation),
            g => format!("{} (status reflects {g})", self.generation),
        };
        let mut pairs = vec![
            ("name", s.name.clone()),
            ("phase", phase(self)),
            ("host", ctx.host(self.assignment.host)),
            ("vmid", or_dash(self.assignment.vmid)),
            ("ips", addresses(self)),
            ("generation", generation),
            ("cpu", cpu(s)),
            ("memory", memory(s)),
            ("template", template(s.template.as_ref())),
            ("state", format!("{} (restart: {})", s.state, s.restart)),
            ("ha", ha(&s.ha, ctx.ha_defaults.as_ref())),
            ("placement", placement(&s.placement)),
            (
                "vmid range",
                s.vmid_range.clone().unwrap_or_else(|| "default".into()),
            ),
        ];
        if let Some(seen) = self.status.current_host
            && Some(seen) != self.assignment.host
        {
            // Placed elsewhere since (or recovered): the agents still report it on this host.
            pairs.insert(3, ("seen on", ctx.host(Some(seen))));
        }
        if let Some(g) = &s.group {
            pairs.push((
                "group",
                format!(
                    "{} (member {} of {}, {})",
                    g.group,
                    g.index,
                    g.pattern,
                    if g.spread { "spread" } else { "not spread" }
                ),
            ));
        }
        if !s.tags.is_empty() {
            pairs.push(("tags", s.tags.join(",")));
        }
        if !s.description.is_empty() {
            pairs.push(("description", s.description.clone()));
        }
        pairs.push(("created", when(ctx, self.created_at)));
        pairs.push(("updated", when(ctx, self.updated_at)));
        if !self.status.message.is_empty() {
            pairs.push(("message", self.status.message.clone()));
        }
        let mut out = fields(&pairs);
        if !s.disks.is_empty() {
            out.push('\n');
            out.push_str(&disks(&s.disks));
        }
        if !s.nics.is_empty() {
            out.push('\n');
            out.push_str(&nics(self, &s.nics));
        }
        if !self.status.conditions.is_empty() {
            out.push('\n');
            let mut t = Table::new(&["CONDITION", "STATUS", "REASON", "SINCE", "MESSAGE"]);
            for c in &self.status.conditions {
                t.row(vec![
                    format!("{:?}", c.kind),
                    c.status.to_string(),
                    c.reason.clone(),
                    age(ctx.now, c.since),
                    c.message.clone(),
                ]);
            }
            out.push_str(&t.render());
        }
        out
    }
}

/// `started, restart 1, relocate 1 (fleet default), recovery relocate (fleet default)` (just
/// `default` when the defaults could not be read), or
/// `-` for a VM outside HA. A value the VM leaves to the fleet says so, shown as the default
/// in force when it is known.
fn ha(ha: &HaSpec, defaults: Option<&HaDefaults>) -> String {
    fn value<T: std::fmt::Display>(own: Option<T>, default: Option<T>) -> String {
        match (own, default) {
            (Some(v), _) => v.to_string(),
            (None, Some(d)) => format!("{d} (fleet default)"),
            (None, None) => "default".to_string(),
        }
    }
    match ha.state {
        None => "-".to_string(),
        Some(state) => format!(
            "{state}, restart {}, relocate {}, recovery {}",
            value(ha.max_restart, defaults.map(|d| d.max_restart)),
            value(ha.max_relocate, defaults.map(|d| d.max_relocate)),
            value(ha.recovery, defaults.map(|d| d.recovery)),
        ),
    }
}

fn when(ctx: &Context, at: u64) -> String {
    format!("{} ago ({})", age(ctx.now, at), timestamp(at))
}

fn cpu(s: &VmSpec) -> String {
    let plural = |n: u32, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let mut text = format!(
        "{} x {}",
        plural(s.cores, "core"),
        plural(s.sockets, "socket")
    );
    if let Some(model) = &s.cpu {
        text.push_str(&format!(" ({model})"));
    }
    text
}

fn memory(s: &VmSpec) -> String {
    match s.balloon_mib {
        None => mib(s.memory_mib),
        Some(0) => format!("{} (no balloon)", mib(s.memory_mib)),
        Some(min) => format!("{} (balloon down to {})", mib(s.memory_mib), mib(min)),
    }
}

fn template(t: Option<&TemplateSpec>) -> String {
    let Some(t) = t else {
        return "- (created from scratch)".to_string();
    };
    let source = match (&t.name, t.vmid) {
        (Some(name), _) => name.clone(),
        (None, Some(vmid)) => format!("vmid {vmid}"),
        (None, None) => "?".to_string(),
    };
    match &t.storage {
        Some(storage) => format!("{source} ({} clone to {storage})", t.clone),
        None => format!("{source} ({} clone)", t.clone),
    }
}

fn placement(p: &Placement) -> String {
    let mut parts = Vec::new();
    if !p.hosts.is_empty() {
        parts.push(format!("on {}", p.hosts.join(",")));
    }
    if !p.exclude_hosts.is_empty() {
        parts.push(format!("not on {}", p.exclude_hosts.join(",")));
    }
    if !p.labels.is_empty() {
        let labels: Vec<String> = p.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.push(format!("labels {}", labels.join(",")));
    }
    if !p.together_with.is_empty() {
        parts.push(format!("together with {}", p.together_with.join(",")));
    }
    if !p.apart_from.is_empty() {
        parts.push(format!("apart from {}", p.apart_from.join(",")));
    }
    if parts.is_empty() {
        "any host".to_string()
    } else {
        parts.join("; ")
    }
}

fn disks(disks: &[DiskSpec]) -> String {
    let mut t = Table::new(&["DISK", "SIZE", "STORAGE", "OPTIONS"]);
    for d in disks {
        let o = &d.options;
        let mut options: Vec<String> = [
            (o.ssd, "ssd"),
            (o.discard, "discard"),
            (o.iothread, "iothread"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| name.to_string())
        .collect();
        if let Some(cache) = o.cache {
            options.push(format!("cache={cache}"));
        }
        t.row(vec![
            d.slot.clone(),
            gib(d.size_gib),
            d.storage.clone().unwrap_or_else(|| "(template's)".into()),
            if options.is_empty() {
                "-".into()
            } else {
                options.join(",")
            },
        ]);
    }
    t.render()
}

fn nics(vm: &VmRecord, nics: &[NicSpec]) -> String {
    let mut t = Table::new(&["NIC", "MODEL", "BRIDGE", "VLAN", "IP", "ADDRESS"]);
    for (i, n) in nics.iter().enumerate() {
        let ip = match &n.ip {
            None => "-".to_string(),
            Some(NicIp::Dhcp) => "dhcp".to_string(),
            Some(NicIp::Pool(pool)) => format!("pool {pool}"),
            Some(NicIp::Static { address, gateway }) => match gateway {
                Some(gw) => format!("{address} via {gw}"),
                None => address.clone(),
            },
        };
        let allocated = vm
            .assignment
            .ips
            .iter()
            .find(|a| usize::try_from(a.nic).ok() == Some(i))
            .map(|a| match a.gateway {
                Some(gw) => format!("{}/{} via {gw}", a.address, a.prefix_len),
                None => format!("{}/{}", a.address, a.prefix_len),
            });
        t.row(vec![
            format!("net{i}"),
            n.model.to_string(),
            n.bridge.clone(),
            or_dash(n.vlan),
            ip,
            or_dash(allocated),
        ]);
    }
    t.render()
}

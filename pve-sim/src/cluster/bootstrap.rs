//! Building the initial state from a [`SimConfig`]: nodes, storages and the configured
//! templates (template VMs with a base disk, a cloud-init drive, `net0` on `vmbr0`).

use std::collections::{BTreeMap, BTreeSet};

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::clock::{now_unix, now_unix_f64};
use super::config::text::VmConfig;
use super::ids::{random_mac, random_uuid};
use super::state::{Node, State};
use super::tasks::task::TaskRegistry;
use super::vm::{RunState, Vm};
use super::volumes::Storages;
use crate::config::TemplateConfig;
use crate::{SimConfig, SimError};

/// QEMU version written into `meta: creation-qemu=`.
pub(super) const QEMU_VERSION: &str = "9.2.0";

fn invalid(msg: String) -> SimError {
    SimError::Config(msg)
}

fn valid_node_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// The state a simulator starts with.
pub(super) fn initial_state(config: &SimConfig) -> Result<State, SimError> {
    if config.nodes.is_empty() {
        return Err(invalid("at least one node is required".into()));
    }
    let mut names = BTreeSet::new();
    for n in &config.nodes {
        if !valid_node_name(&n.name) {
            return Err(invalid(format!("invalid node name '{}'", n.name)));
        }
        if !names.insert(n.name.clone()) {
            return Err(invalid(format!("node '{}' defined twice", n.name)));
        }
    }
    let mut ids = BTreeSet::new();
    for s in &config.storages {
        if !ids.insert(s.id.clone()) {
            return Err(invalid(format!("storage '{}' defined twice", s.id)));
        }
        if let Some(unknown) = s.nodes.iter().find(|n| !names.contains(*n)) {
            return Err(invalid(format!(
                "storage '{}' refers to unknown node '{unknown}'",
                s.id
            )));
        }
    }
    let now = now_unix_f64();
    let mut st = State {
        nodes: config
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| Node::new(n, i, now))
            .collect(),
        storages: Storages::new(&config.storages),
        vms: BTreeMap::new(),
        tunnels: BTreeMap::new(),
        tasks: TaskRegistry::default(),
        rng: StdRng::seed_from_u64(config.seed),
        ha: BTreeMap::new(),
    };
    for t in &config.templates {
        add_template(&mut st, t)?;
    }
    Ok(st)
}

fn add_template(st: &mut State, t: &TemplateConfig) -> Result<(), SimError> {
    if t.vmid < 100 {
        return Err(invalid(format!("template vmid {} is below 100", t.vmid)));
    }
    if st.vms.contains_key(&t.vmid) {
        return Err(invalid(format!("vmid {} used twice", t.vmid)));
    }
    if st.node(&t.node).is_none() {
        return Err(invalid(format!(
            "template {} is on unknown node '{}'",
            t.vmid, t.node
        )));
    }
    let scfg = st
        .storages
        .check_enabled(&t.storage, &t.node)
        .map_err(invalid)?;
    if !scfg.content.contains("images") {
        return Err(invalid(format!(
            "storage '{}' does not support vm images",
            t.storage
        )));
    }
    let ctime = now_unix();
    let size = t.disk_gib << 30;
    let alloc = |st: &mut State, name: Option<&str>, size: u64| {
        st.storages
            .alloc(
                &t.storage,
                &t.node,
                t.vmid,
                name,
                Some("qcow2"),
                size,
                ctime,
            )
            .map_err(invalid)
    };
    let disk = alloc(st, None, size)?;
    let base = st.storages.create_base(&disk, &t.node).map_err(invalid)?;
    let cloudinit = alloc(st, Some(&format!("vm-{}-cloudinit", t.vmid)), 4 << 20)?;
    let mut conf = VmConfig::default();
    if t.agent {
        conf.set("agent", "1");
    }
    conf.set("boot", "order=scsi0");
    conf.set("cores", "2");
    conf.set("ide2", format!("{cloudinit},media=cdrom"));
    conf.set("memory", t.memory_mib.to_string());
    conf.set(
        "meta",
        format!("creation-qemu={QEMU_VERSION},ctime={ctime}"),
    );
    conf.set("name", t.name.as_str());
    conf.set(
        "net0",
        format!("virtio={},bridge=vmbr0", random_mac(&mut st.rng)),
    );
    conf.set("ostype", "l26");
    conf.set("scsi0", format!("{base},size={}G", t.disk_gib));
    conf.set("scsihw", "virtio-scsi-single");
    conf.set("serial0", "socket");
    conf.set("smbios1", format!("uuid={}", random_uuid(&mut st.rng)));
    conf.set("template", "1");
    conf.set("vga", "serial0");
    conf.set("vmgenid", random_uuid(&mut st.rng));
    st.vms.insert(
        t.vmid,
        Vm {
            vmid: t.vmid,
            node: t.node.clone(),
            conf,
            run: RunState::default(),
        },
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_builds_a_template_on_shared_storage() {
        let st = initial_state(&SimConfig::default()).unwrap();
        let vm = &st.vms[&9000];
        assert_eq!(vm.node, "pve1");
        assert!(vm.conf.is_template());
        assert_eq!(vm.conf.get("scsi0"), Some("ceph:base-9000-disk-0,size=8G"));
        assert_eq!(
            vm.conf.get("ide2"),
            Some("ceph:vm-9000-cloudinit,media=cdrom")
        );
        assert!(st.storages.find("ceph:base-9000-disk-0", "pve3").is_some());
        assert_eq!(st.nodes.len(), 3);
    }

    #[test]
    fn inconsistent_configs_are_refused() {
        let mut c = SimConfig::default();
        c.templates[0].node = "nowhere".into();
        assert!(initial_state(&c).is_err());
        let mut c = SimConfig::default();
        c.templates[0].storage = "local".into();
        c.storages[0].content.retain(|x| x != "images");
        assert!(
            initial_state(&c)
                .err()
                .unwrap()
                .to_string()
                .contains("does not support vm images")
        );
        let mut c = SimConfig::default();
        c.nodes[1].name = "pve1".into();
        assert!(initial_state(&c).is_err());
    }
}

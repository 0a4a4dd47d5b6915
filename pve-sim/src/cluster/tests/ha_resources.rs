//! Scenario tests of PVE's HA resources: set as a whole, read back through
//! `GET /cluster/ha/resources[/{sid}]`, and guarding `destroy` without `purge`.

use super::support::fast;
use crate::Route;
use crate::ha::{HaResource, HaState};

fn res(sid: &str, state: Option<HaState>) -> HaResource {
    HaResource {
        sid: sid.into(),
        state,
        ..HaResource::default()
    }
}

#[tokio::test]
async fn configured_resources_are_listed_and_read() {
    let s = fast();
    s.create_vm("pve1", "100", "ceph").await;
    assert_eq!(
        s.ok(Route::HaResourceList, &[]).await,
        serde_json::json!([])
    );
    let mut web = res("100", Some(HaState::Started));
    web.max_restart = Some(2);
    web.max_relocate = Some(1);
    web.group = Some("prod".into());
    web.comment = Some("web".into());
    let stored =
        s.c.set_ha_resources(vec![web, res("vm:101", None)])
            .unwrap();
    assert_eq!(stored[0].sid, "vm:100", "a bare VMID names the VM");
    assert_eq!(stored[0].kind.as_deref(), Some("vm"));

    let list = s.ok(Route::HaResourceList, &[]).await;
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    let digest = list[0]["digest"].as_str().unwrap().to_string();
    assert_eq!(digest.len(), 40);
    assert_eq!(list[1]["digest"], digest.as_str(), "one digest per file");
    assert_eq!(list[1]["sid"], "vm:101");
    assert!(list[1].get("state").is_none(), "only what was configured");
    assert_eq!(
        s.ok(Route::HaResourceList, &[("type", "ct")]).await,
        serde_json::json!([])
    );

    for sid in ["vm:100", "100"] {
        let r = s.ok(Route::HaResourceRead, &[("sid", sid)]).await;
        assert_eq!(r["sid"], "vm:100");
        assert_eq!(r["type"], "vm");
        assert_eq!(r["state"], "started");
        assert_eq!(r["max_restart"], 2);
        assert_eq!(r["max_relocate"], 1);
        assert_eq!(r["group"], "prod");
        assert_eq!(r["comment"], "web");
        assert_eq!(r["digest"], digest.as_str());
    }
    let e = s.err(Route::HaResourceRead, &[("sid", "vm:102")]).await;
    assert_eq!(
        (e.status, e.message.as_str()),
        (500, "no such resource 'vm:102'")
    );
    let e = s.err(Route::HaResourceRead, &[("sid", "555")]).await;
    assert_eq!(
        e.message,
        "unable do detect SID from VMID - VM/CT 555 does not exist"
    );
}

#[tokio::test]
async fn a_refused_configuration_leaves_the_old_one() {
    let s = fast();
    s.c.set_ha_resources(vec![res("vm:100", Some(HaState::Stopped))])
        .unwrap();
    let e =
        s.c.set_ha_resources(vec![res("vm:101", None), res("ct:102", None)])
            .unwrap_err();
    assert_eq!(e.to_string(), "unknown section type 'ct'");
    let e = s.c.set_ha_resources(vec![res("777", None)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unable do detect SID from VMID - VM/CT 777 does not exist"
    );
    let now = s.c.ha_resources();
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].sid, "vm:100");
    assert_eq!(now[0].state, Some(HaState::Stopped));
    s.c.set_ha_resources(Vec::new()).unwrap();
    assert!(s.c.ha_resources().is_empty());
}

#[tokio::test]
async fn destroy_of_an_ha_guest_needs_purge_which_removes_the_resource() {
    let s = fast();
    s.create_vm("pve1", "100", "ceph").await;
    s.c.set_ha_resources(vec![res("vm:100", Some(HaState::Started))])
        .unwrap();
    let e = s
        .err(Route::VmDestroy, &[("node", "pve1"), ("vmid", "100")])
        .await;
    assert_eq!(
        (e.status, e.message.as_str()),
        (
            500,
            "unable to remove VM 100 - used in HA resources and purge parameter not set."
        )
    );
    let upid = s
        .task(
            Route::VmDestroy,
            &[("node", "pve1"), ("vmid", "100"), ("purge", "1")],
        )
        .await;
    assert_eq!(s.wait(&upid).await, "OK");
    let log = s.log(&upid).await;
    assert!(log.contains(&"NOTE: removed VM 100 from HA resource configuration.".to_string()));
    assert!(s.c.ha_resources().is_empty());
    assert!(s.c.vm_node(100).is_none());
}

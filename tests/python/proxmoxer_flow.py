"""Drive the PVE simulator with proxmoxer, a third-party PVE client we did not write.

Usage: proxmoxer_flow.py HOST PORT TOKEN_FILE CA_FILE

Exits 0 when every step behaved as a real PVE host behaves; on the first deviation it prints
what was expected and what came back, and exits 1. Each step prints one line so the Rust test
that runs this script shows where it got to.
"""

import sys
import time

from proxmoxer import ProxmoxAPI, ResourceException
from proxmoxer.tools import Tasks

NODE = "pve1"


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def step(msg):
    print(f"ok: {msg}", flush=True)


def wait_ok(prox, upid, what):
    status = Tasks.blocking_status(prox, upid, timeout=60, polling_interval=0.05)
    if status is None:
        fail(f"{what}: task {upid} did not finish in 60 s")
    if status.get("exitstatus") != "OK":
        fail(f"{what}: task {upid} ended {status.get('exitstatus')!r}")
    return status


def expect_error(fn, status_code, reason, what):
    try:
        fn()
    except ResourceException as e:
        # proxmoxer puts the HTTP reason phrase (PVE's first message line) in `content`.
        if e.status_code != status_code or e.content != reason:
            fail(f"{what}: expected {status_code} {reason!r}, got {e.status_code} {e.content!r} errors={e.errors!r}")
        return e
    fail(f"{what}: expected HTTP {status_code} {reason!r}, call succeeded")


def main():
    host, port, token_file, ca_file = sys.argv[1:5]
    with open(token_file) as f:
        token = f.read().strip()  # user@realm!tokenid=secret
    user_token, secret = token.rsplit("=", 1)
    user, token_name = user_token.split("!", 1)
    prox = ProxmoxAPI(host, port=int(port), user=user, token_name=token_name,
                      token_value=secret, verify_ssl=ca_file, timeout=30)

    nodes = sorted(n["node"] for n in prox.nodes.get())
    if NODE not in nodes or any(prox.nodes(n).status.get()["cpuinfo"]["cpus"] < 1 for n in nodes):
        fail(f"node list {nodes!r}")
    step(f"nodes {nodes}")

    vmid = int(prox.cluster.nextid.get())
    upid = prox.nodes(NODE).qemu.post(vmid=vmid, name="px-base", memory=1024, cores=2,
                                      net0="virtio,bridge=vmbr0", scsi0="local-lvm:4",
                                      scsihw="virtio-scsi-single", agent="enabled=1")
    if not upid.startswith(f"UPID:{NODE}:") or f":qmcreate:{vmid}:root@pam!" not in upid:
        fail(f"create UPID {upid!r}")
    wait_ok(prox, upid, "create")
    step(f"created {vmid}")

    # A duplicate VMID is refused synchronously with PVE's exact text.
    expect_error(lambda: prox.nodes(NODE).qemu.post(vmid=vmid, memory=512), 500,
                 f"unable to create VM {vmid} - VM {vmid} already exists on node '{NODE}'",
                 "duplicate create")
    e = expect_error(lambda: prox.cluster.nextid.get(vmid=vmid), 400,
                     "Parameter verification failed.", "nextid of a taken VMID")
    if (e.errors or {}).get("vmid") != f"VM {vmid} already exists":
        fail(f"nextid errors {e.errors!r}")
    step("duplicate VMID refused with PVE's texts")

    clone_id = vmid + 1
    upid = prox.nodes(NODE).qemu(vmid).clone.post(newid=clone_id, name="px-clone", full=1)
    # The clone holds `lock: clone` while its task runs: config changes are refused.
    expect_error(lambda: prox.nodes(NODE).qemu(clone_id).config.put(cores=4), 500,
                 "VM is locked (clone)", "config of a VM being cloned")
    step("locked VM refused with PVE's text")
    wait_ok(prox, upid, "clone")
    step(f"cloned {vmid} -> {clone_id}")

    wait_ok(prox, prox.nodes(NODE).qemu(clone_id).status.start.post(), "start")
    cur = prox.nodes(NODE).qemu(clone_id).status.current.get()
    if cur["status"] != "running" or cur["name"] != "px-clone":
        fail(f"status/current {cur!r}")
    cfg = prox.nodes(NODE).qemu(clone_id).config.get()
    digest = cfg["digest"]
    if len(digest) != 40 or int(cfg["cores"]) != 2 or str(cfg["memory"]) != "1024":
        fail(f"config {cfg!r}")
    step(f"started {clone_id}, digest {digest}")

    # Optimistic concurrency: a stale digest is refused, the current one accepted.
    prox.nodes(NODE).qemu(clone_id).config.put(description="first", digest=digest)
    expect_error(lambda: prox.nodes(NODE).qemu(clone_id).config.put(description="second", digest=digest),
                 500, "checksum mismatch (file change by other user?)", "stale digest")
    step("digest enforced")

    wait_ok(prox, prox.nodes(NODE).qemu(clone_id).snapshot.post(snapname="before", description="px"), "snapshot")
    prox.nodes(NODE).qemu(clone_id).config.put(cores=4)
    snaps = {s["name"]: s for s in prox.nodes(NODE).qemu(clone_id).snapshot.get()}
    if "before" not in snaps or snaps["current"].get("parent") != "before":
        fail(f"snapshot list {snaps!r}")
    wait_ok(prox, prox.nodes(NODE).qemu(clone_id).snapshot("before").rollback.post(), "rollback")
    cores = int(prox.nodes(NODE).qemu(clone_id).config.get(current=1)["cores"])
    if cores != 2:
        fail(f"rollback left cores={cores}")
    step("snapshot and rollback")

    wait_ok(prox, prox.nodes(NODE).qemu(clone_id).status.stop.post(), "stop")
    if prox.nodes(NODE).qemu(clone_id).status.current.get()["status"] != "stopped":
        fail("VM not stopped")
    for v in (clone_id, vmid):
        wait_ok(prox, prox.nodes(NODE).qemu(v).delete(purge=1), f"destroy {v}")
    left = {int(v["vmid"]) for v in prox.nodes(NODE).qemu.get()}
    if vmid in left or clone_id in left:
        fail(f"destroyed VMs still listed: {left!r}")
    expect_error(lambda: prox.nodes(NODE).qemu(vmid).status.current.get(), 500,
                 f"Configuration file 'nodes/{NODE}/qemu-server/{vmid}.conf' does not exist",
                 "status of a destroyed VM")
    step("stopped and destroyed")
    print("PASS", flush=True)


if __name__ == "__main__":
    main()

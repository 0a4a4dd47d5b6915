//! The pvesh backend against fake `pvesh` shell scripts that record their argv and print canned
//! output: results on stdout (with a foreground task's log before the UPID), errors on stderr.

// Only built as a test; lets helpers panic like tests do (clippy `allow-unwrap-in-tests`).
#![cfg(test)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use pve::pvesh::{PveshBackend, PveshConfig};
use pve::{ApiReply, ApiRequest, Backend, Method, PveError};
use serde_json::json;
use tokio::sync::RwLock;

/// Writing a script while another test forks can leave the write descriptor open in that child
/// until it execs, and executing the script then fails with "Text file busy" (ETXTBSY). Scripts
/// are written under the write lock, calls run under the read lock.
static SPAWN_LOCK: LazyLock<RwLock<()>> = LazyLock::new(|| RwLock::new(()));

/// Run one call with the spawn lock held.
async fn call(backend: &PveshBackend, req: &ApiRequest) -> Result<ApiReply, PveError> {
    let _guard = SPAWN_LOCK.read().await;
    backend.call(req).await
}

/// A fake pvesh in a temporary directory; `body` runs after argv is saved, one per line.
struct FakePvesh {
    dir: tempfile::TempDir,
    backend: PveshBackend,
}

impl FakePvesh {
    async fn new(body: &str) -> Self {
        Self::with_timeout(body, Duration::from_secs(30)).await
    }

    async fn with_timeout(body: &str, timeout: Duration) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("pvesh");
        let script = format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$ARGS_FILE\"\n{body}\n");
        {
            let _guard = SPAWN_LOCK.write().await;
            std::fs::write(&program, script).unwrap();
        }
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let args_file = dir.path().join("args");
        let backend = PveshBackend::new(PveshConfig {
            program,
            env: vec![("ARGS_FILE".into(), args_file.display().to_string())],
            timeout,
        });
        Self { dir, backend }
    }

    async fn call(&self, req: &ApiRequest) -> Result<ApiReply, PveError> {
        call(&self.backend, req).await
    }

    fn args_file(&self) -> PathBuf {
        self.dir.path().join("args")
    }

    /// The argv the script received (after the program name).
    fn argv(&self) -> Vec<String> {
        read_lines(&self.args_file())
    }
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

const UPID: &str = "UPID:pve1:0000AB12:00C0FFEE:65000000:qmclone:100:root@pam:";

#[tokio::test]
async fn get_prints_a_json_list_and_receives_separate_args() {
    let fake =
        FakePvesh::new(r#"echo '[{"node":"pve1","status":"online"},{"node":"pve2"}]'"#).await;
    let req = ApiRequest::new(Method::Get, "/cluster/resources").param("type", "vm");

    let reply = fake.call(&req).await.unwrap();

    assert_eq!(
        reply.data,
        json!([{"node": "pve1", "status": "online"}, {"node": "pve2"}])
    );
    assert_eq!(reply.total, None);
    assert_eq!(
        fake.argv(),
        [
            "get",
            "/cluster/resources",
            "--type",
            "vm",
            "--output-format",
            "json"
        ]
    );
}

#[tokio::test]
async fn task_log_before_the_upid_is_skipped() {
    let fake = FakePvesh::new(&format!(
        "echo 'create full clone of drive scsi0 (local-lvm:vm-100-disk-0)'\n\
         echo 'transferred 1.0 GiB of 1.0 GiB (100.00%)'\n\
         echo '\"{UPID}\"'"
    ))
    .await;
    let req = ApiRequest::new(Method::Post, "/nodes/pve1/qemu/100/clone")
        .param("newid", "101")
        .param("name", "web 1")
        .param("description", "");

    let reply = fake.call(&req).await.unwrap();

    assert_eq!(reply.data, json!(UPID));
    assert_eq!(
        fake.argv(),
        [
            "create",
            "/nodes/pve1/qemu/100/clone",
            "--newid",
            "101",
            "--name",
            "web 1",
            "--description",
            "",
            "--output-format",
            "json"
        ]
    );
}

#[tokio::test]
async fn put_and_delete_use_set_and_delete_with_a_decoded_path() {
    let fake = FakePvesh::new("").await;
    let put = ApiRequest::new(Method::Put, "/nodes/pve1/qemu/100/config").param("memory", "2048");
    assert_eq!(fake.call(&put).await.unwrap().data, serde_json::Value::Null);
    assert_eq!(
        fake.argv(),
        [
            "set",
            "/nodes/pve1/qemu/100/config",
            "--memory",
            "2048",
            "--output-format",
            "json"
        ]
    );

    let upid_path = format!("/nodes/pve1/tasks/{}", pve::request::segment(UPID));
    let delete = ApiRequest::new(Method::Delete, upid_path);
    fake.call(&delete).await.unwrap();
    assert_eq!(
        fake.argv(),
        [
            "delete",
            &format!("/nodes/pve1/tasks/{UPID}"),
            "--output-format",
            "json"
        ]
    );
}

#[tokio::test]
async fn no_output_is_null() {
    let fake = FakePvesh::new("exit 0").await;
    let req = ApiRequest::new(Method::Post, "/nodes/pve1/qemu/100/status/start");
    assert_eq!(fake.call(&req).await.unwrap().data, serde_json::Value::Null);
}

#[tokio::test]
async fn parameter_errors_on_stderr_become_a_typed_400() {
    let fake = FakePvesh::new(
        "echo '400 Parameter verification failed.' >&2\n\
         echo 'vmid: VM 2004 already exists' >&2\n\
         echo 'pvesh create <api_path> [OPTIONS] [FORMAT_OPTIONS]' >&2\n\
         exit 255",
    )
    .await;
    let req = ApiRequest::new(Method::Post, "/nodes/pve1/qemu").param("vmid", "2004");

    let err = fake.call(&req).await.unwrap_err();

    let PveError::Api {
        method,
        path,
        status,
        reason,
        message,
        errors,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        (*method, path.as_str(), *status),
        ("POST", "/nodes/pve1/qemu", 400)
    );
    assert_eq!(reason, "Parameter verification failed.");
    assert_eq!(message, "Parameter verification failed.");
    assert_eq!(errors.len(), 1);
    assert_eq!(err.param_error("vmid"), Some("VM 2004 already exists"));
    assert!(err.is_already_exists());
}

#[tokio::test]
async fn plain_die_is_a_500_with_the_whole_message() {
    let fake = FakePvesh::new("echo 'VM 100 is locked (clone)' >&2\nexit 255").await;
    let req = ApiRequest::new(Method::Post, "/nodes/pve1/qemu/100/status/start");
    let err = fake.call(&req).await.unwrap_err();
    assert_eq!(err.status(), Some(500));
    assert_eq!(err.message(), Some("VM 100 is locked (clone)"));
    assert_eq!(err.locked(), Some("clone"));
}

#[tokio::test]
async fn failure_without_any_message_is_a_pvesh_error() {
    let fake = FakePvesh::new("exit 3").await;
    let err = fake
        .backend
        .call(&ApiRequest::new(Method::Get, "/version"))
        .await
        .unwrap_err();
    let PveError::Pvesh { args, reason } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(args, "get /version --output-format json");
    assert!(reason.contains("status 3"), "{reason}");
}

#[tokio::test]
async fn non_json_result_is_a_decode_error() {
    let fake = FakePvesh::new("echo 'no JSON here'").await;
    let err = fake
        .backend
        .call(&ApiRequest::new(Method::Get, "/version"))
        .await
        .unwrap_err();
    assert!(matches!(err, PveError::Decode { .. }), "{err:?}");
}

#[tokio::test]
async fn exit_zero_after_a_failed_task_still_returns_the_upid() {
    // pvesh exits 0 when the foreground task failed: the caller learns it from the task status.
    let fake = FakePvesh::new(&format!(
        "echo 'TASK ERROR: VM 100 not running' >&2\necho '\"{UPID}\"'"
    ))
    .await;
    let req = ApiRequest::new(Method::Post, "/nodes/pve1/qemu/100/status/shutdown");
    assert_eq!(fake.call(&req).await.unwrap().data, json!(UPID));
}

#[tokio::test]
async fn password_parameters_are_refused_before_running_anything() {
    let fake = FakePvesh::new("echo null").await;
    for key in ["password", "cipassword", "new-password"] {
        let req = ApiRequest::new(Method::Put, "/nodes/pve1/qemu/100/config").param(key, "s3cret");
        let err = fake.call(&req).await.unwrap_err();
        let PveError::Invalid { field, reason } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(field, key);
        assert!(reason.contains("HTTPS backend"), "{reason}");
        assert!(!err.to_string().contains("s3cret"));
    }
    assert!(!fake.args_file().exists(), "the script must not have run");
}

#[tokio::test]
async fn hanging_pvesh_times_out() {
    let fake = FakePvesh::with_timeout("exec sleep 30", Duration::from_millis(300)).await;
    let err = fake
        .backend
        .call(&ApiRequest::new(Method::Get, "/version"))
        .await
        .unwrap_err();
    let PveError::Timeout { timeout, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*timeout, Duration::from_millis(300));
}

#[tokio::test]
async fn missing_program_is_a_pvesh_error() {
    let dir = tempfile::tempdir().unwrap();
    let backend = PveshBackend::new(PveshConfig {
        program: dir.path().join("no-such-pvesh"),
        ..PveshConfig::default()
    });
    let err = call(&backend, &ApiRequest::new(Method::Get, "/version"))
        .await
        .unwrap_err();
    assert!(matches!(err, PveError::Pvesh { .. }), "{err:?}");
}

#[tokio::test]
async fn backend_runs_as_root_with_tasks_in_the_foreground() {
    let backend = PveshBackend::new(PveshConfig::default());
    assert!(backend.is_root());
    assert!(backend.tasks_run_in_foreground());
    assert_eq!(backend.endpoint(), "pvesh");
    assert_eq!(backend.api_user().as_deref(), Some("root@pam"));
    assert_eq!(PveshConfig::default().program, PathBuf::from("pvesh"));
}

//! Worker tasks as PVE records them: the UPID (`UPID:node:PID:PSTART:STARTTIME:type:id:user:`),
//! the log whose last line is `TASK OK` / `TASK WARNINGS: n` / `TASK ERROR: msg`, and the
//! status/list JSON of the task endpoints.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::cluster::clock::log_stamp;

/// A decoded UPID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Upid {
    pub(crate) node: String,
    pub(crate) pid: u32,
    pub(super) pstart: u64,
    pub(super) starttime: i64,
    pub(crate) kind: String,
    pub(crate) id: String,
    pub(crate) user: String,
}

impl Upid {
    /// `UPID:<node>:<pid %08X>:<pstart %08X>:<starttime %08X>:<type>:<id>:<user>:`.
    pub(super) fn encode(&self) -> String {
        format!(
            "UPID:{}:{:08X}:{:08X}:{:08X}:{}:{}:{}:",
            self.node, self.pid, self.pstart, self.starttime, self.kind, self.id, self.user
        )
    }

    /// `PVE::Tools::upid_decode`; `None` when unparsable.
    pub(crate) fn decode(s: &str) -> Option<Self> {
        let rest = s.strip_prefix("UPID:")?.strip_suffix(':')?;
        let f: Vec<&str> = rest.split(':').collect();
        if f.len() != 7 {
            return None;
        }
        let node_ok = !f[0].is_empty()
            && f[0].chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !f[0].starts_with('-')
            && !f[0].ends_with('-');
        let hex = |s: &str, lens: &[usize]| {
            lens.contains(&s.len()) && s.chars().all(|c| c.is_ascii_hexdigit())
        };
        let bad = |s: &str| s.chars().any(|c| c.is_whitespace() || c == '/');
        if !node_ok
            || !hex(f[1], &[8])
            || !hex(f[2], &[8, 9])
            || !hex(f[3], &[8])
            || f[4].is_empty()
            || bad(f[4])
            || bad(f[5])
            || f[6].is_empty()
            || bad(f[6])
        {
            return None;
        }
        Some(Self {
            node: f[0].to_string(),
            pid: u32::from_str_radix(f[1], 16).ok()?,
            pstart: u64::from_str_radix(f[2], 16).ok()?,
            starttime: i64::from_str_radix(f[3], 16).ok()?,
            kind: f[4].to_string(),
            id: f[5].to_string(),
            user: f[6].to_string(),
        })
    }

    /// `user` and `tokenid` as the task endpoints split a token user (`root@pam!fleet`).
    fn user_fields(&self, obj: &mut Map<String, Value>) {
        match self.user.split_once('!') {
            Some((user, token)) => {
                obj.insert("user".into(), Value::from(user));
                obj.insert("tokenid".into(), Value::from(token));
            }
            None => {
                obj.insert("user".into(), Value::from(self.user.as_str()));
            }
        }
    }

    fn base_json(&self, upid: &str) -> Map<String, Value> {
        let mut o = Map::new();
        o.insert("upid".into(), Value::from(upid));
        o.insert("node".into(), Value::from(self.node.as_str()));
        o.insert("pid".into(), Value::from(self.pid));
        o.insert("pstart".into(), Value::from(self.pstart));
        o.insert("starttime".into(), Value::from(self.starttime));
        o.insert("type".into(), Value::from(self.kind.as_str()));
        o.insert("id".into(), Value::from(self.id.as_str()));
        self.user_fields(&mut o);
        o
    }
}

/// A task's log being written.
#[derive(Debug, Default, Clone)]
pub(crate) struct TaskLog {
    pub(crate) lines: Vec<String>,
    pub(super) warnings: u32,
}

impl TaskLog {
    /// A plain line.
    pub(crate) fn line(&mut self, s: impl Into<String>) {
        self.lines.push(s.into());
    }

    /// `log_warn`: `WARN: msg`, counted for `TASK WARNINGS: n`.
    pub(crate) fn warn(&mut self, s: impl AsRef<str>) {
        self.warnings += 1;
        self.lines.push(format!("WARN: {}", s.as_ref()));
    }

    /// A migration-style line with a timestamp.
    pub(crate) fn stamped(&mut self, unix: i64, s: impl AsRef<str>) {
        self.lines
            .push(format!("{} {}", log_stamp(unix), s.as_ref()));
    }
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskEnd {
    pub(super) endtime: i64,
    /// `OK`, `WARNINGS: n` or the error message.
    pub(crate) exitstatus: String,
}

/// One task.
pub(crate) struct Task {
    pub(crate) upid: Upid,
    pub(crate) upid_text: String,
    pub(crate) log: TaskLog,
    pub(crate) end: Option<TaskEnd>,
    /// Scaled seconds of work left; frozen while the node is down.
    pub(super) remaining: f64,
    /// VM the task acts on (for fault matching).
    pub(crate) vmid: Option<u32>,
}

impl Task {
    /// End the task: append the final line and record the exit status.
    pub(super) fn finish(&mut self, result: Result<(), String>, endtime: i64) {
        let exitstatus = match result {
            Ok(()) if self.log.warnings == 0 => {
                self.log.line("TASK OK");
                "OK".to_string()
            }
            Ok(()) => {
                let w = format!("WARNINGS: {}", self.log.warnings);
                self.log.line(format!("TASK {w}"));
                w
            }
            Err(msg) => {
                let msg = msg.trim_end().replace('\n', " ");
                self.log.line(format!("TASK ERROR: {msg}"));
                msg
            }
        };
        self.end = Some(TaskEnd {
            endtime,
            exitstatus,
        });
    }

    /// The worker died with its host: no final log line, so `read_status` reports
    /// `unexpected status`.
    pub(super) fn lost(&mut self, endtime: i64) {
        self.end = Some(TaskEnd {
            endtime,
            exitstatus: "unexpected status".into(),
        });
    }

    /// `GET .../tasks/{upid}/status`.
    pub(super) fn status_json(&self) -> Value {
        let mut o = self.upid.base_json(&self.upid_text);
        match &self.end {
            None => {
                o.insert("status".into(), Value::from("running"));
            }
            Some(end) => {
                o.insert("status".into(), Value::from("stopped"));
                o.insert("exitstatus".into(), Value::from(end.exitstatus.as_str()));
            }
        }
        Value::Object(o)
    }

    /// An entry of the node/cluster task lists (`status: RUNNING` for active tasks on the
    /// node list; the cluster list leaves it out).
    pub(super) fn list_json(&self, running_status: bool) -> Value {
        let mut o = self.upid.base_json(&self.upid_text);
        match &self.end {
            None if running_status => {
                o.insert("status".into(), Value::from("RUNNING"));
            }
            None => {}
            Some(end) => {
                o.insert("endtime".into(), Value::from(end.endtime));
                o.insert("status".into(), Value::from(end.exitstatus.as_str()));
            }
        }
        Value::Object(o)
    }
}

/// All tasks of the cluster.
#[derive(Default)]
pub(crate) struct TaskRegistry {
    tasks: Vec<Task>,
    index: HashMap<String, usize>,
}

impl TaskRegistry {
    /// Register a new running task.
    pub(super) fn insert(&mut self, upid: Upid, vmid: Option<u32>) -> String {
        let text = upid.encode();
        self.index.insert(text.clone(), self.tasks.len());
        self.tasks.push(Task {
            upid,
            upid_text: text.clone(),
            log: TaskLog::default(),
            end: None,
            remaining: 0.0,
            vmid,
        });
        text
    }

    /// A task by its UPID text.
    pub(crate) fn get(&self, upid: &str) -> Option<&Task> {
        self.index.get(upid).map(|&i| &self.tasks[i])
    }

    /// A task by its UPID text, mutable.
    pub(crate) fn get_mut(&mut self, upid: &str) -> Option<&mut Task> {
        self.index
            .get(upid)
            .copied()
            .map(move |i| &mut self.tasks[i])
    }

    /// Every task, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upid_encodes_and_decodes() {
        let u = Upid {
            node: "pve1".into(),
            pid: 0xC346,
            pstart: 0x165A0CE4,
            starttime: 0x68D7279C,
            kind: "qmclone".into(),
            id: "9000".into(),
            user: "root@pam!fleet".into(),
        };
        let s = u.encode();
        assert_eq!(
            s,
            "UPID:pve1:0000C346:165A0CE4:68D7279C:qmclone:9000:root@pam!fleet:"
        );
        assert_eq!(Upid::decode(&s), Some(u));
        assert!(
            Upid::decode("UPID:pve1:0000C346:165A0CE4:68D7279C:qmclone:9000:root@pam").is_none()
        );
        assert!(Upid::decode("nonsense").is_none());
        assert!(
            Upid::decode("UPID:example-node:0000C346:165A0CE4:68D7279C:aptupdate::root@pam:")
                .is_some()
        );
    }

    #[test]
    fn finish_writes_the_last_line() {
        let mut reg = TaskRegistry::default();
        let u = Upid::decode("UPID:pve1:00000001:00000002:00000003:qmstart:100:root@pam:").unwrap();
        let id = reg.insert(u.clone(), Some(100));
        let t = reg.get_mut(&id).unwrap();
        t.log.warn("careful");
        t.finish(Ok(()), 5);
        assert_eq!(t.log.lines.last().unwrap(), "TASK WARNINGS: 1");
        assert_eq!(t.status_json()["exitstatus"], "WARNINGS: 1");
        let id2 = reg.insert(Upid { pid: 2, ..u }, Some(100));
        let t2 = reg.get_mut(&id2).unwrap();
        t2.finish(Err("boom\nsecond".into()), 6);
        assert_eq!(t2.log.lines, vec!["TASK ERROR: boom second"]);
        assert_eq!(t2.status_json()["status"], "stopped");
        assert_eq!(t2.list_json(true)["endtime"], 6);
    }
}

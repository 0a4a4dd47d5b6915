//! `GET /nodes/{node}/tasks/{upid}/log?download=1` over HTTPS, as pve-manager's
//! `read_task_log` answers it: the task file itself as `text/plain` with a
//! `task-<node>-<type>-<start>.log` attachment name, refused with `start` or `limit`.

use crate::common;

use std::time::{Duration, Instant};

use common::{FormBody, Served, TOKEN, body_of, serve, status_line, token_header};
use serde_json::{Value, json};

async fn get(s: &Served, path: &str) -> reqwest::Response {
    s.client()
        .get(s.url(path))
        .header("Authorization", token_header(TOKEN))
        .send()
        .await
        .unwrap()
}

/// Create VM `vmid` on pve1 and wait until its task has ended; the UPID.
async fn finished_create(s: &Served, vmid: &str) -> String {
    let resp = s
        .client()
        .post(s.url("/nodes/pve1/qemu"))
        .header("Authorization", token_header(TOKEN))
        .form_body(&[("vmid", vmid), ("name", "dl"), ("memory", "512")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let upid = resp.json::<Value>().await.unwrap()["data"]
        .as_str()
        .unwrap()
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let st: Value = get(s, &format!("/nodes/pve1/tasks/{upid}/status"))
            .await
            .json()
            .await
            .unwrap();
        if st["data"]["status"] == "stopped" {
            return upid;
        }
        assert!(Instant::now() < deadline, "task {upid} still running");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Unix time of `YYYY-MM-DDTHH:MM:SSZ`.
fn unix_of(stamp: &str) -> i64 {
    let n = |range: std::ops::Range<usize>| stamp[range].parse::<i64>().unwrap();
    days_from_civil(n(0..4), n(5..7), n(8..10)) * 86_400
        + n(11..13) * 3600
        + n(14..16) * 60
        + n(17..19)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn download_sends_the_task_file_as_plain_text() {
    let s = serve().await;
    let upid = finished_create(&s, "220").await;
    let log = format!("/nodes/pve1/tasks/{upid}/log");

    let paged: Value = get(&s, &format!("{log}?limit=0"))
        .await
        .json()
        .await
        .unwrap();
    let lines: Vec<&str> = paged["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["t"].as_str().unwrap())
        .collect();
    assert_eq!(lines.last(), Some(&"TASK OK"), "{paged}");

    let resp = get(&s, &format!("{log}?download=1")).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/plain");
    let disposition = resp.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_string();
    let body = resp.text().await.unwrap();
    // The file: every line with its newline, the status line last.
    let mut file = lines.join("\n");
    file.push('\n');
    assert_eq!(body, file);

    // attachment; filename="task-<node>-<type>-<strftime %FT%TZ of the start time>.log"
    let re = regex::Regex::new(
        r#"^attachment; filename="task-pve1-qmcreate-(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\.log"$"#,
    )
    .unwrap();
    let stamp = re
        .captures(&disposition)
        .unwrap_or_else(|| panic!("{disposition}"))[1]
        .to_string();
    let starttime = i64::from_str_radix(upid.split(':').nth(4).unwrap(), 16).unwrap();
    assert_eq!(unix_of(&stamp), starttime, "{disposition} for {upid}");

    // download=0 is the paged JSON answer.
    let resp = get(&s, &format!("{log}?download=0&limit=1")).await;
    assert_eq!(
        resp.headers()["content-type"],
        "application/json;charset=UTF-8"
    );
    let first: Value = resp.json().await.unwrap();
    assert_eq!(first["data"], json!([{"n": 1, "t": lines[0]}]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn download_refuses_start_and_limit_like_pve() {
    let s = serve().await;
    let upid = finished_create(&s, "221").await;
    let message = "'download' cannot be used together with 'start' or 'limit' parameters";
    for query in [
        "download=1&start=0",
        "download=1&limit=10",
        "download=1&start=2&limit=0",
    ] {
        let raw = s
            .raw(&format!(
                "GET /api2/json/nodes/pve1/tasks/{upid}/log?{query} HTTP/1.1\r\nHost: x\r\n\
                 Authorization: {}\r\nConnection: close\r\n\r\n",
                token_header(TOKEN)
            ))
            .await;
        assert_eq!(
            status_line(&raw),
            format!("HTTP/1.1 500 {message}"),
            "{query}"
        );
        let body: Value = serde_json::from_str(body_of(&raw)).unwrap();
        assert_eq!(
            body,
            json!({"data": null, "message": format!("{message}\n")}),
            "{query}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn download_of_a_task_without_a_file_fails_to_open_it() {
    let s = serve().await;
    let unknown = "UPID:pve1:0000ABCD:00112233:6800000A:qmstart:999:root@pam:";
    let resp = get(&s, &format!("/nodes/pve1/tasks/{unknown}/log?download=1")).await;
    assert_eq!(resp.status(), 500);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["message"],
        format!(
            "Could not open file '/var/log/pve/tasks/A/{unknown}' - No such file or directory\n"
        )
    );
    let resp = get(&s, "/nodes/pve1/tasks/UPID:bogus/log?download=1").await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["errors"],
        json!({"upid": "unable to parse worker upid"})
    );
}

//! The web dashboard against the demo's fleet (`pvefleet-lab demo`, real processes), in a real
//! headless Chromium: the demo's login link opens a session; the overview and a guest page are
//! drawn (and photographed for docs/, light and dark); a guest is stopped from its page and seen
//! stopped; a VIP owner and a killed host change on screen without a reload; a guest description
//! full of markup stays text; and, as plain HTTPS requests, nothing answers without a session,
//! nothing acts without the session's CSRF token or with a read-only session, and a login link
//! works once.

use std::time::Duration;

use bootstrap::cli_config::CliConfig;
use client::AdminClient;
use protocol::admin::{DashboardLoginCreate, ReadMode, VipMove, VipStatus, VmApply, VmGet};
use protocol::spec::DesiredState;
use pvefleet_tests::browser::{self, Browser};
use pvefleet_tests::dashboard_http::{DashboardHttp, hidden_input};
use pvefleet_tests::demo_process::DemoProcess;
use pvefleet_tests::test_lab::{install_crypto, test_runtime};
use reqwest::StatusCode;

/// A description that would run script if it were inserted as markup.
const EVIL: &str = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">\
                    <b>bold?</b> & \"quotes\" 'single'";
/// How long a change may take to show when it only waits for the page's stream.
const LIVE: Duration = Duration::from_secs(10);
/// How long a host's loss takes to be declared (its lease, the new leader's wait, fencing).
const HOST_LOSS: Duration = Duration::from_secs(90);

async fn login_token(admin: &AdminClient, read_only: bool) -> String {
    admin
        .call(&DashboardLoginCreate {
            read_only,
            ttl_secs: Some(600),
            issuer: None,
        })
        .await
        .expect("mint a login")
        .token
}

#[test]
fn the_dashboard_shows_the_demo_fleet_live_and_acts_only_for_a_session() {
    install_crypto();
    test_runtime().block_on(async {
        let tmp = tempfile::tempdir().unwrap();
        let demo = DemoProcess::start(&tmp.path().join("demo"), &[]).await;
        let config = CliConfig::load(&demo.cli_config()).unwrap();
        let admin = AdminClient::from_config(&config).unwrap();
        let ca_pem = std::fs::read_to_string(&config.ca).unwrap();
        let base = demo.dashboard_base();
        let http = DashboardHttp::new(&ca_pem, &base, 1);

        // Nothing of the dashboard without a session: pages lead to the login, the rest is refused.
        for path in [
            "/",
            "/guests",
            "/guests/web-1",
            "/hosts/pve-a",
            "/vips",
            "/events",
        ] {
            for cookie in [None, Some("forged-session")] {
                let a = http.get(path, cookie).await;
                assert_eq!(a.status, StatusCode::SEE_OTHER, "{path}: {a:?}");
                assert_eq!(a.location.as_deref(), Some("/login"), "{path}");
                assert!(
                    !a.body.contains("web-1") && !a.body.contains("pve-a"),
                    "{a:?}"
                );
            }
        }
        assert_eq!(
            http.get("/live?page=%2F", None).await.status,
            StatusCode::UNAUTHORIZED
        );
        let acted = http
            .post("/act", &[("action", "stop"), ("target", "db-1")], None)
            .await;
        assert_eq!(acted.status, StatusCode::UNAUTHORIZED, "{acted:?}");
        let login = http.get("/login", None).await;
        assert_eq!(login.status, StatusCode::OK);
        assert!(
            !login.body.contains("web-1"),
            "the login page shows no fleet data"
        );

        // A guest whose description is markup.
        let mut monitor = admin
            .call(&VmGet {
                name: "monitor-1".into(),
                read: ReadMode::Linearizable,
            })
            .await
            .unwrap();
        monitor.spec.description = EVIL.to_string();
        admin.call(&VmApply { spec: monitor.spec }).await.unwrap();

        // A session by plain requests: a login link works once; acting needs the CSRF token.
        let token = login_token(&admin, false).await;
        let cookie = http.login(&token).await;
        let again = http.post("/login", &[("token", &token)], None).await;
        assert_eq!(again.status, StatusCode::UNAUTHORIZED, "{again:?}");
        assert!(again.body.contains("already used"), "{}", again.body);
        let confirm = http
            .get("/confirm?action=stop&target=db-1", Some(&cookie))
            .await;
        assert_eq!(confirm.status, StatusCode::OK, "{confirm:?}");
        let csrf = hidden_input(&confirm.body, "csrf").expect("a CSRF token");
        let request = hidden_input(&confirm.body, "request").expect("a request id");
        let wrong_csrf = "x".repeat(csrf.len());
        for form in [
            vec![
                ("action", "stop"),
                ("target", "db-1"),
                ("request", &request),
            ],
            vec![
                ("action", "stop"),
                ("target", "db-1"),
                ("request", &request),
                ("csrf", &wrong_csrf),
            ],
        ] {
            let a = http.post("/act", &form, Some(&cookie)).await;
            assert_eq!(a.status, StatusCode::FORBIDDEN, "{a:?}");
            assert!(a.body.contains("CSRF"), "{}", a.body);
        }
        let db1 = admin
            .call(&VmGet {
                name: "db-1".into(),
                read: ReadMode::Linearizable,
            })
            .await
            .unwrap();
        assert_eq!(db1.spec.state, DesiredState::Running, "nothing was done");

        // A read-only session looks but cannot act, not even with its own CSRF token.
        let ro = http.login(&login_token(&admin, true).await).await;
        let page = http.get("/guests/db-1", Some(&ro)).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(
            !page.body.contains("act-stop"),
            "no action offered read-only"
        );
        let ro_csrf = hidden_input(&page.body, "csrf").expect("the logout form's token");
        assert_eq!(
            http.get("/confirm?action=stop&target=db-1", Some(&ro))
                .await
                .status,
            StatusCode::FORBIDDEN
        );
        let a = http
            .post(
                "/act",
                &[
                    ("action", "stop"),
                    ("target", "db-1"),
                    ("request", &request),
                    ("csrf", &ro_csrf),
                ],
                Some(&ro),
            )
            .await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{a:?}");

        // The browser: the demo's own link logs in and lands on the overview.
        let browser = Browser::start(1280, 900).await;
        browser.goto(&demo.login_link()).await;
        browser
            .wait_text("#summary", LIVE, "the overview after login", |t| {
                t.contains("hosts online")
            })
            .await;
        assert_eq!(browser.path().await, "/");
        browser
            .wait_text("#conn", LIVE, "the live stream", |t| t == "live")
            .await;
        let shots = browser::screenshot_dir();
        browser
            .screenshot(&shots.join("dashboard-overview-light.png"))
            .await;
        browser.goto(&format!("{base}/theme?set=dark&back=/")).await;
        browser
            .wait_text("#conn", LIVE, "live again", |t| t == "live")
            .await;
        browser
            .screenshot(&shots.join("dashboard-overview-dark.png"))
            .await;
        browser.goto(&format!("{base}/guests/web-1")).await;
        browser
            .wait_text("#phase", LIVE, "web-1 runs", |t| t == "running")
            .await;
        browser
            .screenshot(&shots.join("dashboard-guest-dark.png"))
            .await;
        browser
            .goto(&format!("{base}/theme?set=light&back=/guests/web-1"))
            .await;
        browser
            .wait_text("#phase", LIVE, "web-1 runs", |t| t == "running")
            .await;
        browser
            .screenshot(&shots.join("dashboard-guest-light.png"))
            .await;

        // On a phone: one column, nothing wider than the screen.
        browser
            .client()
            .set_window_size(390, 844)
            .await
            .expect("phone size");
        browser.goto(&format!("{base}/")).await;
        browser
            .wait_text("#summary", LIVE, "the overview", |t| t.contains("hosts online"))
            .await;
        let fits = browser
            .eval("return document.documentElement.scrollWidth <= window.innerWidth + 1;")
            .await;
        assert_eq!(fits, serde_json::json!(true), "the overview fits a phone");
        browser
            .screenshot(&shots.join("dashboard-overview-phone.png"))
            .await;
        browser
            .client()
            .set_window_size(1280, 900)
            .await
            .expect("desktop size");

        // The HA scenario runner's reports in the member's scenario directory.
        let reports = std::path::PathBuf::from(demo.ready["dir"].as_str().expect("dir"))
            .join("scenarios");
        std::fs::create_dir_all(&reports).unwrap();
        std::fs::write(
            reports.join("kill-a-host.json"),
            r#"{"scenario":"kill-a-host","description":"<i>a host dies</i>","end":"expectations_met",
               "violations":[],"expectations":[{"text":"web-1 runs elsewhere","met":true}]}"#,
        )
        .unwrap();
        browser.goto(&format!("{base}/scenarios")).await;
        let run = browser
            .wait_text(".run", LIVE, "the scenario report", |t| t.contains("kill-a-host"))
            .await;
        assert!(run.contains("passed") && run.contains("<i>a host dies</i>"), "{run}");

        // A guest stopped from its page, and seen stopped.
        browser.goto(&format!("{base}/guests/web-1")).await;
        browser.click("#act-stop").await;
        browser
            .wait_text("h1", LIVE, "the confirmation", |t| t == "Confirm")
            .await;
        browser.click("#confirm").await;
        browser
            .wait_text("#notice", LIVE, "the outcome", |t| t.contains("stop web-1"))
            .await;
        browser
            .wait_text("#phase", Duration::from_secs(60), "web-1 stops", |t| {
                t == "stopped"
            })
            .await;
        let web1 = admin
            .call(&VmGet {
                name: "web-1".into(),
                read: ReadMode::Linearizable,
            })
            .await
            .unwrap();
        assert_eq!(web1.spec.state, DesiredState::Stopped);

        // Markup in a description is text.
        browser.goto(&format!("{base}/guests/monitor-1")).await;
        let shown = browser
            .wait_text("#description", LIVE, "the description", |t| {
                t.contains("script")
            })
            .await;
        assert_eq!(shown, EVIL, "shown exactly as written");
        let inert = browser
            .eval(
                "return [typeof window.__pwned, \
                 document.querySelectorAll('#description *').length];",
            )
            .await;
        assert_eq!(inert, serde_json::json!(["undefined", 0]), "nothing ran");

        // A VIP owner changes on screen without a reload.
        browser.goto(&format!("{base}/vips")).await;
        let before = browser
            .wait_text("#vip-web .owner", LIVE, "the VIP's owner", |t| {
                !t.is_empty()
            })
            .await;
        browser.eval("window.__stay = 42; return 0;").await;
        let to = if before == "pve-e" { "pve-d" } else { "pve-e" };
        admin
            .call(&VipMove {
                name: "web".into(),
                host: to.into(),
            })
            .await
            .unwrap();
        browser
            .wait_text("#vip-web .owner", LIVE, "the VIP moved", |t| t == to)
            .await;
        assert_eq!(
            browser.eval("return window.__stay;").await,
            serde_json::json!(42),
            "the page was not reloaded"
        );

        // A host killed: its tile turns, and (when it held the VIP) the VIP fails over, live.
        browser.goto(&format!("{base}/")).await;
        browser
            .wait_text("#host-pve-e .state", LIVE, "pve-e online", |t| {
                t == "online"
            })
            .await;
        browser.eval("window.__stay = 43; return 0;").await;
        let pid = demo.ready["dashboard"]["host_pid"].as_u64().expect("pid");
        assert_eq!(demo.ready["dashboard"]["host"], "pve-e");
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        browser
            .wait_text("#host-pve-e .state", HOST_LOSS, "pve-e lost", |t| {
                t == "unreachable" || t == "fenced"
            })
            .await;
        assert_eq!(
            browser.eval("return window.__stay;").await,
            serde_json::json!(43),
            "the page was not reloaded"
        );
        if to == "pve-e" {
            let deadline = std::time::Instant::now() + HOST_LOSS;
            loop {
                let vips = admin.call(&VipStatus { name: None }).await.unwrap();
                let owner = vips.vips[0].owner_name.clone();
                if owner.as_deref().is_some_and(|o| o != "pve-e") {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the VIP stayed on pve-e"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            browser.goto(&format!("{base}/vips")).await;
            browser
                .wait_text("#vip-web .owner", LIVE, "the VIP failed over", |t| {
                    t != "pve-e" && t != "none"
                })
                .await;
        }

        // The page says when it lost its stream: the member serving it dies.
        browser.goto(&format!("{base}/")).await;
        browser
            .wait_text("#conn", LIVE, "live", |t| t == "live")
            .await;
        let member = demo.member_pid(0);
        std::process::Command::new("kill")
            .args(["-KILL", &member.to_string()])
            .status()
            .unwrap();
        browser
            .wait_text("#conn", LIVE, "the lost connection shown", |t| {
                t.contains("lost")
            })
            .await;
        browser.close().await;
        admin.close().await;
        demo.stop().await;
    });
}

//! A real headless browser for the dashboard's tests and benchmark: Debian's `chromium`, driven
//! over WebDriver by its `chromedriver` (package `chromium-driver`, installed by `.ci/run` and
//! `make browser-deps`), from Rust with `fantoccini`.
//!
//! ```text
//!  test ──fantoccini (HTTP, loopback)──▶ chromedriver ──▶ chromium --headless ──HTTPS──▶ dashboard
//! ```
//!
//! The browser may reach loopback only: every other host resolves to nothing and goes to a
//! dead proxy, and the background services (updates, sync, safe browsing...) are off. It runs as
//! root without its sandbox (CI runs as root; the pages it opens are our own). The driver runs
//! in a process group of its own, which the browser it starts inherits: the whole group is
//! killed when the [`Browser`] is closed or dropped, also when a test fails (killing the driver
//! alone would leave the browser running). The browser's profile, caches, scratch files and
//! crash database are in a temporary directory removed with it, never under `$HOME` or `/tmp`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use tokio::process::{Child, Command};

/// The driver Debian's `chromium-driver` installs.
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// The browser Debian's `chromium` installs.
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// How long the driver may take to answer its first status request.
const DRIVER_START: Duration = Duration::from_secs(20);

/// A headless Chromium, its driver, and its own profile directory.
pub struct Browser {
    client: Client,
    driver: Child,
    /// The driver's process group (its pid), the browser's too.
    group: Option<rustix::process::Pid>,
    _profile: tempfile::TempDir,
}

/// Whether this machine has the browser and its driver (CI installs them; a developer machine
/// without them gets told to run `make browser-deps`).
pub fn installed() -> bool {
    Path::new(CHROMEDRIVER).exists() && Path::new(CHROMIUM).exists()
}

impl Browser {
    /// Starts the driver on a free loopback port and opens a headless browser of
    /// `width`×`height` pixels.
    pub async fn start(width: u32, height: u32) -> Browser {
        assert!(
            installed(),
            "{CHROMEDRIVER} and {CHROMIUM} are needed: `make browser-deps` (apt-get install \
             chromium chromium-driver)"
        );
        let port = lab::layout::free_loopback_addr()
            .expect("a free port")
            .port();
        let profile = tempfile::Builder::new()
            .prefix("pvefleet-chromium-")
            .tempdir()
            .expect("profile dir");
        let home = profile.path().join("home");
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .process_group(0)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            // The driver's and the browser's scratch directories too.
            .env("TMPDIR", profile.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start chromedriver");
        let group = driver
            .id()
            .and_then(|pid| rustix::process::Pid::from_raw(i32::try_from(pid).ok()?));
        let url = format!("http://127.0.0.1:{port}");
        let args = [
            "--headless=new".to_string(),
            "--no-sandbox".to_string(),
            "--disable-gpu".to_string(),
            "--disable-dev-shm-usage".to_string(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", profile.path().display()),
            // Loopback only: nothing else resolves, and anything else goes to a dead proxy.
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"
                .to_string(),
            "--proxy-server=http://127.0.0.1:9".to_string(),
            "--proxy-bypass-list=127.0.0.1;localhost;[::1]".to_string(),
            "--disable-background-networking".to_string(),
            "--disable-component-update".to_string(),
            "--disable-default-apps".to_string(),
            "--disable-sync".to_string(),
            "--disable-extensions".to_string(),
            "--disable-domain-reliability".to_string(),
            "--disable-client-side-phishing-detection".to_string(),
            "--no-first-run".to_string(),
            "--no-default-browser-check".to_string(),
            "--metrics-recording-only".to_string(),
            "--hide-scrollbars".to_string(),
            "--disable-crash-reporter".to_string(),
            "--disable-breakpad".to_string(),
        ];
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        caps.insert("acceptInsecureCerts".into(), json!(true));
        caps.insert(
            "goog:chromeOptions".into(),
            json!({ "binary": CHROMIUM, "args": args }),
        );
        let deadline = Instant::now() + DRIVER_START;
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("chromedriver on {url} did not open a browser: {e}"),
            }
        };
        Browser {
            client,
            driver,
            group,
            _profile: profile,
        }
    }

    /// The WebDriver client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("navigate");
    }

    /// The text of the first element `css` selects, if there is one.
    pub async fn text(&self, css: &str) -> Option<String> {
        let element = self.client.find(Locator::Css(css)).await.ok()?;
        element.text().await.ok()
    }

    /// Waits until the text of `css` satisfies `ok`, checking every 50 ms, at most `within`;
    /// returns the text, or panics naming what it saw last.
    pub async fn wait_text(
        &self,
        css: &str,
        within: Duration,
        what: &str,
        ok: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + within;
        loop {
            let text = self.text(css).await;
            if let Some(t) = &text
                && ok(t)
            {
                return t.clone();
            }
            if Instant::now() >= deadline {
                let url = self.client.current_url().await.map(|u| u.to_string());
                let source = self.client.source().await.unwrap_or_default();
                let head: String = source.chars().take(3000).collect();
                panic!(
                    "{what}: `{css}` still shows {text:?} after {within:?} (at {url:?}):\n{head}"
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Clicks the first element `css` selects. A live page may redraw the element between
    /// finding and clicking it (a stale reference): it is found again, for at most 5 s.
    pub async fn click(&self, css: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let clicked = match self.client.find(Locator::Css(css)).await {
                Ok(element) => element.click().await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match clicked {
                Ok(()) => return,
                Err(e) if Instant::now() >= deadline => panic!("click {css}: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// The current URL's path.
    pub async fn path(&self) -> String {
        self.client
            .current_url()
            .await
            .map(|u| u.path().to_string())
            .unwrap_or_default()
    }

    /// Saves a PNG screenshot of the page to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let png = self.client.screenshot().await.expect("screenshot");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot dir");
        }
        std::fs::write(path, png).expect("write screenshot");
    }

    /// Runs `script` in the page and returns its value.
    pub async fn eval(&self, script: &str) -> serde_json::Value {
        self.client
            .execute(script, Vec::new())
            .await
            .expect("script")
    }

    /// Closes the browser and stops the driver (and whatever of the browser is left).
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        self.kill_group();
        let _ = self.driver.wait().await;
    }

    fn kill_group(&mut self) {
        if let Some(group) = self.group.take() {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// Where the documentation's screenshots go (`docs/images/`).
pub fn screenshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("docs")
        .join("images")
}

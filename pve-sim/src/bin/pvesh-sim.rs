//! `pvesh-sim`: a `pvesh`-compatible command backed by a running simulator, so tools that
//! drive `pvesh` (over ssh on a real host) can be tested against `pve-sim serve`.
//!
//! `pvesh-sim <get|create|set|delete|ls> <path> [--param value ...] [--output-format
//! json|json-pretty|text] [--noproxy] [--quiet]`. Connection from the environment:
//! `PVESIM_URL` (`https://127.0.0.1:PORT`), `PVESIM_CA` (PEM file to trust) and
//! `PVESIM_PASSWORD_FILE` (root password; never on the command line). Like pvesh it acts as
//! root@pam, runs worker tasks in the foreground (log to stdout, `TASK ERROR` to stderr, then
//! the UPID; exit 0 even when the task failed) and exits 255 on API errors.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use pve_sim::HttpMethod;
use pve_sim::schema::Schema;
use reqwest::header::HeaderMap;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::Value;

const USAGE: &str = "pvesh-sim <get|create|set|delete|ls> <api_path> [OPTIONS] [FORMAT_OPTIONS]";
const POLL: Duration = Duration::from_millis(100);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Output {
    Text,
    Json,
    JsonPretty,
}

struct Invocation {
    command: String,
    method: HttpMethod,
    path: String,
    params: Vec<(String, String)>,
    output: Output,
    quiet: bool,
}

/// An error answer of the API: printed as pvesh prints it, exit 255.
struct ApiFailure {
    status: u16,
    message: String,
    errors: BTreeMap<String, String>,
}

/// Whether `key` is a boolean parameter of the method (indexed keys through `name[n]`).
fn is_boolean(params: Option<&BTreeMap<String, Value>>, key: &str) -> bool {
    let Some(params) = params else {
        return false;
    };
    let prefix = key.trim_end_matches(|c: char| c.is_ascii_digit());
    let schema = params
        .get(key)
        .or_else(|| params.get(&format!("{prefix}[n]")));
    schema.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("boolean")
}

/// pvesh's CLI booleans (`yes`, `on`, `true`, ...) as the API's `1`/`0`.
fn cli_boolean(v: &str) -> Option<&'static str> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "yes" | "on" | "true" => Some("1"),
        "0" | "no" | "off" | "false" => Some("0"),
        _ => None,
    }
}

fn parse_args(args: &[String]) -> Result<Invocation> {
    let (Some(command), Some(path)) = (args.first(), args.get(1)) else {
        bail!("missing arguments");
    };
    let method = match command.as_str() {
        "get" | "ls" => HttpMethod::Get,
        "create" => HttpMethod::Post,
        "set" => HttpMethod::Put,
        "delete" => HttpMethod::Delete,
        other => bail!("unknown command '{other}'"),
    };
    let path = format!("/{}", path.trim_start_matches('/'));
    let schema = Schema::embedded();
    let param_schema = schema
        .match_path(method, &path)
        .and_then(|(template, _)| schema.method(method, &template))
        .map(|m| &m.parameters);
    let mut params = Vec::new();
    let mut output = Output::Text;
    let mut quiet = false;
    let mut i = 2;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(option) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            bail!("unexpected argument '{arg}'");
        };
        let (name, inline) = match option.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (option.to_string(), None),
        };
        let next_is_value = args.get(i).is_some_and(|n| !n.starts_with("--"));
        match name.as_str() {
            "noproxy" | "human-readable" | "noborder" | "noheader" => continue,
            "quiet" => {
                quiet = true;
                continue;
            }
            "output-format" => {
                let value = match inline {
                    Some(v) => v,
                    None if next_is_value => {
                        i += 1;
                        args[i - 1].clone()
                    }
                    None => bail!("option '--output-format' needs a value"),
                };
                output = match value.as_str() {
                    "json" => Output::Json,
                    "json-pretty" => Output::JsonPretty,
                    "text" => Output::Text,
                    other => bail!("unsupported output format '{other}'"),
                };
                continue;
            }
            _ => {}
        }
        let value = if is_boolean(param_schema, &name) {
            match inline {
                Some(v) => cli_boolean(&v).map_or(v, str::to_string),
                None => match args.get(i).and_then(|n| cli_boolean(n)) {
                    Some(b) => {
                        i += 1;
                        b.to_string()
                    }
                    None => "1".to_string(),
                },
            }
        } else {
            match inline {
                Some(v) => v,
                None if i < args.len() => {
                    i += 1;
                    args[i - 1].clone()
                }
                None => bail!("option '--{name}' needs a value"),
            }
        };
        params.push((name, value));
    }
    Ok(Invocation {
        command: command.clone(),
        method,
        path,
        params,
        output,
        quiet,
    })
}

/// Keys sorted at every level (pvesh prints canonical JSON).
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => canonical(other).to_string(),
    }
}

fn print_data(data: &Value, output: Output) -> Result<()> {
    if data.is_null() {
        return Ok(());
    }
    match output {
        Output::Json => println!("{}", canonical(data)),
        Output::JsonPretty => println!("{}", serde_json::to_string_pretty(&canonical(data))?),
        Output::Text => match data {
            Value::Object(map) => {
                let sorted: BTreeMap<&String, &Value> = map.iter().collect();
                for (k, v) in sorted {
                    println!("{k}: {}", text_of(v));
                }
            }
            Value::Array(items) => {
                for item in items {
                    println!("{}", text_of(item));
                }
            }
            other => println!("{}", text_of(other)),
        },
    }
    Ok(())
}

struct Client {
    http: reqwest::Client,
    base: reqwest::Url,
    ticket: String,
    csrf: String,
}

fn env(name: &str) -> Result<String> {
    std::env::var(name).with_context(|| format!("environment variable {name} is not set"))
}

impl Client {
    async fn login() -> Result<Client> {
        let base = reqwest::Url::parse(&env("PVESIM_URL")?).context("PVESIM_URL")?;
        let ca = env("PVESIM_CA")?;
        let password_file = env("PVESIM_PASSWORD_FILE")?;
        let password = std::fs::read_to_string(&password_file)
            .with_context(|| format!("reading {password_file}"))?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(&ca).with_context(|| format!("reading {ca}"))? {
            roots.add(cert.with_context(|| format!("parsing {ca}"))?)?;
        }
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .build()
            .context("building the HTTPS client")?;
        let mut client = Client {
            http,
            base,
            ticket: String::new(),
            csrf: String::new(),
        };
        let form = [
            ("username", "root@pam"),
            ("password", password.trim_end_matches('\n')),
        ];
        let data = client
            .call(
                HttpMethod::Post,
                "/access/ticket",
                &form.map(|(k, v)| (k.to_string(), v.to_string())),
            )
            .await
            .map_err(|f| anyhow!("login failed: {} {}", f.status, f.message))?;
        client.ticket = data["ticket"]
            .as_str()
            .context("no ticket in the login answer")?
            .into();
        client.csrf = data["CSRFPreventionToken"]
            .as_str()
            .context("no CSRF token in the answer")?
            .into();
        Ok(client)
    }

    fn url(&self, path: &str) -> Result<reqwest::Url> {
        let mut url = self.base.clone();
        {
            let mut segs = url
                .path_segments_mut()
                .map_err(|()| anyhow!("PVESIM_URL is not a base URL"))?;
            segs.clear().push("api2").push("json");
            segs.extend(path.split('/').filter(|s| !s.is_empty()));
        }
        Ok(url)
    }

    /// One API call: `Ok(data)` or the API's error.
    async fn call(
        &self,
        method: HttpMethod,
        path: &str,
        params: &[(String, String)],
    ) -> Result<Value, ApiFailure> {
        let transport = |e: &dyn std::fmt::Display| ApiFailure {
            status: 0,
            message: format!("connection to the simulator failed: {e}"),
            errors: BTreeMap::new(),
        };
        let mut url = self.url(path).map_err(|e| transport(&e))?;
        let encoded = {
            let mut s = form_urlencoded::Serializer::new(String::new());
            for (k, v) in params {
                s.append_pair(k, v);
            }
            s.finish()
        };
        let mut headers = HeaderMap::new();
        if !self.ticket.is_empty() {
            let cookie = format!("PVEAuthCookie={}", self.ticket);
            headers.insert("cookie", cookie.parse().map_err(|e| transport(&e))?);
            headers.insert(
                "csrfpreventiontoken",
                self.csrf.parse().map_err(|e| transport(&e))?,
            );
        }
        let request = match method {
            HttpMethod::Get | HttpMethod::Delete => {
                if !encoded.is_empty() {
                    url.set_query(Some(&encoded));
                }
                let m = if method == HttpMethod::Get {
                    reqwest::Method::GET
                } else {
                    reqwest::Method::DELETE
                };
                self.http.request(m, url)
            }
            HttpMethod::Post | HttpMethod::Put => {
                let m = if method == HttpMethod::Post {
                    reqwest::Method::POST
                } else {
                    reqwest::Method::PUT
                };
                headers.insert(
                    "content-type",
                    reqwest::header::HeaderValue::from_static("application/x-www-form-urlencoded"),
                );
                self.http.request(m, url).body(encoded)
            }
        };
        let response = request
            .headers(headers)
            .send()
            .await
            .map_err(|e| transport(&e))?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| transport(&e))?;
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(body.get("data").cloned().unwrap_or(Value::Null));
        }
        let message = body
            .get("message")
            .and_then(Value::as_str)
            .map(|m| m.trim_end_matches('\n').to_string())
            .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_string());
        let errors = body
            .get("errors")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), text_of(v))).collect())
            .unwrap_or_default();
        Err(ApiFailure {
            status: status.as_u16(),
            message,
            errors,
        })
    }

    /// Follow a worker task to its end, streaming its log.
    async fn follow_task(&self, upid: &str) -> Result<(), ApiFailure> {
        let node = upid.split(':').nth(1).unwrap_or("localhost").to_string();
        let base = format!("/nodes/{node}/tasks/{upid}");
        let mut printed = 0u64;
        loop {
            let status = self
                .call(HttpMethod::Get, &format!("{base}/status"), &[])
                .await?;
            let stopped = status.get("status").and_then(Value::as_str) == Some("stopped");
            let params = [
                ("start".to_string(), printed.to_string()),
                ("limit".to_string(), "0".to_string()),
            ];
            let log = self
                .call(HttpMethod::Get, &format!("{base}/log"), &params)
                .await?;
            for entry in log.as_array().map(Vec::as_slice).unwrap_or_default() {
                let n = entry.get("n").and_then(Value::as_u64).unwrap_or(0);
                let text = entry.get("t").and_then(Value::as_str).unwrap_or("");
                if n <= printed || (n == 1 && text == "no content") {
                    continue;
                }
                printed = n;
                if let Some(error) = text.strip_prefix("TASK ERROR: ") {
                    eprintln!("TASK ERROR: {error}");
                } else {
                    println!("{text}");
                }
            }
            if stopped {
                return Ok(());
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

fn report(failure: &ApiFailure, command: &str) {
    // PVE::Exception prints "<code> <msg>" only for exceptions raised with a code; a plain
    // `die` in a handler (what HTTP turns into a 500) prints just its text.
    if failure.status == 0 || failure.status == 500 {
        eprintln!("{}", failure.message);
        return;
    }
    eprintln!("{} {}", failure.status, failure.message);
    for (param, msg) in &failure.errors {
        eprintln!("{param}: {}", msg.trim_end_matches('\n'));
    }
    if failure.status == 400 {
        eprintln!("pvesh {command} <api_path> [OPTIONS] [FORMAT_OPTIONS]");
    }
}

async fn run(inv: Invocation) -> Result<ExitCode> {
    let client = Client::login().await?;
    let data = match client.call(inv.method, &inv.path, &inv.params).await {
        Ok(d) => d,
        Err(f) => {
            report(&f, &inv.command);
            return Ok(ExitCode::from(255));
        }
    };
    let upid = data.as_str().filter(|s| s.starts_with("UPID:"));
    if let Some(upid) = upid
        && inv.method != HttpMethod::Get
        && let Err(f) = client.follow_task(upid).await
    {
        report(&f, &inv.command);
        return Ok(ExitCode::from(255));
    }
    if inv.command == "ls" {
        for item in data.as_array().map(Vec::as_slice).unwrap_or_default() {
            let name = ["node", "vmid", "storage", "iface", "name", "upid", "subdir"]
                .iter()
                .find_map(|k| item.get(*k))
                .map(text_of)
                .unwrap_or_else(|| text_of(item));
            println!("Dr--- {name}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !inv.quiet {
        print_data(&data, inv.output)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let inv = match parse_args(&args) {
        Ok(inv) => inv,
        Err(e) => {
            eprintln!("{e}\nUSAGE: {USAGE}");
            return ExitCode::from(255);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::from(255);
        }
    };
    match runtime.block_on(run(inv)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{e:#}");
            ExitCode::from(255)
        }
    }
}

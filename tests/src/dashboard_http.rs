//! Plain HTTPS requests to a member's dashboard, as a script (or an attacker) would make them,
//! next to what the browser does: the cluster CA trusted and the member's certificate name
//! (`coordinator-N.pvefleet`) resolved to its loopback address, redirects not followed, the
//! session cookie carried by hand.

use std::net::SocketAddr;

use reqwest::{Client, StatusCode};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "__Host-pvefleet-session";

/// A client of the dashboard of member `node_id` at `base` (`https://127.0.0.1:PORT`).
pub struct DashboardHttp {
    client: Client,
    /// `https://coordinator-N.pvefleet:PORT`.
    pub origin: String,
}

/// One answer: status, `Location`, the session cookie set (if any) and the body.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// Where a redirect points.
    pub location: Option<String>,
    /// The session cookie it set, if any.
    pub session: Option<String>,
    /// The body.
    pub body: String,
}

impl DashboardHttp {
    /// Trusts the CA in `ca_pem` only.
    pub fn new(ca_pem: &str, base: &str, node_id: u64) -> DashboardHttp {
        crate::test_lab::install_crypto();
        let addr: SocketAddr = base
            .trim_start_matches("https://")
            .parse()
            .expect("base is https://IP:PORT");
        let name = format!("coordinator-{node_id}.pvefleet");
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile_certs(ca_pem) {
            roots.add(cert).expect("CA certificate");
        }
        let tls = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let client = Client::builder()
            .tls_backend_preconfigured(tls)
            .http1_only()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .resolve(&name, addr)
            .build()
            .expect("client");
        DashboardHttp {
            client,
            origin: format!("https://{name}:{}", addr.port()),
        }
    }

    async fn answer(resp: reqwest::Response) -> Answer {
        let status = resp.status();
        let header = |h: &str| {
            resp.headers()
                .get_all(h)
                .iter()
                .filter_map(|v| v.to_str().ok().map(str::to_string))
                .collect::<Vec<_>>()
        };
        let location = header("location").into_iter().next();
        let session = header("set-cookie").into_iter().find_map(|c| {
            let (pair, _) = c.split_once(';')?;
            let (k, v) = pair.split_once('=')?;
            (k == SESSION_COOKIE && !v.is_empty()).then(|| v.to_string())
        });
        let body = resp.text().await.unwrap_or_default();
        Answer {
            status,
            location,
            session,
            body,
        }
    }

    /// `GET path` with the session `cookie`, if any.
    pub async fn get(&self, path: &str, cookie: Option<&str>) -> Answer {
        let mut req = self.client.get(format!("{}{path}", self.origin));
        if let Some(c) = cookie {
            req = req.header("cookie", format!("{SESSION_COOKIE}={c}"));
        }
        Self::answer(req.send().await.expect("GET")).await
    }

    /// `GET path` with the session `cookie`, the response left open (a live stream's).
    pub async fn open(&self, path: &str, cookie: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.origin))
            .header("cookie", format!("{SESSION_COOKIE}={cookie}"))
            .send()
            .await
            .expect("GET")
    }

    /// `POST path` with a url-encoded `form`, the session `cookie` (if any) and our own origin.
    pub async fn post(&self, path: &str, form: &[(&str, &str)], cookie: Option<&str>) -> Answer {
        let body: String = form_encode(form);
        let mut req = self
            .client
            .post(format!("{}{path}", self.origin))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("origin", &self.origin)
            .body(body);
        if let Some(c) = cookie {
            req = req.header("cookie", format!("{SESSION_COOKIE}={c}"));
        }
        Self::answer(req.send().await.expect("POST")).await
    }

    /// Logs in with a login `token` (`id.secret`); the session cookie's value.
    pub async fn login(&self, token: &str) -> String {
        let a = self.post("/login", &[("token", token)], None).await;
        assert_eq!(a.status, StatusCode::SEE_OTHER, "login: {a:?}");
        a.session.expect("a session cookie")
    }
}

fn form_encode(form: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in form.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(&encode(k));
        out.push('=');
        out.push_str(&encode(v));
    }
    out
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn rustls_pemfile_certs(pem: &str) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .expect("PEM certificates")
}

/// The value of the hidden input `name` in an HTML page (`<input ... name="NAME" value="V">`).
pub fn hidden_input(html: &str, name: &str) -> Option<String> {
    let at = html.find(&format!("name=\"{name}\" value=\""))?;
    let rest = &html[at + name.len() + 15..];
    Some(rest[..rest.find('"')?].to_string())
}

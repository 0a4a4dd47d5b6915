//! The source cluster's connection to the target of a remote migration, as qemu-server makes
//! it with `PVE::APIClient::LWP`: HTTPS to `https://<host>:<port>/api2/json/...` with the API
//! token of `target-endpoint` in the `Authorization` header, the server certificate accepted
//! only when its SHA-256 fingerprint is the pinned one.
//!
//! The pin is checked inside the TLS handshake (a rustls `ServerCertVerifier`), so nothing,
//! the token least of all, is sent to a peer with another certificate. Without a pinned
//! fingerprint PVE trusts the system's CA store, which the simulator's self-signed
//! certificates are never in: such a connection fails the same way. Either failure reads as
//! `APIClient::LWP` reports it: `fingerprint '<the peer's>' not verified, abort!`.
//!
//! Every request is bounded by the source's remote timeout, so a target that stops answering
//! fails the migration instead of hanging it. API errors read as `APIClient::Exception`
//! stringifies them (`403 Permission check failed (/, Sys.Incoming)`, parameter errors on
//! their own lines); a timeout is `500 read timeout`.
//!
//! The tunnel commands PVE sends over a websocket (`mtunnelwebsocket`) go one per request to
//! the target's tunnel endpoint (`POST /_sim/mtunnel/{node}/{vmid}?ticket=..&socket=..`, the
//! command line as JSON body, the reply line as `data`); see `mtunnel/commands.rs`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use serde_json::Value;

use crate::certificate::fingerprint_of;

/// `target-endpoint` (`proxmox-remote`), already checked by the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemoteEndpoint {
    pub(crate) host: String,
    pub(super) port: u16,
    /// `PVEAPIToken=user@realm!token=SECRET`, sent as it is.
    pub(super) apitoken: String,
    /// Upper case `AA:BB:...`.
    pub(crate) fingerprint: Option<String>,
}

impl RemoteEndpoint {
    /// Split the property string (`host=..,apitoken=..,fingerprint=..,port=..`; a value runs
    /// from the first `=` of its part). The port defaults to 8006.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut host = None;
        let mut port = 8006;
        let mut apitoken = None;
        let mut fingerprint = None;
        for part in text.split(',').filter(|p| !p.trim().is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("unable to parse target-endpoint part '{part}'"))?;
            match key {
                "host" => host = Some(value.to_string()),
                "port" => {
                    port = value
                        .parse()
                        .map_err(|_| format!("invalid port '{value}'"))?;
                }
                "apitoken" => apitoken = Some(value.to_string()),
                "fingerprint" => fingerprint = Some(value.to_ascii_uppercase()),
                _ => return Err(format!("unknown target-endpoint key '{key}'")),
            }
        }
        Ok(Self {
            host: host.ok_or("target-endpoint without host")?,
            port,
            apitoken: apitoken.ok_or("target-endpoint without apitoken")?,
            fingerprint,
        })
    }
}

/// Accepts exactly the pinned certificate; remembers the fingerprint of any other.
#[derive(Debug)]
struct PinnedCertificate {
    pinned: Option<String>,
    /// The last certificate refused (`$fingerprint->{last_unknown}`).
    refused: Mutex<Option<String>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinnedCertificate {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let seen = fingerprint_of(end_entity.as_ref());
        if self.pinned.as_deref() == Some(seen.as_str()) {
            return Ok(ServerCertVerified::assertion());
        }
        *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(seen);
        Err(rustls::Error::General("fingerprint mismatch".into()))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A failed exchange with the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RemoteError {
    /// No answer in time.
    Timeout,
    /// The peer's certificate is not the pinned one.
    Fingerprint(String),
    /// No connection (refused, unreachable, TLS failure other than the pin).
    Connect(String),
    /// An API error answer, as `APIClient::Exception` stringifies it.
    Api(String),
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Timeout => f.write_str("500 read timeout"),
            Self::Fingerprint(fp) => write!(f, "fingerprint '{fp}' not verified, abort!"),
            Self::Connect(why) => write!(f, "500 {why}"),
            Self::Api(text) => f.write_str(text),
        }
    }
}

/// An HTTPS client of the target cluster.
#[derive(Debug)]
pub(crate) struct RemoteClient {
    http: reqwest::Client,
    verifier: Arc<PinnedCertificate>,
    endpoint: RemoteEndpoint,
}

impl RemoteClient {
    /// A client pinned to `endpoint`'s fingerprint, each request bounded by `timeout`.
    pub(crate) fn new(endpoint: &RemoteEndpoint, timeout: Duration) -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = Arc::new(PinnedCertificate {
            pinned: endpoint.fingerprint.clone(),
            refused: Mutex::new(None),
            algorithms: provider.signature_verification_algorithms,
        });
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS setup failed: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(verifier.clone())
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .http1_only()
            .no_proxy()
            .timeout(timeout)
            .build()
            .map_err(|e| format!("HTTP client setup failed: {e}"))?;
        Ok(Self {
            http,
            verifier,
            endpoint: endpoint.clone(),
        })
    }

    /// `https://host:port` (IPv6 addresses bracketed).
    fn base(&self) -> String {
        let host = &self.endpoint.host;
        if host.contains(':') && !host.starts_with('[') {
            format!("https://[{host}]:{}", self.endpoint.port)
        } else {
            format!("https://{host}:{}", self.endpoint.port)
        }
    }

    /// What a failed send means.
    fn transport_error(&self, e: &reqwest::Error) -> RemoteError {
        if let Some(fp) = self
            .verifier
            .refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            return RemoteError::Fingerprint(fp);
        }
        if e.is_timeout() {
            return RemoteError::Timeout;
        }
        let mut why = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            why = s.to_string();
            source = s.source();
        }
        RemoteError::Connect(format!(
            "Can't connect to {}:{} ({why})",
            self.endpoint.host, self.endpoint.port
        ))
    }

    /// Send `request` and read its JSON body.
    async fn send(&self, request: reqwest::RequestBuilder) -> Result<Value, RemoteError> {
        let response = request
            .header("Authorization", &self.endpoint.apitoken)
            .send()
            .await
            .map_err(|e| self.transport_error(&e))?;
        let status = response.status();
        // `$response->message`: the status line's reason phrase (hyper keeps the ones that
        // are not the canonical text of the code).
        let reason = response
            .extensions()
            .get::<hyper::ext::ReasonPhrase>()
            .map(|r| String::from_utf8_lossy(r.as_bytes()).into_owned());
        let text = match response.text().await {
            Ok(t) => t,
            Err(e) => return Err(self.transport_error(&e)),
        };
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(body.get("data").cloned().unwrap_or(Value::Null));
        }
        let message = reason
            .or_else(|| {
                body.get("message")
                    .and_then(Value::as_str)
                    .map(|m| m.lines().next().unwrap_or("").to_string())
            })
            .unwrap_or_else(|| status.canonical_reason().unwrap_or("").to_string());
        let mut out = format!("{} {message}", status.as_u16());
        if let Some(errors) = body.get("errors").and_then(Value::as_object) {
            for (k, v) in errors {
                out.push_str(&format!(
                    "\n{k}: {}",
                    v.as_str().unwrap_or_default().trim_end()
                ));
            }
        }
        Err(RemoteError::Api(out))
    }

    /// `GET /api2/json<path>`.
    pub(crate) async fn get(&self, path: &str) -> Result<Value, RemoteError> {
        let url = format!("{}/api2/json{path}", self.base());
        self.send(self.http.get(url)).await
    }

    /// `POST /api2/json<path>` with a form body.
    pub(super) async fn post(
        &self,
        path: &str,
        form: &[(&str, String)],
    ) -> Result<Value, RemoteError> {
        let body = {
            let mut body = form_urlencoded::Serializer::new(String::new());
            for (k, v) in form {
                body.append_pair(k, v);
            }
            body.finish()
        };
        let url = format!("{}/api2/json{path}", self.base());
        let request = self
            .http
            .post(url)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body);
        self.send(request).await
    }

    /// One tunnel command to VM `vmid`'s tunnel on `node`; the reply line.
    pub(super) async fn tunnel(
        &self,
        node: &str,
        vmid: u32,
        ticket: &str,
        socket: &str,
        command: &Value,
    ) -> Result<Value, RemoteError> {
        let query: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("ticket", ticket)
            .append_pair("socket", socket)
            .finish();
        let url = format!("{}/_sim/mtunnel/{node}/{vmid}?{query}", self.base());
        let request = self
            .http
            .post(url)
            .header("Content-Type", "application/json")
            .body(command.to_string());
        self.send(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_with_the_token_intact() {
        let e = RemoteEndpoint::parse(
            "host=192.0.2.9,apitoken=PVEAPIToken=mig@pve!t=abc-def,fingerprint=aa:bb",
        )
        .unwrap();
        assert_eq!(e.host, "192.0.2.9");
        assert_eq!(e.port, 8006);
        assert_eq!(e.apitoken, "PVEAPIToken=mig@pve!t=abc-def");
        assert_eq!(e.fingerprint.as_deref(), Some("AA:BB"));
        assert!(RemoteEndpoint::parse("apitoken=x").is_err());
        let p = RemoteEndpoint::parse("host=h,port=18006,apitoken=x").unwrap();
        assert_eq!((p.port, p.fingerprint), (18006, None));
    }

    #[test]
    fn errors_read_like_the_api_client() {
        assert_eq!(RemoteError::Timeout.to_string(), "500 read timeout");
        assert_eq!(
            RemoteError::Fingerprint("AA:BB".into()).to_string(),
            "fingerprint 'AA:BB' not verified, abort!"
        );
    }
}

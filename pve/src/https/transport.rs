//! One HTTP exchange with a PVE node: build the URL and body the way pveproxy expects, send it
//! over reqwest + rustls, read the status line's reason phrase, and map failures to
//! [`PveError`] by what they imply (nothing sent, effect unknown, deadline passed).

use std::error::Error as _;
use std::time::Duration;

use http::HeaderMap;
use http::header::{CONTENT_TYPE, HeaderValue};
use reqwest::Url;

use crate::error::PveError;
use crate::reply::decode_http_reply;
use crate::request::{ApiReply, ApiRequest, Method};

/// An HTTP client bound to one node's `https://HOST:PORT/api2/json`.
#[derive(Debug)]
pub(crate) struct Transport {
    client: reqwest::Client,
    endpoint: String,
    base: String,
    timeout: Duration,
}

impl Transport {
    /// A client for `host:port` with the given TLS trust and deadlines.
    pub(crate) fn new(
        host: &str,
        port: u16,
        tls: rustls::ClientConfig,
        timeout: Duration,
        connect_timeout: Duration,
    ) -> Result<Self, PveError> {
        let endpoint = endpoint(host, port);
        let base = format!("{endpoint}/api2/json");
        Url::parse(&base)
            .map_err(|e| PveError::Config(format!("PVE host `{host}` gives no valid URL: {e}")))?;
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            // PVE speaks HTTP/1.1, and only HTTP/1 carries the reason phrase PVE's errors need.
            .http1_only()
            .connect_timeout(connect_timeout)
            // Credentials go to this node only: never follow a redirect or a proxy elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(concat!("pvefleet-pve/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| PveError::Config(format!("HTTPS client for {endpoint}: {e}")))?;
        Ok(Self {
            client,
            endpoint,
            base,
            timeout,
        })
    }

    /// `https://HOST:PORT`.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Send `req` with the authentication headers `auth` and decode the answer. The whole
    /// exchange, reading the body included, must finish within the configured timeout.
    pub(crate) async fn send(
        &self,
        req: &ApiRequest,
        auth: HeaderMap,
    ) -> Result<ApiReply, PveError> {
        let exchange = async {
            let request = self.build(req, auth)?;
            let response = self
                .client
                .execute(request)
                .await
                .map_err(|e| self.failure(req, &e))?;
            let status = response.status();
            let reason = reason_phrase(&response);
            let body = response.bytes().await.map_err(|e| self.failure(req, &e))?;
            decode_http_reply(&self.endpoint, req, status.as_u16(), &reason, &body)
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| PveError::Timeout {
                method: req.method.as_str(),
                path: req.path.clone(),
                timeout: self.timeout,
            })?
    }

    /// GET/DELETE carry parameters in the query string, POST/PUT as a form body (pveproxy
    /// refuses a body on GET/DELETE).
    fn build(&self, req: &ApiRequest, auth: HeaderMap) -> Result<reqwest::Request, PveError> {
        let mut url = request_url(&self.base, &req.path)?;
        let encoded = encode_params(&req.params);
        let method = match req.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Delete => reqwest::Method::DELETE,
        };
        let has_body = matches!(req.method, Method::Post | Method::Put);
        if !has_body && !encoded.is_empty() {
            url.set_query(Some(&encoded));
        }
        let mut builder = self.client.request(method, url).headers(auth);
        if has_body {
            builder = builder
                .header(
                    CONTENT_TYPE,
                    HeaderValue::from_static("application/x-www-form-urlencoded"),
                )
                .body(encoded);
        }
        builder.build().map_err(|e| PveError::Invalid {
            field: "request".into(),
            reason: format!("{} {}: {e}", req.method, req.path),
        })
    }

    /// Classify a reqwest failure: no connection (nothing sent), deadline, or lost answer.
    fn failure(&self, req: &ApiRequest, err: &reqwest::Error) -> PveError {
        if err.is_connect() {
            PveError::Connect {
                endpoint: self.endpoint.clone(),
                reason: error_chain(err),
            }
        } else if err.is_timeout() {
            PveError::Timeout {
                method: req.method.as_str(),
                path: req.path.clone(),
                timeout: self.timeout,
            }
        } else {
            PveError::Transport {
                endpoint: self.endpoint.clone(),
                method: req.method.as_str(),
                path: req.path.clone(),
                reason: error_chain(err),
            }
        }
    }
}

/// `https://HOST:PORT`, with brackets around an IPv6 address.
pub(crate) fn endpoint(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("https://[{host}]:{port}")
    } else {
        format!("https://{host}:{port}")
    }
}

/// The URL of `path` (already percent-encoded, starting with `/`) below `base`.
pub(crate) fn request_url(base: &str, path: &str) -> Result<Url, PveError> {
    if !path.starts_with('/') || path.contains(['?', '#']) {
        return Err(PveError::Invalid {
            field: "path".into(),
            reason: format!("`{path}` must start with `/` and contain no `?` or `#`"),
        });
    }
    Url::parse(&format!("{base}{path}")).map_err(|e| PveError::Invalid {
        field: "path".into(),
        reason: format!("`{path}`: {e}"),
    })
}

/// `application/x-www-form-urlencoded` encoding of the parameters, in order.
pub(crate) fn encode_params(params: &[(String, String)]) -> String {
    let mut ser = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        ser.append_pair(k, v);
    }
    ser.finish()
}

/// The status line's reason phrase. PVE puts the first line of its error message there, and
/// servers before libpve-http-server-perl 5.2.0 send nothing else. hyper keeps a non-canonical
/// phrase as [`hyper::ext::ReasonPhrase`] in the response extensions, which reqwest passes on;
/// a canonical one (`OK`, `Not Found`) is not stored, so it is rebuilt from the code.
fn reason_phrase(response: &reqwest::Response) -> String {
    match response.extensions().get::<hyper::ext::ReasonPhrase>() {
        Some(reason) => String::from_utf8_lossy(reason.as_bytes()).into_owned(),
        None => response
            .status()
            .canonical_reason()
            .unwrap_or_default()
            .to_string(),
    }
}

/// The error and its causes, `outer: inner: root`, skipping repeats.
fn error_chain(err: &reqwest::Error) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_brackets_ipv6_hosts() {
        assert_eq!(endpoint("pve1", 8006), "https://pve1:8006");
        assert_eq!(endpoint("192.0.2.1", 8006), "https://192.0.2.1:8006");
        assert_eq!(endpoint("2001:db8::1", 8006), "https://[2001:db8::1]:8006");
        assert_eq!(endpoint("[2001:db8::1]", 443), "https://[2001:db8::1]:443");
    }

    #[test]
    fn params_are_form_encoded_in_order() {
        let params = vec![
            ("net0".to_string(), "virtio,bridge=vmbr0".to_string()),
            ("description".to_string(), "a b&c=d/é".to_string()),
        ];
        assert_eq!(
            encode_params(&params),
            "net0=virtio%2Cbridge%3Dvmbr0&description=a+b%26c%3Dd%2F%C3%A9"
        );
        assert_eq!(encode_params(&[]), "");
    }

    #[test]
    fn request_paths_keep_their_encoding_and_refuse_queries() {
        let url = request_url(
            "https://pve1:8006/api2/json",
            "/nodes/pve1/tasks/UPID:pve1:1%2F",
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "https://pve1:8006/api2/json/nodes/pve1/tasks/UPID:pve1:1%2F"
        );
        assert!(request_url("https://pve1:8006/api2/json", "nodes").is_err());
        assert!(request_url("https://pve1:8006/api2/json", "/nodes?x=1").is_err());
    }
}

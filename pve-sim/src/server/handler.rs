//! One HTTP request, handled as pveproxy does: method and transfer-encoding checks, the
//! `/api2/<format>` split, authentication (401 without a body, delayed), body limits, parameter
//! extraction, then the simulator's pipeline. The answer's reason phrase is the first line of
//! the message; a drop fault closes the connection instead.

use hyper::body::Incoming;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderMap};
use hyper::{Request, Response};
use tokio_util::sync::CancellationToken;

use super::body::{OneChunk, ReadError, read_body};
use super::response::{respond, respond_file};
use super::{control, params, tunnel};
use crate::auth::{Credentials, Principal};
use crate::param_value::ParamValue;
use crate::route::HttpMethod;
use crate::sim::{Sim, unix_now};

/// Largest accepted request body (pve-http-server's `$limit_max_post`).
pub(crate) const MAX_BODY: usize = 512 * 1024;
/// Seconds (before scaling) every 401 is delayed by, as pve-http-server does.
const UNAUTHORIZED_DELAY_SECS: f64 = 3.0;

/// The service's error: close the connection without an answer.
#[derive(Debug)]
pub(crate) struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("response dropped")
    }
}

impl std::error::Error for Dropped {}

/// An error answer of the HTTP layer itself (no JSON formatter involved).
fn plain_error(status: u16, message: &str) -> Response<OneChunk> {
    respond(status, message.lines().next().unwrap_or(""), Vec::new())
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Serves the requests of one listener (one node).
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) sim: Sim,
    pub(crate) node: String,
    pub(crate) shutdown: CancellationToken,
}

impl Handler {
    /// Answer one request (`Err` = drop the connection).
    pub(crate) async fn handle(
        self,
        req: Request<Incoming>,
    ) -> Result<Response<OneChunk>, Dropped> {
        if self.sim.faults().node_down(&self.node) {
            // A dead node never answers; the client's timeout decides.
            self.shutdown.cancelled().await;
            return Err(Dropped);
        }
        let raw_path = req.uri().path().to_string();
        let query = req.uri().query().map(str::to_string);
        if raw_path.starts_with("/_sim/mtunnel/") {
            return Ok(tunnel::handle(&self.sim, &self.node, req).await);
        }
        if raw_path.starts_with("/_sim/") {
            return Ok(control::handle(&self.sim, req).await);
        }
        let Some(method) = HttpMethod::parse(req.method().as_str()) else {
            let m = req.method().as_str().to_string();
            return Ok(plain_error(501, &format!("method '{m}' not available")));
        };
        let headers = req.headers().clone();
        if let Some(te) = header(&headers, "transfer-encoding") {
            let msg = if te.eq_ignore_ascii_case("chunked") {
                "chunked transfer encoding not supported".to_string()
            } else {
                format!("Unknown transfer encoding '{te}'")
            };
            return Ok(plain_error(501, &msg));
        }
        let path = percent_encoding::percent_decode_str(&raw_path)
            .decode_utf8_lossy()
            .into_owned();
        if !path.starts_with("/api2") {
            return Ok(plain_error(501, &format!("no such file '{path}'")));
        }
        let Some((rel, format)) = params::split_abs_uri(&path) else {
            return Ok(plain_error(501, "no such uri"));
        };

        let creds = Credentials {
            cookie: header(&headers, "cookie"),
            authorization: header(&headers, "authorization"),
            csrf: header(&headers, "csrfpreventiontoken"),
        };
        let who = match self
            .sim
            .auth()
            .authenticate(method, &rel, creds, unix_now())
        {
            Ok(who) => who,
            Err(e) => {
                tokio::time::sleep(self.sim.scaled(UNAUTHORIZED_DELAY_SECS)).await;
                return Ok(plain_error(e.status, &e.message));
            }
        };

        let length: u64 = header(&headers, CONTENT_LENGTH.as_str())
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(0);
        let media = header(&headers, CONTENT_TYPE.as_str()).map(params::media_type);
        let mut body = Vec::new();
        if length > 0 {
            if !matches!(method, HttpMethod::Post | HttpMethod::Put) {
                return Ok(plain_error(
                    501,
                    &format!("Unexpected content for method '{}'", method.as_str()),
                ));
            }
            if length > MAX_BODY as u64 {
                return Ok(plain_error(501, "for data too large"));
            }
            if let Some(ct) = media.as_deref()
                && ct != "application/x-www-form-urlencoded"
                && ct != "application/json"
            {
                let full = header(&headers, CONTENT_TYPE.as_str()).unwrap_or(ct);
                return Ok(plain_error(
                    506,
                    &format!("upload 'Content-Type '{full}' not implemented"),
                ));
            }
            body = match read_body(req.into_body(), MAX_BODY).await {
                Ok(b) => b,
                Err(ReadError::TooLarge) => return Ok(plain_error(501, "for data too large")),
                Err(ReadError::Io) => return Err(Dropped),
            };
        }
        if format != "json" {
            return Ok(plain_error(
                501,
                &format!("no formatter for uri {rel}, {format}"),
            ));
        }
        let list = match params::extract(media.as_deref(), &body, query.as_deref()) {
            Ok(list) => list,
            Err(msg) => return Ok(plain_error(501, &msg)),
        };
        self.answer(&who, method, &rel, list).await
    }

    async fn answer(
        &self,
        who: &Principal,
        method: HttpMethod,
        rel: &str,
        list: Vec<(String, ParamValue)>,
    ) -> Result<Response<OneChunk>, Dropped> {
        let raw = self
            .sim
            .process_raw(who, &self.node, method, rel, list)
            .await;
        if raw.drop {
            return Err(Dropped);
        }
        if raw.status == 401 {
            tokio::time::sleep(self.sim.scaled(UNAUTHORIZED_DELAY_SECS)).await;
        }
        Ok(match raw.content_type {
            Some(ct) => respond_file(
                raw.status,
                &raw.reason,
                raw.body,
                &ct,
                raw.content_disposition.as_deref(),
            ),
            None => respond(raw.status, &raw.reason, raw.body),
        })
    }
}

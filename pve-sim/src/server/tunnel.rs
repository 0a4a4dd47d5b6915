//! The simulator's stand-in for PVE's migration websocket (`GET
//! /nodes/{node}/qemu/{vmid}/mtunnelwebsocket`, upgraded to a websocket that carries one JSON
//! command per line): `POST /_sim/mtunnel/{node}/{vmid}?ticket=<ticket>&socket=<socket>`, one
//! command per request. The body is the command line (`{"cmd": "version"}`), the answer's
//! `data` the line the tunnel replies (`{"success": true, "api": 2, "age": 0}`).
//!
//! Authentication is the API's (the remote migration's API token); `{node}` must be
//! `localhost` or this listener's node (`node needs to be 'localhost' or local hostname
//! '<node>'`), and the ticket and socket those `POST .../mtunnel` answered to the same caller
//! (else `401 permission denied - invalid PVETUNNEL ticket`).

use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::Value;

use super::body::{OneChunk, read_body};
use super::params::decode_urlencoded;
use super::response::respond;
use crate::api::ApiError;
use crate::auth::{Credentials, Principal};
use crate::route::HttpMethod;
use crate::sim::{RawReply, Sim, unix_now};

/// Largest command line (a config with a long description is the biggest).
const MAX_COMMAND: usize = 4 * 1024 * 1024;

fn answer(result: &Result<Value, ApiError>) -> Response<OneChunk> {
    let raw = match result {
        Ok(data) => RawReply::ok(&crate::api::Reply::data(data.clone())),
        Err(e) => RawReply::error(e),
    };
    respond(raw.status, &raw.reason, raw.body)
}

/// Answer one tunnel request to the listener of `node`.
pub(crate) async fn handle(sim: &Sim, node: &str, req: Request<Incoming>) -> Response<OneChunk> {
    if req.method() != Method::POST {
        return answer(&Err(ApiError::status(501, "method not available")));
    }
    let path = percent_encoding::percent_decode_str(req.uri().path())
        .decode_utf8_lossy()
        .into_owned();
    let headers = req.headers();
    let creds = Credentials {
        cookie: headers.get("cookie").and_then(|v| v.to_str().ok()),
        authorization: headers.get("authorization").and_then(|v| v.to_str().ok()),
        csrf: headers
            .get("csrfpreventiontoken")
            .and_then(|v| v.to_str().ok()),
    };
    let caller = match sim
        .auth()
        .authenticate(HttpMethod::Post, &path, creds, unix_now())
    {
        Ok(Principal::User(c)) => c,
        Ok(Principal::Anonymous { .. }) => {
            return respond(401, "No ticket", Vec::new());
        }
        Err(e) => return respond(e.status, &e.message, Vec::new()),
    };
    let query = decode_urlencoded(req.uri().query().unwrap_or(""));
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (target, vmid) = match segs.as_slice() {
        ["_sim", "mtunnel", target, vmid] => (target.to_string(), vmid.to_string()),
        _ => return answer(&Err(ApiError::status(501, "no such tunnel endpoint"))),
    };
    let Ok(vmid) = vmid.parse::<u32>() else {
        return answer(&Err(ApiError::param(
            "vmid",
            format!("type check ('integer') failed - got '{vmid}'"),
        )));
    };
    if target != "localhost" && target != node {
        return answer(&Err(ApiError::param(
            "node",
            format!("node needs to be 'localhost' or local hostname '{node}'"),
        )));
    }
    let body = match read_body(req.into_body(), MAX_COMMAND).await {
        Ok(b) => b,
        Err(_) => return answer(&Err(ApiError::status(501, "for data too large"))),
    };
    let command: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return answer(&Ok(serde_json::json!({
                "success": false,
                "msg": format!("failed to parse command - {e}"),
            })));
        }
    };
    let ticket = query.get("ticket").map(String::as_str).unwrap_or("");
    let socket = query.get("socket").map(String::as_str).unwrap_or("");
    answer(&sim.tunnel_command(&caller, node, vmid, ticket, socket, &command))
}

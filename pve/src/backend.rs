//! The one interface every way of reaching PVE implements: HTTPS ([`crate::https`]), `pvesh`
//! ([`crate::pvesh`]), or an in-process simulator adapter (written by whoever links both, with
//! [`crate::reply::decode_http_reply`] doing the decoding).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::error::PveError;
use crate::request::{ApiReply, ApiRequest};

/// A boxed future, so backends can live behind `Arc<dyn Backend>`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Performs one API call. Implementations do no retrying: [`crate::Client`] decides that.
pub trait Backend: Send + Sync + fmt::Debug {
    /// Send `req`, return the envelope's `data` (and `total`), or a typed error.
    fn call<'a>(&'a self, req: &'a ApiRequest) -> BoxFuture<'a, Result<ApiReply, PveError>>;

    /// Where this backend talks to, for messages (`https://pve1:8006`, `pvesh`).
    fn endpoint(&self) -> String;

    /// Whether calls run as `root@pam` proper (only `pvesh`, or a root ticket): root-only options
    /// such as `skiplock` are refused by PVE for anyone else, even a token of `root@pam`.
    fn is_root(&self) -> bool {
        false
    }

    /// The API user calls run as, as it appears in UPIDs (`root@pam`, `user@pve!token`), when
    /// known. Used to recognize our own tasks after a lost answer.
    fn api_user(&self) -> Option<String> {
        None
    }

    /// Whether worker tasks have already finished when the call returns (`pvesh` runs them in
    /// the foreground).
    fn tasks_run_in_foreground(&self) -> bool {
        false
    }
}

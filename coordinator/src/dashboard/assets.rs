//! The dashboard's style sheet and scripts, compiled into the binary (no Node toolchain, no
//! files to install). Served without a session: they hold no fleet data.

/// The asset at `path`, with its content type, if it is one.
pub(crate) fn asset(path: &str) -> Option<(&'static str, &'static str)> {
    Some(match path {
        "/static/app.css" => (
            "text/css; charset=utf-8",
            include_str!("../../assets/app.css"),
        ),
        "/static/app.js" => (
            "text/javascript; charset=utf-8",
            include_str!("../../assets/app.js"),
        ),
        "/static/login.js" => (
            "text/javascript; charset=utf-8",
            include_str!("../../assets/login.js"),
        ),
        _ => return None,
    })
}

//! Which request gets what. Only the login page and the static assets answer without a
//! session; everything else needs the session cookie, and whatever acts (an action, logging
//! out) also needs the session's CSRF token, a same-origin request, and a session that may act.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use protocol::Role;
use protocol::admin::{DashboardLoginRedeem, VmExplain};
use transport::{Caller, PeerIdentity, Service};

use super::actions::{self, Action};
use super::app::{App, reader};
use super::body::DashBody;
use super::forms::{self, SESSION_COOKIE, THEME_COOKIE, field};
use super::login_token::{secret_sha256, split_token};
use super::pages::{self, Chrome, ConfirmT, ExplainT, Layout, LoginT, Notice, Page};
use super::sessions::{Session, same_secret};
use askama::Template;

/// A page is drawn from a picture at most this old.
const FRESH: Duration = Duration::from_millis(500);

/// The answer to `req` from `peer`.
pub(crate) async fn respond(
    app: &Arc<App>,
    req: Request<Incoming>,
    peer: SocketAddr,
) -> Response<DashBody> {
    let path = req.uri().path().to_string();
    let query = forms::pairs(req.uri().query().unwrap_or("").as_bytes());
    let method = req.method().clone();
    if method == Method::GET
        && let Some((content_type, body)) = super::assets::asset(&path)
    {
        let mut resp = forms::response(StatusCode::OK, content_type, DashBody::full(body));
        resp.headers_mut().insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("max-age=300"),
        );
        return resp;
    }
    match (method.clone(), path.as_str()) {
        (Method::GET, "/login") => return login_page(StatusCode::OK, ""),
        (Method::POST, "/login") => return login(app, req).await,
        _ => {}
    }
    let sid = forms::cookie(req.headers(), SESSION_COOKIE).map(str::to_string);
    let Some((sid, session)) = sid.and_then(|id| session_of(app, &id).map(|s| (id, s))) else {
        // Nothing of the dashboard without a session: pages lead to the login, the rest is refused.
        return if method == Method::GET && path != "/live" {
            forms::see_other("/login")
        } else {
            forms::text(StatusCode::UNAUTHORIZED, "no valid session: log in first")
        };
    };
    let theme = match forms::cookie(req.headers(), THEME_COOKIE) {
        Some("dark") => "dark",
        Some("light") => "light",
        _ => "auto",
    };
    let caller = Caller {
        service: Service::Admin,
        peer: Some(PeerIdentity::new(Role::Admin, session.issuer)),
        addr: peer,
        cert_not_after: None,
    };
    match (method, path.as_str()) {
        (Method::GET, "/live") => live(app, &sid, &session, &query),
        (Method::GET, "/theme") => {
            let set = match field(&query, "set") {
                "dark" => "dark",
                "light" => "light",
                _ => "auto",
            };
            let mut resp = forms::see_other(forms::local_path(field(&query, "back")));
            forms::set_cookie(
                &mut resp,
                &format!("{THEME_COOKIE}={set}; Path=/; Secure; SameSite=Strict; Max-Age=31536000"),
            );
            resp
        }
        (Method::GET, "/confirm") => confirm(app, &session, theme, &query).await,
        (Method::POST, "/act") => act(app, &session, theme, caller, req).await,
        (Method::POST, "/logout") => {
            let headers = req.headers().clone();
            let form = match forms::form(req.into_body()).await {
                Ok(f) => f,
                Err(e) => return forms::text(StatusCode::BAD_REQUEST, e),
            };
            if let Some(refused) = csrf_refusal(&session, &headers, &form) {
                return refused;
            }
            app.sessions.close(&sid);
            let mut resp = forms::see_other("/login");
            forms::set_cookie(
                &mut resp,
                &format!("{SESSION_COOKIE}=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0"),
            );
            resp
        }
        (Method::GET, _) => match Page::parse(&path, &query) {
            Some(page) => page_response(app, &session, theme, &page, caller, None).await,
            None => forms::text(StatusCode::NOT_FOUND, format!("no page {path}")),
        },
        _ => forms::text(StatusCode::METHOD_NOT_ALLOWED, "not allowed here"),
    }
}

/// The open session `id` names, if its admin still stands.
fn session_of(app: &App, id: &str) -> Option<Session> {
    let session = app.sessions.get(id, Instant::now())?;
    let refused = app
        .machine
        .read(|m| m.0.admin_refusal(session.issuer))
        .unwrap_or_else(|_| Some("the fleet state cannot be read".into()));
    if refused.is_some() {
        app.sessions.close(id);
        return None;
    }
    Some(session)
}

fn login_page(status: StatusCode, message: &str) -> Response<DashBody> {
    match (LoginT { message }).render() {
        Ok(html) => forms::html(status, html),
        Err(e) => forms::text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("login page: {e}"),
        ),
    }
}

async fn login(app: &App, req: Request<Incoming>) -> Response<DashBody> {
    if !forms::same_origin(req.headers()) {
        return login_page(
            StatusCode::FORBIDDEN,
            "this login came from another site: refused",
        );
    }
    let form = match forms::form(req.into_body()).await {
        Ok(f) => f,
        Err(e) => return login_page(StatusCode::BAD_REQUEST, &e),
    };
    let Some((id, secret)) = split_token(field(&form, "token")) else {
        return login_page(
            StatusCode::UNAUTHORIZED,
            "that is not a login token: mint one with `pvefleet dashboard login`",
        );
    };
    let redeem = DashboardLoginRedeem {
        id: id.to_string(),
        secret_sha256: secret_sha256(secret),
    };
    match app.router.call_local(reader(), &redeem, None).await {
        Ok(granted) => {
            let sid = app
                .sessions
                .open(granted.issuer, granted.read_only, Instant::now());
            tracing::info!(
                admin = granted.issuer,
                read_only = granted.read_only,
                "dashboard session opened"
            );
            let mut resp = forms::see_other("/");
            let max_age = app.sessions.lifetime().as_secs();
            forms::set_cookie(
                &mut resp,
                &format!(
                    "{SESSION_COOKIE}={sid}; Path=/; Secure; HttpOnly; SameSite=Strict; \
                     Max-Age={max_age}"
                ),
            );
            resp
        }
        Err(e) => login_page(StatusCode::UNAUTHORIZED, &e.message),
    }
}

fn chrome(app: &App, session: &Session, theme: &'static str, page: &Page) -> Chrome {
    Chrome {
        title: page.title(),
        theme,
        next_theme: if theme == "dark" { "light" } else { "dark" },
        issuer: session.issuer,
        read_only: session.read_only,
        csrf: session.csrf.clone(),
        live_src: format!(
            "/live?{}",
            form_urlencoded::Serializer::new(String::new())
                .append_pair("page", &page.href())
                .finish()
        ),
        member: app.member,
        version: env!("CARGO_PKG_VERSION"),
        notice: None,
    }
}

fn scenarios(app: &App, page: &Page) -> (String, Vec<super::scenarios::Run>) {
    let runs = if *page == Page::Scenarios {
        super::scenarios::runs(&app.scenario_dir)
    } else {
        Vec::new()
    };
    (app.scenario_dir.display().to_string(), runs)
}

async fn page_response(
    app: &App,
    session: &Session,
    theme: &'static str,
    page: &Page,
    caller: Caller,
    notice: Option<Notice>,
) -> Response<DashBody> {
    let picture = app.hub.fresh(FRESH).await;
    let scenarios = scenarios(app, page);
    let main = match pages::live_html(page, &picture, !session.read_only, &scenarios) {
        None => {
            return forms::text(
                StatusCode::NOT_FOUND,
                format!("{} is not known", page.title()),
            );
        }
        Some(Err(e)) => return forms::text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Some(Ok(html)) => html,
    };
    let extra = match page {
        Page::Guest(name) => {
            let explain = app
                .router
                .call_local(caller, &VmExplain { name: name.clone() }, None)
                .await
                .map_err(|e| e.message);
            ExplainT { explain: &explain }.render().unwrap_or_default()
        }
        _ => String::new(),
    };
    let mut chrome = chrome(app, session, theme, page);
    chrome.notice = notice;
    framed(&chrome, &main, &extra)
}

/// `main` (and `extra`) in the frame every page shares.
fn framed(chrome: &Chrome, main: &str, extra: &str) -> Response<DashBody> {
    match (Layout {
        chrome,
        main,
        extra,
    })
    .render()
    {
        Ok(html) => forms::html(StatusCode::OK, html),
        Err(e) => forms::text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

fn live(
    app: &Arc<App>,
    sid: &str,
    session: &Session,
    query: &[(String, String)],
) -> Response<DashBody> {
    let page_path = field(query, "page");
    let (path, page_query) = page_path.split_once('?').unwrap_or((page_path, ""));
    let Some(page) = Page::parse(path, &forms::pairs(page_query.as_bytes())) else {
        return forms::text(StatusCode::NOT_FOUND, format!("no page {path}"));
    };
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let can_act = !session.read_only;
    let scenarios = scenarios(app, &page);
    let sid = sid.to_string();
    let owner = Arc::clone(app);
    let draw = move |s: &super::snapshot::Snapshot| {
        // Every picture checks the session again: logout, expiry and revocation end the stream.
        session_of(&owner, &sid)?;
        match pages::live_html(&page, s, can_act, &scenarios) {
            Some(Ok(html)) => Some(html),
            Some(Err(e)) => Some(format!("<p class=\"crit\">cannot draw this page: {e}</p>")),
            None => Some("<p class=\"crit\">gone: it is no longer in the fleet</p>".to_string()),
        }
    };
    tokio::spawn(super::live::stream(
        app.hub.subscribe(),
        tx,
        app.shutdown.clone(),
        draw,
    ));
    let mut resp = forms::response(
        StatusCode::OK,
        "text/event-stream; charset=utf-8",
        DashBody::Stream(rx),
    );
    resp.headers_mut().insert(
        http::header::HeaderName::from_static("x-accel-buffering"),
        http::HeaderValue::from_static("no"),
    );
    resp
}

/// The refusal of a request that acts, unless it is same-origin and carries the session's
/// CSRF token.
fn csrf_refusal(
    session: &Session,
    headers: &http::HeaderMap,
    form: &[(String, String)],
) -> Option<Response<DashBody>> {
    if !forms::same_origin(headers) {
        return Some(forms::text(
            StatusCode::FORBIDDEN,
            "refused: this request came from another site",
        ));
    }
    if !same_secret(&session.csrf, field(form, "csrf")) {
        return Some(forms::text(
            StatusCode::FORBIDDEN,
            "refused: the form's CSRF token is missing or wrong; reload the page and try again",
        ));
    }
    None
}

async fn confirm(
    app: &App,
    session: &Session,
    theme: &'static str,
    query: &[(String, String)],
) -> Response<DashBody> {
    if session.read_only {
        return forms::text(
            StatusCode::FORBIDDEN,
            "this session is read-only: it cannot act",
        );
    }
    let Some(action) = Action::parse(field(query, "action")) else {
        return forms::text(StatusCode::BAD_REQUEST, "unknown action");
    };
    let target = field(query, "target");
    let picture = app.hub.fresh(FRESH).await;
    let q = match actions::question(action, target, &picture) {
        Ok(q) => q,
        Err(why) => return forms::text(StatusCode::NOT_FOUND, why),
    };
    let request = actions::new_request();
    let back = action.back(target);
    let body = ConfirmT {
        question: &q.question,
        consequence: &q.consequence,
        csrf: &session.csrf,
        request: &request,
        action: action.name(),
        target,
        choice_label: &q.choice_label,
        choices: &q.choices,
        button: &q.button,
        back: &back,
    }
    .render();
    let main = match body {
        Ok(b) => b,
        Err(e) => return forms::text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let mut chrome = chrome(app, session, theme, &Page::Overview);
    chrome.title = q.question.clone();
    // A confirmation is not live: nothing redraws it under the operator's hand.
    chrome.live_src = String::new();
    framed(&chrome, &main, "")
}

async fn act(
    app: &App,
    session: &Session,
    theme: &'static str,
    caller: Caller,
    req: Request<Incoming>,
) -> Response<DashBody> {
    let headers = req.headers().clone();
    let form = match forms::form(req.into_body()).await {
        Ok(f) => f,
        Err(e) => return forms::text(StatusCode::BAD_REQUEST, e),
    };
    if let Some(refused) = csrf_refusal(session, &headers, &form) {
        return refused;
    }
    if session.read_only {
        return forms::text(
            StatusCode::FORBIDDEN,
            "this session is read-only: it cannot act",
        );
    }
    let Some(action) = Action::parse(field(&form, "action")) else {
        return forms::text(StatusCode::BAD_REQUEST, "unknown action");
    };
    let Some(request) = actions::parse_request(field(&form, "request")) else {
        return forms::text(
            StatusCode::BAD_REQUEST,
            "the form carries no request id: reload it",
        );
    };
    let target = field(&form, "target");
    let to = field(&form, "to");
    let outcome = actions::run(&app.router, caller.clone(), request, action, target, to).await;
    tracing::info!(
        admin = session.issuer,
        action = action.name(),
        target,
        ok = outcome.is_ok(),
        "dashboard action"
    );
    let notice = match outcome {
        Ok(text) => Notice { ok: true, text },
        Err(e) => Notice {
            ok: false,
            text: format!("{} {target} refused: {}", action.name(), e.message),
        },
    };
    let back = action.back(target);
    let (path, q) = back.split_once('?').unwrap_or((back.as_str(), ""));
    let page = Page::parse(path, &forms::pairs(q.as_bytes())).unwrap_or(Page::Overview);
    page_response(app, session, theme, &page, caller, Some(notice)).await
}

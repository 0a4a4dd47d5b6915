//! The pages: which path shows what, and the compile-time checked templates (askama, under
//! `coordinator/templates/`) that draw them. Each page has a live part (`<main id="live">`),
//! redrawn from every new picture of the fleet and pushed over server-sent events, and may have
//! a still part drawn once when the page opens (the placement explanation). Templates escape
//! every value; the only unescaped insertions are this file's own rendered templates.

use askama::Template;
use protocol::admin::VmExplainReply;

use super::detail_views::{self, EventFilter, EventLine, GuestLine, GuestPage, HostPage, VipLine};
use super::scenarios::Run;
use super::snapshot::Snapshot;
use super::views::{self, Overview};

/// Events the event log page lists at most.
const EVENTS_SHOWN: usize = 300;
/// The event kinds the filter offers.
const KINDS: &[&str] = &[
    "vm",
    "host",
    "member",
    "token",
    "pool",
    "vmid_range",
    "vip",
    "settings",
    "admin",
];

/// A page of the dashboard, from its path and query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Page {
    Overview,
    Guests,
    Guest(String),
    Host(String),
    Vips,
    Events(EventFilter),
    Scenarios,
}

impl Page {
    /// The page `path` (percent-decoded segments) with `query` names, if any.
    pub(crate) fn parse(path: &str, query: &[(String, String)]) -> Option<Page> {
        let get = |k: &str| {
            query
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let segments: Vec<String> = path
            .trim_start_matches('/')
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8_lossy()
                    .into_owned()
            })
            .collect();
        let seg: Vec<&str> = segments.iter().map(String::as_str).collect();
        match seg.as_slice() {
            [] => Some(Page::Overview),
            ["guests"] => Some(Page::Guests),
            ["guests", name] => Some(Page::Guest((*name).to_string())),
            ["hosts", name] => Some(Page::Host((*name).to_string())),
            ["vips"] => Some(Page::Vips),
            ["events"] => Some(Page::Events(EventFilter {
                kind: get("kind"),
                level: get("level"),
                subject: get("subject"),
            })),
            ["scenarios"] => Some(Page::Scenarios),
            _ => None,
        }
    }

    /// The page's path and query, as its live stream names it.
    pub(crate) fn href(&self) -> String {
        match self {
            Page::Overview => "/".into(),
            Page::Guests => "/guests".into(),
            Page::Guest(n) => format!("/guests/{}", views::url_part(n)),
            Page::Host(n) => format!("/hosts/{}", views::url_part(n)),
            Page::Vips => "/vips".into(),
            Page::Events(f) => {
                let q: String = form_urlencoded::Serializer::new(String::new())
                    .append_pair("kind", &f.kind)
                    .append_pair("level", &f.level)
                    .append_pair("subject", &f.subject)
                    .finish();
                format!("/events?{q}")
            }
            Page::Scenarios => "/scenarios".into(),
        }
    }

    /// The title in the browser's tab.
    pub(crate) fn title(&self) -> String {
        match self {
            Page::Overview => "Overview".into(),
            Page::Guests => "Guests".into(),
            Page::Guest(n) => format!("Guest {n}"),
            Page::Host(n) => format!("Host {n}"),
            Page::Vips => "VIPs".into(),
            Page::Events(_) => "Events".into(),
            Page::Scenarios => "HA scenario runs".into(),
        }
    }
}

/// The live part of `page` drawn from `s` (`None`: the guest or host is not known).
pub(crate) fn live_html(
    page: &Page,
    s: &Snapshot,
    can_act: bool,
    scenarios: &(String, Vec<Run>),
) -> Option<Result<String, askama::Error>> {
    Some(match page {
        Page::Overview => OverviewT {
            v: &views::overview(s),
        }
        .render(),
        Page::Guests => {
            let guests: Vec<GuestLine> = s
                .vms
                .iter()
                .map(|v| detail_views::guest_line(s, v))
                .collect();
            GuestListT { guests: &guests }.render()
        }
        Page::Guest(name) => {
            let p = detail_views::guest_page(s, name)?;
            GuestT {
                events: &p.history,
                p: &p,
                can_act,
            }
            .render()
        }
        Page::Host(name) => {
            let p = detail_views::host_page(s, name)?;
            HostT {
                guests: &p.guests,
                events: &p.events,
                p: &p,
                can_act,
            }
            .render()
        }
        Page::Vips => VipsT {
            vips: &detail_views::vip_lines(s),
            can_act,
        }
        .render(),
        Page::Events(filter) => EventsT {
            kinds: KINDS,
            filter,
            events: &detail_views::events(s, filter, EVENTS_SHOWN),
        }
        .render(),
        Page::Scenarios => ScenariosT {
            dir: &scenarios.0,
            runs: &scenarios.1,
        }
        .render(),
    })
}

/// What the frame around every page shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chrome {
    pub(crate) title: String,
    pub(crate) theme: &'static str,
    pub(crate) next_theme: &'static str,
    pub(crate) issuer: u64,
    pub(crate) read_only: bool,
    pub(crate) csrf: String,
    pub(crate) live_src: String,
    pub(crate) member: u64,
    pub(crate) version: &'static str,
    pub(crate) notice: Option<Notice>,
}

/// The outcome of an action, shown once above the page it led to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Notice {
    pub(crate) ok: bool,
    pub(crate) text: String,
}

#[derive(Template)]
#[template(path = "layout.html")]
pub(crate) struct Layout<'a> {
    pub(crate) chrome: &'a Chrome,
    pub(crate) main: &'a str,
    pub(crate) extra: &'a str,
}

#[derive(Template)]
#[template(path = "overview.html")]
struct OverviewT<'a> {
    v: &'a Overview,
}

#[derive(Template)]
#[template(path = "guest_list.html")]
struct GuestListT<'a> {
    guests: &'a [GuestLine],
}

#[derive(Template)]
#[template(path = "guest.html")]
struct GuestT<'a> {
    p: &'a GuestPage,
    events: &'a [EventLine],
    can_act: bool,
}

#[derive(Template)]
#[template(path = "host.html")]
struct HostT<'a> {
    p: &'a HostPage,
    guests: &'a [GuestLine],
    events: &'a [EventLine],
    can_act: bool,
}

#[derive(Template)]
#[template(path = "vips.html")]
struct VipsT<'a> {
    vips: &'a [VipLine],
    can_act: bool,
}

#[derive(Template)]
#[template(path = "events.html")]
struct EventsT<'a> {
    kinds: &'a [&'a str],
    filter: &'a EventFilter,
    events: &'a [EventLine],
}

#[derive(Template)]
#[template(path = "scenarios.html")]
struct ScenariosT<'a> {
    dir: &'a str,
    runs: &'a [Run],
}

/// The placement explanation of a guest page (drawn once, when the page opens).
#[derive(Template)]
#[template(path = "explain.html")]
pub(crate) struct ExplainT<'a> {
    pub(crate) explain: &'a Result<VmExplainReply, String>,
}

/// The confirmation of an action.
#[derive(Template)]
#[template(path = "confirm.html")]
pub(crate) struct ConfirmT<'a> {
    pub(crate) question: &'a str,
    pub(crate) consequence: &'a str,
    pub(crate) csrf: &'a str,
    pub(crate) request: &'a str,
    pub(crate) action: &'a str,
    pub(crate) target: &'a str,
    pub(crate) choice_label: &'a str,
    pub(crate) choices: &'a [(String, String)],
    pub(crate) button: &'a str,
    pub(crate) back: &'a str,
}

/// The login page.
#[derive(Template)]
#[template(path = "login.html")]
pub(crate) struct LoginT<'a> {
    pub(crate) message: &'a str,
}

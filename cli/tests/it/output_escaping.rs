//! Operator- and peer-supplied text with control characters: every table prints it escaped
//! (`\u{1b}`, `\r`, `\n`, `\0`) and never as raw bytes that would act on the terminal, while
//! `--output json` keeps the exact text.

use crate::support::fixtures::*;
use cli::output::follow::event_line;
use cli::output::{EventsPage, IpAllocated, IpReleased, OutputFormat};
use protocol::admin::EventsReply;
use protocol::fleet::{Event, EventKind, EventLevel};
use serde_json::json;

/// Raw bytes a terminal would act on: every C0 control except the layout's line feeds, DEL,
/// and C1 controls.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect()
}

const NASTY: &str = "clear\u{1b}[2J\u{1b}]0;title\u{7} cr\r nul\0 csi\u{9b}31m";

#[test]
fn vm_show_escapes_a_description_and_a_status_message() {
    let mut vm = web_1();
    vm.spec.description = format!("line 1\n{NASTY}");
    vm.status.message = "agent said \u{1b}[31mred\u{1b}[0m".into();
    let text = table(&vm);
    assert_eq!(raw_controls(&text), Vec::<char>::new(), "{text:?}");
    assert!(
        text.contains(
            "description:  line 1\\nclear\\u{1b}[2J\\u{1b}]0;title\\u{7} cr\\r nul\\0 csi\\u{9b}31m\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("agent said \\u{1b}[31mred\\u{1b}[0m"),
        "{text}"
    );
    // JSON keeps the exact text.
    assert_eq!(
        json_of(&vm)["spec"]["description"],
        json!(format!("line 1\n{NASTY}"))
    );
}

#[test]
fn allocation_reports_escape_the_owner() {
    let allocated = IpAllocated {
        pool: "lan".into(),
        owner: format!("owner {NASTY}"),
        address: ip("10.0.0.11"),
        prefix_len: 24,
        gateway: None,
    };
    let text = table(&allocated);
    assert_eq!(raw_controls(&text), Vec::<char>::new(), "{text:?}");
    assert!(text.starts_with("10.0.0.11/24 allocated from pool lan to owner clear\\u{1b}[2J"));
    assert_eq!(
        json_of(&allocated)["owner"],
        json!(format!("owner {NASTY}"))
    );

    let released = IpReleased {
        pool: "lan".into(),
        address: ip("10.0.0.11"),
    };
    assert_eq!(table(&released), "10.0.0.11 released to pool lan\n");
    assert_eq!(
        json_of(&released),
        json!({"pool": "lan", "address": "10.0.0.11"})
    );
}

#[test]
fn events_escape_subjects_and_messages_in_tables_and_follow_lines() {
    let event = Event {
        seq: 7,
        at: NOW - 30_000,
        level: EventLevel::Info,
        kind: EventKind::Pool,
        subject: "lan".into(),
        message: format!("address 10.0.0.11 allocated to {NASTY}\nforged: line"),
    };
    let page = EventsPage {
        since: 0,
        reply: EventsReply {
            events: vec![event.clone()],
            first_seq: 7,
            last_seq: 7,
        },
    };
    let text = table(&page);
    assert_eq!(raw_controls(&text), Vec::<char>::new(), "{text:?}");
    assert!(!text.contains("\nforged"), "{text}");
    assert!(text.contains("\\nforged: line"), "{text}");

    let line = event_line(&event, OutputFormat::Table).unwrap();
    assert_eq!(raw_controls(&line), Vec::<char>::new(), "{line:?}");
    assert_eq!(
        line.matches('\n').count(),
        1,
        "one event, one line: {line:?}"
    );
    let json_line = event_line(&event, OutputFormat::Json).unwrap();
    let back: Event = serde_json::from_str(&json_line).unwrap();
    assert_eq!(back, event);
}

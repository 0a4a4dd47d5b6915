//! The managed-notes block: the part of a VM's PVE notes (`description`) the agent owns. It
//! names the fleet VM and the spec generation the config matches, between two markers, so the
//! agent can find and replace exactly its own block and read the generation back later. The
//! word `ha=1` marks an HA guest for fencing (its spec's `ha.state` is `started` or `stopped`,
//! `HaSpec::fences`; `disabled` and `ignored` guests are not marked): the agent fences such a
//! guest when its lease runs out (docs/design/fencing-agent.md), and the notes are how it knows its HA guests
//! without a coordinator, e.g. right after it started. A block without the word is `ha: false`
//! (blocks written before it existed stay valid; older agents skip words they do not know).
//!
//! ```text
//! <operator text: the spec's description, or whatever PVE had when the spec has none>
//!
//! <!-- pvefleet:managed -->
//! Managed by pvefleet: vm=web-1 generation=3 ha=1
//! <!-- /pvefleet:managed -->
//! ```

/// First line of the block.
const BEGIN: &str = "<!-- pvefleet:managed -->";
/// Last line of the block.
const END: &str = "<!-- /pvefleet:managed -->";
/// Lead of the content line.
const LEAD: &str = "Managed by pvefleet:";

/// What the block says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedNotes {
    /// The fleet VM name.
    pub vm: String,
    /// The spec generation last applied.
    pub generation: u64,
    /// An HA guest (`ha.state` `started` or `stopped`): the agent fences it on lease loss.
    pub ha: bool,
}

/// The block for `vm` at `generation`, with `ha=1` for an HA guest (`ha.state` `started` or
/// `stopped`).
pub fn render_block(vm: &str, generation: u64, ha: bool) -> String {
    let ha = if ha { " ha=1" } else { "" };
    format!("{BEGIN}\n{LEAD} vm={vm} generation={generation}{ha}\n{END}")
}

/// The block's position in `text` (start of BEGIN, end of END).
fn block_span(text: &str) -> Option<(usize, usize)> {
    let start = text.find(BEGIN)?;
    let end = text[start..].find(END)? + start + END.len();
    Some((start, end))
}

/// What the block in `description` says, if it has a well-formed one.
pub fn parse(description: &str) -> Option<ManagedNotes> {
    let (start, end) = block_span(description)?;
    let line = description[start..end]
        .lines()
        .find_map(|l| l.trim().strip_prefix(LEAD))?;
    let mut vm = None;
    let mut generation = None;
    let mut ha = false;
    for word in line.split_whitespace() {
        match word.split_once('=') {
            Some(("vm", v)) => vm = Some(v.to_string()),
            Some(("generation", g)) => generation = g.parse().ok(),
            // Only `1` counts: anything else is not a promise this agent wrote.
            Some(("ha", h)) => ha = h == "1",
            _ => {}
        }
    }
    Some(ManagedNotes {
        vm: vm?,
        generation: generation?,
        ha,
    })
}

/// `description` without the block (and the blank lines around it).
pub fn strip_block(description: &str) -> String {
    match block_span(description) {
        Some((start, end)) => {
            let before = description[..start].trim_end();
            let after = description[end..].trim_start();
            match (before.is_empty(), after.is_empty()) {
                (true, _) => after.to_string(),
                (false, true) => before.to_string(),
                (false, false) => format!("{before}\n\n{after}"),
            }
        }
        None => description.trim_end().to_string(),
    }
}

/// The notes the VM should carry: the spec's text when it has one, otherwise the text PVE has
/// outside the block (an operator's notes are kept), then the block.
pub fn desired_description(
    current: Option<&str>,
    spec_text: &str,
    vm: &str,
    generation: u64,
    ha: bool,
) -> String {
    let own = strip_block(spec_text);
    let text = if own.trim().is_empty() {
        current.map(strip_block).unwrap_or_default()
    } else {
        own
    };
    let block = render_block(vm, generation, ha);
    if text.trim().is_empty() {
        block
    } else {
        format!("{}\n\n{block}", text.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_round_trips() {
        let text = desired_description(None, "Web frontend.", "web-1", 7, false);
        assert_eq!(
            text,
            "Web frontend.\n\n<!-- pvefleet:managed -->\nManaged by pvefleet: vm=web-1 generation=7\n<!-- /pvefleet:managed -->"
        );
        assert_eq!(
            parse(&text),
            Some(ManagedNotes {
                vm: "web-1".into(),
                generation: 7,
                ha: false,
            })
        );
        assert_eq!(strip_block(&text), "Web frontend.");
    }

    #[test]
    fn only_the_own_block_is_replaced() {
        let current = format!(
            "Operator notes\nline two\n\n{}\n\nFooter",
            render_block("web-1", 1, false)
        );
        let next = desired_description(Some(&current), "", "web-1", 2, false);
        assert_eq!(
            next,
            format!(
                "Operator notes\nline two\n\nFooter\n\n{}",
                render_block("web-1", 2, false)
            )
        );
        // The spec's text wins over what PVE had.
        let next = desired_description(Some(&current), "From the spec", "web-1", 2, false);
        assert_eq!(
            next,
            format!("From the spec\n\n{}", render_block("web-1", 2, false))
        );
        // Without any text the notes are the block alone.
        assert_eq!(
            desired_description(
                Some(&render_block("web-1", 1, false)),
                "",
                "web-1",
                1,
                false
            ),
            render_block("web-1", 1, false)
        );
    }

    #[test]
    fn desired_notes_are_stable_when_applied_again() {
        let first = desired_description(Some("template notes"), "", "db", 3, true);
        assert_eq!(desired_description(Some(&first), "", "db", 3, true), first);
        let spec = desired_description(None, "db server", "db", 3, false);
        assert_eq!(
            desired_description(Some(&spec), "db server", "db", 3, false),
            spec
        );
    }

    #[test]
    fn the_ha_word_is_written_only_for_ha_specs_and_read_back() {
        let ha = render_block("db-1", 4, true);
        assert_eq!(
            ha,
            "<!-- pvefleet:managed -->\nManaged by pvefleet: vm=db-1 generation=4 ha=1\n<!-- /pvefleet:managed -->"
        );
        let parsed = |text: &str| parse(text).map(|n| (n.vm, n.generation, n.ha));
        assert_eq!(parsed(&ha), Some(("db-1".into(), 4, true)));
        assert!(!render_block("db-1", 4, false).contains("ha="));
        // (block line, ha): a block from before the word existed is not HA; only `ha=1`
        // counts; words an agent does not know are skipped, wherever they are.
        let table = [
            ("vm=db-1 generation=4", Some(false)),
            ("vm=db-1 generation=4 ha=1", Some(true)),
            ("ha=1 vm=db-1 generation=4", Some(true)),
            ("vm=db-1 generation=4 ha=0", Some(false)),
            ("vm=db-1 generation=4 ha=yes", Some(false)),
            ("vm=db-1 generation=4 zone=a ha=1 future=x", Some(true)),
            ("vm=db-1 ha=1", None),
        ];
        for (line, want) in table {
            let text = format!("{BEGIN}\n{LEAD} {line}\n{END}");
            assert_eq!(parse(&text).map(|n| n.ha), want, "{line}");
        }
        // Switching HA replaces the block, keeping the operator's text.
        let on = desired_description(Some("ops notes"), "", "db-1", 4, true);
        let off = desired_description(Some(&on), "", "db-1", 4, false);
        assert_eq!(
            off,
            format!("ops notes\n\n{}", render_block("db-1", 4, false))
        );
        assert_eq!(parse(&off).map(|n| n.ha), Some(false));
    }

    #[test]
    fn malformed_blocks_are_not_parsed() {
        for text in [
            "no block".to_string(),
            format!("{BEGIN}\n{LEAD} vm=x\n{END}"),
            format!("{BEGIN}\n{LEAD} vm=x generation=1"),
            format!("{BEGIN}\n{LEAD} generation=1\n{END}"),
        ] {
            assert_eq!(parse(&text), None, "{text}");
        }
    }
}

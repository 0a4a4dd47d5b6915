//! The managed-notes block: the part of a VM's PVE notes (`description`) the agent owns. It
//! names the fleet VM and the spec generation the config matches, between two markers, so the
//! agent can find and replace exactly its own block and read the generation back later.
//!
//! ```text
//! <operator text: the spec's description, or whatever PVE had when the spec has none>
//!
//! <!-- pvefleet:managed -->
//! Managed by pvefleet: vm=web-1 generation=3
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
}

/// The block for `vm` at `generation`.
pub fn render_block(vm: &str, generation: u64) -> String {
    format!("{BEGIN}\n{LEAD} vm={vm} generation={generation}\n{END}")
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
    for word in line.split_whitespace() {
        match word.split_once('=') {
            Some(("vm", v)) => vm = Some(v.to_string()),
            Some(("generation", g)) => generation = g.parse().ok(),
            _ => {}
        }
    }
    Some(ManagedNotes {
        vm: vm?,
        generation: generation?,
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
) -> String {
    let own = strip_block(spec_text);
    let text = if own.trim().is_empty() {
        current.map(strip_block).unwrap_or_default()
    } else {
        own
    };
    let block = render_block(vm, generation);
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
        let text = desired_description(None, "Web frontend.", "web-1", 7);
        assert_eq!(
            text,
            "Web frontend.\n\n<!-- pvefleet:managed -->\nManaged by pvefleet: vm=web-1 generation=7\n<!-- /pvefleet:managed -->"
        );
        assert_eq!(
            parse(&text),
            Some(ManagedNotes {
                vm: "web-1".into(),
                generation: 7
            })
        );
        assert_eq!(strip_block(&text), "Web frontend.");
    }

    #[test]
    fn only_the_own_block_is_replaced() {
        let current = format!(
            "Operator notes\nline two\n\n{}\n\nFooter",
            render_block("web-1", 1)
        );
        let next = desired_description(Some(&current), "", "web-1", 2);
        assert_eq!(
            next,
            format!(
                "Operator notes\nline two\n\nFooter\n\n{}",
                render_block("web-1", 2)
            )
        );
        // The spec's text wins over what PVE had.
        let next = desired_description(Some(&current), "From the spec", "web-1", 2);
        assert_eq!(
            next,
            format!("From the spec\n\n{}", render_block("web-1", 2))
        );
        // Without any text the notes are the block alone.
        assert_eq!(
            desired_description(Some(&render_block("web-1", 1)), "", "web-1", 1),
            render_block("web-1", 1)
        );
    }

    #[test]
    fn desired_notes_are_stable_when_applied_again() {
        let first = desired_description(Some("template notes"), "", "db", 3);
        assert_eq!(desired_description(Some(&first), "", "db", 3), first);
        let spec = desired_description(None, "db server", "db", 3);
        assert_eq!(desired_description(Some(&spec), "db server", "db", 3), spec);
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

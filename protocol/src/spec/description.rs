//! The `description` rule: what PVE's schema accepts for a VM's notes, less the room the agent
//! needs for its managed-notes block and the one character no PVE interface can carry.
//!
//! PVE declares `description` (create, `PUT`/`POST .../config`) as `type: string`,
//! `maxLength: 8192`, with no format and no pattern (`apidata.json`, 9.1 and 8.4 alike), and
//! `JSONSchema.pm` counts `maxLength` in characters. So line breaks, tabs, ESC, CR and any other
//! Unicode text are stored as written (`write_vm_config` percent-encodes them in the config
//! file and reads them back). The fleet accepts the same, with two narrowings:
//!
//! * the agent appends its managed-notes block to the operator's text, so the operator gets
//!   [`DESCRIPTION_MAX_CHARS`] of PVE's 8192 characters and the block the rest;
//! * NUL is refused: PVE's HTTP layer joins repeated parameters with NUL, and `pvesh` takes
//!   parameters as command-line arguments, which cannot hold one, so a NUL would be accepted
//!   here and then fail on the host for good.
//!
//! Showing such text safely is the CLI's job: its tables escape control characters.

/// PVE's `maxLength` of `description`, in characters.
pub const PVE_DESCRIPTION_MAX_CHARS: usize = 8192;

/// Characters of PVE's limit kept for the agent's managed-notes block and the blank line
/// before it (the block is at most 172 characters: markers, a 63-character VM name and a
/// 20-digit generation).
pub const DESCRIPTION_RESERVED_CHARS: usize = 192;

/// The longest description an operator may write, in characters.
pub const DESCRIPTION_MAX_CHARS: usize = PVE_DESCRIPTION_MAX_CHARS - DESCRIPTION_RESERVED_CHARS;

/// Why a VM's `description` is refused, if it is: the value as shown and what is allowed
/// (the validator makes the [`SpecError`](super::SpecError) of them).
pub(crate) fn refusal(text: &str) -> Option<Refusal> {
    let chars = text.chars().count();
    if chars > DESCRIPTION_MAX_CHARS {
        return Some(Refusal {
            shown: format!("<{chars} characters>"),
            allowed: format!(
                "at most {DESCRIPTION_MAX_CHARS} characters (PVE keeps {PVE_DESCRIPTION_MAX_CHARS}; \
                 the rest holds the fleet's managed notes)"
            ),
        });
    }
    let at = text.chars().position(|c| c == '\0')?;
    Some(Refusal {
        shown: format!("<NUL at character {at}>"),
        allowed: "any text without NUL (\\0): PVE reads NUL as a separator of repeated \
                  parameters and pvesh cannot pass it; line breaks, tabs and other characters \
                  are kept as written"
            .to_string(),
    })
}

/// A refused description: the value as shown in the error and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) shown: String,
    pub(crate) allowed: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_pve_stores_as_written_is_accepted() {
        for text in [
            "",
            "front end",
            "line 1\nline 2\n\n- owner: web team",
            "windows line\r\nends",
            "tab\tseparated",
            "colour \u{1b}[31mred\u{1b}[0m and a bell \u{7}",
            "Grüße, 東京, emoji 🚀",
        ] {
            assert_eq!(refusal(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_limit_counts_characters_as_pve_does() {
        let at_limit = "é".repeat(DESCRIPTION_MAX_CHARS);
        assert!(
            at_limit.len() > DESCRIPTION_MAX_CHARS,
            "multi-byte on purpose"
        );
        assert_eq!(refusal(&at_limit), None);
        let e = refusal(&"x".repeat(DESCRIPTION_MAX_CHARS + 1)).unwrap();
        assert_eq!(
            e.shown,
            format!("<{} characters>", DESCRIPTION_MAX_CHARS + 1)
        );
        assert!(e.allowed.contains("at most 8000 characters"), "{e:?}");
        assert!(e.allowed.contains("8192"), "{e:?}");
    }

    #[test]
    fn nul_is_refused_with_its_position_and_the_reason() {
        let e = refusal("esc \u{1b} cr \r nul \0 end").unwrap();
        assert_eq!(e.shown, "<NUL at character 15>");
        assert!(e.allowed.contains("without NUL"), "{e:?}");
    }

    #[test]
    fn the_reserve_holds_the_largest_managed_notes_block() {
        // Mirrors node-agent's `notes::render_block` with the longest name and generation.
        let block = format!(
            "\n\n<!-- pvefleet:managed -->\nManaged by pvefleet: vm={} generation={} ha=1\n<!-- /pvefleet:managed -->",
            "a".repeat(63),
            u64::MAX
        );
        assert!(block.chars().count() <= DESCRIPTION_RESERVED_CHARS);
    }
}

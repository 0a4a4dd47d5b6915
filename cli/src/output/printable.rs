//! Text safe to print on a terminal. Names, descriptions, owners, event messages, errors: much
//! of what `pvefleet` prints was typed by an operator or reported by a remote peer, and a raw
//! control character in it would act on the terminal (ESC sequences clear the screen or retitle
//! the window, CR overwrites the line, a newline forges a table row).
//!
//! Convention: every control character (Unicode category Cc: C0, DEL and C1) is printed as its
//! Rust escape: `\n`, `\r`, `\t`, `\0`, and `\u{..}` for the others (ESC is `\u{1b}`).
//! Backslashes are printed as they are, so `\r` on screen may also be the two characters an
//! operator typed; `--output json` shows the exact text (serde_json writes control characters
//! as `\u001b`-style escapes, so JSON output needs nothing from here).
//!
//! Applied where text leaves the CLI as a table: every table cell and `key: value` value is
//! one line ([`one_line`]), and the whole text of a table, a report or a message is passed
//! through [`terminal_text`] before it is written, which keeps only the line breaks the
//! layout itself put there.

use std::borrow::Cow;

/// `text` on one line: every control character escaped, line breaks included.
pub fn one_line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// `text` with every control character escaped except `\n`, for text laid out in lines.
pub fn terminal_text(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && !(keep_newlines && c == '\n');
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            // `escape_debug` gives `\n`, `\r`, `\t`, `\0` and `\u{1b}` for a control character.
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_rust_escapes() {
        assert_eq!(
            one_line("a\u{1b}[2Jb\rc\0d\te\nf\u{7f}g\u{9b}h"),
            "a\\u{1b}[2Jb\\rc\\0d\\te\\nf\\u{7f}g\\u{9b}h"
        );
        assert_eq!(terminal_text("x\u{1b}\ny\r\n"), "x\\u{1b}\ny\\r\n");
    }

    #[test]
    fn printable_text_is_left_alone_without_copying() {
        for text in ["web-1", "Grüße 東京 🚀", "back\\slash", "two\nlines"] {
            assert!(matches!(terminal_text(text), Cow::Borrowed(_)), "{text}");
        }
        assert!(matches!(one_line("é ok"), Cow::Borrowed(_)));
    }
}

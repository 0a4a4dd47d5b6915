//! `tags`: a `pve-tag-list`, tags matching `[a-z0-9_][a-z0-9_\-\+\.]*` (PVE compares them
//! case-insensitively, so upper case is accepted too), joined with `;`.
//!
//! Written sorted and without duplicates, the form PVE stores on create, so a desired tag set
//! compares equal to what a config read back holds.

use crate::error::PveError;
use crate::props::kv::invalid;

/// Whether `tag` is a valid PVE tag.
pub fn is_valid_tag(tag: &str) -> bool {
    let mut bytes = tag.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
    first_ok && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'.'))
}

/// The validated tag list: sorted, deduplicated, `;`-joined. An empty list is refused (clear
/// tags by deleting the `tags` key).
pub fn format_tags<S: AsRef<str>>(tags: &[S]) -> Result<String, PveError> {
    let mut out: Vec<&str> = Vec::with_capacity(tags.len());
    for tag in tags {
        let tag = tag.as_ref();
        if !is_valid_tag(tag) {
            return Err(invalid(
                "tags",
                format!("'{tag}' is not a tag ([a-z0-9_] then [a-z0-9_-+.]*)"),
            ));
        }
        out.push(tag);
    }
    if out.is_empty() {
        return Err(invalid(
            "tags",
            "empty tag list; delete the 'tags' key to clear tags",
        ));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out.join(";"))
}

/// The tags of a `tags` value; PVE splits on `;`, `,` and whitespace.
pub fn parse_tags(text: &str) -> Result<Vec<String>, PveError> {
    text.split(|c: char| c == ';' || c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| {
            if is_valid_tag(t) {
                Ok(t.to_string())
            } else {
                Err(invalid("tags", format!("'{t}' in '{text}' is not a tag")))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_sorted_unique() {
        assert_eq!(
            format_tags(&["web", "prod", "web", "k8s.node+1"]).unwrap(),
            "k8s.node+1;prod;web"
        );
        assert_eq!(format_tags(&["_x"]).unwrap(), "_x");
    }

    #[test]
    fn parses_every_separator_and_round_trips() {
        assert_eq!(parse_tags("a;b,c d").unwrap(), vec!["a", "b", "c", "d"]);
        assert!(parse_tags("").unwrap().is_empty());
        let text = "fleet;prod;web-1";
        assert_eq!(format_tags(&parse_tags(text).unwrap()).unwrap(), text);
    }

    #[test]
    fn invalid_tags_name_the_field() {
        for bad in [vec!["-x"], vec!["a b"], vec!["x;y"], vec!["é"], vec![]] {
            let e = format_tags(&bad).unwrap_err();
            assert!(
                matches!(e, PveError::Invalid { ref field, .. } if field == "tags"),
                "{bad:?}"
            );
        }
        assert!(
            matches!(parse_tags("ok;+bad"), Err(PveError::Invalid { ref field, .. }) if field == "tags")
        );
    }
}

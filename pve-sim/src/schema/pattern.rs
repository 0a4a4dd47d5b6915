//! Perl regular expressions of the schema (`pattern`, and the simulator's own format checks),
//! translated to the `regex` crate's dialect and compiled once.
//!
//! The schema dump carries Perl's stringified `qr//` objects (`(?^i:...)`), atomic groups and
//! `\0` escapes that `regex` does not know. A pattern that still does not compile after the
//! translation is treated as matching everything: the simulator must never refuse a request PVE
//! would accept because of a dialect gap.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use regex::{Regex, RegexBuilder};

/// Compiled patterns by source text; `None` = untranslatable, accept.
fn cache() -> &'static Mutex<HashMap<String, Option<Regex>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Regex>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Compile (or fetch) `^<pattern>$` with Perl's anchoring: the pattern is interpolated
/// without a group, exactly like `m/^$pattern$/`, and `$` also matches before a final newline.
fn anchored(pattern: &str) -> Option<Regex> {
    let mut guard = cache().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = guard.get(pattern) {
        return found.clone();
    }
    let source = format!("^{}(?:\\n?\\z)", translate(pattern));
    // Unicode classes under a large repetition can exceed the size limit; the ASCII variant
    // is close enough for such (free-text) patterns.
    let compiled = Regex::new(&source)
        .or_else(|_| RegexBuilder::new(&source).unicode(false).build())
        .ok();
    guard.insert(pattern.to_string(), compiled.clone());
    compiled
}

/// `value =~ m/^$pattern$/` for a schema pattern (untranslatable patterns match).
pub(crate) fn full_match(pattern: &str, value: &str) -> bool {
    anchored(pattern).is_none_or(|re| re.is_match(value))
}

/// Translate Perl regex syntax to the `regex` crate's syntax.
pub(crate) fn translate(perl: &str) -> String {
    let chars: Vec<char> = perl.chars().collect();
    let mut out = String::with_capacity(perl.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            let next = chars.get(i + 1).copied();
            match next {
                // `\0` (octal NUL) is not supported by `regex`.
                Some('0') if !chars.get(i + 2).is_some_and(char::is_ascii_digit) => {
                    out.push_str("\\x00");
                }
                Some('Z') => out.push_str("\\n?\\z"),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
            i += 2;
            continue;
        }
        if c == '(' && chars.get(i + 1) == Some(&'?') {
            // `(?^flags:` = reset flags, then set these: `regex` has no `^`.
            if chars.get(i + 2) == Some(&'^') {
                let mut j = i + 3;
                let mut flags = String::new();
                while let Some(f) = chars.get(j) {
                    if f.is_ascii_alphabetic() {
                        flags.push(*f);
                        j += 1;
                    } else {
                        break;
                    }
                }
                if chars.get(j) == Some(&':') {
                    out.push_str("(?");
                    out.push_str(&flags);
                    out.push(':');
                    i = j + 1;
                    continue;
                }
            }
            // Atomic group `(?>...)`: a plain group accepts the same strings here.
            if chars.get(i + 2) == Some(&'>') {
                out.push_str("(?:");
                i += 3;
                continue;
            }
        }
        // `{,n}` is `{0,n}` in modern Perl.
        if c == '{' && chars.get(i + 1) == Some(&',') {
            out.push_str("{0");
            i += 1;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_qr_stringification_is_translated() {
        assert_eq!(translate("(?^i:[a-z]+)"), "(?i:[a-z]+)");
        assert_eq!(translate("(?^:\\d+)"), "(?:\\d+)");
        assert_eq!(translate("(?>a+)"), "(?:a+)");
        assert_eq!(translate("[a-z]{,16}"), "[a-z]{0,16}");
        assert_eq!(translate("a\\0b"), "a\\x00b");
    }

    #[test]
    fn anchoring_is_perls() {
        assert!(full_match("\\d+(?:;\\d+)*", "1;2;3"));
        assert!(!full_match("\\d+(?:;\\d+)*", "1;2;x"));
        // Perl's `$` tolerates one trailing newline.
        assert!(full_match("\\d+", "12\n"));
        // Alternation is not grouped by `m/^$pattern$/`.
        assert!(full_match(
            "/dev/parport\\d+|/dev/usb/lp\\d+",
            "/dev/parport0"
        ));
        assert!(full_match("(?^i:[a-z0-9_][a-z0-9_\\-\\+\\.]*)", "Web-1"));
    }

    #[test]
    fn every_pattern_of_the_official_schemas_compiles_after_translation() {
        let samples = [
            "(?^:^(:?(?^i:[0-9a-z\\-_\\.]+:[0-9a-zA-Z\\-_]+))(:?[;, ](?^i:[0-9a-z\\-_\\.]+:[0-9a-zA-Z\\-_]+))*$)",
            "(?^:^(?^:[^\\s:/]+)\\@(?^:[A-Za-z][A-Za-z0-9\\.\\-_]+)(?:!(?^:[A-Za-z][A-Za-z0-9\\.\\-_]+))?$)",
            "(?^:(?:\\w+=[^\\x00-\\x08\\x10-\\x1F\\x7F]*)(?:\\0\\w+=[^\\x00-\\x08\\x10-\\x1F\\x7F]*)*)",
            "(?^:^((?>[+-]?[\\w\\-\\._=]+,?)+)$)",
            "(?^i:[\\(\\)-_.\\w\\d\\s]{0,256})",
            "[A-Za-z0-9\\-_\\s]{,16}",
            "^/dev/[a-zA-Z0-9\\/]+$",
        ];
        for p in samples {
            assert!(anchored(p).is_some(), "{p} -> {}", translate(p));
        }
    }
}

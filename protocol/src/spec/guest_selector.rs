//! Which VMs a placement rule names (`placement.apart_from`, `placement.together_with`): a VM
//! by name, or every VM with a PVE tag (`tag:web`), and the rules between two VMs (each rule
//! holds both ways, as PVE's resource-affinity rules do).

use std::fmt;

/// A VM name, or every VM carrying a PVE tag.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GuestSelector {
    /// The VM of this name.
    Name(String),
    /// Every VM with this tag (`tag:<tag>` in a spec).
    Tag(String),
}

impl GuestSelector {
    /// Reads a selector as a spec writes it (validated before: see `rules::GUEST_SELECTOR`).
    pub fn parse(text: &str) -> GuestSelector {
        match text.strip_prefix("tag:") {
            Some(tag) => GuestSelector::Tag(tag.to_string()),
            None => GuestSelector::Name(text.to_string()),
        }
    }

    /// Whether the VM `name` with `tags` is selected.
    pub fn matches(&self, name: &str, tags: &[String]) -> bool {
        match self {
            GuestSelector::Name(n) => n == name,
            GuestSelector::Tag(t) => tags.iter().any(|x| x == t),
        }
    }
}

impl fmt::Display for GuestSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuestSelector::Name(n) => f.write_str(n),
            GuestSelector::Tag(t) => write!(f, "tag:{t}"),
        }
    }
}

/// A VM as the placement rules see it: its name, tags and rules.
#[derive(Debug, Clone, Copy)]
pub struct RuleParty<'a> {
    /// The VM's name.
    pub name: &'a str,
    /// Its PVE tags.
    pub tags: &'a [String],
    /// Its `placement.apart_from`.
    pub apart_from: &'a [String],
    /// Its `placement.together_with`.
    pub together_with: &'a [String],
}

impl<'a> RuleParty<'a> {
    /// The party of a spec.
    pub fn of(spec: &'a super::VmSpec) -> RuleParty<'a> {
        RuleParty {
            name: &spec.name,
            tags: &spec.tags,
            apart_from: &spec.placement.apart_from,
            together_with: &spec.placement.together_with,
        }
    }

    /// The first of `selectors` that selects `other` (never a VM itself).
    fn naming(&self, selectors: &'a [String], other: &RuleParty<'_>) -> Option<&'a str> {
        if self.name == other.name {
            return None;
        }
        selectors
            .iter()
            .find(|s| GuestSelector::parse(s).matches(other.name, other.tags))
            .map(String::as_str)
    }

    /// The anti-affinity rule that keeps `self` and `other` apart, either way, in words
    /// (`web-1's placement.apart_from "tag:web"`); `None` if there is none.
    pub fn apart(&self, other: &RuleParty<'_>) -> Option<String> {
        if let Some(s) = self.naming(self.apart_from, other) {
            return Some(format!("{}'s placement.apart_from {s:?}", self.name));
        }
        other
            .naming(other.apart_from, self)
            .map(|s| format!("{}'s placement.apart_from {s:?}", other.name))
    }

    /// The affinity rule that keeps `self` and `other` together, either way, in words.
    pub fn together(&self, other: &RuleParty<'_>) -> Option<String> {
        if let Some(s) = self.naming(self.together_with, other) {
            return Some(format!("{}'s placement.together_with {s:?}", self.name));
        }
        other
            .naming(other.together_with, self)
            .map(|s| format!("{}'s placement.together_with {s:?}", other.name))
    }

    /// Why `self` and `other` can never be placed: one rule keeps them together and another
    /// apart. `None` when their rules agree.
    pub fn conflict(&self, other: &RuleParty<'_>) -> Option<String> {
        let together = self.together(other)?;
        let apart = self.apart(other)?;
        Some(format!(
            "{together} and {apart} contradict each other: VMs {} and {} cannot be both together \
             and apart; remove one of the two rules",
            self.name, other.name
        ))
    }
}

/// The VMs affinity rules tie `vm` to, transitively (overlapping positive rules form one
/// group, as in PVE), among `all`; `vm` itself is not in the list. Group order: discovery.
pub fn together_group<'a>(vm: &super::VmSpec, all: &[&'a super::VmSpec]) -> Vec<&'a super::VmSpec> {
    let mut group: Vec<&super::VmSpec> = vec![vm];
    let mut found: Vec<&'a super::VmSpec> = Vec::new();
    let mut i = 0;
    while i < group.len() {
        let member = RuleParty::of(group[i]);
        for other in all {
            let known = other.name == vm.name || found.iter().any(|g| g.name == other.name);
            if !known && member.together(&RuleParty::of(other)).is_some() {
                found.push(other);
                group.push(other);
            }
        }
        i += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::VmSpec;

    fn vm(name: &str, tags: &[&str], apart: &[&str], together: &[&str]) -> VmSpec {
        let mut spec = VmSpec::new(name, 512);
        spec.tags = tags.iter().map(|t| t.to_string()).collect();
        spec.placement.apart_from = apart.iter().map(|t| t.to_string()).collect();
        spec.placement.together_with = together.iter().map(|t| t.to_string()).collect();
        spec
    }

    #[test]
    fn rules_hold_both_ways_by_name_or_tag_and_never_on_the_vm_itself() {
        let web1 = vm("web-1", &["web"], &["tag:web"], &[]);
        let web2 = vm("web-2", &["web"], &[], &[]);
        let db = vm("db", &[], &[], &["web-2"]);
        let (w1, w2, d) = (
            RuleParty::of(&web1),
            RuleParty::of(&web2),
            RuleParty::of(&db),
        );
        assert_eq!(
            w1.apart(&w2).as_deref(),
            Some("web-1's placement.apart_from \"tag:web\"")
        );
        assert_eq!(w2.apart(&w1), w1.apart(&w2), "both ways");
        assert_eq!(w1.apart(&w1), None, "a tag rule never names the VM itself");
        assert_eq!(w1.apart(&d), None);
        assert_eq!(
            w2.together(&d).as_deref(),
            Some("db's placement.together_with \"web-2\"")
        );
        assert_eq!(w2.conflict(&d), None);
    }

    #[test]
    fn together_and_apart_between_the_same_two_vms_is_a_conflict_naming_both_rules() {
        let a = vm("a", &["x"], &[], &["b"]);
        let b = vm("b", &[], &["tag:x"], &[]);
        let m = RuleParty::of(&a).conflict(&RuleParty::of(&b)).unwrap();
        assert!(m.contains("a's placement.together_with \"b\""), "{m}");
        assert!(m.contains("b's placement.apart_from \"tag:x\""), "{m}");
        assert!(RuleParty::of(&b).conflict(&RuleParty::of(&a)).is_some());
    }

    #[test]
    fn a_group_is_every_vm_tied_by_overlapping_rules_either_way() {
        let db = vm("db", &[], &[], &[]);
        let app = vm("app", &["front"], &[], &["db"]);
        let cache = vm("cache", &[], &[], &["tag:front"]);
        let other = vm("other", &[], &[], &[]);
        let all = [&db, &app, &cache, &other];
        let names = |g: Vec<&VmSpec>| g.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(together_group(&db, &all)), ["app", "cache"]);
        assert_eq!(names(together_group(&cache, &all)), ["app", "db"]);
        assert!(together_group(&other, &all).is_empty());
    }
}

//! Who hears a run as it goes: the bring-up's narration and the timeline entries, as they
//! happen (the CLI prints them).

use super::timeline::TimelineEntry;

/// Who hears the run as it goes.
pub trait Observer: Send {
    /// A line about the bring-up or the teardown.
    fn narrate(&mut self, text: &str);
    /// A timeline entry, as it happens.
    fn entry(&mut self, entry: &TimelineEntry);
}

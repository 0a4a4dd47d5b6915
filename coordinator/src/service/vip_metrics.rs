//! What this member's VIP gauges show at a scrape (docs/design/vips.md, "Splits"): per VIP,
//! whom it vouches for now, and whether that is a split (another host says it holds the VIP
//! while this member backs someone else). Read from the member's own promise book and the
//! renewals it heard; nothing is asked of other members.

use crate::http::metrics::VipSample;

use super::Ctx;

impl Ctx {
    /// One sample per VIP of the applied state.
    pub(crate) fn vip_samples(&self) -> Vec<VipSample> {
        let names: Vec<String> = self
            .read_local(|s| s.vips().keys().cloned().collect())
            .unwrap_or_default();
        let recent = self.vip_promises.lease_ms() / 2;
        names
            .into_iter()
            .map(|vip| {
                let vouching = self.vip_promises.vouching(&vip);
                let split = vouching.is_some_and(|(holder, _)| {
                    self.vip_sightings.held_by_other(&vip, holder, recent)
                });
                VipSample {
                    vip,
                    vouching,
                    split,
                }
            })
            .collect()
    }
}

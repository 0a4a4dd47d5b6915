//! PVE's own HA manager: `GET /cluster/ha/resources`, the guests it drives.

use crate::client::Client;
use crate::error::PveError;
use crate::props::str_enum::str_enum;
use crate::request::{ApiRequest, Method};
use crate::types::HaResource;

str_enum! {
    /// Filter of `GET /cluster/ha/resources`.
    pub enum HaResourceType: "type" {
        Vm = "vm",
        Ct = "ct",
    }
}

/// `GET /cluster/ha/resources[?type=]`. Needs `Sys.Audit` on `/`.
pub fn ha_resources_request(kind: Option<HaResourceType>) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(Method::Get, "/cluster/ha/resources").opt("type", kind))
}

impl Client {
    /// The resources PVE's own HA manager drives (`ha-manager status`'s configured list),
    /// optionally of one type.
    pub async fn ha_resources(
        &self,
        kind: Option<HaResourceType>,
    ) -> Result<Vec<HaResource>, PveError> {
        self.fetch(&ha_resources_request(kind)?).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_sends_the_type_filter() {
        let r = ha_resources_request(Some(HaResourceType::Vm)).unwrap();
        assert_eq!(
            (r.method, r.path.as_str(), r.params.clone()),
            (
                Method::Get,
                "/cluster/ha/resources",
                vec![("type".to_string(), "vm".to_string())]
            )
        );
        assert!(ha_resources_request(None).unwrap().params.is_empty());
    }
}

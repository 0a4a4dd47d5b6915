//! The dashboard's actions: the CLI's own requests (`vm start|stop|restart`, `vm migrate`,
//! `host maintenance`, `vip move`), confirmed on a page of their own and sent through the
//! member's Admin handlers as the session's admin, each under the request id its confirmation
//! page drew (so a form submitted twice acts once).

use protocol::RequestId;
use protocol::admin::{
    HostMaintenance, MaintenanceAction, VipMove, VmMigrate, VmPower, VmPowerAction,
};
use protocol::fleet::HostState;
use rand::Rng;
use transport::{Caller, RemoteError, Router};

use super::snapshot::Snapshot;
use super::views::url_part;

/// An action a confirmation page offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    Start,
    Stop,
    Restart,
    Migrate,
    MaintenanceOn,
    MaintenanceOff,
    VipMove,
}

impl Action {
    /// The action named in a form (`start`, `vip-move`...).
    pub(crate) fn parse(name: &str) -> Option<Action> {
        Some(match name {
            "start" => Action::Start,
            "stop" => Action::Stop,
            "restart" => Action::Restart,
            "migrate" => Action::Migrate,
            "maintenance-on" => Action::MaintenanceOn,
            "maintenance-off" => Action::MaintenanceOff,
            "vip-move" => Action::VipMove,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Action::Start => "start",
            Action::Stop => "stop",
            Action::Restart => "restart",
            Action::Migrate => "migrate",
            Action::MaintenanceOn => "maintenance-on",
            Action::MaintenanceOff => "maintenance-off",
            Action::VipMove => "vip-move",
        }
    }

    /// The page the action's target is shown on.
    pub(crate) fn back(self, target: &str) -> String {
        match self {
            Action::Start | Action::Stop | Action::Restart | Action::Migrate => {
                format!("/guests/{}", url_part(target))
            }
            Action::MaintenanceOn | Action::MaintenanceOff => {
                format!("/hosts/{}", url_part(target))
            }
            Action::VipMove => "/vips".to_string(),
        }
    }
}

/// What a confirmation page asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Question {
    pub(crate) question: String,
    pub(crate) consequence: String,
    pub(crate) button: String,
    pub(crate) choice_label: String,
    /// The values offered (the form's value, what the operator reads).
    pub(crate) choices: Vec<(String, String)>,
}

/// The question for `action` on `target` given the fleet `s`, or why it cannot be asked.
pub(crate) fn question(action: Action, target: &str, s: &Snapshot) -> Result<Question, String> {
    let vm = || {
        s.vms
            .iter()
            .find(|v| v.spec.name == target)
            .ok_or_else(|| format!("no guest is named {target:?}"))
    };
    let q = |question: String, consequence: &str, button: &str| Question {
        question,
        consequence: consequence.to_string(),
        button: button.to_string(),
        choice_label: String::new(),
        choices: Vec::new(),
    };
    Ok(match action {
        Action::Start => {
            vm()?;
            q(
                format!("Start guest {target}?"),
                "Its desired state becomes running: the fleet starts it and keeps it running.",
                "Start",
            )
        }
        Action::Stop => {
            vm()?;
            q(
                format!("Stop guest {target}?"),
                "Its desired state becomes stopped: the fleet shuts it down (stopping it after \
                 the timeout) and keeps it stopped, HA included.",
                "Stop",
            )
        }
        Action::Restart => {
            vm()?;
            q(
                format!("Restart guest {target}?"),
                "Its host shuts it down and starts it again now; its desired state stays running.",
                "Restart",
            )
        }
        Action::Migrate => {
            let vm = vm()?;
            let here = vm.status.current_host.or(vm.assignment.host);
            let mut question = q(
                format!("Migrate guest {target}?"),
                "PVE moves it to the chosen host of its PVE cluster (online if it runs); the \
                 fleet places it there from then on.",
                "Migrate",
            );
            question.choice_label = "To host".into();
            question.choices = std::iter::once((
                String::new(),
                "the best host (the scheduler's choice)".to_string(),
            ))
            .chain(
                s.hosts
                    .iter()
                    .filter(|h| h.host.state == HostState::Online && Some(h.host.id) != here)
                    .map(|h| (h.host.name.clone(), h.host.name.clone())),
            )
            .collect();
            question
        }
        Action::MaintenanceOn | Action::MaintenanceOff => {
            if !s.hosts.iter().any(|h| h.host.name == target) {
                return Err(format!("no host is named {target:?}"));
            }
            if action == Action::MaintenanceOn {
                q(
                    format!("Put host {target} in maintenance?"),
                    "Its guests are migrated away and nothing new is placed on it until \
                     maintenance ends.",
                    "Enter maintenance",
                )
            } else {
                q(
                    format!("End maintenance of host {target}?"),
                    "It takes guests again; those drained from it move back.",
                    "End maintenance",
                )
            }
        }
        Action::VipMove => {
            let vip = s
                .vips
                .iter()
                .find(|v| v.vip.spec.name == target)
                .ok_or_else(|| format!("no VIP is named {target:?}"))?;
            let mut question = q(
                format!("Move VIP {target} ({})?", vip.vip.spec.address),
                "Its owner releases it, then the chosen host takes it (never both at once).",
                "Move",
            );
            question.choice_label = "To host".into();
            question.choices = vip
                .hosts
                .iter()
                .filter(|h| h.eligible && Some(h.id) != vip.vip.owner)
                .map(|h| (h.host.clone(), h.host.clone()))
                .collect();
            if question.choices.is_empty() {
                question.choices = s
                    .hosts
                    .iter()
                    .filter(|h| Some(h.host.id) != vip.vip.owner)
                    .map(|h| (h.host.name.clone(), h.host.name.clone()))
                    .collect();
            }
            question
        }
    })
}

/// A new request id, as its confirmation form carries it (32 hex digits).
pub(crate) fn new_request() -> String {
    let bytes: [u8; 16] = rand::rng().random();
    hex::encode(bytes)
}

/// The request id a form carried, if well formed.
pub(crate) fn parse_request(text: &str) -> Option<RequestId> {
    let bytes: [u8; 16] = hex::decode(text).ok()?.try_into().ok()?;
    Some(RequestId(bytes))
}

/// Runs `action` on `target` (with `to` for a migration or a VIP move) through `router` as
/// `caller`, once for `request`; the text tells the outcome.
pub(crate) async fn run(
    router: &Router,
    caller: Caller,
    request: RequestId,
    action: Action,
    target: &str,
    to: &str,
) -> Result<String, RemoteError> {
    let id = Some(request);
    let power = |a| VmPower {
        name: target.to_string(),
        request_id: request.to_string(),
        action: a,
    };
    match action {
        Action::Start | Action::Stop | Action::Restart => {
            let a = match action {
                Action::Start => VmPowerAction::Start,
                Action::Stop => VmPowerAction::Stop,
                _ => VmPowerAction::Restart,
            };
            let reply = router.call_local(caller, &power(a), id).await?;
            Ok(format!(
                "{} {target}: {} (generation {})",
                action.name(),
                reply.message,
                reply.generation
            ))
        }
        Action::Migrate => {
            let req = VmMigrate {
                name: target.to_string(),
                to: (!to.is_empty()).then(|| to.to_string()),
            };
            let reply = router.call_local(caller, &req, id).await?;
            Ok(format!(
                "migrate {target}: from {} to {}{}; follow it on this page",
                reply.from,
                reply.to,
                if reply.chosen.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", reply.chosen)
                }
            ))
        }
        Action::MaintenanceOn | Action::MaintenanceOff => {
            let req = HostMaintenance {
                host: target.to_string(),
                action: if action == Action::MaintenanceOn {
                    MaintenanceAction::Enable
                } else {
                    MaintenanceAction::Disable
                },
            };
            let reply = router.call_local(caller, &req, id).await?;
            Ok(format!(
                "host {}: {}; {} guest(s) still to move",
                reply.host,
                reply.state,
                reply.left.len()
            ))
        }
        Action::VipMove => {
            if to.is_empty() {
                return Err(RemoteError::bad_request(
                    "choose the host to move the VIP to",
                ));
            }
            let req = VipMove {
                name: target.to_string(),
                host: to.to_string(),
            };
            let reply = router.call_local(caller, &req, id).await?;
            Ok(format!(
                "VIP {target} granted to {to} at epoch {}",
                reply.epoch
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_round_trip_and_garbage_is_refused() {
        let text = new_request();
        let id = parse_request(&text).expect("parses");
        assert_eq!(hex::encode(id.0), text);
        assert!(parse_request("zz").is_none());
        assert!(parse_request("").is_none());
        assert!(parse_request(&"a".repeat(34)).is_none());
    }

    #[test]
    fn every_action_parses_back_from_its_name() {
        for a in [
            Action::Start,
            Action::Stop,
            Action::Restart,
            Action::Migrate,
            Action::MaintenanceOn,
            Action::MaintenanceOff,
            Action::VipMove,
        ] {
            assert_eq!(Action::parse(a.name()), Some(a));
        }
        assert_eq!(Action::parse("delete"), None);
    }

    #[test]
    fn a_question_about_an_unknown_target_is_refused() {
        let s = Snapshot::default();
        assert!(question(Action::Stop, "nope", &s).is_err());
        assert!(question(Action::MaintenanceOn, "nope", &s).is_err());
        assert!(question(Action::VipMove, "nope", &s).is_err());
    }
}

//! Bringing a VM into existence at its allocated VMID: a clone of a template (found by VMID, or
//! by name among the templates of this node; linked or full, a full clone on the spec's
//! storage), or a VM created from scratch with every setting of the plan in the one create
//! call. A clone carries the managed-notes block from the start, so a crash before its first
//! configure leaves a VM the agent still recognizes as its own.

use protocol::agent::{CommandFailure, EnsureVm, FailureKind};
use protocol::spec::{CloneMode, TemplateSpec};
use pve::PveError;
use pve::calls::{CloneOptions, CreateOptions};
use pve::types::VmConfig;

use super::VmOps;
use super::desired::DesiredVm;
use super::failure::{AtStep, Subject};
use super::notes;
use super::plan::plan;

/// A create or clone refused because the VMID is taken (by a VM on another node, or one that
/// appeared meanwhile): left alone, as any VM the fleet does not own.
fn vmid_taken(s: &Subject<'_>, step: &str, err: &PveError) -> CommandFailure {
    if err.is_already_exists() {
        s.fail(
            FailureKind::NotOwned,
            step,
            format!("VMID {} is already used in the cluster: {err}", s.vmid),
        )
    } else {
        s.pve(step, err)
    }
}

impl VmOps {
    /// Creates the VM by clone or from scratch, and waits until it exists.
    pub(super) async fn create(
        &self,
        cmd: &EnsureVm,
        desired: &DesiredVm,
        s: &Subject<'_>,
    ) -> Result<(), CommandFailure> {
        match &cmd.spec.template {
            Some(template) => self.clone_template(template, desired, s).await,
            None => self.create_from_scratch(desired, s).await,
        }
    }

    /// The VMID of the template the spec names, on this node.
    async fn template_vmid(
        &self,
        template: &TemplateSpec,
        s: &Subject<'_>,
    ) -> Result<u32, CommandFailure> {
        const STEP: &str = "template";
        if let Some(vmid) = template.vmid {
            return match self.read_config(vmid).await.at(s, STEP)? {
                Some(_) => Ok(vmid),
                None => Err(s.fail(
                    FailureKind::Permanent,
                    STEP,
                    format!("template VMID {vmid} does not exist on node {}", self.node),
                )),
            };
        }
        let name = template.name.as_deref().unwrap_or_default();
        let vms = self.client.vm_list(&self.node, None).await.at(s, STEP)?;
        let mut found: Vec<u32> = vms
            .iter()
            .filter(|v| v.template && v.name.as_deref() == Some(name))
            .map(|v| v.vmid)
            .collect();
        found.sort_unstable();
        match found.as_slice() {
            [vmid] => Ok(*vmid),
            [] => Err(s.fail(
                FailureKind::Permanent,
                STEP,
                format!(
                    "no template named '{name}' on node {}; create it there or name the template by VMID",
                    self.node
                ),
            )),
            many => Err(s.fail(
                FailureKind::Permanent,
                STEP,
                format!(
                    "{} templates are named '{name}' on node {} (VMIDs {many:?}); name the template by VMID",
                    many.len(),
                    self.node
                ),
            )),
        }
    }

    async fn clone_template(
        &self,
        template: &TemplateSpec,
        desired: &DesiredVm,
        s: &Subject<'_>,
    ) -> Result<(), CommandFailure> {
        let source = self.template_vmid(template, s).await?;
        let full = template.clone == CloneMode::Full;
        let opts = CloneOptions {
            name: Some(desired.name.clone()),
            description: Some(notes::desired_description(
                None,
                &desired.description,
                &desired.name,
                desired.generation,
                desired.ha,
            )),
            full: Some(full),
            storage: template.storage.clone().filter(|_| full),
            ..CloneOptions::default()
        };
        tracing::info!(vm = s.name, vmid = s.vmid, source, full, "cloning template");
        let upid = self
            .client
            .clone_vm(&self.node, source, s.vmid, &opts)
            .await
            .map_err(|e| vmid_taken(s, "clone", &e))?;
        self.client
            .wait_task(&upid, self.timeouts.create)
            .await
            .at(s, "clone")?;
        Ok(())
    }

    async fn create_from_scratch(
        &self,
        desired: &DesiredVm,
        s: &Subject<'_>,
    ) -> Result<(), CommandFailure> {
        let plan = plan(desired, &VmConfig::default(), false)
            .map_err(|e| s.fail(FailureKind::Permanent, "create", e))?;
        tracing::info!(vm = s.name, vmid = s.vmid, "creating VM from scratch");
        let upid = self
            .client
            .create_vm(
                &self.node,
                s.vmid,
                &plan.creation(),
                &CreateOptions::default(),
            )
            .await
            .map_err(|e| vmid_taken(s, "create", &e))?;
        self.client
            .wait_task(&upid, self.timeouts.create)
            .await
            .at(s, "create")?;
        Ok(())
    }
}

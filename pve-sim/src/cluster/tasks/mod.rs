//! Worker tasks: UPIDs and logs as PVE records them, the job an operation hands over, the
//! driver that runs it in scaled time, and the task endpoints.

pub(super) mod api;
pub(super) mod job;
pub(super) mod task;
mod worker;

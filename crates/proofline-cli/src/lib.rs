//! The `proofline` binary's building blocks, as a library so that the integration harness starts
//! exactly what the daemon starts. The pipeline itself is started by `proofline-runtime`.
//!
//! * [`daemon`]: the pipeline plus the HTTP server on a background thread, start and stop;
//! * [`setup`]: parameter generation and verifying keys of the built-in circuits;
//! * [`status`]: the daemon's status page as text (`proofline status`);
//! * [`top`]: the live terminal view (`proofline top`).
//! * [`exit`]: the command's exit codes and which error gets which.

pub mod daemon;
pub mod exit;
pub mod setup;
pub mod status;
pub mod top;

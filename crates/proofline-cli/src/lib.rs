//! The `proofline` binary's building blocks, as a library so that the integration harness and
//! embedders start exactly what the daemon starts.
//!
//! * [`runtime`]: configuration → logging, metrics recorder, adapters, parameter store, pipeline;
//! * [`daemon`]: the pipeline plus the HTTP server on a background thread, start and stop;
//! * [`setup`]: parameter generation and verifying keys of the built-in circuits.

pub mod daemon;
pub mod runtime;
pub mod setup;

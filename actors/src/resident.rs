//! Resident sets, as the allocator hands them out: a device's long-lived data of one parameter
//! set ([`ResidentData`], made by its compute engines), the allocator's record of it
//! ([`ResidentSet`], which holds its lease), a partition's hold on it ([`ResidentRef`], which
//! pins it), and a load in progress ([`ResidentLoad`]). Dropping a reference or an unfinished
//! load tells the allocator, by message.

use std::any::Any;
use std::sync::Arc;

use crate::allocator::{Lease, VramAllocator};
use crate::messages::{Residency, ResidentAbandoned, ResidentUnpinned};
use crate::telemetry::Mailbox;

/// A device's resident data of one parameter set, as its compute engines made it (on a GPU,
/// the set's bases and NTT tables); engines downcast it to their own type.
pub type ResidentData = Arc<dyn Any + Send + Sync>;

/// A resident set, as the allocator keeps it: the data and the lease covering it.
pub struct ResidentSet {
    pub(crate) key: String,
    pub(crate) residency: Residency,
    pub(crate) data: ResidentData,
    /// Covers the data for its whole life; released when the set drops.
    pub(crate) _lease: Lease,
}

impl std::fmt::Debug for ResidentSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentSet")
            .field("key", &self.key)
            .field("residency", &self.residency)
            .finish()
    }
}

/// A partition's hold on a resident set ("pin"): the set is not evicted while one exists.
pub struct ResidentRef {
    pub(crate) set: Arc<ResidentSet>,
    pub(crate) allocator: Mailbox<VramAllocator>,
}

impl ResidentRef {
    /// The engine's data.
    pub fn data(&self) -> &ResidentData {
        &self.set.data
    }

    /// Whether the bases are resident or streamed.
    pub fn residency(&self) -> Residency {
        self.set.residency
    }

    /// The parameter set.
    pub fn key(&self) -> &str {
        &self.set.key
    }
}

impl Clone for ResidentRef {
    fn clone(&self) -> Self {
        ResidentRef {
            set: self.set.clone(),
            allocator: self.allocator.clone(),
        }
    }
}

impl std::fmt::Debug for ResidentRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.set.fmt(f)
    }
}

impl Drop for ResidentRef {
    fn drop(&mut self) {
        self.allocator.do_send(ResidentUnpinned {
            key: self.set.key.clone(),
        });
    }
}

/// A resident set to fill: the lease for it and where its bases go. Hand it back with
/// [`RegisterResident`]; dropping it gives the lease back and lets the next request load.
#[derive(Debug)]
pub struct ResidentLoad {
    pub(crate) key: String,
    pub(crate) residency: Residency,
    pub(crate) lease: Option<Lease>,
    pub(crate) allocator: Mailbox<VramAllocator>,
}

impl ResidentLoad {
    /// Resident bases, or tables only with the bases streamed.
    pub fn residency(&self) -> Residency {
        self.residency
    }

    /// Bytes the lease covers (what the upload may allocate).
    pub fn bytes(&self) -> u64 {
        self.lease.as_ref().map(|l| l.bytes()).unwrap_or(0)
    }
}

impl Drop for ResidentLoad {
    fn drop(&mut self) {
        if self.lease.is_some() {
            self.allocator.do_send(ResidentAbandoned {
                key: self.key.clone(),
            });
        }
    }
}

//! Default priorities of the job kinds, used when a request gives none (`priority` absent).
//! Larger runs first. The order follows what a late proof costs a storage provider: a
//! WinningPoSt is a block reward lost within seconds, a WindowPoSt a fault within its 30-minute
//! deadline, a SnapDeals update proof only delays an upgrade, and a C2 only delays a sector.
//! An explicit `priority` in a request always wins, whatever its value.

/// `winning-post`.
pub const WINNING_POST: i32 = 300;
/// `window-post`.
pub const WINDOW_POST: i32 = 200;
/// `snap-update`.
pub const SNAP_UPDATE: i32 = 100;
/// `porep-c2`, the built-in `groth16` circuits, and any kind that declares no default.
pub const DEFAULT: i32 = 0;

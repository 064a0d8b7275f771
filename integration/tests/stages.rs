//! The stage harness, and the failure that proofline exists to make impossible, as a test.
//!
//! * On the CPU (CI): one synthetic 2 KiB-shape partition through the stage pool: it succeeds,
//!   leases stay within the budget, the report says so.
//! * On a GPU (the device suite; skipped without one): two compute slots with partitions in
//!   flight while the allocator is asked to trim every few milliseconds. The device-op log
//!   (host spans of every device-global call, and of every slot's work from its first enqueued
//!   operation to the synchronisation that ended it) must show that no device-global call
//!   overlapped a slot's work; the trims must have happened; every partition must succeed with
//!   no out-of-memory error; the pool's high-water mark must stay within the leases granted.
//!   Both with the slots' kernels in turn and side by side.

use std::time::Duration;

use proofline_actors::G2Stage;
use proofline_config::{HeldTails, OnesPairSums, SlotKernels};
use proofline_integration::stages::{build_inputs, run_stages, table, Backend, Shape, StageRun};

fn run(
    backend: Backend,
    slots: usize,
    partitions: usize,
    warmup: Option<usize>,
    trim: Option<Duration>,
) -> StageRun {
    StageRun {
        backend,
        slots,
        slot_kernels: SlotKernels::InTurn,
        ones_pair_sums: OnesPairSums::Off,
        held_tails: HeldTails::WhereRoom,
        partitions,
        warmup,
        in_flight: 0,
        timeout: Duration::from_secs(600),
        g2: G2Stage::Run,
        trim_every: trim,
        cpu_msm_workers: 1,
    }
}

#[test]
fn a_2kib_partition_goes_through_the_stage_pool_on_the_cpu() {
    let inputs = build_inputs(Shape::Kib2, G2Stage::Run, 3);
    let r = run_stages(&run(Backend::Cpu, 1, 1, Some(0), None), &inputs).unwrap();
    println!("{}", serde_json::to_string(&r).unwrap());
    println!("{}", table(std::slice::from_ref(&r)));
    assert_eq!(
        (r.partitions, r.succeeded, r.oom_errors),
        (1, 1, 0),
        "{:?}",
        r.errors
    );
    assert_eq!(r.devices.len(), 1);
    let d = &r.devices[0];
    assert_eq!((d.device.as_str(), d.partitions), ("host", 1));
    assert!(d.leased_high > 0 && d.leased_high <= d.budget);
    assert!(r.partitions_per_min > 0.0);
    // the H stage's lease covered its evaluations: 3 x 2^22 x 32 bytes
    assert!(d.leased_high >= 3 << 27);
}

#[test]
fn no_device_global_call_overlaps_a_slots_work() {
    if let Err(e) = proofline_gpu::probe() {
        eprintln!("SKIP: no GPU ({e})");
        return;
    }
    let inputs = build_inputs(Shape::Kib2, G2Stage::Run, 4);
    // the slots in turn and side by side, over held tails (a 2 KiB set has room for them);
    // in turn also over a resident set with the ones' pair sums, and without held tails
    for (slot_kernels, ones_pair_sums, held_tails) in [
        (SlotKernels::InTurn, OnesPairSums::Off, HeldTails::WhereRoom),
        (
            SlotKernels::Concurrent,
            OnesPairSums::Off,
            HeldTails::WhereRoom,
        ),
        (
            SlotKernels::InTurn,
            OnesPairSums::WhereRoom,
            HeldTails::WhereRoom,
        ),
        (SlotKernels::InTurn, OnesPairSums::Off, HeldTails::Off),
    ] {
        let r = run_stages(
            &StageRun {
                slot_kernels,
                ones_pair_sums,
                held_tails,
                ..run(Backend::Gpu, 2, 16, None, Some(Duration::from_millis(40)))
            },
            &inputs,
        )
        .unwrap();
        println!("{}", serde_json::to_string_pretty(&r).unwrap());
        println!("{}", table(std::slice::from_ref(&r)));
        check_trims_never_overlap(&r);
    }
}

fn check_trims_never_overlap(r: &proofline_integration::stages::StageReport) {
    assert_eq!(r.succeeded, r.partitions, "{:?}", r.errors);
    assert_eq!(r.oom_errors, 0);
    assert_eq!(r.partitions, 16);
    for d in &r.devices {
        assert!(d.trims >= 1, "{}: no trim happened", d.device);
        assert!(d.device_calls >= d.trims as usize);
        assert_eq!(
            d.overlaps, 0,
            "{}: a device-global call overlapped a slot's work",
            d.device
        );
        assert_eq!(
            d.within_leases,
            Some(true),
            "{}: pool high-water {:?} above the leases {}",
            d.device,
            d.pool_used_high,
            d.leased_high
        );
        assert!(
            d.busy.unwrap_or(0.0) > 0.0,
            "{}: no kernel time measured",
            d.device
        );
    }
}

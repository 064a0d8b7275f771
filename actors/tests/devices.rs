//! Several compute devices in one pipeline (CPU engines standing in for GPU slots): every
//! device gets a parameter set resident once, uploaded by one of its slots, whether by preload
//! or by the first partition it runs; every stage reads the resident data of the device it runs
//! on; a device holds a set's tails once, from its first partition's split, and its sparse
//! stages run over them; the devices compute B in G2 in their sparse stage (as a GPU does) and
//! the proofs from those results verify; the snapshots list the sets per device.

use std::path::Path;
use std::sync::{Arc, Mutex};

use bellperson::groth16;
use blstrs::Bls12;
use proofline_actors::compute::{CpuEngine, CpuSizing, G2Placement, HStage, SparseMsms};
use proofline_actors::messages::{Evaluations, Residency, ResidentSizes, StageError};
use proofline_actors::resident::ResidentData;
use proofline_actors::{
    ComputeEngine, DeviceSetup, DeviceSizing, G2Stage, JobState, MemoryDevice, Pipeline,
    PipelineOptions,
};
use proofline_config::Config;
use proofline_groth16::msm::MsmPlan;
use proofline_groth16::ProvingKey;
use proofline_jobs::builtin::{params_spec_in, BuiltinAdapter, BuiltinCircuit};
use proofline_jobs::{AdapterRegistry, JobRequest, ParamsStore};
use rand::SeedableRng;

type Log = Arc<Mutex<Vec<(usize, &'static str)>>>;

/// A CPU engine that records what it runs, on which device, and checks that each stage gets
/// the resident data of its own device. Like a GPU, it computes B in G2 in its sparse stage.
struct Tracking {
    device: usize,
    log: Log,
}

impl Tracking {
    fn check(&self, resident: Option<&ResidentData>, what: &'static str) {
        let owner = resident.and_then(|d| d.downcast_ref::<usize>()).copied();
        assert_eq!(
            owner,
            Some(self.device),
            "{what} without its device's resident data"
        );
        self.log.lock().unwrap().push((self.device, what));
    }
}

impl ComputeEngine for Tracking {
    fn label(&self) -> String {
        format!("test:{}", self.device)
    }
    fn make_resident(
        &mut self,
        _: &ProvingKey,
        _: Residency,
        _: u64,
    ) -> Result<ResidentData, StageError> {
        self.log.lock().unwrap().push((self.device, "resident"));
        Ok(Arc::new(self.device))
    }
    fn h_stage(
        &mut self,
        pk: &ProvingKey,
        evals: Arc<Evaluations>,
        resident: Option<&ResidentData>,
        bytes: u64,
    ) -> Result<HStage, StageError> {
        self.check(resident, "h");
        CpuEngine::default().h_stage(pk, evals, None, bytes)
    }
    fn g2_placement(&self) -> G2Placement {
        G2Placement::SparseStage
    }
    fn hold_tails(
        &mut self,
        _: &MsmPlan,
        g2: G2Stage,
        resident: &ResidentData,
        bytes: u64,
    ) -> Result<ResidentData, StageError> {
        assert_eq!(
            bytes, TAILS_FULL,
            "the tails' largest layout fits the budget"
        );
        assert_eq!(
            g2,
            G2Stage::Run,
            "B in G2 runs in the sparse stage, so its tail is held with the others"
        );
        self.check(Some(resident), "tails");
        Ok(Arc::new(self.device))
    }
    fn sparse(
        &mut self,
        pk: &ProvingKey,
        plan: &MsmPlan,
        g2: G2Stage,
        resident: Option<&ResidentData>,
        tails: Option<&ResidentData>,
        bytes: u64,
    ) -> Result<SparseMsms, StageError> {
        self.check(resident, "g1");
        if tails.is_some() {
            self.check(tails, "g1 over held tails");
        }
        if g2 == G2Stage::Run {
            self.log.lock().unwrap().push((self.device, "g2"));
        }
        CpuEngine::default().sparse(pk, plan, g2, None, None, bytes)
    }
}

/// Bytes of the held tails with what speeds them, and alone.
const TAILS_FULL: u64 = 4 << 10;
const TAILS_ALONE: u64 = 1 << 10;

/// Host bytes for the stages, and a resident set of 1 MB (100 kB streamed).
struct Sizing;

impl DeviceSizing for Sizing {
    fn resident(&self, _: &ProvingKey) -> Option<ResidentSizes> {
        Some(ResidentSizes {
            full: 1 << 20,
            bases: 1 << 20,
            tables: 100 << 10,
        })
    }
    fn h_stage(&self, pk: &ProvingKey, r: Option<Residency>) -> u64 {
        CpuSizing.h_stage(pk, r)
    }
    fn held_tails(&self, _: &ProvingKey, _: &MsmPlan, _: G2Stage) -> Option<ResidentSizes> {
        Some(ResidentSizes {
            full: TAILS_FULL,
            bases: TAILS_ALONE,
            tables: 0,
        })
    }
    fn sparse_stage(&self, plan: &MsmPlan, r: Option<Residency>, _: Option<&ResidentData>) -> u64 {
        CpuSizing.sparse_stage(plan, r, None)
    }
}

struct Named(usize);

impl MemoryDevice for Named {
    fn label(&self) -> String {
        format!("test:{}", self.0)
    }
}

fn start(dir: &Path, log: &Log) -> Pipeline {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
    let c = BuiltinCircuit::Sha256 { blocks: 1 };
    let p =
        groth16::generate_random_parameters::<Bls12, _, _>(c.blank().unwrap(), &mut rng).unwrap();
    p.write(std::fs::File::create(dir.join(c.params_file())).unwrap())
        .unwrap();
    let mut cfg = Config::embedded_default().unwrap();
    cfg.pipeline.max_partitions_in_flight = 4.into();
    let mut reg = AdapterRegistry::new();
    reg.register(Arc::new(BuiltinAdapter::new(dir, vec![])));
    let mut opts = PipelineOptions::cpu(&cfg.pipeline, reg, Arc::new(ParamsStore::new(false)));
    opts.devices = (0..2)
        .map(|device| DeviceSetup {
            memory: Box::new(Named(device)),
            budget: 1 << 34,
            engines: (0..2)
                .map(|_| {
                    Box::new(Tracking {
                        device,
                        log: log.clone(),
                    }) as Box<dyn ComputeEngine>
                })
                .collect(),
            sizing: Arc::new(Sizing),
        })
        .collect();
    Pipeline::start(opts).unwrap()
}

fn request(seed: u64) -> JobRequest {
    JobRequest {
        kind: "groth16".into(),
        circuit: Some("sha256-1".into()),
        input: serde_json::json!({ "seed": seed }),
        public_inputs: None,
        ..Default::default()
    }
}

#[test]
fn each_device_makes_the_set_resident_once_and_its_stages_use_it() {
    let dir = tempfile::tempdir().unwrap();
    let log: Log = Arc::default();
    let p = start(dir.path(), &log);
    futures::executor::block_on(async {
        // preload: resident on both devices before any job
        let spec = params_spec_in(dir.path(), &BuiltinCircuit::Sha256 { blocks: 1 });
        let mut placed = p.preload(spec).await.unwrap();
        placed.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            placed,
            vec![
                ("test:0".to_string(), Residency::Resident),
                ("test:1".to_string(), Residency::Resident)
            ]
        );
        let mut ids = Vec::new();
        for seed in 0..6 {
            ids.push(p.submit(request(seed)).await.unwrap().id);
        }
        for id in &ids {
            let s = p.wait(id).await.unwrap();
            assert_eq!(s.state, JobState::Succeeded, "{:?}", s.error);
        }
        let mem = p.memory().await;
        assert_eq!(mem.len(), 2);
        let log = log.lock().unwrap();
        for (d, m) in mem.iter().enumerate() {
            // the set, and its tails where the device ran a partition
            let ran = log.contains(&(d, "g1"));
            let mut sets: Vec<_> = m.resident.iter().map(|r| r.params.clone()).collect();
            sets.sort();
            assert_eq!(sets.len(), 1 + usize::from(ran), "{m:?}");
            assert!(!sets[0].ends_with("#tails"), "{m:?}");
            if ran {
                assert_eq!(sets[1], format!("{}#tails", sets[0]), "{m:?}");
            }
            for r in &m.resident {
                assert_eq!(r.residency, Residency::Resident);
                assert_eq!(r.users, 0, "no partition pins it any more");
            }
            let tails = if ran { TAILS_FULL } else { 0 };
            assert_eq!(m.resident_bytes, (1 << 20) + tails);
        }
    });
    let log = log.lock().unwrap();
    for d in 0..2 {
        let uploads = log.iter().filter(|e| **e == (d, "resident")).count();
        assert_eq!(uploads, 1, "device {d} uploaded {uploads} times");
        // held once, by the device's first partition, before its sparse stage: every sparse
        // stage of the device runs over them
        let held = log.iter().filter(|e| **e == (d, "tails")).count();
        let stages = log.iter().filter(|e| **e == (d, "g1")).count();
        let over = log
            .iter()
            .filter(|e| **e == (d, "g1 over held tails"))
            .count();
        assert_eq!(
            held,
            usize::from(stages > 0),
            "device {d} held its tails {held} times"
        );
        assert_eq!(
            over, stages,
            "device {d}: {over} of {stages} sparse stages over held tails"
        );
    }
    assert_eq!(log.iter().filter(|e| e.1 == "h").count(), 6);
    assert_eq!(log.iter().filter(|e| e.1 == "g1").count(), 6);
    assert_eq!(
        log.iter().filter(|e| e.1 == "g2").count(),
        6,
        "every partition's B in G2 from the device's sparse stage"
    );
    p.shutdown();
}

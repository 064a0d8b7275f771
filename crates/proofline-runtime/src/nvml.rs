//! The GPUs' own readings through NVML, the driver's management library: utilisation, memory
//! and temperature. The library is loaded at run time; where it is missing (no NVIDIA driver,
//! a container without it) [`NvmlProbe::open`] says why and the daemon runs without these
//! figures. Reading never panics: a device or reading that fails is left out.
//!
//! Devices are labelled `cuda:N` with N the NVML index, which numbers devices in PCI bus order;
//! CUDA numbers them fastest first unless `CUDA_DEVICE_ORDER=PCI_BUS_ID`. The two agree on a
//! machine with one GPU or identical GPUs; the readings also carry the PCI bus id.

use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::Nvml;
use proofline_actors::telemetry::GpuProbe;
use proofline_wire::GpuFigures;

/// An open NVML session.
pub struct NvmlProbe {
    nvml: Nvml,
}

impl NvmlProbe {
    /// Loads NVML and initialises it; `Err` says why it is not available.
    pub fn open() -> Result<Self, String> {
        Nvml::init()
            .map(|nvml| NvmlProbe { nvml })
            .map_err(|e| e.to_string())
    }
}

impl GpuProbe for NvmlProbe {
    fn sample(&self) -> Vec<GpuFigures> {
        let count = self.nvml.device_count().unwrap_or(0);
        (0..count)
            .filter_map(|i| {
                let d = self.nvml.device_by_index(i).ok()?;
                let memory = d.memory_info().ok();
                Some(GpuFigures {
                    device: format!("cuda:{i}"),
                    name: d.name().unwrap_or_default(),
                    pci_bus_id: d.pci_info().map(|p| p.bus_id).unwrap_or_default(),
                    utilization_ratio: d.utilization_rates().ok().map(|u| f64::from(u.gpu) / 100.0),
                    memory_used_bytes: memory.as_ref().map(|m| m.used),
                    memory_total_bytes: memory.as_ref().map(|m| m.total),
                    temperature_celsius: d.temperature(TemperatureSensor::Gpu).ok().map(f64::from),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With a driver (a GPU machine) every device reports sane figures; without one, opening
    /// fails with a reason instead of panicking.
    #[test]
    fn opens_and_reads_or_says_why_not() {
        match NvmlProbe::open() {
            Ok(p) => {
                let figures = p.sample();
                assert!(!figures.is_empty(), "NVML loaded but listed no GPU");
                for f in figures {
                    assert!(f.device.starts_with("cuda:"), "{f:?}");
                    let total = f.memory_total_bytes.expect("memory total");
                    assert!(
                        total > 0 && f.memory_used_bytes.unwrap_or(0) <= total,
                        "{f:?}"
                    );
                    let u = f.utilization_ratio.expect("utilisation");
                    assert!((0.0..=1.0).contains(&u), "{f:?}");
                    let t = f.temperature_celsius.expect("temperature");
                    assert!((0.0..120.0).contains(&t), "{f:?}");
                }
            }
            Err(why) => {
                assert!(!why.is_empty());
                eprintln!("NVML not available here: {why}");
            }
        }
    }
}

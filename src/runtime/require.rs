//! `STENCILSCOPE_REQUIRE_DEVICES`: which backends must have a device, so that device tests fail
//! instead of skipping when none is found (CI sets it; a developer machine without devices skips).

/// The environment variable: comma-separated backend names (`opencl`, `wgpu`, `cuda`).
pub const REQUIRE_DEVICES_ENV: &str = "STENCILSCOPE_REQUIRE_DEVICES";

/// The backends that must have a device.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequiredDevices(Vec<String>);

impl RequiredDevices {
    /// Parses a comma-separated list; blanks are ignored, names are lower-cased.
    pub fn parse(s: &str) -> RequiredDevices {
        RequiredDevices(
            s.split(',')
                .map(|b| b.trim().to_ascii_lowercase())
                .filter(|b| !b.is_empty())
                .collect(),
        )
    }

    /// Whether `backend` must have a device.
    pub fn requires(&self, backend: &str) -> bool {
        self.0.iter().any(|b| b == backend || b == "all")
    }
}

/// Reads `STENCILSCOPE_REQUIRE_DEVICES`.
pub fn require_devices() -> RequiredDevices {
    RequiredDevices::parse(&std::env::var(REQUIRE_DEVICES_ENV).unwrap_or_default())
}

/// Called by a device test that found no usable device for `backend`: panics when the backend is
/// required, otherwise prints a visible skip message. Returns so the test can `return` early.
pub fn skip_or_fail(backend: &str, test: &str, reason: &str) {
    if require_devices().requires(backend) {
        panic!("{test}: no {backend} device ({reason}), but {REQUIRE_DEVICES_ENV} requires one");
    }
    eprintln!(
        "SKIPPED {test}: no {backend} device ({reason}); set {REQUIRE_DEVICES_ENV}={backend} to make this a failure"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists() {
        let r = RequiredDevices::parse(" OpenCL, wgpu,,");
        assert!(r.requires("opencl"));
        assert!(r.requires("wgpu"));
        assert!(!r.requires("cuda"));
        assert!(RequiredDevices::parse("all").requires("cuda"));
        assert!(!RequiredDevices::parse("").requires("opencl"));
    }
}

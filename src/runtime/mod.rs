//! Backends that compile, run and time kernels on devices.

mod require;

pub use require::{require_devices, skip_or_fail, RequiredDevices, REQUIRE_DEVICES_ENV};

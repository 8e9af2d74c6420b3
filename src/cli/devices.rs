use super::CliError;
use clap::Args;
use serde::Serialize;
use std::io::Write;
use stencilscope::runtime::{all_devices, BackendKind, DeviceInfo};

/// Arguments of `stencilscope devices`.
#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct BackendJson {
    backend: BackendKind,
    devices: Vec<DeviceInfo>,
    unavailable: Option<String>,
}

pub fn run(a: &DevicesArgs, out: &mut impl Write) -> Result<(), CliError> {
    let all: Vec<BackendJson> = all_devices()
        .into_iter()
        .map(|(backend, r)| match r {
            Ok(devices) => BackendJson {
                backend,
                devices,
                unavailable: None,
            },
            Err(e) => BackendJson {
                backend,
                devices: Vec::new(),
                unavailable: Some(e.to_string()),
            },
        })
        .collect();
    if a.json {
        serde_json::to_writer_pretty(&mut *out, &all)?;
        writeln!(out)?;
        return Ok(());
    }
    for b in &all {
        match &b.unavailable {
            Some(reason) => writeln!(out, "{}: none ({reason})", b.backend)?,
            None => {
                writeln!(out, "{}:", b.backend)?;
                for d in &b.devices {
                    writeln!(out, "  {d}")?;
                }
            }
        }
    }
    Ok(())
}

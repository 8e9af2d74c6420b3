//! Running the `stencilscope` binary as a user does, from the crate root.

use std::process::Command;

/// The binary, run from the crate root (the shipped definition files are relative to it).
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stencilscope"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// Runs `c`: whether it succeeded, its standard output and its standard error.
pub fn out(c: &mut Command) -> (bool, String, String) {
    let o = c.output().expect("the binary runs");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

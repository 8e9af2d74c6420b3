//! Emitted WGSL against the CPU reference on the first Vulkan adapter (lavapipe in CI).

mod common;

use stencilscope::config::LaunchConfig;
use stencilscope::ir::{Domain, Dtype};
use stencilscope::runtime::measure::Status;
use stencilscope::runtime::{BackendKind, BackendOptions, RuntimeError};

#[test]
fn wgpu_all_stencils_match_reference() {
    common::all_stencils_match_reference(BackendKind::Wgpu, "wgpu_all_stencils_match_reference");
}

#[test]
fn wgpu_timing_and_copy() {
    common::timing_and_copy(BackendKind::Wgpu, "wgpu_timing_and_copy");
}

#[test]
fn wgpu_oversized_block_is_refused() {
    common::oversized_block_is_refused(
        BackendKind::Wgpu,
        "wgpu_oversized_block_is_refused",
        "max_compute_workgroup_size_x",
    );
}

#[test]
fn wgpu_with_bounds_checks_matches_reference() {
    let test = "wgpu_with_bounds_checks_matches_reference";
    let o = BackendOptions {
        wgpu_bounds_checks: true,
        ..BackendOptions::default()
    };
    let Some(mut b) = common::open(BackendKind::Wgpu, test, &o) else {
        return;
    };
    let k = common::stencil("star3d_r4", Dtype::F32);
    let (d, c) = &common::cases(3)[0];
    for r in common::run(&mut *b, &k, d, c, None) {
        assert_eq!(r.status, Status::Passed, "{}: {:?}", r.config, r.error);
    }
}

#[test]
fn wgpu_linearised_dispatch_matches_reference() {
    let test = "wgpu_linearised_dispatch_matches_reference";
    // Pretend the device allows only 4 workgroups per dimension: the 5x4x2 = 40 blocks are
    // dispatched as 4x4x3 workgroups and mapped back.
    let o = BackendOptions {
        wgpu_max_groups_per_dim: Some(4),
        ..BackendOptions::default()
    };
    let Some(mut b) = common::open(BackendKind::Wgpu, test, &o) else {
        return;
    };
    let k = common::stencil("varcoeff3d_r1", Dtype::F32);
    let d = Domain::new3(19, 7, 5);
    let c = LaunchConfig::new([4, 2, 2], [1, 1, 2]);
    let r = &common::run(&mut *b, &k, &d, &[c], None)[0];
    assert_eq!(r.status, Status::Passed, "{:?}", r.error);
    assert!(b
        .source(stencilscope::runtime::ProgramId(0))
        .contains("lin >= 40u"));
}

#[test]
fn wgpu_storage_binding_limit_is_refused() {
    let test = "wgpu_storage_binding_limit_is_refused";
    let Some(mut b) = common::open(BackendKind::Wgpu, test, &BackendOptions::default()) else {
        return;
    };
    let k = common::stencil("star3d_r1", Dtype::F32);
    // A field just over the device's storage binding limit (nothing is allocated).
    let plane = 66 * 66;
    let nx = (b.info().max_buffer / 4 / plane) as usize + 1;
    let e = b
        .compile(
            &k,
            &LaunchConfig::new([32, 1, 1], [1; 3]),
            &Domain::new3(nx, 64, 64),
        )
        .unwrap_err();
    assert!(e.is_refusal(), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("max_storage_buffer_binding_size") || msg.contains("max_buffer_size"),
        "{msg}"
    );
    assert!(matches!(e, RuntimeError::Limit { .. }));
}

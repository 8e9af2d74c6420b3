//! Emitted OpenCL C against the CPU reference on the first OpenCL device (PoCL in CI).

mod common;

use stencilscope::runtime::BackendKind;

#[test]
fn opencl_all_stencils_match_reference() {
    common::all_stencils_match_reference(
        BackendKind::OpenCl,
        "opencl_all_stencils_match_reference",
    );
}

#[test]
fn opencl_timing_and_copy() {
    common::timing_and_copy(BackendKind::OpenCl, "opencl_timing_and_copy");
}

#[test]
fn opencl_oversized_block_is_refused() {
    common::oversized_block_is_refused(
        BackendKind::OpenCl,
        "opencl_oversized_block_is_refused",
        "CL_DEVICE_MAX_WORK_ITEM_SIZES[0]",
    );
}

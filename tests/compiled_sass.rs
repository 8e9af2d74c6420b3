//! The compiled issue order read from real SASS (issue 8): cuobjdump output of the driver's JIT
//! of three CUDA twins (H100, driver 580.159.04, `bench/twin-sass.py`; instruction lines only)
//! matched against the emitted source gives the orders `bench/compiled-order.py` committed, and
//! for a kernel that spills registers the stack accesses the profiling run wrote.

use std::path::Path;
use stencilscope::config::LaunchConfig;
use stencilscope::counters::sass::{orders_file, sass_functions};
use stencilscope::ir::{Domain, Dtype};
use stencilscope::spec::load_definition;

fn committed_line(key: &str) -> String {
    committed_line_in("bench/results/h100/counters/compiled-order/orders.txt", key)
}

fn committed_line_in(file: &str, key: &str) -> String {
    let orders = std::fs::read_to_string(file).unwrap();
    orders
        .lines()
        .find(|l| l.starts_with(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no committed order for {key}"))
        .to_string()
}

/// `line` without the places of its accesses (`F,I@P` → `F,I`; stack accesses kept).
fn without_places(line: &str) -> String {
    let (head, order) = line.split_once(':').unwrap();
    let order: Vec<&str> = order
        .split_whitespace()
        .map(|t| match t.split_once('@') {
            Some((step, _)) if step.contains(',') => step,
            _ => t,
        })
        .collect();
    format!("{head}: {}", order.join(" "))
}

fn order_from_fixture(file: &str, dtype: Dtype, block: [usize; 3], fold: [usize; 3], sass: &str) {
    let line = order_line_of_fixture(file, dtype, block, fold, sass);
    let key = line.split_once(':').unwrap().0;
    assert_eq!(without_places(&line), committed_line(key));
}

/// The orders-file line the matcher makes of fixture `sass` for the configuration.
fn order_line_of_fixture(
    file: &str,
    dtype: Dtype,
    block: [usize; 3],
    fold: [usize; 3],
    sass: &str,
) -> String {
    let mut def = load_definition(Path::new(file)).unwrap();
    def.set_dtype(dtype);
    let domain = Domain::new3(256, 256, 256);
    let config = LaunchConfig::new(block, fold);
    let text = std::fs::read_to_string(format!("tests/fixtures/sass/{sass}.sass")).unwrap();
    // The fixture's function is `ssk_fixture`; the twin's is its entry name.
    let entry = stencilscope::counters::entry_name(&config);
    let sass = sass_functions(&text.replace("ssk_fixture", &entry));
    let file = orders_file(&def.kernel, &domain, &[config], &sass, "test").unwrap();
    assert!(file.unmatched.is_empty(), "{:?}", file.unmatched);
    file.text.lines().nth(1).unwrap().to_string()
}

#[test]
fn the_sass_of_a_folded_stencil_gives_its_committed_order() {
    order_from_fixture(
        "stencils/star3d_r4.toml",
        Dtype::F64,
        [8, 4, 2],
        [1, 1, 2],
        "star3d_r4-f64-8x4x2-f1x1x2-256x256x256",
    );
}

#[test]
fn the_sass_of_an_aos_lbm_kernel_gives_its_committed_order() {
    let line = order_line_of_fixture(
        "bench/counters/d3q19_srt_pull_aos.toml",
        Dtype::F32,
        [8, 8, 8],
        [1, 1, 1],
        "d3q19_srt_pull_aos-f32-8x8x8-f1x1x1-256x256x256",
    );
    let key = line.split_once(':').unwrap().0;
    assert_eq!(without_places(&line), committed_line(key));
    // With the places `bench/compiled-order.py orders` gave the same twin: its 19 stores spread
    // among the collision's arithmetic (no float options).
    let places = "bench/results/h100/counters/compiled-order/places/plain.txt";
    assert_eq!(line, committed_line_in(places, key));
}

#[test]
fn the_sass_of_a_spilling_kernel_places_its_stack_accesses() {
    // D3Q19 SoA 32x32x1 fold 1x1x2 with the float options: 64 registers, 24 bytes of stack.
    let line = order_line_of_fixture(
        "lbm/d3q19_srt_pull.toml",
        Dtype::F32,
        [32, 32, 1],
        [1, 1, 2],
        "d3q19_srt_pull-f32-32x32x1-f1x1x2-256x256x256",
    );
    let key = line.split_once(':').unwrap().0;
    // As the profiling run on the H100 wrote it (spill/).
    let committed = committed_line_in(
        "bench/results/h100/counters/spill/raw/d3q19_srt_pull-soa-compiled-order.txt",
        key,
    );
    assert_eq!(without_places(&line), committed);
    let stores = line.matches(" s@").count();
    let loads = line.matches(" l@").count();
    assert_eq!((stores, loads), (6, 6), "{line}");
}

#[test]
fn sass_without_the_function_leaves_every_configuration_unmatched() {
    let def = load_definition(Path::new("stencils/star3d_r4.toml")).unwrap();
    let config = LaunchConfig::new([8, 4, 2], [1, 1, 2]);
    let text =
        std::fs::read_to_string("tests/fixtures/sass/star3d_r4-f64-8x4x2-f1x1x2-256x256x256.sass")
            .unwrap();
    let file = orders_file(
        &def.kernel,
        &Domain::new3(256, 256, 256),
        &[config],
        &sass_functions(&text),
        "test",
    )
    .unwrap();
    assert_eq!(
        file.text.lines().count(),
        1,
        "only the header: {}",
        file.text
    );
    assert_eq!(file.unmatched.len(), 1);
    assert!(file.unmatched[0].1.to_string().contains("no function"));
}

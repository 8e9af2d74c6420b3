use stencilscope::cachesim::simulate;
use stencilscope::config::LaunchConfig;
use stencilscope::footprint::{data_volumes, CacheParams};
use stencilscope::ir::{Domain, Dtype};
use stencilscope::spec::{shape_kernel, Shape, ShapeKind};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let r: usize = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(1);
    let l2: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(4 << 20);
    let l1: usize = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(128 << 10);
    let shape = Shape {
        kind: ShapeKind::Star,
        radius: r,
        dims: 3,
        coefficients: vec![1.0; r + 1],
    };
    let k = shape_kernel("s", &shape, Dtype::F64, "u", "v");
    let d = Domain::new3(64, 32, 24);
    let p = CacheParams {
        sms: std::env::var("SMS")
            .map(|s| s.parse().unwrap())
            .unwrap_or(13),
        blocks_per_sm: 2,
        l1_bytes: l1,
        l2_bytes: l2,
        sector_bytes: 32,
        line_bytes: 128,
        warp_size: 32,
    };
    for (b, f) in [
        ([32, 1, 1], [1, 1, 1]),
        ([32, 4, 1], [1, 1, 1]),
        ([16, 4, 2], [1, 2, 1]),
        ([64, 2, 1], [1, 1, 2]),
        ([8, 8, 2], [2, 1, 1]),
    ] {
        let c = LaunchConfig::new(b, f);
        let e = data_volumes(&k, &d, &c, &p).unwrap();
        let s = simulate(&k, &d, &c, &p).unwrap();
        println!("{c}");
        println!(
            "  est {:6.2} {:6.3} {:6.2} {:6.2} {:6.2} {:6.2}",
            e.l1_load_requests, e.l1_wavefronts, e.l2_load, e.l2_store, e.dram_load, e.dram_store
        );
        println!(
            "  sim {:6.2} {:6.3} {:6.2} {:6.2} {:6.2} {:6.2}",
            s.l1_load_requests, s.l1_wavefronts, s.l2_load, s.l2_store, s.dram_load, s.dram_store
        );
    }
}

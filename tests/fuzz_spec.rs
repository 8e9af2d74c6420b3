//! The front end never panics: arbitrary bytes and mutated valid files either parse into a kernel
//! the reference can run, or give an error with `file:line:col`.
//!
//! `STENCILSCOPE_FUZZ_CASES` sets the number of cases per property (default 20000).

use proptest::prelude::*;
use stencilscope::ir::Domain;
use stencilscope::reference;
use stencilscope::spec::{parse_definition, parse_stencil, SpecError};

const FILES: [&str; 5] = [
    include_str!("../stencils/star2d_r1.toml"),
    include_str!("../stencils/star3d_r1.toml"),
    include_str!("../stencils/star3d_r4.toml"),
    include_str!("../stencils/box3d_r1.toml"),
    include_str!("../stencils/varcoeff3d_r1.toml"),
];

const LBM_FILES: [&str; 3] = [
    include_str!("../lbm/d3q19_srt_aa.toml"),
    include_str!("../lbm/d3q15_trt_aa_force.toml"),
    include_str!("../lbm/d2q9_srt_pull.toml"),
];

/// Fragments that reach deeper into the grammar than random bytes.
const TOKENS: [&str; 36] = [
    "[",
    "]",
    "(",
    ")",
    "=",
    ",",
    ";",
    "\n",
    "\"",
    "\"\"\"",
    "-",
    "+",
    "*",
    "/",
    "1e999",
    "0",
    "-7",
    "u",
    "v",
    "k",
    "sqrt(",
    "fma(",
    "select(",
    "<",
    "nan",
    "[[fields]]",
    "role = \"inout\"",
    "é",
    "tau = ",
    "magic = ",
    "force = [",
    "\"aa\"",
    "\"push\"",
    "\"D2Q9\"",
    "\"trt\"",
    "domain = [",
];

fn cases() -> u32 {
    std::env::var("STENCILSCOPE_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000)
}

fn check(text: &str) {
    match parse_stencil(text, "fuzz.toml") {
        Ok(def) => {
            let k = def.kernel;
            k.validate().expect("an accepted kernel is valid");
            if k.radius() <= 4 && k.fields.iter().all(|f| f.ghost <= 4 && f.components <= 32) {
                let d = if k.dims == 2 {
                    Domain::new2(5, 4)
                } else {
                    Domain::new3(5, 4, 3)
                };
                let mut fields = reference::allocate::<f64>(&k, &d, 1.0);
                reference::run(&k, &d, &mut fields).expect("the reference runs accepted kernels");
            }
        }
        Err(SpecError::Io { .. }) => panic!("no I/O happens when parsing text"),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("fuzz.toml:"), "{msg}");
            let loc = e.location().expect("text errors have a location");
            assert!(loc.line >= 1 && loc.col >= 1, "{msg}");
            assert!(loc.line <= text.lines().count().max(1) + 1, "{msg}");
        }
    }
}

/// LBM files: accepted ones build their kernels and a small periodic time loop that runs.
fn check_lbm(text: &str) {
    match parse_definition(text, "fuzz.toml", None) {
        Ok(def) => {
            def.kernel.validate().expect("an accepted kernel is valid");
            if let Some(spec) = def.lbm {
                let d = if spec.lattice.dims() == 2 {
                    Domain::new2(3, 2)
                } else {
                    Domain::new3(3, 2, 2)
                };
                let p = spec
                    .program(&d, None)
                    .expect("an accepted variant has a time loop");
                let mut sim =
                    stencilscope::lbm::Simulation::<f64>::from_equilibrium(p, |_, _, _| {
                        (1.0, [0.0; 3])
                    })
                    .expect("the equilibrium start is valid");
                sim.run(2).expect("the reference runs accepted variants");
            }
        }
        Err(SpecError::Io { .. }) => panic!("no I/O happens when parsing text"),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("fuzz.toml:"), "{msg}");
            let loc = e.location().expect("text errors have a location");
            assert!(loc.line >= 1 && loc.col >= 1, "{msg}");
            assert!(loc.line <= text.lines().count().max(1) + 1, "{msg}");
        }
    }
}

#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, String),
    Delete(usize, usize),
    Replace(usize, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    let frag = prop_oneof![
        prop::sample::select(TOKENS.to_vec()).prop_map(String::from),
        "[ -~]{1,4}",
    ];
    prop_oneof![
        (any::<usize>(), frag.clone()).prop_map(|(p, s)| Edit::Insert(p, s)),
        (any::<usize>(), 1usize..8).prop_map(|(p, n)| Edit::Delete(p, n)),
        (any::<usize>(), frag).prop_map(|(p, s)| Edit::Replace(p, s)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut b: Vec<char> = text.chars().collect();
    for e in edits {
        let n = b.len().max(1);
        match e {
            Edit::Insert(p, s) => {
                let at = p % (b.len() + 1);
                b.splice(at..at, s.chars());
            }
            Edit::Delete(p, k) => {
                let at = p % n;
                let end = (at + k).min(b.len());
                if at < end {
                    b.drain(at..end);
                }
            }
            Edit::Replace(p, s) => {
                let at = p % n;
                let end = (at + s.chars().count()).min(b.len());
                b.splice(at.min(b.len())..end, s.chars());
            }
        }
    }
    b.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        check(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn mutated_valid_files_never_panic(
        file in 0usize..FILES.len(),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        check(&apply(FILES[file], &edits));
    }

    #[test]
    fn mutated_lbm_files_never_panic(
        file in 0usize..LBM_FILES.len(),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        check_lbm(&apply(LBM_FILES[file], &edits));
    }
}

#[test]
fn shipped_files_are_accepted() {
    for f in FILES {
        check(f);
        assert!(parse_stencil(f, "x.toml").is_ok());
    }
    for f in LBM_FILES {
        check_lbm(f);
        assert!(parse_definition(f, "x.toml", None).unwrap().lbm.is_some());
    }
}

//! `stencilscope show` end to end through the binary.

#[path = "support/cli.rs"]
mod cli;

fn show(args: &[&str]) -> (bool, String, String) {
    cli::out(cli::bin().arg("show").args(args))
}

#[test]
fn star3d_r4_has_25_loads_and_16_bytes() {
    let (ok, out, err) = show(&["stencils/star3d_r4.toml"]);
    assert!(ok, "{err}");
    assert!(out.contains("accesses: 25 loads, 1 store\n"), "{out}");
    assert!(
        out.contains("minimal bytes per lattice update: 16 B"),
        "{out}"
    );
    assert_eq!(out.matches("  load  u[").count(), 25, "{out}");
    let (ok, out, _) = show(&["stencils/star3d_r4.toml", "--dtype", "f32"]);
    assert!(ok);
    assert!(
        out.contains("minimal bytes per lattice update: 8 B"),
        "{out}"
    );
}

#[test]
fn every_shipped_stencil_shows() {
    for f in std::fs::read_dir("stencils").unwrap() {
        let p = f.unwrap().path();
        let (ok, out, err) = show(&[p.to_str().unwrap()]);
        assert!(ok, "{}: {err}", p.display());
        assert!(out.contains("flops per lattice update"), "{out}");
    }
}

#[test]
fn json_is_the_ir() {
    let (ok, out, err) = show(&["stencils/varcoeff3d_r1.toml", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["loads"], 8);
    assert_eq!(v["stores"], 1);
    assert_eq!(v["min_bytes_per_lup"], 24);
    let k: stencilscope::ir::Kernel = serde_json::from_value(v["kernel"].clone()).unwrap();
    assert_eq!(k.fields.len(), 3);
    k.validate().unwrap();
}

#[test]
fn syntax_error_exits_nonzero_with_position() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    std::fs::write(
        &p,
        "name = \"bad\"\ndims = 3\nupdate = \"\"\"\nv[0,0,0] = u[0,0,0] * (2 +\n\"\"\"\n[[fields]]\nname = \"u\"\nrole = \"input\"\n[[fields]]\nname = \"v\"\nrole = \"output\"\n",
    )
    .unwrap();
    let (ok, _, err) = show(&[p.to_str().unwrap()]);
    assert!(!ok);
    let want = format!("error: {}:5:1: syntax error: expected", p.display());
    assert!(err.starts_with(&want), "{err}");
    let (ok, _, err) = show(&["stencils/does_not_exist.toml"]);
    assert!(!ok);
    assert!(err.contains("cannot read the file"), "{err}");
}

#[test]
fn every_shipped_lbm_variant_shows() {
    let mut n = 0;
    for f in std::fs::read_dir("lbm").unwrap() {
        let p = f.unwrap().path();
        let (ok, out, err) = show(&[p.to_str().unwrap()]);
        assert!(ok, "{}: {err}", p.display());
        assert!(out.contains("lattice-Boltzmann: D"), "{out}");
        assert!(out.contains("time loop on"), "{out}");
        n += 1;
    }
    assert!(n >= 5);
    let (ok, out, err) = show(&["lbm/d3q19_srt_aa.toml", "--step", "even", "--dtype", "f64"]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("kernel d3q19_srt_aa_even (3D, f64)"),
        "{out}"
    );
    assert!(
        out.contains("minimal bytes per lattice update: 304 B"),
        "{out}"
    );
}

#[test]
fn invalid_lbm_combination_is_a_positioned_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    std::fs::write(
        &p,
        "name = \"bad\"\nlattice = \"D2Q9\"\ntau = 0.45\nstreaming = \"pull\"\n",
    )
    .unwrap();
    let (ok, _, err) = show(&[p.to_str().unwrap()]);
    assert!(!ok);
    let want = format!(
        "error: {}:3:7: τ = 0.45 must be greater than 1/2",
        p.display()
    );
    assert!(err.starts_with(&want), "{err}");
}

//! `stencilscope rank` end to end through the binary: the table, the JSON and the HTML report,
//! pruned (the default) and exhaustive, and its errors.

use stencilscope::rank::Ranking;

#[path = "support/cli.rs"]
mod cli;

fn rank(args: &[&str]) -> (bool, String, String) {
    cli::out(cli::bin().arg("rank").args(args))
}

const ARGS: [&str; 5] = [
    "stencils/star3d_r1.toml",
    "--machine",
    "h100-sxm",
    "--domain",
    "128,64,64",
];

#[test]
fn pruned_and_exhaustive_rankings_agree_on_their_exact_ranks() {
    let dir = std::env::temp_dir().join(format!("stencilscope-cli-rank-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, html, full_json) = (
        dir.join("r.json"),
        dir.join("r.html"),
        dir.join("full.json"),
    );
    let mut args = ARGS.to_vec();
    let (j, h) = (json.to_str().unwrap(), html.to_str().unwrap());
    args.extend(["--top", "5", "--json", j, "--html", h]);
    let (ok, out, err) = rank(&args);
    assert!(ok, "{err}");
    // A header, five rows, then the summary naming the pruning.
    let rows: Vec<&str> = out.lines().skip(2).take(5).collect();
    for (i, row) in rows.iter().enumerate() {
        assert!(
            row.trim_start().starts_with(&format!("{} ", i + 1)),
            "{out}"
        );
    }
    assert!(out.contains("estimated in full"), "{out}");
    assert!(out.contains("bounded"), "{out}");
    assert!(out.contains("are exact"), "{out}");
    let pruned: Ranking = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let summary = pruned.pruned.expect("the CLI prunes by default");
    assert_eq!(summary.pruning.margin, 1.5);
    assert_eq!(summary.pruning.keep, 5);
    assert!(!pruned.bounded.is_empty());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Pruned ranking") && page.contains("at most"),
        "no pruning in the report"
    );

    let mut args = ARGS.to_vec();
    args.extend(["--exhaustive", "--json", full_json.to_str().unwrap()]);
    let (ok, out, err) = rank(&args);
    assert!(ok, "{err}");
    assert!(!out.contains("are exact"), "{out}");
    let full: Ranking =
        serde_json::from_str(&std::fs::read_to_string(&full_json).unwrap()).unwrap();
    assert!(full.pruned.is_none() && full.bounded.is_empty());
    assert_eq!(full.ranked.len(), pruned.legal());
    let n = summary.exact_ranks;
    assert!(n >= 5);
    assert_eq!(pruned.ranked[..n], full.ranked[..n]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_margins_are_clear_errors() {
    let mut args = ARGS.to_vec();
    args.extend(["--margin", "0.8"]);
    let (ok, _, err) = rank(&args);
    assert!(!ok);
    assert!(
        err.contains("margin 0.8 must be a number of at least 1"),
        "{err}"
    );
    let mut args = ARGS.to_vec();
    args.extend(["--margin", "2", "--exhaustive"]);
    let (ok, _, err) = rank(&args);
    assert!(!ok);
    assert!(err.contains("cannot be used with"), "{err}");
}

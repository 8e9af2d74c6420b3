//! The figures that say how good a ranking was: rank correlations between predicted and measured
//! times, the geometric mean of the relative error, and shares of the oracle's performance.

/// 1-based ranks of `v` in ascending order; tied values share the mean of their ranks.
pub fn average_ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut ranks = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        // Positions i..=j (0-based) hold equal values: each gets the mean rank (i+j)/2 + 1.
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = r;
        }
        i = j + 1;
    }
    ranks
}

/// Pearson's correlation coefficient; `None` for fewer than two pairs, unequal lengths or a
/// constant series.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 {
        return None;
    }
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    Some(sxy / (sxx * syy).sqrt())
}

/// Spearman's rank correlation (Pearson's on the average ranks, so ties are handled).
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() {
        return None;
    }
    pearson(&average_ranks(x), &average_ranks(y))
}

/// Kendall's τ-b: (concordant − discordant) / √((n₀ − n₁)(n₀ − n₂)), where n₀ counts all pairs
/// and n₁, n₂ the pairs tied in x and in y. O(n²), fine for the few thousand configurations of a
/// sweep. `None` where it is undefined (fewer than two pairs, a constant series).
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 {
        return None;
    }
    let (mut concordant, mut discordant, mut tied_x, mut tied_y) = (0u64, 0u64, 0u64, 0u64);
    let mut pairs = 0u64;
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            pairs += 1;
            let dx = x[j] - x[i];
            let dy = y[j] - y[i];
            if dx == 0.0 {
                tied_x += 1;
            }
            if dy == 0.0 {
                tied_y += 1;
            }
            if dx != 0.0 && dy != 0.0 {
                if (dx > 0.0) == (dy > 0.0) {
                    concordant += 1;
                } else {
                    discordant += 1;
                }
            }
        }
    }
    let denominator = (((pairs - tied_x) as f64) * ((pairs - tied_y) as f64)).sqrt();
    if denominator == 0.0 {
        return None;
    }
    Some((concordant as f64 - discordant as f64) / denominator)
}

/// Geometric mean of `|predicted − measured| / measured` (Stevens & Klöckner's accuracy figure);
/// `None` for no pairs or a non-positive measured time. An exact prediction makes it zero.
pub fn geomean_rel_error(predicted: &[f64], measured: &[f64]) -> Option<f64> {
    if predicted.len() != measured.len() || predicted.is_empty() {
        return None;
    }
    let mut log_sum = 0.0;
    for (p, m) in predicted.iter().zip(measured) {
        if m.is_nan() || *m <= 0.0 || !p.is_finite() {
            return None;
        }
        let e = (p - m).abs() / m;
        if e == 0.0 {
            return Some(0.0);
        }
        log_sum += e.ln();
    }
    Some((log_sum / predicted.len() as f64).exp())
}

/// Percent of the oracle's performance that a choice reaches: `100 · oracle time / its time`.
pub fn pct_of_oracle(oracle_s: f64, chosen_s: f64) -> f64 {
    100.0 * oracle_s / chosen_s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn ranks_share_ties() {
        assert_eq!(
            average_ranks(&[5.0, 6.0, 7.0, 8.0, 7.0]),
            vec![1.0, 2.0, 3.5, 5.0, 3.5]
        );
        assert_eq!(average_ranks(&[2.0, 2.0, 2.0]), vec![2.0, 2.0, 2.0]);
        assert!(average_ranks(&[]).is_empty());
    }

    // x = 1..5, y = (5, 6, 7, 8, 7), by hand:
    // Spearman: ranks of y (1, 2, 3.5, 5, 3.5); deviations from 3: x (-2,-1,0,1,2), y (-2,-1,.5,2,.5);
    //   Σdxdy = 4+1+0+2+1 = 8, Σdx² = 10, Σdy² = 9.5 → 8/√95 = 0.8207826816681233.
    // Kendall τ-b: of 10 pairs, 8 concordant, 1 discordant ((4,5): 8 > 7), 1 tied in y ((3,5))
    //   → (8 − 1)/√(10·9) = 7/√90 = 0.7378647873726218 (scipy.stats.kendalltau gives the same).
    #[test]
    fn correlations_match_hand_computed_values() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [5.0, 6.0, 7.0, 8.0, 7.0];
        assert!(close(spearman(&x, &y).unwrap(), 8.0 / 95f64.sqrt()));
        assert!(close(spearman(&x, &y).unwrap(), 0.8207826816681233));
        assert!(close(kendall_tau_b(&x, &y).unwrap(), 7.0 / 90f64.sqrt()));
        assert!(close(kendall_tau_b(&x, &y).unwrap(), 0.7378647873726218));
        // Perfect and reversed orders.
        let r: Vec<f64> = x.iter().rev().copied().collect();
        assert!(close(spearman(&x, &x).unwrap(), 1.0));
        assert!(close(spearman(&x, &r).unwrap(), -1.0));
        assert!(close(kendall_tau_b(&x, &r).unwrap(), -1.0));
        // Monotone but not linear: rank correlations are 1, Pearson is not.
        let cubes: Vec<f64> = x.iter().map(|v| v * v * v).collect();
        assert!(close(spearman(&x, &cubes).unwrap(), 1.0));
        assert!(pearson(&x, &cubes).unwrap() < 0.99);
        // Undefined cases.
        assert_eq!(spearman(&[1.0], &[2.0]), None);
        assert_eq!(kendall_tau_b(&[1.0, 1.0], &[1.0, 2.0]), None);
        assert_eq!(pearson(&[1.0, 2.0], &[3.0]), None);
    }

    #[test]
    fn kendall_with_ties_in_both() {
        // x = (1,1,2,3), y = (1,2,2,3): 6 pairs; tied in x: (1,2); tied in y: (2,3);
        // the other 4 pairs are all concordant → 4/√(5·5) = 0.8.
        assert!(close(
            kendall_tau_b(&[1.0, 1.0, 2.0, 3.0], &[1.0, 2.0, 2.0, 3.0]).unwrap(),
            0.8
        ));
    }

    #[test]
    fn geometric_mean_of_relative_errors() {
        // Errors 10% and 40%: √(0.1 · 0.4) = 0.2.
        let g = geomean_rel_error(&[1.1, 0.6], &[1.0, 1.0]).unwrap();
        assert!(close(g, 0.2), "{g}");
        // Over- and under-prediction count alike.
        let g = geomean_rel_error(&[0.9, 1.4], &[1.0, 1.0]).unwrap();
        assert!(close(g, 0.2), "{g}");
        assert_eq!(geomean_rel_error(&[2.0, 1.0], &[1.0, 1.0]), Some(0.0));
        assert_eq!(geomean_rel_error(&[1.0], &[0.0]), None);
        assert_eq!(geomean_rel_error(&[], &[]), None);
        assert!(close(pct_of_oracle(1.0, 1.25), 80.0));
    }
}

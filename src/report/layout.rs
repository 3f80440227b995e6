//! A layered drawing of a DAG, left to right: each task in the column of its longest chain of
//! dependencies, the tasks of a column ordered to cross few edges (the median of their
//! neighbours' places, swept back and forth), on a grid, so no two boxes overlap. Pure: the
//! SVG and the live page draw from it.

/// Where each node goes, in grid cells: `column` from the left, `row` from the top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) column: Vec<usize>,
    pub(crate) row: Vec<usize>,
    pub(crate) columns: usize,
    pub(crate) rows: usize,
}

/// How many times the orders are swept (each way) to cross fewer edges.
const SWEEPS: usize = 6;

/// Lays out `n` nodes whose dependencies are `deps[i]` (indices of nodes that come before
/// `i`; the graph has no cycle).
pub(crate) fn layered(n: usize, deps: &[Vec<usize>]) -> Layout {
    let mut column = vec![0usize; n];
    // Dependencies first: a topological order by repeated relaxation over the (acyclic) graph.
    for i in topological(n, deps) {
        column[i] = deps[i].iter().map(|&d| column[d] + 1).max().unwrap_or(0);
    }
    let columns = column.iter().max().map_or(0, |c| c + 1);
    let mut dependents = vec![Vec::new(); n];
    for (i, ds) in deps.iter().enumerate() {
        for &d in ds {
            dependents[d].push(i);
        }
    }
    let mut order: Vec<Vec<usize>> = vec![Vec::new(); columns];
    for i in 0..n {
        order[column[i]].push(i);
    }
    let mut row = vec![0usize; n];
    let place = |order: &[Vec<usize>], row: &mut [usize]| {
        for col in order {
            for (r, &i) in col.iter().enumerate() {
                row[i] = r;
            }
        }
    };
    place(&order, &mut row);
    for _ in 0..SWEEPS {
        for c in 1..columns {
            sort_by_median(&mut order[c], deps, &row);
            place(&order, &mut row);
        }
        for c in (0..columns.saturating_sub(1)).rev() {
            sort_by_median(&mut order[c], &dependents, &row);
            place(&order, &mut row);
        }
    }
    let rows = order.iter().map(Vec::len).max().unwrap_or(0);
    Layout {
        column,
        row,
        columns,
        rows,
    }
}

/// Orders `col` by the median row of each node's neighbours in the column next to it (a
/// node without any keeps its place).
fn sort_by_median(col: &mut [usize], neighbours: &[Vec<usize>], row: &[usize]) {
    let mut keyed: Vec<(usize, usize, usize)> = col
        .iter()
        .map(|&i| {
            let mut rows: Vec<usize> = neighbours[i].iter().map(|&j| row[j] * 2).collect();
            rows.sort_unstable();
            let key = match rows.len() {
                0 => row[i] * 2,
                k if k % 2 == 1 => rows[k / 2],
                k => usize::midpoint(rows[k / 2 - 1], rows[k / 2]),
            };
            (key, row[i], i)
        })
        .collect();
    keyed.sort_unstable();
    for (slot, (_, _, i)) in col.iter_mut().zip(keyed) {
        *slot = i;
    }
}

/// The nodes in an order where each comes after its dependencies (Kahn's algorithm; nodes of
/// a cycle, which a plan never has, come last in index order).
fn topological(n: usize, deps: &[Vec<usize>]) -> Vec<usize> {
    let mut waiting: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut dependents = vec![Vec::new(); n];
    for (i, ds) in deps.iter().enumerate() {
        for &d in ds {
            dependents[d].push(i);
        }
    }
    let mut ready: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).rev().collect();
    let mut out = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    while let Some(i) = ready.pop() {
        out.push(i);
        seen[i] = true;
        for &j in dependents[i].iter().rev() {
            waiting[j] -= 1;
            if waiting[j] == 0 {
                ready.push(j);
            }
        }
    }
    out.extend((0..n).filter(|&i| !seen[i]));
    out
}

/// The longest chain of dependencies, weighted by `weight` per node (1 each for a plan; the
/// time each took for a run): the nodes on it, first to last.
pub(crate) fn critical_path(deps: &[Vec<usize>], weight: &[u64]) -> Vec<usize> {
    let n = deps.len();
    let mut best = vec![0u64; n];
    let mut from: Vec<Option<usize>> = vec![None; n];
    for i in topological(n, deps) {
        let before = deps[i]
            .iter()
            .copied()
            .max_by_key(|&d| (best[d], std::cmp::Reverse(d)));
        best[i] = weight[i] + before.map_or(0, |d| best[d]);
        from[i] = before;
    }
    let Some(mut at) = (0..n).max_by_key(|&i| (best[i], std::cmp::Reverse(i))) else {
        return Vec::new();
    };
    let mut path = vec![at];
    while let Some(d) = from[at] {
        path.push(d);
        at = d;
    }
    path.reverse();
    path
}

#[cfg(test)]
mod tests {
    use super::{critical_path, layered};

    /// How many pairs of edges cross between neighbouring columns.
    fn crossings(deps: &[Vec<usize>], l: &super::Layout) -> usize {
        let edges: Vec<(usize, usize)> = deps
            .iter()
            .enumerate()
            .flat_map(|(i, ds)| ds.iter().map(move |&d| (d, i)))
            .collect();
        let mut n = 0;
        for (a, &(d1, t1)) in edges.iter().enumerate() {
            for &(d2, t2) in &edges[a + 1..] {
                if l.column[d1] == l.column[d2] && l.column[t1] == l.column[t2] {
                    let (x, y) = (l.row[d1].cmp(&l.row[d2]), l.row[t1].cmp(&l.row[t2]));
                    if x != y && x != std::cmp::Ordering::Equal && y != std::cmp::Ordering::Equal {
                        n += 1;
                    }
                }
            }
        }
        n
    }

    #[test]
    fn every_node_is_right_of_its_deps_in_a_cell_of_its_own() {
        // A diamond, a chain and a lone node.
        let deps = vec![
            vec![],
            vec![0],
            vec![0],
            vec![1, 2],
            vec![],
            vec![4],
            vec![],
        ];
        let l = layered(7, &deps);
        for (i, ds) in deps.iter().enumerate() {
            for &d in ds {
                assert!(l.column[d] < l.column[i], "{d} -> {i}: {l:?}");
            }
        }
        let mut cells: Vec<(usize, usize)> = (0..7).map(|i| (l.column[i], l.row[i])).collect();
        cells.sort_unstable();
        cells.dedup();
        assert_eq!(cells.len(), 7);
        assert_eq!((l.columns, l.column[3]), (3, 2));
        assert!(l.rows <= 3 && l.row.iter().all(|&r| r < l.rows));
    }

    #[test]
    fn the_orders_undo_crossings_the_input_order_makes() {
        // Two chains given crosswise: a0 b0 in column 0, b1 a1 in column 1.
        let deps = vec![vec![], vec![], vec![1], vec![0]];
        let l = layered(4, &deps);
        assert_eq!(crossings(&deps, &l), 0, "{l:?}");
    }

    #[test]
    fn the_critical_path_is_the_heaviest_chain() {
        let deps = vec![vec![], vec![0], vec![1], vec![], vec![3]];
        assert_eq!(critical_path(&deps, &[1; 5]), [0, 1, 2]);
        assert_eq!(critical_path(&deps, &[1, 1, 1, 10, 1]), [3, 4]);
        assert!(critical_path(&[], &[]).is_empty());
    }
}

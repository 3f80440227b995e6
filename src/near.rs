//! Names near a mistyped one, for "did you mean": the edit distance between two names and how
//! far a name may be from a known one to be offered in its place.

/// Whether `typed` is near enough to `known` to be offered as what was meant: at most two edits,
/// or a third of the known name's length for a long one.
pub(crate) fn is_near(typed: &str, known: &str) -> bool {
    distance(typed, known) <= (known.chars().count() / 3).max(2)
}

/// The known name nearest to `name` in spelling, case and `_` for `-` aside (config keys and
/// task fields are kebab-case), if one is near.
pub(crate) fn nearest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    let kebab = name.to_ascii_lowercase().replace('_', "-");
    known
        .iter()
        .filter(|k| is_near(&kebab, k))
        .min_by_key(|k| distance(&kebab, k))
        .copied()
}

/// The edit distance between two names (insertions, deletions, substitutions).
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::{distance, is_near, nearest};

    #[test]
    fn distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(distance("t4", "t4"), 0);
        assert_eq!(distance("t4", "t5"), 1);
        assert_eq!(distance("review", "reveiw"), 2);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("scan", "report"), 6);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("incldue", "include"), 2);
    }

    #[test]
    fn a_name_is_near_within_two_edits_or_a_third_of_its_length() {
        assert!(is_near("incldue", "include"));
        assert!(is_near("max-writer", "max-writers"));
        assert!(!is_near("flavour", "parser"));
        assert!(is_near("spawns-per-minite", "spawns-per-minute"));
    }

    #[test]
    fn the_nearest_name_is_found_whatever_its_case_and_underscores() {
        let known = ["deps", "mode", "may-be-empty"];
        assert_eq!(nearest("dpes", &known), Some("deps"));
        assert_eq!(nearest("Deps", &known), Some("deps"));
        assert_eq!(nearest("may_be_empty", &known), Some("may-be-empty"));
        assert_eq!(nearest("colour", &known), None);
    }
}

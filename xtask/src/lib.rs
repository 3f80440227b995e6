//! swarm's development tasks, outside the binary it ships: the files generated from its
//! definitions (`generated`: completions, man pages, the reference and CI examples; `manual`:
//! the man pages and the reference themselves) and a look at how its modules refer to each other (`structure`). Reads swarm
//! through its library; changes nothing of swarm's behaviour.

// As in swarm: a panic is no way to report a failure (the tests may unwrap; clippy.toml).
#![warn(clippy::unwrap_used, clippy::expect_used)]

pub mod generated;
pub mod manual;
pub mod structure;

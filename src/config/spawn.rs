//! The limits on tasks that add tasks while they run (see the manual's "Tasks that add
//! tasks", docs/src/task-files.md): which tasks may, how many, how deep and how fast, as the run's
//! options set them.
//! What a running plan does within them is the run loop's (`schedule::core::spawn`).

use super::{Defaults, Options, Spawning};
use crate::plan::Task;

/// Which tasks may add tasks, how many, and how fast; each a run option (docs/src/task-files.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpawnLimits {
    /// Tasks one task may spawn.
    pub children: u32,
    /// Levels of spawning below the plan's own tasks (which are at depth 0).
    pub depth: u32,
    /// Tasks spawned in one run, resumes included.
    pub tasks: u32,
    /// Tasks spawned in the run in any 60 seconds.
    pub per_minute: u32,
    /// Which tasks may spawn at all: those whose `spawn` says so (the default), none, or all.
    pub which: Spawning,
}

impl Default for SpawnLimits {
    /// The limits as the options' table declares their defaults.
    fn default() -> Self {
        Self::of(&Options::default())
    }
}

impl SpawnLimits {
    /// The limits `o` sets, each at its default where it sets none.
    pub fn of(o: &Options) -> Self {
        Self {
            children: o.max_children.unwrap_or_else(Defaults::max_children),
            depth: o.max_depth.unwrap_or_else(Defaults::max_depth),
            tasks: o.max_spawned.unwrap_or_else(Defaults::max_spawned),
            per_minute: o
                .spawns_per_minute
                .unwrap_or_else(Defaults::spawns_per_minute),
            which: o.spawning.unwrap_or_else(Defaults::spawning),
        }
    }

    /// The most tasks `task` and the tasks below it may add, as its `spawn` and the run's
    /// `spawning` say (`u32::MAX`: only the run's limits bound it).
    pub(crate) fn allowance(&self, task: &Task) -> u32 {
        match self.which {
            Spawning::Off => 0,
            Spawning::Plan => task.spawn.unwrap_or(0),
            Spawning::All => task.spawn.unwrap_or(u32::MAX),
        }
    }

    /// The most tasks `max-children` and `max-depth` let one of the plan's tasks have below
    /// it: its children, theirs, and so on to the deepest level.
    pub(crate) fn tree(&self) -> u32 {
        let (mut level, mut all) = (1u32, 0u32);
        for _ in 0..self.depth {
            level = level.saturating_mul(self.children);
            all = all.saturating_add(level);
        }
        all
    }
}

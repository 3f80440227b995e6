//! The blocks of TCP ports handed to running attempts (`SWARM_PORT`, `SWARM_PORTS`): each
//! running task has a block no other running task has, so two agents' dev servers or test
//! databases never fight over one port. Owned by the owner thread; a block goes back when its
//! attempt ends.

use std::collections::HashMap;

/// Ports in a block.
pub(super) const BLOCK: u16 = 10;
/// The range blocks come from: below Linux's ephemeral ports (32768 and up), above the ports
/// development servers usually take.
pub(super) const FIRST: u16 = 20000;
pub(super) const LAST: u16 = 32759;
const _: () = assert!(LAST < 32768 && (LAST - FIRST + 1).is_multiple_of(BLOCK));

/// A block of ports, `first` to `first + len - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Block {
    pub(super) first: u16,
    pub(super) len: u16,
}

impl Block {
    pub(super) fn last(self) -> u16 {
        self.first + (self.len - 1)
    }

    /// `SWARM_PORTS`: `first-last`.
    pub(super) fn range(self) -> String {
        format!("{}-{}", self.first, self.last())
    }
}

pub(super) struct Ports {
    first: u16,
    blocks: u16,
    len: u16,
    /// The block index the next search starts from: blocks are handed out in turn, so a port
    /// a finished attempt's process still holds has time to be let go.
    next: u16,
    held: HashMap<usize, u16>,
}

impl Ports {
    /// Blocks of `len` ports from `first` to `last`; the search starts at block `start` (so
    /// that two runs at once start in different places).
    pub(super) fn new(first: u16, last: u16, len: u16, start: u16) -> Self {
        let blocks = (last.saturating_sub(first) + 1) / len.max(1);
        Self {
            first,
            blocks,
            len: len.max(1),
            next: if blocks == 0 { 0 } else { start % blocks },
            held: HashMap::new(),
        }
    }

    /// The run's ports: `BLOCK`-sized blocks of `FIRST..=LAST`, the search starting at a place
    /// of this process's.
    pub(super) fn for_run() -> Self {
        let start = u16::try_from(std::process::id() % u32::from(u16::MAX)).unwrap_or(0);
        Self::new(FIRST, LAST, BLOCK, start)
    }

    /// A block for `task`, none other running holds, whose every port `free` says is free;
    /// `None` when there is none. A task holds one block at a time: asking again gives the
    /// one it holds.
    pub(super) fn acquire(&mut self, task: usize, free: impl Fn(u16) -> bool) -> Option<Block> {
        if let Some(&b) = self.held.get(&task) {
            return Some(self.block(b));
        }
        for step in 0..self.blocks {
            let b = (self.next + step) % self.blocks;
            if self.held.values().any(|&h| h == b) {
                continue;
            }
            let block = self.block(b);
            if (block.first..=block.last()).all(&free) {
                self.held.insert(task, b);
                self.next = (b + 1) % self.blocks;
                return Some(block);
            }
        }
        None
    }

    /// `task`'s attempt ended: its block is free again.
    pub(super) fn release(&mut self, task: usize) {
        self.held.remove(&task);
    }

    fn block(&self, b: u16) -> Block {
        Block {
            first: self.first + b * self.len,
            len: self.len,
        }
    }
}

/// Whether nothing listens on `port` of 127.0.0.1 (binding it succeeds).
pub(super) fn is_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::{Block, Ports};

    #[test]
    fn running_tasks_get_blocks_that_do_not_overlap() {
        let mut ports = Ports::new(41000, 41099, 10, 0);
        let blocks: Vec<Block> = (0..4)
            .map(|t| ports.acquire(t, |_| true).unwrap())
            .collect();
        for (i, a) in blocks.iter().enumerate() {
            assert_eq!(a.len, 10);
            for b in &blocks[i + 1..] {
                assert!(a.last() < b.first || b.last() < a.first, "{a:?} {b:?}");
            }
        }
        assert_eq!(blocks[0].range(), "41000-41009");
    }

    #[test]
    fn a_released_block_is_handed_out_again_once_the_others_are_taken() {
        let mut ports = Ports::new(41000, 41029, 10, 0);
        let a = ports.acquire(0, |_| true).unwrap();
        let _b = ports.acquire(1, |_| true).unwrap();
        let _c = ports.acquire(2, |_| true).unwrap();
        assert_eq!(ports.acquire(3, |_| true), None);
        ports.release(0);
        assert_eq!(ports.acquire(3, |_| true), Some(a));
    }

    #[test]
    fn a_block_with_a_port_in_use_is_skipped() {
        let mut ports = Ports::new(41000, 41099, 10, 0);
        let block = ports.acquire(0, |p| p != 41003).unwrap();
        assert_eq!(block.first, 41010);
    }

    #[test]
    fn a_task_asking_again_keeps_its_block() {
        let mut ports = Ports::new(41000, 41099, 10, 3);
        let a = ports.acquire(7, |_| true).unwrap();
        assert_eq!(a.first, 41030);
        assert_eq!(ports.acquire(7, |_| true), Some(a));
        ports.release(7);
        assert_ne!(ports.acquire(8, |_| true), Some(a));
    }

    #[test]
    fn the_search_starts_where_it_is_told_and_wraps() {
        let mut ports = Ports::new(41000, 41029, 10, 5);
        assert_eq!(ports.acquire(0, |_| true).unwrap().first, 41020);
        assert_eq!(ports.acquire(1, |_| true).unwrap().first, 41000);
    }

    #[test]
    fn no_free_port_gives_no_block() {
        let mut ports = Ports::new(41000, 41099, 10, 0);
        assert_eq!(ports.acquire(0, |_| false), None);
    }

    #[test]
    fn the_run_range_holds_whole_blocks_below_the_ephemeral_ports() {
        let mut ports = Ports::for_run();
        let block = ports.acquire(0, |_| true).unwrap();
        assert!(block.first >= super::FIRST && block.last() <= super::LAST);
    }
}

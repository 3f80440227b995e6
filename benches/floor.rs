//! The spawn floor for the scheduling benchmark: a plain pool of K threads that together spawn
//! a command N times and wait for each, with no graph, no state and no output. Whatever a
//! scheduler costs beyond this is its own overhead.
//!
//! Usage: floor K N PROGRAM [ARGS...]  (the suite runs `floor K N /bin/sh -c true`, the command
//! line swarm and ninja run for a task).

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: floor K N PROGRAM [ARGS...]");
        std::process::exit(2);
    }
    let k: usize = args[0].parse().expect("K is a number");
    let n: usize = args[1].parse().expect("N is a number");
    let (program, rest) = (&args[2], &args[3..]);
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..k {
            s.spawn(|| {
                while next.fetch_add(1, Ordering::Relaxed) < n {
                    let status = Command::new(program)
                        .args(rest)
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .status()
                        .expect("could not spawn");
                    assert!(status.success(), "{program} failed: {status}");
                }
            });
        }
    });
}

//! The page's event streams (`/events`): one thread tails the run's event log for all of them
//! and writes each new event to every open stream, so a stream costs one socket and no thread.
//! Their number is bounded (`bound`); past it a new stream is refused with 503 and
//! `Retry-After`. A stream whose client went away is dropped at the next look (a client that
//! closed reads as the end of its socket; one that stopped reading fills its socket and is let
//! go), so its descriptor is not kept.

use std::collections::HashMap;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::json;

use super::Reply;
use super::http::write_reply;
use crate::store::{Board, Logged, RunStatus};

/// How often the event log is looked at for new lines while a stream is open.
const TAIL: Duration = Duration::from_millis(200);
/// A comment line this often keeps a quiet stream open through proxies.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Streams at most, however many descriptors the process may open.
const MOST: u64 = 128;
/// A stream refused for want of room says to come back after this many seconds.
const RETRY_AFTER: u32 = 5;

/// How many streams may be open at once: an eighth of the process's file descriptor limit
/// (the soft `RLIMIT_NOFILE`), at least 1 and at most 128. A stream holds one descriptor; the
/// rest stay for the run (its agents, git, the board) and for the page's other requests, so
/// that page clients never run a run out of descriptors.
pub(super) fn bound() -> usize {
    let limit = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_or(1024, |(soft, _)| soft);
    bound_of(limit)
}

/// The bound under a soft limit of `limit` descriptors (`RLIM_INFINITY` is `u64::MAX`).
fn bound_of(limit: u64) -> usize {
    usize::try_from((limit / 8).clamp(1, MOST)).unwrap_or(1)
}

/// The open streams of one run's page.
#[derive(Clone)]
pub(super) struct Streams {
    shared: Arc<(Mutex<Open>, Condvar)>,
    bound: usize,
    log: PathBuf,
}

/// What the streams' thread and the workers that admit streams share.
#[derive(Default)]
struct Open {
    sockets: Vec<TcpStream>,
    /// Where in the log the first stream of a quiet page started: the log's end when it came.
    from: Option<u64>,
}

impl Streams {
    /// The streams of `run`, whose board is in `git_dir` and event log at `log`, with the thread that feeds them.
    pub(super) fn start(
        git_dir: PathBuf,
        run: String,
        log: PathBuf,
        bound: usize,
    ) -> std::io::Result<Self> {
        let streams = Self {
            shared: Arc::default(),
            bound,
            log: log.clone(),
        };
        let feeder = streams.clone();
        std::thread::Builder::new()
            .name("swarm-web-events".to_owned())
            .spawn(move || {
                feeder.feed(Tail {
                    git_dir,
                    board: None,
                    run,
                    path: log,
                    offset: 0,
                });
            })?;
        Ok(streams)
    }

    fn open(&self) -> MutexGuard<'_, Open> {
        // Nothing panics while holding it; if something did, the sockets are still sound.
        self.shared.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `socket`, whose request asked for the stream: answered with the stream's head and
    /// kept, or refused (503) when `bound` streams are open.
    pub(super) fn admit(&self, mut socket: TcpStream) {
        let mut open = self.open();
        // Those that left make room first: a page that went away does not hold its place
        // until the next look.
        drop_gone(&mut open.sockets);
        if open.sockets.len() >= self.bound {
            drop(open);
            let busy = Reply::text(503, "too many event streams; try again later\n")
                .with_header("Retry-After", RETRY_AFTER.to_string());
            let _ = write_reply(&mut socket, &busy);
            return;
        }
        let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n";
        if socket.write_all(head).is_err() || socket.set_nonblocking(true).is_err() {
            return;
        }
        if open.sockets.is_empty() {
            open.from = Some(std::fs::metadata(&self.log).map_or(0, |m| m.len()));
        }
        open.sockets.push(socket);
        self.shared.1.notify_one();
    }

    /// Feeds the open streams, for as long as swarm runs: while none is open it waits.
    fn feed(&self, mut tail: Tail) {
        let mut quiet_since = Instant::now();
        loop {
            {
                let mut open = self.open();
                while open.sockets.is_empty() {
                    open = self
                        .shared
                        .1
                        .wait(open)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                if let Some(from) = open.from.take() {
                    tail.offset = from;
                }
            }
            // Read before the log, so that what the run logged before it ended goes out
            // before the end.
            let finished = tail.finished();
            let mut out = tail.look();
            if finished == Some(true) {
                out.extend_from_slice(b"event: end\ndata: {}\n\n");
            } else if out.is_empty() && quiet_since.elapsed() >= KEEP_ALIVE {
                out.extend_from_slice(b": still here\n\n");
            }
            {
                let mut open = self.open();
                drop_gone(&mut open.sockets);
                if !out.is_empty() {
                    open.sockets.retain_mut(|s| send(s, &out));
                    quiet_since = Instant::now();
                }
                if finished == Some(true) {
                    // Each page was told; the streams end by closing.
                    open.sockets.clear();
                }
            }
            std::thread::sleep(TAIL);
        }
    }
}

/// Drops the sockets whose client closed its end (or whose connection broke). A client sends
/// nothing after its request, so anything it sends is read and let go.
fn drop_gone(sockets: &mut Vec<TcpStream>) {
    let mut scrap = [0u8; 512];
    sockets.retain_mut(|s| match s.read(&mut scrap) {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
        ),
    });
}

/// Writes `bytes` whole to a non-blocking `socket`; false when it cannot take them now (its
/// client stopped reading or went away).
fn send(socket: &mut TcpStream, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        match socket.write(bytes) {
            Ok(0) => return false,
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// The event log, tailed: new lines become server-sent events.
struct Tail {
    git_dir: PathBuf,
    /// Opened at the first look, on the thread that looks (a board is never shared).
    board: Option<Board>,
    run: String,
    path: PathBuf,
    offset: u64,
}

impl Tail {
    fn board(&mut self) -> Option<&Board> {
        if self.board.is_none() {
            self.board = Board::open(&self.git_dir.join("swarm")).ok();
        }
        self.board.as_ref()
    }

    /// What the log got since the last look, as events.
    fn look(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut new = Vec::new();
        let read = std::fs::File::open(&self.path).and_then(|mut file| {
            file.seek(SeekFrom::Start(self.offset))?;
            file.read_to_end(&mut new)
        });
        // Not there yet, or not readable now: the next look tries again.
        if read.is_err() {
            return out;
        }
        // Only whole lines: a line being written is read at the next look.
        let Some(last) = new.iter().rposition(|&b| b == b'\n') else {
            return out;
        };
        self.offset += (last + 1) as u64;
        let run = self.run.clone();
        let statuses: HashMap<String, &'static str> = self
            .board()
            .and_then(|b| b.load_tasks(&run).ok())
            .unwrap_or_default()
            .into_iter()
            .map(|t| (t.id, t.status.as_str()))
            .collect();
        for line in new[..last].split(|&b| b == b'\n') {
            let Ok(logged) = serde_json::from_slice::<Logged>(line) else {
                continue;
            };
            let (kind, _) = logged.event.kind_and_detail();
            let status = logged
                .task
                .as_deref()
                .and_then(|t| statuses.get(t).copied());
            let data =
                json!({"task": logged.task, "kind": kind, "status": status, "at": logged.at});
            out.extend_from_slice(format!("data: {data}\n\n").as_bytes());
        }
        out
    }

    /// Whether the run is no longer running (gone from the board counts as ended); `None`
    /// when the board could not tell now.
    fn finished(&mut self) -> Option<bool> {
        let run = self.run.clone();
        let record = self.board()?.load_run(&run).ok()?;
        Some(record.is_none_or(|r| r.status != RunStatus::Running))
    }
}

#[cfg(test)]
mod tests {
    use super::bound_of;

    #[test]
    fn streams_take_an_eighth_of_the_descriptors_at_most_128() {
        for (limit, bound) in [
            (0, 1),
            (8, 1),
            (64, 8),
            (256, 32),
            (1024, 128),
            (1_048_576, 128),
            (u64::MAX, 128),
        ] {
            assert_eq!(bound_of(limit), bound, "{limit}");
        }
    }
}

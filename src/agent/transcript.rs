//! An attempt's transcript, held to a cap (`transcript-cap`): swarm's own lines (the header,
//! the section marks, the outcome) are written whole; what the attempt's processes print goes
//! through a `Stream` that keeps its first part and its last part within a share of the cap
//! and marks the cut between them (`[… N bytes cut …]`). The last part waits in a ring of
//! fixed size in an unnamed file beside the transcript until the stream ends, so neither the
//! transcript nor swarm's memory grows with what an agent prints.

use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// How much is read or copied at a time.
const CHUNK: usize = 64 * 1024;

/// An attempt's transcript file, held to its cap.
pub(crate) struct Transcript {
    sink: Sink,
    path: PathBuf,
    dir: PathBuf,
    cap: u64,
    /// Bytes in the file so far (or waiting for it).
    written: u64,
}

/// Where a transcript's bytes go: its file, or, for a transcript made only when something
/// needs it (`Transcript::when_needed`), the bytes waiting for the file until then. Shared by
/// the transcript and its streams.
#[derive(Clone)]
struct Sink(Arc<Mutex<Held>>);

struct Held {
    path: PathBuf,
    file: Option<File>,
    waiting: Vec<u8>,
}

impl Sink {
    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Held {
    /// The file, made now if it was not (whatever a task left at its path is replaced, never
    /// written through), with what waited for it written first.
    fn file(&mut self) -> std::io::Result<&mut File> {
        let file = if let Some(file) = self.file.take() {
            file
        } else {
            let mut file = crate::planted::replace(&self.path)?;
            file.write_all(&std::mem::take(&mut self.waiting))?;
            file
        };
        Ok(self.file.insert(file))
    }
}

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.held().file()?.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Transcript {
    /// A new transcript at `path` (whatever a task left there is replaced, never written
    /// through), to hold at most `cap` bytes of what processes print.
    pub(crate) fn create(path: &Path, cap: u64) -> std::io::Result<Self> {
        let t = Self::when_needed(path, cap);
        t.sink
            .held()
            .file()
            .map_err(|e| crate::disk::name(path, e))?;
        Ok(t)
    }

    /// A transcript at `path` whose file is made only when something is written into it
    /// through a stream, or `keep` says so: until then swarm's own lines wait in memory, and
    /// a transcript never needed leaves no file (nor anything a task left at its path).
    pub(crate) fn when_needed(path: &Path, cap: u64) -> Self {
        Self {
            sink: Sink(Arc::new(Mutex::new(Held {
                path: path.to_owned(),
                file: None,
                waiting: Vec::new(),
            }))),
            path: path.to_owned(),
            dir: path.parent().unwrap_or(Path::new(".")).to_owned(),
            cap,
            written: 0,
        }
    }

    /// The transcript at `path` as it is, to add to (that of an attempt a killed swarm never
    /// saw end).
    pub(crate) fn reopen(path: &Path, cap: u64) -> std::io::Result<Self> {
        let mut file =
            crate::planted::open_with(path, std::fs::OpenOptions::new().read(true).write(true))?;
        let written = file.seek(SeekFrom::End(0))?;
        Ok(Self {
            sink: Sink(Arc::new(Mutex::new(Held {
                path: path.to_owned(),
                file: Some(file),
                waiting: Vec::new(),
            }))),
            path: path.to_owned(),
            dir: path.parent().unwrap_or(Path::new(".")).to_owned(),
            cap,
            written,
        })
    }

    /// Makes its file now, if it was waiting to be needed.
    pub(crate) fn keep(&mut self) -> std::io::Result<()> {
        self.sink
            .held()
            .file()
            .map(drop)
            .map_err(|e| crate::disk::name(&self.path, e))
    }

    /// Whether its file was made.
    pub(crate) fn kept(&self) -> bool {
        self.sink.held().file.is_some()
    }

    /// Writes swarm's own text, whole.
    pub(crate) fn note(&mut self, text: &str) -> std::io::Result<()> {
        let mut held = self.sink.held();
        match &mut held.file {
            Some(file) => file
                .write_all(text.as_bytes())
                .map_err(|e| crate::disk::name(&self.path, e))?,
            None => held.waiting.extend_from_slice(text.as_bytes()),
        }
        self.written += text.len() as u64;
        Ok(())
    }

    /// What is left of the cap.
    pub(crate) fn room(&self) -> u64 {
        self.cap.saturating_sub(self.written)
    }

    /// A stream of printed output that keeps at most `share` bytes of it here.
    pub(crate) fn stream(&self, share: u64) -> Stream {
        Stream {
            out: self.sink.clone(),
            dir: self.dir.clone(),
            head_left: share / 2,
            head_ends_line: true,
            ring: Ring {
                file: None,
                size: share - share / 2,
                total: 0,
                dropped: 0,
                before: None,
            },
            kept: 0,
            seen: Arc::new(AtomicU64::new(0)),
            error: None,
        }
    }

    /// Ends `stream`: its cut is marked and its last part written. A write that found the
    /// disk full, then or while the stream ran, names the transcript.
    pub(crate) fn end(&mut self, stream: Stream) -> std::io::Result<()> {
        self.written += stream
            .finish()
            .map_err(|e| crate::disk::name(&self.path, e))?;
        Ok(())
    }

    /// Hides the secrets it holds, through the file swarm has open (a transcript never made
    /// holds none).
    pub(crate) fn redact(self) -> std::io::Result<()> {
        let mut held = self.sink.held();
        match &mut held.file {
            Some(file) => {
                crate::secret::redact_in(file).map_err(|e| crate::disk::name(&self.path, e))
            }
            None => Ok(()),
        }
    }
}

/// One stream of printed output on its way into a transcript: its first half-share written
/// at once (ended at a line's end where the line allows), the rest held in the ring, of which
/// the last half-share is written when the stream ends.
pub(crate) struct Stream {
    out: Sink,
    dir: PathBuf,
    /// Bytes the first part may still take.
    head_left: u64,
    /// Whether the first part, so far, ends a line.
    head_ends_line: bool,
    ring: Ring,
    /// Bytes written into the transcript.
    kept: u64,
    /// Bytes offered, kept or not: the watchdog's sign of life.
    seen: Arc<AtomicU64>,
    /// The first write that failed; what follows is counted, not written.
    error: Option<std::io::Error>,
}

impl Stream {
    /// How many bytes the stream has been offered so far, as it goes.
    pub(crate) fn seen(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.seen)
    }

    /// Takes printed bytes; a failure to write them is kept for `finish`.
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        self.seen.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.take(bytes) {
            self.error = Some(e);
        }
    }

    fn take(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        if self.head_left > 0 && !bytes.is_empty() {
            let fits = bytes.len().min(self.head_left as usize);
            // The first part ends here: at the end of its last whole line, if it has one.
            let head = if fits < bytes.len() {
                memchr::memrchr(b'\n', &bytes[..fits]).map_or(fits, |at| at + 1)
            } else {
                fits
            };
            self.out.write_all(&bytes[..head])?;
            self.kept += head as u64;
            if head > 0 {
                self.head_ends_line = bytes[head - 1] == b'\n';
            }
            self.head_left = if fits < bytes.len() {
                0
            } else {
                self.head_left - head as u64
            };
            bytes = &bytes[head..];
        }
        if !bytes.is_empty() {
            self.ring.push(&self.dir, bytes)?;
        }
        Ok(())
    }

    /// Takes the rest of `file` from where it is, passing over what the cut would drop
    /// instead of reading it.
    pub(crate) fn copy_from(&mut self, file: &mut File) -> std::io::Result<()> {
        let end = file.metadata()?.len();
        let mut buf = vec![0u8; CHUNK];
        let mut passed = false;
        loop {
            if !passed && self.head_left == 0 && self.error.is_none() {
                passed = true;
                let at = file.stream_position()?;
                let from = end.saturating_sub(self.ring.size);
                if from > at {
                    // The byte before what is kept says whether that starts a line.
                    let mut before = [0u8];
                    file.seek(SeekFrom::Start(from - 1))?;
                    file.read_exact(&mut before)?;
                    self.ring.pass(from - at, before[0]);
                    self.seen.fetch_add(from - at, Ordering::Relaxed);
                }
            }
            let n = file.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            self.write(&buf[..n]);
        }
    }

    /// Marks the cut, if anything was cut, and writes the last part after it, from the start
    /// of a line where one starts early in it; the bytes kept in all, or the first failure.
    pub(crate) fn finish(mut self) -> std::io::Result<u64> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let cut = self.ring.lost();
        let mut first = self.ring.first_chunk()?;
        let mut from = 0;
        if cut > 0 {
            // The last part starts inside a line: from the next one, if it is in sight.
            if self.ring.before != Some(b'\n')
                && let Some(at) = memchr::memchr(b'\n', &first)
                && at + 1 < first.len()
            {
                from = at + 1;
            }
            let mark = format!(
                "{}[… {} bytes cut …]\n",
                if self.head_ends_line { "" } else { "\n" },
                cut + from as u64
            );
            self.out.write_all(mark.as_bytes())?;
            self.kept += mark.len() as u64;
        }
        first.drain(..from);
        self.out.write_all(&first)?;
        self.kept += first.len() as u64;
        self.kept += self.ring.copy_rest(&mut self.out)?;
        Ok(self.kept)
    }
}

/// The last `size` bytes of a stream, in an unnamed file made when first needed: the byte
/// pushed `total` bytes ago is at `total % size`.
struct Ring {
    file: Option<File>,
    size: u64,
    /// Bytes pushed since it was last emptied.
    total: u64,
    /// Bytes lost before it was last emptied.
    dropped: u64,
    /// The byte before the oldest it holds, once one was lost.
    before: Option<u8>,
}

impl Ring {
    fn push(&mut self, dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let len = bytes.len() as u64;
        if self.size == 0 {
            self.total += len;
            return Ok(());
        }
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(tempfile::tempfile_in(dir)?),
        };
        let end = self.total + len;
        if end > self.size {
            // Read before it is written over.
            let before = end - self.size - 1;
            self.before = Some(if before >= self.total {
                bytes[(before - self.total) as usize]
            } else {
                let mut b = [0u8];
                file.read_exact_at(&mut b, before % self.size)?;
                b[0]
            });
        }
        // Only the last `size` bytes of these can stay.
        let skip = len.saturating_sub(self.size);
        let mut rest = &bytes[skip as usize..];
        let mut at = (self.total + skip) % self.size;
        while !rest.is_empty() {
            let n = rest.len().min((self.size - at) as usize);
            file.write_all_at(&rest[..n], at)?;
            rest = &rest[n..];
            at = (at + n as u64) % self.size;
        }
        self.total = end;
        Ok(())
    }

    /// Loses what it holds and `n` bytes after it, the last of them `before`.
    fn pass(&mut self, n: u64, before: u8) {
        self.dropped += self.total + n;
        self.total = 0;
        self.before = Some(before);
    }

    /// Bytes lost, pushed out by later ones or passed over.
    fn lost(&self) -> u64 {
        self.dropped + self.total.saturating_sub(self.size)
    }

    /// Bytes it holds.
    fn held(&self) -> u64 {
        self.total.min(self.size)
    }

    /// Where its oldest byte is.
    fn start(&self) -> u64 {
        if self.total > self.size {
            self.total % self.size
        } else {
            0
        }
    }

    /// The `n` bytes from position `from` (in order, 0 the oldest).
    fn read(&self, from: u64, n: usize) -> std::io::Result<Vec<u8>> {
        let Some(file) = &self.file else {
            return Ok(Vec::new());
        };
        let mut buf = vec![0u8; n];
        let mut done = 0;
        while done < n {
            let at = (self.start() + from + done as u64) % self.size;
            let run = (n - done).min((self.size - at) as usize);
            file.read_exact_at(&mut buf[done..done + run], at)?;
            done += run;
        }
        Ok(buf)
    }

    /// Its oldest bytes, a chunk at most.
    fn first_chunk(&self) -> std::io::Result<Vec<u8>> {
        self.read(0, self.held().min(CHUNK as u64) as usize)
    }

    /// Writes what follows the first chunk into `out`; the bytes written.
    fn copy_rest(&self, out: &mut impl std::io::Write) -> std::io::Result<u64> {
        let mut from = self.held().min(CHUNK as u64);
        let held = self.held();
        while from < held {
            let n = (held - from).min(CHUNK as u64) as usize;
            out.write_all(&self.read(from, n)?)?;
            from += n as u64;
        }
        Ok(held.saturating_sub(CHUNK as u64))
    }
}

/// Copies what a process writes to a pipe (its stderr) into a stream as it comes, on a thread
/// of its own, until every writer has closed the pipe or the process has ended: a process it
/// left behind that keeps the pipe open holds nothing up.
pub(crate) struct Copier {
    thread: std::thread::JoinHandle<()>,
    /// Dropped when the process has ended.
    ended: Option<std::io::PipeWriter>,
}

impl Copier {
    pub(crate) fn start(
        pipe: std::io::PipeReader,
        into: Arc<Mutex<Stream>>,
    ) -> std::io::Result<Self> {
        use nix::fcntl::{FcntlArg, OFlag, fcntl};
        fcntl(&pipe, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        let (told, ended) = std::io::pipe()?;
        let thread = std::thread::Builder::new()
            .name("swarm-output".into())
            .spawn(move || copy(&pipe, &told, &into))?;
        Ok(Self {
            thread,
            ended: Some(ended),
        })
    }

    /// Once the process has ended: takes what it left in the pipe and stops.
    pub(crate) fn finish(mut self) {
        drop(self.ended.take());
        let _ = self.thread.join();
    }
}

fn copy(pipe: &std::io::PipeReader, ended: &std::io::PipeReader, into: &Mutex<Stream>) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd as _;
    let mut buf = vec![0u8; CHUNK];
    let mut reader = pipe;
    let mut last = false;
    loop {
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => into
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .write(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let mut stream = into.lock().unwrap_or_else(PoisonError::into_inner);
                    stream.error.get_or_insert(e);
                    return;
                }
            }
        }
        if last {
            return;
        }
        let mut fds = [
            PollFd::new(pipe.as_fd(), PollFlags::POLLIN),
            PollFd::new(ended.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => {
                let mut stream = into.lock().unwrap_or_else(PoisonError::into_inner);
                stream.error.get_or_insert(e.into());
                return;
            }
        }
        // The process has ended: what is in the pipe now is all it wrote.
        last = fds[1].revents().is_some_and(|r| !r.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::Transcript;

    /// What a stream keeps of `chunks` with `share` bytes, through a transcript.
    fn kept(share: u64, chunks: &[&[u8]]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.log");
        let mut t = Transcript::create(&path, 1 << 20).unwrap();
        let mut s = t.stream(share);
        for c in chunks {
            s.write(c);
        }
        t.end(s).unwrap();
        std::fs::read_to_string(&path).unwrap()
    }

    #[test]
    fn a_transcript_made_when_needed_is_no_file_until_a_stream_writes_and_then_opens_with_its_notes()
     {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.1.log");
        // What a task left at the path is never read as the transcript.
        std::fs::write(&path, "planted").unwrap();
        let mut t = Transcript::when_needed(&path, 1 << 20);
        t.note("header\n").unwrap();
        assert!(!t.kept());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "planted");

        let mut s = t.stream(1024);
        s.write(b"on stderr\n");
        assert!(t.kept());
        t.end(s).unwrap();
        t.note("end\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "header\non stderr\nend\n"
        );
    }

    #[test]
    fn output_within_its_share_is_kept_whole() {
        assert_eq!(kept(100, &[b"one\n", b"two\n"]), "one\ntwo\n");
        assert_eq!(kept(8, &[b"one\n", b"two\n"]), "one\ntwo\n");
    }

    #[test]
    fn past_its_share_the_first_and_last_lines_are_kept_and_the_cut_marked() {
        let lines: Vec<String> = (0..1000).map(|i| format!("line {i:04}\n")).collect();
        let chunks: Vec<&[u8]> = lines.iter().map(String::as_bytes).collect();
        let text = kept(100, &chunks);
        // 50 bytes of head and of tail: five lines each.
        assert_eq!(
            text,
            "line 0000\nline 0001\nline 0002\nline 0003\nline 0004\n[… 9900 bytes cut …]\nline 0995\nline 0996\nline 0997\nline 0998\nline 0999\n"
        );
        // Lines that do not fit end: the first part at the end of its last whole line, the
        // last part at the start of its first.
        let text = kept(
            30,
            &[b"0123456\nabcdefghij\n", b"klmnop\nqrstuvw\n", b"xyz\n"],
        );
        assert_eq!(text, "0123456\n[… 18 bytes cut …]\nqrstuvw\nxyz\n");
    }

    #[test]
    fn a_ring_that_wrapped_many_times_gives_its_bytes_in_order() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let chunks: Vec<&[u8]> = bytes.chunks(37).collect();
        let text = kept(200, &chunks);
        let tail = std::str::from_utf8(&bytes[10_000 - 100..]).unwrap();
        let head = std::str::from_utf8(&bytes[..100]).unwrap();
        assert_eq!(text, format!("{head}\n[… 9800 bytes cut …]\n{tail}"));
    }

    #[test]
    fn a_file_past_its_share_is_passed_over_not_read_and_cut_the_same_way() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = tempfile::tempfile_in(dir.path()).unwrap();
        for i in 0..100_000 {
            writeln!(out, "stdout {i:06}").unwrap();
        }
        std::io::Seek::rewind(&mut out).unwrap();
        let path = dir.path().join("t.log");
        let mut t = Transcript::create(&path, 1 << 20).unwrap();
        t.note("--- stdout ---\n").unwrap();
        let mut s = t.stream(64);
        s.copy_from(&mut out).unwrap();
        t.end(s).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "--- stdout ---\nstdout 000000\nstdout 000001\n[… 1399944 bytes cut …]\nstdout 099998\nstdout 099999\n"
        );
    }

    #[test]
    fn the_copier_takes_what_a_process_wrote_and_stops_when_it_has_ended() {
        use std::sync::{Arc, Mutex};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.log");
        let mut t = Transcript::create(&path, 1 << 20).unwrap();
        let stream = Arc::new(Mutex::new(t.stream(1 << 20)));
        let (read, mut write) = std::io::pipe().unwrap();
        let copier = super::Copier::start(read, Arc::clone(&stream)).unwrap();
        write.write_all(b"said before the end\n").unwrap();
        // Held open, as by a process that outlived the attempt: the copier stops anyway.
        copier.finish();
        let stream = Arc::into_inner(stream).unwrap().into_inner().unwrap();
        t.end(stream).unwrap();
        drop(write);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "said before the end\n"
        );
    }
}

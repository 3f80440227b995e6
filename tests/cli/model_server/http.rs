//! The HTTP/1.1 the model server and the refusing proxy speak: a loopback listener serving each
//! connection on a thread of its own, request heads and bodies, and whole responses. Just
//! enough for the keep-alive clients of the real CLIs (Bun's fetch in Claude Code, reqwest in
//! Codex); it knows nothing of models.

use std::io::{self, BufRead, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};

/// Every accepted socket (a clone, so `Drop` can shut it down and wake its thread) and the
/// thread serving it.
type Connections = Arc<Mutex<Vec<(TcpStream, JoinHandle<()>)>>>;

/// A loopback listener on a free port. Dropping it closes every connection and joins every
/// thread; a panic in a connection's thread is raised again in the test.
pub struct Loopback {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    connections: Connections,
    acceptor: Option<JoinHandle<()>>,
}

impl Loopback {
    /// Listens on 127.0.0.1 and serves each connection with `serve` on a thread named `name`.
    pub fn start(name: &str, serve: impl Fn(TcpStream) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("binding a loopback port");
        let addr = listener.local_addr().expect("a loopback address");
        let stopping = Arc::new(AtomicBool::new(false));
        let connections: Connections = Arc::new(Mutex::new(Vec::new()));
        let serve = Arc::new(serve);
        let acceptor = {
            let stopping = Arc::clone(&stopping);
            let connections = Arc::clone(&connections);
            let name = name.to_owned();
            thread::Builder::new()
                .name(format!("{name}-accept"))
                .spawn(move || {
                    for stream in listener.incoming() {
                        if stopping.load(Ordering::SeqCst) {
                            break;
                        }
                        let Ok(stream) = stream else { continue };
                        let Ok(watch) = stream.try_clone() else {
                            continue;
                        };
                        // Each answer is written whole at once; Nagle would only delay it.
                        drop(stream.set_nodelay(true));
                        let serve = Arc::clone(&serve);
                        let thread = thread::Builder::new()
                            .name(name.clone())
                            .spawn(move || serve(stream))
                            .expect("spawning a connection thread");
                        lock(&connections).push((watch, thread));
                    }
                })
                .expect("spawning an acceptor")
        };
        Self {
            addr,
            stopping,
            connections,
            acceptor: Some(acceptor),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // `accept` has no timeout: one connection of our own wakes it to see the flag.
        drop(TcpStream::connect(self.addr));
        let mut panicked = self.acceptor.take().is_some_and(|t| t.join().is_err());
        // The acceptor is gone, so the list is complete. Shutting a socket down wakes a thread
        // blocked reading it (an idle keep-alive connection, or a reply that hangs).
        let connections = std::mem::take(&mut *lock(&self.connections));
        for (stream, _) in &connections {
            drop(stream.shutdown(Shutdown::Both));
        }
        for (_, thread) in connections {
            panicked |= thread.join().is_err();
        }
        assert!(
            !panicked || thread::panicking(),
            "a loopback server thread panicked (its message is above)"
        );
    }
}

pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking script holds no lock, so the data is consistent even if poisoned.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A request line and its headers.
pub struct Head {
    pub method: String,
    /// The request target as sent: a path, `host:port` for CONNECT, or an absolute URL.
    pub target: String,
    /// Names lowercased, values trimmed, in the order sent.
    pub headers: Vec<(String, String)>,
}

impl Head {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.header(name)
            .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    }
}

/// Reads a request line and headers; `None` at a clean end of stream.
pub fn read_head(reader: &mut impl BufRead) -> io::Result<Option<Head>> {
    let mut line = String::new();
    // Blank lines before a request line are allowed (RFC 9112 §2.2).
    loop {
        line.clear();
        if read_line(reader, &mut line)? == 0 {
            return Ok(None);
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(invalid(format!("bad request line {line:?}")));
    };
    let mut head = Head {
        method: method.to_owned(),
        target: target.to_owned(),
        headers: Vec::new(),
    };
    loop {
        line.clear();
        if read_line(reader, &mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let field = line.trim_end_matches(['\r', '\n']);
        if field.is_empty() {
            return Ok(Some(head));
        }
        let Some((name, value)) = field.split_once(':') else {
            return Err(invalid(format!("bad header line {field:?}")));
        };
        head.headers
            .push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
}

/// One line including its `\n`, decoded leniently; 0 at end of stream.
fn read_line(reader: &mut impl BufRead, line: &mut String) -> io::Result<usize> {
    let mut bytes = Vec::new();
    let n = reader.read_until(b'\n', &mut bytes)?;
    line.push_str(&String::from_utf8_lossy(&bytes));
    Ok(n)
}

/// The body after `head`: by `Content-Length`, or chunked.
pub fn read_body(reader: &mut impl BufRead, head: &Head) -> io::Result<Vec<u8>> {
    if head.has_token("transfer-encoding", "chunked") {
        return read_chunked(reader);
    }
    let length = match head.header("content-length") {
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| invalid(format!("bad Content-Length {v:?}")))?,
        None => 0,
    };
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(body)
}

fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if read_line(reader, &mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| invalid(format!("bad chunk size line {line:?}")))?;
        if size == 0 {
            break;
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf)?;
        if &crlf != b"\r\n" {
            return Err(invalid("a chunk does not end with CRLF".to_owned()));
        }
    }
    // Trailer fields, ignored, up to the blank line.
    loop {
        line.clear();
        if read_line(reader, &mut line)? == 0 || line.trim().is_empty() {
            return Ok(body);
        }
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// A whole response: status line, `headers` (a `Content-Type` of JSON unless given; the
/// framing headers are ours), `Content-Length`, the body, in one write.
pub fn write_response(
    writer: &mut impl Write,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    close: bool,
) -> io::Result<()> {
    let mut out = Vec::new();
    write!(out, "HTTP/1.1 {status} {}\r\n", reason(status))?;
    let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    if !has("content-type") {
        out.extend_from_slice(b"Content-Type: application/json\r\n");
    }
    for (name, value) in headers {
        let framing = ["content-length", "transfer-encoding", "connection"]
            .iter()
            .any(|f| name.eq_ignore_ascii_case(f));
        if !framing {
            write!(out, "{name}: {value}\r\n")?;
        }
    }
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    write!(out, "Content-Length: {}\r\n\r\n", body.len())?;
    out.extend_from_slice(body);
    writer.write_all(&out)?;
    writer.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Unknown",
    }
}

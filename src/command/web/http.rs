//! The page's HTTP, on std's TCP: a few workers that each take a connection, read one `GET`,
//! answer it and close (an event stream is handed to the streams instead), and the checks a
//! request passes before the site sees it: a head of bounded size read within a bounded time,
//! and a `Host` the page answers to. It knows nothing of runs: what a path answers is the
//! site's.
//!
//! Nothing a client sends or fails to send ends a worker, and the number of connections it
//! holds is the number of workers: those waiting beyond it wait in the kernel's queue, which
//! costs swarm no file descriptor.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::stream::Streams;
use super::{Answer, Reply, Site};

/// Connections read and answered at once (an event stream leaves its worker once it starts).
/// A page opens four at load (the page, the graph, the state, the stream).
const WORKERS: usize = 8;
/// A request's head (request line and headers) larger than this is refused (431).
const HEAD_MAX: usize = 8 * 1024;
/// A client has this long to send its request's head; then its connection is closed.
const HEAD_TIME: Duration = Duration::from_secs(10);
/// A client that reads nothing of an answer for this long is let go.
const WRITE_TIME: Duration = Duration::from_secs(30);
/// After an accept fails (out of file descriptors, most likely), the first pause, doubled at
/// each failure in a row up to `PAUSE_MAX`.
const PAUSE_MIN: Duration = Duration::from_millis(5);
const PAUSE_MAX: Duration = Duration::from_secs(1);

/// Serves `site` on `listener` from threads of their own, until swarm exits.
pub(super) fn serve(
    listener: TcpListener,
    site: Site,
    hosts: Hosts,
    streams: Streams,
) -> std::io::Result<()> {
    let shared = Arc::new(Worker {
        listener,
        site,
        hosts,
        streams,
    });
    for _ in 0..WORKERS {
        let worker = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("swarm-web".to_owned())
            .spawn(move || worker.work())?;
    }
    Ok(())
}

/// What each worker thread shares.
struct Worker {
    listener: TcpListener,
    site: Site,
    hosts: Hosts,
    streams: Streams,
}

impl Worker {
    fn work(&self) {
        loop {
            let socket = accept(|| self.listener.accept(), std::thread::sleep);
            self.answer(socket);
        }
    }

    /// Reads one request from `socket` and answers it; every failure of the client's ends
    /// here, with the connection.
    fn answer(&self, mut socket: TcpStream) {
        if socket.set_write_timeout(Some(WRITE_TIME)).is_err() {
            return;
        }
        let head = match read_head(&mut socket) {
            Head::Read(head) => head,
            Head::TooLarge => {
                let _ = write_reply(&mut socket, &Reply::text(431, "request head too large\n"));
                return;
            }
            // The client left, or sent nothing in time: nothing to answer.
            Head::Gone => return,
        };
        let request = parse(&head);
        let reply = match request {
            Err(refusal) => refusal,
            Ok(request) if !self.hosts.allow(request.host) => Reply::text(
                421,
                "this page answers only at its own address (127.0.0.1, localhost or the address it was bound to)\n",
            ),
            Ok(request) => match self.site.answer(request.path, request.query) {
                Answer::Reply(reply) => reply,
                Answer::Stream => {
                    self.streams.admit(socket);
                    return;
                }
            },
        };
        let _ = write_reply(&mut socket, &reply);
    }
}

/// The next connection `accept` gives. An accept that fails does not end anything: out of
/// file descriptors (`EMFILE`), the connection waits in the kernel's queue while the process
/// is paused a little longer at each failure in a row, then tried again.
fn accept<S>(
    mut accept: impl FnMut() -> std::io::Result<(S, SocketAddr)>,
    mut pause: impl FnMut(Duration),
) -> S {
    let mut wait = PAUSE_MIN;
    loop {
        match accept() {
            Ok((socket, _)) => return socket,
            // The client gave up before it was taken, or a signal came: nothing is short.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => {
                pause(wait);
                wait = (wait * 2).min(PAUSE_MAX);
            }
        }
    }
}

/// What a client sent before its request's blank line.
enum Head {
    Read(Vec<u8>),
    TooLarge,
    /// Closed before a whole head, or too slow to send it.
    Gone,
}

/// The head of the request on `socket` (up to its blank line).
fn read_head(socket: &mut TcpStream) -> Head {
    let deadline = Instant::now() + HEAD_TIME;
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || socket.set_read_timeout(Some(left)).is_err() {
            return Head::Gone;
        }
        let n = match socket.read(&mut chunk) {
            Ok(0) => return Head::Gone,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Head::Gone,
        };
        // The blank line may straddle two reads: look from a little before the new bytes.
        let from = head.len().saturating_sub(3);
        head.extend_from_slice(&chunk[..n]);
        if let Some(end) = head_end(&head[from..]) {
            head.truncate(from + end);
            return Head::Read(head);
        }
        if head.len() > HEAD_MAX {
            return Head::TooLarge;
        }
    }
}

/// Where the blank line that ends a head ends in `bytes` (bare `\n` line ends are read too).
fn head_end(bytes: &[u8]) -> Option<usize> {
    bytes.windows(2).enumerate().find_map(|(i, w)| match w {
        b"\n\n" => Some(i + 2),
        b"\n\r" if bytes.get(i + 2) == Some(&b'\n') => Some(i + 3),
        _ => None,
    })
}

/// A request as the site and the checks need it.
struct Request<'a> {
    path: &'a str,
    query: &'a str,
    host: Option<&'a str>,
}

/// The request in `head`, or the answer to a request swarm does not serve.
fn parse(head: &[u8]) -> Result<Request<'_>, Reply> {
    let bad = || Reply::text(400, "bad request\n");
    let head = std::str::from_utf8(head).map_err(|_| bad())?;
    let mut lines = head.lines();
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (first.next(), first.next(), first.next(), first.next())
    else {
        return Err(bad());
    };
    if !version.starts_with("HTTP/1.") || !target.starts_with('/') {
        return Err(bad());
    }
    if method != "GET" {
        return Err(
            Reply::text(405, "only GET is answered: the page only reads\n")
                .with_header("Allow", "GET"),
        );
    }
    let mut host = None;
    for line in lines.take_while(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or_else(bad)?;
        if name.eq_ignore_ascii_case("host") {
            // Two Host headers could each name another server: neither is believed.
            if host.is_some() {
                return Err(bad());
            }
            host = Some(value.trim());
        }
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(Request { path, query, host })
}

/// The `Host` values the page answers to: `127.0.0.1`, `localhost`, `[::1]` and the address
/// it was bound to, each with its port (without one only on port 80, as browsers send it).
/// Any other name may be a page elsewhere that has its own name resolve to this machine
/// (DNS rebinding) to read this one: it is refused. Bound to every address (`0.0.0.0`,
/// `::`), any IP address is taken too: a page can rebind a name, never an address.
#[derive(Clone, Debug)]
pub(super) struct Hosts {
    names: Vec<String>,
    port: u16,
    any_address: bool,
}

impl Hosts {
    /// Those of a page bound to `bind` (as given) and listening at `addr`.
    pub(super) fn new(bind: &str, addr: SocketAddr) -> Self {
        let mut names: Vec<String> = ["127.0.0.1", "localhost", "[::1]"]
            .map(str::to_owned)
            .into();
        let bind = bind.trim_start_matches('[').trim_end_matches(']');
        names.push(match bind.parse::<IpAddr>() {
            Ok(IpAddr::V6(ip)) => format!("[{ip}]"),
            Ok(IpAddr::V4(ip)) => ip.to_string(),
            Err(_) => bind.to_ascii_lowercase(),
        });
        Self {
            names,
            port: addr.port(),
            any_address: addr.ip().is_unspecified(),
        }
    }

    /// Whether a request with `host` as its `Host` header is answered.
    fn allow(&self, host: Option<&str>) -> bool {
        let Some(host) = host else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        // An IPv6 address is bracketed; its colons are not the port's.
        let (name, port) = match host.rfind(':') {
            Some(i) if !host[i..].contains(']') => (&host[..i], Some(&host[i + 1..])),
            _ => (host.as_str(), None),
        };
        let port_matches = match port {
            Some(p) => p.parse::<u16>().ok() == Some(self.port),
            None => self.port == 80,
        };
        let address = || match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
            Some(v6) => v6.parse::<Ipv6Addr>().is_ok(),
            None => name.parse::<Ipv4Addr>().is_ok(),
        };
        port_matches && (self.names.iter().any(|n| *n == name) || (self.any_address && address()))
    }
}

/// Writes `reply` whole, as an HTTP/1.1 response that closes its connection.
pub(super) fn write_reply(socket: &mut TcpStream, reply: &Reply) -> std::io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n",
        reply.status,
        reason(reply.status),
        reply.content_type,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        let _ = write!(out, "{name}: {value}\r\n");
    }
    out.push_str("\r\n");
    socket.write_all(out.as_bytes())?;
    socket.write_all(&reply.body)?;
    socket.flush()
}

/// The reason phrase of the statuses the page answers with.
pub(super) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use super::{Hosts, Request, accept, head_end, parse};

    fn hosts(bind: &str, addr: &str) -> Hosts {
        Hosts::new(bind, addr.parse::<SocketAddr>().unwrap())
    }

    #[test]
    fn only_the_pages_own_hosts_are_answered() {
        let h = hosts("127.0.0.1", "127.0.0.1:4000");
        for ok in [
            "127.0.0.1:4000",
            "localhost:4000",
            "LocalHost:4000",
            "[::1]:4000",
        ] {
            assert!(h.allow(Some(ok)), "{ok}");
        }
        for refused in [
            "evil.example:4000",
            "127.0.0.1:4001",
            "127.0.0.1",
            "localhost",
            "localhost.:4000",
            "127.0.0.2:4000",
            "[::2]:4000",
            "::1:4000",
            "127.0.0.1:4000:4000",
            "",
        ] {
            assert!(!h.allow(Some(refused)), "{refused}");
        }
        assert!(!h.allow(None));
    }

    #[test]
    fn the_bind_address_is_answered_and_port_80_may_go_unsaid() {
        let h = hosts("127.0.0.2", "127.0.0.2:80");
        assert!(h.allow(Some("127.0.0.2:80")));
        assert!(h.allow(Some("127.0.0.2")));
        assert!(h.allow(Some("localhost")));
        assert!(!h.allow(Some("127.0.0.3")));
        let h = hosts("::1", "[::1]:4000");
        assert!(h.allow(Some("[::1]:4000")));
        let h = hosts("My-Host", "10.1.2.3:4000");
        assert!(h.allow(Some("my-host:4000")));
        assert!(!h.allow(Some("10.1.2.3:4000")));
    }

    #[test]
    fn bound_to_every_address_any_address_is_answered_but_no_other_name() {
        let h = hosts("0.0.0.0", "0.0.0.0:4000");
        assert!(h.allow(Some("192.168.1.7:4000")));
        assert!(h.allow(Some("[fe80::1]:4000")));
        assert!(h.allow(Some("0.0.0.0:4000")));
        assert!(!h.allow(Some("evil.example:4000")));
        assert!(!h.allow(Some("192.168.1.7:4001")));
        assert!(!h.allow(Some("[evil]:4000")));
        assert!(!h.allow(Some("::1:4000")));
        assert!(!h.allow(Some("[127.0.0.1]:4000")));
    }

    #[test]
    fn a_failing_accept_pauses_longer_each_time_and_never_ends() {
        let mut results = vec![
            Ok(((), "127.0.0.1:1".parse().unwrap())),
            Err(std::io::Error::from_raw_os_error(24)),
            Err(std::io::ErrorKind::ConnectionAborted.into()),
            Err(std::io::Error::from_raw_os_error(24)),
            Err(std::io::Error::from_raw_os_error(23)),
        ];
        let mut pauses = Vec::new();
        accept(|| results.pop().unwrap(), |d| pauses.push(d));
        assert!(results.is_empty());
        assert_eq!(
            pauses,
            [5, 10, 20].map(Duration::from_millis),
            "an aborted connection is no reason to wait"
        );
    }

    #[test]
    fn heads_end_at_the_first_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nrest"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\nrest"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
    }

    #[test]
    fn requests_are_parsed_or_refused_without_a_panic() {
        let ok = b"GET /state?token=t HTTP/1.1\r\nhOsT:  localhost:1 \r\nX: y\r\n\r\n";
        let Ok(Request { path, query, host }) = parse(ok) else {
            panic!()
        };
        assert_eq!(
            (path, query, host),
            ("/state", "token=t", Some("localhost:1"))
        );
        for (head, status) in [
            (&b"POST / HTTP/1.1\r\n\r\n"[..], 405),
            (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            (b"GET http://a/ HTTP/1.1\r\n\r\n", 400),
            (b"GET / SPDY\r\n\r\n", 400),
            (b"GET /\r\n\r\n", 400),
            (b"\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nno colon\r\n\r\n", 400),
            (b"GET /\xff HTTP/1.1\r\n\r\n", 400),
        ] {
            match parse(head) {
                Err(reply) => assert_eq!(reply.status, status, "{head:?}"),
                Ok(_) => panic!("{head:?}"),
            }
        }
    }
}

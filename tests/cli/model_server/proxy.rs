//! A proxy on loopback that refuses everything: the CLIs get it as `HTTPS_PROXY`, `HTTP_PROXY`
//! and `ALL_PROXY` (with `NO_PROXY` naming loopback), so whatever they try to reach besides the
//! model server (telemetry, update checks, plugin catalogues) ends here, with a 403, and never
//! leaves the machine. It records the host of each attempt.

use std::io::BufReader;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};

use super::http::{Head, Loopback, lock, read_head, write_response};

pub struct RefusingProxy {
    hosts: Arc<Mutex<Vec<String>>>,
    loopback: Loopback,
}

impl RefusingProxy {
    pub fn start() -> Self {
        let hosts = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&hosts);
        let loopback = Loopback::start("refusing-proxy", move |stream| {
            refuse(stream, &recorded);
        });
        Self { hosts, loopback }
    }

    /// `http://127.0.0.1:PORT`, for the proxy variables.
    pub fn url(&self) -> String {
        format!("http://{}", self.loopback.addr())
    }

    pub fn addr(&self) -> SocketAddr {
        self.loopback.addr()
    }

    /// The host (with its port when one was given) of every request or tunnel asked for so
    /// far, in arrival order.
    pub fn hosts(&self) -> Vec<String> {
        lock(&self.hosts).clone()
    }
}

/// Reads one request head, records its host and answers 403, closing the connection (a
/// client then has nothing to send a body or a TLS handshake through).
fn refuse(stream: TcpStream, hosts: &Mutex<Vec<String>>) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    if let Ok(Some(head)) = read_head(&mut reader) {
        lock(hosts).push(host(&head));
        let body = b"the test proxy refuses every request: nothing leaves loopback\n";
        let plain = [("Content-Type".to_owned(), "text/plain".to_owned())];
        drop(write_response(&mut writer, 403, &plain, body, true));
    }
    drop(writer.shutdown(Shutdown::Both));
}

/// `host:port` of a CONNECT, the authority of an absolute URL, else the `Host` header.
fn host(head: &Head) -> String {
    if head.method.eq_ignore_ascii_case("CONNECT") {
        return head.target.clone();
    }
    if let Some((_, rest)) = head.target.split_once("://") {
        return rest.split('/').next().unwrap_or_default().to_owned();
    }
    head.header("host").unwrap_or_default().to_owned()
}

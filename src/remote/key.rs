//! The key the coordinator of a run and its workers share (`SWARM_REMOTE_KEY`, from the CI's
//! secret store), and the signatures made with it: an HMAC-SHA256 of the ref a record is for
//! and of the files its commit holds. With the key, push access to the remote is not enough to
//! forge a record: a result or lease without a good signature is refused. The key's value is
//! never written anywhere, nor shown.

use std::fmt::{self, Write as _};
use std::os::unix::ffi::OsStrExt as _;

use ring::hmac;

use crate::error::Usage;

/// The variable that holds the key.
pub(crate) const KEY_VAR: &str = "SWARM_REMOTE_KEY";

/// Shorter keys are refused: they can be guessed.
const MIN_KEY_BYTES: usize = 16;

/// What every signed message starts with, so that a signature made for anything else with the
/// same key never verifies as one of these.
const DOMAIN: &[u8] = b"swarm remote record 1\n";

/// The shared key. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct Key(hmac::Key);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key([redacted])")
    }
}

impl Key {
    /// The key in `SWARM_REMOTE_KEY`, its surrounding whitespace trimmed (a secret read from
    /// a file often ends with a newline); `None` when the variable is unset or empty.
    pub(crate) fn from_env() -> Result<Option<Self>, Usage> {
        let Some(value) = std::env::var_os(KEY_VAR) else {
            return Ok(None);
        };
        let bytes = value.as_bytes().trim_ascii();
        if bytes.is_empty() {
            return Ok(None);
        }
        if bytes.len() < MIN_KEY_BYTES {
            return Err(Usage::new(format!(
                "{KEY_VAR} is too short ({} bytes): the key that signs a run's records on the remote needs at least {MIN_KEY_BYTES}",
                bytes.len()
            ))
            .hint(format!(
                "make one with `openssl rand -hex 32` and give the coordinator and every worker the same {KEY_VAR}"
            )));
        }
        Ok(Some(Self::new(bytes)))
    }

    pub(crate) fn new(bytes: &[u8]) -> Self {
        Self(hmac::Key::new(hmac::HMAC_SHA256, bytes))
    }

    /// The signature, in hex, of the record for ref `name` whose commit holds `files` (each
    /// file's name and its bytes, `None` for one it does not hold).
    pub(crate) fn sign(&self, name: &str, files: &[(&str, Option<&[u8]>)]) -> String {
        let tag = hmac::sign(&self.0, &message(name, files));
        tag.as_ref().iter().fold(String::new(), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        })
    }

    /// Whether `signature` (as a commit holds it) is the one this key makes for that record.
    /// The comparison takes the same time however much of it matches.
    pub(crate) fn verifies(
        &self,
        name: &str,
        files: &[(&str, Option<&[u8]>)],
        signature: &[u8],
    ) -> bool {
        let Some(tag) = from_hex(signature.trim_ascii()) else {
            return false;
        };
        hmac::verify(&self.0, &message(name, files), &tag).is_ok()
    }
}

/// The bytes signed: the domain, then the ref's name and each file's name and bytes, each
/// preceded by its length, so that no two records make the same message.
fn message(name: &str, files: &[(&str, Option<&[u8]>)]) -> Vec<u8> {
    fn field(out: &mut Vec<u8>, bytes: &[u8]) {
        out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    let mut out = DOMAIN.to_vec();
    field(&mut out, name.as_bytes());
    for (file, bytes) in files {
        field(&mut out, file.as_bytes());
        match bytes {
            Some(bytes) => {
                out.push(1);
                field(&mut out, bytes);
            }
            None => out.push(0),
        }
    }
    out
}

/// The bytes of a hex string; `None` when it is not one.
fn from_hex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| char::from(c).to_digit(16).map(|d| d as u8);
    text.chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Key, from_hex};

    const FILES: &[(&str, Option<&[u8]>)] = &[("record.json", Some(b"{}")), ("log", None)];

    #[test]
    fn a_signature_verifies_only_for_its_key_ref_and_files() {
        let key = Key::new(b"0123456789abcdef0123456789abcdef");
        let signature = key.sign("refs/swarm/r/result/a", FILES);
        assert_eq!(signature.len(), 64);
        assert!(key.verifies("refs/swarm/r/result/a", FILES, signature.as_bytes()));
        assert!(key.verifies(
            "refs/swarm/r/result/a",
            FILES,
            format!("{signature}\n").as_bytes()
        ));
        let other = Key::new(b"fedcba9876543210fedcba9876543210");
        assert!(!other.verifies("refs/swarm/r/result/a", FILES, signature.as_bytes()));
        assert!(!key.verifies("refs/swarm/r/lease/a", FILES, signature.as_bytes()));
        let changed: &[(&str, Option<&[u8]>)] = &[("record.json", Some(b"{} ")), ("log", None)];
        assert!(!key.verifies("refs/swarm/r/result/a", changed, signature.as_bytes()));
        let emptied: &[(&str, Option<&[u8]>)] = &[("record.json", Some(b"{}")), ("log", Some(b""))];
        assert!(!key.verifies("refs/swarm/r/result/a", emptied, signature.as_bytes()));
        assert!(!key.verifies("refs/swarm/r/result/a", FILES, b"not hex"));
        assert!(!key.verifies("refs/swarm/r/result/a", FILES, b""));
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let key = Key::new(b"a-secret-that-must-not-show");
        assert_eq!(format!("{key:?}"), "Key([redacted])");
    }

    #[test]
    fn hex_reads_back_and_refuses_what_is_not_hex() {
        assert_eq!(from_hex(b"00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(from_hex(b"0"), None);
        assert_eq!(from_hex(b"zz"), None);
    }
}

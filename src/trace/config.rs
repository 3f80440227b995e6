//! Where a run's trace goes, read from the standard `OTEL_*` variables (the OTLP exporter's and
//! the SDK's): the endpoint, headers, timeout, protocol, service name and resource attributes.
//! Pure: handed a way to read the environment; a bad value is an input error naming its
//! variable, before anything runs.

use std::time::Duration;

use crate::error::Usage;

pub const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
pub const TRACES_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
const HEADERS_VAR: &str = "OTEL_EXPORTER_OTLP_HEADERS";
const TRACES_HEADERS_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_HEADERS";
const TIMEOUT_VAR: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";
const TRACES_TIMEOUT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT";
const PROTOCOL_VAR: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
const TRACES_PROTOCOL_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
const SERVICE_NAME_VAR: &str = "OTEL_SERVICE_NAME";
const RESOURCE_VAR: &str = "OTEL_RESOURCE_ATTRIBUTES";
const DISABLED_VAR: &str = "OTEL_SDK_DISABLED";
const EXPORTER_VAR: &str = "OTEL_TRACES_EXPORTER";

/// Where `--otel` sends traces when no endpoint is set: a collector on this machine, at the
/// OTLP/HTTP port the specification names.
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318/v1/traces";
/// The specification's default export timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a run's trace goes and what it says of where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The traces URL, whole (`…/v1/traces`).
    pub endpoint: String,
    /// Sent with every request; values may be credentials, so they are never shown.
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    /// The resource's attributes, `service.name` first.
    pub resource: Vec<(String, String)>,
}

/// Whether the run was asked to export (`--otel`) whatever the environment says of an
/// endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// `--otel`: to the endpoint set, or to `DEFAULT_ENDPOINT`.
    Yes,
    /// Only when an endpoint is set.
    IfSet,
}

impl Config {
    /// The trace export `env` asks for: `None` when no endpoint is set and `asked` is not
    /// `Yes`, or when `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it off.
    pub fn from_env(
        env: &dyn Fn(&str) -> Option<String>,
        asked: Asked,
    ) -> Result<Option<Config>, Usage> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let endpoint = match (var(TRACES_ENDPOINT_VAR), var(ENDPOINT_VAR)) {
            (Some(url), _) => Some(url_of(TRACES_ENDPOINT_VAR, url.trim(), false)?),
            (None, Some(base)) => Some(url_of(ENDPOINT_VAR, base.trim(), true)?),
            (None, None) if asked == Asked::Yes => Some(DEFAULT_ENDPOINT.to_owned()),
            (None, None) => None,
        };
        let Some(endpoint) = endpoint else {
            return Ok(None);
        };
        if var(DISABLED_VAR).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            || var(EXPORTER_VAR).is_some_and(|v| v.trim().eq_ignore_ascii_case("none"))
        {
            return Ok(None);
        }
        let protocol = [TRACES_PROTOCOL_VAR, PROTOCOL_VAR]
            .into_iter()
            .find_map(|n| var(n).map(|v| (n, v)));
        if let Some((name, protocol)) = protocol
            && protocol.trim() != "http/protobuf"
        {
            return Err(Usage::new(format!(
                "{name}={}: swarm exports traces over OTLP/HTTP with protobuf only",
                protocol.trim()
            ))
            .hint(format!(
                "set {name}=http/protobuf (or unset it) and point the endpoint at the collector's OTLP/HTTP port (4318 by default)"
            )));
        }
        let headers = match [TRACES_HEADERS_VAR, HEADERS_VAR]
            .into_iter()
            .find_map(|n| var(n).map(|v| (n, v)))
        {
            Some((name, value)) => pairs(name, &value)?,
            None => Vec::new(),
        };
        let timeout = match [TRACES_TIMEOUT_VAR, TIMEOUT_VAR]
            .into_iter()
            .find_map(|n| var(n).map(|v| (n, v)))
        {
            Some((name, value)) => {
                let ms: u64 = value.trim().parse().map_err(|_| {
                    Usage::new(format!(
                        "{name}={}: not a number of milliseconds",
                        value.trim()
                    ))
                    .hint(format!("for example {name}=10000"))
                })?;
                Duration::from_millis(ms.max(1))
            }
            None => DEFAULT_TIMEOUT,
        };
        let mut resource = match var(RESOURCE_VAR) {
            Some(value) => pairs(RESOURCE_VAR, &value)?,
            None => Vec::new(),
        };
        let service = var(SERVICE_NAME_VAR)
            .map(|s| s.trim().to_owned())
            .or_else(|| {
                resource
                    .iter()
                    .find(|(k, _)| k == "service.name")
                    .map(|(_, v)| v.clone())
            })
            .unwrap_or_else(|| "swarm".to_owned());
        resource.retain(|(k, _)| k != "service.name");
        resource.insert(0, ("service.name".to_owned(), service));
        if !resource.iter().any(|(k, _)| k == "service.version") {
            resource.push((
                "service.version".to_owned(),
                env!("CARGO_PKG_VERSION").to_owned(),
            ));
        }
        Ok(Some(Config {
            endpoint,
            headers,
            timeout,
            resource,
        }))
    }
}

/// The traces URL of `value`, read from `name`: itself, or (`base`) with `v1/traces` after it,
/// as the specification says of the signal-less variable.
fn url_of(name: &str, value: &str, base: bool) -> Result<String, Usage> {
    let rest = value
        .strip_prefix("http://")
        .or_else(|| value.strip_prefix("https://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or_default());
    let bad = match host {
        None => Some("it does not start with http:// or https://"),
        Some(h) if h.is_empty() || h.starts_with(':') => Some("it names no host"),
        Some(h) if h.contains(char::is_whitespace) || h.contains('@') => {
            Some("its host is not one")
        }
        Some(_) if value.contains(char::is_whitespace) => Some("it holds a space"),
        Some(_) => None,
    };
    if let Some(why) = bad {
        return Err(
            Usage::new(format!("{name}={value}: not a URL: {why}")).hint(format!(
                "for example {name}=http://localhost:4318{}",
                if base { "" } else { "/v1/traces" }
            )),
        );
    }
    if base {
        Ok(format!("{}/v1/traces", value.trim_end_matches('/')))
    } else {
        Ok(value.to_owned())
    }
}

/// The `key=value,key=value` pairs of `value` (the W3C baggage form the specification takes
/// for headers and resource attributes), values percent-decoded. Values are never repeated in
/// an error: a header may be a credential.
fn pairs(name: &str, value: &str) -> Result<Vec<(String, String)>, Usage> {
    let mut out = Vec::new();
    for (i, item) in value.split(',').enumerate() {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let bad = |why: &str| {
            Usage::new(format!("{name}: entry {} {why}", i + 1))
                .hint(format!("{name} takes key=value pairs separated by commas, values percent-encoded: {name}=key1=value1,key2=value2"))
        };
        let Some((key, val)) = item.split_once('=') else {
            return Err(bad("has no `=`"));
        };
        let key = key.trim();
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_graphic() && b != b'"') {
            return Err(bad("has no key, or one that is not a token"));
        }
        let val = percent_encoding::percent_decode_str(val.trim())
            .decode_utf8()
            .map_err(|_| bad("has a value that is not UTF-8 once decoded"))?;
        if val.contains(['\r', '\n']) {
            return Err(bad("has a value with a line break"));
        }
        out.push((key.to_owned(), val.into_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)], asked: Asked) -> Result<Option<Config>, Usage> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Config::from_env(
            &|n| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()),
            asked,
        )
    }

    #[test]
    fn no_endpoint_exports_nothing_unless_asked() {
        assert_eq!(config(&[], Asked::IfSet).unwrap(), None);
        let asked = config(&[], Asked::Yes).unwrap().unwrap();
        assert_eq!(asked.endpoint, DEFAULT_ENDPOINT);
        assert_eq!(asked.timeout, Duration::from_secs(10));
        assert_eq!(asked.resource[0], ("service.name".into(), "swarm".into()));
    }

    #[test]
    fn the_signal_endpoint_is_taken_whole_and_the_base_gets_the_traces_path() {
        let base = config(&[(ENDPOINT_VAR, "http://c:4318/")], Asked::IfSet)
            .unwrap()
            .unwrap();
        assert_eq!(base.endpoint, "http://c:4318/v1/traces");
        let whole = config(
            &[
                (ENDPOINT_VAR, "http://c:4318"),
                (TRACES_ENDPOINT_VAR, "https://t/custom"),
            ],
            Asked::IfSet,
        )
        .unwrap()
        .unwrap();
        assert_eq!(whole.endpoint, "https://t/custom");
    }

    #[test]
    fn headers_timeout_service_and_resource_are_read() {
        let c = config(
            &[
                (ENDPOINT_VAR, "http://c:4318"),
                (HEADERS_VAR, "api-key=a%20b, x-team=core"),
                (TIMEOUT_VAR, "2500"),
                (
                    RESOURCE_VAR,
                    "service.name=ignored,deployment.environment=ci",
                ),
                (SERVICE_NAME_VAR, "swarm-ci"),
            ],
            Asked::IfSet,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            c.headers,
            vec![
                ("api-key".into(), "a b".into()),
                ("x-team".into(), "core".into())
            ]
        );
        assert_eq!(c.timeout, Duration::from_millis(2500));
        assert_eq!(
            c.resource[..2],
            [
                ("service.name".into(), "swarm-ci".into()),
                ("deployment.environment".into(), "ci".into())
            ]
        );
    }

    #[test]
    fn bad_values_are_refused_naming_their_variable_and_no_secret() {
        for (vars, named) in [
            (vec![(ENDPOINT_VAR, "localhost:4318")], ENDPOINT_VAR),
            (
                vec![(TRACES_ENDPOINT_VAR, "http:///v1/traces")],
                TRACES_ENDPOINT_VAR,
            ),
            (
                vec![(ENDPOINT_VAR, "http://c"), (HEADERS_VAR, "secret-value")],
                HEADERS_VAR,
            ),
            (
                vec![(ENDPOINT_VAR, "http://c"), (TIMEOUT_VAR, "soon")],
                TIMEOUT_VAR,
            ),
            (
                vec![(ENDPOINT_VAR, "http://c"), (PROTOCOL_VAR, "grpc")],
                PROTOCOL_VAR,
            ),
            (
                vec![(ENDPOINT_VAR, "http://c"), (RESOURCE_VAR, "=x")],
                RESOURCE_VAR,
            ),
        ] {
            let e = config(&vars, Asked::IfSet).unwrap_err();
            assert!(e.message.starts_with(named), "{}", e.message);
            assert!(!e.message.contains("secret-value"), "{}", e.message);
        }
    }

    #[test]
    fn the_sdk_switches_turn_export_off() {
        for off in [(DISABLED_VAR, "true"), (EXPORTER_VAR, "none")] {
            assert_eq!(
                config(&[(ENDPOINT_VAR, "http://c"), off], Asked::Yes).unwrap(),
                None
            );
        }
    }
}

//! Spans as OTLP/HTTP: an `ExportTraceServiceRequest` of the OpenTelemetry project's generated
//! types, encoded with prost, sent (POST) as `application/x-protobuf`. Errors are said in swarm's
//! words: a header may hold a credential, and no answer or error repeats one.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, any_value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Status, span, status};
use prost::Message as _;

use super::config::Config;
use super::spans::{Span, TraceId, Value};

/// The `GenAI` conventions' version the spans' names and attributes follow.
const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.37.0";

fn value(v: &Value) -> AnyValue {
    let value = match v {
        Value::Str(s) => any_value::Value::StringValue(s.clone()),
        Value::Int(n) => any_value::Value::IntValue(*n),
        Value::Float(f) => any_value::Value::DoubleValue(*f),
        Value::Bool(b) => any_value::Value::BoolValue(*b),
        Value::Strs(list) => any_value::Value::ArrayValue(ArrayValue {
            values: list
                .iter()
                .map(|s| AnyValue {
                    value: Some(any_value::Value::StringValue(s.clone())),
                })
                .collect(),
        }),
    };
    AnyValue { value: Some(value) }
}

fn key_value(key: &str, v: &Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(value(v)),
        ..KeyValue::default()
    }
}

fn nanos(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000)
}

/// `spans` of trace `trace` as one request's body.
pub fn encode(config: &Config, trace: &TraceId, spans: &[Span]) -> Vec<u8> {
    let spans = spans
        .iter()
        .map(|s| opentelemetry_proto::tonic::trace::v1::Span {
            trace_id: trace.to_vec(),
            span_id: s.id.to_vec(),
            parent_span_id: s.parent.map(|p| p.to_vec()).unwrap_or_default(),
            // Sampled: swarm samples nothing out.
            flags: 0x100 | 0x01,
            name: s.name.clone(),
            kind: span::SpanKind::Internal as i32,
            start_time_unix_nano: nanos(s.start_ms),
            end_time_unix_nano: nanos(s.end_ms),
            attributes: s.attributes.iter().map(|(k, v)| key_value(k, v)).collect(),
            events: s
                .marks
                .iter()
                .map(|m| span::Event {
                    time_unix_nano: nanos(m.at_ms),
                    name: m.name.to_owned(),
                    attributes: m.attributes.iter().map(|(k, v)| key_value(k, v)).collect(),
                    dropped_attributes_count: 0,
                })
                .collect(),
            status: Some(match &s.error {
                Some(why) => Status {
                    message: why.clone(),
                    code: status::StatusCode::Error as i32,
                },
                None => Status {
                    message: String::new(),
                    code: status::StatusCode::Unset as i32,
                },
            }),
            ..Default::default()
        })
        .collect();
    let request = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: config
                    .resource
                    .iter()
                    .map(|(k, v)| key_value(k, &Value::Str(v.clone())))
                    .collect(),
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "swarm".to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    ..InstrumentationScope::default()
                }),
                spans,
                schema_url: SCHEMA_URL.to_owned(),
            }],
            schema_url: String::new(),
        }],
    };
    request.encode_to_vec()
}

/// Posts encoded requests to the collector.
pub struct Client {
    agent: ureq::Agent,
    config: Config,
}

impl Client {
    pub fn new(config: Config) -> Client {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .user_agent(concat!("swarm/", env!("CARGO_PKG_VERSION")))
            .build();
        Client {
            agent: ureq::Agent::new_with_config(agent),
            config,
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Sends `body`; why the collector did not take it, if it did not.
    pub fn send(&self, body: &[u8]) -> Result<(), String> {
        let url = &self.config.endpoint;
        let mut request = self
            .agent
            .post(url)
            .header("content-type", "application/x-protobuf");
        for (k, v) in &self.config.headers {
            request = request.header(k.as_str(), v.as_str());
        }
        let response = request
            .send(body)
            .map_err(|e| format!("{url}: {}", failure(&e)))?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(());
        }
        Err(format!("{url} answered HTTP {status}"))
    }
}

/// What went wrong with a request, in swarm's words.
fn failure(e: &ureq::Error) -> &'static str {
    match e {
        ureq::Error::Timeout(_) => "no answer in time",
        ureq::Error::ConnectionFailed => "the connection was refused or failed",
        ureq::Error::HostNotFound => "the host was not found",
        ureq::Error::Io(_) => "the connection failed",
        ureq::Error::Tls(_) | ureq::Error::Rustls(_) => "TLS failed",
        _ => "the request failed",
    }
}

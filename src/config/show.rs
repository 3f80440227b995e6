//! Showing the effective configuration: `describe` for people, `to_json` for programs.

use serde_json::{Value, json};

use super::key::Key;
use super::{Config, ProfileSpec, Source};

fn source_text(key: Key, source: &Source) -> String {
    match source {
        Source::Flag => format!("--{}", key.name()),
        Source::Env(var) => var.clone(),
        Source::File(path) => path.display().to_string(),
        Source::Default => "default".to_owned(),
    }
}

/// Human-readable effective settings, one per line: `key = value    # from <source>`, then the
/// profiles with their files, then the environment variables that set options.
pub fn describe(config: &Config) -> String {
    let mut lines = Vec::new();
    for key in Key::ALL {
        let source = config.sources.get(key.name()).unwrap_or(&Source::Default);
        let (value, from) = match (source, key.follows()) {
            // Its default is another option's value, so show what that comes to.
            (Source::Default, Some(other)) => (
                match other.value(&config.options) {
                    Value::Null => other.default_value(),
                    value => value,
                },
                format!("default (the value of {})", other.name()),
            ),
            (Source::Default, None) => (key.default_value(), "default".to_owned()),
            _ => (key.value(&config.options), source_text(key, source)),
        };
        let value = match (source, value) {
            (Source::Default, Value::Null) => "unset".to_owned(),
            (_, value) => value.to_string(),
        };
        let left = format!("{} = {value}", key.name());
        let pad = 36usize.saturating_sub(left.chars().count()).max(4);
        lines.push(format!("{left}{:pad$}# from {from}", ""));
    }
    for (name, (spec, file)) in &config.profiles {
        lines.push(String::new());
        lines.push(format!("[agents.{name}]    # from {}", file.display()));
        for (key, value) in profile_fields(spec) {
            lines.push(format!("{key} = {value}"));
        }
    }
    for (name, pool) in &config.pools {
        lines.push(String::new());
        lines.push(format!("[pools.{name}]    # from {}", pool.file.display()));
        lines.push(format!("members = {}", json!(pool.members)));
    }
    lines.push(String::new());
    lines.push("# environment variables (above files, below flags):".to_owned());
    for key in Key::ALL {
        if let Some(var) = key.var() {
            lines.push(format!("#   {var:<26}{}", key.name()));
        }
    }
    lines.push(String::new());
    lines.join("\n")
}

/// A profile's fields that are set, as JSON (and so as TOML values).
fn profile_fields(spec: &ProfileSpec) -> Vec<(&'static str, Value)> {
    let list = |v: &Option<Vec<String>>| v.as_ref().map(|v| json!(v));
    let text = |v: &Option<String>| v.as_ref().map(|v| json!(v));
    [
        ("kind", text(&spec.kind)),
        ("command", text(&spec.command)),
        ("args", list(&spec.args)),
        ("reader-args", list(&spec.reader_args)),
        ("writer-args", list(&spec.writer_args)),
        ("parser", text(&spec.parser)),
        ("pass-env", list(&spec.pass_env)),
        ("drop-env", list(&spec.drop_env)),
        ("set-env", spec.set_env.as_ref().map(|v| json!(v))),
        ("max-concurrent", spec.max_concurrent.map(|v| json!(v))),
        ("writes", list(&spec.writes)),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some((k, v?)))
    .collect()
}

/// The effective settings as JSON: `options` (each with `value`, null when unset; `default`, null
/// when there is none or when it is another option's value, as max-writers' is jobs'; and
/// `source`), `profiles` (each with its `file`) and `environment` (variable to option key).
pub fn to_json(config: &Config) -> Value {
    let options: serde_json::Map<String, Value> = Key::ALL
        .into_iter()
        .map(|key| {
            let source = match config.sources.get(key.name()).unwrap_or(&Source::Default) {
                Source::Flag => json!({ "kind": "flag", "flag": format!("--{}", key.name()) }),
                Source::Env(var) => json!({ "kind": "env", "variable": var }),
                Source::File(path) => json!({ "kind": "file", "path": path }),
                Source::Default => json!({ "kind": "default" }),
            };
            let entry = json!({
                "value": key.value(&config.options),
                "default": key.default_value(),
                "source": source,
            });
            (key.name().to_owned(), entry)
        })
        .collect();
    let profiles: serde_json::Map<String, Value> = config
        .profiles
        .iter()
        .map(|(name, (spec, file))| {
            let mut entry: serde_json::Map<String, Value> = profile_fields(spec)
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect();
            entry.insert("file".to_owned(), json!(file));
            (name.clone(), Value::Object(entry))
        })
        .collect();
    let environment: serde_json::Map<String, Value> = Key::ALL
        .into_iter()
        .filter_map(|key| Some((key.var()?.to_owned(), json!(key.name()))))
        .collect();
    let pools: serde_json::Map<String, Value> = config
        .pools
        .iter()
        .map(|(name, p)| {
            (
                name.clone(),
                json!({ "members": p.members, "file": p.file }),
            )
        })
        .collect();
    json!({ "options": options, "profiles": profiles, "pools": pools, "environment": environment })
}

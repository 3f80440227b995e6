//! The built-in agent's tools: listing, reading and searching the task's directory, and for
//! writers writing and editing files, and running the programs the user named. Every path is
//! confined to the task's directory: no absolute paths, no `..` escape, nothing under `.git`, no
//! symbolic link out. Problems come back to the model as text starting with `error: `, never as
//! errors of swarm's.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

mod problem;
mod program;
mod spawn;

use problem::{Problem, failed, io_failed, not_found, refused, unread};
use program::Programs;
pub use program::Ran;
use spawn::Spawner;

/// Results longer than this are cut.
const OUTPUT_CAP: usize = 64 * 1024;
const LIST_CAP: usize = 2_000;
const MATCH_CAP: usize = 200;
/// A NUL byte this early means the file is binary.
const BINARY_PROBE: usize = 8 * 1024;
/// Files larger than this are not read (the model is shown at most `OUTPUT_CAP` of one, a
/// range of lines at a time).
const READ_CAP: u64 = 64 << 20;

/// What a task may do with its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// Whether the attempt is stopping (a stop of the run, its timeout): a command it runs is
/// killed then.
type Stop = Box<dyn Fn() -> bool + Send>;

/// The tools of one task, bound to its directory.
pub struct Tools {
    /// Canonical, so that canonical targets can be compared with it.
    root: PathBuf,
    access: Access,
    programs: Programs,
    stop: Stop,
    /// Where the tasks it adds go, when its attempt may spawn.
    spawner: Option<Spawner>,
}

/// The outcome of one tool call, as text for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub text: String,
    /// True when the call changed a file (or, for a writer, ran a command that may have).
    pub wrote: bool,
    /// True when the call was refused by confinement: a path out of bounds, a write by a reader
    /// or a program the user did not allow (for logs).
    pub refused: bool,
}

/// The arguments of any tool; each tool checks for the ones it needs.
#[derive(Deserialize)]
struct Args {
    path: Option<String>,
    start_line: Option<usize>,
    end_line: Option<usize>,
    pattern: Option<String>,
    content: Option<String>,
    old: Option<String>,
    new: Option<String>,
    program: Option<String>,
    #[serde(default, rename = "args")]
    argv: Vec<String>,
}

fn needed<'a>(value: Option<&'a String>, key: &str) -> Result<&'a str, Problem> {
    value
        .map(String::as_str)
        .ok_or_else(|| failed(format!("missing argument `{key}`")))
}

impl Tools {
    pub fn new(
        root: &Path,
        access: Access,
        allowed_programs: Vec<String>,
        command_timeout: Duration,
    ) -> io::Result<Self> {
        let root = root.canonicalize()?;
        Ok(Self {
            root,
            access,
            programs: Programs {
                allowed: allowed_programs,
                timeout: command_timeout,
                confine: None,
            },
            stop: Box::new(|| false),
            spawner: None,
        })
    }

    /// The tools `add_tasks` and `capacity`, when the attempt's environment names its spawn
    /// file and capacity (`SWARM_SPAWN`, `SWARM_CAPACITY`).
    #[must_use]
    pub fn spawning(self, env: &[(String, String)]) -> Self {
        Self {
            spawner: Spawner::from_env(env),
            ..self
        }
    }

    /// The programs the tools run are confined as `confine` says (the attempt's confinement).
    #[must_use]
    pub fn confined(mut self, confine: Option<crate::agent::confine::Confinement>) -> Self {
        self.programs.confine = confine;
        self
    }

    /// Commands the tools run are killed once `stop` says so.
    #[must_use]
    pub fn stopped_by(self, stop: impl Fn() -> bool + Send + 'static) -> Self {
        Self {
            stop: Box::new(stop),
            ..self
        }
    }

    /// The `tools` array of an `OpenAI` request for this task.
    pub fn definitions(&self) -> Value {
        let mut tools = vec![
            function(
                "list_files",
                "List the files under a directory, recursively, one path per line (ignored files \
                 and .git left out). All paths are relative to the task's directory.",
                &[("path", "string", "directory to list; default \".\"", false)],
            ),
            function(
                "read_file",
                "Read a text file; each line comes back as \"N: text\", N the line number.",
                &[
                    ("path", "string", "file to read", true),
                    (
                        "start_line",
                        "integer",
                        "first line (1-based); default 1",
                        false,
                    ),
                    (
                        "end_line",
                        "integer",
                        "last line (inclusive); default the last",
                        false,
                    ),
                ],
            ),
            function(
                "search",
                "Search the lines of the files with a regular expression (Rust regex syntax); \
                 each match comes back as \"path:line: text\", at most 200.",
                &[
                    ("pattern", "string", "regular expression", true),
                    ("path", "string", "file or directory; default \".\"", false),
                ],
            ),
        ];
        if self.access == Access::Write {
            tools.push(function(
                "write_file",
                "Create or overwrite a file (missing directories are made).",
                &[
                    ("path", "string", "file", true),
                    ("content", "string", "new content", true),
                ],
            ));
            tools.push(function(
                "edit_file",
                "Replace `old` by `new` in a file. `old` must occur exactly once: include enough \
                 surrounding text to make it unique.",
                &[
                    ("path", "string", "file to edit", true),
                    ("old", "string", "exact text to replace", true),
                    ("new", "string", "replacement text", true),
                ],
            ));
        }
        if !self.programs.allowed.is_empty() {
            let description = format!(
                "Run a program in the task's directory (no shell, empty stdin); answers its exit \
                 status, stdout and stderr. Allowed programs: {}. Killed after {} s.",
                self.programs.allowed.join(", "),
                self.programs.timeout.as_secs()
            );
            let params = [
                ("program", "string", "an allowed program's name", true),
                ("args", "array", "arguments, one per element", true),
            ];
            tools.push(function("run_command", &description, &params));
        }
        if self.spawner.is_some() {
            tools.extend(Spawner::definitions());
        }
        Value::Array(tools)
    }

    /// Executes one tool call, `name` with its JSON `arguments` as the model sent them.
    pub fn call(&self, name: &str, arguments: &str) -> ToolResult {
        let writes = matches!(name, "write_file" | "edit_file");
        let runs = name == "run_command" && !self.programs.allowed.is_empty();
        let answer = match name {
            _ if writes && self.access == Access::Read => {
                Err(Problem::Refused("this task is read-only".into()))
            }
            "list_files" | "read_file" | "search" | "write_file" | "edit_file" => {
                self.dispatch(name, arguments)
            }
            "add_tasks" | "capacity" if let Some(s) = &self.spawner => match name {
                "capacity" => Ok(s.capacity()),
                _ => s.add(arguments),
            },
            _ if runs => parse(arguments).and_then(|a| {
                let program = needed(a.program.as_ref(), "program")?;
                self.run(program, &a.argv)
            }),
            _ => Err(failed(format!("unknown tool {name:?}"))),
        };
        // A command may have changed files even when it failed or timed out.
        let wrote = answer.is_ok() && (writes || (runs && self.access == Access::Write));
        let hint = if name == "read_file" {
            "; use start_line and end_line to read the rest"
        } else {
            ""
        };
        let (text, refused) = match answer {
            Ok(text) => (cap(text, hint), false),
            Err(Problem::Refused(why)) => (cap(format!("error: {why}"), ""), true),
            Err(Problem::Failed(why)) => (cap(format!("error: {why}"), ""), false),
        };
        ToolResult {
            text,
            wrote,
            refused,
        }
    }

    fn dispatch(&self, name: &str, arguments: &str) -> Result<String, Problem> {
        let a = parse(arguments)?;
        let path = || needed(a.path.as_ref(), "path");
        let dir = a.path.as_deref().unwrap_or(".");
        match name {
            "list_files" => self.list_files(dir),
            "read_file" => self.read_file(path()?, a.start_line, a.end_line),
            "search" => self.search(needed(a.pattern.as_ref(), "pattern")?, dir),
            "write_file" => self.write_file(path()?, needed(a.content.as_ref(), "content")?),
            _ => self.edit_file(
                path()?,
                needed(a.old.as_ref(), "old")?,
                needed(a.new.as_ref(), "new")?,
            ),
        }
    }

    /// Resolves `rel` through its deepest existing part, which must lead inside the root and
    /// not into `.git`: that part, canonical, and the names after it that do not exist (yet).
    fn resolve(&self, raw: &str, rel: &Path) -> Result<(PathBuf, Vec<OsString>), Problem> {
        let mut existing = rel.to_path_buf();
        let mut missing = Vec::new();
        let canon = loop {
            match self.root.join(&existing).canonicalize() {
                Ok(canon) => break canon,
                Err(e) => match existing.file_name() {
                    Some(name) => {
                        missing.push(name.to_owned());
                        existing.pop();
                    }
                    None => return Err(io_failed(raw, &e)),
                },
            }
        };
        match canon.strip_prefix(&self.root) {
            Err(_) => Err(refused(
                raw,
                "leads outside the task's directory (symbolic link)",
            )),
            Ok(inside) if inside.components().any(|c| is_git(c.as_os_str())) => {
                Err(refused(raw, "leads into .git, which tasks may not touch"))
            }
            Ok(_) => Ok((canon, missing)),
        }
    }

    /// An existing path to read, canonical and inside the root.
    fn readable(&self, raw: &str) -> Result<PathBuf, Problem> {
        match self.resolve(raw, &lexical(raw)?)? {
            (canon, missing) if missing.is_empty() => Ok(canon),
            _ => Err(not_found(raw)),
        }
    }

    /// A file to write, by its canonical parent (which may not exist yet): never a symbolic link,
    /// never through a symbolic link out of the root. Creates nothing.
    fn writable(&self, raw: &str) -> Result<PathBuf, Problem> {
        let rel = lexical(raw)?;
        if rel.file_name().is_none() {
            return Err(failed(format!("{raw} is the task's directory, not a file")));
        }
        let (mut target, missing) = self.resolve(raw, &rel)?;
        if fs::symlink_metadata(self.root.join(&rel)).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(refused(
                raw,
                "is a symbolic link; write to its target instead",
            ));
        }
        for name in missing.iter().rev() {
            target.push(name);
            // Still there although it did not resolve: a symbolic link that leads nowhere.
            if fs::symlink_metadata(&target).is_ok() {
                return Err(refused(raw, "passes through a broken symbolic link"));
            }
        }
        match fs::metadata(&target) {
            Ok(m) if m.is_dir() => Err(failed(format!("{raw} is a directory"))),
            Ok(m) if !m.is_file() => Err(failed(format!("{raw} is not a regular file"))),
            _ => Ok(target),
        }
    }

    /// The listed files (see `git::list_files`) at or under `raw`.
    fn files_under(&self, raw: &str) -> Result<Vec<String>, Problem> {
        let canon = self.readable(raw)?;
        let under = canon.strip_prefix(&self.root).unwrap_or(&canon);
        let under = under.to_string_lossy();
        let all = crate::git::list_files(&self.root)
            .map_err(|e| failed(format!("listing files: {e:#}")))?;
        Ok(all
            .into_iter()
            .filter(|f| {
                under.is_empty()
                    || *f == *under
                    || f.strip_prefix(&*under).is_some_and(|r| r.starts_with('/'))
            })
            .filter(|f| !f.split('/').any(|c| is_git(OsStr::new(c))))
            .collect())
    }

    fn list_files(&self, raw: &str) -> Result<String, Problem> {
        let files = self.files_under(raw)?;
        if files.is_empty() {
            return Ok(format!("no files under {raw}"));
        }
        let mut text = files
            .iter()
            .take(LIST_CAP)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n");
        if files.len() > LIST_CAP {
            let _ = write!(
                text,
                "\n[{} more files not shown; list a subdirectory]",
                files.len() - LIST_CAP
            );
        }
        Ok(text)
    }

    /// The text of a regular file inside the root; binary files are refused.
    fn text_of(&self, raw: &str) -> Result<String, Problem> {
        let file = self.readable(raw)?;
        let meta = fs::metadata(&file).map_err(|e| io_failed(raw, &e))?;
        if meta.is_dir() {
            return Err(failed(format!("{raw} is a directory; use list_files")));
        }
        if !meta.is_file() {
            return Err(failed(format!("{raw} is not a regular file")));
        }
        let bytes = crate::planted::read(&file, READ_CAP).map_err(|e| unread(raw, &e))?;
        if bytes.iter().take(BINARY_PROBE).any(|&b| b == 0) {
            return Err(failed(format!("{raw} is a binary file")));
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn read_file(
        &self,
        raw: &str,
        start: Option<usize>,
        end: Option<usize>,
    ) -> Result<String, Problem> {
        let text = self.text_of(raw)?;
        let lines: Vec<&str> = text.lines().collect();
        if lines.is_empty() {
            return Ok(format!("{raw} is empty"));
        }
        let start = start.unwrap_or(1).max(1);
        let end = end.unwrap_or(lines.len()).min(lines.len());
        if start > lines.len() {
            return Err(failed(format!("{raw} has only {} lines", lines.len())));
        }
        if end < start {
            return Err(failed(format!(
                "end_line {end} is before start_line {start}"
            )));
        }
        let mut out = String::new();
        for (n, line) in lines[start - 1..end].iter().enumerate() {
            let _ = writeln!(out, "{}: {line}", start + n);
        }
        Ok(out)
    }

    fn search(&self, pattern: &str, raw: &str) -> Result<String, Problem> {
        let re = regex::Regex::new(pattern).map_err(|e| failed(format!("invalid regex: {e}")))?;
        let mut out = String::new();
        let mut found = 0;
        for file in self.files_under(raw)? {
            // Skipped quietly: binary files, and listed files that are refused (a symbolic link
            // out of the root is listed like any file).
            let Ok(text) = self.text_of(&file) else {
                continue;
            };
            for (n, line) in text.lines().enumerate().filter(|(_, l)| re.is_match(l)) {
                if found == MATCH_CAP {
                    out.push_str("[stopped at 200 matches; narrow the pattern or the path]");
                    return Ok(out);
                }
                found += 1;
                let _ = writeln!(out, "{file}:{}: {line}", n + 1);
            }
        }
        if found == 0 {
            return Ok(format!("no matches for {pattern:?} under {raw}"));
        }
        Ok(out)
    }

    fn write_file(&self, raw: &str, content: &str) -> Result<String, Problem> {
        let target = self.writable(raw)?;
        if let Some(dir) = target.parent() {
            fs::create_dir_all(dir).map_err(|e| io_failed(raw, &e))?;
        }
        fs::write(&target, content).map_err(|e| io_failed(raw, &e))?;
        Ok(format!("wrote {raw} ({} bytes)", content.len()))
    }

    fn edit_file(&self, raw: &str, old: &str, new: &str) -> Result<String, Problem> {
        let target = self.writable(raw)?;
        if old.is_empty() {
            return Err(failed("`old` is empty; give the exact text to replace"));
        }
        let bytes = crate::planted::read(&target, READ_CAP).map_err(|e| unread(raw, &e))?;
        let text =
            String::from_utf8(bytes).map_err(|_| failed(format!("{raw} is not UTF-8 text")))?;
        match text.matches(old).count() {
            1 => {
                fs::write(&target, text.replacen(old, new, 1)).map_err(|e| io_failed(raw, &e))?;
                Ok(format!("edited {raw}"))
            }
            0 => Err(failed(format!(
                "`old` was not found in {raw}; read the file and copy the text exactly"
            ))),
            n => Err(failed(format!(
                "`old` occurs {n} times in {raw}; include more surrounding text so it occurs once"
            ))),
        }
    }

    fn run(&self, program: &str, args: &[String]) -> Result<String, Problem> {
        let ran = self
            .programs
            .execute(&self.root, &self.stop, program, args)?;
        let mut text = match ran.status {
            Ok(status) => format!("{status}\n"),
            Err(why) => format!("error: {why}\n"),
        };
        let _ = write!(
            text,
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            ran.stdout, ran.stderr
        );
        Ok(text)
    }
}

/// The same confinement, for a client of the Agent Client Protocol: the agent names absolute
/// paths, which must lie in the task's directory.
impl Tools {
    /// The task's directory, canonical.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` relative to the root, when it is absolute and inside it (lexically: the
    /// confinement of the relative path decides the rest).
    fn relative(&self, path: &str, given_root: &Path) -> Result<String, String> {
        let p = Path::new(path);
        if !p.is_absolute() {
            return Ok(path.to_owned());
        }
        p.strip_prefix(&self.root)
            .or_else(|_| p.strip_prefix(given_root))
            .ok()
            .and_then(|r| r.to_str())
            .map(|r| {
                if r.is_empty() {
                    ".".to_owned()
                } else {
                    r.to_owned()
                }
            })
            .ok_or_else(|| format!("refused: {path} is outside the task's directory"))
    }

    /// The text of a file (`fs/read_text_file`).
    pub fn read_text(&self, path: &str, given_root: &Path) -> Result<String, String> {
        let rel = self.relative(path, given_root)?;
        self.text_of(&rel).map_err(Problem::text)
    }

    /// Writes a file (`fs/write_text_file`); refused for a reader.
    pub fn write_text(&self, path: &str, given_root: &Path, content: &str) -> Result<(), String> {
        if self.access == Access::Read {
            return Err("refused: this task is read-only".to_owned());
        }
        let rel = self.relative(path, given_root)?;
        self.write_file(&rel, content)
            .map(|_| ())
            .map_err(Problem::text)
    }

    /// Whether `path` (absolute or relative) may be written by this task.
    pub fn may_write(&self, path: &str, given_root: &Path) -> bool {
        self.access == Access::Write
            && self
                .relative(path, given_root)
                .is_ok_and(|rel| self.writable(&rel).is_ok())
    }

    /// Runs `program` if the user allowed it (`terminal/create`).
    pub fn run_allowed(&self, program: &str, args: &[String]) -> Result<Ran, String> {
        self.programs
            .execute(&self.root, &self.stop, program, args)
            .map_err(Problem::text)
    }
}

fn parse(arguments: &str) -> Result<Args, Problem> {
    let arguments = Some(arguments)
        .filter(|a| !a.trim().is_empty())
        .unwrap_or("{}");
    serde_json::from_str(arguments).map_err(|e| failed(format!("bad arguments: {e}")))
}

/// A tool definition; each parameter is (name, JSON type, description, required).
fn function(name: &str, description: &str, params: &[(&str, &str, &str, bool)]) -> Value {
    let mut properties = serde_json::Map::new();
    for &(key, kind, what, _) in params {
        let mut schema = json!({"type": kind, "description": what});
        if kind == "array" {
            schema["items"] = json!({"type": "string"});
        }
        properties.insert(key.to_owned(), schema);
    }
    let required: Vec<&str> = params.iter().filter(|p| p.3).map(|p| p.0).collect();
    json!({"type": "function", "function": {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required},
    }})
}

/// `.git` in any case: on a case-insensitive file system `.GIT` is the same directory.
fn is_git(name: &OsStr) -> bool {
    name.eq_ignore_ascii_case(".git")
}

/// The path the model named, normalised without touching the disk: relative, not escaping the
/// root with `..`, with no `.git` component. Empty for the root itself.
fn lexical(raw: &str) -> Result<PathBuf, Problem> {
    let mut out = PathBuf::new();
    for part in Path::new(raw).components() {
        match part {
            Component::RootDir | Component::Prefix(_) => {
                return Err(refused(
                    raw,
                    "is an absolute path; paths are relative to the task's directory",
                ));
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return Err(refused(raw, "is outside the task's directory"));
                }
            }
            Component::Normal(name) if is_git(name) => {
                return Err(refused(raw, "is inside .git, which tasks may not touch"));
            }
            Component::Normal(name) => out.push(name),
        }
    }
    Ok(out)
}

/// Cuts `text` to `OUTPUT_CAP` bytes, saying so.
fn cap(mut text: String, hint: &str) -> String {
    if text.len() <= OUTPUT_CAP {
        return text;
    }
    let mut cut = OUTPUT_CAP - 200;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let more = text.len() - cut;
    text.truncate(cut);
    let _ = write!(text, "\n[cut at 64 KiB: {more} more bytes not shown{hint}]");
    text
}

#[cfg(test)]
mod tests;

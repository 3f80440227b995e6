//! Faults outside a task: what cut an attempt short that no retry of it would cure (a refused
//! key, a full disk, too few file descriptors, an endpoint that does not answer), and how
//! swarm recognises them in errors and in a failed attempt's surroundings.

use std::path::Path;

/// Something outside the task cut an attempt short, and no retry of it would do better: the run
/// stops, resumably, and the attempt does not count against the task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    pub kind: FaultKind,
    pub why: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultKind {
    /// The model endpoint refused swarm's key (HTTP 401 or 403): the user fixes the key.
    Credentials,
    /// The machine or the user's checkout: a full disk, too few file descriptors, the checkout
    /// changing under an attempt. `swarm resume` once it is settled.
    Environment,
    /// The model endpoint does not answer: attempts wait while it is checked, and the run
    /// stops as for `Environment` if it stays away.
    Unreachable,
    /// The gate fails on the run's base, before any change: the user fixes the gate or the
    /// base.
    Gate,
}

impl FaultKind {
    /// Its name in the event log.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FaultKind::Credentials => "credentials",
            FaultKind::Environment => "environment",
            FaultKind::Unreachable => "unreachable",
            FaultKind::Gate => "gate",
        }
    }

    /// The kind the event log names `name`, read back.
    pub(crate) fn named(name: &str) -> Option<Self> {
        [
            FaultKind::Credentials,
            FaultKind::Environment,
            FaultKind::Unreachable,
            FaultKind::Gate,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
    }

    /// The exit code of a run it stops: a key to fix is a usage error, else resumable.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            FaultKind::Credentials | FaultKind::Gate => crate::error::exit::USAGE,
            FaultKind::Environment | FaultKind::Unreachable => crate::error::exit::RESUMABLE,
        }
    }
}

impl Fault {
    /// The fault of the machine behind an error, if that is what it is: a full disk or quota,
    /// too few file descriptors. git reports these as text only, so its words count too.
    pub(crate) fn of_error(e: &anyhow::Error) -> Option<Self> {
        use nix::errno::Errno;
        // A write that named the path it found no room for says it best.
        if let Some(full) = crate::disk::full(e) {
            return Some(Self {
                kind: FaultKind::Environment,
                why: full.to_string(),
            });
        }
        let os = e.chain().find_map(|cause| {
            let io = cause.downcast_ref::<std::io::Error>()?;
            let errno = Errno::from_raw(io.raw_os_error()?);
            matches!(
                errno,
                Errno::ENOSPC | Errno::EDQUOT | Errno::EMFILE | Errno::ENFILE
            )
            .then(|| errno.desc())
        });
        let text = format!("{e:#}");
        let said = [
            "No space left on device",
            "Too many open files",
            "Disk quota exceeded",
        ]
        .into_iter()
        .find(|words| text.contains(words));
        let Some(what) = os.or(said) else {
            return Self::of_scarce_descriptors(&text);
        };
        let why = if text.contains(what) {
            text
        } else {
            format!("{what}: {text}")
        };
        Some(Self {
            kind: FaultKind::Environment,
            why,
        })
    }

    /// The fault behind a failed model request or its planning, if it is one: a refused key,
    /// an endpoint that does not answer, the machine's.
    pub(crate) fn of_model_error(e: &anyhow::Error) -> Option<Self> {
        e.chain()
            .find_map(|c| c.downcast_ref::<crate::llm::LlmError>())
            .and_then(Self::of_llm_error)
            .or_else(|| Self::of_error(e))
    }

    /// The fault behind a model request's error, if it is one: a refused key, an endpoint
    /// that does not answer.
    pub(crate) fn of_llm_error(e: &crate::llm::LlmError) -> Option<Self> {
        use crate::llm::LlmError;
        match e {
            LlmError::Rejected {
                status: status @ (401 | 403),
                message,
            } => Some(Self {
                kind: FaultKind::Credentials,
                why: format!(
                    "the model endpoint refused swarm's key (HTTP {status} from {message}); check SWARM_API_KEY"
                ),
            }),
            LlmError::Unreachable { message } => Some(Self {
                kind: FaultKind::Unreachable,
                why: format!("the model endpoint does not answer: cannot reach {message}"),
            }),
            _ => None,
        }
    }

    /// libgit2 reports some reads cut short by the file descriptor limit as other errors (a
    /// reference "cannot be peeled"): an error met while this process is close to its limit
    /// is taken to come of it.
    fn of_scarce_descriptors(text: &str) -> Option<Self> {
        /// Fewer free than this, and git's next operation may well not find one.
        const HEADROOM: u64 = 16;
        let (limit, _) =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).ok()?;
        let open = match std::fs::read_dir("/proc/self/fd") {
            Ok(dir) => u64::try_from(dir.count()).unwrap_or(u64::MAX),
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::EMFILE as i32) => limit,
            Err(_) => return None,
        };
        (open.saturating_add(HEADROOM) > limit).then(|| Self {
            kind: FaultKind::Environment,
            why: format!(
                "too few file descriptors ({open} of the limit of {limit} open; raise it with `ulimit -n`): {text}"
            ),
        })
    }

    /// A full file system under any of `dirs`: an attempt that failed while one was full is
    /// taken to have failed of it (an agent's own writes fail there with ENOSPC, which swarm
    /// sees only as the agent's exit code). Full means less free than 1 MiB or 1% of its size,
    /// whichever is smaller, or no free inode.
    pub(crate) fn of_full_disk(dirs: &[&Path], failure: &str) -> Option<Self> {
        dirs.iter().find_map(|dir| {
            let fs = nix::sys::statvfs::statvfs(*dir).ok()?;
            let block = fs.fragment_size();
            let free = fs.blocks_available().saturating_mul(block);
            let size = fs.blocks().saturating_mul(block);
            let no_inodes = fs.files() > 0 && fs.files_available() == 0;
            (free < (1 << 20).min(size / 100) || no_inodes).then(|| Self {
                kind: FaultKind::Environment,
                why: format!(
                    "the disk holding {}{} is full ({} free); the attempt failed with: {failure}",
                    dir.display(),
                    crate::disk::describe(dir).map_or_else(String::new, |d| format!(" ({d})")),
                    if no_inodes {
                        "no inode".to_owned()
                    } else {
                        format!("{} KiB", free / 1024)
                    }
                ),
            })
        })
    }
}

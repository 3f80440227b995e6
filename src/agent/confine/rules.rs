//! The Landlock rulesets: the run's read rules (what `walk` grants, with the run's denials),
//! made once, and per attempt a read layer with its own share of the denied places (its
//! checkout, `TMPDIR`, deps) and a write layer. A process confined by both may do only what
//! both allow.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex, PoisonError, mpsc};

use anyhow::Context as _;
use landlock::{
    ABI, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible as _, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr as _, RulesetCreated, RulesetCreatedAttr as _,
};

use super::walk::{Reach, reads};
use super::{Confinement, DEVICES, Own, Places, SECRET_STORES, Setting, home, real};

/// A path granted, open, with what is granted beneath it.
#[derive(Debug)]
struct Rule {
    fd: PathFd,
    access: BitFlags<AccessFs>,
}

/// The most layers of each kind, and threads that start confined processes, kept for reuse
/// (each for a distinct set of files: checkout, `TMPDIR`, deps, spawn file).
const KEPT_LAYERS: usize = 256;

#[derive(Debug)]
pub(super) struct Policy {
    abi: ABI,
    /// What every attempt may read, made once.
    reads: Vec<Rule>,
    /// What every attempt may write: the devices and `write-allow`.
    writes: Vec<Rule>,
    denied: Arc<[PathBuf]>,
    /// The write rules' paths, for telling refusals.
    writable: Vec<PathBuf>,
    connect: Option<Vec<u16>>,
    /// Read layers made, by the files their attempt adds.
    layers: Mutex<HashMap<Vec<Identity>, Arc<OwnedFd>>>,
    /// Write layers made, by the files and ports their attempt adds.
    write_layers: Mutex<HashMap<WriteKey, Arc<OwnedFd>>>,
    /// The threads that start confined processes, by the layers they are confined by.
    starters: Mutex<HashMap<(Vec<Identity>, WriteKey), Starter>>,
    /// Directories resolved (`real`), for the attempts' paths: most share a few parents (the
    /// run's checkouts, its `TMPDIR`s), and resolving a deep path anew costs a system call for
    /// each of its parts.
    parents: Mutex<HashMap<PathBuf, PathBuf>>,
}

/// What a write layer is made of: the files an attempt adds and the ports it may connect to.
type WriteKey = (Vec<Identity>, Vec<u16>);

/// A thread confined by one read and one write layer, for good, that starts each process it is
/// handed: Landlock confines a thread and what it starts, and confining one costs the kernel a
/// copy of every rule; a thread kept for the attempts that share its layers pays that once,
/// and each process is still spawned as any other (a `vfork`, not a `fork` of swarm's memory).
#[derive(Clone, Debug)]
pub(super) struct Starter(mpsc::Sender<(Command, mpsc::SyncSender<std::io::Result<Child>>)>);

impl Starter {
    fn new(layers: Vec<Arc<OwnedFd>>) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel::<(Command, mpsc::SyncSender<std::io::Result<Child>>)>();
        std::thread::Builder::new()
            .name("swarm-confined".to_owned())
            .stack_size(256 << 10)
            .spawn(move || {
                let confined = super::sys::restrict_this_thread(&layers);
                for (mut cmd, reply) in rx {
                    let started = match &confined {
                        Ok(()) => cmd.spawn(),
                        Err(e) => Err(std::io::Error::new(
                            e.kind(),
                            format!("could not confine the process: {e}"),
                        )),
                    };
                    // The command's ends of its pipes go with it: only the process holds them.
                    drop(cmd);
                    let _ = reply.send(started);
                }
            })?;
        Ok(Self(tx))
    }

    /// Starts `cmd` confined.
    pub(super) fn start(&self, cmd: Command) -> std::io::Result<Child> {
        let (reply, started) = mpsc::sync_channel(1);
        self.0.send((cmd, reply)).map_err(|_| {
            std::io::Error::other("the thread that starts confined processes ended")
        })?;
        started
            .recv()
            .map_err(|_| std::io::Error::other("the thread that starts confined processes ended"))?
    }
}

/// A file as a rule names it: a rule holds the file, not its path, so a layer made for a path
/// fits a later attempt only while the same file is there (a directory made anew is another).
type Identity = (PathBuf, u64, u64);

/// `paths` with the device and inode of what each is now (zeros when nothing is there).
fn identities(paths: &[PathBuf]) -> Vec<Identity> {
    use std::os::unix::fs::MetadataExt as _;
    paths
        .iter()
        .map(|p| {
            let (dev, ino) = std::fs::metadata(p).map_or((0, 0), |m| (m.dev(), m.ino()));
            (p.clone(), dev, ino)
        })
        .collect()
}

impl Policy {
    pub(super) fn new(setting: &Setting, abi: i32, places: &Places) -> Self {
        let abi = ABI::from(abi);
        let read = AccessFs::from_read(abi);
        let home = home();
        let mut denied: Vec<PathBuf> = SECRET_STORES
            .iter()
            .filter_map(|s| home.as_ref().map(|h| h.join(s)))
            .chain([places.git_dir.clone(), places.checkouts.clone()])
            .chain(setting.read_deny.iter().cloned())
            .map(|p| real(&p))
            .collect();
        denied.sort();
        denied.dedup();
        let mut rules = Vec::new();
        for (path, reach) in reads(&denied) {
            let access = match reach {
                Reach::List => BitFlags::from(AccessFs::ReadDir),
                Reach::Read => read,
            };
            // An entry gone since it was listed, or one swarm may not open, is not granted.
            if let Some(rule) = open(&path, access, abi) {
                rules.push(rule);
            }
        }
        // What the task's checkout borrows, and what the user allows again.
        let borrowed = places.git_dir.join("objects");
        for path in std::iter::once(&borrowed).chain(&setting.read_allow) {
            if let Some(rule) = open(path, read, abi) {
                rules.push(rule);
            }
        }
        let write = writing(abi);
        let mut writes = Vec::new();
        let mut writable = Vec::new();
        for path in DEVICES
            .iter()
            .map(PathBuf::from)
            .chain(setting.write_allow.iter().cloned())
        {
            if let Some(rule) = open(&path, write, abi) {
                writes.push(rule);
                writable.push(real(&path));
            }
        }
        Self {
            abi,
            reads: rules,
            writes,
            denied: denied.into(),
            writable,
            connect: setting.connect.clone(),
            layers: Mutex::new(HashMap::new()),
            write_layers: Mutex::new(HashMap::new()),
            starters: Mutex::new(HashMap::new()),
            parents: Mutex::new(HashMap::new()),
        }
    }

    /// `path` resolved as `real` does, its parent directory's resolution kept: a path whose
    /// last part is a link (or `..`, or missing) is resolved whole, each time.
    fn real(&self, path: &Path) -> PathBuf {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return real(path);
        };
        let linked = std::fs::symlink_metadata(path).map_or(true, |m| m.file_type().is_symlink());
        if linked || !path.is_absolute() {
            return real(path);
        }
        let mut parents = self.parents.lock().unwrap_or_else(PoisonError::into_inner);
        if parents.len() >= KEPT_LAYERS {
            parents.clear();
        }
        parents
            .entry(parent.to_owned())
            .or_insert_with(|| real(parent))
            .join(name)
    }

    /// The rulesets of one attempt.
    pub(super) fn attempt(&self, own: &Own) -> anyhow::Result<Confinement> {
        let read = AccessFs::from_read(self.abi);
        let write = writing(self.abi);
        let checkout = self.real(&own.checkout);
        let tmp = own.tmp.as_deref().map(|p| self.real(p));
        // Only what is under a denied path needs a rule of its own: the fewer such paths, the
        // more attempts share a read layer.
        let mut shared: Vec<PathBuf> = std::iter::once(checkout.clone())
            .chain(tmp.clone())
            .chain(own.reads.iter().map(|p| self.real(p)))
            .filter(|p| self.denied.iter().any(|d| p.starts_with(d)))
            .collect();
        shared.sort();
        let mine: Vec<PathBuf> = Some(checkout)
            .filter(|_| own.writes_checkout)
            .into_iter()
            .chain(tmp)
            .chain(own.writes.iter().map(|p| self.real(p)))
            .collect();
        // What is not there is not granted (a rule names a file).
        let mine: Vec<Identity> = identities(&mine)
            .into_iter()
            .filter(|&(_, dev, ino)| (dev, ino) != (0, 0))
            .collect();
        let ports: Vec<u16> = match &self.connect {
            Some(ports) => ports.iter().chain(&own.ports).copied().collect(),
            None => Vec::new(),
        };
        let mut writable = self.writable.clone();
        writable.extend(mine.iter().map(|(path, _, _)| path.clone()));
        let key = (identities(&shared), (mine, ports));
        let mut starters = self.starters.lock().unwrap_or_else(PoisonError::into_inner);
        let starter = if let Some(starter) = starters.get(&key) {
            starter.clone()
        } else {
            let reading = self.read_layer(&key.0, read)?;
            let writing = self.write_layer(&key.1, write)?;
            let starter = Starter::new(vec![reading, writing])
                .context("could not start a thread to start confined processes")?;
            if starters.len() >= KEPT_LAYERS {
                // Their threads end once no attempt holds them.
                starters.clear();
            }
            starters.insert(key, starter.clone());
            starter
        };
        drop(starters);
        Ok(Confinement {
            starter,
            denied: Arc::clone(&self.denied),
            writable,
            readable: shared,
        })
    }

    /// The read layer of an attempt that also reads `shared` (its checkout, `TMPDIR`, deps):
    /// made once for each such set, then reused.
    fn read_layer(
        &self,
        key: &[Identity],
        read: BitFlags<AccessFs>,
    ) -> anyhow::Result<Arc<OwnedFd>> {
        let made = || self.layer(read, false, &self.reads, key, &[]);
        kept(&self.layers, &key.to_vec(), made)
    }

    /// The write layer of an attempt that also writes `mine` (its checkout, `TMPDIR`, spawn
    /// file, its profile's) and connects to `ports` (when connects are confined): made once for
    /// each such set, then reused.
    fn write_layer(
        &self,
        key: &WriteKey,
        write: BitFlags<AccessFs>,
    ) -> anyhow::Result<Arc<OwnedFd>> {
        let net = self.connect.is_some();
        let made = || self.layer(write, net, &self.writes, &key.0, &key.1);
        kept(&self.write_layers, key, made)
    }

    /// A ruleset handling `access` (and TCP connects, when `net`) that grants `rules`, `access`
    /// beneath each of `paths` and connects to `ports`.
    fn layer(
        &self,
        access: BitFlags<AccessFs>,
        net: bool,
        rules: &[Rule],
        paths: &[Identity],
        ports: &[u16],
    ) -> anyhow::Result<Arc<OwnedFd>> {
        let mut ruleset = Self::created(access, net)?;
        let opened: Vec<Rule> = paths
            .iter()
            .filter_map(|(path, _, _)| open(path, access, self.abi))
            .collect();
        for rule in rules.iter().chain(&opened) {
            ruleset = ruleset
                .add_rule(PathBeneath::new(&rule.fd, rule.access))
                .context("could not add a rule")?;
        }
        for &port in ports {
            ruleset = ruleset
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .context("could not add a port's rule")?;
        }
        let fd: Option<OwnedFd> = ruleset.into();
        Ok(Arc::new(fd.context("the kernel made no ruleset")?))
    }

    /// A new ruleset that handles `access` (and TCP connects, when `net`), all of it required.
    fn created(access: BitFlags<AccessFs>, net: bool) -> anyhow::Result<RulesetCreated> {
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(access)
            .context("the kernel cannot confine these accesses")?;
        if net {
            ruleset = ruleset
                .handle_access(AccessNet::ConnectTcp)
                .context("the kernel cannot confine TCP connects (Landlock ABI 4 or later)")?;
        }
        ruleset
            .create()
            .context("could not make a Landlock ruleset")
    }
}

/// The layer kept in `layers` for `key`, made by `made` when there is none (the oldest all
/// forgotten past `KEPT_LAYERS`).
fn kept<K: Clone + Eq + std::hash::Hash>(
    layers: &Mutex<HashMap<K, Arc<OwnedFd>>>,
    key: &K,
    made: impl FnOnce() -> anyhow::Result<Arc<OwnedFd>>,
) -> anyhow::Result<Arc<OwnedFd>> {
    let mut layers = layers.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(fd) = layers.get(key) {
        return Ok(Arc::clone(fd));
    }
    let fd = made()?;
    if layers.len() >= KEPT_LAYERS {
        layers.clear();
    }
    layers.insert(key.clone(), Arc::clone(&fd));
    Ok(fd)
}

/// The write accesses confined: making, changing and removing files. Not the device ioctls
/// nor connecting to a named socket: refusing those breaks terminals and local services
/// without keeping a file safe.
fn writing(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_write(abi) & !(AccessFs::IoctlDev | AccessFs::ResolveUnix)
}

/// `path` opened for a rule granting `access` (only what applies to a file, when it is one);
/// `None` when it is not there.
fn open(path: &Path, access: BitFlags<AccessFs>, abi: ABI) -> Option<Rule> {
    let meta = std::fs::metadata(path).ok()?;
    let access = if meta.is_dir() {
        access
    } else {
        access & AccessFs::from_file(abi)
    };
    let fd = PathFd::new(path).ok()?;
    Some(Rule { fd, access })
}

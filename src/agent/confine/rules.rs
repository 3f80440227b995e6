//! The Landlock rulesets: the run's read rules (what `walk` grants, with the run's denials),
//! made once, and per attempt a read layer with its own share of the denied places (its
//! checkout, `TMPDIR`, deps) and a write layer. A process confined by both may do only what
//! both allow.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

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

/// The most read layers kept for reuse (each distinct share of checkout, `TMPDIR` and deps).
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
    /// Read layers made, by the paths their attempt adds.
    layers: Mutex<HashMap<Vec<PathBuf>, Arc<OwnedFd>>>,
}

impl Policy {
    pub(super) fn new(setting: &Setting, abi: i32, places: &Places) -> anyhow::Result<Self> {
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
        Ok(Self {
            abi,
            reads: rules,
            writes,
            denied: denied.into(),
            writable,
            connect: setting.connect.clone(),
            layers: Mutex::new(HashMap::new()),
        })
    }

    /// The rulesets of one attempt.
    pub(super) fn attempt(&self, own: &Own) -> anyhow::Result<Confinement> {
        let read = AccessFs::from_read(self.abi);
        let write = writing(self.abi);
        let checkout = real(&own.checkout);
        let tmp = own.tmp.as_deref().map(real);
        // Only what is under a denied path needs a rule of its own: the fewer such paths, the
        // more attempts share a read layer.
        let mut shared: Vec<PathBuf> = std::iter::once(checkout.clone())
            .chain(tmp.clone())
            .chain(own.reads.iter().map(|p| real(p)))
            .filter(|p| self.denied.iter().any(|d| p.starts_with(d)))
            .collect();
        shared.sort();
        let shared_paths = shared.clone();
        let reading = self.read_layer(shared, read)?;

        let mut ruleset = self.created(write, self.connect.is_some())?;
        let mut writable = self.writable.clone();
        for rule in &self.writes {
            ruleset = ruleset
                .add_rule(PathBeneath::new(&rule.fd, rule.access))
                .context("could not add a rule")?;
        }
        let mine = Some(checkout)
            .filter(|_| own.writes_checkout)
            .into_iter()
            .chain(tmp)
            .chain(own.writes.iter().map(|p| real(p)));
        for path in mine {
            if let Some(rule) = open(&path, write, self.abi) {
                ruleset = ruleset
                    .add_rule(PathBeneath::new(&rule.fd, rule.access))
                    .context("could not add a rule")?;
                writable.push(path);
            }
        }
        if let Some(ports) = &self.connect {
            for &port in ports.iter().chain(&own.ports) {
                ruleset = ruleset
                    .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                    .context("could not add a port's rule")?;
            }
        }
        let writing: Option<OwnedFd> = ruleset.into();
        let writing = writing.context("the kernel made no ruleset")?;
        Ok(Confinement {
            layers: vec![reading, Arc::new(writing)],
            denied: Arc::clone(&self.denied),
            writable,
            readable: shared_paths,
        })
    }

    /// The read layer of an attempt that also reads `shared` (its checkout, `TMPDIR`, deps):
    /// made once for each such set, then reused.
    fn read_layer(
        &self,
        shared: Vec<PathBuf>,
        read: BitFlags<AccessFs>,
    ) -> anyhow::Result<Arc<OwnedFd>> {
        let mut layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(fd) = layers.get(&shared) {
            return Ok(Arc::clone(fd));
        }
        let mut ruleset = self.created(read, false)?;
        for rule in &self.reads {
            ruleset = ruleset
                .add_rule(PathBeneath::new(&rule.fd, rule.access))
                .context("could not add a rule")?;
        }
        for path in &shared {
            if let Some(rule) = open(path, read, self.abi) {
                ruleset = ruleset
                    .add_rule(PathBeneath::new(&rule.fd, rule.access))
                    .context("could not add a rule")?;
            }
        }
        let fd: Option<OwnedFd> = ruleset.into();
        let fd = Arc::new(fd.context("the kernel made no ruleset")?);
        if layers.len() >= KEPT_LAYERS {
            layers.clear();
        }
        layers.insert(shared, Arc::clone(&fd));
        Ok(fd)
    }

    /// A new ruleset that handles `access` (and TCP connects, when `net`), all of it required.
    fn created(&self, access: BitFlags<AccessFs>, net: bool) -> anyhow::Result<RulesetCreated> {
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

package rules

import "github.com/preflight-sqlite/preflight/probe/health"

// Finding IDs, one per finding, in the order of the rules table; each is
// documented in a findings table of docs/ and in the generated
// docs/reference/findings.md (TestDocsFindings). The
// header IDs are the problem codes of probe/health (header_problems[].id in
// the JSON), adopted as they are.
const (
	// DataDirMissing: a configured data directory or database path does not
	// exist.
	DataDirMissing ID = "data-dir-missing"
	// DataDirUnreadable: a configured path exists but cannot be examined, or a
	// data directory cannot be listed (permission denied, a symlink loop):
	// nothing is known about it.
	DataDirUnreadable ID = "data-dir-unreadable"
	// FSUnresponsive: a data directory did not answer a stat and a directory
	// read in time (--fs-timeout): a stuck FUSE daemon, a dead NFS server or VM
	// share.
	FSUnresponsive ID = "fs-unresponsive"
	// ScanDepthLimit: directories at the --max-depth limit were not searched for
	// databases: warn on an unsafe filesystem, where a WAL database there would
	// go unseen.
	ScanDepthLimit ID = "scan-depth-limit"
	// ScanSniffLimit: the budget for reading the headers of files without a
	// database name (--sniff-max, --sniff-time) ran out: a database with another
	// name among the rest would go unseen.
	ScanSniffLimit ID = "scan-sniff-limit"
	// UnknownFS: the data directory's filesystem could not be classified, or the
	// mount table could not be read.
	UnknownFS ID = "unknown-fs"
	// FSTypeMismatch: the mount table and statfs(2) disagree about a filesystem
	// under the data directory (the table says ext4, the superblock magic says
	// NFS): the riskier of the two decides.
	FSTypeMismatch ID = "fs-type-mismatch"
	// EphemeralDataDir: the data directory is in the container's writable layer
	// or in memory: its data is lost when the container is removed.
	EphemeralDataDir ID = "ephemeral-data-dir"
	// UnsafeFSNotInspected: the path is on a filesystem unsafe for WAL, and its
	// databases could not be inspected (path not on this machine).
	UnsafeFSNotInspected ID = "unsafe-fs-not-inspected"
	// MountNotInspected: preflight audit could not read a writable mount
	// of a container from where it ran, so whether it holds SQLite data,
	// and in which journal mode, is unknown.
	MountNotInspected ID = "mount-not-inspected"
	// NewDBOnUnsafeFS: no database yet (or a new, empty one) on a filesystem
	// unsafe for WAL: the application creates it in its own default mode, often
	// WAL (info when run --export-env tells it the mode).
	NewDBOnUnsafeFS ID = "new-db-on-unsafe-fs"
	// WALWithoutDatabase: the database file is empty or missing but its -wal
	// holds frames: SQLite sees an empty database and deletes that -wal at the
	// next open, with the data in it.
	WALWithoutDatabase ID = "wal-without-database"
	// WALOnCrossVM: a WAL database on a bind mount that crosses a VM boundary
	// (Docker Desktop, OrbStack, Podman machine, Colima, Lima, WSL2 drives).
	WALOnCrossVM ID = "wal-on-cross-vm"
	// WALOnNetworkFS: a WAL database on a network or distributed filesystem
	// (NFS, SMB/CIFS, CephFS, sshfs, object stores).
	WALOnNetworkFS ID = "wal-on-network-fs"
	// WALOnFuse: a WAL database on a FUSE filesystem: error for Unraid user
	// shares (fuse.shfs) and mergerfs, warn for other FUSE.
	WALOnFuse ID = "wal-on-fuse"
	// WALOnUnsafeFS: a WAL database on a filesystem of another class that the
	// policy calls unsafe for WAL (one without a wal-on-* finding of its own).
	WALOnUnsafeFS ID = "wal-on-unsafe-fs"
	// WALOnSandboxFS: a WAL database on a gVisor sandbox's gofer mount (shown as
	// 9p): coherent among the processes inside this sandbox, not with the host
	// or another sandbox that opens the same files.
	WALOnSandboxFS ID = "wal-on-sandbox-fs"
	// WALReenabled: a database preflight converted to DELETE at an earlier start
	// is in WAL mode again: the application turns WAL on when it opens the
	// database.
	WALReenabled ID = "wal-reenabled"
	// SingleFileBind: a database file is bind-mounted on its own: its -wal, -shm
	// and -journal are created on the directory's filesystem, not beside the
	// file (error in WAL mode).
	SingleFileBind ID = "single-file-bind"
	// SidecarSymlink: a -wal, -shm or -journal beside a database is a symlink:
	// SQLite refuses to open the database, or writes its journal somewhere else.
	SidecarSymlink ID = "sidecar-symlink"
	// SidecarNotRegular: a -wal, -shm or -journal beside a database is not a
	// regular file (a FIFO, a socket, a device, a directory): SQLite cannot open
	// the database, and a program that opens a FIFO waits forever.
	SidecarNotRegular ID = "sidecar-not-regular"
	// DBHeaderDamaged: a file named like a database, or with a -wal or -journal
	// beside it, has no valid SQLite header: a damaged database, not another
	// program's file; convert refuses it. Warn when only the name says so and
	// the bytes are of no known format (an encrypted database looks the same).
	DBHeaderDamaged ID = "db-header-damaged"
	// NotSQLite: a file given as a database, or named like one, holds another
	// program's format (text, bbolt, Berkeley DB, DuckDB, H2), or, given by
	// path, bytes of no known format.
	NotSQLite ID = "not-sqlite"
	// DBUnreadable: a database or sidecar could not be read, so its journal mode
	// is unknown.
	DBUnreadable ID = "db-unreadable"
	// JournalModeUnknown: a database header names neither the rollback journal
	// nor WAL (bytes 18 and 19).
	JournalModeUnknown ID = "journal-mode-unknown"
	// ScanIncomplete: part of a data directory below its top could not be read,
	// so some databases may not have been checked.
	ScanIncomplete ID = "scan-incomplete"
	// HeaderPageSizeInvalid: the header's page size is not a power of two from
	// 512 to 65536.
	HeaderPageSizeInvalid ID = health.ProblemPageSize
	// DBTruncated: the file is shorter than the header's database size, or not a
	// whole number of pages: a truncated copy or a torn write.
	DBTruncated ID = health.ProblemTruncated
	// HeaderReservedBytes: the header reserves bytes per page (used by
	// encryption and checksum extensions).
	HeaderReservedBytes ID = health.ProblemReservedBytes
	// HeaderTextEncodingInvalid: the header's text encoding is not UTF-8,
	// UTF-16le or UTF-16be.
	HeaderTextEncodingInvalid ID = health.ProblemTextEncoding
	// HeaderTorn: fixed fields of the page-1 header are wrong: a torn or
	// overwritten header.
	HeaderTorn ID = health.ProblemTorn
	// WALResetBug: a WAL database last written by a SQLite version with the
	// WAL-reset bug (3.7.0 through 3.51.2; fixed in 3.51.3, 3.50.7, 3.44.6).
	WALResetBug ID = "wal-reset-bug"
	// HotJournal: a hot rollback journal: a writer died mid-transaction; the
	// next writer rolls it back. Never delete it.
	HotJournal ID = "hot-journal"
	// WALBesideRollbackDB: a -wal file beside a database whose header says
	// rollback mode: SQLite still reads its frames.
	WALBesideRollbackDB ID = "wal-beside-rollback-db"
	// WALInvalidFrames: valid-looking WAL frames follow a broken one: two
	// writers interleaved, a torn write, or a frame damaged in place (even its
	// stored checksum alone); SQLite silently discards them.
	WALInvalidFrames ID = "wal-invalid-frames"
	// WALStale: the -wal holds frames of an older generation after the current
	// ones: leftovers of a restarted WAL, not corruption.
	WALStale ID = "wal-stale"
	// IntegrityIndex: an index is damaged: rebuildable with REINDEX, no rows
	// lost.
	IntegrityIndex ID = "integrity-index"
	// IntegrityFTS: a full-text search index is damaged: rebuild it; the rows
	// are intact.
	IntegrityFTS ID = "integrity-fts"
	// IntegrityTable: a table's b-tree is damaged: rows are at risk.
	IntegrityTable ID = "integrity-table"
	// IntegrityStructural: page-level damage (freelist, unused or doubly used
	// pages).
	IntegrityStructural ID = "integrity-structural"
	// IntegrityUnknown: the integrity check failed on something it could not
	// name; rows may be at risk.
	IntegrityUnknown ID = "integrity-unknown"
	// IntegrityNotChecked: the integrity check could not run: locked by another
	// process, a hot journal, the private copy could not be made, or an error.
	IntegrityNotChecked ID = "integrity-not-checked"
	// FSMmapUnsupported: --probe-fs: the filesystem cannot map a file shared
	// (mmap, msync): WAL fails with "disk I/O error".
	FSMmapUnsupported ID = "fs-mmap-unsupported"
	// FSLocksUnsupported: --probe-fs: the filesystem refused a POSIX lock:
	// SQLite cannot lock the database in any journal mode.
	FSLocksUnsupported ID = "fs-locks-unsupported"
	// FSProbeFailed: --probe-fs: the test file could not be created in the data
	// directory.
	FSProbeFailed ID = "fs-probe-failed"
	// ShareWithoutLocks: a data directory on a cross-VM share, or on a network
	// mount whose byte-range locks stay local (nolock, nobrl, local_lock=all):
	// even in DELETE mode its databases must be opened from one side only.
	ShareWithoutLocks ID = "share-without-locks"
	// NFSSoftMount: a data directory on an NFS mount with the soft (or softerr)
	// option: a slow server makes writes fail with I/O errors mid-transaction.
	NFSSoftMount ID = "nfs-soft-mount"
	// NFSSillyRename: nFS silly-rename files (.nfs and hex digits) beside a
	// database: a process on some NFS client may still hold a deleted file of
	// that directory (an old database or -wal), or a crashed client left them;
	// evidence, not proof.
	NFSSillyRename ID = "nfs-silly-rename"
	// WALSidecarUnlinked: a process holds a -wal or -shm that is no longer the
	// file at that path (deleted or replaced): its writes go where other
	// connections never look.
	WALSidecarUnlinked ID = "wal-sidecar-unlinked"
	// LiveWriterProcess: a process on this kernel has the database, its -wal or
	// its -shm open.
	LiveWriterProcess ID = "live-writer-process"
	// LiveWriterLock: a POSIX lock on the database or its -shm is held by a
	// process this scan could not name (another container on the same kernel
	// shows as a holder outside this PID namespace).
	LiveWriterLock ID = "live-writer-lock"
	// LiveWriterContainer: another container mounts this database's data
	// read-write (Docker Engine API).
	LiveWriterContainer ID = "live-writer-container"
	// StoppedContainerWriter: a stopped container (created, exited) mounts this
	// database's data read-write: started again, it is a second writer (Docker
	// Engine API).
	StoppedContainerWriter ID = "stopped-container-writer"
	// MultipleWriters: more than one writer besides the application: error for
	// WAL on a cross-vm, network or fuse filesystem (corruption is happening
	// now), warn elsewhere (the pattern behind "database is locked").
	MultipleWriters ID = "multiple-writers"
	// ActivityUnseenWriter: the database's files changed during the watch while
	// no probe found a writer: a writer elsewhere (a host behind a VM share,
	// another NFS client).
	ActivityUnseenWriter ID = "activity-unseen-writer"
	// WriteLockHeld: --watch: a process held the write lock longer than
	// the busy timeout: other writers get "database is locked".
	WriteLockHeld ID = "write-lock-held"
	// LocksNotProbed: preflight locks: the lock probe of a database (or its
	// --watch) failed, so who holds its locks is not known.
	LocksNotProbed ID = "locks-not-probed"
	// DockerUnreachable: the Docker Engine API did not answer (or not
	// completely), so other containers could not be checked: reported when a
	// database exists (error with --docker required, always).
	DockerUnreachable ID = "docker-unreachable"
	// MountTableSkippedLines: lines of a --mountinfo file fit no known format
	// and were skipped.
	MountTableSkippedLines ID = "mount-table-skipped-lines"
	// LiveWriterTask: a Swarm task on another node mounts the database's
	// data read-write on storage both nodes reach.
	LiveWriterTask ID = "live-writer-task"
	// ReplicasOnSQLiteVolume: a Swarm service (or a compose deploy:
	// section) that mounts a data directory read-write runs more than one
	// task at once.
	ReplicasOnSQLiteVolume ID = "replicas-on-sqlite-volume"
	// StartFirstOnSQLiteVolume: such a service updates or rolls back
	// start-first: two writers during every update.
	StartFirstOnSQLiteVolume ID = "start-first-on-sqlite-volume"
	// ServicesNotVisible: the engine is a Swarm node whose services and
	// tasks could not be listed.
	ServicesNotVisible ID = "services-not-visible"
	// LiveWriterPod: another pod mounts this database's storage read-write
	// (the Kubernetes API).
	LiveWriterPod ID = "live-writer-pod"
	// KubeUnreachable: the Kubernetes API did not answer.
	KubeUnreachable ID = "kube-unreachable"
	// KubePermissionDenied: the Kubernetes API denied a request the probe
	// needs (names the verb and resource).
	KubePermissionDenied ID = "kube-permission-denied"
	// BindOnDesktop: compose: a data directory on a bind mount while the engine
	// runs in a VM (Docker Desktop, OrbStack, Colima, Lima, Rancher Desktop,
	// Podman machine): the share crosses the VM boundary.
	BindOnDesktop ID = "bind-on-desktop"
	// BindOnUnsafeFS: compose: on a native Linux engine, a data directory
	// bind-mounted from a host directory on a cross-vm, network or FUSE
	// filesystem.
	BindOnUnsafeFS ID = "bind-on-unsafe-fs"
	// BindSourceUnchecked: compose: on a native Linux engine, the host
	// filesystem of a data directory's bind source could not be read or
	// classified (it did not answer in time, or the mount table could not be
	// read), so it may be a network or FUSE filesystem.
	BindSourceUnchecked ID = "bind-source-unchecked"
	// VolumeOnNetwork: compose: a data directory on a named volume whose
	// driver_opts make it NFS or CIFS, or whose driver is not local.
	VolumeOnNetwork ID = "volume-on-network"
	// VolumeIsBind: compose: a data directory on a named volume with driver_opts
	// o: bind and device: a host path, which is a bind mount in disguise, judged
	// as one (error on a VM engine or an unsafe host filesystem).
	VolumeIsBind ID = "volume-is-bind"
	// SharedWriter: compose: the same volume or bind source holding a data
	// directory is mounted read-write by more than one service (or, with --live,
	// by other running containers).
	SharedWriter ID = "shared-writer"
	// NoVolume: compose: a data directory on no mount (the container's writable
	// layer) or on tmpfs: the data is lost when the container is removed or
	// stops.
	NoVolume ID = "no-volume"
	// BindNotJudged: compose: a read-write bind mount whose content is unknown
	// (its source does not exist on this machine, did not answer, or was not
	// read) of services whose images are not in the catalogue, so no rule could
	// judge it: it may hold SQLite data.
	BindNotJudged ID = "bind-not-judged"
	// RollingUpdateOnSQLiteClaim: kube: a Deployment with RollingUpdate
	// (maxSurge above 0) mounts a volume that holds SQLite data.
	RollingUpdateOnSQLiteClaim ID = "rolling-update-on-sqlite-claim"
	// ReplicasOnSQLiteClaim: kube: a workload runs more than one pod on one
	// volume that holds SQLite data.
	ReplicasOnSQLiteClaim ID = "replicas-on-sqlite-claim"
	// CronjobOverlapOnSQLiteClaim: kube: a CronJob whose runs may overlap
	// mounts a shared volume that holds SQLite data.
	CronjobOverlapOnSQLiteClaim ID = "cronjob-overlap-on-sqlite-claim"
	// RWXOnNetworkClass: kube: a claim that holds SQLite data asks for
	// ReadWriteMany on a network filesystem.
	RWXOnNetworkClass ID = "rwx-on-network-class"
	// LivePodsOnSQLiteClaim: kube audit: pods of one workload run now on
	// one claim that holds SQLite data, on different nodes.
	LivePodsOnSQLiteClaim ID = "live-pods-on-sqlite-claim"
	// SQLiteClaimOnNetwork: kube audit: a claim that holds SQLite data is
	// bound to a PersistentVolume on a network filesystem (NFS, CephFS,
	// Glusterfs, Azure Files, SMB, EFS), whose POSIX locks across nodes are
	// not reliable.
	SQLiteClaimOnNetwork ID = "sqlite-claim-on-network"
	// LinterAnnotationConflict: kube: a Deployment on a shared volume that
	// holds SQLite data carries kube-score or Polaris annotations that ask
	// for RollingUpdate or more replicas.
	LinterAnnotationConflict ID = "linter-annotation-conflict"
	// DaemonsetOnSQLiteClaim: kube: a DaemonSet mounts a shared volume that
	// holds SQLite data.
	DaemonsetOnSQLiteClaim ID = "daemonset-on-sqlite-claim"
	// SharedSQLiteClaim: kube: a claim that holds SQLite data is mounted
	// read-write by more than one workload.
	SharedSQLiteClaim ID = "shared-sqlite-claim"
	// DuplicateManifestKey: kube: a key written twice in one mapping of a
	// manifest; the last value was read, as kubectl does.
	DuplicateManifestKey ID = "duplicate-manifest-key"
	// ClaimNotJudged: kube: a read-write claim of an image not in the
	// catalogue on shared storage, written by several pods at once: it may
	// hold SQLite data.
	ClaimNotJudged ID = "claim-not-judged"
)

// Convert's refusal reasons (Refusals) that are not also check findings;
// the JSON's refusals[].reason. Each is documented in the refusals table
// of docs/convert.md (TestDocsRefusals).
const (
	// Writer: a process, lock holder or container has the database open.
	Writer ID = "writer"
	// UnlinkedSidecar: a process holds a -wal or -shm that is no longer
	// the file at that path.
	UnlinkedSidecar ID = "unlinked-sidecar"
	// UnseenWriter: the files changed during the check's watch while no
	// probe found a writer.
	UnseenWriter ID = "unseen-writer"
	// WriterTask: a Swarm task on another node writes the data.
	WriterTask ID = "writer-task"
	// Litestream: Litestream replicates the database.
	Litestream ID = "litestream"
	// UnsafeFS: --to wal where WAL is not known to work.
	UnsafeFS ID = "unsafe-fs"
	// SwappableDir: a directory or symlink on the way to the database can
	// be replaced by another user.
	SwappableDir ID = "swappable-dir"
	// Unverified: a live-writer probe could not run fully.
	Unverified ID = "unverified"
	// WALLoss: SQLite would discard valid-looking frames after a break.
	WALLoss ID = "wal-loss"
	// Activity: the files changed during the quiet period, or could not
	// be watched.
	Activity ID = "activity"
	// NeedsConfirmation: the operator did not confirm that nothing beyond
	// the share has the database open.
	NeedsConfirmation ID = "needs-confirmation"
	// Reenabled: the entrypoint does not convert again a database that
	// the application switched back to WAL (convert.Policy).
	Reenabled ID = "reenabled"
	// FailedBefore: the entrypoint does not try again while the backup of
	// an attempt that failed at an earlier start is still there.
	FailedBefore ID = "failed-before"
)

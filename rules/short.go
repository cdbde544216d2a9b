package rules

// Short is the short reason of a finding ID: a phrase of a few words that
// run's container log prints (with the path and FindingURL) in place of
// the full message and remedy, which check prints. It is stable per ID,
// never cut from a message, and "" for an ID that is not in the table.
// TestShortLogLine holds every rule's log line within 200 characters.
func Short(id ID) string { return short[id] }

// short is the short reason of every finding ID of Rules(), one entry
// per ID; TestShortEveryRule keeps it in step with the table.
var short = map[ID]string{
	DataDirMissing:       "the path does not exist",
	DataDirUnreadable:    "the path cannot be examined or listed",
	FSUnresponsive:       "the filesystem did not answer in time",
	ScanDepthLimit:       "directories at --max-depth not searched",
	ScanSniffLimit:       "header sniffing budget ran out",
	UnknownFS:            "the filesystem could not be classified",
	FSTypeMismatch:       "mount table and statfs disagree",
	EphemeralDataDir:     "data in the writable layer or in memory",
	UnsafeFSNotInspected: "unsafe filesystem, databases not inspected",
	NewDBOnUnsafeFS:      "a new database here may be created in WAL mode",
	WALWithoutDatabase:   "the -wal holds data but the database is empty",
	WALOnCrossVM:         "WAL mode on a bind mount that crosses a VM",
	WALOnNetworkFS:       "WAL mode on a network filesystem",
	WALOnFuse:            "WAL mode on a FUSE filesystem",
	WALOnUnsafeFS:        "WAL mode on a filesystem unsafe for WAL",
	WALOnSandboxFS:       "WAL mode on a gVisor gofer mount",
	WALReenabled:         "WAL mode again after a conversion",
	SingleFileBind:       "the database file is bind-mounted alone",
	SidecarSymlink:       "a -wal, -shm or -journal is a symlink",
	SidecarNotRegular:    "a -wal, -shm or -journal is not a file",
	DBHeaderDamaged:      "no valid SQLite header",
	NotSQLite:            "not a SQLite database",
	DBUnreadable:         "the database could not be read",
	JournalModeUnknown:   "unknown journal mode in the header",
	ScanIncomplete:       "part of the directory could not be read",

	HeaderPageSizeInvalid:     "invalid page size in the header",
	DBTruncated:               "the file is truncated",
	HeaderReservedBytes:       "the header reserves bytes per page",
	HeaderTextEncodingInvalid: "invalid text encoding in the header",
	HeaderTorn:                "the header is torn or overwritten",

	HotJournal:          "a hot journal: a writer died mid-transaction",
	WALBesideRollbackDB: "a -wal beside a rollback-mode database",
	WALInvalidFrames:    "valid WAL frames after a broken one",
	WALStale:            "old-generation frames in the -wal",
	IntegrityIndex:      "an index is damaged",
	IntegrityFTS:        "a full-text index is damaged",
	IntegrityTable:      "a table is damaged: rows at risk",
	IntegrityStructural: "page-level damage",
	IntegrityUnknown:    "the integrity check failed",
	IntegrityNotChecked: "the integrity check could not run",
	FSMmapUnsupported:   "no shared mmap: WAL fails",
	FSLocksUnsupported:  "no POSIX locks on this filesystem",
	FSProbeFailed:       "could not create the --probe-fs test file",

	ShareWithoutLocks: "locks stay on one side of the share",
	NFSSoftMount:      "NFS mounted soft: I/O errors mid-write",
	NFSSillyRename:    "NFS silly-rename files beside it",

	WALSidecarUnlinked:     "a -wal or -shm in use was replaced",
	LiveWriterProcess:      "a process has it open",
	LiveWriterLock:         "an unnamed process holds a lock",
	LiveWriterContainer:    "another container mounts it read-write",
	StoppedContainerWriter: "a stopped container mounts it read-write",
	MultipleWriters:        "more than one other writer",
	ActivityUnseenWriter:   "files changed with no writer found",
	DockerUnreachable:      "Docker API not reachable",
	MountTableSkippedLines: "--mountinfo lines skipped",

	LiveWriterTask:           "a Swarm task elsewhere mounts it",
	ReplicasOnSQLiteVolume:   "several tasks on one database",
	StartFirstOnSQLiteVolume: "start-first updates: two writers",
	ServicesNotVisible:       "Swarm services not listed",

	LiveWriterPod:              "another pod mounts it read-write",
	RollingUpdateOnSQLiteClaim: "rolling updates: two writers",
	ReplicasOnSQLiteClaim:      "several replicas on one claim",
	KubeUnreachable:            "Kubernetes API not reachable",
	KubePermissionDenied:       "RBAC refused a request",

	BindOnDesktop:       "bind mount through the engine's VM",
	BindOnUnsafeFS:      "bind source on an unsafe filesystem",
	BindSourceUnchecked: "bind source filesystem not read",
	VolumeOnNetwork:     "named volume on NFS, CIFS or a driver",
	VolumeIsBind:        "named volume that is a bind mount",
	SharedWriter:        "mounted read-write by several services",
	NoVolume:            "data on no volume: lost on removal",
	BindNotJudged:       "bind mount not judged: may hold SQLite",

	CronjobOverlapOnSQLiteClaim: "CronJob runs may overlap",
	RWXOnNetworkClass:           "ReadWriteMany on a network class",
	DaemonsetOnSQLiteClaim:      "DaemonSet on a shared claim",
	SharedSQLiteClaim:           "claim shared read-write",
	DuplicateManifestKey:        "a key written twice: the last one read",
	ClaimNotJudged:              "claim not judged: several writers, may hold SQLite",

	MountNotInspected: "writable mount not inspected",
	WALResetBug:       "last written by a SQLite with the WAL-reset bug",
	WriteLockHeld:     "write lock held past the busy timeout",
	LocksNotProbed:    "lock holders not known: the lock probe failed",

	LivePodsOnSQLiteClaim:    "pods of one workload share a claim now",
	SQLiteClaimOnNetwork:     "SQLite claim bound to a network filesystem",
	LinterAnnotationConflict: "linter annotations ask for a second writer",
}

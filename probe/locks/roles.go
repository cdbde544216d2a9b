package locks

import (
	"fmt"
	"strconv"
	"strings"
)

// Role is what a holder's locks say it is doing, in SQLite's own terms
// (https://sqlite.org/walformat.html "Locks", https://sqlite.org/lockingv3.html);
// its JSON form is the bare string.
type Role string

// Roles, strongest first (the order Roles returns them in).
const (
	// RoleRecover: a write lock on the -shm's recover byte (122): the
	// holder rebuilds the wal-index from the -wal.
	RoleRecover Role = "recover"
	// RoleWALWrite: a write lock on the -shm's write byte (120): the one
	// WAL writer, inside a write transaction (BEGIN IMMEDIATE, or a write
	// that has not committed yet).
	RoleWALWrite Role = "wal-write"
	// RoleCheckpoint: a write lock on the -shm's checkpoint byte (121): a
	// checkpoint copies WAL frames into the database.
	RoleCheckpoint Role = "checkpoint"
	// RoleExclusive: a write lock on the database's SHARED range:
	// rollback journal EXCLUSIVE (committing); in WAL mode the last
	// connection closing (checkpointing and deleting the -wal), or
	// locking_mode=EXCLUSIVE.
	RoleExclusive Role = "exclusive"
	// RolePending: a write lock on the database's PENDING byte without
	// EXCLUSIVE: a rollback-mode writer waiting for readers to leave.
	RolePending Role = "pending"
	// RoleReserved: a write lock on the database's RESERVED byte without
	// PENDING: a rollback-mode writer inside its transaction.
	RoleReserved Role = "reserved"
	// RoleReadMarkReset: a write lock on a -shm read mark (123..127): a
	// writer or checkpointer resetting that mark.
	RoleReadMarkReset Role = "read-mark-reset"
	// RoleWALRead: a read lock on a -shm read mark: a WAL read
	// transaction using that mark (Held.ReadMark).
	RoleWALRead Role = "wal-read"
	// RoleShared: a read lock on the database's SHARED range of a
	// rollback-mode holder: a read transaction (rollback SHARED).
	RoleShared Role = "shared"
	// RoleWALOpen: read locks on the -shm's dead-man switch (128) (and
	// the database's SHARED range) only: a WAL connection, open and idle.
	RoleWALOpen Role = "wal-open"
	// RoleDMSExclusive: a write lock on the dead-man switch: the first
	// connection initialising the -shm, or the last cleaning it up.
	RoleDMSExclusive Role = "dms-exclusive"
	// RoleForeign: an open file description lock (OFD): not SQLite's.
	RoleForeign Role = "foreign"
)

// Write reports whether r keeps every other connection from writing: the
// WAL write lock, RESERVED, PENDING or EXCLUSIVE, and recovery. A holder
// of one of these past a writer's busy timeout is what that writer sees
// as "database is locked".
func (r Role) Write() bool {
	switch r {
	case RoleRecover, RoleWALWrite, RoleExclusive, RolePending, RoleReserved:
		return true
	case RoleCheckpoint, RoleReadMarkReset, RoleWALRead, RoleShared, RoleWALOpen, RoleDMSExclusive, RoleForeign:
		return false
	}
	return false
}

// Held is one Role of a holder; ReadMark is the read mark (0..4) for
// RoleWALRead and RoleReadMarkReset.
type Held struct {
	Role     Role `json:"role"`
	ReadMark int  `json:"read_mark,omitempty"`
}

// String says what h means, in the words of a "database is locked"
// question: "holds the write lock (WAL)", "is checkpointing", "reads (read
// mark 1)", "holds RESERVED (rollback journal)".
func (h Held) String() string {
	switch h.Role {
	case RoleRecover:
		return "is running recovery (rebuilding the WAL index)"
	case RoleWALWrite:
		return "holds the write lock (WAL)"
	case RoleCheckpoint:
		return "is checkpointing"
	case RoleExclusive:
		return "holds EXCLUSIVE (rollback journal; in WAL mode: closing the last connection, or locking_mode=EXCLUSIVE)"
	case RolePending:
		return "holds PENDING (rollback journal: waiting for readers to finish)"
	case RoleReserved:
		return "holds RESERVED (rollback journal: in a write transaction)"
	case RoleReadMarkReset:
		return fmt.Sprintf("resets read mark %d (WAL)", h.ReadMark)
	case RoleWALRead:
		return fmt.Sprintf("reads (read mark %d)", h.ReadMark)
	case RoleShared:
		return "reads (SHARED, rollback journal)"
	case RoleWALOpen:
		return "has the database open (WAL, idle)"
	case RoleDMSExclusive:
		return "is opening or closing the WAL index (-shm)"
	case RoleForeign:
		return "holds an open file description lock (not SQLite's)"
	}
	return string(h.Role)
}

// Roles names what one holder's locks ls mean, strongest first, each role
// once (read marks once each). The locks must all be the one holder's
// (one PID): the kernel reports a rollback EXCLUSIVE as write locks on
// PENDING, RESERVED and SHARED together, and Roles reports it as
// RoleExclusive alone. In a WAL database (wal, the header's journal
// mode) a connection's SHARED read lock on the database is part of
// RoleWALOpen, not RoleShared.
func Roles(ls []Lock, wal bool) []Held {
	has := map[string]string{} // range name -> strongest type
	ofd := false
	for _, l := range ls {
		if l.OFD {
			ofd = true
			continue
		}
		k := l.File + ":" + l.Name
		if has[k] != "write" {
			has[k] = l.Type
		}
	}
	var out []Held
	add := func(r Role) { out = append(out, Held{Role: r}) }
	if has["shm:recover"] == "write" {
		add(RoleRecover)
	}
	if has["shm:write"] == "write" {
		add(RoleWALWrite)
	}
	if has["shm:checkpoint"] == "write" {
		add(RoleCheckpoint)
	}
	switch {
	case has["db:shared"] == "write":
		add(RoleExclusive)
	case has["db:pending"] == "write":
		add(RolePending)
	case has["db:reserved"] == "write":
		add(RoleReserved)
	}
	for mark := range 5 {
		switch has["shm:read-"+strconv.Itoa(mark)] {
		case "write":
			out = append(out, Held{Role: RoleReadMarkReset, ReadMark: mark})
		case "read":
			out = append(out, Held{Role: RoleWALRead, ReadMark: mark})
		}
	}
	wal = wal || has["shm:dms"] != ""
	if has["db:shared"] == "read" && !wal && len(out) == 0 {
		add(RoleShared)
	}
	if has["shm:dms"] == "write" {
		add(RoleDMSExclusive)
	}
	if wal && len(out) == 0 && (has["shm:dms"] != "" || has["db:shared"] != "") {
		add(RoleWALOpen)
	}
	if ofd {
		add(RoleForeign)
	}
	return out
}

// Phrase joins the meanings of roles: "holds the write lock (WAL), reads
// (read mark 1)"; "" when there are none.
func Phrase(roles []Held) string {
	var s []string
	for _, h := range roles {
		s = append(s, h.String())
	}
	return strings.Join(s, ", ")
}

// Package health states facts about the health of a SQLite database and of
// the filesystem it lives on: hot rollback journals and stray WAL files
// (InspectJournal), implausible database headers (HeaderProblems),
// classified integrity-check results (CheckIntegrity) and whether a
// directory supports the shared mmap and POSIX locks that WAL mode needs
// (ProbeFS).
//
// The package reports facts; it does not decide verdicts and never prints.
// Callers turn the facts into findings.
//
// Writes: InspectJournal, HeaderProblems and CheckHeaderFile only read.
// CheckIntegrity opens SQLite read-only (mode=ro) and runs only
// PRAGMA quick_check or integrity_check and a SELECT on sqlite_master; it
// never deletes, rolls back or replays a journal, never checkpoints and never
// changes the journal mode. SQLite itself may create the -shm (and an empty
// -wal) beside a WAL-mode database when a read-only connection opens it
// (https://sqlite.org/wal.html#readonly); Options.Copy avoids touching the
// live directory. ProbeFS is the only function that writes: one temporary
// file, always removed.
//
// POSIX lock caveat: closing any file descriptor of a file drops every POSIX
// advisory lock the process holds on that file, including SQLite's
// (https://sqlite.org/howtocorrupt.html#posix_close_bug). InspectJournal and
// CheckIntegrity open and close the database file; do not call them from a
// process that holds other SQLite connections to the same database.
package health

// Package journal is the desk's durable input log.
//
// Every input of the desk's event loop is appended here before its effects
// leave the process; a restart loads the newest snapshot and replays the
// log after it. Records are opaque bytes: the desk encodes its inputs
// itself.
//
// [Log] is the interface the desk programs against. [OpenDir] returns the
// file implementation ([FileLog]): segmented append-only files whose
// records are framed with a length, a sequence number and a CRC32C, written
// by one goroutine with group commit, recovered after a crash by cutting a
// torn tail, and compacted behind snapshots. The on-disk format and the
// recovery rules are described in docs/journal.md at the repository root.
package journal

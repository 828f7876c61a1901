// Package term runs a session's terminals: one pseudo-terminal per terminal
// id, shared by any number of attached clients.
//
// A [Hub] belongs to one runner. [Hub.Attach] starts the terminal's program
// the first time an id is seen and joins it afterwards. The first client
// asking for [RoleOwner] gets read-write access; everyone else watches
// read-only. A client joining late first receives the terminal's scrollback
// and then live output, with nothing lost or repeated in between.
//
// Output reaches each client through its own [Sink], fed by its own
// goroutine, so a slow client never holds up the program or the other
// clients: once a client falls more than a bounded number of bytes behind,
// its stream is cut with [ErrSlowClient] and the program keeps running.
//
// Every process of a terminal dies with it: programs run as the leader of a
// new session on the pseudo-terminal, and [Hub.Close] hangs up and then
// kills that whole session. A process that ignores SIGHUP passes that on
// to the programs it starts, whose jobs would then outlive a hang-up: a
// process using a Hub must not ignore it (the runner catches it).
package term

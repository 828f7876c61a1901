// Package runner is one Corral session in one process: it owns the session
// folder (events.jsonl, control.sock, meta.json, presence.json), drives one
// engine through the engine.Engine interface, and puts every tool call
// through the gate and every edit through hunk review.
//
// Commands arrive from three places that share one handler: the control
// socket, the supervisor over the wire protocol on stdin/stdout, and (when
// the runner runs standalone on a terminal) plain lines typed on stdin.
//
// # Parts
//
// Runner is a coordinator over parts that each keep their own state behind
// their own lock (or none) and are tested alone:
//
//   - store (store.go): the session folder as written: the event log and
//     meta.json. Every event and every spec change goes through it.
//   - idSource (ids.go): the message, ask and edit ids, never repeated in
//     a session's log.
//   - turnQueue (queue.go): the messages waiting, the turn in progress,
//     the steers waiting for a tool boundary, the turn numbers, and when
//     the next turn may start.
//   - askBroker (asks.go): the asks open, each answered exactly once (by a
//     person, a stop or shutdown, a withdrawn call, or expiry).
//   - review (review.go): staged edits, hunk decisions, applying and
//     reverting hunks, and what each turn changed.
//   - meter (meter.go): what the session spends, and the spend cap.
//   - the turn-end policies (policies.go): the spend cap's check of an
//     engine's exact cost, compaction (compact.go) and the goal check
//     (goals.go), each behind turnEndPolicy, applied in that order when a
//     turn ends.
//   - timedLoop (loop.go): a timed loop's schedule.
//   - lifecycle: closing what a crashed runner left open (leftovers.go),
//     the handoff from a parent session (inherit.go), fork (fork.go).
//   - presenceWriter (presence.go): presence.json, the one place the
//     session's state is published outside the event log.
//   - gatekeeper (gatekeeper.go): the session's permission gate.
//   - the link (stdio.go), the control socket (control.go) and the
//     terminals (terminals.go): the ways in.
//
// The Runner keeps the engine, the spec, the session's state and activity,
// and the order of things: what a turn's end does first (runTurns), what a
// stop clears (stop), what a tool call waits for (permit), how a fork moves
// the session (fork). Parts do not know each other; the Runner hands each
// the few functions it needs (an emit, the meter's verdict).
//
// # Locks
//
// From outermost to innermost; a goroutine holding one lock takes only
// locks further down the list:
//
//  1. Runner.cmds, read-held by every command that changes the session for
//     as long as it runs, write-held by a fork and by Close.
//  2. Runner.mu, the coordinator's (spec, state, engine). A transition that
//     spans the Runner's state and a part's (a turn starting and the state
//     saying so) holds it while calling the part, so status sees both
//     change at once.
//  3. The parts' locks. None calls out while holding its own, except the
//     turn queue: under its lock it asks the meter whether the spend cap
//     holds the queue, and records a message's userMessage event, so that
//     the log's order is the queue's.
//  4. The meter's lock and the event log's, which take no other (the log
//     calls the mirror without holding its own).
//
// Events are recorded with no lock held but the turn queue's (a message's
// userMessage). presenceWriter calls Runner.status from its own goroutine
// holding none of its locks.
package runner

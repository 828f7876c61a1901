// Package codex drives the Codex CLI behind Corral's engine interface.
//
// It runs "codex app-server", which speaks JSON-RPC over stdio (one JSON
// object per line), in its own process group with a per-session CODEX_HOME
// holding a generated config.toml. A Corral session maps onto one Codex
// thread: Start opens or resumes it, Turn runs turn/start and translates the
// streamed item notifications into Corral events, Steer and Interrupt use
// turn/steer and turn/interrupt, Fork uses thread/fork, Judge asks an
// ephemeral fork, and Compact uses thread/compact/start.
//
// Every write and every network access the model attempts reaches Corral's
// permission gate: the thread runs with Codex's read-only sandbox and the
// on-request approval policy, so the only ways out of the sandbox are
// approval requests, which this package answers through Host.Permit.
// docs/engines-codex.md holds the full analysis, the generated
// configuration and the mapping of failures.
package codex

// Package termhost serves a supervisor's session terminals to their
// clients. It owns everything between a runner's terminal and the client
// connections that watch it: one runner client per terminal, the masters
// the runners hand over and the reads and writes on them, the fan-out to
// every connection with its roles, scrollback and back-pressure, and each
// connection's protocol once it is a WebSocket. The HTTP layer only checks
// a request, upgrades it, and hands the connection over (Host.Attach).
//
// docs/terminal.md, *In the supervisor*, tells the rules; docs/api.md the
// WebSocket protocol.
package termhost

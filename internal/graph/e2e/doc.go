// Package e2e holds end-to-end tests of graph runs through the built
// supervisor and runner binaries: the /v1/graphs routes, the supervisor
// killed with SIGKILL mid-node and restarted, and the CLI.
package e2e

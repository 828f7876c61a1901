// Package command is the vocabulary of control commands: the requests a
// shell sends to a session (on control.sock, through the supervisor's HTTP
// API or its CLI) and their results. docs/commands.md lists every command.
package command

// Package cli is the command line of the supervisor binary: serve runs the
// daemon, and the other subcommands drive a running daemon through its API.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/corral-dev/corral/pkg/wire"
)

// External is a subcommand another package provides (gate, hunks, ...).
type External struct {
	Name    string
	Summary string
	Main    func(args []string, stdout, stderr io.Writer) int
}

type subcommand struct {
	name    string
	args    string // positional arguments, for usage
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

// env is what a subcommand reads from and writes to.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// json is --json, which every command takes: its result, or its
	// error, is printed as one JSON envelope (output.go).
	json bool
	// flags is the command's flag set once it has made it (completion
	// reads every command's flags from there).
	flags *flag.FlagSet
	// ext are the commands other packages provide.
	ext []External
}

func commands() []subcommand {
	return []subcommand{
		{"serve", "", "run the supervisor daemon", runServe},
		{"new", "", "create a session; prints its id", runNew},
		{"ls", "", "list sessions", runList},
		{"send", "ID TEXT...", "send a message (queued while a turn runs)", runSend},
		{"steer", "ID TEXT...", "steer the running turn at its next tool boundary", runSteer},
		{"stop", "ID", "interrupt the turn, deny open asks, clear the queue", runStop},
		{"cancel", "ID MESSAGE", "remove a queued message before its turn starts", runCancel},
		{"wait", "ID", "wait until a turn ends, a person is needed, or the session is idle", runWait},
		{"answer", "ID ASK allow|deny", "answer an open ask", runAnswer},
		{"hunk", "ID [EDIT/]HUNK accept|reject", "decide a staged hunk", runHunk},
		{"status", "ID", "show a session and its status", runStatus},
		{"events", "ID", "print a session's events as NDJSON", runEvents},
		{"watch", "[ID]", "follow a session (or all) as a live transcript; answer asks and review hunks", runWatch},
		{"rm", "ID", "stop a session's runner and delete the session", runRemove},
		{"goal", "ID set TEXT|get|clear|done", "set, show, clear or mark done a session's goal", runGoal},
		{"mode", "ID review|auto|readonly", "change a session's mode", runMode},
		{"spend-cap", "ID USD", "set a session's spend cap", runSpendCap},
		{"fork", "ID", "branch a session; prints the new id", runFork},
		{"run", "-p PROMPT", "print mode: one prompt to its end, the answer on stdout", runRun},
		{"workspace", "ID [diff|commit MESSAGE...|merge]", "show, commit or merge a session's workspace (its own git worktree)", runWorkspace},
		{"console", "[ID]", "open the web console for this supervisor (prints a one-time link)", runConsole},
		{"schema", "", "print the API's JSON Schema, OpenAPI document or TypeScript types", runSchema},
		{"doctor", "", "check this machine can run a supervisor; says what to fix", runDoctor},
		{"health", "", "print the running supervisor's health; exit 1 when it is not ready", runHealth},
		{"graph", "open|next|run|submit|retry|status", "graph runs over sessions: plan, spec, critique, implement, test, gate, report", runGraph},
		{"mcp", "", "serve Corral's MCP tools (graph runs, sessions) on stdio", runMCP},
		{"engines", "", "show the engines, their models and settings, and whether a session on each could start", runEngines},
		{"version", "", "print this program's version and build", runVersion},
		{"completion", "bash|zsh|fish", "print the shell completion script for bash, zsh or fish", runCompletion},
		{"creds", "ls|set ITEM|rm ITEM", "manage the credentials sessions get (keyring or credentials file)", runCreds},
		{"attach", "ID [-- COMMAND...]", "attach this terminal to a session's terminal (detach: " + detachHelp + ")", runAttach},
	}
}

// Main runs the command line args (without the program name) and returns
// the exit status: 0 on success, 1 when the work failed, 2 on bad usage.
func Main(args []string, stdout, stderr io.Writer, ext ...External) int {
	return mainWith(os.Stdin, args, stdout, stderr, ext...)
}

func mainWith(stdin io.Reader, args []string, stdout, stderr io.Writer, ext ...External) int {
	cmds := commands()
	if len(args) == 0 {
		usage(stderr, cmds, ext)
		return 2
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		if len(args) > 1 {
			return mainWith(stdin, []string{args[1], "--help"}, stdout, stderr, ext...)
		}
		usage(stdout, cmds, ext)
		return 0
	}
	name, rest := args[0], args[1:]
	for _, x := range ext {
		if x.Name == name {
			return x.Main(rest, stdout, stderr)
		}
	}
	for _, c := range cmds {
		if c.name != name {
			continue
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if name == "serve" {
			// serve handles its own signals: they start a graceful stop.
			stop()
			ctx = context.Background()
		}
		e := &env{stdin: stdin, stdout: stdout, stderr: stderr, json: wantsJSON(rest), ext: ext}
		err := c.run(ctx, e, rest)
		var ue usageError
		var status exitStatus
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &status):
			return int(status)
		case errors.As(err, &ue):
			if e.json {
				e.emitError(wire.Errorf(wire.CodeBadRequest, "%v", ue.err))
				return 2
			}
			fmt.Fprintf(stderr, "supervisor %s: %v\nRun 'supervisor %s --help' for usage.\n", name, ue.err, name)
			return 2
		default:
			if e.json {
				e.emitError(err)
				return 1
			}
			fmt.Fprintf(stderr, "supervisor %s: %s\n", name, oneLine(err.Error()))
			return 1
		}
	}
	fmt.Fprintf(stderr, "supervisor: unknown command %q\n", name)
	usage(stderr, cmds, ext)
	return 2
}

func usage(w io.Writer, cmds []subcommand, ext []External) {
	fmt.Fprintln(w, "Usage: supervisor COMMAND [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	type row struct{ name, summary string }
	var rows []row
	for _, c := range cmds {
		rows = append(rows, row{strings.TrimSpace(c.name + " " + c.args), c.summary})
	}
	var extra []row
	for _, x := range ext {
		extra = append(extra, row{x.Name + " ...", x.Summary})
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i].name < extra[j].name })
	for _, r := range append(rows, extra...) {
		fmt.Fprintf(w, "  %-34s %s\n", r.name, r.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Client commands find the daemon through --state DIR, else $CORRAL_STATE,")
	fmt.Fprintln(w, "else $XDG_STATE_HOME/corral, else ~/.local/state/corral.")
	fmt.Fprintln(w, "Run 'supervisor COMMAND --help' for a command's flags.")
}

// exitStatus ends a command with a status of its choosing and no further
// message (print mode and attach pass on their program's status).
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// usageError is a mistake in the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// newFlags returns a flag set whose usage names the command and its
// positional arguments.
func newFlags(e *env, name, args, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	// --json may already be known (wantsJSON): defining the flag must
	// not forget it.
	asJSON := e.json
	fs.BoolVar(&e.json, "json", false, jsonHelp)
	e.json = asJSON
	e.flags = fs
	fs.Usage = func() {
		if e.json {
			return // the envelope says what was wrong
		}
		out := fs.Output()
		fmt.Fprintf(out, "Usage: supervisor %s [flags] %s\n\n%s\n\nFlags:\n", name, args, summary)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags anywhere among the arguments (flag alone stops at the
// first positional one) and returns the positional arguments. After "--"
// everything is positional.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err}
		}
		rest := fs.Args()
		consumed := args[:len(args)-len(rest)]
		if len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/corral-dev/corral/internal/supervisor/daemon"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// conn holds the flags that say where the daemon is.
type conn struct {
	state, url, tokenFile string
}

func (c *conn) register(fs *flag.FlagSet) {
	fs.StringVar(&c.state, "state", "", "state folder of the supervisor (default $CORRAL_STATE, else $XDG_STATE_HOME/corral, else ~/.local/state/corral)")
	fs.StringVar(&c.url, "url", "", "reach the supervisor over TCP at this http:// address instead of its socket")
	fs.StringVar(&c.tokenFile, "token-file", "", "bearer token file for --url (default <state>/token)")
}

func (c *conn) client() (*client.Client, error) {
	state, err := client.StateDir(c.state)
	if err != nil {
		return nil, err
	}
	if c.url == "" {
		return client.ForState(state)
	}
	file := c.tokenFile
	if file == "" {
		file = filepath.Join(state, daemon.TokenName)
	}
	token, err := daemon.ReadToken(file)
	if err != nil {
		return nil, err
	}
	return client.New(client.Options{BaseURL: c.url, Token: token})
}

// simple parses a client command with nflags extra flags already set up,
// checks the number of positional arguments, and returns a client.
func simple(e *env, fs *flag.FlagSet, args []string, minPos, maxPos int) (*client.Client, []string, error) {
	var cn conn
	cn.register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if len(pos) < minPos || (maxPos >= 0 && len(pos) > maxPos) {
		fs.Usage()
		return nil, nil, usagef("wrong number of arguments")
	}
	c, err := cn.client()
	if err != nil {
		return nil, nil, err
	}
	return c, pos, nil
}

func runNew(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "new", "", "Create a session and print its id alone.")
	var spec wire.Spec
	var allow multi
	var spendCap float64
	fs.StringVar(&spec.Engine, "engine", "", "engine to run: script, claude, codex, copilot, acp, or a plugin's name (required)")
	fs.StringVar(&spec.Cwd, "cwd", "", "working directory of the agent (default: the current directory)")
	fs.StringVar(&spec.Scenario, "scenario", "", "script engine scenario file (or a built-in scenario's name)")
	fs.StringVar(&spec.Model, "model", "", "model to use")
	fs.StringVar(&spec.ModelEndpoint, "model-endpoint", "", "base URL of the model API")
	fs.StringVar(&spec.Mode, "mode", "", "permission mode: review, auto or readonly")
	fs.BoolVar(&spec.Unattended, "unattended", false, "nobody answers asks: they are denied")
	fs.Float64Var(&spendCap, "spend-cap", 0, "stop the session once it has spent this many US dollars")
	fs.Var(&allow, "allow", "a gate rule to allow (repeatable)")
	fs.BoolVar(&spec.AllowNetwork, "allow-network", false, "allow network access")
	fs.StringVar(&spec.Parent, "parent", "", "id of the session this one continues")
	fs.StringVar(&spec.PluginPath, "plugin", "", "engine plugin executable")
	var settings multi
	fs.Var(&settings, "engine-config", "KEY=VALUE: one of the engine's settings (repeatable; supervisor engines -v lists them)")
	goal := fs.String("goal", "", "a goal checked, clause by clause, after every turn")
	fs.IntVar(&spec.GoalLimit, "goal-limit", 0, "goal-check turns in a row before giving up (default 20)")
	every := fs.Duration("every", 0, "timed loop: run --prompt on this schedule (needs --unattended and --spend-cap)")
	count := fs.Int("count", 0, "timed loop: stop after this many runs (0: no limit)")
	until := fs.String("until", "", "timed loop: stop at this RFC 3339 time")
	prompt := fs.String("prompt", "", "timed loop: the prompt each run sends")
	ws := workspaceFlags(fs)
	place := placementFlags(fs)
	c, _, err := simple(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	if spec.Engine == "" {
		return usagef("--engine is required")
	}
	if spec.Placement, err = place.spec(); err != nil {
		return err
	}
	if *goal != "" {
		spec.Goal = &wire.Goal{Text: *goal}
	}
	if *every > 0 || *prompt != "" {
		loop := &wire.Loop{Prompt: *prompt, EveryMS: every.Milliseconds(), Count: *count}
		if *until != "" {
			if loop.Until, err = time.Parse(time.RFC3339, *until); err != nil {
				return usagef("--until %q: want an RFC 3339 time", *until)
			}
		}
		spec.Loop = loop
	}
	spec.Allow = allow
	spec.SpendCapUSD = spendCap
	if spec.EngineConfig, err = sessionSettings(spec.Engine, settings); err != nil {
		return err
	}
	spec.Workspace = ws.spec()
	// Paths are the caller's: make them absolute before they travel.
	if spec.Cwd == "" {
		if spec.Cwd, err = os.Getwd(); err != nil {
			return err
		}
	}
	if spec.Cwd, err = filepath.Abs(spec.Cwd); err != nil {
		return err
	}
	if spec.Scenario != "" && looksLikePath(spec.Scenario) {
		if spec.Scenario, err = filepath.Abs(spec.Scenario); err != nil {
			return err
		}
	}
	if spec.PluginPath != "" {
		if spec.PluginPath, err = filepath.Abs(spec.PluginPath); err != nil {
			return err
		}
	}
	s, err := c.CreateSession(ctx, spec)
	if err != nil {
		return err
	}
	return e.emit(s, func(w io.Writer) error { _, err := fmt.Fprintln(w, s.ID); return err })
}

// looksLikePath tells a scenario file from a built-in scenario's name.
func looksLikePath(s string) bool {
	if strings.ContainsRune(s, os.PathSeparator) || strings.HasSuffix(s, ".json") || strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml") {
		return true
	}
	_, err := os.Stat(s)
	return err == nil
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func runList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "ls", "", "List sessions, most recently updated first.")
	quiet := fs.Bool("q", false, "print the ids alone, one a line")
	c, _, err := simple(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	list, err := c.Sessions(ctx)
	if err != nil {
		return err
	}
	return e.emit(list, func(w io.Writer) error {
		if *quiet {
			for _, s := range list {
				if _, err := fmt.Fprintln(w, s.ID); err != nil {
					return err
				}
			}
			return nil
		}
		return sessionTable(w, list)
	})
}

// sessionTable prints sessions as ls does.
func sessionTable(w io.Writer, list []api.Session) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tENGINE\tSTATE\tLIVE\tUPDATED\tCWD")
	for _, s := range list {
		state := "-"
		if s.Status != nil && s.Status.State != "" {
			state = string(s.Status.State)
			if s.Status.Held {
				state += " (spend cap reached)"
			}
		}
		live := "no"
		if s.Live {
			live = "yes"
		}
		updated := "-"
		if !s.UpdatedAt.IsZero() {
			updated = s.UpdatedAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Spec.Engine, state, live, updated, s.Spec.Cwd)
	}
	return tw.Flush()
}

func printJSON(w io.Writer, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}

// runCommand sends cmd and prints the reply's result, if any.
func runCommand(ctx context.Context, e *env, c *client.Client, id string, cmd command.Request) error {
	r, err := c.Command(ctx, id, cmd)
	if err != nil {
		return err
	}
	var result any
	if len(r.Result) > 0 && string(r.Result) != "null" {
		result = r.Result
	}
	return e.emit(result, func(w io.Writer) error {
		if result == nil {
			return nil
		}
		_, err := fmt.Fprintf(w, "%s\n", r.Result)
		return err
	})
}

func textCommand(name string, build func(text string) command.Request, summary string) func(context.Context, *env, []string) error {
	return func(ctx context.Context, e *env, args []string) error {
		fs := newFlags(e, name, "ID TEXT...", summary+" Words after ID are joined by spaces; put -- before text starting with -.")
		c, pos, err := simple(e, fs, args, 2, -1)
		if err != nil {
			return err
		}
		text := strings.Join(pos[1:], " ")
		if strings.TrimSpace(text) == "" {
			return usagef("the text is empty")
		}
		return runCommand(ctx, e, c, pos[0], build(text))
	}
}

var (
	runSend = textCommand("send", func(text string) command.Request { return command.Send{Text: text} },
		"Send a message; it is queued while a turn runs.")
	runSteer = textCommand("steer", func(text string) command.Request { return command.Steer{Text: text} },
		"Steer the running turn at its next tool boundary (a send when no turn runs).")
)

func runStop(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "stop", "ID", "Interrupt the running turn, deny open asks and clear the queue.")
	c, pos, err := simple(e, fs, args, 1, 1)
	if err != nil {
		return err
	}
	return runCommand(ctx, e, c, pos[0], command.Stop{})
}

func runAnswer(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "answer", "ID ASK allow|deny", "Answer an open ask.")
	note := fs.String("note", "", "a note for the agent")
	c, pos, err := simple(e, fs, args, 3, 3)
	if err != nil {
		return err
	}
	if pos[2] != command.DecisionAllow && pos[2] != command.DecisionDeny {
		return usagef("decision %q: want allow or deny", pos[2])
	}
	return runCommand(ctx, e, c, pos[0], command.Answer{AskID: pos[1], Decision: pos[2], Note: *note})
}

func runHunk(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "hunk", "ID [EDIT/]HUNK accept|reject",
		"Accept or reject a staged hunk. Name it EDIT/HUNK (e1/h2), or HUNK alone when one edit is pending (in auto mode: when the turn applied one edit).")
	note := fs.String("note", "", "a note for the agent")
	c, pos, err := simple(e, fs, args, 3, 3)
	if err != nil {
		return err
	}
	id, ref, decision := pos[0], pos[1], pos[2]
	if decision != command.DecisionAccept && decision != command.DecisionReject {
		return usagef("decision %q: want accept or reject", decision)
	}
	edit, hunk, found := strings.Cut(ref, "/")
	if !found {
		edit, hunk = "", ref
	}
	if hunk == "" || (found && edit == "") || strings.Contains(hunk, "/") {
		return usagef("hunk %q: want EDIT/HUNK (e1/h2) or HUNK (h2)", ref)
	}
	// A bare hunk leaves the edit to the runner, which knows whether
	// exactly one is pending and refuses otherwise.
	return runCommand(ctx, e, c, id, command.DecideHunk{EditID: edit, HunkID: hunk, Decision: decision, Note: *note})
}

func runStatus(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "status", "ID", "Show a session: its spec, whether a runner is live, and its status.")
	c, pos, err := simple(e, fs, args, 1, 1)
	if err != nil {
		return err
	}
	s, err := c.Session(ctx, pos[0])
	if err != nil {
		return err
	}
	return e.emit(s, func(w io.Writer) error { return printJSON(w, s) })
}

func runEvents(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "events", "ID", "Print a session's events as NDJSON, the same lines as its events.jsonl. With --json a failure ends the stream with one envelope line {\"ok\":false,\"error\":...}, as the API's NDJSON streams do.")
	from := fs.Int64("from", 1, "first seq to print")
	follow := fs.Bool("follow", false, "keep printing live events until interrupted")
	c, pos, err := simple(e, fs, args, 1, 1)
	if err != nil {
		return err
	}
	st, err := c.Events(ctx, pos[0], client.EventsOptions{From: *from, Follow: *follow})
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		line, err := st.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: the normal end of --follow
			}
			return err
		}
		if _, err := e.stdout.Write(append(line, '\n')); err != nil {
			return err
		}
	}
}

func runRemove(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "rm", "ID", "Stop a session's runner and delete the session and its folder.")
	c, pos, err := simple(e, fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := c.DeleteSession(ctx, pos[0]); err != nil {
		return err
	}
	return e.emit(nil, nil)
}

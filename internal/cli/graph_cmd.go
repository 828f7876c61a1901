package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/drivers"
	"github.com/corral-dev/corral/internal/graph/graphapi"
	"github.com/corral-dev/corral/internal/graph/service"
	"github.com/corral-dev/corral/internal/watch"
	"github.com/corral-dev/corral/pkg/client"
)

// graphCommands are the subcommands of `supervisor graph`.
var graphCommands = []struct{ name, args, summary string }{
	{"open", "REQUEST...", "open a graph run on a request; prints its id"},
	{"next", "RUN", "list the nodes that may run now and how each is routed"},
	{"run", "RUN NODE", "run one node to its verdict (blocks)"},
	{"submit", "RUN NODE", "submit the result of a node you ran yourself (JSON on stdin or --result FILE)"},
	{"retry", "RUN [SUBGOAL]", "retry a failure: a subgoal, the spec (no subgoal) or report"},
	{"status", "[RUN]", "show a run (or every run)"},
}

func graphUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: supervisor graph COMMAND [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Graph runs over sessions (docs/graph.md). Runs are kept in the state folder;")
	fmt.Fprintln(w, "their nodes run as sessions of the supervisor serving it.")
	fmt.Fprintln(w)
	for _, c := range graphCommands {
		fmt.Fprintf(w, "  %-24s %s\n", c.name+" "+c.args, c.summary)
	}
	fmt.Fprintln(w, "\nEach takes --json and the connection flags (--state, --url, --token-file).")
}

func runGraph(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		graphUsage(e.stderr)
		return usagef("which graph command?")
	}
	if args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
		// Like every command's --help, on stderr.
		graphUsage(e.stderr)
		return nil
	}
	sub, rest := args[0], args[1:]
	for _, c := range graphCommands {
		if c.name == sub {
			return graphCommand(ctx, e, c.name, c.args, c.summary, rest)
		}
	}
	graphUsage(e.stderr)
	return usagef("unknown graph command %q", sub)
}

// graphFlags are the flags every graph command takes.
type graphFlags struct {
	conn
	// open
	id, cwd, policy, engine string
	// submit
	claim, result string
}

func graphCommand(ctx context.Context, e *env, name, argsHelp, summary string, args []string) error {
	fs := newFlags(e, "graph "+name, argsHelp, summary+".")
	var f graphFlags
	f.register(fs)
	minPos, maxPos := 1, 1
	switch name {
	case "open":
		fs.StringVar(&f.id, "id", "", "the run's id (default: one is picked)")
		fs.StringVar(&f.cwd, "cwd", "", "the worktree the run works in (default: the current directory)")
		fs.StringVar(&f.policy, "policy", "", "the run's policy: a JSON file, or JSON text (docs/graph.md)")
		fs.StringVar(&f.engine, "engine", "", "the run's default engine (shorthand for a policy's engine)")
		minPos, maxPos = 1, -1
	case "run", "submit":
		minPos, maxPos = 2, 2
		fs.StringVar(&f.claim, "claim", "", "submit: the claim token graph run gave for a node routed to self")
		fs.StringVar(&f.result, "result", "-", "submit: a file holding the result object (- for stdin)")
	case "retry":
		minPos, maxPos = 1, 2
	case "status":
		minPos, maxPos = 0, 1
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < minPos || (maxPos >= 0 && len(pos) > maxPos) {
		fs.Usage()
		return usagef("wrong number of arguments")
	}
	svc, err := f.service()
	if err != nil {
		return err
	}
	var out any
	var text string
	switch name {
	case "open":
		req := graphapi.OpenRequest{RunID: f.id, Request: strings.Join(pos, " ")}
		if req.Policy, err = loadPolicy(f.policy); err != nil {
			return err
		}
		if f.engine != "" {
			req.Policy.Engine = f.engine
		}
		if req.Cwd, err = absOrWd(f.cwd); err != nil {
			return err
		}
		rep, err := svc.Open(ctx, req)
		if err != nil {
			return err
		}
		out, text = rep, rep.RunID+"\n"
	case "next":
		rep, err := svc.Next(ctx, graphapi.RunRef{RunID: pos[0]})
		if err != nil {
			return err
		}
		out, text = rep, nextText(rep)
	case "run":
		v, err := svc.Run(ctx, graphapi.NodeRef{RunID: pos[0], Node: pos[1]})
		if err != nil {
			return err
		}
		out, text = v, v.Line()+"\n"
	case "submit":
		raw, err := readResult(f.result)
		if err != nil {
			return err
		}
		v, err := svc.Submit(ctx, graphapi.SubmitRequest{RunID: pos[0], Node: pos[1], Claim: f.claim, Result: raw})
		if err != nil {
			return err
		}
		out, text = v, v.Line()+"\n"
	case "retry":
		req := graphapi.RetryRequest{RunID: pos[0]}
		if len(pos) == 2 {
			req.Subgoal = pos[1]
		}
		rep, err := svc.Retry(ctx, req)
		if err != nil {
			return err
		}
		out, text = rep, retryText(rep)
	case "status":
		req := graphapi.StatusRequest{}
		if len(pos) == 1 {
			req.RunID = pos[0]
		}
		rep, err := svc.Status(ctx, req)
		if err != nil {
			return err
		}
		out, text = rep, statusText(rep)
	}
	return e.emit(out, func(w io.Writer) error { _, err := io.WriteString(w, text); return err })
}

// service builds the graph service: the state folder's store, sessions
// through the supervisor the connection flags name.
func (f *graphFlags) service() (*service.Service, error) {
	state, err := client.StateDir(f.state)
	if err != nil {
		return nil, err
	}
	c, err := f.client()
	if err != nil {
		return nil, err
	}
	return service.New(service.Config{State: state, Sessions: drivers.Client(c), Probe: true})
}

// loadPolicy reads --policy: a file, or JSON text.
func loadPolicy(s string) (graph.Policy, error) {
	var p graph.Policy
	if s == "" {
		return p, nil
	}
	raw := []byte(s)
	if !strings.HasPrefix(strings.TrimSpace(s), "{") {
		var err error
		if raw, err = os.ReadFile(s); err != nil {
			return p, fmt.Errorf("--policy: %w", err)
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, usagef("--policy: %v", err)
	}
	return p, nil
}

func absOrWd(dir string) (string, error) {
	if dir == "" {
		return os.Getwd()
	}
	return filepath.Abs(dir)
}

// maxResultInput bounds a submitted result as read.
const maxResultInput = 2 << 20

func readResult(path string) (json.RawMessage, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxResultInput))
	if err != nil {
		return nil, err
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("the result is not JSON")
	}
	return raw, nil
}

func nextText(rep *graphapi.NextReply) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, n := range rep.Ready {
		fmt.Fprintf(tw, "ready\t%s\t%s\t%s\n", n.Node, n.Route.Engine, graph.Printable(n.Route.Reason))
	}
	for _, r := range rep.Running {
		fmt.Fprintf(tw, "running\t%s\t%s\t%d ms\n", r.Node, r.Engine, r.ElapsedMS)
	}
	for _, bl := range rep.Blocked {
		retry := ""
		if bl.Retry != nil {
			retry = "retry " + *bl.Retry
			if *bl.Retry == "" {
				retry = "retry the spec"
			}
		}
		fmt.Fprintf(tw, "blocked\t%s\t%s\t%s\n", bl.Node, retry, graph.Printable(bl.Reason))
	}
	tw.Flush()
	if b.Len() == 0 {
		return fmt.Sprintf("run %s is %s: nothing to run\n", rep.RunID, rep.State)
	}
	return b.String()
}

func retryText(rep *graphapi.RetryReply) string {
	var b strings.Builder
	switch {
	case rep.Settled != "":
		fmt.Fprintf(&b, "the budget of %q is gone (%d attempts): %s failed for good", rep.Target, rep.Budget, rep.Settled)
		if len(rep.Unreachable) > 0 {
			fmt.Fprintf(&b, "; unreachable: %s", strings.Join(rep.Unreachable, ", "))
		}
	default:
		fmt.Fprintf(&b, "attempt %d of %d: %s", rep.Attempt, rep.Budget, strings.Join(rep.Created, ", "))
	}
	fmt.Fprintf(&b, "\nrun %s", rep.State)
	if len(rep.Ready) > 0 {
		var ids []string
		for _, n := range rep.Ready {
			ids = append(ids, n.Node)
		}
		fmt.Fprintf(&b, "; ready: %s", strings.Join(ids, ", "))
	}
	b.WriteString("\n")
	return b.String()
}

func statusText(rep *graphapi.StatusReply) string {
	if rep.Run != nil {
		return watch.RenderGraph(rep.Run, watch.FlowTab, watch.PlainStyle())
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATE\tNODES\tNOW\tLAST")
	for _, s := range rep.Runs {
		var now []string
		for _, r := range s.Running {
			now = append(now, fmt.Sprintf("%s (%s, %d ms)", r.Node, r.Engine, r.ElapsedMS))
		}
		last := ""
		if s.Last != nil {
			last = s.Last.NodeID + " " + string(s.Last.State)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.ID, s.State, s.Nodes, strings.Join(now, ", "), last)
	}
	tw.Flush()
	return b.String()
}

// Package gatecli implements "gate check", the command-line face of the
// permission gate: it judges one shell command, edit, read, fetch or MCP
// call and prints the judgement as one JSON object.
package gatecli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/corral-dev/corral/pkg/gate"
)

// Exit statuses of "gate check".
const (
	ExitAllow = 0
	ExitAsk   = 1
	ExitDeny  = 2
	ExitUsage = 3 // bad usage, or no policy or worktree to judge with
)

const usage = `usage:
  gate check [--policy FILE] [--worktree DIR] [--mode M] [--unattended] -- 'COMMAND'
  gate check [flags] --edit PATH | --read PATH | --fetch URL | --mcp SERVER/TOOL

Prints the gate's judgement as one JSON object. Exit status: 0 allow,
1 ask, 2 deny, 3 bad usage.
`

// output is what "gate check" prints: the judgement and the action a
// caller must take (ask becomes permissionUnavailable when unattended).
type output struct {
	gate.Judgement
	Action gate.Action `json:"action"`
}

// Main runs "gate" with args (the words after the program name, starting
// with "check") and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	fs := flag.NewFlagSet("gate check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	policyFile := fs.String("policy", "", "JSON `file` with the session's policy (the last layer)")
	worktree := fs.String("worktree", ".", "the session's worktree `dir`")
	mode := fs.String("mode", "", "override the mode: review, auto or readonly")
	unattended := fs.Bool("unattended", false, "judge as for an unattended session")
	edit := fs.String("edit", "", "judge an edit of `path`")
	read := fs.String("read", "", "judge a read of `path`")
	fetch := fs.String("fetch", "", "judge a web fetch of `url`")
	mcp := fs.String("mcp", "", "judge a call of MCP `server/tool`")
	if err := fs.Parse(args[1:]); err != nil {
		return ExitUsage // the flag package has printed the problem
	}
	req, err := request(fs.Args(), *edit, *read, *fetch, *mcp)
	if err != nil {
		fmt.Fprintf(stderr, "gate check: %v\n", err)
		fs.Usage()
		return ExitUsage
	}
	session, err := sessionPolicy(*policyFile, *mode, *unattended)
	if err != nil {
		fmt.Fprintf(stderr, "gate check: %v\n", err)
		return ExitUsage
	}
	policy, err := gate.LoadPolicy(*worktree, &session)
	if err != nil {
		fmt.Fprintf(stderr, "gate check: %v\n", err)
		return ExitUsage
	}
	g, err := gate.New(policy, *worktree)
	if err != nil {
		fmt.Fprintf(stderr, "gate check: %v\n", err)
		return ExitUsage
	}
	j := g.Judge(req)
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false) // commands are full of < > &
	if err := enc.Encode(output{Judgement: j, Action: j.Action()}); err != nil {
		fmt.Fprintf(stderr, "gate check: write: %v\n", err)
		return ExitUsage
	}
	switch j.Decision {
	case gate.Allow:
		return ExitAllow
	case gate.Ask:
		return ExitAsk
	default:
		return ExitDeny
	}
}

// request builds the request from exactly one of: the command words, or
// one of the --edit, --read, --fetch and --mcp flags.
func request(words []string, edit, read, fetch, mcp string) (gate.Request, error) {
	var reqs []gate.Request
	if len(words) > 0 {
		reqs = append(reqs, gate.Request{Kind: gate.KindShell, Command: strings.Join(words, " ")})
	}
	if edit != "" {
		reqs = append(reqs, gate.Request{Kind: gate.KindEdit, Path: edit})
	}
	if read != "" {
		reqs = append(reqs, gate.Request{Kind: gate.KindRead, Path: read})
	}
	if fetch != "" {
		reqs = append(reqs, gate.Request{Kind: gate.KindFetch, URL: fetch})
	}
	if mcp != "" {
		server, tool, ok := strings.Cut(mcp, "/")
		if !ok || server == "" || tool == "" {
			return gate.Request{}, fmt.Errorf("--mcp %q: want SERVER/TOOL", mcp)
		}
		reqs = append(reqs, gate.Request{Kind: gate.KindMCP, Server: server, Tool: tool})
	}
	switch len(reqs) {
	case 0:
		return gate.Request{}, errors.New("nothing to judge: give a command after --, or one of --edit, --read, --fetch, --mcp")
	case 1:
		return reqs[0], nil
	}
	return gate.Request{}, errors.New("give exactly one of a command, --edit, --read, --fetch or --mcp")
}

// sessionPolicy reads the --policy file, if any, and applies --mode and
// --unattended on top of it.
func sessionPolicy(file, mode string, unattended bool) (gate.Policy, error) {
	var p gate.Policy
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return p, fmt.Errorf("policy: %w", err)
		}
		defer f.Close()
		p, err = gate.DecodePolicy(f)
		if err != nil {
			return p, fmt.Errorf("policy %s: %w", file, err)
		}
	}
	if mode != "" {
		p.Mode = gate.Mode(mode)
	}
	p.Unattended = p.Unattended || unattended
	return p, p.Validate()
}

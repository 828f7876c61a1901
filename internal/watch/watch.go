package watch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"golang.org/x/term"
)

// Summary is the one-line description of the watch command.
const Summary = "show a session (or every session) as a live transcript; answer asks and review hunks"

// Help is the watch command's description for --help, with its keys.
const Help = `Show a session's events as a transcript a person reads at a glance, and
keep following it. Without ID, watch every session of the supervisor (each
line starts with the session's short id); new sessions join as they appear.

When stdin is a terminal (and not --no-input), watch prompts in place when
an ask opens or an edit is staged for review, and answers through the same
commands as every other shell: the first answer wins, from whichever shell.

Keys:
  y / n        allow / deny the ask; accept / reject the hunk
  a / d        accept / reject every remaining hunk of the edit
  Y N A D      the same, with a note for the agent (Enter sends, Esc cancels)
  s            steer the running turn (a message when no turn runs)
  m            send a message (queued while a turn runs)
  x            stop: interrupt the turn, deny asks, reject hunks, clear the
               queue (asks to confirm)
  q, Ctrl-C    quit watching (the session carries on)
  ?            show or hide these keys

With several sessions, s, m and x act on the session of the open prompt,
else on the one whose event came last.

The transcript is plain text, one event per line and without a spinner,
when stdout is not a terminal, NO_COLOR is set, or with --plain; there the
keys above are typed as lines: "y", "n looks wrong", "s use tabs", "x", "q".`

// Options are the watch command's flags and argument.
type Options struct {
	// Session is the session to watch; empty for every session.
	Session string
	// From is the first seq to show: 0 means from the start for one
	// session and only new events for every session.
	From int64
	// Follow keeps watching live events; false ends at the log's end.
	Follow bool
	// NoInput never prompts, even when stdin is a terminal.
	NoInput bool
	// Plain forces the plain transcript.
	Plain bool
	// Graph, when set, shows that graph run instead of sessions (its
	// Flow tab, or the one Tab names: flow or nodes).
	Graph string
	Tab   string
}

// RegisterFlags adds the watch flags to fs.
func (o *Options) RegisterFlags(fs *flag.FlagSet) {
	fs.Int64Var(&o.From, "from", 0, "first seq to show (default: the whole log of one session; new events only when watching every session)")
	fs.BoolVar(&o.Follow, "follow", true, "keep following live events; --follow=false stops at the end of the log")
	fs.BoolVar(&o.NoInput, "no-input", false, "never prompt or read keys, even when stdin is a terminal")
	fs.BoolVar(&o.Plain, "plain", false, "plain text without colour or spinner, one event per line")
	fs.StringVar(&o.Graph, "graph", "", "show this graph run (read-only): its Flow and Nodes tabs")
	fs.StringVar(&o.Tab, "tab", "flow", "with --graph: the tab to open, flow or nodes")
}

// Main runs `watch [ID] [--from N] [--follow=false] [--no-input] [--plain]`
// with the connection flags already taken out of args, and returns the
// exit status: 0 when watching ended normally, 1 on failure, 2 on a usage
// mistake.
func Main(ctx context.Context, c *client.Client, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	o.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: supervisor watch [flags] [ID]\n\n%s\n\nFlags:\n", Help)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return 2 // the flag package has said why
	case len(pos) > 1:
		fmt.Fprintf(stderr, "watch: want at most one session id, got %d arguments\n", len(pos))
		return 2
	case o.From < 0:
		fmt.Fprintf(stderr, "watch: --from %d: want a seq of 1 or more\n", o.From)
		return 2
	}
	if len(pos) == 1 {
		o.Session = pos[0]
	}
	if err := Run(ctx, c, o, stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "watch: %s\n", oneLine(err))
		return 1
	}
	return 0
}

// parseInterspersed parses flags that may come before or after the
// positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// Run watches as o says until the person quits, ctx ends, or (not
// following) the log has been read. stdin is read only when it is a
// terminal and o.NoInput is false.
func Run(ctx context.Context, c *client.Client, o Options, stdin io.Reader, stdout, stderr io.Writer) error {
	if o.From < 0 {
		return fmt.Errorf("--from %d: want a seq of 1 or more", o.From)
	}
	cfg := config{
		Options:     o,
		plain:       o.Plain || !isTerminal(stdout) || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb",
		interactive: !o.NoInput && isTerminal(stdin),
		retry:       5 * time.Second,
	}
	if !cfg.interactive {
		stdin = nil
	}
	if o.Graph != "" {
		return runGraph(ctx, cfg, c, stdin, stdout)
	}
	return run(ctx, cfg, clientSource{c}, c, stdin, stdout, stderr)
}

// Sender sends a control command to a session; *client.Client is one.
type Sender interface {
	Command(ctx context.Context, id string, req command.Request) (*wire.Reply, error)
}

// config is how this run watches.
type config struct {
	Options
	plain       bool // the plain transcript, read line by line
	interactive bool // prompts and keys
	retry       time.Duration
}

// firstSeq is the seq the feed shows from.
func (c config) firstSeq() int64 {
	switch {
	case c.From > 0:
		return c.From
	case c.Session == "":
		return liveOnly
	}
	return 1
}

func run(ctx context.Context, cfg config, src Source, snd Sender, stdin io.Reader, stdout, stderr io.Writer) error {
	if cfg.plain {
		return runPlain(ctx, cfg, src, snd, stdin, stdout, stderr)
	}
	return runTUI(ctx, cfg, src, snd, stdin, stdout)
}

// startFeed runs a feed in the background; stop ends it and waits.
func startFeed(ctx context.Context, cfg config, src Source) (items <-chan item, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan item, 64)
	f := &feed{src: src, from: cfg.firstSeq(), follow: cfg.Follow, retry: cfg.retry, out: ch}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if cfg.Session != "" {
			f.one(ctx, cfg.Session)
		} else {
			f.all(ctx)
		}
	}()
	return ch, func() {
		cancel()
		<-done
	}
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

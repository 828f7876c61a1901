package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/muesli/cancelreader"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// resetModes undoes what a program on the session's terminal may have left
// switched on in this terminal: mouse reporting, bracketed paste, a hidden
// cursor, colours. Each is harmless when it was off.
const resetModes = "\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?25h\x1b[0m"

const attachSummary = "Attach this terminal to a terminal of session ID: the session's shell (or COMMAND, put after --, " +
	"when the terminal is not running yet), in raw mode, following this window's size. " +
	"Detach with " + detachHelp + " (Ctrl-] twice types one Ctrl-]); the terminal's program keeps running. " +
	"When the program ends, attach exits with its exit status (128+N for signal N)."

func runAttach(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "attach", "ID [-- COMMAND...]", attachSummary)
	readOnly := fs.Bool("read-only", false, "watch without typing; keys other than "+detachHelp+" are ignored")
	termID := fs.String("term", client.DefaultTermID, "terminal id; clients of one id share one program")
	c, pos, err := simple(e, fs, args, 1, -1)
	if err != nil {
		return err
	}
	return attach(ctx, e, c, pos[0], client.TermOptions{TermID: *termID, ReadOnly: *readOnly, Command: pos[1:]})
}

// attachment is one `supervisor attach` under way.
type attachment struct {
	e     *env
	t     *client.Terminal
	fd    int
	owner bool
}

// result is how an attachment ended: the program's exit, a detach, or a
// failure.
type result struct {
	exit     *client.TermExit
	detached bool
	err      error
}

func attach(ctx context.Context, e *env, c *client.Client, id string, opts client.TermOptions) error {
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return errors.New("standard input is not a terminal: run attach in an interactive terminal")
	}
	if cols, rows, err := term.GetSize(fd); err == nil && cols > 0 && rows > 0 {
		opts.Cols, opts.Rows = clampSize(cols), clampSize(rows)
	}
	// A closed window (SIGHUP) detaches like a signal to stop.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stop()
	t, err := c.AttachTerminal(ctx, id, opts)
	if err != nil {
		return err
	}
	defer t.Close()
	a := &attachment{e: e, t: t, fd: fd, owner: t.Role() == api.RoleOwner}
	switch {
	case a.owner:
		fmt.Fprintf(e.stderr, "[attached to %s/%s; detach with %s]\n", id, t.TermID(), detachHelp)
	case opts.ReadOnly:
		fmt.Fprintf(e.stderr, "[watching %s/%s read-only; detach with %s]\n", id, t.TermID(), detachHelp)
	default:
		fmt.Fprintf(e.stderr, "[another client owns %s/%s: watching read-only; detach with %s]\n", id, t.TermID(), detachHelp)
	}

	old, err := term.MakeRaw(fd)
	if err != nil {
		return fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	var screen altScreen
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		if err := term.Restore(fd, old); err != nil {
			fmt.Fprintf(e.stderr, "supervisor attach: restore the terminal: %v\n", err)
		}
		reset := resetModes
		if screen.on {
			reset = "\x1b[?1049l" + reset
		}
		io.WriteString(e.stdout, reset)
	}
	// Even a panic gives the terminal back.
	defer restore()
	res := a.run(ctx, &screen)
	// The terminal comes back before the messages below, so they read
	// normally.
	restore()

	switch {
	case res.exit != nil:
		code := res.exit.Code
		if res.exit.Signal != "" {
			code = 128 + int(unix.SignalNum(res.exit.Signal))
			fmt.Fprintf(e.stderr, "\n[the program was killed by %s]\n", res.exit.Signal)
		}
		if code == 0 {
			return nil
		}
		return exitStatus(code)
	case res.detached:
		fmt.Fprintf(e.stderr, "\n[detached from %s/%s; the program keeps running]\n", id, t.TermID())
		return nil
	case ctx.Err() != nil:
		fmt.Fprintf(e.stderr, "\n[detached from %s/%s: interrupted]\n", id, t.TermID())
		return exitStatus(1)
	default:
		return res.err
	}
}

// clampSize fits a window dimension into the range a terminal size takes.
func clampSize(n int) uint16 {
	return uint16(min(max(n, 1), 0xffff))
}

// run relays the terminal until its program ends, the user detaches, the
// stream fails or ctx ends. Every goroutine it starts has ended when it
// returns.
func (a *attachment) run(ctx context.Context, screen *altScreen) result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan result, 3)
	in, err := cancelreader.NewReader(os.Stdin)
	if err != nil {
		return result{err: fmt.Errorf("read the terminal: %w", err)}
	}
	defer in.Close()

	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		done <- a.output(ctx, screen)
	}()
	go func() {
		defer wg.Done()
		done <- a.input(ctx, in)
	}()
	go func() {
		defer wg.Done()
		a.followSize(ctx)
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
	}
	cancel()
	in.Cancel()
	// Closing unblocks an output loop waiting for the next frame.
	a.t.Close()
	wg.Wait()
	return res
}

// output copies the terminal's stream to stdout.
func (a *attachment) output(ctx context.Context, screen *altScreen) result {
	for {
		ev, err := a.t.Next(ctx)
		if err != nil {
			return result{err: fmt.Errorf("terminal stream ended: %w", err)}
		}
		switch {
		case ev.Output != nil:
			screen.scan(ev.Output)
			if _, err := a.e.stdout.Write(ev.Output); err != nil {
				return result{err: fmt.Errorf("write to the terminal: %w", err)}
			}
		case ev.Notice != nil:
			fmt.Fprintf(a.e.stderr, "\r\n[supervisor: %s]\r\n", ev.Notice.Message)
		case ev.Exit != nil:
			return result{exit: ev.Exit}
		}
	}
}

// input sends typed keys to the terminal until the detach sequence.
func (a *attachment) input(ctx context.Context, in io.Reader) result {
	var keys detachKeys
	buf := make([]byte, 4096)
	var out []byte
	hinted := false
	for {
		n, err := in.Read(buf)
		if n > 0 {
			var detach bool
			out, detach = keys.feed(out[:0], buf[:n])
			if len(out) > 0 {
				if a.owner {
					if err := a.t.Input(ctx, out); err != nil {
						return result{err: err}
					}
				} else if !hinted {
					hinted = true
					fmt.Fprintf(a.e.stderr, "\r\n[read-only: keys are not sent; detach with %s]\r\n", detachHelp)
				}
			}
			if detach {
				return result{detached: true}
			}
		}
		if err != nil {
			if errors.Is(err, cancelreader.ErrCanceled) {
				return result{}
			}
			if errors.Is(err, io.EOF) {
				return result{err: errors.New("the terminal closed its input")}
			}
			return result{err: fmt.Errorf("read the terminal: %w", err)}
		}
	}
}

// followSize passes this window's size changes on to the terminal (the
// owner's only: the terminal has one size, the owner's).
func (a *attachment) followSize(ctx context.Context) {
	if !a.owner {
		return
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	for {
		select {
		case <-ctx.Done():
			return
		case <-winch:
		}
		cols, rows, err := term.GetSize(a.fd)
		if err != nil || cols <= 0 || rows <= 0 {
			continue
		}
		if err := a.t.Resize(ctx, clampSize(cols), clampSize(rows)); err != nil {
			return
		}
	}
}

package watch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/muesli/cancelreader"
)

// runPlain writes the plain transcript, one event per line, and reads
// typed lines from stdin when it is given.
func runPlain(ctx context.Context, cfg config, src Source, snd Sender, stdin io.Reader, stdout, stderr io.Writer) error {
	c := newCore(PlainStyle(), cfg.Session)
	items, stopFeed := startFeed(ctx, cfg, src)
	defer stopFeed()

	var lines <-chan string
	if stdin != nil {
		ch, stopReading, err := readLines(stdin)
		if err != nil {
			return err
		}
		defer stopReading()
		lines = ch
		fmt.Fprintln(stderr, "watch: type ? and Enter for the keys")
	}

	d := newDispatcher(ctx, snd)
	defer d.close()

	var shown *Prompt
	for {
		select {
		case <-ctx.Done():
			return nil
		case it := <-items:
			if it.err != nil {
				return it.err
			}
			if err := writeLines(stdout, c.apply(it)); err != nil {
				return err
			}
			if it.done {
				return nil
			}
		case line, ok := <-lines:
			if !ok {
				lines = nil // stdin ended: keep watching without it
				continue
			}
			a, err := parseLine(line)
			if err != nil {
				fmt.Fprintf(stderr, "watch: %s\n", err)
				continue
			}
			switch a.kind {
			case actQuit:
				return nil
			case actHelp:
				fmt.Fprintln(stderr, Help)
				shown = nil // show the prompt again under the help
				continue
			}
			reqs, err := c.requests(a)
			if err != nil {
				fmt.Fprintf(stderr, "watch: %s\n", err)
				continue
			}
			d.send(reqs...)
		case r := <-d.results:
			if msg := c.result(r.req, r.err); msg != "" {
				fmt.Fprintf(stderr, "watch: %s\n", msg)
			}
		}
		if lines != nil {
			if cur := c.prompts.Current(); cur != shown {
				if cur != nil {
					fmt.Fprintln(stderr, c.prefixText(cur.Session, plainPrompt(cur, c.prompts.Waiting())))
				}
				shown = cur
			}
		}
	}
}

// plainPrompt asks for a decision in one line.
func plainPrompt(p *Prompt, waiting int) string {
	var b strings.Builder
	if p.IsAsk() {
		fmt.Fprintf(&b, "? %s %s? y allow · n deny", clean(p.Ask.AskID), askWhat(*p.Ask))
	} else {
		fmt.Fprintf(&b, "? %s %s/%s (%d of %d): y accept · n reject · a accept all · d reject all",
			clean(p.Path), clean(p.EditID), clean(p.Hunk.ID), p.Index, p.Count)
	}
	b.WriteString(" · a note may follow the letter")
	if waiting > 0 {
		fmt.Fprintf(&b, " · %d more waiting", waiting)
	}
	return b.String()
}

func writeLines(w io.Writer, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
	return err
}

// readLines reads stdin line by line in the background; stop ends the
// reading and waits for it, even while a read blocks on a terminal.
func readLines(r io.Reader) (lines <-chan string, stop func(), err error) {
	cr, err := cancelreader.NewReader(r)
	if err != nil {
		return nil, nil, fmt.Errorf("read stdin: %w", err)
	}
	ch := make(chan string)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		sc := bufio.NewScanner(cr)
		for sc.Scan() {
			select {
			case ch <- sc.Text():
			case <-quit:
				return
			}
		}
	}()
	return ch, func() {
		close(quit)
		// A reader that cannot be cancelled (not a file) ends the
		// goroutine when it reaches its end; waiting for that could block
		// for ever.
		if cr.Cancel() {
			<-done
		}
		cr.Close()
	}, nil
}

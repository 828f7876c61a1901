package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
)

// PrintResult is what a print-mode run ends with.
type PrintResult struct {
	// Answer is the final assistant text of the last turn.
	Answer string
	// Failure is the last failure event, if any.
	Failure *event.FailureData
	// Outcome is the last turn's outcome.
	Outcome string
}

// OK reports whether the run succeeded.
func (p PrintResult) OK() bool { return p.Failure == nil && p.Outcome == "done" }

// RunPrint runs one prompt to its end, goal checks included, and returns the
// final answer: print mode, the way scripts and CI call an agent. Print mode
// is unattended: an ask fails at once with permissionUnavailable. When
// stream is not nil every event line is copied to it.
func RunPrint(ctx context.Context, opts Options, prompt string, stream io.Writer) (PrintResult, error) {
	opts.Spec.Unattended = true
	var mu sync.Mutex
	var res PrintResult
	changed := make(chan struct{}, 1)
	opts.Mirror = func(b eventlog.Batch) {
		mu.Lock()
		for _, line := range b.Lines {
			if stream != nil {
				stream.Write(append(append([]byte{}, line...), '\n'))
			}
			var ev event.Event
			if json.Unmarshal(line, &ev) != nil {
				continue
			}
			switch ev.Type {
			case event.AssistantText:
				var d event.TextData
				if json.Unmarshal(ev.Data, &d) == nil {
					res.Answer = d.Text
				}
			case event.TurnStarted:
				res.Answer = ""
			case event.Failure:
				var d event.FailureData
				if json.Unmarshal(ev.Data, &d) == nil {
					res.Failure = &d
				}
			case event.TurnEnded:
				var d event.TurnEndedData
				if json.Unmarshal(ev.Data, &d) == nil {
					res.Outcome = d.Outcome
				}
			}
		}
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	r, err := New(opts)
	if err != nil {
		return res, err
	}
	defer r.Close()
	if err := r.Start(ctx); err != nil {
		return res, err
	}
	if reply := r.Do(ctx, command.Send{Text: prompt}); !reply.OK {
		return res, reply.Err()
	}
	for {
		select {
		case <-changed:
		case <-r.turnDone:
		case <-ctx.Done():
			r.stop(context.Background(), "user")
			return res, ctx.Err()
		}
		if r.idle() {
			if err := r.Flush(); err != nil {
				return res, err
			}
			mu.Lock()
			defer mu.Unlock()
			if res.Outcome == "" {
				return res, fmt.Errorf("the session went idle without a turn")
			}
			return res, nil
		}
	}
}

// idle reports whether no turn runs or settles and nothing in the queue can
// run, after at least one turn.
func (r *Runner) idle() bool { return r.turns.idle() }

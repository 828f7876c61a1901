package copilot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
)

// Interrupt stops the running turn with session.abort. Permission requests
// still waiting for the runner are cancelled and answered with a refusal,
// so nothing stays pending in the CLI.
func (e *Engine) Interrupt(ctx context.Context) error {
	e.mu.Lock()
	t, c := e.turn, e.cli
	if t == nil || t.finished || c == nil {
		e.mu.Unlock()
		return nil
	}
	t.stopping = true
	for _, p := range e.perms {
		if p.turn == t {
			p.cancel()
		}
	}
	e.mu.Unlock()
	if err := e.abort(ctx, c, t); err != nil {
		e.mu.Lock()
		finished := t.finished
		e.mu.Unlock()
		if finished {
			return nil // it ended anyway, for example because the CLI died
		}
		return fmt.Errorf("copilot: stop: %w", err)
	}
	return nil
}

// abort sends session.abort and waits for its answer. t.abortAcked is set
// in stream order, so a run of this turn that starts after it is aborted
// again.
func (e *Engine) abort(ctx context.Context, c *cli, t *turn) error {
	replied := make(chan error, 1)
	err := c.conn.Go(methodSessionAbort, sessionIDParams{SessionID: e.sessionID}, func(_ json.RawMessage, err error) {
		if err == nil {
			e.mu.Lock()
			t.abortAcked = true
			e.mu.Unlock()
		}
		replied <- err
	})
	if err != nil {
		return err
	}
	select {
	case err := <-replied:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Steer delivers text into the running turn with session.send in immediate
// mode: the CLI hands it to the model before its next request in this turn.
func (e *Engine) Steer(ctx context.Context, text string) error {
	e.mu.Lock()
	t, c := e.turn, e.cli
	if t == nil || t.finished || t.stopping || c == nil {
		e.mu.Unlock()
		return engine.ErrNoTurn
	}
	// Counted before sending: the turn does not end on an idle until the
	// CLI has taken every steer, so a steer that lands as the turn ends
	// still belongs to it.
	t.steersInFlight++
	id := e.sessionID
	e.mu.Unlock()

	replied := make(chan error, 1)
	settle := func(messageID string, err error) {
		e.mu.Lock()
		t.steersInFlight--
		if err == nil {
			t.steerIDs[messageID] = true
			if !t.seen[messageID] {
				t.steers[messageID] = true
			}
		}
		// A CLI that went away ends the turn through onGone instead.
		finish := !errors.Is(err, jsonrpc.ErrClosed) && t.idleDeferred && t.steersInFlight == 0 &&
			len(t.steers) == 0 && e.finishLocked(t)
		e.mu.Unlock()
		if finish {
			close(t.done)
		}
	}
	err := c.conn.Go(methodSessionSend, sendParams{SessionID: id, Prompt: text, Mode: "immediate"}, func(raw json.RawMessage, err error) {
		var res sendResult
		if err == nil {
			if uerr := json.Unmarshal(raw, &res); uerr != nil {
				err = fmt.Errorf("decode result: %w", uerr)
			}
		}
		settle(res.MessageID, err)
		replied <- err
	})
	if err != nil {
		settle("", err)
		return fmt.Errorf("copilot: steer: %w", err)
	}
	select {
	case err := <-replied:
		if err != nil {
			return fmt.Errorf("copilot: steer: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("copilot: steer: %w", ctx.Err())
	}
}

package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/rpc"
	"sync"
	"time"
)

// Named timeouts of the call machinery.
const (
	// cancelWait is how long a caller whose context ended waits for the
	// other side to answer the cancelled call before giving up on it.
	cancelWait = 5 * time.Second
	// earlyCancelTTL is how long a Cancel that arrived before its call
	// (net/rpc serves each request on its own goroutine, so the two can
	// race) is remembered.
	earlyCancelTTL = time.Minute
)

// errCancelUnanswered is a call whose context ended and that the other side
// did not answer within cancelWait.
var errCancelUnanswered = fmt.Errorf("the call was cancelled and not answered within %s", cancelWait)

// calls tracks the contexts of the calls a side is serving, so the other
// side can cancel them by id.
type calls struct {
	mu     sync.Mutex
	active map[uint64]context.CancelFunc
	early  map[uint64]time.Time
}

func newCalls() *calls {
	return &calls{active: map[uint64]context.CancelFunc{}, early: map[uint64]time.Time{}}
}

// begin returns the context for serving call id, derived from parent, and
// the function that ends it.
func (c *calls) begin(parent context.Context, id uint64) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.early[id]; ok {
		delete(c.early, id)
		cancel()
		return ctx, cancel
	}
	c.active[id] = cancel
	return ctx, func() {
		c.mu.Lock()
		delete(c.active, id)
		c.mu.Unlock()
		cancel()
	}
}

// cancel cancels call id, or remembers the cancel if the call has not begun.
func (c *calls) cancel(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cancel, ok := c.active[id]; ok {
		cancel()
		return
	}
	now := time.Now()
	for old, at := range c.early {
		if now.Sub(at) > earlyCancelTTL {
			delete(c.early, old)
		}
	}
	c.early[id] = now
}

// invoke calls method on c. When ctx ends first it sends Plugin.Cancel for
// call id and waits up to cancelWait for the reply, which then tells how
// the cancelled call ended.
func invoke(ctx context.Context, c *rpc.Client, method string, id uint64, args, reply any) error {
	call := c.Go(method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		return transportErr(call.Error)
	case <-ctx.Done():
	}
	c.Go("Plugin.Cancel", CancelArgs{Call: id}, new(bool), make(chan *rpc.Call, 1))
	t := time.NewTimer(cancelWait)
	defer t.Stop()
	select {
	case <-call.Done:
		return transportErr(call.Error)
	case <-t.C:
		return errCancelUnanswered
	}
}

// transportErr marks an error that ends the connection with errPluginGone.
// A *rpc.ServerError (the other side refused the call) and nil pass
// through; anything else (a closed or reset connection, a reply that does
// not decode) leaves the connection unusable.
func transportErr(err error) error {
	if err == nil {
		return nil
	}
	var se rpc.ServerError
	if errors.As(err, &se) {
		return err
	}
	return fmt.Errorf("%w: %v", errPluginGone, err)
}

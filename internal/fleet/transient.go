package fleet

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// When a NATS server dies, the streams and buckets it led have no leader
// until the others elect one, which takes them 4 to 9 seconds; meanwhile
// JetStream requests about them time out or are refused as unavailable.
// Readers and writers that can wait do: they try again for a while rather
// than fail a request a moment later would have served.

// transientFor bounds how long a request waits out an election.
const transientFor = 30 * time.Second

// errTryAgain is a state a moment changes (a key on its way out).
var errTryAgain = errors.New("try again")

// transient reports an error that a leader election explains, or
// errTryAgain.
func transient(err error) bool {
	if errors.Is(err, errTryAgain) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.Code == 503 {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected)
}

// retry runs fn until it succeeds, fails for good, ctx ends or
// transientFor has passed; each attempt has at most Timing.attempt (a
// request lost with a dying server is not waited for the whole request
// timeout).
func (f *Fabric) retry(ctx context.Context, fn func(ctx context.Context) error) error {
	give := time.Now().Add(transientFor)
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, f.timing.attempt(attempt))
		err := fn(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !transient(err) || time.Now().After(give) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

package fleet

import (
	"bytes"
	"testing"

	"github.com/nats-io/nats.go"
)

// FuzzReplayMessage feeds the replica reader messages as the network could
// bring them: any headers, any bytes. It must never panic, and what it
// delivers must be in seq order, from the seq asked for on.
func FuzzReplayMessage(f *testing.F) {
	f.Add("1", "2", "", []byte("{\"seq\":1,\"type\":\"a\"}\n{\"seq\":2,\"type\":\"b\"}\n"), int64(1))
	f.Add("5", "5", "1/2", []byte("{\"seq\":5,\"type\":\"te"), int64(1))
	f.Add("5", "5", "2/2", []byte("xt\"}\n"), int64(5))
	f.Add("3", "1", "", []byte("{\"seq\":3}\n"), int64(2))
	f.Add("x", "", "0/0", []byte("\n\n{"), int64(0))
	f.Fuzz(func(t *testing.T, first, last, part string, data []byte, from int64) {
		r := &replay{follow: true, next: max(from, 1)}
		h := nats.Header{}
		h.Set(hdrFirst, first)
		h.Set(hdrLast, last)
		if part != "" {
			h.Set(hdrPart, part)
		}
		// The same message twice: a piece that repeats, a batch replayed.
		for range 2 {
			if err := r.take(h, bytes.Clone(data)); err != nil {
				return
			}
			prev := r.next - 1
			for {
				ev, ok, err := r.nextLine()
				if err != nil || !ok {
					break
				}
				if ev.Seq <= prev || ev.Seq < from {
					t.Fatalf("delivered seq %d after %d (from %d)", ev.Seq, prev, from)
				}
				prev = ev.Seq
			}
		}
	})
}

// FuzzReplicaHeaders reads any header values without panicking, and
// accepts only a sane range.
func FuzzReplicaHeaders(f *testing.F) {
	f.Add("1", "1024", "")
	f.Add("7", "7", "3/9")
	f.Add("-1", "9223372036854775807", "9/3")
	f.Fuzz(func(t *testing.T, first, last, part string) {
		h := nats.Header{}
		h.Set(hdrFirst, first)
		h.Set(hdrLast, last)
		h.Set(hdrPart, part)
		a, b, k, n, err := replicaHeaders(h)
		if err != nil {
			return
		}
		if a < 1 || b < a || (n > 0 && (k < 1 || k > n)) {
			t.Fatalf("accepted first %d last %d part %d/%d", a, b, k, n)
		}
	})
}

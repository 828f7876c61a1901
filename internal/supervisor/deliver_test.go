package supervisor

import (
	"testing"

	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// TestTermDataForEveryClientGivesEachSinkItsOwnBuffer: output that names
// no client reaches every client's sink, and a sink may recycle the buffer
// it got (Manager.RecycleTermData), so no two sinks may share one.
func TestTermDataForEveryClientGivesEachSinkItsOwnBuffer(t *testing.T) {
	got := map[string][]byte{}
	sinkFor := func(client string) func(wire.Message) {
		return func(m wire.Message) { got[client] = m.(*wire.TermData).Data }
	}
	c := &child{log: zap.NewNop(), pending: map[string]chan wire.Message{}, terms: map[termKey]func(wire.Message){
		{"t", "a"}: sinkFor("a"), {"t", "b"}: sinkFor("b"), {"t", "c"}: sinkFor("c"), {"other", "d"}: sinkFor("d"),
	}}
	data := []byte("output")
	c.deliver("", &wire.TermData{TermID: "t", Data: data})
	if len(got) != 3 || got["d"] != nil {
		t.Fatalf("delivered to %d sinks (%v), want the terminal's 3", len(got), got)
	}
	seen := map[*byte]string{}
	for client, p := range got {
		if string(p) != "output" {
			t.Errorf("sink %s got %q", client, p)
		}
		if other, ok := seen[&p[0]]; ok {
			t.Errorf("sinks %s and %s share one buffer", client, other)
		}
		seen[&p[0]] = client
	}
}

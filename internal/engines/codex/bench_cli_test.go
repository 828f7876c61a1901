package codex

import (
	"context"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// The timing goals of the adapter, measured with the real CLI against the
// loopback fake model:
//
//	go test -run '^$' -bench . -benchtime 5x ./internal/engines/codex/
//
// Start covers locating and checking the CLI, spawning app-server, the
// handshake and thread/start; a failing endpoint must fail the turn within
// seconds; interrupt and steer should take effect in well under a second.

func BenchmarkStart(b *testing.B) {
	r := newRig(b, script(), nil)
	for b.Loop() {
		eng := New()
		ctx, cancel := context.WithTimeout(context.Background(), turnDeadline)
		if _, err := eng.Start(ctx, r.Opts); err != nil {
			b.Fatal(describe(err))
		}
		cancel()
		eng.Close()
	}
}

func BenchmarkTextTurn(b *testing.B) {
	sc := script()
	sc.Fallback = &fakemodel.Step{Text: "Hello from the fake model.", Chunks: 3}
	r := newRig(b, sc, nil)
	r.start("")
	for b.Loop() {
		r.MustTurn("hello")
	}
}

func BenchmarkFailureDeadEndpoint(b *testing.B) {
	benchFailure(b, func(r *rig) { r.Opts.ModelEndpoint = deadEndpoint(b) }, event.FailEngineError)
}

func BenchmarkFailure401(b *testing.B) {
	benchFailure(b, func(r *rig) { r.Opts.Credentials = map[string]string{CredentialItem: "sk-wrong"} }, event.FailSignInExpired)
}

func BenchmarkFailure500(b *testing.B) {
	benchFailure(b, func(r *rig) {}, event.FailEngineError, fakemodel.Step{Error: &fakemodel.ErrorReply{Status: 500}, Always: true})
}

func BenchmarkFailureCutStream(b *testing.B) {
	zero := 0
	benchFailure(b, func(r *rig) {}, event.FailEngineError, fakemodel.Step{Text: "partial", CutAfter: &zero, Always: true})
}

// benchFailure times one failing turn, from Turn to the failure.
func benchFailure(b *testing.B, setup func(*rig), code event.FailureCode, steps ...fakemodel.Step) {
	r := newRig(b, fakemodel.Scenario{Steps: steps}, nil)
	setup(r)
	r.start("")
	for b.Loop() {
		_, err := r.Turn("hello?")
		wantFailure(b, err, code)
	}
}

// BenchmarkInterrupt times Interrupt until Turn returns, while the model
// streams.
func BenchmarkInterrupt(b *testing.B) {
	r := newRig(b, fakemodel.Scenario{Steps: []fakemodel.Step{{
		Name: "slow", Text: "endless words ", Chunks: 10, Hold: true, HoldAfter: 5, Always: true,
	}}}, nil)
	r.start("")
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		seen := len(r.Host.OfType(event.AssistantDelta))
		done := r.GoTurn("talk")
		waitMore(b, r.Host, event.AssistantDelta, seen)
		b.StartTimer()
		t0 := time.Now()
		r.interrupt()
		if o := r.WaitTurn(done); !o.Res.Stopped {
			b.Fatalf("not stopped: %v", describe(o.Err))
		}
		total += time.Since(t0)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/interrupt")
}

// BenchmarkSteer times a steer while the model streams until the steered
// turn ends.
func BenchmarkSteer(b *testing.B) {
	r := newRig(b, fakemodel.Scenario{
		Steps: []fakemodel.Step{{Name: "slow", Text: "endless words ", Chunks: 10, Hold: true, HoldAfter: 5, Always: true, Match: &fakemodel.Match{LastUserContains: "talk"}}},
		Side:  []fakemodel.Step{{Name: "steered", Match: &fakemodel.Match{LastUserContains: "STEER"}, Text: "steered"}},
	}, nil)
	r.start("")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		seen := len(r.Host.OfType(event.AssistantDelta))
		done := r.GoTurn("talk")
		waitMore(b, r.Host, event.AssistantDelta, seen)
		b.StartTimer()
		r.steer("STEER: stop talking")
		if o := r.WaitTurn(done); o.Err != nil || o.Res.Text != "steered" {
			b.Fatalf("steered turn: %+v %v", o.Res, describe(o.Err))
		}
	}
}

func waitMore(b *testing.B, h *enginetest.Host, typ event.Type, seen int) {
	b.Helper()
	err := h.WaitFor(turnDeadline, string(typ), func(evs []enginetest.Event) bool {
		n := 0
		for _, e := range evs {
			if e.Type == typ {
				n++
			}
		}
		return n > seen
	})
	if err != nil {
		b.Fatal(err)
	}
}

var _ engine.Engine = (*Engine)(nil)

package claude

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// rejectingScenario answers every model request with a 401, optionally with
// the header that tells the client not to retry.
func rejectingScenario(noRetry bool) fakemodel.Scenario {
	reply := &fakemodel.ErrorReply{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"}
	if noRetry {
		reply.Headers = map[string]string{"x-should-retry": "false"}
	}
	return fakemodel.Scenario{
		Auth:  &fakemodel.Auth{APIKey: "sk-ant-the-only-valid-key", Error: reply},
		Steps: []fakemodel.Step{textStep("never", "unreachable")},
	}
}

// TestRejectedKeyIsSignInExpired: a 401 must end the turn as signInExpired
// at once, not after the CLI's minutes of retries. A plain 401 is what a
// real API answers; the CLI would retry it ten times over three minutes.
func TestRejectedKeyIsSignInExpired(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		noRetry bool
	}{
		{"plain 401", false},
		{"401 without retry", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSession(t, rejectingScenario(tc.noRetry), sessionOpts{decide: allowAll})
			_, err := s.Turn("Hello?")
			var f *engine.Failure
			if !errors.As(err, &f) || f.Code != event.FailSignInExpired {
				t.Fatalf("turn error = %v; want a signInExpired failure", err)
			}
			// At most the first attempt and one retry that raced the stop.
			if n := len(s.modelRequests()); n < 1 || n > 2 {
				t.Errorf("the CLI made %d model requests; want 1 or 2", n)
			}
			if len(s.Host.OfType(event.Retry)) != 0 {
				t.Error("a rejected key was reported as a retry")
			}
			if !s.eng.conn.alive() {
				t.Error("the CLI process ended; it stays for the next turn")
			}
		})
	}
}

// BenchmarkSignInExpired measures how long a turn takes to fail on a
// rejected key (a plain 401, which the CLI would retry for minutes); the
// goal is well under 5 s. ns/op is the mean, max-ms the slowest turn.
func BenchmarkSignInExpired(b *testing.B) {
	s := newSession(b, rejectingScenario(false), sessionOpts{decide: allowAll})
	var slowest time.Duration
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
		start := time.Now()
		_, err := s.eng.Turn(ctx, engine.TurnInput{ID: "m", Text: "Hello?"})
		slowest = max(slowest, time.Since(start))
		cancel()
		var f *engine.Failure
		if !errors.As(err, &f) || f.Code != event.FailSignInExpired {
			b.Fatalf("turn error = %v; want signInExpired", err)
		}
	}
	b.ReportMetric(float64(slowest.Milliseconds()), "max-ms")
}

// BenchmarkSignInExpiredColdStart measures the same from a session's start:
// starting the CLI, then the turn that fails.
func BenchmarkSignInExpiredColdStart(b *testing.B) {
	srv, _ := startFake(b, rejectingScenario(false), nil)
	var slowest time.Duration
	for b.Loop() {
		start := time.Now()
		s := newSession(b, fakemodel.Scenario{}, sessionOpts{decide: allowAll, srv: srv})
		_, err := s.Turn("Hello?")
		slowest = max(slowest, time.Since(start))
		var f *engine.Failure
		if !errors.As(err, &f) || f.Code != event.FailSignInExpired {
			b.Fatalf("turn error = %v; want signInExpired", err)
		}
		b.StopTimer()
		s.eng.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(slowest.Milliseconds()), "max-ms")
}

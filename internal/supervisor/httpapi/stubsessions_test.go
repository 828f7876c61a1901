package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap/zaptest"
)

// stubID is the one session stubSessions knows.
const stubID = "5e55105e5510"

// stubSessions is a Sessions holding one idle session, stubID, and no
// other: enough for the tests of the HTTP layer's own work (bodies,
// paths, status codes, error shapes), which need no runner. What those
// tests must never reach is left to the embedded nil interface, whose
// call panics.
type stubSessions struct {
	Sessions
}

func (stubSessions) LiveCount() int { return 1 }
func (stubSessions) Closing() bool  { return false }

func (stubSessions) Create(_ context.Context, spec wire.Spec) (api.Session, error) {
	spec.ID = stubID
	return api.Session{ID: stubID, Spec: spec, Live: true}, nil
}

func (s stubSessions) Get(_ context.Context, id string) (api.Session, error) {
	if err := s.known(id); err != nil {
		return api.Session{}, err
	}
	return api.Session{ID: stubID, Spec: wire.Spec{ID: stubID, Engine: "script"}, Live: true}, nil
}

func (s stubSessions) Delete(_ context.Context, id string) error { return s.known(id) }

func (s stubSessions) Command(_ context.Context, id string, _ command.Request) (*wire.Reply, error) {
	if err := s.known(id); err != nil {
		return nil, err
	}
	return wire.OKReply(struct{}{}), nil
}

func (s stubSessions) Events(_ context.Context, id string, _ int64, _ bool) (EventStream, error) {
	return nil, s.known(id)
}

func (stubSessions) known(id string) error {
	if id != stubID {
		return wire.Errorf(wire.CodeNotFound, "session %s not found", id)
	}
	return nil
}

// newStubFixture serves the API over stubSessions.
func newStubFixture(t *testing.T) *fixture {
	t.Helper()
	srv := httptest.NewServer(New(stubSessions{}, Options{Logger: zaptest.NewLogger(t)}))
	t.Cleanup(func() {
		srv.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	return &fixture{t: t, srv: srv}
}

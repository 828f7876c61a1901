package cli

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/api"
)

func TestHealthWaitAsksUntilReady(t *testing.T) {
	down := errors.New("no supervisor answers")
	cases := []struct {
		name    string
		answers []error // nil: an answer; the last one repeats
		ready   []bool
		wait    time.Duration
		wantErr bool
		asked   int
	}{
		{"answers ready after two refusals", []error{down, down, nil}, []bool{false, false, true}, time.Minute, false, 3},
		{"answers but not ready, then ready", []error{nil, nil}, []bool{false, true}, time.Minute, false, 2},
		{"never answers: the last refusal", []error{down}, []bool{false}, 200 * time.Millisecond, true, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			health := func(context.Context) (*api.HealthReply, error) {
				i := min(asked, len(tc.answers)-1)
				asked++
				if tc.answers[i] != nil {
					return nil, tc.answers[i]
				}
				return &api.HealthReply{Ready: tc.ready[i]}, nil
			}
			h, err := health(context.Background())
			h, err = waitReady(context.Background(), tc.wait, h, err, health)
			if tc.wantErr {
				if !errors.Is(err, down) {
					t.Fatalf("err %v, want the supervisor's last refusal", err)
				}
				return
			}
			if err != nil || h == nil || !h.Ready {
				t.Fatalf("health %+v, %v", h, err)
			}
			if asked != tc.asked {
				t.Fatalf("asked %d times, want %d", asked, tc.asked)
			}
		})
	}
}

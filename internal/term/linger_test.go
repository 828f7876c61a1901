package term

import (
	"strings"
	"testing"
	"time"
)

func TestPendingOutputHoldsOnlyStreamingOutput(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name  string
		batch pendingOutput
		want  bool
	}{
		{"nothing held", pendingOutput{n: 0, lastFlush: now}, false},
		{"echo after a quiet spell", pendingOutput{n: 1, lastFlush: now.Add(-time.Second)}, false},
		{"echo while output streams", pendingOutput{n: 1, lastFlush: now}, false},
		{"small batch while output streams", pendingOutput{n: lingerMin - 1, lastFlush: now, deadline: true}, false},
		{"first output ever", pendingOutput{n: 4096}, false},
		{"streaming", pendingOutput{n: 4096, lastFlush: now.Add(-lingerFor)}, true},
		{"streaming, already waiting", pendingOutput{n: 4096, lastFlush: now.Add(-time.Second), deadline: true}, true},
		{"big enough to go", pendingOutput{n: lingerBytes, lastFlush: now, deadline: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.batch.hold(now); got != tt.want {
				t.Errorf("hold = %v, want %v", got, tt.want)
			}
		})
	}
}

// The last part of a flood, held back as streaming output, goes out when
// its wait ends, though the program neither exits nor prints again.
func TestHeldOutputGoesOutWhileTheProgramWaits(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	owner, _, out := attach(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner,
		Command: shell(`read go; i=0; while [ $i -lt 3000 ]; do echo "line $i"; i=$((i+1)); done; echo last; sleep 60`)})
	input(t, owner, "go\n")
	got := out.waitForText(t, "last\r\n")
	if !strings.Contains(got, "line 2999\r\nlast\r\n") {
		t.Fatalf("output lacks the flood's end: %q", tail(got))
	}
}

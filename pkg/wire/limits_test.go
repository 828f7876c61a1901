package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestSpecLimits(t *testing.T) {
	tests := []struct {
		name  string
		spec  Spec
		field string
	}{
		{"defaults", Spec{Engine: "script"}, ""},
		{"goalLimit 5", Spec{GoalLimit: 5}, ""},
		{"goalLimit -5", Spec{GoalLimit: -5}, "goalLimit"},
		{"goalLimit 5000", Spec{GoalLimit: 5000}, "goalLimit"},
		{"compactAt 80", Spec{CompactAt: 80}, ""},
		{"compactAt 1000", Spec{CompactAt: 1000}, "compactAt"},
		{"compactAt -1", Spec{CompactAt: -1}, "compactAt"},
		{"compactAt 0.5", Spec{CompactAt: 0.5}, "compactAt"},
		{"a long goal", Spec{Goal: &Goal{Text: strings.Repeat("x", MaxGoalBytes+1)}}, "goal.text"},
		{"a long loop prompt", Spec{Loop: &Loop{Prompt: strings.Repeat("x", MaxMessageBytes+1)}}, "loop.prompt"},
	}
	for _, tc := range tests {
		err := tc.spec.CheckLimits()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadRequest) || !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("%s: %v, want bad_request naming %s", tc.name, err, tc.field)
		}
	}
}

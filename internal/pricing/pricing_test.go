package pricing

import (
	"math"
	"testing"

	"github.com/corral-dev/corral/pkg/event"
)

func TestLookupTakesTheLongestPrefixWhateverTheSpelling(t *testing.T) {
	tests := []struct {
		model string
		want  Price
		ok    bool
	}{
		{"gpt-5.5", table["gpt-5"], true},
		{"gpt-5-mini-2025", table["gpt-5-mini"], true},
		{"claude-opus-4.5", table["claude-opus-4-5"], true},
		{"claude-opus-4-1-20250805", table["claude-opus-4"], true},
		{"Claude-Sonnet-4.5", table["claude-sonnet-4"], true},
		{"claude-opus-5-5", table["claude-opus-5"], true},
		{"my-local-llama", Price{}, false},
		{"", Price{}, false},
	}
	for _, tt := range tests {
		got, ok := Lookup(tt.model)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, %v", tt.model, got, ok, tt.want, tt.ok)
		}
	}
}

// The figures Claude Code 2.1.328 itself reported for one model call against
// the fake model server: the estimate must reproduce them.
func TestEstimateMatchesWhatClaudeCodeCharges(t *testing.T) {
	tests := []struct {
		usage event.UsageData
		want  float64
	}{
		{event.UsageData{Model: "claude-opus-5-5", InputTokens: 36143, OutputTokens: 105}, 0.146672},
		{event.UsageData{Model: "claude-sonnet-5-5", InputTokens: 100, OutputTokens: 10}, 0.0003},
		{event.UsageData{Model: "claude-sonnet-4-5", InputTokens: 100, OutputTokens: 10, CacheReadTokens: 1e6, CacheWriteTokens: 1e6}, 4.05045},
		{event.UsageData{Model: "claude-opus-5-5", CacheReadTokens: 1e6}, 0.2},
		{event.UsageData{Model: "claude-fable-5-2", InputTokens: 100, OutputTokens: 10, CacheReadTokens: 1e6, CacheWriteTokens: 1e6}, 10.2012},
		{event.UsageData{Model: "claude-3-5-haiku-20241022", InputTokens: 100, OutputTokens: 10}, 0.00012},
		{event.UsageData{Model: "unknown", InputTokens: 1e6}, 0},
	}
	for _, tt := range tests {
		if got := Estimate(tt.usage); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Estimate(%+v) = %v, want %v", tt.usage, got, tt.want)
		}
	}
}

// Package pricing holds the one table of model list prices that engines
// use to estimate what a model call cost when their CLI reports tokens but
// no money (Codex, Copilot), or reports money only at a turn's end (Claude
// Code). docs/engines.md lists the table.
package pricing

import (
	"strings"

	"github.com/corral-dev/corral/pkg/event"
)

// Price is a model's list price in US dollars per million tokens.
type Price struct {
	Input       float64 // uncached input
	CachedInput float64 // input read from the prompt cache
	CacheWrite  float64 // input written to the prompt cache
	Output      float64
}

// anthropic is Anthropic's price for input and output; cache reads cost a
// tenth of input and cache writes (five-minute) a quarter more, as the
// vendor prices them and as Claude Code computes its own costs.
func anthropic(input, output float64) Price {
	return Price{Input: input, CachedInput: input / 10, CacheWrite: input * 1.25, Output: output}
}

// table maps model-name prefixes (normalized: lower case, dots as dashes)
// to prices; the longest matching prefix wins. The Claude figures are those
// Claude Code 2.1.328 charges itself (measured from its results'
// modelUsage.costUSD against the fake model server), so a turn's estimate
// comes close to the exact figure the CLI reports at the turn's end.
var table = map[string]Price{
	// OpenAI.
	"gpt-4-1":      {Input: 2.00, CachedInput: 0.50, Output: 8.00},
	"gpt-4-1-mini": {Input: 0.40, CachedInput: 0.10, Output: 1.60},
	"gpt-4-1-nano": {Input: 0.10, CachedInput: 0.025, Output: 0.40},
	"gpt-4o":       {Input: 2.50, CachedInput: 1.25, Output: 10.00},
	"gpt-4o-mini":  {Input: 0.15, CachedInput: 0.075, Output: 0.60},
	"gpt-5":        {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"gpt-5-mini":   {Input: 0.25, CachedInput: 0.025, Output: 2.00},
	"gpt-5-nano":   {Input: 0.05, CachedInput: 0.005, Output: 0.40},
	"gpt-6":        {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"gpt-daybreak": {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"codex":        {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"o3":           {Input: 2.00, CachedInput: 0.50, Output: 8.00},
	"o4-mini":      {Input: 1.10, CachedInput: 0.275, Output: 4.40},
	// Anthropic.
	"claude-3-5-haiku":  anthropic(0.80, 4.00),
	"claude-3-5-sonnet": anthropic(3.00, 15.00),
	"claude-3-7-sonnet": anthropic(3.00, 15.00),
	"claude-haiku-4":    anthropic(1.00, 5.00),
	"claude-sonnet-4":   anthropic(3.00, 15.00),
	"claude-opus-4":     anthropic(15.00, 75.00),
	"claude-opus-4-5":   anthropic(5.00, 25.00),
	"claude-haiku-5":    {Input: 0.10, CachedInput: 0.05, CacheWrite: 0.625, Output: 0.50},
	"claude-sonnet-5":   {Input: 2.00, CachedInput: 0.10, CacheWrite: 2.50, Output: 10.00},
	"claude-opus-5":     {Input: 4.00, CachedInput: 0.20, CacheWrite: 5.00, Output: 20.00},
	"claude-fable-5":    {Input: 8.00, CachedInput: 0.20, CacheWrite: 10.00, Output: 40.00},
	// Google.
	"gemini-2-5-pro":   {Input: 1.25, CachedInput: 0.31, Output: 10.00},
	"gemini-2-5-flash": {Input: 0.30, CachedInput: 0.075, Output: 2.50},
}

// normalize folds the spellings vendors and CLIs use for one model
// (claude-opus-4.5, claude-opus-4-5, Claude-Opus-4-5) into one.
func normalize(model string) string {
	return strings.ReplaceAll(strings.ToLower(model), ".", "-")
}

// Lookup returns the price of model by its longest listed prefix; ok is
// false for a model the table does not know.
func Lookup(model string) (p Price, ok bool) {
	model = normalize(model)
	best := ""
	for prefix, price := range table {
		if len(prefix) > len(best) && strings.HasPrefix(model, prefix) {
			best, p, ok = prefix, price, true
		}
	}
	return p, ok
}

// Cost is what u costs at p. u's InputTokens are the uncached input, as
// Corral counts them (cache reads and writes apart).
func (p Price) Cost(u event.UsageData) float64 {
	return (float64(u.InputTokens)*p.Input +
		float64(u.CacheReadTokens)*p.CachedInput +
		float64(u.CacheWriteTokens)*p.CacheWrite +
		float64(u.OutputTokens)*p.Output) / 1e6
}

// Estimate is what u costs at its model's list price; 0 for a model the
// table does not know.
func Estimate(u event.UsageData) float64 {
	p, ok := Lookup(u.Model)
	if !ok {
		return 0
	}
	return p.Cost(u)
}

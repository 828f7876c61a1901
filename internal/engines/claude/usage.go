package claude

import (
	"math"
	"strings"

	"github.com/corral-dev/corral/internal/pricing"
	"github.com/corral-dev/corral/pkg/event"
)

// Context windows by model, for context events before the CLI has reported
// the model's window in a result (modelUsage.contextWindow, which then takes
// over). docs/engines-claude.md keeps this table.
var contextWindows = map[string]int64{
	"claude-opus-5-5": 1_000_000,
}

// defaultContextWindow is the window of a model the table does not know;
// a "[1m]" suffix on the model name selects the one-million-token window.
const (
	defaultContextWindow = 200_000
	longContextWindow    = 1_000_000
)

// windowFor is the context window of model: what the CLI reported, else the
// table, else the default.
func windowFor(model string, learned map[string]int64) int64 {
	if w := learned[model]; w > 0 {
		return w
	}
	if w, ok := contextWindows[model]; ok {
		return w
	}
	if strings.HasSuffix(model, "[1m]") {
		return longContextWindow
	}
	return defaultContextWindow
}

// callUsage accumulates one model call's usage from its stream events:
// message_start carries the input side, message_delta the final output.
type callUsage struct {
	model string
	input, output,
	cacheRead, cacheWrite int64
}

func (c *callUsage) merge(u apiUsage) {
	if u.InputTokens != nil {
		c.input = *u.InputTokens
	}
	if u.OutputTokens != nil {
		c.output = *u.OutputTokens
	}
	if u.CacheReadInputTokens != nil {
		c.cacheRead = *u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens != nil {
		c.cacheWrite = *u.CacheCreationInputTokens
	}
}

// usageData is the call's usage event. The CLI reports no per-call cost
// (its exact cost comes with the turn's result, and the runner takes it
// over the estimates), so the event's cost is the model's list price
// (internal/pricing), marked estimated: a spend cap can trip mid-turn.
func (c *callUsage) usageData() event.UsageData {
	u := event.UsageData{
		InputTokens:      c.input,
		OutputTokens:     c.output,
		CacheReadTokens:  c.cacheRead,
		CacheWriteTokens: c.cacheWrite,
		Estimated:        true,
		Model:            c.model,
	}
	u.CostUSD = pricing.Estimate(u)
	return u
}

// contextData is how full the window is after the call: everything the
// call read plus what it wrote, which the next call reads again.
func (c *callUsage) contextData(window int64) event.ContextData {
	used := c.input + c.cacheRead + c.cacheWrite + c.output
	d := event.ContextData{UsedTokens: used, WindowTokens: window}
	if window > 0 {
		d.Percent = math.Round(float64(used)*10000/float64(window)) / 100
	}
	return d
}

// costLedger turns the CLI's cumulative total_cost_usd into per-turn costs.
type costLedger struct {
	total float64
	// known is false while the conversation's cost so far is unknown: in a
	// resumed or forked conversation until its first result.
	known bool
}

// turnCost is the cost of the turn r ends: the growth of the cumulative
// total, or, when the previous total is unknown, the CLI's own per-turn
// figure.
func (l *costLedger) turnCost(r resultFrame) float64 {
	if r.TotalCostUSD == nil {
		return sinceLastCost(r)
	}
	total := *r.TotalCostUSD
	var cost float64
	switch {
	case l.known && total >= l.total:
		cost = total - l.total
	default:
		cost = sinceLastCost(r)
	}
	l.total, l.known = total, true
	return roundCost(cost)
}

func sinceLastCost(r resultFrame) float64 {
	var sum float64
	for _, u := range r.SinceLast {
		sum += u.CostUSD
	}
	return roundCost(sum)
}

// roundCost drops the float noise of subtracting cumulative totals.
func roundCost(c float64) float64 { return math.Round(c*1e10) / 1e10 }

// resultUsage is a turn's token totals from its result.
func resultUsage(r resultFrame, model string) event.UsageData {
	u := event.UsageData{Model: model}
	if r.Usage.InputTokens != nil {
		u.InputTokens = *r.Usage.InputTokens
	}
	if r.Usage.OutputTokens != nil {
		u.OutputTokens = *r.Usage.OutputTokens
	}
	if r.Usage.CacheReadInputTokens != nil {
		u.CacheReadTokens = *r.Usage.CacheReadInputTokens
	}
	if r.Usage.CacheCreationInputTokens != nil {
		u.CacheWriteTokens = *r.Usage.CacheCreationInputTokens
	}
	return u
}

package copilot

import (
	"github.com/corral-dev/corral/internal/pricing"
	"github.com/corral-dev/corral/pkg/event"
)

// estimateCost prices one model call at its model's list price
// (internal/pricing). The CLI itself reports no money: through GitHub's
// routing it bills premium requests, and for a custom provider nothing at
// all. So a turn's cost is always an estimate (event.UsageData.Estimated),
// and a model the table does not know costs 0. The CLI's input tokens
// include the cached ones, as OpenAI reports them; those are charged at
// the cached rate.
func estimateCost(u event.UsageData) float64 {
	fresh := u.InputTokens - u.CacheReadTokens
	if fresh < 0 {
		fresh = 0
	}
	u.InputTokens = fresh
	return pricing.Estimate(u)
}

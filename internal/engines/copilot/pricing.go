package copilot

import (
	"strings"

	"github.com/corral-dev/corral/pkg/event"
)

// price is a model's list price in US dollars per million tokens.
type price struct {
	input, cachedInput, cacheWrite, output float64
}

// prices are the vendors' published per-token list prices for models the
// CLI commonly runs, keyed by model-name prefix; the longest matching
// prefix wins. The CLI itself reports no money: through GitHub's routing it
// bills premium requests, and for a custom provider nothing at all. So a
// turn's cost is always an estimate (event.UsageData.Estimated), and a model
// missing here costs 0. docs/engines-copilot.md lists the table.
var prices = map[string]price{
	"gpt-4.1":           {input: 2.00, cachedInput: 0.50, output: 8.00},
	"gpt-4.1-mini":      {input: 0.40, cachedInput: 0.10, output: 1.60},
	"gpt-4.1-nano":      {input: 0.10, cachedInput: 0.025, output: 0.40},
	"gpt-4o":            {input: 2.50, cachedInput: 1.25, output: 10.00},
	"gpt-4o-mini":       {input: 0.15, cachedInput: 0.075, output: 0.60},
	"gpt-5":             {input: 1.25, cachedInput: 0.125, output: 10.00},
	"gpt-5-mini":        {input: 0.25, cachedInput: 0.025, output: 2.00},
	"gpt-5-nano":        {input: 0.05, cachedInput: 0.005, output: 0.40},
	"o3":                {input: 2.00, cachedInput: 0.50, output: 8.00},
	"o4-mini":           {input: 1.10, cachedInput: 0.275, output: 4.40},
	"claude-haiku-4":    {input: 1.00, cachedInput: 0.10, cacheWrite: 1.25, output: 5.00},
	"claude-sonnet-4":   {input: 3.00, cachedInput: 0.30, cacheWrite: 3.75, output: 15.00},
	"claude-opus-4":     {input: 15.00, cachedInput: 1.50, cacheWrite: 18.75, output: 75.00},
	"claude-opus-4.5":   {input: 5.00, cachedInput: 0.50, cacheWrite: 6.25, output: 25.00},
	"gemini-2.5-pro":    {input: 1.25, cachedInput: 0.31, output: 10.00},
	"gemini-2.5-flash":  {input: 0.30, cachedInput: 0.075, output: 2.50},
	"claude-3.7-sonnet": {input: 3.00, cachedInput: 0.30, cacheWrite: 3.75, output: 15.00},
	"claude-3.5-sonnet": {input: 3.00, cachedInput: 0.30, cacheWrite: 3.75, output: 15.00},
}

// priceFor finds the price of model by its longest listed prefix.
func priceFor(model string) (price, bool) {
	model = strings.ToLower(model)
	best, found := "", false
	for prefix := range prices {
		if strings.HasPrefix(model, prefix) && len(prefix) > len(best) {
			best, found = prefix, true
		}
	}
	return prices[best], found
}

// estimateCost prices one model call. Input tokens include the cached
// ones, as OpenAI reports them; those are charged at the cached rate.
func estimateCost(u event.UsageData) float64 {
	p, ok := priceFor(u.Model)
	if !ok {
		return 0
	}
	fresh := u.InputTokens - u.CacheReadTokens
	if fresh < 0 {
		fresh = 0
	}
	cost := float64(fresh)*p.input +
		float64(u.CacheReadTokens)*p.cachedInput +
		float64(u.CacheWriteTokens)*p.cacheWrite +
		float64(u.OutputTokens)*p.output
	return cost / 1e6
}

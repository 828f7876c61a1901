package codex

import (
	"fmt"
	"strconv"

	"github.com/corral-dev/corral/internal/pricing"
	"github.com/corral-dev/corral/pkg/event"
)

// priceFor returns the list price of model (internal/pricing), with
// overrides from config applied on top; ok is false when neither the table
// nor the config knows it. Codex reports tokens, never money, so every cost
// Corral shows for Codex is an estimate (UsageData.Estimated).
func priceFor(model string, config map[string]string) (p pricing.Price, ok bool, err error) {
	p, ok = pricing.Lookup(model)
	for key, dst := range map[string]*float64{
		KeyInputPrice:       &p.Input,
		KeyCachedInputPrice: &p.CachedInput,
		KeyOutputPrice:      &p.Output,
	} {
		v, set := config[key]
		if !set {
			continue
		}
		f, perr := strconv.ParseFloat(v, 64)
		if perr != nil || f < 0 {
			return pricing.Price{}, false, fmt.Errorf("config %s=%q: want a non-negative number", key, v)
		}
		*dst, ok = f, true
	}
	return p, ok, nil
}

// callUsage is the usage of one model call, from the "last" figures of a
// token-usage notification. Codex counts cached tokens inside its input
// tokens; Corral counts them apart, so input here is the uncached part.
func callUsage(last tokenBreakdown) event.UsageData {
	uncached := last.InputTokens - last.CachedInputTokens
	if uncached < 0 {
		uncached = 0
	}
	return event.UsageData{
		InputTokens:      uncached,
		OutputTokens:     last.OutputTokens,
		CacheReadTokens:  last.CachedInputTokens,
		CacheWriteTokens: last.CacheWriteInputTokens,
		Estimated:        true,
	}
}

// contextData is the context event for a thread's latest figures: the
// tokens of the last model call (what the conversation now occupies) over
// the model's window.
func contextData(last tokenBreakdown, window int64) (event.ContextData, bool) {
	if window <= 0 || last.TotalTokens <= 0 {
		return event.ContextData{}, false
	}
	return event.ContextData{
		UsedTokens:   last.TotalTokens,
		WindowTokens: window,
		Percent:      float64(last.TotalTokens) * 100 / float64(window),
	}, true
}

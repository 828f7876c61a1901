package codex

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/pkg/event"
)

// price is a model's list price in USD per million tokens.
type price struct {
	Input, CachedInput, Output float64
}

// priceTable holds estimated list prices by model-name prefix, longest
// prefix first. Codex reports tokens, never money, so every cost Corral
// shows for Codex is an estimate (UsageData.Estimated). docs/engines-codex.md
// lists the same figures; the config keys in config.go override them.
var priceTable = []struct {
	prefix string
	price  price
}{
	{"gpt-5-mini", price{0.25, 0.025, 2.00}},
	{"gpt-5-nano", price{0.05, 0.005, 0.40}},
	{"gpt-5", price{1.25, 0.125, 10.00}},
	{"gpt-6", price{1.25, 0.125, 10.00}},
	{"gpt-daybreak", price{1.25, 0.125, 10.00}},
	{"codex", price{1.25, 0.125, 10.00}},
	{"o4-mini", price{1.10, 0.275, 4.40}},
	{"o3", price{2.00, 0.50, 8.00}},
	{"gpt-4.1", price{2.00, 0.50, 8.00}},
}

// priceFor returns the price of model, with overrides from config applied
// on top; ok is false when neither the table nor the config knows it.
func priceFor(model string, config map[string]string) (p price, ok bool, err error) {
	for _, row := range priceTable {
		if strings.HasPrefix(model, row.prefix) {
			p, ok = row.price, true
			break
		}
	}
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
			return price{}, false, fmt.Errorf("config %s=%q: want a non-negative number", key, v)
		}
		*dst, ok = f, true
	}
	return p, ok, nil
}

// cost estimates the price of usage.
func (p price) cost(u event.UsageData) float64 {
	return (float64(u.InputTokens)*p.Input +
		float64(u.CacheReadTokens)*p.CachedInput +
		float64(u.OutputTokens)*p.Output) / 1e6
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

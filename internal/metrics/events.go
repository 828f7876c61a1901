package metrics

import (
	"encoding/json"
	"math"

	"github.com/corral-dev/corral/pkg/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// Event records one mirrored event (supervisor.Observer). Every event costs
// a map look-up and an atomic add; only the few types that carry what a
// metric needs (usage, failure, turnEnded, askOpened, askAnswered,
// hunkDecided) are decoded, and they are rare beside the assistant's
// streamed text.
func (m *Metrics) Event(session, engine string, typ, line []byte) {
	m.events.inc(typ)
	switch wire.EventType(typ) {
	case wire.EvUsage:
		var ev struct{ Data wire.UsageData }
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		m.usage(engine, ev.Data)
	case wire.EvFailure:
		var ev struct{ Data wire.FailureData }
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		code := oneOf(string(ev.Data.Code), failureCodes)
		m.failures.WithLabelValues(m.engines.value(engine), code).Inc()
		if ev.Data.Code == wire.FailPermissionUnavailable {
			m.gateDecided.WithLabelValues(wire.DecisionDeny, unknown, "unattended").Inc()
		}
	case wire.EvTurnEnded:
		var ev struct {
			Data struct {
				Outcome string `json:"outcome"`
			}
		}
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		m.turns.WithLabelValues(m.engines.value(engine), oneOf(ev.Data.Outcome, turnOutcomes)).Inc()
	case wire.EvAskOpened:
		var ev struct {
			Data struct {
				AskID    string `json:"askId"`
				Category string `json:"category"`
			}
		}
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		category := oneOf(ev.Data.Category, gateCategories)
		m.asks.open(session, ev.Data.AskID, category)
		m.gateAsks.WithLabelValues(category).Inc()
	case wire.EvAskAnswered:
		var ev struct{ Data wire.AskAnsweredData }
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		category := m.asks.answer(session, ev.Data.AskID)
		m.gateDecided.WithLabelValues(oneOf(ev.Data.Decision, askDecisions), category, oneOf(ev.Data.By, deciders)).Inc()
	case wire.EvHunkDecided:
		var ev struct{ Data wire.HunkDecidedData }
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		m.hunks.WithLabelValues(oneOf(ev.Data.Decision, hunkDecisions), oneOf(ev.Data.By, deciders)).Inc()
	}
}

// usage adds a model call's cost and tokens. Values a model server could
// make absurd (negative, not finite) are not counted: a counter never goes
// down.
func (m *Metrics) usage(engine string, u wire.UsageData) {
	e, model := m.engines.value(engine), m.models.value(u.Model)
	if u.CostUSD > 0 && !math.IsInf(u.CostUSD, 0) {
		m.spend.WithLabelValues(e, model).Add(u.CostUSD)
	}
	for _, t := range []struct {
		kind string
		n    int64
	}{
		{"input", u.InputTokens}, {"output", u.OutputTokens},
		{"cacheRead", u.CacheReadTokens}, {"cacheWrite", u.CacheWriteTokens},
	} {
		if t.n > 0 {
			m.tokens.WithLabelValues(e, model, t.kind).Add(float64(t.n))
		}
	}
}

// eventCounters count events by type. The known types' counters are looked
// up in a map keyed by the type's bytes (no allocation); any other type
// counts as "other", so a runner cannot grow the label set.
type eventCounters struct {
	known map[string]prometheus.Counter
	other prometheus.Counter
}

func newEventCounters(vec *prometheus.CounterVec) *eventCounters {
	c := &eventCounters{known: map[string]prometheus.Counter{}, other: vec.WithLabelValues(other)}
	for _, t := range eventTypes {
		c.known[string(t)] = vec.WithLabelValues(string(t))
	}
	return c
}

func (c *eventCounters) inc(typ []byte) {
	if n, ok := c.known[string(typ)]; ok {
		n.Inc()
		return
	}
	c.other.Inc()
}

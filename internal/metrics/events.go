package metrics

import (
	"encoding/json"
	"math"

	"github.com/corral-dev/corral/pkg/event"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/prometheus/client_golang/prometheus"
)

// Event records one mirrored event (supervisor.Observer). Every event costs
// a map look-up and an atomic add; only the few types that carry what a
// metric needs (usage, failure, turnEnded, askOpened, askAnswered,
// toolFinished, hunkDecided) are decoded, and they are rare beside the
// assistant's streamed text.
func (m *Metrics) Event(session, engine string, typ, line []byte) {
	k, ok := m.events.known[string(typ)]
	if !ok {
		m.events.other.Inc()
		return
	}
	k.n.Inc()
	if k.decode != nil {
		k.decode(m, session, engine, line)
	}
}

// decoders read what the metrics need from the event types that carry it.
var decoders = map[event.Type]func(m *Metrics, session, engine string, line []byte){
	event.Usage: func(m *Metrics, _, engine string, line []byte) {
		var ev struct{ Data event.UsageData }
		if json.Unmarshal(line, &ev) == nil {
			m.usage(engine, ev.Data)
		}
	},
	event.Failure: func(m *Metrics, _, engine string, line []byte) {
		var ev struct{ Data event.FailureData }
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		m.failures.WithLabelValues(m.engines.value(engine), oneOf(string(ev.Data.Code), failureCodes)).Inc()
		if ev.Data.Code == event.FailPermissionUnavailable {
			m.gateDecided.WithLabelValues(command.DecisionDeny, unknown, "unattended").Inc()
		}
	},
	event.TurnEnded: func(m *Metrics, _, engine string, line []byte) {
		var ev struct {
			Data struct {
				Outcome string `json:"outcome"`
			}
		}
		if json.Unmarshal(line, &ev) == nil {
			m.turns.WithLabelValues(m.engines.value(engine), oneOf(ev.Data.Outcome, turnOutcomes)).Inc()
		}
	},
	event.AskOpened: func(m *Metrics, session, _ string, line []byte) {
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
	},
	event.AskAnswered: func(m *Metrics, session, _ string, line []byte) {
		var ev struct{ Data event.AskAnsweredData }
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		category := m.asks.answer(session, ev.Data.AskID)
		m.gateDecided.WithLabelValues(oneOf(ev.Data.Decision, askDecisions), category, oneOf(ev.Data.By, deciders)).Inc()
	},
	event.ToolFinished: func(m *Metrics, _, _ string, line []byte) {
		var ev struct {
			Data struct {
				Gate *event.GateVerdict `json:"gate"`
			}
		}
		if json.Unmarshal(line, &ev) != nil || ev.Data.Gate == nil {
			return
		}
		// An ask is counted when it is answered (askAnswered); here, the
		// calls the rules decided alone.
		if d := ev.Data.Gate.Decision; d == command.DecisionAllow || d == command.DecisionDeny {
			m.gateDecided.WithLabelValues(d, oneOf(ev.Data.Gate.Category, gateCategories), "rule").Inc()
		}
	},
	event.HunkDecided: func(m *Metrics, _, _ string, line []byte) {
		var ev struct{ Data event.HunkDecidedData }
		if json.Unmarshal(line, &ev) == nil {
			m.hunks.WithLabelValues(oneOf(ev.Data.Decision, hunkDecisions), oneOf(ev.Data.By, deciders)).Inc()
		}
	},
}

// usage adds a model call's cost and tokens. Values a model server could
// make absurd (negative, not finite) are not counted: a counter never goes
// down.
func (m *Metrics) usage(engine string, u event.UsageData) {
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
	known map[string]eventKind
	other prometheus.Counter
}

type eventKind struct {
	n      prometheus.Counter
	decode func(m *Metrics, session, engine string, line []byte) // nil: counted only
}

func newEventCounters(vec *prometheus.CounterVec) *eventCounters {
	c := &eventCounters{known: map[string]eventKind{}, other: vec.WithLabelValues(other)}
	for _, t := range eventTypes {
		c.known[string(t)] = eventKind{n: vec.WithLabelValues(string(t)), decode: decoders[t]}
	}
	return c
}

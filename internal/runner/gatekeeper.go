package runner

import (
	"fmt"
	"sync"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/gate"
	"github.com/corral-dev/corral/pkg/wire"
)

// bookkeepingTools are engine tools with no effect outside the agent's own
// state (its to-do list, its plan, loading a tool's schema). Anything that
// could act on the world, a subagent included, is asked.
var bookkeepingTools = map[string]bool{"TodoWrite": true, "ExitPlanMode": true, "ToolSearch": true}

// gatekeeper holds the session's gate. A gate.Gate is immutable, so a mode
// change builds a new one from the same layers.
type gatekeeper struct {
	mu      sync.RWMutex
	g       *gate.Gate
	session gate.Policy
	cwd     string
}

func newGatekeeper(spec wire.Spec) (*gatekeeper, error) {
	gk := &gatekeeper{cwd: spec.Cwd, session: gate.Policy{
		Mode:         gate.Mode(spec.Mode),
		Allow:        spec.Allow,
		AllowNetwork: spec.AllowNetwork,
		Unattended:   spec.Unattended,
	}}
	if err := gk.rebuild(); err != nil {
		return nil, err
	}
	return gk, nil
}

func (gk *gatekeeper) rebuild() error {
	p, err := gate.LoadPolicy(gk.cwd, &gk.session)
	if err != nil {
		return wire.Errorf(wire.CodeBadRequest, "gate policy: %v", err)
	}
	g, err := gate.New(p, gk.cwd)
	if err != nil {
		return wire.Errorf(wire.CodeBadRequest, "gate: %v", err)
	}
	gk.g = g
	return nil
}

func (gk *gatekeeper) setMode(mode string) error {
	gk.mu.Lock()
	defer gk.mu.Unlock()
	old := gk.session.Mode
	gk.session.Mode = gate.Mode(mode)
	if err := gk.rebuild(); err != nil {
		gk.session.Mode = old
		return err
	}
	return nil
}

// judge decides a tool call. An edit proposal is judged by its path.
func (gk *gatekeeper) judge(call engine.ToolCall) gate.Judgement {
	gk.mu.RLock()
	g := gk.g
	gk.mu.RUnlock()
	req := gate.Request{Command: call.Command, Path: call.Path, URL: call.URL, Server: call.Server, Tool: call.MCPTool}
	switch call.Kind {
	case engine.KindShell:
		req.Kind = gate.KindShell
	case engine.KindEdit:
		req.Kind = gate.KindEdit
		if call.Edit != nil {
			req.Path = call.Edit.Path
		}
	case engine.KindRead:
		req.Kind = gate.KindRead
	case engine.KindFetch:
		req.Kind = gate.KindFetch
	case engine.KindMCP:
		req.Kind = gate.KindMCP
	default:
		if bookkeepingTools[call.Tool] {
			return gate.Judgement{Decision: gate.Allow, Category: gate.Category("other"),
				Reason: call.Tool + " only keeps the agent's own notes; it touches no file, command or network"}
		}
		j := gate.Judgement{Decision: gate.Ask, Category: gate.Category("other"),
			Reason: fmt.Sprintf("%s is a tool the gate has no rule for", call.Tool)}
		j.Unattended = g.Policy().Unattended
		return j
	}
	return g.Judge(req)
}

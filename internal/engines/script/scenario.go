package script

import (
	_ "embed"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// Scenario is what the script engine plays: a list of turns, each answering
// one user message with streamed text and tool calls. docs/engines.md
// documents the format with an example.
type Scenario struct {
	Name string `json:"name,omitempty"`
	// Model names the model in usage events; prices come from the
	// engine's table (script-1 unless set).
	Model string `json:"model,omitempty"`
	// Turns are consumed in order: a message plays the first unplayed
	// turn whose Match it contains (an empty Match matches anything).
	Turns []Turn `json:"turns"`
	// Fallback answers a message no turn matches.
	Fallback *Turn `json:"fallback,omitempty"`
	// OnSteer is said when a steer arrives at a tool boundary; "{steer}"
	// is replaced by the steer's text.
	OnSteer string `json:"onSteer,omitempty"`
	// Goals answers goal checks: the first entry whose Match the clause
	// contains gives the verdict. Without a match a clause is unmet.
	Goals []GoalVerdict `json:"goals,omitempty"`
	// ContextWindow is the model's window in tokens (default 200000).
	ContextWindow int64 `json:"contextWindow,omitempty"`
	// SystemTokens is the prompt's fixed size in tokens (default 1200).
	SystemTokens int64 `json:"systemTokens,omitempty"`
}

// Turn answers one user message.
type Turn struct {
	Match string `json:"match,omitempty"`
	Steps []Step `json:"steps"`
}

// Step is one thing the scripted model does. Exactly one of Say, Tool,
// SleepMS or Fail is set.
type Step struct {
	// Say streams text in Chunks pieces (default: one per word), DelayMS
	// apart.
	Say     string `json:"say,omitempty"`
	Chunks  int    `json:"chunks,omitempty"`
	DelayMS int    `json:"delayMs,omitempty"`

	// Tool is write, edit, delete, read, shell or fetch.
	Tool    string `json:"tool,omitempty"`
	Path    string `json:"path,omitempty"`
	Content string `json:"content,omitempty"` // write
	Old     string `json:"old,omitempty"`     // edit: text to replace (first occurrence)
	New     string `json:"new,omitempty"`     // edit: replacement
	Command string `json:"command,omitempty"` // shell
	URL     string `json:"url,omitempty"`     // fetch

	// SleepMS pauses, as a model thinking would.
	SleepMS int `json:"sleepMs,omitempty"`

	// Fail ends the turn with a failure.
	Fail *Fail `json:"fail,omitempty"`

	// CostUSD, when set, overrides the estimated cost of the model call
	// this step ends (for spend-cap scenarios).
	CostUSD float64 `json:"costUsd,omitempty"`
}

// Fail is a scripted failure.
type Fail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// GoalVerdict scripts the answer to a goal clause.
type GoalVerdict struct {
	Match    string `json:"match"`
	Met      bool   `json:"met"`
	Evidence string `json:"evidence"`
	// Garbled answers with text that is not a verdict.
	Garbled bool `json:"garbled,omitempty"`
}

//go:embed demo.yaml
var demoScenario []byte

// demo is the built-in scenario, parsed once per process (half a
// millisecond of YAML): a spare runner parses it as it warms up, so the
// session it opens next does not. Scenarios are only read once parsed.
var demo = sync.OnceValues(func() (*Scenario, error) { return ParseScenario(demoScenario) })

// LoadScenario reads a scenario from a JSON or YAML file; "demo" or an empty
// path gives the built-in demo.
func LoadScenario(path string) (*Scenario, error) {
	if path == "" || path == "demo" {
		s, err := demo()
		if err != nil {
			return nil, fmt.Errorf("scenario demo: %w", err)
		}
		return s, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	s, err := ParseScenario(data)
	if err != nil {
		// The file may be anything the runner can read, named by whoever
		// created the session: say what is wrong, never what it holds.
		return nil, fmt.Errorf("scenario %s is not a valid scenario: %s", path, quoted.ReplaceAllString(err.Error(), "…"))
	}
	return s, nil
}

// quoted matches what parse errors quote from the file: "…", `…` and '…'.
var quoted = regexp.MustCompile("\"[^\"]*\"|`[^`]*`|'[^']*'")

// ParseScenario parses and validates a scenario in JSON or YAML.
func ParseScenario(data []byte) (*Scenario, error) {
	var s Scenario
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, err
	}
	for i, t := range s.Turns {
		if err := t.validate(); err != nil {
			return nil, fmt.Errorf("turn %d: %w", i+1, err)
		}
	}
	if s.Fallback != nil {
		if err := s.Fallback.validate(); err != nil {
			return nil, fmt.Errorf("fallback: %w", err)
		}
	}
	if s.ContextWindow <= 0 {
		s.ContextWindow = 200_000
	}
	if s.SystemTokens <= 0 {
		s.SystemTokens = 1200
	}
	if s.Model == "" {
		s.Model = "script-1"
	}
	return &s, nil
}

func (t Turn) validate() error {
	for i, st := range t.Steps {
		set := 0
		for _, b := range []bool{st.Say != "", st.Tool != "", st.SleepMS > 0, st.Fail != nil} {
			if b {
				set++
			}
		}
		if set != 1 {
			return fmt.Errorf("step %d: exactly one of say, tool, sleepMs, fail must be set", i+1)
		}
		switch st.Tool {
		case "":
		case "write":
			if st.Path == "" {
				return fmt.Errorf("step %d: write needs a path", i+1)
			}
		case "edit":
			if st.Path == "" || st.Old == "" {
				return fmt.Errorf("step %d: edit needs a path and old text", i+1)
			}
		case "delete", "read":
			if st.Path == "" {
				return fmt.Errorf("step %d: %s needs a path", i+1, st.Tool)
			}
		case "shell":
			if strings.TrimSpace(st.Command) == "" {
				return fmt.Errorf("step %d: shell needs a command", i+1)
			}
		case "fetch":
			if st.URL == "" {
				return fmt.Errorf("step %d: fetch needs a url", i+1)
			}
		default:
			return fmt.Errorf("step %d: unknown tool %q (write, edit, delete, read, shell, fetch)", i+1, st.Tool)
		}
	}
	return nil
}

package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Result is a node's structured result: the JSON object its briefing asks
// for, in a fenced ```json block at the end of the session's final answer,
// or submitted by a caller running the node itself. Which fields a stage
// needs is in docs/graph.md; unknown fields are ignored.
type Result struct {
	// Summary says in a few lines what the node did or found.
	Summary string `json:"summary,omitempty" jsonschema:"what the node did or found, in a few lines"`
	// Verdict is a judging stage's finding: critique sound|unsound, gate
	// accept|reject, gate:goal verified|unverified.
	Verdict string `json:"verdict,omitempty" jsonschema:"judging stages: critique sound|unsound, gate accept|reject, gate:goal verified|unverified"`
	// Reason says why, for a negative verdict above all.
	Reason string `json:"reason,omitempty" jsonschema:"why (required in spirit for a negative verdict)"`
	// Gaps are what is missing against the acceptance.
	Gaps []string `json:"gaps,omitempty" jsonschema:"what is missing against the acceptance"`
	// Checks are the checks run and their outcomes.
	Checks []Check `json:"checks,omitempty" jsonschema:"checks run and their outcome"`
	// ChangedFiles are the files the node changed, relative to its
	// worktree; each is checked against git.
	ChangedFiles []string `json:"changedFiles,omitempty" jsonschema:"files the node changed, relative to the worktree; checked against git"`
	// Evidence backs the verdict: commands run, outputs seen.
	Evidence []string `json:"evidence,omitempty" jsonschema:"what backs the verdict: commands run, outputs seen"`
	// Handoff is a note for the nodes after this one.
	Handoff string `json:"handoff,omitempty" jsonschema:"a note for the nodes after this one"`
	// Plan is the plan stage's plan.
	Plan string `json:"plan,omitempty" jsonschema:"plan: the plan"`
	// Subgoals is setgoal's spec.
	Subgoals []Subgoal `json:"subgoals,omitempty" jsonschema:"setgoal: the subgoals, their acceptance and edges"`
	// Problems are the critique's objections to the spec.
	Problems []string `json:"problems,omitempty" jsonschema:"critique: what is wrong with the spec"`
	// Blame names the subgoals a goal gate's rejection is about.
	Blame []string `json:"blame,omitempty" jsonschema:"gate:goal: the subgoals a rejection blames"`
	// Report is the report stage's account, in Markdown.
	Report string `json:"report,omitempty" jsonschema:"report: the account of the run, in Markdown"`
}

// MaxResult bounds a result object's encoding.
const MaxResult = 1 << 20

// ExtractResult finds the result object in a session's final answer: the
// last fenced ```json block that holds a JSON object, else the whole text
// when it is one. It returns bad_result when there is none or it does not
// decode.
func ExtractResult(text string) (*Result, error) {
	raw, err := lastJSONBlock(text)
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxResult {
		return nil, Errorf(CodeBadResult, "the result object is %d bytes; at most %d", len(raw), MaxResult)
	}
	var res Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, Errorf(CodeBadResult, "the result block is not a result object: %v", err)
	}
	return &res, nil
}

// lastJSONBlock returns the content of the last fenced block tagged json
// (or untagged) that parses as a JSON object.
func lastJSONBlock(text string) ([]byte, error) {
	trimmed := strings.TrimSpace(text)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		return []byte(trimmed), nil
	}
	lines := strings.Split(text, "\n")
	var found []byte
	var sawBlock bool
	for i := 0; i < len(lines); i++ {
		open := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(open, "```") {
			continue
		}
		tag := strings.ToLower(strings.TrimSpace(strings.TrimLeft(open, "`")))
		end := -1
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(strings.TrimSpace(lines[j]), "```") {
				end = j
				break
			}
		}
		if end < 0 {
			break
		}
		body := []byte(strings.Join(lines[i+1:end], "\n"))
		i = end
		if tag != "json" && tag != "" {
			continue
		}
		sawBlock = true
		b := bytes.TrimSpace(body)
		if len(b) > 0 && b[0] == '{' && json.Valid(b) {
			found = b
		}
	}
	switch {
	case found != nil:
		return found, nil
	case sawBlock:
		return nil, Errorf(CodeBadResult, "the ```json block holds no valid JSON object")
	default:
		return nil, Errorf(CodeBadResult, "the answer has no ```json block with the result object")
	}
}

// CheckResult validates a result against its node's stage, in the run as it
// stands: verdicts of judging stages, setgoal's spec, a goal gate's blame.
func (r *Run) CheckResult(n *Node, res *Result) error {
	if res == nil {
		return Errorf(CodeBadResult, "no result")
	}
	if st := n.Stage; st.Judging() {
		v := verdicts[st]
		if res.Verdict != v[0] && res.Verdict != v[1] {
			return Errorf(CodeBadResult, "%s needs verdict %q or %q, not %q", st, v[0], v[1], res.Verdict)
		}
	}
	for i, f := range res.ChangedFiles {
		if f == "" || strings.ContainsRune(f, 0) {
			return Errorf(CodeBadResult, "changedFiles[%d] is not a path", i)
		}
	}
	switch n.Stage {
	case StageSetGoal:
		if err := CheckSpec(res.Subgoals); err != nil {
			return Errorf(CodeBadResult, "setgoal's spec: %s", err.Error())
		}
	case StageGoalGate:
		for _, b := range res.Blame {
			if _, ok := r.subgoal(b); !ok {
				return Errorf(CodeBadResult, "gate:goal blames %q, which is not a subgoal of the live spec", b)
			}
		}
	case StagePlan:
		if strings.TrimSpace(res.Plan) == "" && strings.TrimSpace(res.Summary) == "" {
			return Errorf(CodeBadResult, "plan needs a plan (or a summary)")
		}
	case StageReport:
		if strings.TrimSpace(res.Report) == "" && strings.TrimSpace(res.Summary) == "" {
			return Errorf(CodeBadResult, "report needs a report (or a summary)")
		}
	}
	return nil
}

// positive reports whether a checked result passes its node.
func positive(st Stage, verdict string) bool {
	if v, ok := verdicts[st]; ok {
		return verdict == v[0]
	}
	return true
}

// rejectionReason is a negative verdict's reason: its own, else one built
// from its failed checks, gaps, problems and evidence.
func rejectionReason(res *Result) string {
	if r := strings.TrimSpace(res.Reason); r != "" {
		return r
	}
	var parts []string
	for _, c := range res.Checks {
		if !c.OK {
			s := "check " + c.Name + " failed"
			if c.Detail != "" {
				s += ": " + c.Detail
			}
			parts = append(parts, s)
		}
	}
	for _, g := range res.Gaps {
		parts = append(parts, "gap: "+g)
	}
	for _, p := range res.Problems {
		parts = append(parts, "problem: "+p)
	}
	if len(parts) == 0 {
		for _, e := range res.Evidence {
			parts = append(parts, "evidence: "+e)
		}
	}
	if len(parts) == 0 {
		return "rejected without a reason, checks or evidence"
	}
	return clip(strings.Join(parts, "; "), 2000)
}

// failedChecks lists the checks that did not pass.
func failedChecks(cs []Check) []Check {
	var out []Check
	for _, c := range cs {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// findings are what a rejected node tells the next attempt.
func findings(from string, res *Result, reason string) *Feedback {
	f := &Feedback{From: from, Reason: reason}
	if res != nil {
		f.Gaps = slices.Clone(res.Gaps)
		f.Failed = failedChecks(res.Checks)
		f.Problems = slices.Clone(res.Problems)
		f.Blame = slices.Clone(res.Blame)
	}
	return f
}

// describe is a one-line account of a result for events and evidence.
func (res *Result) describe() string {
	if res == nil {
		return ""
	}
	s := res.Summary
	if s == "" {
		s = res.Reason
	}
	return clip(strings.Join(strings.Fields(s), " "), 200)
}

// ResultSchemaHint is the part of a briefing that says how to answer.
func ResultSchemaHint(st Stage) string {
	var fields []string
	switch st {
	case StagePlan:
		fields = []string{`"plan": "the plan, step by step"`, `"summary": "one paragraph"`, `"handoff": "notes for setgoal"`}
	case StageSetGoal:
		fields = []string{`"subgoals": [{"id": "U1", "title": "…", "acceptance": ["…"], "deps": [], "after": []}]`, `"summary": "…"`}
	case StageCritique:
		fields = []string{`"verdict": "sound" or "unsound"`, `"reason": "…"`, `"problems": ["…"]`}
	case StageImplement:
		fields = []string{`"summary": "what you changed"`, `"changedFiles": ["path/relative/to/worktree"]`, `"handoff": "notes for test and gate"`}
	case StageTest:
		fields = []string{`"summary": "…"`, `"checks": [{"name": "…", "ok": true, "detail": "…"}]`, `"changedFiles": []`, `"evidence": ["command and output"]`}
	case StageGate:
		fields = []string{`"verdict": "accept" or "reject"`, `"reason": "…"`, `"gaps": ["…"]`, `"checks": [{"name": "…", "ok": true}]`, `"evidence": ["…"]`}
	case StageGoalGate:
		fields = []string{`"verdict": "verified" or "unverified"`, `"reason": "…"`, `"blame": ["subgoal ids at fault"]`, `"gaps": ["…"]`}
	case StageReport:
		fields = []string{`"report": "the account, in Markdown"`, `"summary": "one paragraph"`}
	}
	return fmt.Sprintf("End your final answer with one fenced ```json block holding one object with: %s.", strings.Join(fields, ", "))
}

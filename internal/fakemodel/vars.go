package fakemodel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Placeholders let a scenario name things only known at run time, above all
// the worktree: Claude Code's Write wants an absolute path. A step's text,
// tool inputs (inside JSON strings) and freeform inputs may hold ${name};
// "$${" writes a literal "${".
//
// Values come from, weakest first: the scenario's vars, the working
// directory the CLI states in its prompt (${cwd}), and WithVars.

// The patterns are compiled on first use, not when the program starts: the
// supervisor binary links this package but most of its commands never use it.
var placeholder = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\$\{|\$\{([^}]*)\}`) })

var varName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// cwdPatterns find the working directory in the prompts CLIs send: Codex's
// <environment_context>, then the bullet lists of Claude Code ("- Primary
// working directory: /w") and Copilot ("* Current working directory: /w").
var cwdPatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`<cwd>([^<\n]+)</cwd>`),
		regexp.MustCompile(`(?im)^[ \t]*[-*]?[ \t]*(?:primary |current )?working directory:[ \t]*(\S[^\n]*?)[ \t]*$`),
	}
})

// checkPlaceholders reports malformed placeholders in s.
func checkPlaceholders(s string) error {
	for _, m := range placeholder().FindAllStringSubmatch(s, -1) {
		if m[0] == "$${" {
			continue
		}
		if !varName().MatchString(m[1]) {
			return fmt.Errorf("placeholder %q: a name is letters, digits and _", m[0])
		}
	}
	rest := placeholder().ReplaceAllString(s, "")
	if i := strings.Index(rest, "${"); i >= 0 {
		return fmt.Errorf("placeholder at %q is not closed with }", truncate(rest[i:], 20))
	}
	return nil
}

// expand replaces the placeholders of s; escape prepares each value for
// where s is (identity for text, JSON string escaping inside JSON).
func expand(s string, vars map[string]string, escape func(string) string) (string, error) {
	var missing []string
	out := placeholder().ReplaceAllStringFunc(s, func(m string) string {
		if m == "$${" {
			return "${"
		}
		name := m[2 : len(m)-1]
		value, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return escape(value)
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no value for placeholder(s) %s (give them in the scenario's vars or to the server; ${cwd} comes from the CLI's prompt when it states one)", strings.Join(missing, ", "))
	}
	return out, nil
}

func identity(s string) string { return s }

// jsonEscape escapes s for the inside of a JSON string.
func jsonEscape(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b[1 : len(b)-1])
}

// detectCwd finds the working directory a request's prompt states.
func detectCwd(c *conversation) string {
	for _, p := range cwdPatterns() {
		for _, m := range c.messages {
			for _, t := range m.texts {
				if sub := p.FindStringSubmatch(t); sub != nil {
					return strings.TrimSpace(sub[1])
				}
			}
		}
	}
	return ""
}

// varsFor is the placeholder values for one request.
func (s *Server) varsFor(c *conversation) map[string]string {
	vars := make(map[string]string, len(s.scenario.Vars)+len(s.vars)+1)
	for k, v := range s.scenario.Vars {
		vars[k] = v
	}
	if cwd := detectCwd(c); cwd != "" {
		vars["cwd"] = cwd
	}
	for k, v := range s.vars {
		vars[k] = v
	}
	return vars
}

// WithVars gives values to placeholders; they override the scenario's vars
// and the detected ${cwd}.
func WithVars(vars map[string]string) Option {
	return func(s *Server) {
		s.vars = make(map[string]string, len(vars))
		for k, v := range vars {
			s.vars[k] = v
		}
	}
}

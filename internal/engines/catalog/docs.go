package catalog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/pkg/api"
)

// DocsTable is the markdown table of an engine's settings that its page
// under docs/ holds, between the lines DocsStart(name) and DocsEnd (a test
// holds the pages to it).
func DocsTable(e Engine) string {
	var b strings.Builder
	b.WriteString("| key | type | default | meaning |\n|---|---|---|---|\n")
	for _, s := range e.Settings {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", s.Key, TypeText(s), cell(s.Default), cell(s.Doc))
	}
	return b.String()
}

// DocsStart and DocsEnd mark the generated table in an engine's page.
func DocsStart(engine string) string {
	return "<!-- engine-settings:" + engine + " (generated from internal/engines/catalog) -->"
}

const DocsEnd = "<!-- /engine-settings -->"

// TypeText says what a setting takes, for people: "apiKey | login",
// "integer ≥ 0", "absolute path", "boolean".
func TypeText(s api.EngineSetting) string {
	var t string
	switch {
	case len(s.Values) > 0:
		quoted := make([]string, len(s.Values))
		for i, v := range s.Values {
			quoted[i] = "`" + v + "`"
		}
		return strings.Join(quoted, " \\| ")
	case s.Path:
		t = "absolute path"
	default:
		t = string(s.Type)
	}
	if s.Min != nil {
		t += " ≥ " + strconv.FormatFloat(*s.Min, 'f', -1, 64)
	}
	return t
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

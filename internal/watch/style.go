package watch

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Style is how the transcript looks: one lipgloss style per kind of text.
// Colours are the terminal's own sixteen, so they follow its theme.
type Style struct {
	Dim    lipgloss.Style // context, ids, details
	Bold   lipgloss.Style // headers
	User   lipgloss.Style // the person's messages
	Tool   lipgloss.Style // tool calls
	OK     lipgloss.Style // success, allowed, accepted
	Fail   lipgloss.Style // failures, denied, rejected
	Warn   lipgloss.Style // retries, stops
	Ask    lipgloss.Style // questions to a person
	Add    lipgloss.Style // added diff lines
	Del    lipgloss.Style // removed diff lines
	Hunk   lipgloss.Style // hunk headers
	Steer  lipgloss.Style // steers
	Goal   lipgloss.Style // goals and goal checks
	Accent lipgloss.Style // keys in prompts
}

// NewStyle builds the transcript's styles on r, whose colour profile
// decides what reaches the terminal (none at all for termenv.Ascii).
func NewStyle(r *lipgloss.Renderer) Style {
	fg := func(c string) lipgloss.Style { return r.NewStyle().Foreground(lipgloss.Color(c)) }
	return Style{
		Dim:    r.NewStyle().Faint(true),
		Bold:   r.NewStyle().Bold(true),
		User:   r.NewStyle().Bold(true),
		Tool:   fg("4"),
		OK:     fg("2"),
		Fail:   fg("1"),
		Warn:   fg("3"),
		Ask:    fg("5").Bold(true),
		Add:    fg("2"),
		Del:    fg("1"),
		Hunk:   fg("6"),
		Steer:  fg("3"),
		Goal:   fg("5"),
		Accent: fg("6").Bold(true),
	}
}

// PlainStyle is the style without colour or attributes, for logs, pipes,
// NO_COLOR and --plain.
func PlainStyle() Style {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	return NewStyle(r)
}

// ANSIStyle is the style with the sixteen ANSI colours regardless of the
// terminal, which golden files need to be the same everywhere.
func ANSIStyle() Style {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI)
	return NewStyle(r)
}

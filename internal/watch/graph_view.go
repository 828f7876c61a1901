package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/graphapi"
)

// GraphSource reads a graph run's status; *client.Client is one.
type GraphSource interface {
	GraphStatus(ctx context.Context, run string) (*graphapi.StatusReply, error)
}

// graphPoll is how often the graph view reads the run's status.
const graphPoll = 500 * time.Millisecond

// ParseTab reads a --tab value.
func ParseTab(s string) (GraphTab, error) {
	switch s {
	case "", "flow":
		return FlowTab, nil
	case "nodes":
		return NodesTab, nil
	}
	return FlowTab, fmt.Errorf("--tab %q: want flow or nodes", s)
}

// runGraph shows a graph run: in plain mode a new frame each time the run
// changes, else a full-screen view with a Flow and a Nodes tab. It only
// reads.
func runGraph(ctx context.Context, cfg config, src GraphSource, stdin io.Reader, stdout io.Writer) error {
	tab, err := ParseTab(cfg.Tab)
	if err != nil {
		return err
	}
	if cfg.plain {
		return plainGraph(ctx, cfg, src, tab, stdout)
	}
	m := &graphModel{ctx: ctx, src: src, run: cfg.Graph, tab: tab, follow: cfg.Follow,
		style: NewStyle(lipgloss.NewRenderer(stdout))}
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithOutput(stdout), tea.WithAltScreen()}
	if stdin != nil {
		opts = append(opts, tea.WithInput(stdin))
	} else {
		opts = append(opts, tea.WithInput(nil))
	}
	final, err := tea.NewProgram(m, opts...).Run()
	if err != nil {
		if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
			return nil
		}
		return err
	}
	if fm, ok := final.(*graphModel); ok && fm.err != nil {
		return fm.err
	}
	return nil
}

// plainGraph prints the tab each time the run's revision changes, until
// the run ends (or at once without --follow).
func plainGraph(ctx context.Context, cfg config, src GraphSource, tab GraphTab, out io.Writer) error {
	var rev int64 = -1
	for {
		rep, err := src.GraphStatus(ctx, cfg.Graph)
		if err != nil {
			return err
		}
		st := rep.Run
		if st == nil {
			return fmt.Errorf("graph run %s: no status", cfg.Graph)
		}
		if st.Rev != rev {
			if rev >= 0 {
				fmt.Fprintln(out, "────")
			}
			io.WriteString(out, RenderGraph(st, tab, PlainStyle()))
			rev = st.Rev
		}
		if !cfg.Follow || st.State != graph.RunOpen {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(graphPoll):
		}
	}
}

// graphModel is the full-screen graph view.
type graphModel struct {
	ctx    context.Context
	src    GraphSource
	run    string
	tab    GraphTab
	follow bool
	style  Style
	st     *graph.RunStatus
	err    error
}

type graphStatusMsg struct {
	st  *graph.RunStatus
	err error
}

type graphTickMsg struct{}

func (m *graphModel) fetch() tea.Msg {
	rep, err := m.src.GraphStatus(m.ctx, m.run)
	if err != nil {
		return graphStatusMsg{err: err}
	}
	if rep.Run == nil {
		return graphStatusMsg{err: fmt.Errorf("graph run %s: no status", m.run)}
	}
	return graphStatusMsg{st: rep.Run}
}

func (m *graphModel) Init() tea.Cmd { return m.fetch }

func (m *graphModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return m, tea.Quit
		case "tab", "right", "left", "shift+tab":
			m.tab = 1 - m.tab
		case "1":
			m.tab = FlowTab
		case "2":
			m.tab = NodesTab
		}
	case graphStatusMsg:
		if msg.err != nil {
			m.err = msg.err
			return m, tea.Quit
		}
		m.st = msg.st
		if !m.follow {
			return m, nil
		}
		return m, tea.Tick(graphPoll, func(time.Time) tea.Msg { return graphTickMsg{} })
	case graphTickMsg:
		return m, m.fetch
	}
	return m, nil
}

func (m *graphModel) View() string {
	if m.st == nil {
		return "reading graph run " + m.run + "…"
	}
	return RenderGraph(m.st, m.tab, m.style) + m.style.Dim.Render("tab: switch Flow / Nodes · q: quit · read-only") + "\n"
}

package watch

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// runTUI runs the interactive program in inline mode: finished transcript
// lines go to the terminal's scrollback, and only the live part — the
// streaming text, a spinner, the open prompt — is redrawn below them.
func runTUI(ctx context.Context, cfg config, src Source, snd Sender, stdin io.Reader, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items, stopFeed := startFeed(ctx, cfg, src)
	defer stopFeed()

	d := newDispatcher(ctx, snd)
	// Decisions already made are not abandoned by quitting.
	defer d.close()
	m := newModel(ctx, NewStyle(lipgloss.NewRenderer(stdout)), cfg, items, d)
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithOutput(stdout)}
	if stdin != nil {
		opts = append(opts, tea.WithInput(stdin))
	} else {
		opts = append(opts, tea.WithInput(nil))
	}
	final, err := tea.NewProgram(m, opts...).Run()
	if err != nil {
		if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
			return nil // the caller ended the watch
		}
		return err
	}
	if fm, ok := final.(*model); ok {
		return fm.err
	}
	return nil
}

// inputMode is what the keys are typed into.
type inputMode int

const (
	modeKeys        inputMode = iota // single keys
	modeNote                         // a note for a decision
	modeSteer                        // a steer's text
	modeSend                         // a message's text
	modeConfirmStop                  // y to stop
)

// model is the bubbletea model of the interactive watch.
type model struct {
	ctx         context.Context
	core        *core
	style       Style
	items       <-chan item
	cmds        *dispatcher
	interactive bool

	spin  spinner.Model
	input textinput.Model
	mode  inputMode
	// note is the choice a note is typed for, and the prompt it decides.
	noteChoice Choice
	noteFor    *Prompt

	width, height int
	now           time.Time
	showHelp      bool
	quitting      bool
	err           error
}

// Messages of the program.
type (
	itemsMsg  []item
	resultMsg result
	feedEnded struct{}
)

func newModel(ctx context.Context, style Style, cfg config, items <-chan item, cmds *dispatcher) *model {
	in := textinput.New()
	in.CharLimit = 4000
	return &model{
		ctx:         ctx,
		core:        newCore(style, cfg.Session),
		style:       style,
		items:       items,
		cmds:        cmds,
		interactive: cfg.interactive,
		spin:        spinner.New(spinner.WithSpinner(spinner.Dot), spinner.WithStyle(style.Tool)),
		input:       in,
		now:         time.Now(),
	}
}

func (m *model) Init() tea.Cmd {
	return tea.Batch(m.spin.Tick, m.next(), m.nextResult())
}

// nextResult waits for the result of a sent command.
func (m *model) nextResult() tea.Cmd {
	return func() tea.Msg {
		select {
		case r := <-m.cmds.results:
			return resultMsg(r)
		case <-m.ctx.Done():
			return feedEnded{}
		}
	}
}

// next waits for the feed's next items: the first blocks, those already
// waiting come along so a backlog is printed in few updates.
func (m *model) next() tea.Cmd {
	return func() tea.Msg {
		var batch itemsMsg
		select {
		case it := <-m.items:
			batch = append(batch, it)
		case <-m.ctx.Done():
			return feedEnded{}
		}
		for len(batch) < 256 {
			select {
			case it := <-m.items:
				batch = append(batch, it)
			default:
				return batch
			}
		}
		return batch
	}
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case itemsMsg:
		return m, m.takeItems(msg)
	case feedEnded:
		return m, nil
	case resultMsg:
		if text := m.core.result(msg.req, msg.err); text != "" {
			return m, tea.Sequence(tea.Println(m.core.prefixText(msg.req.Session, m.style.Fail.Render("! "+text))), m.nextResult())
		}
		return m, m.nextResult()
	case spinner.TickMsg:
		m.now = time.Now()
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return m, cmd
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.input.Width = max(msg.Width-20, 10)
		return m, nil
	case tea.InterruptMsg:
		return m.quit()
	case tea.KeyMsg:
		return m.key(msg)
	}
	if m.mode != modeKeys && m.mode != modeConfirmStop {
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		return m, cmd
	}
	return m, nil
}

// takeItems prints what the feed delivered and asks for more. The print
// runs before the wait so that transcript lines keep their order.
func (m *model) takeItems(batch itemsMsg) tea.Cmd {
	var lines []string
	end := false
	for _, it := range batch {
		if it.err != nil {
			m.err = it.err
			end = true
			break
		}
		lines = append(lines, m.core.apply(it)...)
		if it.done {
			end = true
			break
		}
	}
	if m.mode == modeNote && m.core.prompts.Current() != m.noteFor {
		m.leaveInput() // decided elsewhere while the note was typed
	}
	var cmds []tea.Cmd
	if len(lines) > 0 {
		cmds = append(cmds, tea.Println(strings.Join(lines, "\n")))
	}
	if end {
		m.quitting = true
		return tea.Sequence(append(cmds, tea.Quit)...)
	}
	return tea.Sequence(append(cmds, m.next())...)
}

func (m *model) quit() (tea.Model, tea.Cmd) {
	m.quitting = true
	return m, tea.Quit
}

func (m *model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	if k.Type == tea.KeyCtrlC {
		return m.quit()
	}
	if !m.interactive {
		return m, nil
	}
	switch m.mode {
	case modeConfirmStop:
		m.mode = modeKeys
		if s := k.String(); s == "y" || s == "x" {
			return m, m.act(action{kind: actStop})
		}
		return m, nil
	case modeNote, modeSteer, modeSend:
		switch k.Type {
		case tea.KeyEsc:
			m.leaveInput()
			return m, nil
		case tea.KeyEnter:
			return m, m.submit()
		}
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(k)
		return m, cmd
	}
	s := k.String()
	if len(s) == 1 {
		if c, ok := choiceFor(s[0]); ok {
			if s[0] >= 'a' {
				return m, m.act(action{kind: actDecide, choice: c})
			}
			cur := m.core.prompts.Current()
			if cur == nil || (cur.IsAsk() && (c == ChoiceAllYes || c == ChoiceAllNo)) {
				return m, nil
			}
			m.noteChoice, m.noteFor = c, cur
			return m, m.enterInput(modeNote, "note: ")
		}
	}
	switch s {
	case "s":
		return m, m.enterInput(modeSteer, "steer: ")
	case "m":
		return m, m.enterInput(modeSend, "message: ")
	case "x":
		m.mode = modeConfirmStop
	case "q":
		return m.quit()
	case "?":
		m.showHelp = !m.showHelp
	}
	return m, nil
}

func (m *model) enterInput(mode inputMode, prompt string) tea.Cmd {
	m.mode = mode
	m.input.Reset()
	m.input.Prompt = prompt
	m.input.PromptStyle = m.style.Accent
	return m.input.Focus()
}

func (m *model) leaveInput() {
	m.mode = modeKeys
	m.noteFor = nil
	m.input.Blur()
	m.input.Reset()
}

// submit sends what was typed.
func (m *model) submit() tea.Cmd {
	text := strings.TrimSpace(m.input.Value())
	mode, choice := m.mode, m.noteChoice
	m.leaveInput()
	switch mode {
	case modeNote:
		return m.act(action{kind: actDecide, choice: choice, text: text})
	case modeSteer:
		if text != "" {
			return m.act(action{kind: actSteer, text: text})
		}
	case modeSend:
		if text != "" {
			return m.act(action{kind: actSend, text: text})
		}
	}
	return nil
}

// act sends the commands of an action; what went wrong is printed.
func (m *model) act(a action) tea.Cmd {
	reqs, err := m.core.requests(a)
	if err != nil {
		return tea.Println(m.style.Dim.Render("… " + err.Error()))
	}
	m.cmds.send(reqs...)
	return nil
}

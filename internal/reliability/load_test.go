package reliability

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
)

const loadScenario = `{"turns": [], "fallback": {"steps": [{"say": "noted"}]}}`

// TestManySessionsManyCommands creates sessions and sends each many
// messages from several clients at once; every acknowledged send must be
// in its session's log exactly once.
func TestManySessionsManyCommands(t *testing.T) {
	sessions, commands, workers := size(10, 1000), size(10, 100), 8
	d := startDaemon(t, loadScenario)
	start := time.Now()
	var (
		mu                          sync.Mutex
		acked, refused, lost, twice int
		firstErr                    error
	)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				a, r, l, tw, err := loadOne(t, d, commands)
				mu.Lock()
				acked, refused, lost, twice = acked+a, refused+r, lost+l, twice+tw
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < sessions; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	pass := lost == 0 && twice == 0 && firstErr == nil
	report.Record(Figure{
		Scenario: "Many sessions, many commands",
		Done: fmt.Sprintf("%d sessions × %d sends from %d clients at once: %d acknowledged, %d refused (busy) and retried, in %s",
			sessions, commands, workers, acked, refused, time.Since(start).Round(time.Second)),
		Found: fmt.Sprintf("%d acknowledged sends lost, %d recorded twice", lost, twice),
		Pass:  pass,
	})
	if !pass {
		t.Fatalf("lost %d, twice %d, error %v\n%s", lost, twice, firstErr, d.Log())
	}
}

// loadOne runs one session: its sends, then the wait for its turns to end
// (so that it can give its runner up to the next session), then the count.
func loadOne(t *testing.T, d *daemon, commands int) (acked, refused, lost, twice int, err error) {
	var id string
	for {
		s, cerr := d.c.CreateSession(ctx(t), wire.Spec{Engine: "script", Cwd: d.cwd, Mode: "auto", Scenario: filepath.Join(d.cwd, "scenario.json")})
		if cerr == nil {
			id = s.ID
			break
		}
		refused++
		if refused > 1000 {
			return 0, refused, 0, 0, fmt.Errorf("create: %w", cerr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	texts := make([]string, commands)
	for i := range texts {
		texts[i] = fmt.Sprintf("%s message %d", id, i)
		n, err := sendAcked(t, d, id, texts[i])
		refused += n
		if err != nil {
			return acked, refused, 0, 0, err
		}
		acked++
	}
	lc, err := waitQuiet(t, d, id)
	if err != nil {
		return acked, refused, 0, 0, err
	}
	for _, text := range texts {
		switch lc.userTexts[text] {
		case 0:
			lost++
		case 1:
		default:
			twice++
		}
	}
	return acked, refused, lost, twice, nil
}

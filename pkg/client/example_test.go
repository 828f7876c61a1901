package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// A session on the script engine: create it, send it a message, and follow
// its events until the turn ends.
func Example() {
	ctx := context.Background()
	state, err := client.StateDir("") // $CORRAL_STATE, else ~/.local/state/corral
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.ForState(state)
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.CreateSession(ctx, wire.Spec{Engine: "script", Cwd: "/tmp"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Command(ctx, s.ID, command.Send{Text: "hello"}); err != nil {
		log.Fatal(err)
	}
	events, err := c.Events(ctx, s.ID, client.EventsOptions{Follow: true})
	if err != nil {
		log.Fatal(err)
	}
	defer events.Close()
	for {
		ev, err := events.NextEvent()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.Seq, ev.Type)
		if ev.Type == event.TurnEnded {
			return
		}
	}
}

// Over TCP, a supervisor started with --listen-tcp wants its bearer token.
func ExampleNew() {
	token, err := os.ReadFile(os.ExpandEnv("$HOME/.local/state/corral/token"))
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(client.Options{BaseURL: "http://127.0.0.1:7777", Token: string(token[:len(token)-1])})
	if err != nil {
		log.Fatal(err)
	}
	h, err := c.Health(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("live sessions:", h.LiveSessions)
}

// Errors carry the supervisor's code: branch on it with errors.Is.
func ExampleClient_Command() {
	ctx := context.Background()
	c, err := client.ForState(os.Getenv("CORRAL_STATE"))
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Command(ctx, "3f2a9c0d1e4b", command.Answer{AskID: "a1", Decision: command.DecisionAllow})
	switch {
	case errors.Is(err, wire.ErrNotFound):
		fmt.Println("no such session or ask")
	case errors.Is(err, wire.ErrConflict):
		fmt.Println("someone answered first")
	case err != nil:
		log.Fatal(err)
	}
}

// A followed stream resumes by itself after a lost connection or a
// supervisor restart; OnReconnect says when that happens.
func ExampleClient_Events() {
	ctx := context.Background()
	c, err := client.ForState(os.Getenv("CORRAL_STATE"))
	if err != nil {
		log.Fatal(err)
	}
	events, err := c.Events(ctx, "3f2a9c0d1e4b", client.EventsOptions{
		From:   1,
		Follow: true,
		OnReconnect: func(lost error) {
			if lost != nil {
				log.Printf("reconnecting: %v", lost)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer events.Close()
	for {
		line, err := events.Next()
		if err != nil {
			log.Fatal(err) // not_found once the session is deleted
		}
		fmt.Printf("%s\n", line)
	}
}

// Attach to a session's terminal and print what its program writes.
func ExampleClient_AttachTerminal() {
	ctx := context.Background()
	c, err := client.ForState(os.Getenv("CORRAL_STATE"))
	if err != nil {
		log.Fatal(err)
	}
	term, err := c.AttachTerminal(ctx, "3f2a9c0d1e4b", client.TermOptions{Command: []string{"sh", "-c", "echo hi"}})
	if err != nil {
		log.Fatal(err)
	}
	defer term.Close()
	for {
		ev, err := term.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		os.Stdout.Write(ev.Output)
		if ev.Exit != nil {
			fmt.Println("exit status", ev.Exit.Code)
			return
		}
	}
}

// Run returns a command's result typed as the command says: a send's is a
// command.SendResult.
func ExampleRun() {
	ctx := context.Background()
	c, err := client.ForState(os.Getenv("CORRAL_STATE"))
	if err != nil {
		log.Fatal(err)
	}
	queued, err := client.Run(ctx, c, "3f2a9c0d1e4b", command.Send{Text: "add a README"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("queued as", queued.ID)
}

package cli

import (
	"context"
	"io"
	"os"

	"github.com/corral-dev/corral/internal/graph/drivers"
	"github.com/corral-dev/corral/internal/graph/service"
	"github.com/corral-dev/corral/internal/mcpserver"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpVersion is the version the MCP server reports.
const mcpVersion = "1"

func runMCP(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "mcp", "", "Serve Corral's MCP tools on stdio: graph_* (graph runs kept in the state folder)\nand session_* (sessions of the supervisor the connection flags name). docs/mcp.md lists them.")
	var cn conn
	cn.register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fs.Usage()
		return usagef("mcp takes no arguments")
	}
	state, err := client.StateDir(cn.state)
	if err != nil {
		return err
	}
	c, err := cn.client()
	if err != nil {
		return err
	}
	sessions := drivers.Client(c)
	svc, err := service.New(service.Config{State: state, Sessions: sessions, Probe: true})
	if err != nil {
		return err
	}
	t := &mcp.IOTransport{Reader: os.Stdin, Writer: nopWriteCloser{e.stdout}}
	return mcpserver.Serve(ctx, mcpserver.Config{Service: svc, Sessions: sessions, Version: mcpVersion}, t)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

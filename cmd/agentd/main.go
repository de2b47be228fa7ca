// Command agentd runs LLM agents as a long-lived service. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // time zones for the clock tool on machines without zoneinfo

	"agentd/internal/cli"
	"agentd/internal/sandbox"
)

func main() {
	sandbox.RunHelperIfAsked() // agentd re-run as a command's sandbox helper; before anything else
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

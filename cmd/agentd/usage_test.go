package main

// The command line's manners: what a mistyped command, a bad flag value or
// a taken port tells the user, and what a command's help shows.

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// An argument error names the command's usage and where its help is, in
// process and against the daemon alike.
func TestArgumentErrorShowsUsage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	run(t, dir, "send", "assistant", "hello") // makes the data directory
	check := func(t *testing.T) {
		for _, tc := range []struct {
			args       []string
			usage, see string
		}{
			{[]string{"log"}, "usage: agentd log <agent>[/<key>]", "agentd log --help"},
			{[]string{"send", "assistant"}, "usage: agentd send <agent> <message>...", "agentd send --help"},
			{[]string{"keys", "show", "a", "b"}, "usage: agentd keys show [agent]", "agentd keys show --help"},
			{[]string{"sessions", "--limit", "many"}, "usage: agentd sessions", "agentd sessions --help"},
			{[]string{"mcp", "nosuch"}, "usage: agentd mcp", "agentd mcp --help"},
			{[]string{"nosuch"}, "agentd --help", "agentd --help"},
		} {
			r := run(t, dir, tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.usage) || !strings.Contains(r.stderr, tc.see) {
				t.Errorf("agentd %s: exit %d, stderr:\n%s\nwant exit 2, %q and %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.usage, tc.see)
			}
		}
	}
	t.Run("in process", check)
	serve(t, dir)
	t.Run("daemon", check)
}

// sessions --state refuses a state that does not exist, naming the ones
// that do.
func TestSessionsBadState(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	run(t, dir, "send", "assistant", "hello")
	check := func(t *testing.T) {
		r := run(t, dir, "sessions", "--state", "bogus")
		if r.code != 2 || !strings.Contains(r.stderr, `"bogus"`) || !strings.Contains(r.stderr, "created, active, idle, compacting, closed") {
			t.Errorf("sessions --state bogus: %+v", r)
		}
		if r := run(t, dir, "sessions", "--state", "idle"); r.code != 0 || !strings.Contains(r.stdout, "assistant/cli:") {
			t.Errorf("sessions --state idle: %+v", r)
		}
	}
	t.Run("in process", check)
	serve(t, dir)
	t.Run("daemon", check)
}

// Every command's help has examples.
func TestHelpHasExamples(t *testing.T) {
	for _, args := range [][]string{{"send"}, {"chat"}, {"sessions"}, {"memory", "search"}, {"mcp", "add"}, {"keys", "show"}} {
		r := run(t, t.TempDir(), append(args, "--help")...)
		if r.code != 0 || !strings.Contains(r.stdout, "Examples:\n  agentd "+strings.Join(args, " ")) {
			t.Errorf("agentd %s --help has no examples:\n%s", strings.Join(args, " "), r.stdout)
		}
	}
}

// A taken port is explained whatever the address: which one, and what to
// do about it.
func TestServeTakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	for name, args := range map[string][]string{
		"flag":   {"serve", "--listen", addr},
		"config": {"serve"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := dataDir(t, map[string]string{"agentd.yaml": "gateway:\n  listen: " + addr + "\n"})
			r := run(t, dir, args...)
			if r.code == 0 || !strings.Contains(r.stderr, "address in use: "+addr) || !strings.Contains(r.stderr, "--listen HOST:PORT") {
				t.Errorf("serve on a taken %s: %+v", addr, r)
			}
		})
	}
}

// A new data directory's start-up says what agentd serves, not how its
// database was made.
func TestServeStartsQuietly(t *testing.T) {
	d := serve(t, filepath.Join(t.TempDir(), "d"))
	if strings.Contains(d.out.String(), "store migrat") {
		t.Errorf("serve logged its migrations:\n%s", d.out.String())
	}
}

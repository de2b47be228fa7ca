package gateway

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// GET /v1/status says which process this is and the addresses it serves
// while it serves them.
func TestStatus(t *testing.T) {
	s := New(&Options{Version: "v-test"})
	sock := filepath.Join(t.TempDir(), "s.sock")
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- s.ServeUnix(ctx, sock, func() { close(ready) }) }()
	<-ready
	st, err := NewUnixClient(sock).Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != "v-test" || st.PID != os.Getpid() || !slices.Equal(st.Listening, []string{"unix:" + sock}) ||
		st.Started.After(time.Now()) || st.UptimeSeconds < 0 {
		t.Errorf("status %+v", st)
	}
	cancel()
	<-done
	if l := s.listening.list(); len(l) != 0 {
		t.Errorf("still listening on %v after ServeUnix returned", l)
	}
}

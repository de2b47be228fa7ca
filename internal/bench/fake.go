package bench

import (
	"context"
	"net"

	"agentd/internal/model/fakellm"
)

// startFake serves the fake model on a loopback port with the script src
// (named name in its errors) until ctx ends or stop is called, and returns
// its base URL (http://127.0.0.1:port/v1). The server's goroutine ends on
// either; a crash leaves nothing behind but the closed port.
func startFake(ctx context.Context, name, src string) (base string, stop func(), err error) {
	script, err := fakellm.ParseScript(name, []byte(src))
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	fctx, stop := context.WithCancel(ctx)
	go fakellm.New(script, nil).Serve(fctx, ln)
	return "http://" + ln.Addr().String() + "/v1", stop, nil
}

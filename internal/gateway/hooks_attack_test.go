package gateway_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentd/internal/job"
)

// TestAttackHookOverTCP: a third party without the gateway's token or
// the job's secret, on TCP. It must not tell the webhook job gh from a
// job that does not exist (one 401 for both, so a caller without the
// secret learns nothing of which jobs exist); and, having seen one
// signed request, it must not run the job again by sending that request
// with another delivery id.
func TestAttackHookOverTCP(t *testing.T) {
	_, _, tcp := hookServers(t)
	now := time.Now()
	known, _ := hookPost(t, tcp, "/hooks/gh", "guess", `{}`, "", now)
	unknown, _ := hookPost(t, tcp, "/hooks/payroll", "guess", `{}`, "", now)
	if known != unknown {
		t.Errorf("without the secret: /hooks/gh answers %d, /hooks/payroll (no such job) %d", known, unknown)
	}

	body := `{"ref":"main"}`
	stamp := strconv.FormatInt(now.Unix(), 10)
	sig := job.Sign([]byte("s3cret"), stamp, []byte(body))
	send := func(delivery string) int {
		req, _ := http.NewRequest("POST", tcp.URL+"/hooks/gh", strings.NewReader(body))
		req.Header.Set("X-Agentd-Timestamp", stamp)
		req.Header.Set("X-Agentd-Signature", sig)
		req.Header.Set("X-Agentd-Delivery", delivery)
		resp, err := tcp.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := send("d-1"); status != http.StatusAccepted {
		t.Fatalf("the signed request: %d", status)
	}
	for i := 2; i <= 4; i++ {
		if status := send("d-" + strconv.Itoa(i)); status == http.StatusAccepted {
			t.Errorf("the captured request sent again with delivery d-%d: %d, a new run", i, status)
		}
	}
}

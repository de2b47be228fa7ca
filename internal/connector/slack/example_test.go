package slack_test

import (
	"fmt"
	"time"

	"agentd/internal/connector/slack"
)

// An Events API request is taken only when its signature matches the body
// Slack sent, at a timestamp within 5 minutes of now.
func ExampleVerify() {
	body := []byte(`{"type":"event_callback"}`)
	now := time.Unix(1700000000, 0)
	ts := "1700000000"
	sig := slack.Sign("signing-secret", ts, body)
	fmt.Println(slack.Verify("signing-secret", ts, sig, body, now))
	fmt.Println(slack.Verify("signing-secret", ts, sig, []byte(`{"type":"x"}`), now))
	fmt.Println(slack.Verify("signing-secret", ts, sig, body, now.Add(10*time.Minute)))
	// Output:
	// <nil>
	// slack: the request's signature does not match
	// slack: the request's timestamp is not within 5 minutes of now
}

package gateway

// The client's calls of the chat connectors' routes and the pairing
// routes.

import (
	"context"
	"net/url"
	"strconv"
)

// Connectors lists the chat connectors and their states.
func (c *Client) Connectors(ctx context.Context) ([]ConnectorState, error) {
	var out ConnectorList
	return out.Connectors, c.do(ctx, "GET", "/v1/connectors", nil, &out)
}

// Connector returns one connector's state and its undelivered replies.
func (c *Client) Connector(ctx context.Context, name string) (ConnectorDetail, error) {
	var out ConnectorDetail
	n, err := seg(name)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, "GET", "/v1/connectors/"+n, nil, &out)
}

// RetryDelivery asks connector to deliver its failed outbox row id again,
// or (dismiss) to leave it undelivered and stop showing it.
func (c *Client) RetryDelivery(ctx context.Context, connector string, id int64, dismiss bool) (OutboxInfo, error) {
	var out OutboxInfo
	n, err := seg(connector)
	if err != nil {
		return out, err
	}
	verb := "retry"
	if dismiss {
		verb = "dismiss"
	}
	return out, c.do(ctx, "POST", "/v1/connectors/"+n+"/outbox/"+strconv.FormatInt(id, 10)+"/"+verb, nil, &out)
}

// Pairings lists the pending pairing codes (all: every pairing), of
// connector ("" every connector).
func (c *Client) Pairings(ctx context.Context, connector string, all bool) ([]PairingInfo, error) {
	v := url.Values{}
	if connector != "" {
		v.Set("connector", connector)
	}
	if all {
		v.Set("all", "1")
	}
	p := "/v1/pairings"
	if len(v) > 0 {
		p += "?" + v.Encode()
	}
	var out PairingList
	return out.Pairings, c.do(ctx, "GET", p, nil, &out)
}

// DecidePairing approves or denies the pending pairing of code.
func (c *Client) DecidePairing(ctx context.Context, code string, approve bool) (PairingInfo, error) {
	var out PairingInfo
	k, err := seg(code)
	if err != nil {
		return out, err
	}
	verb := "deny"
	if approve {
		verb = "approve"
	}
	return out, c.do(ctx, "POST", "/v1/pairings/"+k+"/"+verb, nil, &out)
}

// RevokePairing removes user's pairing on connector: they pair again to
// talk.
func (c *Client) RevokePairing(ctx context.Context, connector, user string) error {
	n, err := seg(connector)
	if err != nil {
		return err
	}
	u, err := seg(user)
	if err != nil {
		return err
	}
	return c.do(ctx, "DELETE", "/v1/pairings/"+n+"/"+u, nil, nil)
}

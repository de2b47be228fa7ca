package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"agentd/internal/extension"
)

// extPath is the path of a row, its type and name escaped.
func extPath(typ, name string) string {
	return "/v1/extensions/" + url.PathEscape(typ) + "/" + url.PathEscape(name)
}

// Extensions lists the extension rows of a type ("" for every type).
func (c *Client) Extensions(ctx context.Context, typ string) ([]extension.Status, error) {
	p := "/v1/extensions"
	if typ != "" {
		p += "?" + url.Values{"type": {typ}}.Encode()
	}
	var out ExtensionList
	return out.Extensions, c.do(ctx, "GET", p, nil, &out)
}

// ExtensionTypes lists the extension types.
func (c *Client) ExtensionTypes(ctx context.Context) ([]ExtensionType, error) {
	var out ExtensionTypes
	return out.Types, c.do(ctx, "GET", "/v1/extensions/schemas", nil, &out)
}

// ExtensionSchema returns a type's JSON Schema.
func (c *Client) ExtensionSchema(ctx context.Context, typ string) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.do(ctx, "GET", "/v1/extensions/schemas/"+url.PathEscape(typ), nil, &out)
}

// Extension returns one row.
func (c *Client) Extension(ctx context.Context, typ, name string) (extension.Status, error) {
	var out extension.Status
	return out, c.do(ctx, "GET", extPath(typ, name), nil, &out)
}

// PutOptions are the options of PutExtension.
type PutOptions struct {
	// IfVersion, when not 0, is the version the row must be at (If-Match),
	// else 409 and nothing written.
	IfVersion int64
}

// PutExtension writes a document as its row's next version.
func (c *Client) PutExtension(ctx context.Context, d extension.Doc, o *PutOptions) (extension.Status, error) {
	var out extension.Status
	var h http.Header
	if o != nil && o.IfVersion != 0 {
		h = http.Header{"If-Match": {strconv.Quote(strconv.FormatInt(o.IfVersion, 10))}}
	}
	return out, c.doWith(ctx, "PUT", extPath(d.Type, d.Name), h, d, &out)
}

// CheckExtension validates a document as PutExtension would, writing
// nothing: nil when it is valid, else an *APIError whose Errors list
// every problem.
func (c *Client) CheckExtension(ctx context.Context, d extension.Doc) error {
	var out ExtensionCheck
	return c.do(ctx, "PUT", extPath(d.Type, d.Name)+"?dry_run=true", d, &out)
}

// SetExtensionEnabled enables or disables a row.
func (c *Client) SetExtensionEnabled(ctx context.Context, typ, name string, on bool) (extension.Status, error) {
	op := "/disable"
	if on {
		op = "/enable"
	}
	var out extension.Status
	return out, c.do(ctx, "POST", extPath(typ, name)+op, nil, &out)
}

// DeleteExtension removes a row (its history stays).
func (c *Client) DeleteExtension(ctx context.Context, typ, name string) error {
	return c.do(ctx, "DELETE", extPath(typ, name), nil, nil)
}

// ExtensionHistory returns a row's changes, oldest first.
func (c *Client) ExtensionHistory(ctx context.Context, typ, name string) ([]ExtensionChange, error) {
	var out ExtensionHistory
	return out.History, c.do(ctx, "GET", extPath(typ, name)+"/history", nil, &out)
}

// RevertExtension sets a row's spec back to an earlier version's (0: the
// one before the current).
func (c *Client) RevertExtension(ctx context.Context, typ, name string, version int64) (extension.Status, error) {
	var out extension.Status
	return out, c.do(ctx, "POST", extPath(typ, name)+"/revert", RevertRequest{Version: version}, &out)
}

// Reseed syncs the built-in and file documents into rows; force
// overwrites rows a person or an agent changed.
func (c *Client) Reseed(ctx context.Context, force bool) (extension.Report, error) {
	var out extension.Report
	return out, c.do(ctx, "POST", "/v1/extensions/reseed", ReseedRequest{Force: force}, &out)
}

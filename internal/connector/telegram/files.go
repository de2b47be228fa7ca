package telegram

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"agentd/internal/connector"
)

// Fetch downloads a file a person sent: getFile gives its path
// (https://core.telegram.org/bots/api#getfile), then
// GET <api>/file/bot<token>/<file_path>, at most max bytes (the Bot API
// serves files up to 20 MB). Its type is the attachment's, or sniffed.
func (p *Platform) Fetch(ctx context.Context, a connector.Attachment, max int64) ([]byte, string, error) {
	if a.Size > max {
		return nil, "", fmt.Errorf("telegram: file of %d bytes is over the limit of %d: %w", a.Size, max, connector.ErrTooLong)
	}
	var f struct {
		FileSize int64  `json:"file_size"`
		FilePath string `json:"file_path"`
	}
	if err := p.c.call(ctx, "getFile", map[string]any{"file_id": a.ID}, &f); err != nil {
		return nil, "", err
	}
	if f.FileSize > max {
		return nil, "", fmt.Errorf("telegram: file of %d bytes is over the limit of %d: %w", f.FileSize, max, connector.ErrTooLong)
	}
	if f.FilePath == "" || strings.Contains(f.FilePath, "..") {
		return nil, "", fmt.Errorf("telegram: getFile gave no usable path: %w", connector.ErrPermanent)
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.c.api+"/file/bot"+p.c.token+"/"+f.FilePath, nil)
	if err != nil {
		return nil, "", p.c.wrap("file download", err)
	}
	resp, err := p.c.http.Do(req)
	if err != nil {
		return nil, "", p.c.wrap("file download", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("telegram: file download: HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, "", p.c.wrap("file download", err)
	}
	if int64(len(data)) > max {
		return nil, "", fmt.Errorf("telegram: file is over the limit of %d bytes: %w", max, connector.ErrTooLong)
	}
	typ := a.Type
	if typ == "" {
		typ = http.DetectContentType(data)
	}
	return data, typ, nil
}

// Upload sends a photo (an image) or a document
// (https://core.telegram.org/bots/api#sendphoto, #senddocument): a URL as
// it is (Telegram fetches it), or the bytes as multipart/form-data.
func (p *Platform) Upload(ctx context.Context, c connector.Chat, f connector.File) (connector.Sent, error) {
	method, field := "sendDocument", "document"
	if strings.HasPrefix(f.Type, "image/") && f.Type != "image/gif" && f.Type != "image/svg+xml" {
		method, field = "sendPhoto", "photo"
	}
	var res message
	if f.URL != "" {
		params := where(c, map[string]any{field: f.URL})
		if f.Caption != "" {
			params["caption"] = f.Caption
		}
		if err := p.c.call(ctx, method, params, &res); err != nil {
			return connector.Sent{}, err
		}
		return p.sent(res), nil
	}
	fields := map[string]string{"chat_id": c.ID}
	if c.Thread != "" {
		fields["message_thread_id"] = c.Thread
	}
	if f.Caption != "" {
		fields["caption"] = f.Caption
	}
	if err := p.c.upload(ctx, method, fields, field, f.Name, f.Type, f.Data, &res); err != nil {
		return connector.Sent{}, err
	}
	return p.sent(res), nil
}

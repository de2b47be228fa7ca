package webext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"agentd/internal/extension"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// ArtifactToolName is the agent tool that writes artifacts.
const ArtifactToolName = "artifact"

const artifactToolSchema = `{
	"type": "object",
	"properties": {
		"action": {"type": "string", "enum": ["create", "update", "get"]},
		"name": {"type": "string", "maxLength": 64, "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]*(\\.[A-Za-z0-9_-]+)*$", "description": "letters, digits, '-', '_', inner dots"},
		"title": {"type": "string", "maxLength": 200},
		"kind": {"type": "string", "enum": ["markdown", "code", "csv", "html", "image", "text"]},
		"language": {"type": "string", "description": "code's language"},
		"media_type": {"type": "string", "enum": ["image/png", "image/jpeg", "image/gif", "image/webp"]},
		"content": {"type": "string", "description": "the whole document (an image as base64), at most 1 MiB"}
	},
	"required": ["action", "name"],
	"additionalProperties": false
}`

// ArtifactTool returns the `artifact` tool: an agent creates, updates
// and reads artifacts, each a row of type artifact written as the agent
// (provenance agent:<id>), so an agent changes only the artifacts it made
// unless its policy allows more, and every update is a version in the
// row's history. The session and agent that made an artifact are set from
// the call, never from the model's arguments.
func ArtifactTool(rows Rows, w Writer) tool.Tool {
	return tool.Func(tool.Spec{
		Name: ArtifactToolName,
		Description: "Creates, updates or reads an artifact: a document for people (markdown, code, CSV, HTML, an image, text) " +
			"shown beside the conversation with its versions. create needs title, kind and content; update changes the fields given, " +
			"keeping the earlier version.",
		InputSchema: json.RawMessage(artifactToolSchema),
	}, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
		return callArtifact(ctx, rows, w, c)
	})
}

type artifactArgs struct {
	Action    string  `json:"action"`
	Name      string  `json:"name"`
	Title     *string `json:"title"`
	Kind      *string `json:"kind"`
	Language  *string `json:"language"`
	MediaType *string `json:"media_type"`
	Content   *string `json:"content"`
}

// artifactResult is what the tool answers.
type artifactResult struct {
	Name     string `json:"name"`
	Version  int64  `json:"version"`
	Title    string `json:"title"`
	Kind     string `json:"kind"`
	Language string `json:"language,omitempty"`
	Content  string `json:"content,omitempty"` // get only
	Enabled  bool   `json:"enabled"`
}

func callArtifact(ctx context.Context, rows Rows, w Writer, c *tool.Call) (tool.Result, error) {
	var args artifactArgs
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return tool.Result{}, fmt.Errorf("artifact: %w", err)
	}
	if c.Agent == "" {
		return tool.Result{}, errors.New("artifact: only an agent writes artifacts")
	}
	if !extension.ValidName(args.Name) {
		return tool.Result{}, fmt.Errorf("artifact: name %q: letters, digits, '-', '_' and inner dots, at most %d", args.Name, extension.MaxName)
	}
	st, err := rows.Get(ctx, "artifact", args.Name)
	exists := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return tool.Result{}, fmt.Errorf("artifact: %w", err)
	}
	var a Artifact
	if exists {
		if err := json.Unmarshal(st.Spec, &a); err != nil {
			return tool.Result{}, fmt.Errorf("artifact: %s: %w", args.Name, err)
		}
	}
	switch args.Action {
	case "get":
		if !exists {
			return tool.Result{}, fmt.Errorf("artifact: there is no artifact named %s", args.Name)
		}
		return answer(artifactResult{Name: st.Name, Version: st.Version, Title: a.Title, Kind: a.Kind, Language: a.Language,
			Content: a.Content, Enabled: st.Enabled})
	case "create":
		if exists {
			return tool.Result{}, fmt.Errorf("artifact: %s exists already: update it, or create one with another name", args.Name)
		}
		if args.Title == nil || args.Kind == nil || args.Content == nil {
			return tool.Result{}, errors.New("artifact: create needs a title, a kind and the content")
		}
		a = Artifact{Session: c.Session, Agent: c.Agent}
	case "update":
		if !exists {
			return tool.Result{}, fmt.Errorf("artifact: there is no artifact named %s: create it", args.Name)
		}
	default:
		return tool.Result{}, fmt.Errorf("artifact: unknown action %q: create, update or get", args.Action)
	}
	args.apply(&a)
	spec, err := json.Marshal(a)
	if err != nil {
		return tool.Result{}, fmt.Errorf("artifact: %w", err)
	}
	prov := store.ProvenanceAgent + c.Agent
	doc := extension.Doc{Type: "artifact", Name: args.Name, Spec: spec}
	if exists {
		doc.IfVersion = st.Version
	}
	st, err = w.Put(ctx, doc, extension.Who{Provenance: prov, By: prov})
	if err != nil {
		return tool.Result{}, fmt.Errorf("artifact: %w", err)
	}
	return answer(artifactResult{Name: st.Name, Version: st.Version, Title: a.Title, Kind: a.Kind, Language: a.Language, Enabled: st.Enabled})
}

// apply sets the fields the call gives.
func (args *artifactArgs) apply(a *Artifact) {
	for _, f := range []struct {
		from *string
		to   *string
	}{{args.Title, &a.Title}, {args.Kind, &a.Kind}, {args.Language, &a.Language}, {args.MediaType, &a.MediaType}, {args.Content, &a.Content}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
}

func answer(v any) (tool.Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Output: string(b)}, nil
}

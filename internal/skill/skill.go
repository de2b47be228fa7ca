// Package skill loads agentd's skills and offers them to agents.
//
// A skill is a folder holding a SKILL.md file (YAML front matter between
// "---" lines, then markdown instructions) and any other files the
// instructions refer to: scripts, references, templates. The format is the
// one Anthropic's and OpenClaw's skills use:
//
//	---
//	name: pdf-forms          # required; equals the folder name; 1-64 of [a-z0-9-]
//	description: Fill in PDF forms. Use when the user sends a PDF form.
//	requires:                # optional
//	  bins: [python3]        # looked up on PATH
//	  env: [PDF_API_KEY]     # must be set and non-empty
//	mcp_servers:             # optional; connected when the skill is loaded
//	  pdf: {command: ./server.py}
//	metadata: {version: 2}   # optional, free form
//	---
//	# Filling PDF forms
//	...
//
// Load reads the skills of a list of folders into an immutable Set, and
// Watch reloads it when SKILL.md files change. An agent's system prompt
// lists only the name and description of the skills it may use
// (Set.Prompt); the model loads one on demand with the skill tool (Tool),
// so a skill costs no context until it is used.
package skill

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"agentd/internal/agent"
)

// FileName is the file that makes a folder a skill.
const FileName = "SKILL.md"

// Sentinel errors.
var (
	// ErrNotFound is returned for a skill name no loaded skill has.
	ErrNotFound = errors.New("skill not found")
	// ErrInvalid matches every error about a malformed SKILL.md (see
	// ParseError).
	ErrInvalid = errors.New("invalid skill")
	// ErrBadPath is returned by ReadFile for a path that is not a readable
	// file inside the skill's folder.
	ErrBadPath = errors.New("invalid skill file path")
)

// Skill is one loaded skill. Skills returned by a Set share their slices
// and maps with it: treat them as read-only.
type Skill struct {
	// Name is the skill's name; for an invalid skill, its folder's name.
	Name        string
	Description string
	// Dir is the skill's folder (absolute).
	Dir      string
	Requires Requires
	// MCPServers are the MCP servers the skill bundles, connected when an
	// agent loads it. A server's Dir defaults to the skill's folder, and a
	// relative Dir is taken from there, so "command: ./server.py" runs a
	// script of the skill.
	MCPServers map[string]agent.MCPServer
	// Metadata is the free-form metadata field; Extra holds the front
	// matter's other fields, which agentd does not use (skills are often
	// written for other tools too).
	Metadata map[string]any
	Extra    map[string]any

	// Available is true when the skill is valid and all it requires is
	// there; Missing says what is not, e.g. "binary ffmpeg not found on
	// PATH".
	Available bool
	Missing   []string
	// Err is set when SKILL.md is invalid (then Available is false). It
	// matches ErrInvalid; a *ParseError in it names the file and line.
	Err error
	// Overrides lists the folders of skills of the same name, in earlier
	// directories passed to Load, that this one hides.
	Overrides []string
}

// Servers returns the MCP servers the skill bundles that are not
// disabled: those connected when it loads.
func (sk *Skill) Servers() map[string]agent.MCPServer {
	out := map[string]agent.MCPServer{}
	for name, srv := range sk.MCPServers {
		if !srv.Disabled {
			out[name] = srv
		}
	}
	return out
}

// Requires is what a skill needs to be usable.
type Requires struct {
	Bins []string // executables, looked up on PATH
	Env  []string // environment variables that must be set and non-empty
}

// ParseError is one problem in a SKILL.md file.
type ParseError struct {
	File string // the SKILL.md file
	Line int    // 1-based; 0 when the problem has no line (an unreadable file)
	Msg  string
}

// Error formats e as "file:line: msg".
func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Is makes every ParseError match ErrInvalid.
func (e *ParseError) Is(target error) bool { return target == ErrInvalid }

// Options configures Load and Watch. A nil *Options means the defaults.
type Options struct {
	Logger *slog.Logger // default: discard
	// LookPath finds a required binary; default exec.LookPath.
	LookPath func(string) (string, error)
	// Getenv reads a required environment variable; default os.Getenv.
	Getenv func(string) string
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.LookPath == nil {
		r.LookPath = exec.LookPath
	}
	if r.Getenv == nil {
		r.Getenv = os.Getenv
	}
	return r
}

// Set is an immutable snapshot of the loaded skills. A nil *Set holds no
// skills. Its methods are safe for concurrent use.
type Set struct {
	skills []Skill           // sorted by name
	index  map[string]int    // name → position in skills
	bodies map[string]string // name → SKILL.md without its front matter
}

// Load reads every sub-folder of dirs that holds a SKILL.md file. When two
// directories hold a skill of the same name, the later one wins and lists
// the earlier one in Overrides. A directory that does not exist holds no
// skills; one that cannot be read is an error. An invalid SKILL.md is not
// an error of Load: its skill is listed with Err set.
//
// Requirements are checked now, so a binary installed or a variable set
// later shows up at the next Load.
func Load(dirs []string, o *Options) (*Set, error) {
	opts := o.withDefaults()
	byName := map[string]Skill{}
	bodies := map[string]string{}
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("skill: load %s: %w", d, err)
		}
		if seen[abs] {
			continue
		}
		seen[abs] = true
		folders, err := skillFolders(abs)
		if err != nil {
			return nil, fmt.Errorf("skill: load: %w", err)
		}
		for _, folder := range folders {
			sk, body := loadSkill(folder, &opts)
			if prev, ok := byName[sk.Name]; ok {
				sk.Overrides = append(slices.Clone(prev.Overrides), prev.Dir)
				opts.Logger.Info("skill overridden by a later directory", "skill", sk.Name, "dir", sk.Dir, "overrides", prev.Dir)
			}
			byName[sk.Name] = sk
			bodies[sk.Name] = body
		}
	}
	s := &Set{index: make(map[string]int, len(byName)), bodies: bodies}
	for _, sk := range byName {
		s.skills = append(s.skills, sk)
	}
	slices.SortFunc(s.skills, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	for i, sk := range s.skills {
		s.index[sk.Name] = i
		switch {
		case sk.Err != nil:
			opts.Logger.Warn("skill invalid; not offered to agents", "skill", sk.Name, "error", sk.Err)
		case !sk.Available:
			opts.Logger.Info("skill unavailable; not offered to agents", "skill", sk.Name, "missing", strings.Join(sk.Missing, "; "))
		}
	}
	return s, nil
}

// skillFolders returns the sub-folders of dir (following symbolic links)
// that hold a SKILL.md, sorted. Hidden folders are skipped.
func skillFolders(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			continue
		}
		if _, err := os.Lstat(filepath.Join(p, FileName)); err != nil {
			continue
		}
		out = append(out, p)
	}
	return out, nil // os.ReadDir sorts by name
}

// loadSkill reads and checks the skill in folder.
func loadSkill(folder string, o *Options) (Skill, string) {
	file := filepath.Join(folder, FileName)
	sk := Skill{Name: filepath.Base(folder), Dir: folder}
	data, err := readFile(file, maxSkillFile)
	if err != nil {
		sk.Err = &ParseError{File: file, Msg: err.Error()}
		return sk, ""
	}
	parsed, body, err := parse(file, filepath.Base(folder), data)
	if err != nil {
		sk.Description = parsed.Description
		sk.Err = err
		return sk, ""
	}
	parsed.Dir = folder
	for name, srv := range parsed.MCPServers {
		switch {
		case srv.Dir == "":
			srv.Dir = folder
		case !filepath.IsAbs(srv.Dir):
			srv.Dir = filepath.Join(folder, srv.Dir)
		}
		parsed.MCPServers[name] = srv
	}
	for _, b := range parsed.Requires.Bins {
		if _, err := o.LookPath(b); err != nil {
			parsed.Missing = append(parsed.Missing, fmt.Sprintf("binary %s not found on PATH", b))
		}
	}
	for _, e := range parsed.Requires.Env {
		if o.Getenv(e) == "" {
			parsed.Missing = append(parsed.Missing, fmt.Sprintf("environment variable %s is not set", e))
		}
	}
	parsed.Available = len(parsed.Missing) == 0
	return parsed, body
}

// readFile reads name, a regular file of at most limit bytes.
func readFile(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("file is over the limit of %d bytes", limit)
	}
	return data, nil
}

// List returns every skill, sorted by name, invalid and unavailable ones
// included.
func (s *Set) List() []Skill {
	if s == nil {
		return nil
	}
	return slices.Clone(s.skills)
}

// Get returns the skill called name.
func (s *Set) Get(name string) (Skill, bool) {
	if s == nil {
		return Skill{}, false
	}
	i, ok := s.index[name]
	if !ok {
		return Skill{}, false
	}
	return s.skills[i], true
}

// Allowed returns the valid, available skills whose names match one of
// patterns (path.Match globs such as "pdf-*"), sorted by name. nil
// patterns allow every skill; an empty, non-nil list allows none. A
// malformed pattern matches nothing.
func (s *Set) Allowed(patterns []string) []Skill {
	if s == nil {
		return nil
	}
	var out []Skill
	for _, sk := range s.skills {
		if sk.Available && sk.Err == nil && Match(patterns, sk.Name) {
			out = append(out, sk)
		}
	}
	return out
}

// Match reports whether name is allowed by patterns, as Allowed applies
// them: nil allows every name.
func Match(patterns []string, name string) bool {
	if patterns == nil {
		return true
	}
	for _, p := range patterns {
		if ok, err := path.Match(p, name); ok && err == nil {
			return true
		}
	}
	return false
}

// PromptHeader is the first line of Prompt's listing.
const PromptHeader = "Skills hold instructions and files for specific tasks. Before starting a task that one of these skills covers, call the `skill` tool with its name to load it, then follow its instructions:"

// Prompt returns the listing of the skills patterns allow (see Allowed)
// for an agent's system prompt: PromptHeader, then one line
// "- name: description" per skill. It is "" when no skill is allowed.
func (s *Set) Prompt(patterns []string) string {
	skills := s.Allowed(patterns)
	if len(skills) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(PromptHeader)
	b.WriteByte('\n')
	for _, sk := range skills {
		b.WriteString("- ")
		b.WriteString(sk.Name)
		b.WriteString(": ")
		b.WriteString(strings.Join(strings.Fields(sk.Description), " "))
		b.WriteByte('\n')
	}
	return b.String()
}
